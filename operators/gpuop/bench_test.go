package gpuop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators"
)

// GPU benchmarks of the engine's variants that `gpipe bench` cannot name:
// the hubs-first numbering of the PageRank pull, and sweeps of the near-far
// step and the virtual warp width. They skip without a GPU. On the GPU
// machine (docs/gpu.md), on Kronecker 22:
//
//	GPIPE_BENCH_SCALE=22 operators.test -test.run XXX -test.bench GPU -test.benchtime 5x

func benchGPU(b *testing.B) *GPU {
	b.Helper()
	c, err := gpu.Default()
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	g := NewGPU(c)
	b.Cleanup(func() { g.Close() })
	return g
}

// benchGPUOp runs op on the benchmark graph b.N times (after a warm-up)
// and reports the median compute time, and per iteration where the
// operator iterates a fixed number of times.
func benchGPUOp(b *testing.B, gb *GPU, op operators.Operator, p operators.Params) {
	g := optest.BenchGraph(b)
	if err := op.Prepare(&p); err != nil {
		b.Fatal(err)
	}
	srcs := optest.BenchSources(g, b.N+1)
	times := make([]time.Duration, 0, b.N)
	var last *operators.Result
	for i := -1; i < b.N; i++ {
		r, err := gb.Run(context.Background(), op, operators.Input{Graph: g, Source: srcs[i+1], Params: p})
		if err != nil {
			b.Fatal(err)
		}
		if i >= 0 {
			times = append(times, r.Compute)
		}
		last = r
	}
	optest.ReportMedian(b, times)
	if op.Spec().Name == "pagerank" {
		b.ReportMetric(float64(times[len(times)/2])/1e6/float64(last.Iterations), "ms/iteration")
	} else {
		b.ReportMetric(float64(last.Iterations), "iterations")
	}
	b.Logf("%s", last.Strategy)
}

func BenchmarkGPUPageRankLayouts(b *testing.B) {
	gb := benchGPU(b)
	for _, c := range []struct {
		name        string
		p           operators.Params
		hub, stream bool
	}{
		{"vwc-hub-f64", operators.Params{Strategy: "vwc"}, true, true},
		{"vwc-hub-nostream-f64", operators.Params{Strategy: "vwc"}, true, false},
		{"vwc-plain-f64", operators.Params{Strategy: "vwc"}, false, true},
		{"vwc-plain-nostream-f64", operators.Params{Strategy: "vwc"}, false, false},
		{"vwc-hub-f32", operators.Params{Strategy: "vwc", Tolerance: 1e-6}, true, true},
		{"vwc-plain-f32", operators.Params{Strategy: "vwc", Tolerance: 1e-6}, false, true},
		{"vwc-hub-f64-k16", operators.Params{Strategy: "vwc", VWarp: 16}, true, true},
		{"vwc-hub-f64-dynamic", operators.Params{Strategy: "vwc", Dynamic: true}, true, true},
		{"vwc-hub-f64-defer4096", operators.Params{Strategy: "vwc", DeferOutliers: 4096}, true, true},
		{"gshards-f64", operators.Params{Strategy: "gshards"}, true, true},
		{"cw-f64", operators.Params{Strategy: "cw"}, true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			gb.tune.noHubOrder, gb.tune.noStreamHint = !c.hub, !c.stream
			gb.Forget(optest.BenchGraph(b))
			// At most 20 iterations; float64 contributions run all 20.
			p := c.p
			if p.Tolerance == 0 {
				p.Tolerance = 1e-300
			}
			p.MaxIterations = 20
			benchGPUOp(b, gb, operators.PageRank{}, p)
		})
	}
}

func BenchmarkGPUSSSPSweep(b *testing.B) {
	gb := benchGPU(b)
	for _, c := range []operators.Params{
		{Strategy: "vwc"}, {Strategy: "vwc", Delta: 16}, {Strategy: "vwc", Delta: 48}, {Strategy: "vwc", Delta: 128},
		{Strategy: "vwc", Delta: 512}, {Strategy: "vwc", Delta: 1e12}, {Strategy: "vwc", VWarp: 8},
		{Strategy: "vwc", VWarp: 16}, {Strategy: "vwc", DeferOutliers: 256}, {Strategy: "vwc", DeferOutliers: -1},
		{Strategy: "vwc", Dynamic: true, ChunkSize: 256},
	} {
		b.Run(fmt.Sprintf("%+v", c), func(b *testing.B) { benchGPUOp(b, gb, operators.SSSP{}, c) })
	}
}
