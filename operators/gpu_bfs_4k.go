package operators

import (
	"context"
	"encoding/binary"
	"fmt"

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
	init, ed, hubs, single, rebuild *launchable
	vw                              map[int]*launchable // by K: 4, 8, 16, 32
	// capacity is the single-block kernel's frontier room on this GPU.
	capacity int
}

func (b *GPU) b4kKernels() (*b4kKernels, error) {
	k := &b4kKernels{vw: map[int]*launchable{}}
	slots := map[string]**launchable{
		"b4k_init": &k.init, "b4k_ed": &k.ed, "b4k_hubs": &k.hubs, "b4k_single": &k.single, "b4k_rebuild": &k.rebuild,
	}
	widths := []int{4, 8, 16, 32}
	vw := make([]*launchable, len(widths))
	for i, K := range widths {
		slots[fmt.Sprintf("b4k_vw_k%d", K)] = &vw[i]
	}
	if err := b.kernelsOf(kernels.BFS4K, slots); err != nil {
		return nil, err
	}
	for i, K := range widths {
		k.vw[K] = vw[i]
	}
	// As many vertices as the block's shared memory holds beside the
	// kernel's own, in whole warps.
	room := b.Device().Attributes.SharedMemPerBlockOptin - k.single.fn.Attributes().SharedSizeBytes - b4kSingleWide
	k.capacity = min(b4kSingleCapacity, room/(2*16)/32*32)
	if k.capacity < 32 {
		return nil, fmt.Errorf("operators: the GPU's %d bytes of shared memory a block leave no room for bfs4k's single-block kernel",
			b.Device().Attributes.SharedMemPerBlockOptin)
	}
	if k.single.fn.Attributes().MaxDynamicShared < b4kSingleShared(k.capacity) {
		if err := k.single.fn.SetMaxDynamicSharedMemory(b4kSingleShared(k.capacity)); err != nil {
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

// b4kTestCapacity, when positive, is the frontier room the kernels are
// told of (the buffers keep their size), and hubs start at degree 16 with
// room for 3 segments, so that tests reach the overflow paths: a frontier
// rebuilt, hubs deferred in part.
var b4kTestCapacity int64

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

func runBFS4K(ctx context.Context, b *GPU, in Input) (*Result, error) {
	g := in.Graph
	n := int64(g.NumVertices())
	if n > b4kMaxVertices {
		return nil, usererr.New(usererr.Backend, fmt.Sprintf("bfs4k takes graphs of up to %d vertices; this one has %d", b4kMaxVertices, n),
			"use --strategy enterprise (or auto)")
	}
	k, err := b.b4kKernels()
	if err != nil {
		return nil, err
	}
	s, err := b.ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	parts, transfer, err := b.layouts(g, s, outOffsets, outTargets)
	if err != nil {
		return nil, err
	}
	off, tgt := parts[0], parts[1]
	capacity := b4kCapacity(n)
	queueCap := capacity
	hubs := b4kHubs{degree: b4kHubDegree, cap: b4kSegmentBytes(g) / 8}
	if b4kTestCapacity > 0 {
		queueCap = b4kTestCapacity
		hubs = b4kHubs{degree: 16, cap: 3}
	}
	bufs, free, err := b.buffers(4*n, 4*n, 4*capacity, 4*capacity, b4kSegmentBytes(g), b4kStatsBytes)
	if err != nil {
		return nil, err
	}
	defer free()
	depth, parent, segments, stats := bufs[0], bufs[1], bufs[4], bufs[5]
	frontier := [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}
	if err := b.poison(s, bufs...); err != nil {
		return nil, err
	}
	host, err := newCounters(b, b4kStatsBytes)
	if err != nil {
		return nil, err
	}
	defer host.free()
	attrs := b.Device().Attributes
	resident := int64(attrs.SMs) * int64(attrs.MaxThreadsPerSM)
	// read waits for the level and returns what it left in stats.
	read := func() (b4kStats, error) {
		raw, err := host.read(s, stats)
		if err != nil {
			return b4kStats{}, err
		}
		return parseB4KStats(raw), nil
	}

	t, err := newTimer(b.ctx, s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	if err := startSearch(s, depth, parent, k.init, depth, parent, in.Source, frontier[0]); err != nil {
		return nil, err
	}
	cur, count, edges, level := 0, int64(1), uint64(g.Out.Degree(in.Source)), int32(0)
	var ran b4kRan
	trace := newLevelTrace("bfs4k")
	for count > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next := cur ^ 1
		if err := stats.Memset8(s, 0); err != nil {
			return nil, err
		}
		single := count <= int64(k.capacity) && edges <= b4kSingleEdges
		if single {
			err = gpu.Launch(k.single.fn, gpu.Dim(1), gpu.Dim(b4kSingleThreads), uint32(b4kSingleShared(k.capacity)), s,
				off, tgt, depth, parent, frontier[cur], uint32(count), level, frontier[next], uint32(queueCap), stats,
				uint32(k.capacity))
		} else {
			err = b4kLevel(k, s, resident, off, tgt, depth, parent, frontier[cur], count, level,
				frontier[next], queueCap, stats, segments, hubs, &ran)
		}
		if err != nil {
			return nil, err
		}
		st, err := read()
		if err != nil {
			return nil, err
		}
		trace.level("level %d, frontier %d (%d edges), single-block %v: next %d (%d edges), level %d", level, count, edges, single, st.nextCount, st.nextEdges, st.level)
		if single {
			ran.singleLaunches++
			ran.singleLevels += int(st.level - level)
			level = st.level
		} else {
			level++
		}
		if int64(st.nextCount) > queueCap {
			ran.rebuilt++
			if st, err = b4kRebuild(k, s, off, depth, n, level, frontier[next], stats, read); err != nil {
				return nil, err
			}
		}
		cur, count, edges = next, int64(st.nextCount), st.nextEdges
	}
	compute, err := t.elapsed(s)
	if err != nil {
		return nil, err
	}
	// level is now one past the deepest level reached: the number of levels.
	return bfsResult(ctx, b, s, g, depth, parent, ran.String(), int(level), compute, transfer)
}

// b4kLevel queues one multi-block level: edge-discover or virtual warps,
// then the hub segments the level deferred.
func b4kLevel(k *b4kKernels, s *gpu.Stream, resident int64, off, tgt, depth, parent, frontier *gpu.DeviceBuffer,
	count int64, level int32, next *gpu.DeviceBuffer, capacity int64, stats, segments *gpu.DeviceBuffer, hubs b4kHubs, ran *b4kRan) error {
	expand, perBlock := k.ed, int64(blockSize) // a warp per 32 vertices
	if count >= resident/2 {
		K := b4kWarpWidth(resident, count)
		expand, perBlock = k.vw[K], int64(blockSize/K) // a virtual warp per vertex
		ran.warpLevels++
	} else {
		ran.edgeLevels++
	}
	if err := expand.launchFor(s, count, perBlock, off, tgt, depth, parent, frontier, uint32(count), level,
		next, uint32(capacity), stats, hubs.degree, segments, uint32(hubs.cap)); err != nil {
		return err
	}
	return k.hubs.launch(s, off, tgt, depth, parent, level, segments, next, uint32(capacity), stats, uint32(hubs.cap))
}

// b4kRebuild replaces an overflowed frontier by the vertices at level in
// the status array.
func b4kRebuild(k *b4kKernels, s *gpu.Stream, off, depth *gpu.DeviceBuffer, n int64, level int32,
	next, stats *gpu.DeviceBuffer, read func() (b4kStats, error)) (b4kStats, error) {
	if err := stats.Memset8(s, 0); err != nil {
		return b4kStats{}, err
	}
	if err := k.rebuild.launchFor(s, n, blockSize, off, depth, n, level, next, stats); err != nil {
		return b4kStats{}, err
	}
	return read()
}
