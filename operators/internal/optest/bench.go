package optest

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/gen"
)

// The benchmarks' graph, shared by the CPU's and the GPUs' benchmarks:
// an undirected Graph 500 Kronecker graph (edge factor 16, GAP's weights
// 1..255), scale 16 unless GPIPE_BENCH_SCALE says otherwise.

var benchGraphs struct {
	sync.Mutex
	m map[int]*convert.Graph
}

// BenchScale is the benchmarks' Kronecker scale: GPIPE_BENCH_SCALE, or 16.
func BenchScale() int {
	if s, err := strconv.Atoi(os.Getenv("GPIPE_BENCH_SCALE")); err == nil && s > 0 {
		return s
	}
	return 16
}

// BenchGraph is the undirected Kronecker graph of BenchScale, weighted
// (GAP's weights 1..255), built once a scale.
func BenchGraph(b testing.TB) *convert.Graph {
	b.Helper()
	scale := BenchScale()
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

// BenchSources are random vertices with at least one edge.
func BenchSources(g *convert.Graph, k int) []uint32 {
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

// ReportMedian reports the median of times as median-ms.
func ReportMedian(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
}

// BenchDelta is GPIPE_BENCH_DELTA, or 0 (the operator's default Δ).
func BenchDelta() float64 {
	d, _ := strconv.ParseFloat(os.Getenv("GPIPE_BENCH_DELTA"), 64)
	return d
}

// BenchPersistSpec is GPIPE_BENCH_PERSIST, the persistent searches'
// benchmark graph as gen.Parse reads it or file:PATH (an edge file, such
// as a real graph), or the 2048 × 2048 grid.
func BenchPersistSpec() string {
	if s := os.Getenv("GPIPE_BENCH_PERSIST"); s != "" {
		return s
	}
	return "grid:2048x2048"
}
