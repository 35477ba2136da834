package gpuop

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// The persistent strategies, "persist" for bfs (here) and sssp
// (persist_sssp.go): one cooperative launch over every SM runs the whole
// search (kernels/persist.cu), its levels or Δ-stepping steps separated by
// a grid-wide barrier on the device, not by a return to the host. They are
// for graphs of high diameter and low degree (road networks, meshes,
// grids), whose thousands of levels each hold a few thousand vertices:
// bfs4k runs those in one block on one SM (latency- and atomic-bound: 28 µs
// a level on the 2048² grid) and the level-synchronous strategies return to
// the host after each (tens of µs). A level here costs its few dependent
// memory latencies and the barrier, with its vertices spread over every
// SM; a frontier of at most persistSingleLimit vertices runs in block 0
// alone, with __syncthreads between levels and no barrier, the others
// waiting. On a small-world graph (a handful of levels of millions of
// vertices) enterprise's direction-optimizing search skips most edges and
// wins; so does vwc's near-far push for sssp.

// The blocks of the persistent kernels, one an SM, so that the barrier
// waits for as few arrivals as there are SMs: persistThreads is the
// largest the BFS and the barrier's bench take
// (__launch_bounds__(PERSIST_THREADS, 1)), persistBFSThreads the BFS's
// (a level's __syncthreads wait for 8 warps, not 32: on the H200 the
// 2048² grid 10.1 against 10.7 ms, the 16 M road 21.6 against 22.4,
// luxembourg_osm 2.44 against 2.63), persistSSSPBlock the SSSP's
// largest (PERSIST_SSSP_THREADS: 128 registers a thread) and
// persistSSSPThreads its block (in one call on the H200: the 16 M road
// 29.2 against 30.1 ms at 512, luxembourg_osm 3.02 against 3.17, the
// grid 15.0 and 15.1; the two sessions before measured the same lead
// within their spread).
const (
	persistThreads     = 1024
	persistBFSThreads  = 256
	persistSSSPBlock   = 512
	persistSSSPThreads = 256
)

// persistEntryBytes is a frontier entry (QEntry): vertex, degree, first edge.
const persistEntryBytes = 16

// persistBFSSpan is the levels a multi-block step of the persistent
// BFS runs between two barriers: after the level dealt to it, each block
// runs up to span − 1 more from the vertices it pushed itself. It claims
// with an atomicMin of (depth, parent), so that where a block ran ahead
// and claimed a vertex too deep, the block that reaches it first lowers it
// (docs/gpu.md). A barrier costs about 1 µs, a level's work on a grid
// 2–3.5 µs. On the H200 (BenchmarkGPUPersist, docs/benchmarks/roads.md)
// the 2048² grid took 14.0 ms at span 1, 12.6 at 2, 10.9 at 8 and 10.6
// at 16 in blocks of 1,024 threads, 10.0 at 32 and 9.9 at 64 in blocks
// of 256; the 16 M road 29.3 at span 1, 22.3 at 16, 21.4 at 32 (256).
// Past 32 the gain is within the runs' noise, while blocks drift further
// apart and correct more of each other's depths.
const persistBFSSpan = 32

// persistSingleLimit is the largest frontier block 0 takes alone: under
// it, one SM's loads and atomics are not what bounds a level, and the
// barrier it saves is; over it, the level's vertices spread over every SM.
const persistSingleLimit = 256

// persistMaxBlocks is the largest persistent grid: the barrier counts
// arrivals in 11 bits and the BFS's kept entries (960 a block) in 20
// (kernels/persist.cu's PERSIST_MAX_BLOCKS).
const persistMaxBlocks = 1024

// persistKeptMost is the most entries a block keeps in shared memory
// (kernels/persist.cu's PERSIST_LOCAL).
const persistKeptMost = 960

// persistMaxVertices is the most vertices the persistent kernels take:
// their queue counters are 32-bit and each vertex enters a queue once.
const persistMaxVertices = 1<<32 - 2

// BfspState in kernels/persist.cu: the fields the host reads.
const (
	bfspStateBytes     = 512
	bfspLevelsAt       = 392
	bfspSingleRunsAt   = 396
	bfspSingleLevelsAt = 400
	bfspMultiLevelsAt  = 404
	bfspLocalLevelsAt  = 408
	bfspOverflowAt     = 416
	bfspPhasesAt       = 420
)

// persistGrid is the blocks a persistent launch of fn runs: one an SM
// (tuning's persistBlocks, when set), at most what a cooperative launch
// holds at once.
func (b *GPU) persistGrid(fn *gpu.Function, threads int) (uint32, error) {
	dev := b.Device()
	if !dev.CooperativeLaunch {
		return 0, usererr.New(usererr.Backend, fmt.Sprintf("GPU strategy persist needs cooperative launches, which %s does not support", dev.Name),
			"pick another --strategy (or auto)")
	}
	most, err := fn.CooperativeGrid(threads, 0)
	if err != nil {
		return 0, err
	}
	blocks := dev.SMs
	if b.tune.persistBlocks > 0 {
		blocks = b.tune.persistBlocks
	}
	if blocks = min(blocks, most, persistMaxBlocks); blocks < 1 {
		return 0, fmt.Errorf("operators: kernel %s does not fit on an SM of %s (%d threads)", fn.Name(), dev.Name, threads)
	}
	return uint32(blocks), nil
}

// persistBlock is the block a persistent kernel runs with: threads, or
// tuning's persistThreads when set, at most the kernel's most.
func (b *GPU) persistBlock(threads, most int) int {
	if b.tune.persistThreads > 0 {
		return min(b.tune.persistThreads, most)
	}
	return threads
}

// persistLimit is the single-block limit a search runs with: tuning's
// persistSingle when set (negative: none), else persistSingleLimit.
func (b *GPU) persistLimit() uint32 {
	switch t := b.tune.persistSingle; {
	case t > 0:
		return uint32(min(t, math.MaxUint32)) // 1<<40: every level
	case t < 0:
		return 0
	}
	return persistSingleLimit
}

// persistApplies is persist's applicability for op: a GPU with
// cooperative launches and a graph the kernels can count.
func persistApplies(op string) func(b *GPU, g *convert.Graph) error {
	return func(b *GPU, g *convert.Graph) error {
		if dev := b.Device(); !dev.CooperativeLaunch {
			return fmt.Errorf("%s has no cooperative launches", dev.Name)
		}
		return checkPersistSize(op, g)
	}
}

// checkPersistSize refuses a graph with more vertices than the persistent
// kernels count.
func checkPersistSize(op string, g *convert.Graph) error {
	if n := int64(g.NumVertices()); n > persistMaxVertices {
		return usererr.New(usererr.Backend, fmt.Sprintf("%s strategy persist takes graphs of up to %d vertices; this one has %d", op, int64(persistMaxVertices), n),
			"pick another --strategy (or auto)")
	}
	return nil
}

// persistBFSBytes is the device memory of a persistent BFS on g: the CSR
// and its ELL copy where it has one, labels, depths and parents, the
// queue, the state and the result's columns; or on g's chains'
// contraction, the CSR, the parent pass, the contraction's search and the
// result's columns.
func persistBFSBytes(b *GPU, g *convert.Graph, _ operators.Params) int64 {
	n := int64(g.NumVertices())
	if c := b.persistChains(g, nil); c != nil {
		return layoutBytes(g, OutOffsets, OutTargets) + parentBytes(g) + chainsSearchBytes(g, c) + bfsColumnsBytes(g)
	}
	return layoutBytes(g, OutOffsets, OutTargets) + 4*n*int64(b.persistELLWidth(g)) + 16*n +
		persistEntryBytes*int64(persistQueueCap(n, b.bfsSpan())) + bfspStateBytes + bfsColumnsBytes(g)
}

// bfsSpan is the span a persistent BFS runs at: tuning's persistSpan
// when set, else persistBFSSpan.
func (b *GPU) bfsSpan() uint32 {
	if b != nil && b.tune.persistSpan > 0 {
		return b.tune.persistSpan
	}
	return persistBFSSpan
}

// persistQueueCap is the entries of a persistent BFS's queue on n vertices
// at span: n at span 1, where each vertex enters it once; twice that past
// it, where a vertex enters again each time a block lowers its depth (a
// search that pushes more stops and runs again at span 1).
func persistQueueCap(n int64, span uint32) uint32 {
	if span > 1 {
		n *= 2
	}
	return uint32(min(max(n, 1), math.MaxUint32))
}

// persistELLMax is the widest ELL copy the persistent BFS makes: the
// kernel's PERSIST_BATCH, the edges a thread loads at once. A wider row
// costs every vertex a second round of loads for its padding (on
// luxembourg_osm, width 6 for an average degree of 2.1, 3.19 ms against
// 2.5 through the CSR on the H200).
const persistELLMax = 4

// persistELLWidth is the width of the ELL copy of g's CSR the persistent
// BFS reads (0: none, the CSR): its largest out-degree, where that is at
// most persistELLMax and the copy's padding no more than doubles the
// targets (or the copy is under 64 MiB). A road network, mesh or grid
// has one; a skewed graph does not.
func (b *GPU) persistELLWidth(g *convert.Graph) int {
	if b != nil && b.tune.noPersistELL {
		return 0
	}
	d := g.Degrees()
	cells := int64(d.Vertices) * d.Max
	if d.Max < 1 || d.Max > persistELLMax || cells > 2*d.Edges && 4*cells > 64<<20 {
		return 0
	}
	return int(d.Max)
}

// bfspRan is what a persistent BFS ran, read from its state.
type bfspRan struct {
	blocks                                       uint32
	levels, singleRuns, singleLevels, multiSteps uint32
	localSteps, phases                           uint32
	overflow                                     bool
	width                                        uint32 // of the ELL copy (0: the CSR)
	span                                         uint32
	retried                                      bool // the queue overflowed at span, and the search ran again at span 1
}

func parseBFSPState(b []byte, blocks uint32) bfspRan {
	u := func(at int) uint32 { return binary.LittleEndian.Uint32(b[at:]) }
	return bfspRan{blocks: blocks, levels: u(bfspLevelsAt), singleRuns: u(bfspSingleRunsAt),
		singleLevels: u(bfspSingleLevelsAt), multiSteps: u(bfspMultiLevelsAt),
		localSteps: u(bfspLocalLevelsAt), overflow: u(bfspOverflowAt) != 0, phases: u(bfspPhasesAt)}
}

// String describes the search for Result.Strategy; the tests read its
// counts by their words.
func (r bfspRan) String() string {
	adjacency := "CSR"
	if r.width > 0 {
		adjacency = fmt.Sprintf("ELL width %d", r.width)
	}
	span := fmt.Sprintf("up to %d levels a step", r.span)
	if r.retried {
		span += " (its queue overflowed at a wider span)"
	}
	perBlock := 0.0
	if r.multiSteps > 0 {
		perBlock = float64(r.phases) / float64(r.multiSteps) / float64(r.blocks)
	}
	return fmt.Sprintf("persist (%d blocks, %s, %s: %d single-block levels in %d runs, %d multi-block steps of %.2f levels a block, %d of them from shared memory only)",
		r.blocks, adjacency, span, r.singleLevels, r.singleRuns, r.multiSteps, perBlock, r.localSteps)
}

// persistPrefetch is bfsp_search's prefetch argument: 1 unless tuning
// turns it off.
func (b *GPU) persistPrefetch() uint32 {
	if b.tune.noPersistPrefetch {
		return 0
	}
	return 1
}

// runBFSPersist runs the persistent BFS: bfsp_init labels the source and
// queues it, bfsp_search runs every level in one cooperative launch and
// bfsp_split turns the labels into depths and parents. Where the queue
// overflows (a search past span 1 whose blocks lowered more depths than it
// holds), the search runs again at span 1, inside the timed run.
func runBFSPersist(e *enactor) error {
	if err := checkPersistSize("bfs", e.g); err != nil {
		return err
	}
	if c := e.b.persistChains(e.g, nil); c != nil {
		return runBFSChains(e, c)
	}
	s, err := newBFSPSearch(e)
	if err != nil {
		return err
	}
	if err := e.start(); err != nil {
		return err
	}
	if s.width > 0 {
		if err := s.ks[2].Launch(e.s, s.offsets, s.csrTargets, s.targets, uint64(s.n), s.width); err != nil {
			return err
		}
	}
	first := s.cap
	if c := e.b.tune.persistQueueCap; c > 0 {
		first = min(c, first)
	}
	ran, err := s.search(e, e.b.bfsSpan(), first)
	if err == nil && ran.overflow {
		ran, err = s.search(e, 1, s.cap)
		ran.retried = true
	}
	if err != nil {
		return err
	}
	if ran.overflow { // at span 1 each vertex enters the queue once
		return fmt.Errorf("operators: persistent BFS: %d entries overflowed its queue at span 1", s.cap)
	}
	return bfsResult(e, s.depth, s.parent, ran.String(), int(ran.levels))
}

// bfspSearch is a persistent BFS's kernels and buffers.
type bfspSearch struct {
	ks                                 []*Kernel // bfsp_init, bfsp_search, bfsp_ell, bfsp_split
	offsets, csrTargets, targets       *gpu.DeviceBuffer
	label, depth, parent, queue, state *gpu.DeviceBuffer
	host                               *Counters
	n                                  int64
	grid, threads                      uint32
	width, cap                         uint32
}

// newBFSPSearch takes a persistent BFS's kernels, grid, layouts and
// buffers (its queue sized for the span tuning or persistBFSSpan gives)
// from e.
func newBFSPSearch(e *enactor) (*bfspSearch, error) {
	s := &bfspSearch{n: int64(e.g.NumVertices()), width: uint32(e.b.persistELLWidth(e.g))}
	s.cap = persistQueueCap(s.n, e.b.bfsSpan())
	ks, err := e.kernels(kernels.Persist, "bfsp_init", "bfsp_search", "bfsp_ell", "bfsp_split")
	if err != nil {
		return nil, err
	}
	s.ks, s.threads = ks, uint32(e.b.persistBlock(persistBFSThreads, persistThreads))
	if s.grid, err = e.b.persistGrid(ks[1].Fn, int(s.threads)); err != nil {
		return nil, err
	}
	parts, err := e.layouts(OutOffsets, OutTargets)
	if err != nil {
		return nil, err
	}
	s.offsets, s.csrTargets, s.targets = parts[0], parts[1], parts[1]
	bufs, err := e.buffers(8*s.n, 4*s.n, 4*s.n, persistEntryBytes*int64(s.cap), bfspStateBytes)
	if err != nil {
		return nil, err
	}
	s.label, s.depth, s.parent, s.queue, s.state = bufs[0], bufs[1], bufs[2], bufs[3], bufs[4]
	if s.width > 0 {
		ell, err := e.buffers(4 * s.n * int64(s.width))
		if err != nil {
			return nil, err
		}
		s.targets = ell[0]
	}
	if s.host, err = NewCounters(e.b, bfspStateBytes); err != nil {
		return nil, err
	}
	e.done.Add(s.host.Free)
	return s, nil
}

// search runs the search from e's source at span with a queue of cap
// entries (at most s.cap), stops the timer and reads what it ran.
func (s *bfspSearch) search(e *enactor, span, cap uint32) (bfspRan, error) {
	for _, c := range []struct {
		buf  *gpu.DeviceBuffer
		fill byte
	}{{s.label, 0xff}, {s.state, 0}} {
		if err := c.buf.Memset8(e.s, c.fill); err != nil {
			return bfspRan{}, err
		}
	}
	if err := gpu.Launch(s.ks[0].Fn, gpu.Dim(1), gpu.Dim(1), 0, e.s, s.offsets, s.label, s.queue, s.state, e.in.Source, s.width); err != nil {
		return bfspRan{}, err
	}
	if err := gpu.LaunchCooperative(s.ks[1].Fn, gpu.Dim(s.grid), gpu.Dim(s.threads), 0, e.s, s.offsets, s.targets, s.label,
		s.queue, s.state, e.b.persistLimit(), e.b.tune.persistKeep, e.b.persistPrefetch(), s.width, span, cap); err != nil {
		return bfspRan{}, err
	}
	if err := s.ks[3].LaunchFor(e.s, s.n, BlockSize, s.label, s.depth, s.parent, s.state, uint64(s.n)); err != nil {
		return bfspRan{}, err
	}
	if err := e.stop(); err != nil {
		return bfspRan{}, err
	}
	raw, err := s.host.read(e.s, s.state)
	if err != nil {
		return bfspRan{}, err
	}
	ran := parseBFSPState(raw, s.grid)
	ran.width, ran.span = s.width, span
	return ran, nil
}
