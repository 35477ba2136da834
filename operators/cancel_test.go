package operators

import (
	"context"
	"errors"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/pollctx"
)

// A canceled operator stops inside its steps, not only between them: a BFS
// level, a PageRank iteration, a Δ-stepping phase or an Afforest pass over
// a large graph takes seconds, and SIGINT must end a run within about one.
// Each case is a graph on which the whole run is a few such steps (three
// BFS levels, five PageRank iterations, one Δ-stepping phase), so that an
// operator that checks only between steps asks its context a handful of
// times; one that checks inside them asks dozens to thousands of times. The
// context cancels itself at a chosen poll; the operator must return the
// cancellation, not a result (nor one a cut-short step left stale),
// whichever poll that is.
func TestCanceledInsideSteps(t *testing.T) {
	const k = 1 << 16
	// broom: the source, k vertices it points at, and one more after each.
	var broom []optest.Edge
	for i := int64(1); i <= k; i++ {
		broom = append(broom, optest.Edge{U: 0, V: i, W: 1}, optest.Edge{U: i, V: k + i, W: 1})
	}
	// chain: one Δ-stepping bucket when Δ is wider than the whole path, so
	// one phase that a worker spends relaxing its own bucket, vertex by
	// vertex (bucket fusion).
	var chain []optest.Edge
	for i := int64(0); i < k; i++ {
		chain = append(chain, optest.Edge{U: i, V: i + 1, W: 1})
	}
	wide := optest.BuildGraph(t, optest.Shape{Name: "broom", Edges: broom}, true, true, edges.KeyInt64)
	long := optest.BuildGraph(t, optest.Shape{Name: "chain", Edges: chain}, true, true, edges.KeyInt64)
	fewIterations := Params{Tolerance: 1e-15, MaxIterations: 5}
	for _, c := range []struct {
		op    Operator
		graph string
		g     *convert.Graph
		p     Params
	}{
		{BFS{}, "broom", wide, Params{}},
		{CC{}, "broom", wide, Params{}},
		{PageRank{}, "broom", wide, fewIterations},
		{SSSP{}, "broom", wide, Params{}},
		{SSWP{}, "broom", wide, Params{}},
		{SSSP{}, "chain", long, Params{Delta: 1e9}},
		{SSWP{}, "chain", long, Params{Delta: 1e9}},
	} {
		t.Run(c.op.Spec().Name+"/"+c.graph, func(t *testing.T) {
			p := c.p
			if err := c.op.Prepare(&p); err != nil {
				t.Fatal(err)
			}
			in := Input{Graph: c.g, Params: p} // source: vertex 0, the first key
			count := pollctx.New(0)
			if _, err := c.op.RunCPU(count, in); err != nil {
				t.Fatal(err)
			}
			// An operator that checks only between its steps asks fewer
			// than mid times here. (How many times in all depends a little
			// on the scheduling: Δ-stepping's workers fuse rounds as their
			// buckets allow.)
			const mid = 16
			polls := count.Polls()
			if polls < 3*mid {
				t.Fatalf("the run asked its context %d times: it checks only between its steps", polls)
			}
			for _, at := range []int64{1, 2, 3, mid, polls / 2, polls * 3 / 4} {
				ctx := pollctx.New(at)
				res, err := c.op.RunCPU(ctx, in)
				if !errors.Is(err, context.Canceled) || res != nil {
					t.Fatalf("canceled at poll %d of about %d: result %v, error %v; want the cancellation", at, polls, res != nil, err)
				}
			}
		})
	}
}
