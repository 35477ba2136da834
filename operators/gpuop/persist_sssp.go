package gpuop

import (
	"encoding/binary"
	"fmt"
	"math"
	"structs"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// SSSP's persistent strategy (kernels/persist.cu, ssspp_*): near-far
// Δ-stepping in one cooperative launch, both piles on the device. A near
// step relaxes the near pile (vertices under the threshold) into the next
// near pile and the far pile; when the near pile empties, the barrier's last
// block sets the next threshold Δ past the far pile's lowest value and a
// split step moves the far vertices under it to the near pile. No step
// returns to the host.
//
// From ADDS (Wang, Fussell and Lin: asynchronous dynamic Δ-stepping,
// PPoPP'21) it takes the buckets kept and advanced on the device by the
// GPU itself (ADDS's manager; here the last block at each barrier), and Δ
// that adapts at run time to the work a bucket holds: it starts at
// near-far's rule from the weights (gpuSSSPDelta: 32 × mean weight ÷
// average degree) and doubles, up to 64 times, while new buckets hold
// fewer vertices than there are blocks, halving back when one holds more
// than the grid has threads. Of ADDS's asynchrony (workers that pull from
// the lowest bucket with no barrier between steps) it takes a bounded
// part: within a multi-block near step each block runs up to span rounds
// over the vertices it pushed itself, without waiting for the others
// (persistSSSPSpan); the barrier between steps keeps the schedule the same
// in every block, at about a microsecond a step (BENCHMARKS.md). Given
// --delta, Δ stays fixed.

// SsspState in kernels/persist.cu: the fields the host reads.
const (
	ssspStateBytes     = 768
	ssspDeltaAt        = 656 // sched.delta: Δ at the end
	ssspNearStepsAt    = 712
	ssspSplitStepsAt   = 716
	ssspSingleRunsAt   = 720
	ssspSingleStepsAt  = 724
	ssspRelaxedAt      = 728
	ssspDeltaChangesAt = 736
	ssspRoundsAt       = 740
)

// persistSSSPSpan is the rounds a multi-block near step of the persistent
// SSSP runs in each block by default: after its share of the step's
// input, up to span − 1 more over the vertices it kept from the round
// before, under the same threshold (kernels/persist.cu's sssp_step). On
// the H200 (BenchmarkGPUPersist, docs/benchmarks/roads.md) the 2048² grid
// with weights 1..255 took 30.8 ms at span 1, 25.4 at 4, 24.3 at 8, 21.9
// at 16 and 21.2 at 32; the 16 M road 52.5, 41.8, 40.6, 37.2 and 35.8;
// in another run, the grid 21.1 at 32, 20.0 at 64, 20.1 at 128, the road
// 38.7, 35.1 and 35.4.
const persistSSSPSpan = 64

// ssspSpan is the rounds a persistent SSSP's steps run: tuning's
// persistSpan when set, else persistSSSPSpan.
func (b *GPU) ssspSpan() uint32 {
	if b.tune.persistSpan > 0 {
		return b.tune.persistSpan
	}
	return persistSSSPSpan
}

// persistDeltaGrowth is how far Δ may grow above near-far's rule.
const persistDeltaGrowth = 64

// persistDeltas are Δ's start and bound for a search on g: --delta fixed,
// or near-far's rule, free to grow persistDeltaGrowth times.
func persistDeltas(g *convert.Graph, p operators.Params) (start, most float64) {
	d := gpuSSSPDelta(g, p)
	if p.Delta > 0 || math.IsInf(d, 1) {
		return d, d
	}
	return d, d * persistDeltaGrowth
}

// persistSSSPBytes is the device memory of a persistent SSSP on g: the CSR
// and its weights, the parent pass, and the search's (chainsSearchBytes
// on g's chains' contraction where it runs there).
func persistSSSPBytes(b *GPU, g *convert.Graph, _ operators.Params) int64 {
	prog := b.SSSPProgram(g)
	own := layoutBytes(g, prog.csrParts()...) + parentBytes(g)
	if c := b.persistChains(g, &prog); c != nil {
		return own + chainsSearchBytes(g, c)
	}
	return own + ssspSearchBytes(int64(g.NumVertices()), prog)
}

// ssspSearchBytes is the buffers of a persistent SSSP on n vertices: the
// values, two stamps, two near piles of entries and three far piles of
// vertices (each vertex at most once in each), and the state.
func ssspSearchBytes(n int64, prog Program) int64 {
	n = max(n, 1)
	return n*prog.ValueBytes() + 8*n + 2*persistEntryBytes*ssspNearEntries(n) + 12*n + ssspStateBytes
}

// ssspRan is what a persistent SSSP ran, read from its state.
type ssspRan struct {
	blocks                                     uint32
	delta, deltaStart, deltaMost               float64
	near, splits, singleRuns, singleSteps, dch uint32
	relaxed                                    uint64
	span, rounds                               uint32
}

func parseSSSPState(b []byte, blocks uint32, start, most float64) ssspRan {
	u := func(at int) uint32 { return binary.LittleEndian.Uint32(b[at:]) }
	return ssspRan{blocks: blocks, delta: math.Float64frombits(binary.LittleEndian.Uint64(b[ssspDeltaAt:])),
		deltaStart: start, deltaMost: most, near: u(ssspNearStepsAt), splits: u(ssspSplitStepsAt),
		singleRuns: u(ssspSingleRunsAt), singleSteps: u(ssspSingleStepsAt), dch: u(ssspDeltaChangesAt),
		relaxed: binary.LittleEndian.Uint64(b[ssspRelaxedAt:]), rounds: u(ssspRoundsAt)}
}

func (r ssspRan) String() string {
	delta := fmt.Sprintf("delta=%.4g fixed", r.deltaStart)
	if r.deltaMost > r.deltaStart {
		delta = fmt.Sprintf("delta=%.4g adaptive to %.4g, %d changes, %.4g at the end", r.deltaStart, r.deltaMost, r.dch, r.delta)
	}
	return fmt.Sprintf("persist (%d blocks, near-far %s, up to %d rounds a step: %d near and %d split steps, %d single-block steps in %d runs, %d rounds more in all blocks)",
		r.blocks, delta, r.span, r.near, r.splits, r.singleSteps, r.singleRuns, r.rounds)
}

// ssspNearEntries is the entries of each near pile of a persistent SSSP
// on n vertices: a step's pushes there carry the vertex's stamp, once a
// vertex, and a single-block run ends by appending what block 0 kept,
// which carries none and may hold a vertex several times (on a graph of
// 1,024 vertices the two overran n).
func ssspNearEntries(n int64) int64 { return n + persistKeptMost }

// ssspPersist is a persistent SSSP's device side.
type ssspPersist struct {
	init, search  *Kernel
	grid, threads uint32              // blocks and their threads
	parts         []*gpu.DeviceBuffer // offsets, targets, weights (nil: none)
	// values, stamp, fstamp, near0, near1, far0, far1, far2, state
	bufs []*gpu.DeviceBuffer
}

// prepareSSSPPersist takes the search's kernels, layouts of g (the run's
// graph, or its chains' contraction) and buffers from e.
func prepareSSSPPersist(e *enactor, g *convert.Graph, prog Program) (*ssspPersist, error) {
	n := max(int64(g.NumVertices()), 1)
	ks, err := e.kernels(kernels.Persist, "ssspp_init_"+prog.Name, "ssspp_"+prog.Name)
	if err != nil {
		return nil, err
	}
	threads := e.b.persistBlock(persistSSSPThreads, persistSSSPBlock)
	grid, err := e.b.persistGrid(ks[1].Fn, threads)
	if err != nil {
		return nil, err
	}
	layouts, err := e.csrLayouts(g, prog)
	if err != nil {
		return nil, err
	}
	near := persistEntryBytes * ssspNearEntries(n)
	bufs, err := e.buffers(n*prog.ValueBytes(), 4*n, 4*n, near, near, 4*n, 4*n, 4*n, ssspStateBytes)
	if err != nil {
		return nil, err
	}
	return &ssspPersist{init: ks[0], search: ks[1], grid: grid, threads: uint32(threads), parts: layouts, bufs: bufs}, nil
}

// run queues the search from source (ssspp_init) and runs it.
func (sp *ssspPersist) run(e *enactor, prog Program, start, most float64) error {
	a, err := sp.clear(e, prog)
	if err != nil {
		return err
	}
	low, high := sp.adaptBounds()
	if err := gpu.Launch(sp.init.Fn, gpu.Dim(1), gpu.Dim(1), 0, e.s, gpu.Args(&a), e.in.Source, start, most, low, high); err != nil {
		return err
	}
	return sp.launch(e, &a, e.b.persistLimit())
}

// clear sets the values unreached, the stamps and the state zero, and
// returns the kernels' arguments.
func (sp *ssspPersist) clear(e *enactor, prog Program) (ssspPersistArgs, error) {
	values, st := sp.bufs[0], sp.bufs[8]
	if err := values.Memset8(e.s, prog.None); err != nil {
		return ssspPersistArgs{}, err
	}
	for _, buf := range []*gpu.DeviceBuffer{sp.bufs[1], sp.bufs[2], st} {
		if err := buf.Memset8(e.s, 0); err != nil {
			return ssspPersistArgs{}, err
		}
	}
	return ssspPersistArgs{
		offsets: sp.parts[0].Ptr(), targets: sp.parts[1].Ptr(), weights: PtrOf(sp.parts[2]),
		dist: values.Ptr(), stamp: sp.bufs[1].Ptr(), fstamp: sp.bufs[2].Ptr(),
		near: [2]gpu.DevicePtr{sp.bufs[3].Ptr(), sp.bufs[4].Ptr()},
		far:  [3]gpu.DevicePtr{sp.bufs[5].Ptr(), sp.bufs[6].Ptr(), sp.bufs[7].Ptr()},
		st:   st.Ptr(),
	}, nil
}

// adaptBounds are the bucket sizes Δ adapts at: it doubles while a new
// bucket holds fewer vertices than blocks, and halves while one holds more
// than the grid has threads.
func (sp *ssspPersist) adaptBounds() (low, high uint32) { return sp.grid, sp.grid * sp.threads }

// launch runs the cooperative search from what an init kernel queued,
// steps of at most single entries in block 0 alone.
func (sp *ssspPersist) launch(e *enactor, a *ssspPersistArgs, single uint32) error {
	return gpu.LaunchCooperative(sp.search.Fn, gpu.Dim(sp.grid), gpu.Dim(sp.threads), 0, e.s, gpu.Args(a), single, e.b.ssspSpan())
}

// ssspPersistArgs mirrors kernels/persist.cu's SsspArgs, field by field:
// the CSR and weights (0 for unit weights), the values, the stamps, the
// near piles, the far piles and the state.
type ssspPersistArgs struct {
	_                structs.HostLayout
	offsets, targets gpu.DevicePtr
	weights, dist    gpu.DevicePtr
	stamp, fstamp    gpu.DevicePtr
	near             [2]gpu.DevicePtr
	far              [3]gpu.DevicePtr
	st               gpu.DevicePtr
}

// runSSSPPersist runs the persistent SSSP, then the parent passes of the
// vertex programs' SSSP (sssp.go) over the same CSR and values.
func runSSSPPersist(e *enactor) error {
	if err := checkPersistSize("sssp", e.g); err != nil {
		return err
	}
	prog := e.b.SSSPProgram(e.g)
	if c := e.b.persistChains(e.g, &prog); c != nil {
		return runSSSPChains(e, c, prog)
	}
	sp, err := prepareSSSPPersist(e, e.g, prog)
	if err != nil {
		return err
	}
	d, pp, err := persistParentPass(e, prog, sp.bufs[0], sp.parts)
	if err != nil {
		return err
	}
	host, err := NewCounters(e.b, ssspStateBytes)
	if err != nil {
		return err
	}
	e.done.Add(host.Free)
	start, most := persistDeltas(e.g, e.p)
	if err := e.start(); err != nil {
		return err
	}
	if err := sp.run(e, prog, start, most); err != nil {
		return err
	}
	if err := d.resolveParents(e.ctx, pp); err != nil {
		return err
	}
	if err := e.stop(); err != nil {
		return err
	}
	raw, err := host.read(e.s, sp.bufs[8])
	if err != nil {
		return err
	}
	ran := parseSSSPState(raw, sp.grid, start, most)
	ran.span = e.b.ssspSpan()
	return ssspPersistResult(e, d, pp, ran, ran.String())
}

// persistParentPass is the parent pass of prog over the run's graph,
// its CSR and weights csr (csrLayouts), from the distances in values.
func persistParentPass(e *enactor, prog Program, values *gpu.DeviceBuffer, csr []*gpu.DeviceBuffer) (*vpDevice, *parentPass, error) {
	d := &vpDevice{e: e, b: e.b, s: e.s, g: e.g, n: int64(e.g.NumVertices()), values: values,
		offs: csr[0], targets: csr[1], weights: csr[2],
		r: vpRun{prog: prog, strategy: strategyPersist, source: e.in.Source}}
	pp, err := d.prepareParents()
	if err != nil {
		return nil, nil, err
	}
	return d, pp, nil
}

// ssspPersistResult fills e's result with d's distances and pp's parents,
// the search described as strategy.
func ssspPersistResult(e *enactor, d *vpDevice, pp *parentPass, ran ssspRan, strategy string) error {
	dist, err := downloadFloats(d, Distance64, Distance32)
	if err != nil {
		return err
	}
	parent, err := d.downloadParents(pp)
	if err != nil {
		return err
	}
	e.res.Strategy = strategy + ", " + d.r.prog.DescribeValues()
	e.res.Iterations = int(ran.near + ran.splits)
	e.res.EdgesExamined = int64(ran.relaxed)
	e.res.Columns = []operators.Column{
		{Name: "distance", Type: operators.Float64Column, Float64: dist},
		{Name: "parent", Type: operators.VertexColumn, Vertex: parent},
	}
	return nil
}
