package operators

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
)

// sameDistances reports the first vertex where a and b differ (NaN equal
// to NaN), or -1.
func sameDistances(a, b []float64) int {
	for v := range a {
		if !(a[v] == b[v] || math.IsNaN(a[v]) && math.IsNaN(b[v])) {
			return v
		}
	}
	return -1
}

// runSSSPBothWidths runs sssp from src with uint32 distances where g's
// weights allow them and with float64 distances forced, checks both
// against Dijkstra, and checks that they agree to the last bit.
func runSSSPBothWidths(t *testing.T, g *convert.Graph, src uint32, p Params, tune tuning) {
	t.Helper()
	ref := optest.RefDijkstra(g, src)
	narrow := runTuned(t, SSSP{}, g, src, p, &tune)
	tune.wideDists = true
	wide := runTuned(t, SSSP{}, g, src, p, &tune)
	for _, r := range []*Result{narrow, wide} {
		if err := optest.ValidateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, ref); err != nil {
			t.Fatalf("sssp from %d (delta %v): %v", src, p.Delta, err)
		}
	}
	if v := sameDistances(narrow.Column("distance").Float64, wide.Column("distance").Float64); v >= 0 {
		t.Fatalf("sssp from %d: vertex %d at %v with uint32 distances, %v with float64", src, v,
			narrow.Column("distance").Float64[v], wide.Column("distance").Float64[v])
	}
}

// TestSSSPDistanceWidths runs sssp on every shape with non-negative
// weights, unweighted and weighted: integer weights (zeros and ties
// included) take the uint32 path, the others the float64 one, and the
// uint32 path gives what the float64 one gives.
func TestSSSPDistanceWidths(t *testing.T) {
	for _, s := range optest.Shapes(t) {
		if s.Negative {
			continue
		}
		ints := true
		for _, e := range s.Edges {
			ints = ints && e.W == math.Trunc(e.W)
		}
		for _, weighted := range []bool{false, true} {
			g := optest.BuildGraph(t, s, true, weighted, edges.KeyInt64)
			if want := ints || !weighted; intDistances(g) != want {
				t.Fatalf("%s weighted=%v: uint32 distances %v, want %v", s.Name, weighted, !want, want)
			}
			for _, src := range optest.SourcesOf(g) {
				for _, delta := range []float64{0, 0.7, 50} {
					runSSSPBothWidths(t, g, src, Params{Delta: delta}, defaultTuning())
				}
			}
		}
	}
}

// TestSSSPNearOverflow runs sssp where the distances come close to 2^32:
// on n vertices with every weight at most W, for the largest W with
// n·W < 2^32 − 1 (uint32 distances) and for W + 1 (float64 distances). A
// plain chain puts its far end at (n − 1)·W, within 0.1% of 2^32 − 1;
// a chain with random shortcuts relaxes vertices many times over.
func TestSSSPNearOverflow(t *testing.T) {
	const n = 1000
	top := (math.MaxUint32 - 1) / n
	for _, w := range []int{top, top + 1} {
		rng := rand.New(rand.NewPCG(uint64(w), 3))
		var chain []optest.Edge
		for i := int64(0); i+1 < n; i++ {
			chain = append(chain, optest.Edge{U: i, V: i + 1, W: float64(w)})
		}
		shortcuts := append([]optest.Edge(nil), chain...)
		for k := 0; k < 2*n; k++ {
			u := int64(rng.IntN(n - 1))
			shortcuts = append(shortcuts, optest.Edge{U: u, V: u + 1 + int64(rng.IntN(n-1-int(u))), W: float64(w - rng.IntN(3))})
		}
		for _, es := range [][]optest.Edge{chain, shortcuts} {
			g := optest.BuildGraph(t, optest.Shape{Name: fmt.Sprintf("chain-%d", w), Edges: es}, true, true, edges.KeyInt64)
			if g.NumVertices() != n {
				t.Fatalf("%d vertices, want %d", g.NumVertices(), n)
			}
			if want := w == top; intDistances(g) != want {
				t.Fatalf("weights up to %d on %d vertices: uint32 distances %v, want %v", w, n, !want, want)
			}
			for _, delta := range []float64{0, 1, 1e6} {
				runSSSPBothWidths(t, g, 0, Params{Delta: delta}, defaultTuning())
			}
		}
		// optest.BuildGraph keeps the keys' order: vertex n−1 is the chain's end.
		g := optest.BuildGraph(t, optest.Shape{Name: "chain", Edges: chain}, true, true, edges.KeyInt64)
		if d := run(t, SSSP{}, g, 0, Params{}).Column("distance").Float64[n-1]; d != float64((n-1)*w) {
			t.Fatalf("far end at %v, want %d", d, (n-1)*w)
		}
	}
}

// TestSSSPDefaultDeltaRoadShapes checks the default Δ on graphs of
// road-like degrees (a grid and a road, weighted and not): 16 mean weights
// over the average degree, at least two mean weights, where a Kronecker
// graph keeps the small-world rule's (2.4 here, 2 at scale 20); and that
// sssp with it matches Dijkstra on them at 1 and 3 workers.
func TestSSSPDefaultDeltaRoadShapes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	road := optest.RoadShapes(t, 5)[1]
	grid := optest.Shape{Name: "grid-40x40", Edges: optest.GridEdges(40, 40, 9)}
	var roads []*convert.Graph
	for _, c := range []struct {
		s        optest.Shape
		weighted bool
	}{{grid, true}, {road, true}, {grid, false}} {
		g := optest.BuildGraph(t, c.s, false, c.weighted, edges.KeyInt64)
		mean, _, _ := SampleWeights(&g.Out)
		want := roadDeltaFactor * mean / (float64(g.NumEdges()) / float64(g.NumVertices()))
		if d := defaultSSSPDelta(g); d != want || d < 2*mean {
			t.Fatalf("%s (weighted %v): Δ %v, want 16 · mean %v / average degree = %v", c.s.Name, c.weighted, d, mean, want)
		}
		roads = append(roads, g)
	}
	kron := optest.BuildGraph(t, optest.Shape{Name: "k10", Edges: optest.KroneckerEdges(t, 10, 16, 1)}, false, true, edges.KeyInt64)
	mean, _, _ := SampleWeights(&kron.Out)
	small := max(ssspDeltaFactor*mean/(float64(kron.NumEdges())/float64(kron.NumVertices())), 2)
	if d := defaultSSSPDelta(kron); d != small || d > 3 {
		t.Fatalf("Kronecker 10, weights 1..255: Δ %v, want the small-world rule's 0.5 · mean / degree, at least min + 1: %v", d, small)
	}
	for _, procs := range []int{1, 3} {
		runtime.GOMAXPROCS(procs)
		for _, g := range roads {
			for _, src := range []uint32{0, 17, uint32(g.NumVertices() - 1)} {
				runSSSPBothWidths(t, g, src, Params{}, defaultTuning())
			}
		}
	}
}

// TestSSSPDefaultDelta checks the default Δ: the degree rule, raised to
// the smallest weight + 1 where every weight is an integer (no vertex is
// relaxed twice in a bucket then), 1 without weights; and that sssp with
// it matches Dijkstra on such a graph at 1, 3 and 7 workers.
func TestSSSPDefaultDelta(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(14, 2))
	const n = 300
	var ints, floats []optest.Edge
	for k := 0; k < 40*n; k++ {
		u, v := int64(rng.IntN(n)), int64(rng.IntN(n))
		w := 3 + rng.IntN(8)
		ints = append(ints, optest.Edge{U: u, V: v, W: float64(w)})
		floats = append(floats, optest.Edge{U: u, V: v, W: float64(w) + 0.5})
	}
	gi := optest.BuildGraph(t, optest.Shape{Name: "dense-int", Edges: ints}, true, true, edges.KeyInt64)
	gf := optest.BuildGraph(t, optest.Shape{Name: "dense-float", Edges: floats}, true, true, edges.KeyInt64)
	gu := optest.BuildGraph(t, optest.Shape{Name: "dense-unweighted", Edges: ints}, true, false, edges.KeyInt64)
	mean, _, _ := SampleWeights(&gf.Out)
	byDegree := ssspDeltaFactor * mean / (float64(gf.NumEdges()) / float64(gf.NumVertices()))
	if d := defaultSSSPDelta(gf); d != byDegree || d >= 1 {
		t.Fatalf("float weights: Δ %v, want the degree rule's %v (below 1 here)", d, byDegree)
	}
	if d := defaultSSSPDelta(gi); d != gi.Weights().Min+1 || d != 4 {
		t.Fatalf("integer weights 3..10: Δ %v, want 4", d)
	}
	if d := defaultSSSPDelta(gu); d != 1 {
		t.Fatalf("no weights: Δ %v, want 1", d)
	}
	for _, procs := range []int{1, 3, 7} {
		runtime.GOMAXPROCS(procs)
		for _, src := range []uint32{0, 17, 150} {
			runSSSPBothWidths(t, gi, src, Params{}, defaultTuning())
		}
	}
}
