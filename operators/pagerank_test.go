package operators

import (
	"math"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/ingest/edges"
)

// TestPageRankHubOrder runs the pull with the contributions in hubs-first
// order and in vertex order: the same sums in the same order, so the same
// ranks to the bit and the same iterations, on both directions (dangling
// vertices included) and both contribution widths; and the reference.
func TestPageRankHubOrder(t *testing.T) {
	for _, s := range optest.Shapes(t) {
		for _, directed := range []bool{false, true} {
			g := optest.BuildGraph(t, s, directed, false, edges.KeyInt64)
			ref := optest.RefPageRank(g, DefaultDamping)
			for _, tol := range []float64{1e-4, DefaultTolerance} {
				always, never := defaultTuning(), defaultTuning()
				always.hubMin, always.hubSkew = 0, 0
				never.hubMin = math.MaxInt
				hub := runTuned(t, PageRank{}, g, 0, Params{Tolerance: tol}, &always)
				plain := runTuned(t, PageRank{}, g, 0, Params{Tolerance: tol}, &never)
				if !strings.HasSuffix(hub.Strategy, "hubs first)") || strings.Contains(plain.Strategy, "hubs") {
					t.Fatalf("strategies %q and %q", hub.Strategy, plain.Strategy)
				}
				if hub.Iterations != plain.Iterations {
					t.Fatalf("%s directed=%v tolerance %g: %d iterations hubs first, %d in vertex order", s.Name, directed, tol, hub.Iterations, plain.Iterations)
				}
				xh, xp := hub.Column("rank").Float64, plain.Column("rank").Float64
				var l1 float64
				for v := range xh {
					if xh[v] != xp[v] {
						t.Fatalf("%s directed=%v tolerance %g: vertex %d rank %v hubs first, %v in vertex order", s.Name, directed, tol, v, xh[v], xp[v])
					}
					l1 += math.Abs(xh[v] - ref[v])
				}
				if l1 > 20*tol {
					t.Fatalf("%s directed=%v tolerance %g: L1 distance %g to the reference", s.Name, directed, tol, l1)
				}
			}
		}
	}
}
