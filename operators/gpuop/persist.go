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

// persistThreads and persistSSSPThreads are the blocks of the persistent
// kernels (__launch_bounds__(PERSIST_THREADS, 1), PERSIST_SSSP_THREADS):
// one block an SM, so that the barrier waits for as few arrivals as there
// are SMs.
const (
	persistThreads     = 1024
	persistSSSPThreads = 512
)

// persistEntryBytes is a frontier entry (QEntry): vertex, degree, first edge.
const persistEntryBytes = 16

// persistSingleLimit is the largest frontier block 0 takes alone: under
// it, one SM's loads and atomics are not what bounds a level, and the
// barrier it saves is; over it, the level's vertices spread over every SM.
const persistSingleLimit = 256

// persistMaxBlocks is the largest persistent grid: the barrier counts
// arrivals in 11 bits and the BFS's kept entries (960 a block) in 20
// (kernels/persist.cu's PERSIST_MAX_BLOCKS).
const persistMaxBlocks = 1024

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

// persistBlock is the block a persistent kernel of threads threads runs
// with: tuning's persistThreads when set.
func (b *GPU) persistBlock(threads int) int {
	if b.tune.persistThreads > 0 {
		return min(b.tune.persistThreads, threads)
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
// and its ELL copy where it has one, depths and parents, the queue (each
// vertex once), the state and the result's columns.
func persistBFSBytes(b *GPU, g *convert.Graph, _ operators.Params) int64 {
	n := int64(g.NumVertices())
	return layoutBytes(g, OutOffsets, OutTargets) + 4*n*int64(b.persistELLWidth(g)) + 8*n + persistEntryBytes*max(n, 1) +
		bfspStateBytes + bfsColumnsBytes(g)
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
	levels, singleRuns, singleLevels, multiLevel uint32
	localLevels                                  uint32
	width                                        uint32 // of the ELL copy (0: the CSR)
}

func parseBFSPState(b []byte, blocks uint32) bfspRan {
	u := func(at int) uint32 { return binary.LittleEndian.Uint32(b[at:]) }
	return bfspRan{blocks: blocks, levels: u(bfspLevelsAt), singleRuns: u(bfspSingleRunsAt),
		singleLevels: u(bfspSingleLevelsAt), multiLevel: u(bfspMultiLevelsAt),
		localLevels: u(bfspLocalLevelsAt)}
}

func (r bfspRan) String() string {
	adjacency := "CSR"
	if r.width > 0 {
		adjacency = fmt.Sprintf("ELL width %d", r.width)
	}
	return fmt.Sprintf("persist (%d blocks, %s: %d single-block levels in %d runs, %d multi-block levels, %d of them from shared memory only)",
		r.blocks, adjacency, r.singleLevels, r.singleRuns, r.multiLevel, r.localLevels)
}

// persistPrefetch is bfsp_search's prefetch argument: 1 unless tuning
// turns it off.
func (b *GPU) persistPrefetch() uint32 {
	if b.tune.noPersistPrefetch {
		return 0
	}
	return 1
}

// runBFSPersist runs the persistent BFS: bfsp_init marks the source and
// queues it, then bfsp_search runs every level in one cooperative launch.
func runBFSPersist(e *enactor) error {
	if err := checkPersistSize("bfs", e.g); err != nil {
		return err
	}
	n, width := int64(e.g.NumVertices()), e.b.persistELLWidth(e.g)
	ks, err := e.kernels(kernels.Persist, "bfsp_init", "bfsp_search", "bfsp_ell")
	if err != nil {
		return err
	}
	threads := e.b.persistBlock(persistThreads)
	grid, err := e.b.persistGrid(ks[1].Fn, threads)
	if err != nil {
		return err
	}
	parts, err := e.layouts(OutOffsets, OutTargets)
	if err != nil {
		return err
	}
	bufs, err := e.buffers(4*n, 4*n, persistEntryBytes*n, bfspStateBytes)
	if err != nil {
		return err
	}
	targets := parts[1]
	if width > 0 {
		ell, err := e.buffers(4 * n * int64(width))
		if err != nil {
			return err
		}
		targets = ell[0]
	}
	host, err := NewCounters(e.b, bfspStateBytes)
	if err != nil {
		return err
	}
	e.done.Add(host.Free)
	depth, parent, queue, st := bufs[0], bufs[1], bufs[2], bufs[3]
	if err := e.start(); err != nil {
		return err
	}
	if width > 0 {
		if err := ks[2].Launch(e.s, parts[0], parts[1], targets, uint64(n), uint32(width)); err != nil {
			return err
		}
	}
	if err := st.Memset8(e.s, 0); err != nil {
		return err
	}
	if err := startSearch(e.s, depth, parent, ks[0], parts[0], depth, parent, queue, st, e.in.Source, uint32(width)); err != nil {
		return err
	}
	if err := gpu.LaunchCooperative(ks[1].Fn, gpu.Dim(grid), gpu.Dim(uint32(threads)), 0, e.s,
		parts[0], targets, depth, parent, queue, st, e.b.persistLimit(), e.b.tune.persistKeep, e.b.persistPrefetch(), uint32(width)); err != nil {
		return err
	}
	if err := e.stop(); err != nil {
		return err
	}
	raw, err := host.read(e.s, st)
	if err != nil {
		return err
	}
	ran := parseBFSPState(raw, grid)
	ran.width = uint32(width)
	return bfsResult(e, depth, parent, ran.String(), int(ran.levels))
}
