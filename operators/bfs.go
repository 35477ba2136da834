package operators

import (
	"context"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/par"
)

// BFS is breadth-first search from a source vertex along out-edges:
// each vertex's depth (number of edges on a shortest path) and its parent in
// a BFS tree.
type BFS struct{}

// Spec describes bfs.
func (BFS) Spec() Spec {
	return Spec{
		Name:        "bfs",
		GPU:         true,
		Summary:     "breadth-first search: hop distance and BFS-tree parent of every vertex reachable from the source",
		NeedsSource: true,
		Params:      []string{ParamSource},
		// The bottom-up steps read in-edges.
		NeedsIn: true,
		Columns: []ColumnSpec{
			{Name: "depth", Type: Int32Column, Doc: "edges on a shortest path from the source (0 for the source); null when unreachable"},
			{Name: "parent", Type: VertexColumn, Doc: "the vertex before this one on a shortest path (the source for itself); null when unreachable"},
		},
	}
}

// Prepare has nothing to fill in: bfs takes only the source.
func (BFS) Prepare(*Params) error { return nil }

// Direction-optimizing switch thresholds of Beamer et al., as GAP sets them:
// go bottom-up when the frontier's out-edges exceed the unexplored edges / α,
// come back top-down when the frontier shrinks below n / β.
const (
	bfsAlpha = 15
	bfsBeta  = 18
)

// RunCPU runs direction-optimizing BFS (Beamer, Asanović, Patterson; the
// GAP Benchmark Suite's bfs.cc) on all cores.
func (BFS) RunCPU(ctx context.Context, in Input) (*Result, error) {
	if err := CheckSource("bfs", in); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := in.Graph
	rev := g.In() // built before the clock starts: it is part of the graph
	start := time.Now()
	depth, parent, levels, err := bfsDO(ctx, &g.Out, rev, in.Source)
	if err != nil {
		return nil, err
	}
	return &Result{
		Op: "bfs", Backend: "cpu", Strategy: "direction-optimizing",
		Iterations: levels,
		Compute:    time.Since(start),
		Columns: []Column{
			{Name: "depth", Type: Int32Column, Int32: depth},
			{Name: "parent", Type: VertexColumn, Vertex: parent},
		},
	}, nil
}

// bfsDO is direction-optimizing BFS from src: out is the graph, in its
// transpose. levels counts the steps, one per depth level.
func bfsDO(ctx context.Context, out, in *convert.CSR, src uint32) (depth []int32, parent []uint32, levels int, err error) {
	n := out.NumVertices()
	parent = make([]uint32, n)
	depth = make([]int32, n)
	fillU32(parent, convert.NoVertex)
	fillI32(depth, -1)
	parent[src] = src
	depth[src] = 0

	bufA, bufB := getScratch[uint32](&scratchU32, n), getScratch[uint32](&scratchU32, n)
	defer putScratch(&scratchU32, bufA)
	defer putScratch(&scratchU32, bufB)
	queue := bufA[:1]
	queue[0] = src
	next := &sharedQueue{buf: bufB}
	ws := newBFSWorkers()
	var front, curr bitmap

	edgesToCheck := out.NumEdges()
	scout := out.Degree(src)
	level := int32(0) // depth of the vertices in the frontier
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, 0, err
		}
		if scout > edgesToCheck/bfsAlpha {
			if front == nil {
				words := (n + 63) / 64
				front, curr = getScratch[uint64](&scratchU64, words), getScratch[uint64](&scratchU64, words)
				defer putScratch(&scratchU64, []uint64(front))
				defer putScratch(&scratchU64, []uint64(curr))
			}
			queueToBitmap(queue, front)
			awake := int64(len(queue))
			for {
				old := awake
				awake = bfsBottomUp(ctx, ws, in, bfsTree{parent, depth}, level, front, curr)
				level++
				levels++
				front, curr = curr, front
				if awake < old && awake <= int64(n)/bfsBeta {
					break
				}
				if err := ctx.Err(); err != nil {
					return nil, nil, 0, err
				}
			}
			queue = bitmapToQueue(ws, front, next, queue[:0])
			scout = 1
		} else {
			edgesToCheck -= scout
			scout = bfsTopDown(ctx, ws, out, parent, depth, level, queue, next)
			level++
			levels++
			queue, next.buf = next.buf[:next.tail.Load()], queue[:cap(queue)]
			next.tail.Store(0)
		}
	}
	// A step cut short by cancellation may have left the frontier empty.
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	return depth, parent, levels, nil
}

// bfsLocal is the initial capacity of a worker's local buffer, where the
// vertices it finds wait before they go to the shared queue.
const bfsLocal = 4096

// bfsWorkers is the workers' state during one search, kept across its
// levels: a high-diameter graph has thousands of small levels, and a level
// that allocated its buffers paid for it in allocation and garbage
// collection more than in work.
type bfsWorkers struct {
	locals [][]uint32 // per worker: vertices found in the current chunk
	counts []int64    // per worker, 8 apart against false sharing
}

func newBFSWorkers() *bfsWorkers {
	workers := par.Workers()
	return &bfsWorkers{locals: make([][]uint32, workers), counts: make([]int64, workers*8)}
}

// local is worker w's buffer, emptied.
func (ws *bfsWorkers) local(w int) []uint32 {
	if ws.locals[w] == nil {
		ws.locals[w] = make([]uint32, 0, bfsLocal)
	}
	return ws.locals[w][:0]
}

// total sums the workers' counts and zeroes them.
func (ws *bfsWorkers) total() int64 {
	var t int64
	for w := 0; w < len(ws.counts); w += 8 {
		t += ws.counts[w]
		ws.counts[w] = 0
	}
	return t
}

// sharedQueue is a vertex queue that workers fill from local buffers, each
// flush reserving its place with one atomic add.
type sharedQueue struct {
	buf  []uint32
	tail atomic.Int64
}

// flush appends local to the queue and returns it emptied.
func (q *sharedQueue) flush(local []uint32) []uint32 {
	if len(local) == 0 {
		return local
	}
	end := q.tail.Add(int64(len(local)))
	copy(q.buf[end-int64(len(local)):end], local)
	return local[:0]
}

// bfsTopDown visits the out-edges of the frontier queue (at depth level),
// claims each unvisited target with a compare-and-swap on its parent and
// queues it in next. It returns the out-degree sum of the vertices it
// claimed (GAP's scout count). Once ctx is canceled it stops, part done.
func bfsTopDown(ctx context.Context, ws *bfsWorkers, out *convert.CSR, parent []uint32, depth []int32, level int32, queue []uint32, next *sharedQueue) int64 {
	par.ForWorker(len(queue), 64, func(w, lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		local, scout := topDownRange(out.Offsets, out.Targets, parent, depth, level+1, queue[lo:hi], ws.local(w))
		ws.locals[w] = next.flush(local)
		ws.counts[w*8] += scout
	})
	return ws.total()
}

// topDownRange claims the unvisited out-neighbours of the vertices in queue
// for depth d, appending them to local; it returns local and their
// out-degree sum.
func topDownRange(offs []int64, targets, parent []uint32, depth []int32, d int32, queue, local []uint32) ([]uint32, int64) {
	var scout int64
	for _, u := range queue {
		for _, v := range targets[offs[u]:offs[u+1]] {
			if atomic.LoadUint32(&parent[v]) == convert.NoVertex &&
				atomic.CompareAndSwapUint32(&parent[v], convert.NoVertex, u) {
				depth[v] = d
				local = append(local, v)
				scout += offs[v+1] - offs[v]
			}
		}
	}
	return local, scout
}

// bfsBottomUp gives every unvisited vertex whose in-neighbour is in front
// (the vertices at depth level) that neighbour as parent, and marks it in
// next. It returns the number of vertices it visited. Each worker owns whole
// words of next, so the bitmap needs no atomics. Once ctx is canceled it
// stops, part done.
func bfsBottomUp(ctx context.Context, ws *bfsWorkers, in *convert.CSR, t bfsTree, level int32, front, next bitmap) int64 {
	next.clear()
	par.ForWorker(in.NumVertices(), 1024, func(w, lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		ws.counts[w*8] += bottomUpRange(in, t, level+1, front, next, lo, hi)
	})
	return ws.total()
}

// bfsTree is a search's output: each vertex's parent and depth.
type bfsTree struct {
	parent []uint32
	depth  []int32
}

// bottomUpRange runs the bottom-up step over the vertices [lo, hi) of the
// in-edges in, giving those it visits depth d; lo must be a multiple of 64
// so that the words of next it writes are its own.
func bottomUpRange(in *convert.CSR, t bfsTree, d int32, front, next bitmap, lo, hi int) int64 {
	offs, sources, parent, depth := in.Offsets, in.Targets, t.parent, t.depth
	var count int64
	for u := lo; u < hi; u++ {
		if parent[u] != convert.NoVertex {
			continue
		}
		for _, v := range sources[offs[u]:offs[u+1]] {
			if front[v>>6]&(1<<(v&63)) != 0 {
				parent[u] = v
				depth[u] = d
				next[u>>6] |= 1 << (uint(u) & 63)
				count++
				break
			}
		}
	}
	return count
}

// queueToBitmap sets the bits of the queue's vertices in b (cleared first).
func queueToBitmap(queue []uint32, b bitmap) {
	b.clear()
	par.For(len(queue), 4096, func(lo, hi int) {
		for _, v := range queue[lo:hi] {
			b.setAtomic(v)
		}
	})
}

// bitmapToQueue lists the vertices of b into queue (reusing its storage),
// using next's buffer as scratch.
func bitmapToQueue(ws *bfsWorkers, b bitmap, next *sharedQueue, queue []uint32) []uint32 {
	next.tail.Store(0)
	par.ForWorker(len(b), 256, func(w, lo, hi int) {
		local := ws.local(w)
		for i := lo; i < hi; i++ {
			word := b[i]
			for word != 0 {
				local = append(local, uint32(i<<6+bits.TrailingZeros64(word)))
				word &= word - 1
			}
		}
		ws.locals[w] = next.flush(local)
	})
	k := next.tail.Load()
	queue = append(queue[:0], next.buf[:k]...)
	next.tail.Store(0)
	return queue
}
