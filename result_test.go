package gpipe

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/operators"
)

// TestUnreached checks the count of null first-column values for each
// column type, on results longer than one worker's share: negative depths,
// NaN distances, NoVertex components.
func TestUnreached(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 1000, 200_003} {
		depth, dist, comp := make([]int32, n), make([]float64, n), make([]uint32, n)
		want := 0
		for i := 0; i < n; i++ {
			if rng.IntN(10) == 0 {
				want++
				depth[i], dist[i], comp[i] = -1-rng.Int32N(1<<30), math.NaN(), convert.NoVertex
			} else {
				depth[i], dist[i], comp[i] = rng.Int32N(1<<30), rng.Float64(), rng.Uint32N(convert.NoVertex)
			}
		}
		for _, c := range []operators.Column{
			{Name: "depth", Type: operators.Int32Column, Int32: depth},
			{Name: "distance", Type: operators.Float64Column, Float64: dist},
			{Name: "component", Type: operators.VertexColumn, Vertex: comp},
		} {
			r := &Result{Result: &operators.Result{Columns: []operators.Column{c}}}
			if got := r.Unreached(); got != want {
				t.Errorf("%d rows of %s: %d unreached, want %d", n, c.Name, got, want)
			}
		}
	}
}
