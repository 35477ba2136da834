package gpuop

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/internal/optest"
)

// persistModes force each way the persistent searches run a step: every
// level in every block (no single-block runs), every level in block 0
// (the other blocks only wait at the barrier), a grid of two blocks (a
// frontier's vertices dealt between them), the defaults, and for BFS
// every level in every block with each block keeping one push in shared
// memory (the rest through the queue, no prefetch, the CSR) or all of
// them, levels (SSSP: rounds of a near step) in lockstep (span 1), blocks
// running up to 16 ahead of each other, a BFS queue of 2 entries at
// span 8, which overflows and runs the search again at span 1, the whole
// graph searched where its chains' contraction would be, and the
// contraction searched by the near-far SSSP where Bellman-Ford would run.
var persistModes = []struct {
	name              string
	single            int64
	blocks            int
	keep              uint32
	noPrefetch, noELL bool
	span, queueCap    uint32
	noChains          bool
	chainsNearFar     bool
}{
	{name: "multi-block", single: -1}, {name: "single-block", single: 1 << 40},
	{name: "two-blocks", single: 40, blocks: 2}, {name: "default"},
	{name: "keep-one-csr", single: -1, keep: 1, noPrefetch: true, noELL: true, noChains: true},
	{name: "keep-all", single: -1, keep: persistKeptMost, noChains: true},
	{name: "span-1", span: 1}, {name: "span-16", single: -1, span: 16, noChains: true},
	{name: "span-16-keep-5", single: -1, keep: 5, span: 16, noChains: true},
	{name: "overflow", single: -1, keep: 1, span: 8, queueCap: 2, noChains: true},
	{name: "no-chains", noChains: true},
	{name: "chains-near-far", chainsNearFar: true}, {name: "chains-near-far-multi", single: -1, chainsNearFar: true},
	{name: "chains-near-far-two-blocks", single: 40, blocks: 2, chainsNearFar: true},
}

// persistGraphs are the graphs the modes run on: grids, roads, chains, a
// Kronecker graph and the real road graphs, directed and undirected.
func persistGraphs(t *testing.T) []optest.VPGraph {
	seed := optest.FreshSeed(t)
	shapes := append(optest.GridShapes(seed), optest.RoadShapes(t, seed)...)
	shapes = append(shapes, optest.ChainShapes(seed)...)
	shapes = append(shapes, optest.Shape{Name: "kronecker-12", Edges: optest.KroneckerEdges(t, 12, 16, seed+9)})
	var list []optest.VPGraph
	for _, s := range shapes {
		for _, directed := range []bool{true, false} {
			list = append(list, optest.VPGraph{Name: fmt.Sprintf("%s/directed=%v", s.Name, directed),
				G: optest.BuildGraph(t, s, directed, true, edges.KeyInt64), Integers: true})
		}
	}
	for _, rg := range optest.RealGraphs(t) {
		if strings.HasPrefix(rg.Name, "luxembourg") || strings.HasPrefix(rg.Name, "rome99") {
			list = append(list, optest.VPGraph{Name: rg.Name, G: rg.G, Integers: true})
		}
	}
	return list
}

// TestGPUPersistModes runs the persistent BFS and SSSP in every mode
// against the CPU, and checks that each mode ran as forced.
func TestGPUPersistModes(t *testing.T) {
	b := testGPU(t)
	ellRuns, overflows, ssspRounds, chainRuns, nearFarRuns, bfRuns := 0, 0, 0, 0, 0, 0
	for _, vg := range persistGraphs(t) {
		g := vg.G
		srcs := optest.SourcesOf(g)
		if strings.HasPrefix(vg.Name, "chains-") {
			srcs = append(srcs, chainSources(g)...)
		}
		for _, src := range srcs {
			depth := run(t, operators.BFS{}, g, src, operators.Params{}).Column("depth").Int32
			dist := optest.UnreachedInf(run(t, operators.SSSP{}, g, src, operators.Params{}).Column("distance").Float64)
			for _, m := range persistModes {
				b.tune.persistSingle, b.tune.persistBlocks = m.single, m.blocks
				b.tune.persistKeep, b.tune.noPersistPrefetch, b.tune.noPersistELL = m.keep, m.noPrefetch, m.noELL
				b.tune.persistSpan, b.tune.persistQueueCap, b.tune.noChains = m.span, m.queueCap, m.noChains
				b.tune.noChainBF = m.chainsNearFar
				name := fmt.Sprintf("%s/src=%d/%s", vg.Name, src, m.name)
				strategy := checkPersistBFS(t, b, name, g, src, depth, m.single, m.keep)
				if strings.Contains(strategy, "overflowed") {
					overflows++
				}
				chains := strings.Contains(strategy, chainsWords)
				if chains != (b.persistChains(g, nil) != nil) || chains && m.noChains ||
					chains && m.chainsNearFar && strings.Contains(strategy, "Bellman-Ford") {
					t.Errorf("%s/bfs: %q (no chains: %v, near-far: %v)", name, strategy, m.noChains, m.chainsNearFar)
				}
				if chains && m.chainsNearFar {
					nearFarRuns++
				}
				if strings.Contains(strategy, "Bellman-Ford") {
					bfRuns++
				}
				if chains {
					chainRuns++
					if m.keep == 0 && m.queueCap == 0 {
						ssspRounds += checkPersistSSSP(t, b, name, g, src, dist)
					}
					continue
				}
				ell := b.persistELLWidth(g) > 0
				if strategy != "" && strings.Contains(strategy, "ELL width") != ell {
					t.Errorf("%s/bfs: %q on a graph of max out-degree %d (ELL copy: %v)", name, strategy, g.Degrees().Max, ell)
				}
				if ell {
					ellRuns++
				}
				if m.keep == 0 && m.queueCap == 0 {
					ssspRounds += checkPersistSSSP(t, b, name, g, src, dist)
				}
			}
			b.tune.persistSingle, b.tune.persistBlocks, b.tune.persistKeep = 0, 0, 0
			b.tune.noPersistPrefetch, b.tune.noPersistELL, b.tune.persistSpan, b.tune.persistQueueCap = false, false, 0, 0
			b.tune.noChains, b.tune.noChainBF = false, false
		}
		b.Forget(g)
	}
	if ellRuns == 0 {
		t.Error("no search ran on an ELL copy: the grids and roads should")
	}
	if overflows == 0 {
		t.Error("no search overflowed a queue of 2 entries and ran again at span 1")
	}
	if ssspRounds == 0 {
		t.Error("no SSSP step ran a round past its first")
	}
	if chainRuns == 0 || nearFarRuns == 0 || bfRuns == 0 {
		t.Errorf("%d searches ran on a chains' contraction, %d of them near-far, %d Bellman-Ford: the chain shapes, path-6000 and luxembourg_osm should run all",
			chainRuns, nearFarRuns, bfRuns)
	}
}

// chainSources are, on an undirected graph of chains (ChainShapes), a
// vertex inside a chain between two junctions, and one inside a chain from
// a junction back to itself or a cycle of degree-2 vertices alone.
func chainSources(g *convert.Graph) []uint32 {
	c, err := g.Chains(false)
	if err != nil {
		return nil
	}
	var srcs []uint32
	for _, loop := range []bool{false, true} {
		for v, r := range c.Role {
			if ch := r &^ convert.InteriorBit; r&convert.InteriorBit != 0 && (c.Ends[2*ch] == c.Ends[2*ch+1]) == loop {
				srcs = append(srcs, uint32(v))
				break
			}
		}
	}
	return srcs
}

// chainsWords mark a persistent search of a chains' contraction in its
// description (chainSearch.describe).
const chainsWords = "on the chains contracted"

// checkPersistBFS runs the persistent BFS on g from src against the CPU's
// depths and returns its description ("" where it failed).
func checkPersistBFS(t *testing.T, b *GPU, name string, g *convert.Graph, src uint32, want []int32, single int64, keep uint32) string {
	t.Helper()
	r, err := runGPUErr(t, b, operators.BFS{}, g, src, operators.Params{Strategy: "persist"})
	if err != nil {
		t.Errorf("%s/bfs: %v", name, err)
		return ""
	}
	if err := optest.ValidateBFS(g, src, r.Column("depth").Int32, r.Column("parent").Vertex, want); err != nil {
		t.Errorf("%s/bfs (%s): %v", name, r.Strategy, err)
	}
	if strings.Contains(r.Strategy, chainsWords) { // its steps are the SSSP's (checkPersistSSSP)
		if levels := int(slices.Max(want)) + 1; r.Iterations != levels {
			t.Errorf("%s/bfs: %d levels, want %d (%s)", name, r.Iterations, levels, r.Strategy)
		}
		return r.Strategy
	}
	singles, multis := optest.StrategyCount(r.Strategy, "single-block levels"), optest.StrategyCount(r.Strategy, "multi-block steps")
	// A step runs one level in lockstep, up to span when blocks run ahead
	// (and a step may then only lower depths another block claimed).
	span := optest.StrategyCount(r.Strategy, "levels a step")
	if want := b.bfsSpan(); span != int(want) && !strings.Contains(r.Strategy, "overflowed") {
		t.Errorf("%s/bfs: %q, want %d levels a step", name, r.Strategy, want)
	}
	if singles+span*multis < r.Iterations || span == 1 && singles+multis != r.Iterations ||
		single < 0 && singles > 0 || single > 1<<30 && multis > 0 {
		t.Errorf("%s/bfs: %q for %d levels", name, r.Strategy, r.Iterations)
	}
	// Keeping every push, the levels after the first read no queue entry
	// while a block's pushes fit its shared memory: whole steps, or past
	// span 1 a step's levels after its first.
	local := optest.StrategyCount(r.Strategy, "of them from shared memory only")
	if keep >= persistKeptMost && multis > 1 && local == 0 && !(span > 1 && persistLevelsABlock(r.Strategy) > 1) {
		t.Errorf("%s/bfs: %q: no level ran from the blocks' kept entries alone", name, r.Strategy)
	}
	return r.Strategy
}

// persistLevelsABlock is the levels a block ran in a multi-block step, on
// average, that a persistent BFS's description gives.
func persistLevelsABlock(strategy string) float64 {
	m := regexp.MustCompile(`of ([0-9.]+) levels a block`).FindStringSubmatch(strategy)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// checkPersistSSSP runs the persistent SSSP on g from src, with Δ from
// the weights and Δ = 1, against the CPU's distances, and returns the
// rounds its steps ran past their first.
func checkPersistSSSP(t *testing.T, b *GPU, name string, g *convert.Graph, src uint32, ref []float64) int {
	t.Helper()
	rounds := 0
	for _, p := range []operators.Params{{Strategy: "persist"}, {Strategy: "persist", Delta: 1}} {
		r, err := runGPUErr(t, b, operators.SSSP{}, g, src, p)
		if err != nil {
			t.Errorf("%s/sssp/delta=%v: %v", name, p.Delta, err)
			continue
		}
		prog := b.SSSPProgram(g)
		if chains := b.persistChains(g, &prog) != nil; strings.Contains(r.Strategy, chainsWords) != chains {
			t.Errorf("%s/sssp/delta=%v: %q (on the chains: %v)", name, p.Delta, r.Strategy, chains)
		}
		more := optest.StrategyCount(r.Strategy, "rounds more in all blocks")
		if span := optest.StrategyCount(r.Strategy, "rounds a step"); !strings.Contains(r.Strategy, "Bellman-Ford") &&
			(span != int(b.ssspSpan()) || span == 1 && more > 0) {
			t.Errorf("%s/sssp/delta=%v: %q, want up to %d rounds a step", name, p.Delta, r.Strategy, b.ssspSpan())
		}
		rounds += more
		dist := r.Column("distance").Float64
		if err := optest.ValidateSSSP(g, src, dist, r.Column("parent").Vertex, ref); err != nil {
			t.Errorf("%s/sssp/delta=%v (%s): %v", name, p.Delta, r.Strategy, err)
			continue
		}
		for v := range dist {
			if !(dist[v] == ref[v] || math.IsNaN(dist[v]) && math.IsInf(ref[v], 1)) {
				t.Errorf("%s/sssp/delta=%v: vertex %d distance %v, the CPU's %v", name, p.Delta, v, dist[v], ref[v])
				break
			}
		}
	}
	return rounds
}

// BenchmarkGPUGridBarrier times kernels/persist.cu's grid barrier alone,
// one block of 1024 threads an SM: the floor of a persistent level's cost.
func BenchmarkGPUGridBarrier(b *testing.B) {
	gb := benchGPU(b)
	k, err := gb.Kernel(kernels.Persist, "persist_barrier_bench")
	if err != nil {
		b.Fatal(err)
	}
	most, err := k.Fn.CooperativeGrid(persistThreads, 0)
	if err != nil {
		b.Fatal(err)
	}
	bufs, free, err := gb.Buffers(256, 8)
	if err != nil {
		b.Fatal(err)
	}
	defer free()
	s, err := gb.ctx.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	for _, blocks := range []int{1, 8, 32, gb.Device().SMs, most} {
		b.Run(fmt.Sprintf("blocks=%d", blocks), func(b *testing.B) {
			const rounds = 20000
			var times []time.Duration
			for i := -1; i < b.N; i++ {
				if err := bufs[0].Memset8(s, 0); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := gpu.LaunchCooperative(k.Fn, gpu.Dim(uint32(blocks)), gpu.Dim(persistThreads), 0, s, bufs[0], uint32(rounds), bufs[1]); err != nil {
					b.Fatal(err)
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
				if i >= 0 {
					times = append(times, time.Since(start))
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/rounds/1e3, "µs/barrier")
		})
	}
}

// persistBenchGraph is GPIPE_BENCH_PERSIST's graph, undirected: grid:RxC
// or road:N (default the 2048 × 2048 grid), weighted, or file:PATH,
// weighted where the file has weights.
func persistBenchGraph(b *testing.B) *convert.Graph {
	spec := optest.BenchPersistSpec()
	var tab *edges.Table
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		t, err := ingest.Open(context.Background(), path, nil, edges.Options{})
		if err != nil {
			b.Fatal(err)
		}
		tab = t
	} else {
		gn, err := gen.Parse(spec, 1, true)
		if err != nil {
			b.Fatal(err)
		}
		if tab, err = gn.Generate(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	g, err := convert.Build(context.Background(), tab, convert.BuildOptions{Undirected: true, Weighted: tab.HasWeight, Weights: convert.NonNegativeWeights})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d vertices, %d directed edges", spec, g.NumVertices(), g.NumEdges())
	return g
}

// benchNumber is the number a BenchmarkGPUPersist case names after knob
// ("...-keepN", "...-spanN"), 0 (the default) where it names none.
func benchNumber(name, knob string) uint32 {
	_, n, ok := strings.Cut(name, knob)
	if !ok {
		return 0
	}
	digits := len(n) - len(strings.TrimLeft(n, "0123456789"))
	k, _ := strconv.ParseUint(n[:digits], 10, 32)
	return uint32(k)
}

// benchThreads is the block a BenchmarkGPUPersist case names
// ("...-NNNthreads"), 0 (the kernel's) where it names none.
func benchThreads(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(strings.TrimSuffix(name[i+1:], "threads"))
	if err != nil || !strings.HasSuffix(name, "threads") {
		return 0
	}
	return n
}

// BenchmarkGPUPersist sweeps the persistent searches' single-block limit and
// grid on GPIPE_BENCH_PERSIST's graph, beside bfs4k, enterprise and kites:
//
//	GPIPE_BENCH_PERSIST=grid:2048x2048 operators.test -test.run XXX -test.bench GPUPersist -test.benchtime 8x
func BenchmarkGPUPersist(b *testing.B) {
	gb := benchGPU(b)
	g := persistBenchGraph(b)
	srcs := optest.BenchSources(g, 64)
	for _, c := range []struct {
		name   string
		op     operators.Operator
		p      operators.Params
		single int64
		blocks int
	}{
		{"bfs/persist", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-nochains", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-nearfar", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-single64", operators.BFS{}, operators.Params{Strategy: "persist"}, 64, 0},
		{"bfs/persist-single32", operators.BFS{}, operators.Params{Strategy: "persist"}, 32, 0},
		{"bfs/persist-single16", operators.BFS{}, operators.Params{Strategy: "persist"}, 16, 0},
		{"bfs/persist-single64-span16", operators.BFS{}, operators.Params{Strategy: "persist"}, 64, 0},
		{"bfs/persist-single64-span128", operators.BFS{}, operators.Params{Strategy: "persist"}, 64, 0},
		{"bfs/persist-single1024", operators.BFS{}, operators.Params{Strategy: "persist"}, 1024, 0},
		{"bfs/persist-multi", operators.BFS{}, operators.Params{Strategy: "persist"}, -1, 0},
		{"bfs/persist-single4096", operators.BFS{}, operators.Params{Strategy: "persist"}, 4096, 0},
		{"bfs/persist-66blocks", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 66},
		{"bfs/persist-33blocks", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 33},
		{"bfs/persist-16blocks", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 16},
		{"bfs/persist-keep1", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-keep256", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-keep960", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-noprefetch", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-csr", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-csr-keep1", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-512threads", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-span1", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-span2", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-span8", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-span4", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-span32", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-span64", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-256threads", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-1024threads", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-span16-1024threads", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/persist-keep960-span8", operators.BFS{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"bfs/bfs4k", operators.BFS{}, operators.Params{Strategy: "bfs4k"}, 0, 0},
		{"sssp/persist", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-nochains", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-nearfar", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-64blocks", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 64},
		{"sssp/persist-1024threads", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-single1024", operators.SSSP{}, operators.Params{Strategy: "persist"}, 1024, 0},
		{"sssp/persist-single4096", operators.SSSP{}, operators.Params{Strategy: "persist"}, 4096, 0},
		{"sssp/persist-single64", operators.SSSP{}, operators.Params{Strategy: "persist"}, 64, 0},
		{"sssp/persist-single32", operators.SSSP{}, operators.Params{Strategy: "persist"}, 32, 0},
		{"sssp/persist-single16", operators.SSSP{}, operators.Params{Strategy: "persist"}, 16, 0},
		{"sssp/persist-delta32", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-delta128", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-delta512", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-delta2048", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-16blocks", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 16},
		{"sssp/persist-span256", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span1024", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-128threads", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-multi", operators.SSSP{}, operators.Params{Strategy: "persist"}, -1, 0},
		{"sssp/persist-66blocks", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 66},
		{"sssp/persist-33blocks", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 33},
		{"sssp/persist-fixed", operators.SSSP{}, operators.Params{Strategy: "persist", Delta: gpuSSSPDelta(g, operators.Params{})}, 0, 0},
		{"sssp/persist-fixed4x", operators.SSSP{}, operators.Params{Strategy: "persist", Delta: 4 * gpuSSSPDelta(g, operators.Params{})}, 0, 0},
		{"sssp/persist-512threads", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span1", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span4", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span16", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span32", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span8", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span64", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span128", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span32-512threads", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/persist-span64-512threads", operators.SSSP{}, operators.Params{Strategy: "persist"}, 0, 0},
		{"sssp/kites", operators.SSSP{}, operators.Params{Strategy: "kites"}, 0, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			gb.tune.persistSingle, gb.tune.persistBlocks = c.single, c.blocks
			gb.tune.persistKeep, gb.tune.noPersistPrefetch = benchNumber(c.name, "-keep"), strings.HasSuffix(c.name, "-noprefetch")
			gb.tune.noPersistELL = strings.Contains(c.name, "-csr")
			gb.tune.persistThreads, gb.tune.persistSpan = benchThreads(c.name), benchNumber(c.name, "-span")
			gb.tune.noChains = strings.HasSuffix(c.name, "-nochains")
			gb.tune.noChainBF = strings.HasSuffix(c.name, "-nearfar")
			defer func() {
				gb.tune.persistSingle, gb.tune.persistBlocks, gb.tune.persistKeep = 0, 0, 0
				gb.tune.noPersistPrefetch, gb.tune.noPersistELL, gb.tune.persistThreads = false, false, 0
				gb.tune.persistSpan, gb.tune.noChains, gb.tune.noChainBF = 0, false, false
			}()
			p := c.p
			if d := benchNumber(c.name, "-delta"); d > 0 {
				p.Delta = float64(d)
			}
			if err := c.op.Prepare(&p); err != nil {
				b.Fatal(err)
			}
			var times []time.Duration
			var last *operators.Result
			for i := -1; i < b.N; i++ {
				r, err := gb.Run(context.Background(), c.op, operators.Input{Graph: g, Source: srcs[(i+1)%len(srcs)], Params: p})
				if err != nil {
					b.Fatal(err)
				}
				if i >= 0 {
					times = append(times, r.Compute)
				}
				last = r
			}
			optest.ReportMedian(b, times)
			b.ReportMetric(float64(last.Iterations), "iterations")
			b.Logf("%s", last.Strategy)
		})
	}
}

// TestPersistELLWidth checks which graphs the persistent BFS reads through
// an ELL copy: grids and roads (low, even degrees) do, a graph with a
// vertex of more than persistELLMax edges does not, and tuning turns it
// off.
func TestPersistELLWidth(t *testing.T) {
	seed := optest.FreshSeed(t)
	grid := optest.BuildGraph(t, optest.GridShapes(seed)[0], false, false, edges.KeyInt64)
	if w := (*GPU)(nil).persistELLWidth(grid); w != int(grid.Degrees().Max) || w < 2 || w > 4 {
		t.Errorf("grid of max degree %d: width %d", grid.Degrees().Max, w)
	}
	var leaves []optest.Edge
	for v := range int64(persistELLMax + 1) {
		leaves = append(leaves, optest.Edge{U: 0, V: v + 1, W: 1})
	}
	star := optest.BuildGraph(t, optest.Shape{Name: "star", Edges: leaves}, false, false, edges.KeyInt64)
	if w := (*GPU)(nil).persistELLWidth(star); w != 0 {
		t.Errorf("star of %d leaves: width %d, want the CSR", persistELLMax+1, w)
	}
	if w := (&GPU{tune: tuning{noPersistELL: true}}).persistELLWidth(grid); w != 0 {
		t.Errorf("noPersistELL: width %d", w)
	}
}

// TestPersistQueueCap checks the persistent BFS's queue: each vertex once
// at span 1, twice past it (a vertex whose depth a block lowers enters
// again), at least one entry, and never past a 32-bit count.
func TestPersistQueueCap(t *testing.T) {
	for _, c := range []struct {
		n    int64
		span uint32
		want uint32
	}{
		{0, 1, 1}, {0, 32, 1}, {1, 1, 1}, {1000, 1, 1000}, {1000, 2, 2000}, {1000, 32, 2000},
		{math.MaxUint32 - 2, 1, math.MaxUint32 - 2}, {math.MaxUint32 - 2, 32, math.MaxUint32},
	} {
		if got := persistQueueCap(c.n, c.span); got != c.want {
			t.Errorf("persistQueueCap(%d, %d) = %d, want %d", c.n, c.span, got, c.want)
		}
	}
}

// TestPersistDescriptions checks that the persistent searches' descriptions
// give the counts the GPU tests read back by their words.
func TestPersistDescriptions(t *testing.T) {
	bfs := bfspRan{blocks: 132, singleRuns: 2, singleLevels: 288, multiSteps: 81, localSteps: 75, phases: 81 * 132 * 9,
		width: 4, span: 32, retried: true}
	s := bfs.String()
	for label, want := range map[string]int{"single-block levels": 288, "multi-block steps": 81, "levels a step": 32,
		"of them from shared memory only": 75} {
		if got := optest.StrategyCount(s, label); got != want {
			t.Errorf("%q: %q is %d, want %d", s, label, got, want)
		}
	}
	if got := persistLevelsABlock(s); got != 9 || !strings.Contains(s, "overflowed") || !strings.Contains(s, "ELL width 4") {
		t.Errorf("%q: %v levels a block, want 9, the overflow and the ELL width", s, got)
	}
	sssp := ssspRan{blocks: 132, deltaStart: 8, deltaMost: 8, near: 155, splits: 74, span: 64, rounds: 312080}
	s = sssp.String()
	for label, want := range map[string]int{"rounds a step": 64, "rounds more in all blocks": 312080, "split steps": 74} {
		if got := optest.StrategyCount(s, label); got != want {
			t.Errorf("%q: %q is %d, want %d", s, label, got, want)
		}
	}
}
