package vpgpu

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/internal/optest"
	"github.com/gpipe/gpipe/operators/vprog"
)

// TestBenchPrograms is the vertex programs' benchmark on a GPU machine
// (GPIPE_VP_BENCH=1; GPIPE_BENCH_SCALE, 22 for the table): CuSha's
// five programs gpipe has built in, as programs, against the built-in
// operators on the Kronecker graph and the real graphs; NN, HS and CS
// per strategy beside the CPU; the five per strategy (those tables first:
// the comparison with the built-ins was measured before the strategies).
// GPIPE_VP_BENCH_PARTS picks tables (sums, real, kron, builtins: the five
// per strategy on the real graphs and on Kronecker, the built-ins).
// Times are the backends' own
// (CUDA events; the CPU's wall clock), medians of three after a warm-up;
// the table goes to the log and to $GPIPE_VP_BENCH_OUT.
func TestBenchPrograms(t *testing.T) {
	if os.Getenv("GPIPE_VP_BENCH") != "1" {
		t.Skip("GPIPE_VP_BENCH=1 runs the benchmark")
	}
	c := device(t)
	builtin := gpuop.NewGPU(c)
	defer builtin.Close()
	var rows []string
	add := func(format string, args ...any) {
		rows = append(rows, fmt.Sprintf(format, args...))
		t.Log(rows[len(rows)-1])
	}
	var kron, reals []benchGraph // built only for the parts that read them
	if benchPart("kron") || benchPart("builtins") {
		kron = []benchGraph{{fmt.Sprintf("kronecker-%d", optest.BenchScale()), optest.BenchGraph(t)}}
	}
	if benchPart("real") || benchPart("builtins") {
		for _, rg := range optest.RealGraphs(t) {
			if strings.HasSuffix(rg.Name, "/undirected") {
				reals = append(reals, benchGraph{rg.Name, rg.G})
			}
		}
	}
	if benchPart("sums") {
		benchSums(t, c, add)
		rows = append(rows, "")
	}
	if benchPart("real") {
		benchStrategies(t, c, reals, add)
		rows = append(rows, "")
	}
	if benchPart("kron") {
		benchStrategies(t, c, kron, add)
		rows = append(rows, "")
	}
	var list []benchGraph
	if benchPart("builtins") {
		list = append(kron, reals...)
	}
	add("| graph | algorithm | built-in (strategy) | ms | iterations | program (its strategy) | ms | iterations | ratio |")
	add("|---|---|---|---|---|---|---|---|---|")
	pairs := [][2]string{{"bfs", "bfs"}, {"sssp", "sssp"}, {"pagerank", "pr"}, {"cc", "cc"}, {"sswp", "sswp"}}
	for _, b := range list {
		src := optest.BenchSources(b.g, 1)[0]
		for _, pair := range pairs {
			op, _ := operators.Lookup(pair[0])
			bt, bres := median(t, builtin, op, b.g, src)
			prog := &vprog.Operator{Prog: example(t, pair[1])}
			pt, pres := median(t, Backend{Ctx: c}, prog, b.g, src)
			add("| %s | %s | %s | %.2f | %d | %s, %s | %.2f | %d | %.2f |", b.name, pair[0], bres.Strategy, ms(bt), bres.Iterations,
				pres.Strategy, pres.StrategyReason[strings.LastIndex(pres.StrategyReason, ";")+2:], ms(pt), pres.Iterations, ms(pt)/ms(bt))
		}
	}
	if out := os.Getenv("GPIPE_VP_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// strategyConfigs are the columns of the per-strategy tables: each
// strategy (vwc at its auto K: the K=1 and K=32 columns were measured
// with vwc alone, BENCHMARKS.md).
func strategyConfigs() []Options {
	var list []Options
	for _, s := range vprog.Strategies() {
		list = append(list, Options{Strategy: s})
	}
	return list
}

const strategyHeader = "vwc (auto K) ms | warpseg ms | kites ms | gshards ms | auto's choice"

// benchRuns is the timed runs of a configuration (after a warm-up):
// GPIPE_VP_BENCH_RUNS, 3 by default.
func benchRuns() int {
	if n, err := strconv.Atoi(os.Getenv("GPIPE_VP_BENCH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// benchPart says whether GPIPE_VP_BENCH_PARTS (a comma list; all when
// unset) names part.
func benchPart(part string) bool {
	parts := os.Getenv("GPIPE_VP_BENCH_PARTS")
	return parts == "" || slices.Contains(strings.Split(parts, ","), part)
}

// strategyCells times p on in with each of strategyConfigs (the median of
// benchRuns after a warm-up, on one upload), checks each result against
// want, and ends with auto's choice.
func strategyCells(t *testing.T, c *gpu.Context, name string, p *vprog.Program, in vprog.Input, want *vprog.Outcome) []string {
	var cells []string
	for _, o := range strategyConfigs() {
		times := repeated(t, c, name, p, in, o, want)
		slices.Sort(times)
		cells = append(cells, fmt.Sprintf("%.2f", ms(times[len(times)/2])))
	}
	auto, _ := choose(p, in.Graph)
	return append(cells, auto)
}

// repeated runs p with o once to warm up, then benchRuns times on the
// same upload (restarted each time), checks each outcome against want,
// and returns the timed runs' compute times.
func repeated(t *testing.T, c *gpu.Context, name string, p *vprog.Program, in vprog.Input, o Options, want *vprog.Outcome) []time.Duration {
	st, err := plan(p, in.Graph, o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(c, p, in, st)
	if err != nil {
		t.Fatalf("%s (%+v): %v", name, o, err)
	}
	defer r.free()
	var times []time.Duration
	for i := 0; i <= benchRuns(); i++ {
		if i > 0 {
			if err := r.restart(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := r.iterate(context.Background())
		if err != nil {
			t.Fatalf("%s (%+v): %v", name, o, err)
		}
		if err := same(p, got, want); err != nil {
			t.Errorf("%s (%s, %s), run %d: %v", name, st.Strategy, st.Shape(), i, err)
		}
		if i > 0 {
			times = append(times, st.Compute)
		}
	}
	return times
}

// benchStrategies times bfs, sssp, pagerank, cc and sswp as programs with
// every strategy on the benchmark graphs.
func benchStrategies(t *testing.T, c *gpu.Context, list []benchGraph, add func(string, ...any)) {
	add("| graph | program | iterations | %s |", strategyHeader)
	add("|---|---|---|---|---|---|---|---|")
	for _, b := range list {
		src := optest.BenchSources(b.g, 1)[0]
		for _, name := range []string{"bfs", "sssp", "pr", "cc", "sswp"} {
			p := example(t, name)
			in := vprog.Input{Graph: b.g, Source: int64(src)}
			want, err := vprog.RunCPU(context.Background(), p, in)
			if err != nil {
				t.Fatal(err)
			}
			add("| %s | %s | %d | %s |", b.name, name, want.Iterations, strings.Join(strategyCells(t, c, name, p, in, want), " | "))
		}
	}
}

// benchSums times NN, HS and CS on the Kronecker graph with every
// strategy, and on the CPU; HS and CS stop after 20 iterations.
func benchSums(t *testing.T, c *gpu.Context, add func(string, ...any)) {
	add("| graph | program | iterations | CPU ms | %s |", strategyHeader)
	add("|---|---|---|---|---|---|---|---|---|")
	scale := optest.BenchScale()
	// NN and HS on coefficients that sum below 0.9 into every vertex;
	// CS on the benchmark graph's weights (any positive conductances).
	scaled := sumGraph(t, scale)
	for _, name := range []string{"nn", "hs", "cs"} {
		g := scaled
		if name == "cs" {
			g = optest.BenchGraph(t)
		}
		p := example(t, name)
		if name != "nn" {
			var err error
			if p, err = p.With(vprog.Options{MaxIterations: 20}); err != nil {
				t.Fatal(err)
			}
		}
		in := vprog.Input{Graph: g, Source: int64(optest.BenchSources(g, 1)[0])}
		start := time.Now()
		want, err := vprog.RunCPU(context.Background(), p, in)
		if err != nil {
			t.Fatal(err)
		}
		cpu := time.Since(start)
		add("| kronecker-%d | %s | %d | %.1f | %s |", scale, name, want.Iterations, ms(cpu), strings.Join(strategyCells(t, c, name, p, in, want), " | "))
	}
}

// sumGraph is the undirected Kronecker graph of scale with gpipe gen's
// hs_coeff column: 0.9·u/(deg(src)+deg(dst)).
func sumGraph(t *testing.T, scale int) *convert.Graph {
	ctx := context.Background()
	tab, err := gen.Kronecker{Scale: scale, EdgeFactor: 16, Seed: 1}.Generate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deg := make([]int32, 1<<scale)
	for _, ch := range tab.Chunks {
		for i, s := range ch.Src.Int64 {
			deg[s]++
			deg[ch.Dst.Int64[i]]++
		}
	}
	for ci := range tab.Chunks {
		ch := &tab.Chunks[ci]
		ch.Weight = make([]float64, len(ch.Src.Int64))
		for i, s := range ch.Src.Int64 {
			d := ch.Dst.Int64[i]
			u := math.Mod(float64(s*7919+d*104729)*0.6180339887, 1)
			ch.Weight[i] = 0.9 * (0.1 + 0.9*u) / float64(deg[s]+deg[d])
		}
	}
	tab.HasWeight = true
	g, err := convert.Build(ctx, tab, convert.BuildOptions{Undirected: true, Weighted: true, Weights: convert.FiniteWeights, BuildIn: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type benchGraph struct {
	name string
	g    *convert.Graph
}

// median runs op on b once to warm up, then three times, and returns the
// median of the results' compute times and the last result.
func median(t *testing.T, b operators.Backend, op operators.Operator, g *convert.Graph, src uint32) (time.Duration, *operators.Result) {
	t.Helper()
	var times []time.Duration
	var res *operators.Result
	for i := 0; i < 4; i++ {
		p := operators.Params{Source: "x"}
		if err := op.Prepare(&p); err != nil {
			t.Fatal(err)
		}
		r, err := b.Run(context.Background(), op, operators.Input{Graph: g, Source: src, Params: p})
		if err != nil {
			t.Fatalf("%s: %v", op.Spec().Name, err)
		}
		if i > 0 {
			times = append(times, r.Compute)
		}
		res = r
	}
	slices.Sort(times)
	return times[len(times)/2], res
}
