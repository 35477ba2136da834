package gpuop

import (
	"encoding/binary"
	"fmt"
	"structs"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/kernels"
)

// BFS after BFS-4K (§5-6; kernels/bfs_4k.cu): top-down over a frontier
// queue. While the frontier is small one block runs level after level on
// its own (§5.5); otherwise each level is one multi-block launch whose
// technique the host picks from the frontier's size: edge-discover (§5.4)
// for a frontier smaller than half the resident threads, else virtual warps
// of K lanes with K from the frontier size (§5.2). Vertices of very high
// degree go to a hub kernel after each level (in place of §5.3's dynamic
// parallelism; docs/gpu.md).

// FrontierStats in kernels/bfs_4k.cu, padded to 32 bytes.
const (
	b4kStatsBytes    = 32
	b4kNextCountAt   = 0
	b4kHubSegmentsAt = 4
	b4kNextEdgesAt   = 8
	b4kLevelAt       = 16
)

type b4kStats struct {
	nextCount uint32
	nextEdges uint64
	level     int32
}

func parseB4KStats(b []byte) b4kStats {
	return b4kStats{
		nextCount: binary.LittleEndian.Uint32(b[b4kNextCountAt:]),
		nextEdges: binary.LittleEndian.Uint64(b[b4kNextEdgesAt:]),
		level:     int32(binary.LittleEndian.Uint32(b[b4kLevelAt:])),
	}
}

// The single-block kernel's geometry and limits (SINGLE_* in
// kernels/bfs_4k.cu): it takes a frontier of at most b4kKernels.capacity
// vertices and b4kSingleEdges edges. Its shared memory holds two frontiers
// of 16 bytes a vertex and the list of wide vertices; the capacity is what
// the GPU's shared memory allows, up to b4kSingleCapacity.
const (
	b4kSingleThreads  = 1024
	b4kSingleCapacity = 6144
	b4kSingleEdges    = 32768
	b4kSingleNarrow   = 16
	b4kSingleWide     = b4kSingleEdges / b4kSingleNarrow * 4 // bytes
)

// b4kSingleShared is the single-block kernel's dynamic shared memory for a
// capacity.
func b4kSingleShared(capacity int) int { return 2*capacity*(8+4+4) + b4kSingleWide }

// b4kMaxVertices is the most vertices bfs4k takes: its frontier counters
// are 32-bit, and a frontier may hold twice the vertices.
const b4kMaxVertices = 1<<31 - 1

// b4kHubDegree is the degree above which a frontier vertex's edges go to
// the hub kernel in segments of b4kHubSegment edges (HUB_SEGMENT), rather
// than to one virtual warp or a few lanes of edge-discover. BFS-4K's K_2
// picks the highest-degree 0.15% of the vertices; a fixed degree does the
// same job without a per-level selection, as vwc's deferred outliers do.
const (
	b4kHubDegree  = 1024
	b4kHubSegment = 4096
)

// b4kCapacity is the room of each frontier queue: every vertex once, plus
// as many duplicates (the filter of §6 misses some across blocks). A level
// that overflows is rebuilt from the status array.
// Counts are 32-bit on the device.
func b4kCapacity(n int64) int64 { return min(2*n+1, 1<<32-1) }

// b4kSegmentBytes is the room of the hub segment queue: at most one
// segment per b4kHubDegree edges and one per b4kHubSegment edges.
func b4kSegmentBytes(g *convert.Graph) int64 {
	m := g.NumEdges()
	return (m/b4kHubDegree + m/b4kHubSegment + 1) * 8
}

type b4kKernels struct {
	init, ed, hubs, single, rebuild *Kernel
	vw                              map[int]*Kernel // by K: 4, 8, 16, 32
	// capacity is the single-block kernel's frontier room on this GPU.
	capacity int
}

func (b *GPU) b4kKernels() (*b4kKernels, error) {
	k := &b4kKernels{vw: map[int]*Kernel{}}
	slots := map[string]**Kernel{
		"b4k_init": &k.init, "b4k_ed": &k.ed, "b4k_hubs": &k.hubs, "b4k_single": &k.single, "b4k_rebuild": &k.rebuild,
	}
	widths := []int{4, 8, 16, 32}
	vw := make([]*Kernel, len(widths))
	for i, K := range widths {
		slots[fmt.Sprintf("b4k_vw_k%d", K)] = &vw[i]
	}
	if err := b.KernelsOf(kernels.BFS4K, slots); err != nil {
		return nil, err
	}
	for i, K := range widths {
		k.vw[K] = vw[i]
	}
	// As many vertices as the block's shared memory holds beside the
	// kernel's own, in whole warps.
	room := b.Device().Attributes.SharedMemPerBlockOptin - k.single.Fn.Attributes().SharedSizeBytes - b4kSingleWide
	k.capacity = min(b4kSingleCapacity, room/(2*16)/32*32)
	if k.capacity < 32 {
		return nil, fmt.Errorf("operators: the GPU's %d bytes of shared memory a block leave no room for bfs4k's single-block kernel",
			b.Device().Attributes.SharedMemPerBlockOptin)
	}
	if k.single.Fn.Attributes().MaxDynamicShared < b4kSingleShared(k.capacity) {
		if err := k.single.Fn.SetMaxDynamicSharedMemory(b4kSingleShared(k.capacity)); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// b4kWarpWidth is §5.2's dynamic virtual warp width for a frontier of
// count vertices: the largest power of two K with K·count at most the
// resident threads, in [4, 32] (K_1 = 4, as the paper sets it).
func b4kWarpWidth(resident, count int64) int {
	k := 4
	for k < 32 && int64(2*k)*count <= resident {
		k *= 2
	}
	return k
}

// b4kHubs is the hub deferral a search uses: the degree above which a
// vertex's edges go to the hub kernel, and the room of its segment queue.
type b4kHubs struct {
	degree, cap int64
}

// b4kRan counts what a search ran, for Result.Strategy.
type b4kRan struct {
	singleLaunches, singleLevels, edgeLevels, warpLevels, rebuilt int
}

func (r b4kRan) String() string {
	s := fmt.Sprintf("bfs4k (%d levels in %d single-block launches, %d edge-discover and %d virtual-warp levels",
		r.singleLevels, r.singleLaunches, r.edgeLevels, r.warpLevels)
	if r.rebuilt > 0 {
		s += fmt.Sprintf(", %d frontiers rebuilt", r.rebuilt)
	}
	return s + ")"
}

// b4kSearch is a BFS-4K search's device side: its layouts, frontiers,
// status arrays, hub segments and the level's statistics, read through
// host counters.
type b4kSearch struct {
	e                                        *enactor
	k                                        *b4kKernels
	s                                        *gpu.Stream
	off, tgt, depth, parent, segments, stats *gpu.DeviceBuffer
	frontier                                 [2]*gpu.DeviceBuffer
	// queueCap is the frontier room the kernels are told of, hubs the
	// hub deferral, resident the threads the GPU runs at once.
	queueCap, resident int64
	hubs               b4kHubs
	host               *Counters
	ran                b4kRan
}

// runBFS4K runs BFS-4K: a level in one block while the frontier is small,
// else edge-discover or virtual warps by the frontier's size.
func runBFS4K(e *enactor) error {
	if n := int64(e.g.NumVertices()); n > b4kMaxVertices {
		return usererr.New(usererr.Backend, fmt.Sprintf("bfs4k takes graphs of up to %d vertices; this one has %d", b4kMaxVertices, n),
			"use --strategy enterprise (or auto)")
	}
	bs, err := newB4KSearch(e)
	if err != nil {
		return err
	}
	if err := e.start(); err != nil {
		return err
	}
	levels, err := bs.search(e.in.Source)
	if err != nil {
		return err
	}
	if err := e.stop(); err != nil {
		return err
	}
	return bfsResult(e, bs.depth, bs.parent, bs.ran.String(), levels)
}

// newB4KSearch takes the search's layouts, buffers and counters from e.
func newB4KSearch(e *enactor) (*b4kSearch, error) {
	g, n := e.g, int64(e.g.NumVertices())
	k, err := e.b.b4kKernels()
	if err != nil {
		return nil, err
	}
	parts, err := e.layouts(OutOffsets, OutTargets)
	if err != nil {
		return nil, err
	}
	capacity := b4kCapacity(n)
	bufs, err := e.buffers(4*n, 4*n, 4*capacity, 4*capacity, b4kSegmentBytes(g), b4kStatsBytes)
	if err != nil {
		return nil, err
	}
	host, err := NewCounters(e.b, b4kStatsBytes)
	if err != nil {
		return nil, err
	}
	e.done.Add(host.Free)
	attrs := e.b.Device().Attributes
	bs := &b4kSearch{e: e, k: k, s: e.s, off: parts[0], tgt: parts[1], depth: bufs[0], parent: bufs[1],
		frontier: [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}, segments: bufs[4], stats: bufs[5], host: host,
		queueCap: capacity, hubs: b4kHubs{degree: b4kHubDegree, cap: b4kSegmentBytes(g) / 8},
		resident: int64(attrs.SMs) * int64(attrs.MaxThreadsPerSM)}
	if c := e.b.tune.b4kCapacity; c > 0 {
		bs.queueCap, bs.hubs = c, b4kHubs{degree: 16, cap: 3}
	}
	return bs, nil
}

// read waits for the level and returns what it left in stats.
func (bs *b4kSearch) read() (b4kStats, error) {
	raw, err := bs.host.read(bs.s, bs.stats)
	if err != nil {
		return b4kStats{}, err
	}
	return parseB4KStats(raw), nil
}

// search runs the levels from source and returns how many there were.
func (bs *b4kSearch) search(source uint32) (int, error) {
	k, s := bs.k, bs.s
	if err := startSearch(s, bs.depth, bs.parent, k.init, bs.depth, bs.parent, source, bs.frontier[0]); err != nil {
		return 0, err
	}
	cur, count, edges, level := 0, int64(1), uint64(bs.e.g.Out.Degree(source)), int32(0)
	trace := NewLevelTrace("bfs4k")
	for count > 0 {
		if err := bs.e.ctx.Err(); err != nil {
			return 0, err
		}
		next := cur ^ 1
		if err := bs.stats.Memset8(s, 0); err != nil {
			return 0, err
		}
		single := count <= int64(k.capacity) && edges <= b4kSingleEdges
		var err error
		if single {
			a := bs.levelArgs(cur, count, level)
			a.capacity = uint32(k.capacity)
			err = gpu.Launch(k.single.Fn, gpu.Dim(1), gpu.Dim(b4kSingleThreads), uint32(b4kSingleShared(k.capacity)), s, gpu.Args(&a))
		} else {
			err = bs.multiBlock(cur, count, level)
		}
		if err != nil {
			return 0, err
		}
		st, err := bs.read()
		if err != nil {
			return 0, err
		}
		trace.Level("level %d, frontier %d (%d edges), single-block %v: next %d (%d edges), level %d", level, count, edges, single, st.nextCount, st.nextEdges, st.level)
		level = bs.advance(single, level, st)
		if int64(st.nextCount) > bs.queueCap {
			bs.ran.rebuilt++
			if st, err = bs.rebuild(next, level); err != nil {
				return 0, err
			}
		}
		cur, count, edges = next, int64(st.nextCount), st.nextEdges
	}
	// level is now one past the deepest level reached: the number of levels.
	return int(level), nil
}

// advance is the level after one that ran, single-block (which ran levels
// up to st.level) or not, counted in ran.
func (bs *b4kSearch) advance(single bool, level int32, st b4kStats) int32 {
	if !single {
		return level + 1
	}
	bs.ran.singleLaunches++
	bs.ran.singleLevels += int(st.level - level)
	return st.level
}

// multiBlock queues one multi-block level from frontier cur of count
// vertices: edge-discover or virtual warps, then the hub segments the
// level deferred.
func (bs *b4kSearch) multiBlock(cur int, count int64, level int32) error {
	k, s := bs.k, bs.s
	expand, perBlock := k.ed, int64(BlockSize) // a warp per 32 vertices
	if count >= bs.resident/2 {
		K := b4kWarpWidth(bs.resident, count)
		expand, perBlock = k.vw[K], int64(BlockSize/K) // a virtual warp per vertex
		bs.ran.warpLevels++
	} else {
		bs.ran.edgeLevels++
	}
	next := bs.frontier[cur^1]
	a := bs.levelArgs(cur, count, level)
	a.hubDegree, a.segments, a.segmentCap = bs.hubs.degree, bs.segments.Ptr(), uint32(bs.hubs.cap)
	if err := expand.LaunchFor(s, count, perBlock, gpu.Args(&a)); err != nil {
		return err
	}
	return k.hubs.Launch(s, bs.off, bs.tgt, bs.depth, bs.parent, level, bs.segments, next, uint32(bs.queueCap), bs.stats, uint32(bs.hubs.cap))
}

// b4kLevelArgs mirrors kernels/bfs_4k.cu's B4KLevelArgs, field by field:
// a level's arguments (b4k_vw_k*, b4k_ed, b4k_single).
type b4kLevelArgs struct {
	_                         structs.HostLayout
	offsets, targets, depth   gpu.DevicePtr
	parent, frontier, next    gpu.DevicePtr
	stats, segments           gpu.DevicePtr
	hubDegree                 int64
	count                     uint32
	level                     int32
	cap, segmentCap, capacity uint32
}

// levelArgs are the arguments of a level from frontier cur of count
// vertices into the other.
func (bs *b4kSearch) levelArgs(cur int, count int64, level int32) b4kLevelArgs {
	return b4kLevelArgs{
		offsets: bs.off.Ptr(), targets: bs.tgt.Ptr(), depth: bs.depth.Ptr(), parent: bs.parent.Ptr(),
		frontier: bs.frontier[cur].Ptr(), next: bs.frontier[cur^1].Ptr(), stats: bs.stats.Ptr(),
		count: uint32(count), level: level, cap: uint32(bs.queueCap),
	}
}

// rebuild replaces the overflowed frontier next by the vertices at level
// in the status array.
func (bs *b4kSearch) rebuild(next int, level int32) (b4kStats, error) {
	if err := bs.stats.Memset8(bs.s, 0); err != nil {
		return b4kStats{}, err
	}
	n := int64(bs.e.g.NumVertices())
	if err := bs.k.rebuild.LaunchFor(bs.s, n, BlockSize, bs.off, bs.depth, n, level, bs.frontier[next], bs.stats); err != nil {
		return b4kStats{}, err
	}
	return bs.read()
}
