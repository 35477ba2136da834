package operators

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gpipe/gpipe/operators/internal/optest"
)

// Benchmarks on an undirected Graph 500 Kronecker graph (edge factor 16,
// GAP's weights 1..255), scale 16 unless GPIPE_BENCH_SCALE says otherwise:
//
//	GPIPE_BENCH_SCALE=20 go test ./operators -run XXX -bench . -benchtime 16x
//
// GPIPE_BENCH_DELTA sets sssp's and sswp's Δ (default: the operator's own).
// Each op runs from a different random non-isolated source (fixed seed);
// besides ns/op, median-ms reports the median compute time.

func benchOp(b *testing.B, op Operator, p Params) {
	g := optest.BenchGraph(b)
	if err := op.Prepare(&p); err != nil {
		b.Fatal(err)
	}
	srcs := optest.BenchSources(g, b.N)
	times := make([]time.Duration, 0, b.N)
	iterations := 0
	// One untimed run first: the first touch of fresh memory is slow on a
	// virtual machine, and later runs reuse the scratch pools.
	if _, err := op.RunCPU(context.Background(), Input{Graph: g, Source: srcs[0], Params: p}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Garbage from the last run is collected untimed, as gpipe bench
		// does, so that results reuse memory instead of faulting in pages.
		if os.Getenv("GPIPE_BENCH_NOGC") == "" {
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
		}
		r, err := op.RunCPU(context.Background(), Input{Graph: g, Source: srcs[i], Params: p})
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, r.Compute)
		iterations += r.Iterations
	}
	b.StopTimer()
	optest.ReportMedian(b, times)
	b.ReportMetric(float64(iterations)/float64(b.N), "iterations/op")
}

func BenchmarkBFS(b *testing.B)  { benchOp(b, BFS{}, Params{}) }
func BenchmarkSSSP(b *testing.B) { benchOp(b, SSSP{}, Params{Delta: optest.BenchDelta()}) }
func BenchmarkSSWP(b *testing.B) { benchOp(b, SSWP{}, Params{Delta: optest.BenchDelta()}) }

func BenchmarkCC(b *testing.B) { benchOp(b, CC{}, Params{}) }

// BenchmarkPageRank uses GAP's benchmark settings: tolerance 1e-4, at most
// 20 iterations.
func BenchmarkPageRank(b *testing.B) {
	benchOp(b, PageRank{}, Params{Tolerance: 1e-4, MaxIterations: 20})
}
