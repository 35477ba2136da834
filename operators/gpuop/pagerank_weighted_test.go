package gpuop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/internal/optest"
)

// TestGPUWeightedPageRank runs weighted PageRank (networkx's weight=
// "weight") on the pulls that run it, at the default tolerance (float64
// contributions) and at 1e-6 (float32), with and without the hubs-first
// numbering and the evict-first hint, virtual warps of several widths and
// outliers deferred to blocks, on the weighted shapes and grids (zero
// weights and vertices of out-weight 0 among them), against the CPU's
// weighted ranks; and checks that gshards and cw refuse it, and that a
// negative weight is an error.
func TestGPUWeightedPageRank(t *testing.T) {
	b := testGPU(t)
	seed := optest.FreshSeed(t)
	shapes := append(optest.GPUShapes(t), optest.GridShapes(seed)...)
	shapes = append(shapes, optest.Shape{Name: "zero-out", Edges: []optest.Edge{{U: 0, V: 1, W: 0}, {U: 0, V: 2, W: 0}, {U: 1, V: 2, W: 1}, {U: 2, V: 0, W: 1}}})
	for _, s := range shapes {
		for _, directed := range []bool{true, false} {
			g := optest.BuildGraph(t, s, directed, true, edges.KeyInt64)
			name := fmt.Sprintf("%s/directed=%v", s.Name, directed)
			if s.Negative {
				_, err := runGPUErr(t, b, operators.PageRank{}, g, 0, operators.Params{Weighted: true})
				if usererr.KindOf(err) != usererr.Input {
					t.Errorf("%s: negative weights: %v, want an input error", name, err)
				}
				continue
			}
			for _, tol := range []float64{0, 1e-6} {
				want := run(t, operators.PageRank{}, g, 0, operators.Params{Tolerance: tol, Weighted: true})
				for _, c := range []struct {
					p           operators.Params
					hub, stream bool
				}{
					{operators.Params{}, true, true},
					{operators.Params{Strategy: "vwc", VWarp: 4, Dynamic: true}, true, false},
					{operators.Params{Strategy: "vwc", VWarp: 32, DeferOutliers: 3}, false, true},
					{operators.Params{Strategy: "vwc", VWarp: 1}, true, true},
					{operators.Params{Strategy: "warpseg"}, false, false},
				} {
					p := c.p
					p.Tolerance, p.Weighted = tol, true
					b.tune.noHubOrder, b.tune.noStreamHint = !c.hub, !c.stream
					label := fmt.Sprintf("%s/%+v/hub=%v/stream=%v", name, p, c.hub, c.stream)
					r, err := runGPUErr(t, b, operators.PageRank{}, g, 0, p)
					if err != nil {
						t.Errorf("%s: %v", label, err)
						continue
					}
					if !strings.Contains(r.Strategy, "weighted") {
						t.Errorf("%s: strategy %q does not say weighted", label, r.Strategy)
					}
					if err := optest.SameRanks(ranksOf(r), ranksOf(want), g.NumVertices()); err != nil {
						t.Errorf("%s (%s): %v", label, r.Strategy, err)
					}
				}
				b.Forget(g) // the hub and plain layouts differ
			}
			for _, strategy := range []string{"gshards", "cw"} {
				_, err := runGPUErr(t, b, operators.PageRank{}, g, 0, operators.Params{Weighted: true, Strategy: strategy})
				if usererr.KindOf(err) != usererr.Usage || !strings.Contains(err.Error(), "warpseg or vwc") {
					t.Errorf("%s: weighted %s: %v, want a usage error naming warpseg and vwc", name, strategy, err)
				}
			}
			b.Forget(g)
		}
	}
	b.tune.noHubOrder, b.tune.noStreamHint = false, false
}

// TestGPUPageRankNetworkx compares the GPU's ranks with networkx.pagerank's
// (operators/testdata/pagerank_networkx.json), weighted and not, on every
// strategy that runs each.
func TestGPUPageRankNetworkx(t *testing.T) {
	b := testGPU(t)
	s, cases := optest.Networkx(t)
	for _, c := range cases {
		g := optest.BuildGraph(t, s, c.Directed, true, edges.KeyInt64)
		strategies := []string{"warpseg", "vwc"}
		if !c.Weighted {
			strategies = append(strategies, "gshards", "cw")
		}
		for _, strategy := range strategies {
			r, err := runGPUErr(t, b, operators.PageRank{}, g, 0, operators.Params{Weighted: c.Weighted, Tolerance: 1e-13, Strategy: strategy})
			if err != nil {
				t.Errorf("directed=%v weighted=%v %s: %v", c.Directed, c.Weighted, strategy, err)
				continue
			}
			if err := optest.SameAsNetworkx(r.Column("rank").Float64, c, 1e-11); err != nil {
				t.Errorf("directed=%v weighted=%v %s: %v", c.Directed, c.Weighted, strategy, err)
			}
		}
		b.Forget(g)
	}
}
