package operators

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators/internal/optest"
)

// TestWeightedPageRank compares weighted PageRank with the reference
// (networkx's definition pushed along the out-edges) on every shape, both
// directions, both contribution widths, hubs first and not; and checks
// that the weights change the ranks, so that a pull that ignored them
// would fail.
func TestWeightedPageRank(t *testing.T) {
	for _, s := range optest.Shapes(t) {
		if s.Negative {
			continue
		}
		for _, directed := range []bool{false, true} {
			g := optest.BuildGraph(t, s, directed, true, edges.KeyInt64)
			ref := optest.RefWeightedPageRank(g, DefaultDamping)
			plain := optest.RefPageRank(g, DefaultDamping)
			for _, tol := range []float64{1e-4, 1e-11} {
				for _, hubs := range []bool{false, true} {
					tune := defaultTuning()
					tune.hubMin = math.MaxInt
					if hubs {
						tune.hubMin, tune.hubSkew = 0, 0
					}
					r := runTuned(t, PageRank{}, g, 0, Params{Tolerance: tol, Weighted: true}, &tune)
					if !strings.Contains(r.Strategy, "weighted") {
						t.Fatalf("%s: strategy %q does not say weighted", s.Name, r.Strategy)
					}
					x := r.Column("rank").Float64
					if d := l1(x, ref); d > 20*tol {
						t.Fatalf("%s directed=%v tolerance %g hubs=%v: L1 distance %g to the weighted reference", s.Name, directed, tol, hubs, d)
					}
					if tol < 1e-6 && l1(ref, plain) > 1e-6 && l1(x, plain) < 1e-6 {
						t.Fatalf("%s directed=%v: the weighted ranks are the unweighted ones", s.Name, directed)
					}
				}
			}
		}
	}
}

// TestWeightedPageRankUnweightedGraph: --weighted on a graph without
// weights weighs every edge 1, which is unweighted PageRank to the bit.
func TestWeightedPageRankUnweightedGraph(t *testing.T) {
	s := optest.Shapes(t)[3]
	g := optest.BuildGraph(t, s, true, false, edges.KeyInt64)
	a := run(t, PageRank{}, g, 0, Params{Weighted: true}).Column("rank").Float64
	b := run(t, PageRank{}, g, 0, Params{}).Column("rank").Float64
	if !slices.Equal(a, b) {
		t.Fatalf("weighted on an unweighted graph: %v, unweighted %v", a[:4], b[:4])
	}
}

// TestWeightedPageRankZeroOutWeight: a vertex whose out-edges all weigh 0
// is dangling, as in networkx: its rank is spread evenly, and its
// out-neighbours get nothing from it.
func TestWeightedPageRankZeroOutWeight(t *testing.T) {
	// 0 -> 1 (weight 0), 0 -> 2 (weight 0), 1 -> 2, 2 -> 0.
	s := optest.Shape{Name: "zero-out", Edges: []optest.Edge{{U: 0, V: 1, W: 0}, {U: 0, V: 2, W: 0}, {U: 1, V: 2, W: 1}, {U: 2, V: 0, W: 1}}}
	g := optest.BuildGraph(t, s, true, true, edges.KeyInt64)
	x := run(t, PageRank{}, g, 0, Params{Weighted: true, Tolerance: 1e-12}).Column("rank").Float64
	// Dangling 0 gives x0/3 to each; 1 gets only that and the teleport.
	d := DefaultDamping
	want1 := (1-d)/3 + d*x[0]/3
	if math.Abs(x[1]-want1) > 1e-10 {
		t.Fatalf("ranks %v: vertex 1 has %v, want %v (vertex 0 dangling)", x, x[1], want1)
	}
}

// TestWeightedPageRankNegative: a negative weight is refused, not turned
// into a negative share of a vertex's rank.
func TestWeightedPageRankNegative(t *testing.T) {
	var s optest.Shape
	for _, sh := range optest.Shapes(t) {
		if sh.Negative {
			s = sh
		}
	}
	g := optest.BuildGraph(t, s, true, true, edges.KeyInt64)
	p := Params{Weighted: true}
	if err := (PageRank{}).Prepare(&p); err != nil {
		t.Fatal(err)
	}
	_, err := CPU{}.Run(context.Background(), PageRank{}, Input{Graph: g, Params: p})
	var ue *usererr.Error
	if !errors.As(err, &ue) || ue.Kind != usererr.Input || !strings.Contains(err.Error(), ">= 0") {
		t.Fatalf("negative weights: %v", err)
	}
}

// TestSpecFor: pagerank reads weights, by the shortest paths' rule, only
// with Params.Weighted; the other operators' specs stay as they are.
func TestSpecFor(t *testing.T) {
	if s := SpecFor(PageRank{}, Params{}); s.Weighted {
		t.Fatal("unweighted pagerank's spec reads weights")
	}
	if s := SpecFor(PageRank{}, Params{Weighted: true}); !s.Weighted || s.Weights != SpecFor(SSSP{}, Params{}).Weights {
		t.Fatalf("weighted pagerank's spec: %+v", s)
	}
	if s := SpecFor(BFS{}, Params{Weighted: true}); s.Weighted {
		t.Fatal("bfs's spec reads weights")
	}
	if err := CheckSet(BFS{}, Params{Weighted: true}, []string{ParamWeighted}, func(s string) string { return s }); err == nil {
		t.Fatal("weighted given to bfs")
	}
}

// TestPageRankNetworkx compares the ranks with networkx.pagerank's on a
// small graph (testdata/pagerank_networkx.json, written by
// pagerank_networkx.py with networkx and scipy), weighted and not,
// directed and undirected.
func TestPageRankNetworkx(t *testing.T) {
	s, cases := optest.Networkx(t)
	for _, c := range cases {
		g := optest.BuildGraph(t, s, c.Directed, true, edges.KeyInt64)
		x := run(t, PageRank{}, g, 0, Params{Weighted: c.Weighted, Tolerance: 1e-13}).Column("rank").Float64
		if err := optest.SameAsNetworkx(x, c, 1e-12); err != nil {
			t.Fatalf("directed=%v weighted=%v: %v", c.Directed, c.Weighted, err)
		}
	}
}

func l1(a, b []float64) float64 {
	var d float64
	for i := range a {
		d += math.Abs(a[i] - b[i])
	}
	return d
}
