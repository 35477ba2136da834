// Package vpgpu runs vertex programs (package vprog) on a GPU: it loads
// the PTX vprog generates from the program with the driver alone (no
// CUDA toolkit, no NVRTC), uploads the graph's in- and out-edge layouts
// and the fields' initial values, and drives the kernels an iteration at
// a time, a batch of iterations between reads of the run's state.
package vpgpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators/vprog"
)

// Options tune a run.
type Options struct {
	// Strategy is "", "auto" or one of vprog.Strategies().
	Strategy string
	// VWarp is vwc's lanes a vertex (1 to 32, a power of two); 0 picks the
	// smallest power of two at least the average in-degree.
	VWarp int
	// ShardVertices is gshards' window; 0 picks CuSha's (at most what a
	// block's shared memory holds).
	ShardVertices int
}

// Stats say how a run went.
type Stats struct {
	Strategy, Reason string
	VWarp            int
	// ShardVertices is gshards' window (CuSha's N).
	ShardVertices int
	// Compute is the kernels' time (events); Load the JIT compilation's,
	// Transfer the uploads' and the initial values' (host).
	Compute, Load, Transfer time.Duration
}

// Shape is the strategy's geometry in words: vwc's lanes a vertex,
// gshards' window.
func (st *Stats) Shape() string {
	switch st.Strategy {
	case "vwc":
		return fmt.Sprintf("%d lanes a vertex (vwarp)", st.VWarp)
	case "gshards":
		return fmt.Sprintf("windows of %d vertices", st.ShardVertices)
	}
	return "32 in-edges a warp's round"
}

// Run runs p on g on the GPU of c.
func Run(ctx context.Context, c *gpu.Context, p *vprog.Program, in vprog.Input, opts Options) (*vprog.Outcome, *Stats, error) {
	st, err := plan(p, in.Graph, opts)
	if err != nil {
		return nil, nil, err
	}
	if in.Graph.NumVertices() == 0 {
		out, err := vprog.RunCPU(ctx, p, in) // nothing to launch
		return out, st, err
	}
	r, err := newRun(c, p, in, st)
	if err != nil {
		return nil, nil, err
	}
	defer r.free()
	out, err := r.iterate(ctx)
	if err != nil {
		return nil, nil, err
	}
	return out, st, nil
}

// plan is the run's strategy (auto's choice, or the one asked for) and
// vwc's K.
func plan(p *vprog.Program, g *convert.Graph, opts Options) (*Stats, error) {
	st := &Stats{Strategy: opts.Strategy, VWarp: opts.VWarp, ShardVertices: opts.ShardVertices, Reason: "asked for"}
	switch {
	case opts.Strategy == "" || opts.Strategy == "auto":
		st.Strategy, st.Reason = choose(p, g)
	case !slices.Contains(vprog.Strategies(), opts.Strategy):
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("vertex programs have no GPU strategy %q", opts.Strategy),
			"use one of "+strings.Join(vprog.Strategies(), ", ")+" (or auto)")
	}
	if st.VWarp == 0 {
		st.VWarp = pickVWarp(g)
	}
	return st, nil
}

// pickVWarp is the smallest power of two at least the average in-degree,
// up to 32.
func pickVWarp(g *convert.Graph) int {
	n := max(g.NumVertices(), 1)
	avg := float64(g.NumEdges()) / float64(n)
	k := 1
	for k < 32 && float64(k) < avg {
		k *= 2
	}
	return k
}

// run is one run's device state.
type run struct {
	c      *gpu.Context
	s      *gpu.Stream
	prog   *vprog.Program
	g      *convert.Graph
	mod    *vprog.Module
	module *gpu.Module
	fns    map[string]*gpu.Function
	bufs   []*gpu.DeviceBuffer
	tab    *gpu.DeviceBuffer
	state  *gpu.DeviceBuffer
	inOff  *gpu.DeviceBuffer
	inSrc  *gpu.DeviceBuffer
	outOff *gpu.DeviceBuffer
	outTgt *gpu.DeviceBuffer
	act    [2]*gpu.DeviceBuffer
	chg    *gpu.DeviceBuffer
	cur    []*gpu.DeviceBuffer
	// init is the vertex fields' initial values (restart copies them again).
	init [][]byte
	n    uint32
	st   *Stats
	// inDst is the in-edges' destinations (warpseg, gshards).
	inDst *gpu.DeviceBuffer
	// ks is KiTES' compaction: per thread counts, the active list, its
	// prefix sums and its totals.
	ks kitesBufs
}

type kitesBufs struct {
	cnt, deg, list, prefix, totals *gpu.DeviceBuffer
}

func newRun(c *gpu.Context, p *vprog.Program, in vprog.Input, st *Stats) (*run, error) {
	g := in.Graph
	if g.NumVertices() >= math.MaxUint32 {
		return nil, usererr.New(usererr.Backend, "the graph has too many vertices for a GPU vertex program", "run it on the CPU")
	}
	r := &run{c: c, prog: p, g: g, n: uint32(g.NumVertices()), st: st}
	ok := false
	defer func() {
		if !ok {
			r.free()
		}
	}()
	var err error
	if r.s, err = c.NewStream(); err != nil {
		return nil, err
	}
	if err := r.load(); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := r.upload(in); err != nil {
		return nil, err
	}
	st.Transfer = time.Since(start)
	ok = true
	return r, nil
}

// load generates the program's PTX and has the driver compile it.
func (r *run) load() error {
	start := time.Now()
	m, err := r.prog.GenerateFor(r.st.Strategy, r.st.VWarp)
	if err != nil {
		return usererr.New(usererr.Usage, err.Error(), "pass vwarp 1, 2, 4, 8, 16 or 32")
	}
	r.mod = m
	if r.module, err = r.c.LoadPTX(m.PTX); err != nil {
		return usererr.New(usererr.Internal, "the GPU driver did not compile the program's kernels: "+err.Error(),
			"report it with the program; run it on the CPU (--backend cpu) meanwhile").Because(err)
	}
	r.fns = map[string]*gpu.Function{}
	for _, name := range kernelsOf(r.st.Strategy) {
		if r.fns[name], err = r.module.Function(name); err != nil {
			return err
		}
	}
	r.st.Load = time.Since(start)
	return nil
}

func (r *run) alloc(bytes int64) (*gpu.DeviceBuffer, error) {
	b, err := r.c.Alloc(max(bytes, 8))
	if err != nil {
		return nil, err
	}
	r.bufs = append(r.bufs, b)
	return b, nil
}

func (r *run) free() {
	for _, b := range r.bufs {
		b.Free()
	}
	r.bufs = nil
	if r.module != nil {
		r.module.Unload()
		r.module = nil
	}
	if r.s != nil {
		r.s.Destroy()
		r.s = nil
	}
}

// upload copies the layouts, the fields' initial values and their table.
func (r *run) upload(in vprog.Input) error {
	init, err := vprog.InitialValues(r.prog, in)
	if err != nil {
		return err
	}
	g := r.g
	inCSR := g.In()
	for _, a := range []struct {
		to  **gpu.DeviceBuffer
		raw []byte
	}{
		{&r.inOff, int64Bytes(inCSR.Offsets)}, {&r.inSrc, uint32Bytes(inCSR.Targets)},
		{&r.outOff, int64Bytes(g.Out.Offsets)}, {&r.outTgt, uint32Bytes(g.Out.Targets)},
	} {
		if *a.to, err = r.put(a.raw); err != nil {
			return err
		}
	}
	var ptrs []uint64
	p := r.prog
	add := func(fields []vprog.Field, vals []vprog.Values, keep bool) error {
		for k, f := range fields {
			raw := fieldBytes(f.Type, vals[k])
			b, err := r.put(raw)
			if err != nil {
				return err
			}
			if keep {
				r.cur, r.init = append(r.cur, b), append(r.init, raw)
			}
			ptrs = append(ptrs, uint64(b.Ptr()))
		}
		return nil
	}
	if err := add(p.Vertex, init.Vertex, true); err != nil {
		return err
	}
	for _, f := range p.Vertex {
		b, err := r.alloc(int64(f.Type.Size()) * int64(r.n))
		if err != nil {
			return err
		}
		ptrs = append(ptrs, uint64(b.Ptr()))
	}
	if err := add(p.Static, init.Static, false); err != nil {
		return err
	}
	if err := add(p.Edge, init.Edge, false); err != nil {
		return err
	}
	if r.tab, err = r.put(uint64Bytes(ptrs)); err != nil {
		return err
	}
	if err := r.flags(); err != nil {
		return err
	}
	return r.strategyBuffers()
}

// flags allocates the run's state, its activeness flags by parity and
// its changed flags: every vertex active at the first iteration.
func (r *run) flags() error {
	var err error
	if r.state, err = r.alloc(4 * vprog.StateWords); err != nil {
		return err
	}
	for i := range r.act {
		if r.act[i], err = r.alloc(int64(r.n)); err != nil {
			return err
		}
	}
	if r.chg, err = r.alloc(int64(r.n)); err != nil {
		return err
	}
	return r.clearFlags()
}

// clearFlags clears the state, the changed flags and the second parity's
// flags, and makes every vertex active.
func (r *run) clearFlags() error {
	for _, z := range []*gpu.DeviceBuffer{r.state, r.act[1], r.chg} {
		if err := z.Memset8(r.s, 0); err != nil {
			return err
		}
	}
	return r.act[0].Memset8(r.s, 1)
}

// restart sets the run back to its start, the vertex fields' initial
// values current again (a benchmark repeats a run on one upload).
func (r *run) restart() error {
	for k, b := range r.cur {
		if len(r.init[k]) > 0 {
			if err := b.CopyFromHost(r.s, r.init[k]); err != nil {
				return err
			}
		}
	}
	return r.clearFlags()
}

func (r *run) put(raw []byte) (*gpu.DeviceBuffer, error) {
	b, err := r.alloc(int64(len(raw)))
	if err != nil {
		return nil, err
	}
	if len(raw) > 0 {
		if err := b.CopyFromHost(r.s, raw); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func int64Bytes(xs []int64) []byte {
	out := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(out[8*i:], uint64(x))
	}
	return out
}

func uint32Bytes(xs []uint32) []byte {
	out := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(out[4*i:], x)
	}
	return out
}

func uint64Bytes(xs []uint64) []byte {
	out := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(out[8*i:], x)
	}
	return out
}

// fieldBytes lays a field's values out as its type's array.
func fieldBytes(t vprog.Type, v vprog.Values) []byte {
	n := len(v.Int) + len(v.Float)
	out := make([]byte, t.Size()*n)
	for i := 0; i < n; i++ {
		switch t {
		case vprog.TFloat32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v.Float[i])))
		case vprog.TFloat64:
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(v.Float[i]))
		case vprog.TInt64:
			binary.LittleEndian.PutUint64(out[8*i:], uint64(v.Int[i]))
		default:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(v.Int[i]))
		}
	}
	return out
}

// valuesOf reads a field's array back.
func valuesOf(t vprog.Type, raw []byte) vprog.Values {
	n := len(raw) / t.Size()
	var v vprog.Values
	if t.IsFloat() {
		v.Float = make([]float64, n)
	} else {
		v.Int = make([]int64, n)
	}
	for i := 0; i < n; i++ {
		switch t {
		case vprog.TFloat32:
			v.Float[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		case vprog.TFloat64:
			v.Float[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		case vprog.TInt64:
			v.Int[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		case vprog.TInt32:
			v.Int[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		default:
			v.Int[i] = int64(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return v
}
