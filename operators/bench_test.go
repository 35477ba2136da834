package operators

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/gen"
)

// Benchmarks on an undirected Graph 500 Kronecker graph (edge factor 16,
// GAP's weights 1..255), scale 16 unless GPIPE_BENCH_SCALE says otherwise:
//
//	GPIPE_BENCH_SCALE=20 go test ./operators -run XXX -bench . -benchtime 16x
//
// GPIPE_BENCH_DELTA sets sssp's and sswp's Δ (default: the operator's own).
// Each op runs from a different random non-isolated source (fixed seed);
// besides ns/op, median-ms reports the median compute time.

var benchGraphs struct {
	sync.Mutex
	m map[int]*convert.Graph
}

func benchScale() int {
	if s, err := strconv.Atoi(os.Getenv("GPIPE_BENCH_SCALE")); err == nil && s > 0 {
		return s
	}
	return 16
}

func benchGraph(b testing.TB) *convert.Graph {
	b.Helper()
	scale := benchScale()
	benchGraphs.Lock()
	defer benchGraphs.Unlock()
	if g := benchGraphs.m[scale]; g != nil {
		return g
	}
	ctx := context.Background()
	start := time.Now()
	tab, err := gen.Kronecker{Scale: scale, EdgeFactor: 16, Weighted: true}.Generate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	g, err := convert.Build(ctx, tab, convert.BuildOptions{Undirected: true, Weighted: true, Weights: convert.NonNegativeWeights})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("kronecker scale %d: %d vertices, %d directed edges, built in %v", scale, g.NumVertices(), g.NumEdges(), time.Since(start))
	if benchGraphs.m == nil {
		benchGraphs.m = map[int]*convert.Graph{}
	}
	benchGraphs.m[scale] = g
	return g
}

// benchSources are random vertices with at least one edge.
func benchSources(g *convert.Graph, k int) []uint32 {
	rng := rand.New(rand.NewPCG(27491095, 1))
	var srcs []uint32
	for len(srcs) < k {
		v := uint32(rng.IntN(g.NumVertices()))
		if g.Out.Degree(v) > 0 {
			srcs = append(srcs, v)
		}
	}
	return srcs
}

func benchOp(b *testing.B, op Operator, p Params) {
	g := benchGraph(b)
	if err := op.Prepare(&p); err != nil {
		b.Fatal(err)
	}
	srcs := benchSources(g, b.N)
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
	reportMedian(b, times)
	b.ReportMetric(float64(iterations)/float64(b.N), "iterations/op")
}

// reportMedian reports the median of times as median-ms.
func reportMedian(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
}

func BenchmarkBFS(b *testing.B)  { benchOp(b, BFS{}, Params{}) }
func BenchmarkSSSP(b *testing.B) { benchOp(b, SSSP{}, Params{Delta: benchDelta()}) }
func BenchmarkSSWP(b *testing.B) { benchOp(b, SSWP{}, Params{Delta: benchDelta()}) }

// benchDelta is GPIPE_BENCH_DELTA, or 0 (the operator's default Δ).
func benchDelta() float64 {
	d, _ := strconv.ParseFloat(os.Getenv("GPIPE_BENCH_DELTA"), 64)
	return d
}
func BenchmarkCC(b *testing.B) { benchOp(b, CC{}, Params{}) }

// BenchmarkPageRank uses GAP's benchmark settings: tolerance 1e-4, at most
// 20 iterations.
func BenchmarkPageRank(b *testing.B) {
	benchOp(b, PageRank{}, Params{Tolerance: 1e-4, MaxIterations: 20})
}
