package convert

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// undirected is the graph of n vertices with the edges given (u, v,
// weight; a weight of 0 in an unweighted graph), stored both ways, self
// loops dropped and parallel edges merged at their lowest weight, as Build
// would.
func undirected(n int, weighted bool, es [][3]int) *Graph {
	type arc struct{ to, w int }
	rows := make([][]arc, n)
	for _, e := range es {
		if e[0] != e[1] {
			rows[e[0]] = append(rows[e[0]], arc{e[1], e[2]})
			rows[e[1]] = append(rows[e[1]], arc{e[0], e[2]})
		}
	}
	g := &Graph{Weighted: weighted, Out: CSR{Offsets: make([]int64, n+1)}}
	for v, row := range rows {
		slices.SortFunc(row, func(p, q arc) int {
			if p.to != q.to {
				return p.to - q.to
			}
			return p.w - q.w
		})
		row = slices.CompactFunc(row, func(p, q arc) bool { return p.to == q.to })
		for _, a := range row {
			g.Out.Targets = append(g.Out.Targets, uint32(a.to))
			if weighted {
				g.Out.Weights = append(g.Out.Weights, float64(a.w))
			}
		}
		g.Out.Offsets[v+1] = int64(len(g.Out.Targets))
	}
	return g
}

// dijkstra is the distances from the seeds (vertex, distance) over out,
// by hops or by weight; unreached vertices hold MaxUint64.
func dijkstra(out *CSR, weighted bool, seeds ...[2]uint64) []uint64 {
	dist := make([]uint64, out.NumVertices())
	for v := range dist {
		dist[v] = math.MaxUint64
	}
	q := &minQueue{}
	for _, s := range seeds {
		if s[1] < dist[s[0]] {
			dist[s[0]] = s[1]
			heap.Push(q, [2]uint64{s[1], s[0]})
		}
	}
	for q.Len() > 0 {
		top := heap.Pop(q).([2]uint64)
		d, u := top[0], uint32(top[1])
		if d != dist[u] {
			continue
		}
		for e := out.Offsets[u]; e < out.Offsets[u+1]; e++ {
			w := uint64(1)
			if weighted {
				w = uint64(out.Weights[e])
			}
			if v := out.Targets[e]; d+w < dist[v] {
				dist[v] = d + w
				heap.Push(q, [2]uint64{d + w, uint64(v)})
			}
		}
	}
	return dist
}

type minQueue [][2]uint64

func (q minQueue) Len() int           { return len(q) }
func (q minQueue) Less(i, j int) bool { return q[i][0] < q[j][0] }
func (q minQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *minQueue) Push(x any)        { *q = append(*q, x.([2]uint64)) }
func (q *minQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// expandChains is what the GPU's chain_fill computes (kernels/persist.cu):
// the search on the contraction from src's seeds, then each vertex's
// distance from its junction's, or from its chain's ends' and, on src's
// own chain, from src along it.
func expandChains(c *Chains, src uint32) []uint64 {
	var seeds [][2]uint64
	role := c.Role[src]
	if role&InteriorBit == 0 {
		seeds = append(seeds, [2]uint64{uint64(role), 0})
	} else {
		ch := role &^ InteriorBit
		seeds = append(seeds, [2]uint64{uint64(c.Ends[2*ch]), uint64(c.Fwd[src])},
			[2]uint64{uint64(c.Ends[2*ch+1]), uint64(c.Bwd[src])})
	}
	cdist := dijkstra(&c.Graph.Out, true, seeds...)
	dist := make([]uint64, len(c.Role))
	for v, r := range c.Role {
		if r&InteriorBit == 0 {
			dist[v] = cdist[r]
			continue
		}
		ch := r &^ InteriorBit
		best := uint64(math.MaxUint64)
		if d := cdist[c.Ends[2*ch]]; d != math.MaxUint64 {
			best = min(best, d+uint64(c.Fwd[v]))
		}
		if d := cdist[c.Ends[2*ch+1]]; d != math.MaxUint64 {
			best = min(best, d+uint64(c.Bwd[v]))
		}
		if r == role {
			best = min(best, uint64(max(c.Fwd[v], c.Fwd[src])-min(c.Fwd[v], c.Fwd[src])))
		}
		dist[v] = best
	}
	return dist
}

// chainShapes are graphs of chains of every kind: paths, a ring alone,
// a chain back to its junction, parallel chains beside a direct edge, and
// random graphs whose edges are cut into chains, with cycles and
// isolated vertices beside them.
func chainShapes(r *rand.Rand, weighted bool) map[string]*Graph {
	wt := func() int {
		if weighted {
			return 1 + r.IntN(20)
		}
		return 0
	}
	path := func(vs ...int) [][3]int {
		var es [][3]int
		for i := 1; i < len(vs); i++ {
			es = append(es, [3]int{vs[i-1], vs[i], wt()})
		}
		return es
	}
	shapes := map[string]*Graph{
		"path":     undirected(10, weighted, path(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)),
		"ring":     undirected(8, weighted, path(0, 1, 2, 3, 4, 5, 6, 7, 0)),
		"lollipop": undirected(7, weighted, append(path(0, 1, 2, 3, 4, 0), path(0, 5, 6)...)),
		"parallel": undirected(9, weighted, slices.Concat(path(0, 1, 2, 3, 8), path(0, 4, 5, 8), path(0, 8), path(8, 6), path(0, 7))),
	}
	for i := range 4 {
		k := 5 + r.IntN(40)
		var es [][3]int
		n := k
		for range k + r.IntN(2*k) {
			u, v := r.IntN(k), r.IntN(k)
			vs := []int{u}
			for range r.IntN(7) {
				vs = append(vs, n)
				n++
			}
			es = append(es, path(append(vs, v)...)...)
		}
		ring := []int{n}
		for range 2 + r.IntN(5) {
			n++
			ring = append(ring, n)
		}
		es = append(es, path(append(ring, ring[0])...)...)
		n += 1 + r.IntN(3) // and isolated vertices
		shapes[fmt.Sprintf("random-%d", i)] = undirected(n, weighted, es)
	}
	return shapes
}

func TestChainsMatchDijkstra(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 2))
	for _, weighted := range []bool{false, true} {
		for name, g := range chainShapes(r, weighted) {
			name = fmt.Sprintf("%s/weighted=%v", name, weighted)
			before := g.Bytes()
			c, err := g.Chains(weighted)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := g.Bytes() - before; got != c.Bytes() || got < 12*int64(g.NumVertices()) {
				t.Errorf("%s: the graph's memory grew by %d bytes with a contraction of %d", name, got, c.Bytes())
			}
			n := g.NumVertices()
			if got := c.Graph.NumVertices(); got != n-c.Interior || c.Interior == 0 {
				t.Errorf("%s: %d junctions and %d interior vertices of %d", name, got, c.Interior, n)
			}
			for src := range uint32(n) {
				want := dijkstra(&g.Out, weighted, [2]uint64{uint64(src), 0})
				if got := expandChains(c, src); !slices.Equal(got, want) {
					t.Fatalf("%s: from %d: got %v, want %v (roles %v, fwd %v, bwd %v, ends %v)", name, src, got, want, c.Role, c.Fwd, c.Bwd, c.Ends)
				}
			}
		}
	}
}

func TestChainsRefuse(t *testing.T) {
	g := undirected(3, false, [][3]int{{0, 1, 0}, {1, 2, 0}})
	g.Directed = true
	if _, err := g.Chains(false); err != ErrNoChains {
		t.Errorf("directed graph: %v, want ErrNoChains", err)
	}
	g = undirected(3, true, [][3]int{{0, 1, 0}, {1, 2, 0}})
	g.Out.Weights[0] = 0.5
	if _, err := g.Chains(true); err == nil {
		t.Error("fractional weights: contracted by weight")
	}
}
