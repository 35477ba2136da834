package vprog

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators/internal/optest"
)

// The strategies' kernels run through ptxEmu (ptxemu_test.go) as package
// vpgpu launches them on a GPU (vpgpu/strategy.go, iterate.go: the same
// arguments, grids and order), against the CPU engine: integer programs
// exactly with their iterations, the sink program bit for bit, float sums
// within the tolerance. GPIPE_EMU_ALL=1 runs every example on more
// graphs (minutes); the default is a CI-sized subset.

const emuBlockSize, emuMaxBlocks = 256, 8192

// emuRun is a program's run on the emulated GPU.
type emuRun struct {
	mem        emuMemory
	kernels    map[string]*emuKernel
	p          *Program
	g          *convert.Graph
	n          uint64
	strategy   string
	vwarp, N   int
	tab, state uint64
	inOff      uint64
	inSrc      uint64
	inDst      uint64
	outOff     uint64
	outTgt     uint64
	chg        uint64
	act        [2]uint64
	cur        []uint64
	ks         [5]uint64 // KiTES': counts, in-degrees, list, prefix sums, totals
}

func emuBytes[T uint32 | int64](xs []T) []byte {
	var z T
	size := binary.Size(z)
	out := make([]byte, size*len(xs))
	for i, x := range xs {
		if size == 4 {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
		} else {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(x))
		}
	}
	return out
}

// fieldBytesOf lays values out as t's array (vpgpu's fieldBytes).
func fieldBytesOf(t Type, v Values) []byte {
	n := len(v.Int) + len(v.Float)
	out := make([]byte, t.Size()*n)
	for i := 0; i < n; i++ {
		switch t {
		case TFloat32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v.Float[i])))
		case TFloat64:
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(v.Float[i]))
		case TInt64:
			binary.LittleEndian.PutUint64(out[8*i:], uint64(v.Int[i]))
		default:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(v.Int[i]))
		}
	}
	return out
}

// valuesFrom reads t's array back (vpgpu's valuesOf).
func valuesFrom(t Type, raw []byte) Values {
	n := len(raw) / t.Size()
	var v Values
	for i := 0; i < n; i++ {
		switch t {
		case TFloat32:
			v.Float = append(v.Float, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))))
		case TFloat64:
			v.Float = append(v.Float, math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:])))
		case TInt64:
			v.Int = append(v.Int, int64(binary.LittleEndian.Uint64(raw[8*i:])))
		case TInt32:
			v.Int = append(v.Int, int64(int32(binary.LittleEndian.Uint32(raw[4*i:]))))
		default:
			v.Int = append(v.Int, int64(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	}
	return v
}

// upload lays the graph and the fields out as vpgpu's upload does.
func (r *emuRun) upload(in Input) error {
	init, err := InitialValues(r.p, in)
	if err != nil {
		return err
	}
	inCSR := r.g.In()
	r.inOff, r.inSrc = r.mem.put(emuBytes(inCSR.Offsets)), r.mem.put(emuBytes(inCSR.Targets))
	r.outOff, r.outTgt = r.mem.put(emuBytes(r.g.Out.Offsets)), r.mem.put(emuBytes(r.g.Out.Targets))
	var ptrs []int64
	for k, f := range r.p.Vertex {
		r.cur = append(r.cur, r.mem.put(fieldBytesOf(f.Type, init.Vertex[k])))
		ptrs = append(ptrs, int64(r.cur[k]))
	}
	for _, f := range r.p.Vertex {
		ptrs = append(ptrs, int64(r.mem.alloc(f.Type.Size()*int(r.n))))
	}
	for k, f := range r.p.Static {
		ptrs = append(ptrs, int64(r.mem.put(fieldBytesOf(f.Type, init.Static[k]))))
	}
	for k, f := range r.p.Edge {
		ptrs = append(ptrs, int64(r.mem.put(fieldBytesOf(f.Type, init.Edge[k]))))
	}
	r.tab, r.state = r.mem.put(emuBytes(ptrs)), r.mem.alloc(4*StateWords)
	r.act[0], r.act[1], r.chg = r.mem.alloc(int(r.n)), r.mem.alloc(int(r.n)), r.mem.alloc(int(r.n))
	for i := range r.mem.bytes(r.act[0], int(r.n)) {
		r.mem.bytes(r.act[0], int(r.n))[i] = 1
	}
	dst := make([]uint32, inCSR.NumEdges())
	for v := range int(r.n) {
		for e := inCSR.Offsets[v]; e < inCSR.Offsets[v+1]; e++ {
			dst[e] = uint32(v)
		}
	}
	r.inDst = r.mem.put(emuBytes(dst))
	for i, size := range []int{4 * KitesThreads, 8 * KitesThreads, 4 * int(r.n), 8 * (int(r.n) + 1), 16} {
		r.ks[i] = r.mem.alloc(size)
	}
	return nil
}

func (r *emuRun) launch(name string, grid, block, shared int, args ...uint64) {
	emuLaunch(&r.mem, r.kernels, name, grid, block, shared, args...)
}

func emuBlocks(n int) int { return min(max(1, (n+emuBlockSize-1)/emuBlockSize), emuMaxBlocks) }

// iteration launches one iteration's kernels as vpgpu does.
func (r *emuRun) iteration(parity int) {
	n, act, ks := r.n, r.act[parity], r.ks
	m := uint64(r.g.In().NumEdges())
	switch r.strategy {
	case "vwc":
		r.launch(KernelCompute, emuBlocks(int(n)*r.vwarp), emuBlockSize, 0, r.tab, r.state, r.inOff, r.inSrc, act, r.chg, n, n)
	case "gshards":
		r.launch(KernelShard, (int(n)+r.N-1)/r.N, emuBlockSize, r.N*r.p.ShardBytes(), r.tab, r.state, act, r.chg, r.inOff, r.inSrc, r.inDst, n, uint64(r.N), n)
	default:
		if r.strategy == "kites" {
			grid := KitesThreads / emuBlockSize
			r.launch(KernelCount, grid, emuBlockSize, 0, r.state, act, r.inOff, ks[0], ks[1], n)
			r.launch(KernelScan, 1, KitesScanThreads, 0, r.state, ks[0], ks[1], ks[4])
			r.launch(KernelFill, grid, emuBlockSize, 0, r.state, act, r.inOff, ks[0], ks[1], ks[2], ks[3], ks[4], n)
		}
		r.launch(KernelInit, emuBlocks(int(n)), emuBlockSize, 0, r.tab, r.state, act, r.chg, n, n, ks[2], ks[4])
		r.launch(KernelEdges, emuBlocks(int(max(m, 1))), emuBlockSize, 0, r.tab, r.state, act, r.inOff, r.inSrc, r.inDst, m, n, ks[2], ks[3], ks[4])
		r.launch(KernelUpdate, emuBlocks(int(n)), emuBlockSize, 0, r.tab, r.state, act, r.chg, n, n, ks[2], ks[4])
	}
	r.launch(KernelCheck, 1, 1, 0, r.state, uint64(r.p.MaxIterations))
	r.launch(KernelCommit, emuBlocks(int(n)), emuBlockSize, 0, r.tab, r.state, r.outOff, r.outTgt, r.act[parity^1], r.chg, n)
}

// emulate runs p with strategy on the emulated GPU (vwarp: vwc's K; N:
// gshards' window).
func emulate(p *Program, in Input, strategy string, vwarp, N int) (*Outcome, error) {
	mod, err := p.GenerateFor(strategy, vwarp)
	if err != nil {
		return nil, err
	}
	r := &emuRun{p: p, g: in.Graph, n: uint64(in.Graph.NumVertices()), strategy: strategy, vwarp: vwarp, N: N}
	if r.kernels, err = parsePTX(mod.PTX); err != nil {
		return nil, err
	}
	if err := r.upload(in); err != nil {
		return nil, err
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(r.mem.bytes(r.state+uint64(4*i), 4)) }
	for parity := 0; word(stateDone) == 0; parity ^= 1 {
		r.iteration(parity)
	}
	if code := word(stateErr); code != 0 {
		pos, what := mod.Fault(code)
		return nil, fmt.Errorf("line %d: column %d: %s at vertex %d", pos.Line, pos.Col, what, word(stateErrVertex))
	}
	out := &Outcome{Iterations: int(word(stateIterations)), Converged: word(stateConverged) != 0}
	for k, f := range p.Vertex {
		out.Vertex = append(out.Vertex, valuesFrom(f.Type, r.mem.bytes(r.cur[k], f.Type.Size()*int(r.n))))
	}
	return out, nil
}

// emuShapes are small graphs: parallel edges and a self-loop, a star
// whose hub has 150 in-edges (several warps' rounds, several windows),
// and a random graph of 120 vertices and 900 edges.
func emuShapes() []optest.Shape {
	par := optest.Shape{Name: "parallel", Edges: []optest.Edge{{U: 0, V: 1, W: 5}, {U: 0, V: 1, W: 2}, {U: 1, V: 2, W: 3},
		{U: 1, V: 2, W: 9}, {U: 0, V: 2, W: 10}, {U: 2, V: 0, W: 1}, {U: 2, V: 3, W: 4}, {U: 3, V: 2, W: 1}, {U: 2, V: 2, W: 1}}}
	star := optest.Shape{Name: "star"}
	for i := int64(1); i <= 150; i++ {
		star.Edges = append(star.Edges, optest.Edge{U: 0, V: i, W: float64(1 + i%7)}, optest.Edge{U: i, V: 0, W: float64(1 + i%5)})
		if i%10 == 0 {
			star.Edges = append(star.Edges, optest.Edge{U: i, V: i + 1, W: 1})
		}
	}
	rnd := optest.Shape{Name: "random"}
	x := uint64(12345)
	next := func() uint64 { x = x*6364136223846793005 + 1442695040888963407; return x >> 33 }
	for range 900 {
		u, v := int64(next()%120), int64(next()%120)
		rnd.Edges = append(rnd.Edges, optest.Edge{U: u, V: v, W: float64(1+next()%50) / 7})
	}
	return []optest.Shape{par, star, rnd}
}

// emuSame compares an emulated outcome with the CPU's: integers exactly,
// floats exactly too or within the tolerance (sums in another order).
func emuSame(p *Program, exact bool, got, want *Outcome) error {
	for k, f := range p.Vertex {
		for i := range want.Vertex[k].Int {
			if g, w := got.Vertex[k].Int[i], want.Vertex[k].Int[i]; g != w {
				return fmt.Errorf("field %s, vertex %d: %d, the CPU's %d", f.Name, i, g, w)
			}
		}
		for i, w := range want.Vertex[k].Float {
			g := got.Vertex[k].Float[i]
			if g != w && (exact || math.Abs(g-w) > math.Max(1000*p.Tolerance, 1e-5*math.Abs(w))) {
				return fmt.Errorf("field %s, vertex %d: %v, the CPU's %v", f.Name, i, g, w)
			}
		}
	}
	return nil
}

func parseExample(t *testing.T, name string) *Program {
	t.Helper()
	path := filepath.Join("..", "..", "examples", "programs", name+".vp")
	if name == "sink" {
		path = filepath.Join("testdata", "sink.vp")
	}
	p := parseFile(t, path)
	if name == "hs" || name == "cs" {
		var err error
		if p, err = p.With(Options{MaxIterations: 60}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestStrategiesEmulated runs warpseg, kites and gshards (windows of 7
// and 64 vertices) — and vwc, the reference the H200 validated — on the
// emulated GPU against the CPU: by default bfs on the star and the random
// graph, and sink and pr for 8 iterations (KiTES' compaction launches
// 32768 threads an iteration, slow to emulate); GPIPE_EMU_ALL=1 every
// example on every shape to its end (minutes).
func TestStrategiesEmulated(t *testing.T) {
	shapes := emuShapes()
	type run struct {
		name  string
		shape optest.Shape
		its   int
	}
	runs := []run{{"bfs", shapes[1], 0}, {"bfs", shapes[2], 0}, {"sink", shapes[2], 8}, {"pr", shapes[1], 8}}
	if os.Getenv("GPIPE_EMU_ALL") == "1" {
		runs = nil
		for _, name := range []string{"bfs", "sssp", "pr", "cc", "sswp", "nn", "hs", "cs", "sink"} {
			for _, s := range shapes {
				runs = append(runs, run{name, s, 0})
			}
		}
	}
	for _, r := range runs {
		p := parseExample(t, r.name)
		if r.its > 0 {
			var err error
			if p, err = p.With(Options{MaxIterations: r.its}); err != nil {
				t.Fatal(err)
			}
		}
		for _, directed := range []bool{true, false} {
			emuCompareAll(t, p, r.shape, directed)
		}
	}
}

// emuCompareAll runs p on s with every strategy against the CPU.
func emuCompareAll(t *testing.T, p *Program, s optest.Shape, directed bool) {
	t.Helper()
	if p.Name == "nn" || p.Name == "hs" {
		s = optest.ScaledWeights(s)
	}
	g := optest.BuildGraph(t, s, directed, true, edges.KeyInt64)
	srcs := optest.SourcesOf(g)
	in := Input{Graph: g, Source: int64(srcs[len(srcs)-1])}
	want, err := RunCPU(context.Background(), p, in)
	if err != nil {
		t.Fatalf("%s on %s: the CPU: %v", p.Name, s.Name, err)
	}
	for _, c := range []struct {
		strategy string
		N        int
	}{{"vwc", 0}, {"warpseg", 0}, {"kites", 0}, {"gshards", 7}, {"gshards", 64}} {
		got, err := emulate(p, in, c.strategy, 4, c.N)
		if err == nil {
			err = emuSame(p, p.Name == "sink", got, want)
		}
		if err == nil && got.Iterations != want.Iterations && !hasFloatSum(p) {
			err = fmt.Errorf("%d iterations, the CPU's %d", got.Iterations, want.Iterations)
		}
		if err != nil {
			t.Errorf("%s on %s (directed %v), %s (N %d): %v", p.Name, s.Name, directed, c.strategy, c.N, err)
		}
	}
}

// hasFloatSum says p reduces a float field with atomicAdd (whose order
// the GPU does not keep).
func hasFloatSum(p *Program) bool {
	for i, f := range p.Vertex {
		if p.Atomics[i] == AtomicAdd && f.Type.IsFloat() {
			return true
		}
	}
	return false
}

// TestFaultEmulated checks that a division by zero in compute is
// reported at its place by every strategy.
func TestFaultEmulated(t *testing.T) {
	g := optest.BuildGraph(t, emuShapes()[2], true, true, edges.KeyInt64)
	p, err := Parse("bad.vp", "program t\nvertex x float64 = 1 output\ncompute { atomicAdd(local.x, src.x / (src.x - 1)) }\nupdate_condition { return false }")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Strategies() {
		_, err := emulate(p, Input{Graph: g, Source: -1}, s, 4, 7)
		if err == nil || !strings.HasPrefix(err.Error(), "line 3: column 36: division by zero at vertex ") {
			t.Errorf("%s: %v, want the division by zero at line 3, column 36", s, err)
		}
	}
}
