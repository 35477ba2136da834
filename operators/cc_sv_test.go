package operators

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/par"
)

// shiloachVishkin is GAP's cc_sv.cc, kept here to measure against Afforest
// (BenchmarkCCShiloachVishkin): hook the larger of two roots under the
// smaller across every edge, shortcut, until nothing changes.
func shiloachVishkin(out *convert.CSR) []uint32 {
	n := out.NumVertices()
	comp := make([]uint32, n)
	for v := range comp {
		comp[v] = uint32(v)
	}
	offs, targets := out.Offsets, out.Targets
	for {
		var changed atomic.Bool
		par.For(n, ccGrain, func(lo, hi int) {
			change := false
			for u := lo; u < hi; u++ {
				for _, v := range targets[offs[u]:offs[u+1]] {
					cu, cv := atomic.LoadUint32(&comp[u]), atomic.LoadUint32(&comp[v])
					if cu == cv {
						continue
					}
					high, low := max(cu, cv), min(cu, cv)
					if atomic.LoadUint32(&comp[high]) == high {
						atomic.StoreUint32(&comp[high], low)
						change = true
					}
				}
			}
			if change {
				changed.Store(true)
			}
		})
		compress(context.Background(), comp)
		if !changed.Load() {
			return comp
		}
	}
}

func TestShiloachVishkin(t *testing.T) {
	for _, s := range optest.Shapes(t) {
		g := optest.BuildGraph(t, s, false, false, edges.KeyInt64)
		got, want := shiloachVishkin(&g.Out), optest.RefCC(g)
		for v := range want {
			if got[v] != want[v] {
				t.Fatalf("%s: vertex %d in %d, want %d", s.Name, v, got[v], want[v])
			}
		}
	}
}

func BenchmarkCCShiloachVishkin(b *testing.B) {
	g := optest.BenchGraph(b)
	b.ResetTimer()
	times := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		shiloachVishkin(&g.Out)
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	optest.ReportMedian(b, times)
}
