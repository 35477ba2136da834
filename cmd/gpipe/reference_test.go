package main_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// ref is a graph built the slow, obvious way, with the semantics the README
// gives: self loops dropped, parallel edges merged with the minimum weight,
// --undirected adding every edge's reverse. Keys are text.
type ref struct {
	keys []string                      // every endpoint, ascending
	adj  map[string]map[string]float64 // u -> v -> weight
	less func(a, b string) bool
}

// newRef builds the graph of edges; weights are 1 where weighted is false or
// a weight is nil.
func newRef(edges []edge, weighted, undirected, numeric bool) *ref {
	g := &ref{adj: map[string]map[string]float64{}, less: func(a, b string) bool { return a < b }}
	if numeric {
		g.less = numLess
	}
	seen := map[string]bool{}
	add := func(u, v string, w float64) {
		if g.adj[u] == nil {
			g.adj[u] = map[string]float64{}
		}
		if old, ok := g.adj[u][v]; !ok || w < old {
			g.adj[u][v] = w
		}
	}
	for _, e := range edges {
		u, v := fmt.Sprint(e.src), fmt.Sprint(e.dst)
		for _, k := range []string{u, v} {
			if !seen[k] {
				seen[k] = true
				g.keys = append(g.keys, k)
			}
		}
		if u == v {
			continue
		}
		w := 1.0
		if weighted && e.w != nil {
			switch x := e.w.(type) {
			case float64:
				w = x
			case int64:
				w = float64(x)
			case int:
				w = float64(x)
			}
		}
		add(u, v, w)
		if undirected {
			add(v, u, w)
		}
	}
	sort.Slice(g.keys, func(i, j int) bool { return g.less(g.keys[i], g.keys[j]) })
	return g
}

// bfs is each vertex's depth from src, -1 where unreachable.
func (g *ref) bfs(src string) map[string]int {
	d := map[string]int{}
	for _, k := range g.keys {
		d[k] = -1
	}
	d[src] = 0
	q := []string{src}
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for v := range g.adj[u] {
			if d[v] < 0 {
				d[v] = d[u] + 1
				q = append(q, v)
			}
		}
	}
	return d
}

// sssp is each vertex's distance from src (Bellman-Ford), +Inf where
// unreachable.
func (g *ref) sssp(src string) map[string]float64 {
	d := map[string]float64{}
	for _, k := range g.keys {
		d[k] = math.Inf(1)
	}
	d[src] = 0
	for changed := true; changed; {
		changed = false
		for u, out := range g.adj {
			for v, w := range out {
				if d[u]+w < d[v] {
					d[v] = d[u] + w
					changed = true
				}
			}
		}
	}
	return d
}

// sswp is each vertex's widest-path bottleneck from src: +Inf for src,
// -Inf where unreachable.
func (g *ref) sswp(src string) map[string]float64 {
	d := map[string]float64{}
	for _, k := range g.keys {
		d[k] = math.Inf(-1)
	}
	d[src] = math.Inf(1)
	for changed := true; changed; {
		changed = false
		for u, out := range g.adj {
			for v, w := range out {
				if b := math.Min(d[u], w); b > d[v] {
					d[v] = b
					changed = true
				}
			}
		}
	}
	return d
}

// cc names each vertex's weakly connected component by its smallest key.
func (g *ref) cc() map[string]string {
	parent := map[string]string{}
	for _, k := range g.keys {
		parent[k] = k
	}
	var find func(string) string
	find = func(x string) string {
		for parent[x] != x {
			x = parent[x]
		}
		return x
	}
	for u, out := range g.adj {
		for v := range out {
			a, b := find(u), find(v)
			if a != b {
				if g.less(b, a) {
					a, b = b, a
				}
				parent[b] = a
			}
		}
	}
	comp := map[string]string{}
	for _, k := range g.keys {
		comp[k] = find(k)
	}
	return comp
}

// pagerank is networkx.pagerank: power iteration from 1/n with dangling
// rank spread uniformly, run until the L1 change is below tol.
func (g *ref) pagerank(damping, tol float64, maxIter int) map[string]float64 {
	n := float64(len(g.keys))
	x := map[string]float64{}
	for _, k := range g.keys {
		x[k] = 1 / n
	}
	for it := 0; it < maxIter; it++ {
		dangling := 0.0
		next := map[string]float64{}
		for _, k := range g.keys {
			if len(g.adj[k]) == 0 {
				dangling += x[k]
			}
		}
		for _, k := range g.keys {
			next[k] = (1-damping)/n + damping*dangling/n
		}
		for u, out := range g.adj {
			for v := range out {
				next[v] += damping * x[u] / float64(len(out))
			}
		}
		change := 0.0
		for _, k := range g.keys {
			change += math.Abs(next[k] - x[k])
		}
		x = next
		if change < tol {
			break
		}
	}
	return x
}

// randomEdges is m random edges between n vertices named by key(i), with
// integer weights in [1, 9], some self loops and parallel edges among them.
func randomEdges(seed uint64, n, m int, key func(int) any) []edge {
	r := rand.New(rand.NewPCG(seed, 99))
	var es []edge
	for len(es) < m {
		u, v := r.IntN(n), r.IntN(n)
		e := edge{src: key(u), dst: key(v), w: float64(1 + r.IntN(9))}
		es = append(es, e)
		if r.IntN(10) == 0 && len(es) < m { // a parallel edge, heavier or lighter
			es = append(es, edge{src: e.src, dst: e.dst, w: float64(1 + r.IntN(9))})
		}
	}
	return es
}

// checkBFS checks depths against the reference and that each parent is a
// valid BFS tree parent.
func checkBFS(t *testing.T, o *output, g *ref, src string) {
	t.Helper()
	want := g.bfs(src)
	depth, parent := o.byVertex(t, "depth"), o.byVertex(t, "parent")
	checkKeys(t, o, g)
	for _, v := range g.keys {
		if want[v] < 0 {
			if depth[v] != nil || parent[v] != nil {
				t.Errorf("bfs: unreachable vertex %s has depth %v parent %v, want nulls", v, depth[v], parent[v])
			}
			continue
		}
		if depth[v] != int64(want[v]) {
			t.Errorf("bfs: vertex %s depth %v, want %d", v, depth[v], want[v])
			continue
		}
		p, _ := parent[v].(string)
		switch {
		case v == src:
			if p != src {
				t.Errorf("bfs: the source %s has parent %v, want itself", src, parent[v])
			}
		case p == "" || g.adj[p] == nil:
			t.Errorf("bfs: vertex %s has parent %v, not a vertex with out-edges", v, parent[v])
		default:
			if _, isEdge := g.adj[p][v]; !isEdge || want[p] != want[v]-1 {
				t.Errorf("bfs: vertex %s (depth %d) has parent %s (depth %d, edge %v)", v, want[v], p, want[p], isEdge)
			}
		}
	}
}

// checkSSSP checks distances against the reference and that each parent
// lies on a shortest path.
func checkSSSP(t *testing.T, o *output, g *ref, src string) {
	t.Helper()
	want := g.sssp(src)
	dist, parent := o.byVertex(t, "distance"), o.byVertex(t, "parent")
	checkKeys(t, o, g)
	for _, v := range g.keys {
		if math.IsInf(want[v], 1) {
			if dist[v] != nil || parent[v] != nil {
				t.Errorf("sssp: unreachable vertex %s has distance %v parent %v, want nulls", v, dist[v], parent[v])
			}
			continue
		}
		d, isNum := dist[v].(float64)
		if !isNum || !near(d, want[v]) {
			t.Errorf("sssp: vertex %s distance %v, want %v", v, dist[v], want[v])
			continue
		}
		if v == src {
			continue
		}
		p, _ := parent[v].(string)
		w, isEdge := g.adj[p][v]
		if !isEdge || !near(want[p]+w, want[v]) {
			t.Errorf("sssp: vertex %s (distance %v) has parent %v, not on a shortest path", v, want[v], parent[v])
		}
	}
}

func checkSSWP(t *testing.T, o *output, g *ref, src string) {
	t.Helper()
	want := g.sswp(src)
	width := o.byVertex(t, "width")
	checkKeys(t, o, g)
	for _, v := range g.keys {
		if math.IsInf(want[v], -1) {
			if width[v] != nil {
				t.Errorf("sswp: unreachable vertex %s has width %v, want null", v, width[v])
			}
			continue
		}
		if w, isNum := width[v].(float64); !isNum || !near(w, want[v]) {
			t.Errorf("sswp: vertex %s width %v, want %v", v, width[v], want[v])
		}
	}
}

func checkCC(t *testing.T, o *output, g *ref) {
	t.Helper()
	want := g.cc()
	comp := o.byVertex(t, "component")
	checkKeys(t, o, g)
	for _, v := range g.keys {
		if comp[v] != want[v] {
			t.Errorf("cc: vertex %s component %v, want %s", v, comp[v], want[v])
		}
	}
}

// checkPageRank checks the ranks against the reference within 1e-6 in L1
// and that they sum to 1.
func checkPageRank(t *testing.T, o *output, g *ref, damping float64) {
	t.Helper()
	want := g.pagerank(damping, 1e-15, 10000)
	rank := o.byVertex(t, "rank")
	checkKeys(t, o, g)
	l1, sum := 0.0, 0.0
	for _, v := range g.keys {
		r, isNum := rank[v].(float64)
		if !isNum {
			t.Fatalf("pagerank: vertex %s rank %v", v, rank[v])
		}
		l1 += math.Abs(r - want[v])
		sum += r
	}
	if l1 > 1e-6 {
		t.Errorf("pagerank: L1 distance %g from the reference (damping %v)", l1, damping)
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("pagerank: the ranks sum to %v", sum)
	}
}

// checkKeys checks that the output has exactly the graph's vertices, in
// ascending order.
func checkKeys(t *testing.T, o *output, g *ref) {
	t.Helper()
	vs := o.vertices(t)
	if fmt.Sprint(vs) != fmt.Sprint(g.keys) {
		t.Fatalf("vertices %v, want %v", vs, g.keys)
	}
}
