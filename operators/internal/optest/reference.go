package optest

import (
	"container/heap"
	"math"

	"github.com/gpipe/gpipe/convert"
)

// Simple sequential references that every implementation is compared with.

// WeightAt is edge e's weight (1 without weights).
func WeightAt(c *convert.CSR, e int64) float64 {
	if c.Weights == nil {
		return 1
	}
	return c.Weights[e]
}

// RefBFS is queue BFS along out-edges: depth per vertex, -1 unreachable.
func RefBFS(g *convert.Graph, src uint32) []int32 {
	n := g.NumVertices()
	depth := make([]int32, n)
	for i := range depth {
		depth[i] = -1
	}
	depth[src] = 0
	queue := []uint32{src}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, v := range g.Out.Neighbors(u) {
			if depth[v] < 0 {
				depth[v] = depth[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return depth
}

type heapItem struct {
	v   uint32
	key float64
}

// minHeap orders by key ascending; maxHeap by key descending.
type minHeap []heapItem

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(heapItem)) }
func (h *minHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

type maxHeap struct{ minHeap }

func (h maxHeap) Less(i, j int) bool { return h.minHeap[i].key > h.minHeap[j].key }

// RefDijkstra is Dijkstra with a binary heap: +Inf where unreachable.
func RefDijkstra(g *convert.Graph, src uint32) []float64 {
	n := g.NumVertices()
	dist := make([]float64, n)
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	dist[src] = 0
	h := &minHeap{{src, 0}}
	for h.Len() > 0 {
		it := heap.Pop(h).(heapItem)
		if it.key > dist[it.v] {
			continue
		}
		for e := g.Out.Offsets[it.v]; e < g.Out.Offsets[it.v+1]; e++ {
			v := g.Out.Targets[e]
			if nd := it.key + WeightAt(&g.Out, e); nd < dist[v] {
				dist[v] = nd
				heap.Push(h, heapItem{v, nd})
			}
		}
	}
	return dist
}

// RefWidest is the widest-path Dijkstra with a max-heap: +Inf at the source,
// -Inf where unreachable.
func RefWidest(g *convert.Graph, src uint32) []float64 {
	n := g.NumVertices()
	width := make([]float64, n)
	for i := range width {
		width[i] = math.Inf(-1)
	}
	width[src] = math.Inf(1)
	h := &maxHeap{minHeap{{src, math.Inf(1)}}}
	done := make([]bool, n)
	for h.Len() > 0 {
		it := heap.Pop(h).(heapItem)
		if done[it.v] {
			continue
		}
		done[it.v] = true
		for e := g.Out.Offsets[it.v]; e < g.Out.Offsets[it.v+1]; e++ {
			v := g.Out.Targets[e]
			if nw := math.Min(it.key, WeightAt(&g.Out, e)); nw > width[v] {
				width[v] = nw
				heap.Push(h, heapItem{v, nw})
			}
		}
	}
	return width
}

// RefPageRank is networkx's power iteration in float64, pushed along
// out-edges, run to a much tighter tolerance than the operator's.
func RefPageRank(g *convert.Graph, d float64) []float64 {
	out := make([]float64, g.NumVertices())
	for u := range out {
		out[u] = float64(g.Out.Degree(uint32(u)))
	}
	return refPowerIteration(g, d, out, func(int64) float64 { return 1 })
}

// RefWeightedPageRank is networkx.pagerank(G) with weight="weight": the
// power iteration in float64, pushed along out-edges, each edge carrying
// x[u]·w/W(u) (W(u) the sum of u's out-weights, a vertex of W(u) = 0
// dangling), run to a much tighter tolerance than the operator's. On a
// graph without weights every weight is 1.
func RefWeightedPageRank(g *convert.Graph, d float64) []float64 {
	out := make([]float64, g.NumVertices())
	for u := range out {
		for e := g.Out.Offsets[u]; e < g.Out.Offsets[u+1]; e++ {
			out[u] += WeightAt(&g.Out, e)
		}
	}
	return refPowerIteration(g, d, out, func(e int64) float64 { return WeightAt(&g.Out, e) })
}

// refPowerIteration is the two references' iteration: u passes d·x[u]
// along its out-edge e in the share along(e) / out[u], and a vertex whose
// out[u] is 0 (dangling) spreads its rank over every vertex.
func refPowerIteration(g *convert.Graph, d float64, out []float64, along func(e int64) float64) []float64 {
	n := g.NumVertices()
	if n == 0 {
		return nil
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / float64(n)
	}
	next := make([]float64, n)
	for it := 0; it < 10000; it++ {
		var dangling float64
		for u := range x {
			if out[u] == 0 {
				dangling += x[u]
			}
		}
		clear(next)
		for u := 0; u < n; u++ {
			if out[u] == 0 {
				continue
			}
			for e := g.Out.Offsets[u]; e < g.Out.Offsets[u+1]; e++ {
				next[g.Out.Targets[e]] += d * x[u] * along(e) / out[u]
			}
		}
		var change float64
		for v := range next {
			next[v] += d*dangling/float64(n) + (1-d)/float64(n)
			change += math.Abs(next[v] - x[v])
		}
		x, next = next, x
		if change < 1e-14 {
			break
		}
	}
	return x
}

// RefCC is union-find over every edge; each vertex gets its set's smallest id.
func RefCC(g *convert.Graph) []uint32 {
	n := g.NumVertices()
	parent := make([]uint32, n)
	for i := range parent {
		parent[i] = uint32(i)
	}
	var find func(x uint32) uint32
	find = func(x uint32) uint32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for u := 0; u < n; u++ {
		for _, v := range g.Out.Neighbors(uint32(u)) {
			a, b := find(uint32(u)), find(v)
			if a != b {
				parent[max(a, b)] = min(a, b) // the root stays the smallest id
			}
		}
	}
	comp := make([]uint32, n)
	for v := range comp {
		comp[v] = find(uint32(v))
	}
	return comp
}

// NaNUnreached is dist with +Inf replaced by NaN, as results carry it.
func NaNUnreached(dist []float64) []float64 {
	out := make([]float64, len(dist))
	for i, d := range dist {
		out[i] = d
		if math.IsInf(d, 1) {
			out[i] = math.NaN()
		}
	}
	return out
}
