package multigpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"structs"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// SSSP, SSWP and CC over several GPUs by Vertex Refinement
// (khorasani-dissertation §2.3), on the partition of multigpu.go. Offline, the
// partition marks each part's boundary vertices (those with an out-edge into
// another part: convert.Partition.BoundaryBits), which also sizes the
// outboxes and inboxes. Each iteration, every GPU pulls its active vertices
// (mg_pull: Warp Segmentation's rounds; the longest rows a block each),
// lists those it improved, and collects the improved boundary vertices with
// their values into its outbox, a ballot and one atomic a warp (online
// refinement). The outboxes travel, only as long as they are filled, into
// the other GPUs' inboxes; each GPU writes what it received into its values
// and marks active its own vertices that the received and its own updates
// reach (its part's out-edges end in its vertices). The run ends when an
// iteration improves nothing anywhere.
//
// Permissive Partitioning (§3.3): where the GPUs' memory allows, each part
// holds a quarter more than its own range on each side
// (MultiGPU.Permissive, convert.Partitions' extra; the offline phase), and
// before each iteration every GPU counts its own range's active vertices by
// 128-vertex section (mg_count_sections). The host weighs each section's
// count by the section's mean in-degree, and cuts the sum into equal loads,
// each cut kept where both neighbours hold the vertices (slideCuts): the
// range a GPU pulls in the iteration. Boundary vertices then include the
// vertices another part holds, so whichever GPU computes a vertex, every
// GPU that may compute it or read it next receives it.
//
// A vertex's value is final on its owner and, for a boundary vertex, on
// every GPU; the result is read from the owners. SSSP's tree comes from the
// same passes as on one GPU (gpuop/sssp.go), each part's pass over its edges
// (which end in its vertices), the passes' marks gathered between passes.

// mgProgram picks the vertex program for a graph and says how its values
// and result are read.
type mgProgram int

const (
	mgSSSP mgProgram = iota
	mgSSWP
	mgCC
)

// mgVPPart is one part's run.
type mgVPPart struct {
	b                    *gpuop.GPU
	s                    *gpu.Stream
	part                 convert.Partition
	inOff, inSrc, inW    *gpu.DeviceBuffer
	outOff, outTgt, outW *gpu.DeviceBuffer
	values               *gpu.DeviceBuffer
	active               [2]*gpu.DeviceBuffer
	boundary             *gpu.DeviceBuffer
	changed              *gpu.DeviceBuffer // the improved vertices
	sections             *gpu.DeviceBuffer // active vertices by section of the owned range
	outIDs, outVals      *gpu.DeviceBuffer // the outbox
	inIDs, inVals        []*gpu.DeviceBuffer
	counts               *gpu.DeviceBuffer // changed, outbox entries, edges examined (u64)
	hubs                 *gpu.DeviceBuffer
	hubCount             int
	host                 *gpuop.Counters
	transfer             time.Duration
	gpuop.Releases

	pull, hubPull   *gpuop.Kernel
	apply, activate *gpuop.Kernel
	count           *gpuop.Kernel
}

// The counters after an iteration.
const (
	mgChangedAt  = 0
	mgOutboxAt   = 4
	mgExaminedAt = 8
	mgCountBytes = 16
)

// mgVPRun is one run of a vertex program over the parts.
type mgVPRun struct {
	m       *MultiGPU
	in      operators.Input
	which   mgProgram
	prog    gpuop.Program
	seed    uint64 // the source's value
	n, vb   int64  // vertices, a value's bytes
	parts   []convert.Partition
	ps      []*mgVPPart
	streams []*gpu.Stream
	res     *operators.Result
	// An iteration's ranges (cuts, which Permissive Partitioning slides),
	// and what each part changed and put in its outbox.
	cuts            []uint32
	slider          *sectionLoads
	slides          int
	changed         []uint32
	outbox          []int64
	examined, total int64
}

func runVPMulti(ctx context.Context, m *MultiGPU, in operators.Input, which mgProgram, extra float64) (*operators.Result, error) {
	if which == mgCC && in.Graph.Directed {
		// Weak components need both directions of every edge; a part holds
		// only the edges into its vertices.
		res, err := m.gpus[0].Run(ctx, operators.CC{}, in)
		if err == nil {
			res.StrategyReason = "cc on a directed graph runs on one GPU: a part holds only the edges into its vertices, and weak components need both directions"
		}
		return res, err
	}
	r, err := newMGVPRun(m, in, which)
	if err != nil {
		return nil, err
	}
	defer r.free()
	if err := r.setUp(extra); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := r.iterate(ctx); err != nil {
		return nil, err
	}
	var parent []uint32
	if which == mgSSSP {
		if parent, err = mgParents(ctx, m, r.ps, r.streams, r.prog, in.Source, r.n); err != nil {
			return nil, err
		}
	}
	if err := gpuop.SyncAll(r.streams); err != nil {
		return nil, err
	}
	r.res.Compute = time.Since(start)
	return r.result(extra, parent)
}

// newMGVPRun is the run of which's program on in's graph.
func newMGVPRun(m *MultiGPU, in operators.Input, which mgProgram) (*mgVPRun, error) {
	g := in.Graph
	r := &mgVPRun{m: m, in: in, which: which, prog: gpuop.CCLabels, n: int64(g.NumVertices())}
	name := "cc"
	switch which {
	case mgSSSP:
		r.prog, name = m.First().SSSPProgram(g), "sssp"
	case mgSSWP:
		r.prog, name = m.First().SSWPProgram(g), "sswp"
		r.seed = uint64(gpuop.Key32(math.Inf(1)))
		if r.prog.Wide {
			r.seed = gpuop.Key64(math.Inf(1))
		}
	}
	if which != mgCC {
		if err := operators.CheckSource(name, in); err != nil {
			return nil, err
		}
	}
	r.vb = r.prog.ValueBytes()
	r.res = &operators.Result{Op: name, Backend: "gpu"}
	return r, nil
}

// setUp cuts the graph, makes the parts and starts them: every value none,
// then the labels or the source's value; the first iteration pulls every
// vertex (cc) or the source's out-neighbours.
func (r *mgVPRun) setUp(extra float64) error {
	parts, err := r.m.partitions(r.in.Graph, extra)
	if err != nil {
		return err
	}
	k := len(parts)
	r.parts, r.ps, r.streams = parts, make([]*mgVPPart, k), make([]*gpu.Stream, k)
	r.changed, r.outbox = make([]uint32, k), make([]int64, k)
	for i, part := range parts {
		x, err := newMGVPPart(r.m.gpus[i], part, parts, r.prog, r.n)
		if err != nil {
			return err
		}
		r.ps[i], r.streams[i] = x, x.s
		r.res.Transfer += x.transfer
	}
	for _, x := range r.ps {
		if err := r.start(x); err != nil {
			return err
		}
	}
	r.cuts = make([]uint32, k+1)
	for i, part := range parts {
		r.cuts[i] = part.Lo
	}
	r.cuts[k] = uint32(r.n)
	if extra > 0 {
		r.slider = newSectionLoads(r.in.Graph.In().Offsets, parts)
	}
	return gpuop.SyncAll(r.streams)
}

// start starts part x: its values none, then the labels (every vertex
// active) or the source's value (the source's out-neighbours active).
func (r *mgVPRun) start(x *mgVPPart) error {
	if err := x.values.Memset8(x.s, r.prog.None); err != nil {
		return err
	}
	if r.which == mgCC {
		iota, err := x.b.Kernel(kernels.VPCommon, "vp_iota")
		if err != nil {
			return err
		}
		if err := iota.Launch(x.s, x.values, r.n); err != nil {
			return err
		}
		return x.active[0].Memset8(x.s, 0xff)
	}
	at, _ := x.values.Slice(int64(r.in.Source)*r.vb, r.vb)
	var err error
	if r.prog.Wide {
		err = gpu.Upload(x.s, at, []uint64{r.seed})
	} else {
		err = gpu.Upload(x.s, at, []uint32{uint32(r.seed)})
	}
	if err != nil {
		return err
	}
	if err := x.active[0].Memset8(x.s, 0); err != nil {
		return err
	}
	if err := gpu.Upload(x.s, x.changed, []uint32{r.in.Source}); err != nil {
		return err
	}
	return x.activate.LaunchFor(x.s, 32, gpuop.BlockSize, x.changed, uint32(1), x.outOff, x.outTgt, x.active[0])
}

// iterate runs iterations until one improves nothing anywhere.
func (r *mgVPRun) iterate(ctx context.Context) error {
	report := operators.ProgressOf(ctx, r.res.Op)
	for cur := 0; ; cur = 1 - cur {
		if err := ctx.Err(); err != nil {
			return err
		}
		if int64(r.res.Iterations) > gpuop.VPMaxIterations(r.n) {
			return fmt.Errorf("operators: %s over %d GPUs did not settle in %d iterations (a bug; use --backend cpu)", r.res.Op, len(r.ps), r.res.Iterations)
		}
		if r.slider != nil {
			moved, err := r.slider.cut(r.ps, cur, r.cuts)
			if err != nil {
				return err
			}
			if moved {
				r.slides++
			}
		}
		if err := r.pull(cur); err != nil {
			return err
		}
		if err := r.readCounts(); err != nil {
			return err
		}
		r.res.Iterations++
		report(operators.Progress{Iteration: r.res.Iterations, Change: math.NaN(), Active: int64(r.total)})
		if r.total == 0 {
			return nil
		}
		if err := r.exchange(1 - cur); err != nil {
			return err
		}
	}
}

// pull queues every part's pull of its range's active vertices (set cur),
// rows longer than the hub degree a block each.
func (r *mgVPRun) pull(cur int) error {
	next := 1 - cur
	for i, x := range r.ps {
		if err := x.active[next].Memset8(x.s, 0); err != nil {
			return err
		}
		if err := x.counts.Memset8(x.s, 0); err != nil {
			return err
		}
		cnt := x.counts.Ptr()
		a := mgPullArgs{
			inOffs: x.inOff.Ptr(), inAdj: x.inSrc.Ptr(), inWeights: gpuop.PtrOf(x.inW), values: x.values.Ptr(),
			active: x.active[cur].Ptr(), boundary: x.boundary.Ptr(), changed: x.changed.Ptr(), changedCount: cnt + mgChangedAt,
			outIDs: x.outIDs.Ptr(), outVals: x.outVals.Ptr(), outCount: cnt + mgOutboxAt, examined: cnt + mgExaminedAt,
			hubs: gpuop.PtrOf(x.hubs), lo: int64(r.cuts[i]), hi: int64(r.cuts[i+1]),
			hubDegree: x.b.HubDegree(), hubCount: uint32(x.hubCount),
		}
		if err := x.pull.LaunchFor(x.s, a.hi-a.lo, gpuop.BlockSize, gpu.Args(&a)); err != nil {
			return err
		}
		if x.hubCount > 0 {
			if err := gpu.Launch(x.hubPull.Fn, gpu.Dim(uint32(min(x.hubCount, 65535))), gpu.Dim(gpuop.BlockSize), 0, x.s, gpu.Args(&a)); err != nil {
				return err
			}
		}
	}
	return nil
}

// mgPullArgs mirrors kernels/mgpu.cu's MgPullArgs, field by field: the
// arguments of mg_pull_* (hubDegree) and mg_hubs_* (hubs, hubCount).
type mgPullArgs struct {
	_                                structs.HostLayout
	inOffs, inAdj, inWeights, values gpu.DevicePtr
	active, boundary, changed        gpu.DevicePtr
	changedCount, outIDs, outVals    gpu.DevicePtr
	outCount, examined, hubs         gpu.DevicePtr
	lo, hi, hubDegree                int64
	hubCount                         uint32
}

// readCounts reads what each part's pull changed and put in its outbox.
func (r *mgVPRun) readCounts() error {
	r.total = 0
	ps := r.ps
	return readParts(r.streams, func(i int) error { return ps[i].host.Fetch(ps[i].s, ps[i].counts) }, func(i int) error {
		raw, err := ps[i].host.Wait(ps[i].s, ps[i].counts)
		if err != nil {
			return err
		}
		r.changed[i] = binary.LittleEndian.Uint32(raw[mgChangedAt:])
		r.outbox[i] = int64(binary.LittleEndian.Uint32(raw[mgOutboxAt:]))
		r.examined += int64(binary.LittleEndian.Uint64(raw[mgExaminedAt:]))
		r.total += int64(r.changed[i])
		return nil
	})
}

// exchange sends the outboxes into the other parts' inboxes, where each
// part writes them into its values and activates (set next) its vertices
// the received and its own updates reach.
func (r *mgVPRun) exchange(next int) error {
	if err := r.m.exchangeOutboxes(r.ps, r.streams, r.outbox, r.vb); err != nil {
		return err
	}
	for i, x := range r.ps {
		for from := range r.ps {
			if from == i || r.outbox[from] == 0 {
				continue
			}
			got := r.outbox[from]
			if err := x.apply.LaunchFor(x.s, got, gpuop.BlockSize, x.inIDs[from], x.inVals[from], uint32(got), x.values); err != nil {
				return err
			}
			if err := x.activate.LaunchFor(x.s, 32*got, gpuop.BlockSize, x.inIDs[from], uint32(got), x.outOff, x.outTgt, x.active[next]); err != nil {
				return err
			}
		}
		if r.changed[i] > 0 {
			if err := x.activate.LaunchFor(x.s, 32*int64(r.changed[i]), gpuop.BlockSize, x.changed, r.changed[i], x.outOff, x.outTgt, x.active[next]); err != nil {
				return err
			}
		}
	}
	return nil
}

// result reads the owners' values into the result's columns.
func (r *mgVPRun) result(extra float64, parent []uint32) (*operators.Result, error) {
	res, n := r.res, r.n
	res.EdgesExamined = r.examined
	res.Strategy = fmt.Sprintf("vertex refinement over warpseg rounds, %s", r.prog.DescribeValues())
	if extra > 0 {
		res.Strategy += fmt.Sprintf(", permissive partitioning (parts hold %.0f%% more on each side; borders moved in %d of %d iterations)", 100*extra, r.slides, res.Iterations)
	}
	res.Strategy += " (" + r.m.describe(r.parts) + ")"
	res.StrategyReason = fmt.Sprintf("%d GPUs: each pulls its active vertices; only the updated boundary vertices travel (Vertex Refinement)", len(r.ps))
	raw, err := mgOwnedValues(r.ps, n, r.vb)
	if err != nil {
		return nil, err
	}
	switch r.which {
	case mgSSSP:
		dist := make([]float64, n)
		for v := range dist {
			dist[v] = rawValue(raw, v, r.prog.Wide, gpuop.Distance64, gpuop.Distance32)
		}
		res.Columns = []operators.Column{{Name: "distance", Type: operators.Float64Column, Float64: dist}, {Name: "parent", Type: operators.VertexColumn, Vertex: parent}}
	case mgSSWP:
		width := make([]float64, n)
		for v := range width {
			width[v] = rawValue(raw, v, r.prog.Wide, gpuop.Width64, gpuop.Width32)
		}
		res.Columns = []operators.Column{{Name: "width", Type: operators.Float64Column, Float64: width}}
	default:
		comp := make([]uint32, n)
		for v := range comp {
			comp[v] = binary.LittleEndian.Uint32(raw[4*v:])
		}
		res.Columns = []operators.Column{{Name: "component", Type: operators.VertexColumn, Vertex: comp}}
	}
	return res, nil
}

// free frees the parts.
func (r *mgVPRun) free() {
	for _, x := range r.ps {
		if x != nil {
			x.Free()
		}
	}
}

// rawValue is vertex v's value in raw, read by value64 or value32 as the
// program's width says.
func rawValue(raw []byte, v int, wide bool, value64 func(uint64) float64, value32 func(uint32) float64) float64 {
	if wide {
		return value64(binary.LittleEndian.Uint64(raw[8*v:]))
	}
	return value32(binary.LittleEndian.Uint32(raw[4*v:]))
}

// exchangeOutboxes sends every part's outbox, as long as it is filled, to
// inbox r of every other part.
func (m *MultiGPU) exchangeOutboxes(ps []*mgVPPart, streams []*gpu.Stream, outbox []int64, vb int64) error {
	k := len(ps)
	for _, field := range []struct {
		out func(*mgVPPart) *gpu.DeviceBuffer
		in  func(*mgVPPart, int) *gpu.DeviceBuffer
		w   int64
	}{
		{func(x *mgVPPart) *gpu.DeviceBuffer { return x.outIDs }, func(x *mgVPPart, r int) *gpu.DeviceBuffer { return x.inIDs[r] }, 4},
		{func(x *mgVPPart) *gpu.DeviceBuffer { return x.outVals }, func(x *mgVPPart, r int) *gpu.DeviceBuffer { return x.inVals[r] }, vb},
	} {
		src := make([]gpu.DevicePtr, k)
		dst := make([][]gpu.DevicePtr, k)
		bytes := make([]int64, k)
		for r, x := range ps {
			src[r] = field.out(x).Ptr()
			bytes[r] = outbox[r] * field.w
		}
		for p, x := range ps {
			dst[p] = make([]gpu.DevicePtr, k)
			for r := range ps {
				if r != p {
					dst[p][r] = field.in(x, r).Ptr()
				}
			}
		}
		if err := m.link.broadcast(streams, src, dst, bytes); err != nil {
			return err
		}
	}
	return nil
}

// mgOwnedValues reads every vertex's value from its owner, as raw bytes.
func mgOwnedValues(ps []*mgVPPart, n, vb int64) ([]byte, error) {
	raw := make([]byte, n*vb)
	for _, x := range ps {
		lo, hi := int64(x.part.Lo), int64(x.part.Hi)
		if lo == hi {
			continue
		}
		src, _ := x.values.Slice(lo*vb, (hi-lo)*vb)
		if err := src.CopyToHost(x.s, raw[lo*vb:hi*vb]); err != nil {
			return nil, err
		}
		if err := x.s.Synchronize(); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// newMGVPPart copies the part's layouts to b and allocates its buffers:
// full-length values and activeness masks, the owned vertices' lists, the
// outbox (the part's boundary vertices at most) and an inbox for every other
// part (its boundary vertices at most).
func newMGVPPart(b *gpuop.GPU, part convert.Partition, parts []convert.Partition, prog gpuop.Program, n int64) (x *mgVPPart, err error) {
	x = &mgVPPart{b: b, part: part}
	defer func() {
		if err != nil {
			x.Free()
		}
	}()
	if x.s, err = b.Context().NewStream(); err != nil {
		return nil, err
	}
	x.Add(func() { x.s.Destroy() })
	if err := x.layouts(prog); err != nil {
		return nil, err
	}
	hubs := x.hubRows()
	if err := x.buffers(parts, prog.ValueBytes(), n); err != nil {
		return nil, err
	}
	boundary, _ := x.boundary.Slice(0, 4*int64(len(part.BoundaryBits)))
	if len(part.BoundaryBits) > 0 {
		if err := gpu.Upload(x.s, boundary, part.BoundaryBits); err != nil {
			return nil, err
		}
	}
	if len(hubs) > 0 {
		if err := gpu.Upload(x.s, x.hubs, hubs); err != nil {
			return nil, err
		}
	}
	apply := "mg_apply32"
	if prog.Wide {
		apply = "mg_apply64"
	}
	err = b.KernelsOf(kernels.MultiGPU, map[string]**gpuop.Kernel{
		"mg_pull_" + prog.Name: &x.pull, "mg_hubs_" + prog.Name: &x.hubPull, apply: &x.apply, "mg_activate": &x.activate,
		"mg_count_sections": &x.count,
	})
	if err != nil {
		return nil, err
	}
	if x.host, err = gpuop.NewCounters(b, mgCountBytes); err != nil {
		return nil, err
	}
	x.Add(x.host.Free)
	return x, nil
}

// layouts copies the part's in- and out-edges (and the program's weights)
// to its GPU.
func (x *mgVPPart) layouts(prog gpuop.Program) error {
	want := []gpuop.Layout{gpuop.InOffsets, gpuop.InSources, gpuop.OutOffsets, gpuop.OutTargets}
	if prog.Weights != gpuop.NoWeights {
		want = append(want, gpuop.InWeightsOf(prog.Weights), prog.Weights)
	}
	lay, transfer, err := x.b.Layouts(x.part.Graph, x.s, want...)
	if err != nil {
		return err
	}
	x.transfer = transfer
	x.inOff, x.inSrc, x.outOff, x.outTgt = lay[0], lay[1], lay[2], lay[3]
	if prog.Weights != gpuop.NoWeights {
		x.inW, x.outW = lay[4], lay[5]
	}
	return nil
}

// hubRows lists the held vertices whose rows the hubs' kernel pulls.
func (x *mgVPPart) hubRows() []uint32 {
	var hubs []uint32
	in := x.part.Graph.In()
	for v := x.part.HoldLo; v < x.part.HoldHi; v++ {
		if in.Degree(v) > x.b.HubDegree() {
			hubs = append(hubs, v)
		}
	}
	x.hubCount = len(hubs)
	return hubs
}

// buffers allocates the part's run's buffers (values of vb bytes, n
// vertices), the inboxes one a part of parts, poisoned under the GPU's
// Poison.
func (x *mgVPPart) buffers(parts []convert.Partition, vb, n int64) error {
	part := x.part
	words := 4 * (n/32 + 1)
	held := max(int64(part.HoldHi)-int64(part.HoldLo), 1)
	sizes := []int64{n * vb, words, words, words, held * 4, max(part.Boundary, 1) * 4, max(part.Boundary, 1) * vb,
		mgCountBytes, int64(max(x.hubCount, 1)) * 4, 4 * max(sectionsOf(part), 1)}
	for _, other := range parts {
		sizes = append(sizes, max(other.Boundary, 1)*4, max(other.Boundary, 1)*vb)
	}
	bufs, free, err := x.b.Buffers(sizes...)
	if err != nil {
		return err
	}
	x.Add(free)
	x.values, x.active[0], x.active[1], x.boundary = bufs[0], bufs[1], bufs[2], bufs[3]
	x.changed, x.outIDs, x.outVals, x.counts, x.hubs, x.sections = bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], bufs[9]
	for r := range parts {
		x.inIDs = append(x.inIDs, bufs[10+2*r])
		x.inVals = append(x.inVals, bufs[11+2*r])
	}
	return x.b.PoisonBuffers(x.s, bufs...)
}

// mgParents finds SSSP's tree by gpuop's parent passes (sssp.go), each
// part's pass over its out-edges (into its own vertices) with the final
// distances of the vertices they come from (its own, and boundary
// vertices, which travelled), the passes' marks of the owned vertices
// gathered between passes.
func mgParents(ctx context.Context, m *MultiGPU, ps []*mgVPPart, streams []*gpu.Stream, prog gpuop.Program, source uint32, n int64) ([]uint32, error) {
	pp := make([]parentPass, len(ps))
	defer func() {
		for _, p := range pp {
			if p.free != nil {
				p.free()
			}
		}
	}()
	for i, x := range ps {
		if err := pp[i].start(x, prog, source, n); err != nil {
			return nil, err
		}
	}
	cuts := make([]int64, len(ps)+1)
	for r, x := range ps {
		cuts[r] = 4 * int64(x.part.Lo)
	}
	cuts[len(ps)] = 4 * n
	before := int64(-1)
	for r := uint32(0); ; r++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		left, err := parentRound(m, ps, pp, streams, cuts, r, source, n)
		if err != nil {
			return nil, err
		}
		if left == 0 {
			break
		}
		if r > 0 && left == before {
			return nil, fmt.Errorf("operators: sssp over %d GPUs: %d reached vertices found no parent in pass %d (a bug; use --backend cpu)", len(ps), left, r)
		}
		before = left
	}
	return ownedParents(ps, pp, n)
}

// parentPass is a part's parent passes: the parents, the pass each came
// in, the count of the reached vertices left, and the kernels.
type parentPass struct {
	parent, round, count *gpu.DeviceBuffer
	pass, init, left     *gpuop.Kernel
	free                 func()
}

// start makes part x's buffers and kernels for the passes and marks the
// source.
func (p *parentPass) start(x *mgVPPart, prog gpuop.Program, source uint32, n int64) error {
	unresolved := "vp_unresolved32"
	if prog.Wide {
		unresolved = "vp_unresolved64"
	}
	bufs, free, err := x.b.Buffers(n*4, n*4, 8)
	if err != nil {
		return err
	}
	p.parent, p.round, p.count, p.free = bufs[0], bufs[1], bufs[2], free
	if err := x.b.KernelsOf(kernels.VPCommon, map[string]**gpuop.Kernel{"vp_parent_init": &p.init, unresolved: &p.left}); err != nil {
		return err
	}
	if p.pass, err = x.b.Kernel(kernels.VPVWC, "csr_parent_"+prog.Name); err != nil {
		return err
	}
	if err := p.parent.Memset8(x.s, 0xff); err != nil {
		return err
	}
	if err := p.round.Memset8(x.s, 0xff); err != nil {
		return err
	}
	return gpu.Launch(p.init.Fn, gpu.Dim(1), gpu.Dim(1), 0, x.s, p.parent, p.round, source)
}

// parentRound runs pass r on every part, gathers the marks, and counts the
// reached vertices still without a parent.
func parentRound(m *MultiGPU, ps []*mgVPPart, pp []parentPass, streams []*gpu.Stream, cuts []int64, r, source uint32, n int64) (int64, error) {
	rounds := make([]*gpu.DeviceBuffer, len(ps))
	for i, x := range ps {
		if err := pp[i].pass.Launch(x.s, x.outOff, x.outTgt, gpuop.PtrOf(x.outW), n, x.values, pp[i].parent, pp[i].round, r, source); err != nil {
			return 0, err
		}
		rounds[i] = pp[i].round
	}
	if err := gatherRanges(m.link, streams, rounds, cuts); err != nil {
		return 0, err
	}
	var left int64
	for i, x := range ps {
		// Each part counts the reached vertices without a parent among
		// those whose distances it holds; its own are all there.
		if err := pp[i].count.Memset8(x.s, 0); err != nil {
			return 0, err
		}
		if err := pp[i].left.Launch(x.s, x.values, pp[i].round, n, pp[i].count); err != nil {
			return 0, err
		}
		c := []uint32{0}
		if err := gpu.Download(x.s, c, pp[i].count); err != nil {
			return 0, err
		}
		left += int64(c[0])
	}
	return left, nil
}

// ownedParents reads each vertex's parent from its owner.
func ownedParents(ps []*mgVPPart, pp []parentPass, n int64) ([]uint32, error) {
	parent := make([]uint32, n)
	gpuop.PoisonHost(ps[0].b, parent, 0xdeadbeef)
	for i, x := range ps {
		lo, hi := int64(x.part.Lo), int64(x.part.Hi)
		if lo == hi {
			continue
		}
		src, _ := pp[i].parent.Slice(4*lo, 4*(hi-lo))
		if err := gpu.Download(x.s, parent[lo:hi], src); err != nil {
			return nil, err
		}
	}
	return parent, nil
}

// ---- Permissive Partitioning's online phase ----

// sectionVertices is the dissertation's section: a block's 128 vertices.
const sectionVertices = convert.PartitionAlign

// sectionsOf is the number of sections of the part's own range.
func sectionsOf(part convert.Partition) int64 {
	return (int64(part.Hi) - int64(part.Lo) + sectionVertices - 1) / sectionVertices
}

// sectionLoads weighs each section's active vertices by the section's mean
// in-degree (plus one, for the vertex's own cost), to cut the next
// iteration's work into equal shares.
type sectionLoads struct {
	parts  []convert.Partition
	weight []float64 // mean in-degree + 1, by section of the whole graph
	counts []uint32  // active vertices, by section
	load   []float64 // running sum of weight × count
}

func newSectionLoads(inOffsets []int64, parts []convert.Partition) *sectionLoads {
	n := int64(len(inOffsets) - 1)
	sections := (n + sectionVertices - 1) / sectionVertices
	l := &sectionLoads{parts: parts, weight: make([]float64, sections), counts: make([]uint32, sections), load: make([]float64, sections+1)}
	for s := range l.weight {
		lo, hi := int64(s)*sectionVertices, min(int64(s+1)*sectionVertices, n)
		l.weight[s] = float64(inOffsets[hi]-inOffsets[lo])/float64(hi-lo) + 1
	}
	return l
}

// cut counts the active vertices of mask cur on every part (each its own
// range, which its mask covers exactly) and moves cuts to balance their
// load; it says whether a cut moved.
func (l *sectionLoads) cut(ps []*mgVPPart, cur int, cuts []uint32) (bool, error) {
	for _, x := range ps {
		sections := sectionsOf(x.part)
		if sections == 0 {
			continue
		}
		words := (int64(len(l.weight))*sectionVertices + 31) / 32
		if err := x.count.LaunchFor(x.s, sections, gpuop.BlockSize, x.active[cur], int64(x.part.Lo)/32, sections, words, x.sections); err != nil {
			return false, err
		}
		first := int64(x.part.Lo) / sectionVertices
		buf, _ := x.sections.Slice(0, 4*sections)
		if err := gpu.Download(x.s, l.counts[first:first+sections], buf); err != nil {
			return false, err
		}
	}
	for s, c := range l.counts {
		l.load[s+1] = l.load[s] + float64(c)*l.weight[s]
	}
	return slideCuts(l.parts, l.load, cuts), nil
}

// slideCuts sets cuts[1..k-1] where the running load load (by section)
// passes each k-th of its total, each cut kept inside both neighbours'
// held ranges and their own ranges (so that a part's range never passes a
// neighbour's whole range) and in order; it says whether a cut moved.
func slideCuts(parts []convert.Partition, load []float64, cuts []uint32) bool {
	k := len(parts)
	total := load[len(load)-1]
	moved := false
	for p := 1; p < k; p++ {
		want := total * float64(p) / float64(k)
		s := sort.SearchFloat64s(load, want)
		v := uint32(min(int64(s)*sectionVertices, int64(cuts[k])))
		lo := max(parts[p].HoldLo, parts[p-1].Lo, cuts[p-1])
		hi := min(parts[p-1].HoldHi, parts[p].Hi)
		if total == 0 {
			v = parts[p].Lo
		}
		v = max(min(v, hi), lo)
		if v != cuts[p] {
			moved = true
		}
		cuts[p] = v
	}
	return moved
}
