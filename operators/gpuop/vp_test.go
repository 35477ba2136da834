package gpuop

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

// The vertex-program engine's operators against the CPU: every strategy
// and its options, on the random shapes, grids and real graphs, directed
// and undirected, unweighted, weighted and with the wide (8-byte) values
// forced. Failures are reported and the tests go on, so that one run on
// the GPU machine shows all of them.

// vpConfigs are the strategies and options sssp and sswp run with.
var vpConfigs = []operators.Params{
	{},
	{Strategy: "vwc", VWarp: 1},
	{Strategy: "vwc", VWarp: 4, DeferOutliers: 40, Dynamic: true, ChunkSize: 64},
	{Strategy: "vwc", VWarp: 32, DeferOutliers: -1, Delta: 0.7},
	{Strategy: "vwc", VWarp: 8, Delta: 1e12},
	{Strategy: "gshards"},
	{Strategy: "cw"},
	{Strategy: "warpseg"},
	{Strategy: "kites"},
	{Strategy: "kites", VertexGroup: 4, Delta: 0.7},
}

// ssspConfigs are sssp's: vpConfigs and the persistent search's.
var ssspConfigs = append(slices.Clone(vpConfigs), operators.Params{Strategy: "persist"}, operators.Params{Strategy: "persist", Delta: 0.7})

// ccConfigs are cc's.
var ccConfigs = []operators.Params{
	{},
	{Strategy: "afforest", VWarp: 1},
	{Strategy: "vwc"},
	{Strategy: "vwc", VWarp: 2, DeferOutliers: 40, Dynamic: true, ChunkSize: 32},
	{Strategy: "gshards"},
	{Strategy: "cw"},
	{Strategy: "warpseg"},
	{Strategy: "kites"},
	{Strategy: "kites", VertexGroup: 32},
}

// withWide runs fn with b's wide values on and off where the graph has
// weights.
func withWide(b *GPU, vg optest.VPGraph, fn func(wide bool)) {
	fn(false)
	if vg.G.Weighted {
		b.tune.wideValues = true
		defer func() { b.tune.wideValues = false }()
		fn(true)
	}
}

// runGPUErr is runGPU that reports instead of stopping the test.
func runGPUErr(t *testing.T, b *GPU, op operators.Operator, g *convert.Graph, src uint32, p operators.Params) (*operators.Result, error) {
	t.Helper()
	if err := op.Prepare(&p); err != nil {
		return nil, err
	}
	r, err := b.Run(context.Background(), op, operators.Input{Graph: g, Source: src, Params: p})
	if err != nil {
		return nil, err
	}
	if r.Backend != "gpu" || r.Compute <= 0 && g.NumVertices() > 0 || r.Strategy == "" || r.StrategyReason == "" {
		return nil, fmt.Errorf("result header backend=%q compute=%v strategy=%q reason=%q", r.Backend, r.Compute, r.Strategy, r.StrategyReason)
	}
	return r, nil
}

func TestGPUSSSPMatchesCPU(t *testing.T) {
	b := testGPU(t)
	for _, vg := range optest.VPGraphs(t) {
		if vg.Negative {
			continue
		}
		g := vg.G
		for _, src := range optest.SourcesOf(g) {
			want := run(t, operators.SSSP{}, g, src, operators.Params{})
			ref := optest.UnreachedInf(want.Column("distance").Float64)
			withWide(b, vg, func(wide bool) {
				for _, p := range ssspConfigs {
					name := fmt.Sprintf("%s/src=%d/wide=%v/%+v", vg.Name, src, wide, p)
					r, err := runGPUErr(t, b, operators.SSSP{}, g, src, p)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					dist, parent := r.Column("distance").Float64, r.Column("parent").Vertex
					if err := optest.ValidateSSSP(g, src, dist, parent, ref); err != nil {
						t.Errorf("%s (%s): %v", name, r.Strategy, err)
						continue
					}
					if vg.Integers {
						for v := range dist {
							if !(dist[v] == ref[v] || math.IsNaN(dist[v]) && math.IsInf(ref[v], 1)) {
								t.Errorf("%s: vertex %d distance %v, the CPU's %v (integer weights: must be equal)", name, v, dist[v], ref[v])
								break
							}
						}
					}
				}
			})
		}
		b.Forget(g)
	}
}

func TestGPUSSWPMatchesCPU(t *testing.T) {
	b := testGPU(t)
	for _, vg := range optest.VPGraphs(t) {
		g := vg.G
		for _, src := range optest.SourcesOf(g) {
			want := run(t, operators.SSWP{}, g, src, operators.Params{}).Column("width").Float64
			withWide(b, vg, func(wide bool) {
				for _, p := range vpConfigs {
					name := fmt.Sprintf("%s/src=%d/wide=%v/%+v", vg.Name, src, wide, p)
					r, err := runGPUErr(t, b, operators.SSWP{}, g, src, p)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					if err := optest.SameWidths(r.Column("width").Float64, want); err != nil {
						t.Errorf("%s (%s): %v", name, r.Strategy, err)
					}
				}
			})
		}
		b.Forget(g)
	}
}

func TestGPUCCMatchesCPU(t *testing.T) {
	b := testGPU(t)
	for _, vg := range optest.VPGraphs(t) {
		if vg.G.Weighted && !strings.Contains(vg.Name, "rome99") {
			continue // cc reads no weights
		}
		g := vg.G
		want := run(t, operators.CC{}, g, 0, operators.Params{}).Column("component").Vertex
		for _, p := range ccConfigs {
			name := fmt.Sprintf("%s/%+v", vg.Name, p)
			r, err := runGPUErr(t, b, operators.CC{}, g, 0, p)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			got := r.Column("component").Vertex
			if !slices.Equal(got, want) {
				for v := range got {
					if got[v] != want[v] {
						t.Errorf("%s (%s): vertex %d in component %d, the CPU's %d", name, r.Strategy, v, got[v], want[v])
						break
					}
				}
			}
		}
		b.Forget(g)
	}
}

// TestGPUPageRankStrategies runs PageRank in every Layout, at the default
// tolerance (float64 contributions) and at 1e-6 (float32), with and
// without the hubs-first numbering and the evict-first hint on the
// indices, on the shapes and the real graphs.
func TestGPUPageRankStrategies(t *testing.T) {
	b := testGPU(t)
	for _, vg := range optest.VPGraphs(t) {
		if vg.G.Weighted && !strings.Contains(vg.Name, "rome99") {
			continue // pagerank reads no weights
		}
		g := vg.G
		for _, tol := range []float64{0, 1e-6} {
			want := run(t, operators.PageRank{}, g, 0, operators.Params{Tolerance: tol})
			for _, c := range []struct {
				p           operators.Params
				hub, stream bool
			}{
				{operators.Params{Tolerance: tol}, true, true},
				{operators.Params{Tolerance: tol, Strategy: "vwc", VWarp: 4, Dynamic: true}, true, false},
				{operators.Params{Tolerance: tol, Strategy: "vwc", VWarp: 2}, false, true},
				{operators.Params{Tolerance: tol, Strategy: "gshards"}, true, true},
				{operators.Params{Tolerance: tol, Strategy: "cw"}, true, true},
				{operators.Params{Tolerance: tol, Strategy: "warpseg"}, true, true},
				{operators.Params{Tolerance: tol, Strategy: "warpseg"}, false, false},
			} {
				b.tune.noHubOrder, b.tune.noStreamHint = !c.hub, !c.stream
				name := fmt.Sprintf("%s/%+v/hub=%v/stream=%v", vg.Name, c.p, c.hub, c.stream)
				r, err := runGPUErr(t, b, operators.PageRank{}, g, 0, c.p)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if err := optest.SameRanks(ranksOf(r), ranksOf(want), g.NumVertices()); err != nil {
					t.Errorf("%s (%s): %v", name, r.Strategy, err)
				}
			}
			b.Forget(g) // the hub and plain layouts differ
		}
	}
}

// TestGPUStrategyOptions: options a strategy does not read are refused, and
// auto says why it chose.
func TestGPUStrategyOptions(t *testing.T) {
	b := testGPU(t)
	g := optest.BuildGraph(t, optest.Shapes(t)[4], true, true, edges.KeyInt64)
	for _, c := range []struct {
		op operators.Operator
		p  operators.Params
	}{
		{operators.SSSP{}, operators.Params{Strategy: "gshards", VWarp: 4}},
		{operators.SSWP{}, operators.Params{Strategy: "cw", Dynamic: true}},
		{operators.CC{}, operators.Params{Strategy: "afforest", DeferOutliers: 9}},
		{operators.PageRank{}, operators.Params{Strategy: "cw", ChunkSize: 9}},
		{operators.SSSP{}, operators.Params{Strategy: "vwc", VertexGroup: 4}},
		{operators.CC{}, operators.Params{Strategy: "warpseg", VertexGroup: 2}},
	} {
		if _, err := runGPUErr(t, b, c.op, g, 0, c.p); usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s %+v: %v, want a usage error", c.op.Spec().Name, c.p, err)
		}
	}
	for _, op := range []operators.Operator{operators.SSSP{}, operators.SSWP{}, operators.CC{}, operators.PageRank{}} {
		r, err := runGPUErr(t, b, op, g, 0, operators.Params{})
		if err != nil {
			t.Errorf("%s: %v", op.Spec().Name, err)
			continue
		}
		if !strings.HasPrefix(r.StrategyReason, "auto: ") {
			t.Errorf("%s under auto: reason %q", op.Spec().Name, r.StrategyReason)
		}
	}
}

// The tests below need no GPU.

func TestVPStateLayout(t *testing.T) {
	// kernels/vertex_program.cuh's VPState: 4 eight-byte fields, 8 four-byte
	// ones, 2 eight-byte Counters, 2 four-byte ones.
	if vpStateBytes != 88 || unsafe.Offsetof(vpState{}.Active) != 32 || unsafe.Offsetof(vpState{}.Outliers) != 56 || unsafe.Offsetof(vpState{}.Examined) != 64 {
		t.Fatalf("vpState is %d bytes, Active at %d, Outliers at %d, Examined at %d", vpStateBytes,
			unsafe.Offsetof(vpState{}.Active), unsafe.Offsetof(vpState{}.Outliers), unsafe.Offsetof(vpState{}.Examined))
	}
}

func TestOrderKeys(t *testing.T) {
	xs := []float64{math.Inf(-1), -1e300, -3.5, -1, -0.25, 0, 0.25, 1, 2, 3.5, 1e30, math.Inf(1)}
	for i, x := range xs {
		if x32 := float64(float32(x)); x32 == x {
			if got := fromKey32(Key32(x)); got != x {
				t.Errorf("Key32 of %v decodes to %v", x, got)
			}
			if Key32(x) == 0 {
				t.Errorf("Key32 of %v is the none key", x)
			}
		}
		if got := fromKey64(Key64(x)); got != x {
			t.Errorf("Key64 of %v decodes to %v", x, got)
		}
		if i > 0 {
			if Key64(xs[i-1]) >= Key64(x) {
				t.Errorf("Key64 does not order %v below %v", xs[i-1], x)
			}
			if float64(float32(xs[i-1])) == xs[i-1] && float64(float32(x)) == x && Key32(xs[i-1]) >= Key32(x) {
				t.Errorf("Key32 does not order %v below %v", xs[i-1], x)
			}
		}
	}
	if Key32(1) != 0xbf800000 || Key64(1) != 0xbff0000000000000 {
		t.Errorf("the keys of 1 are %#x and %#x, not vertex_program.cuh's", Key32(1), Key64(1))
	}
}

// TestCandidates: auto considers the strategies that read every option
// given (an option is meant for them), in its order for the graph (nil:
// a large one); a strategy named with an option it does not read is
// refused.
func TestCandidates(t *testing.T) {
	small := optest.BuildGraph(t, optest.Shapes(t)[4], true, false, edges.KeyInt64)
	for _, c := range []struct {
		op   string
		g    *convert.Graph
		p    operators.Params
		want []string
	}{
		{"pagerank", nil, operators.Params{}, []string{"warpseg", "vwc", "gshards", "cw"}},
		{"pagerank", nil, operators.Params{VWarp: 1}, []string{"vwc"}},
		{"sssp", small, operators.Params{}, []string{"cw", "vwc", "gshards", "kites", "warpseg", "persist"}},
		{"sssp", small, operators.Params{VertexGroup: 8}, []string{"kites"}},
		{"sssp", nil, operators.Params{DeferOutliers: 5}, []string{"vwc"}},
		{"cc", small, operators.Params{VWarp: 2}, []string{"afforest", "vwc"}},
		{"cc", small, operators.Params{Dynamic: true}, []string{"vwc"}},
	} {
		tab := tableOf(c.op)
		got, err := candidates(c.op, tab.order(tab, nil, c.g, c.p), c.p)
		var gotNames []string
		for _, ch := range got {
			gotNames = append(gotNames, ch.s.name)
		}
		if err != nil || !slices.Equal(gotNames, c.want) {
			t.Errorf("%s %+v: %v, %v; want %v", c.op, c.p, gotNames, err, c.want)
		}
	}
	err := Check(operators.CC{}, operators.Params{Strategy: "afforest", VWarp: 4, Dynamic: true})
	if usererr.KindOf(err) != usererr.Usage || !strings.Contains(err.Error(), "dynamic") || strings.Contains(err.Error(), "vwarp") {
		t.Errorf("afforest with --dynamic: %v", err)
	}
	if err := Check(operators.SSWP{}, operators.Params{Strategy: "gshards"}); err != nil {
		t.Errorf("sswp named gshards: %v", err)
	}
}

func TestVPProgramsFollowTheWeights(t *testing.T) {
	for _, c := range []struct {
		edges      []optest.Edge
		weighted   bool
		sssp, sswp Program
	}{
		{[]optest.Edge{{U: 0, V: 1, W: 3}, {U: 1, V: 2, W: 0}}, false, ssspUnit, sswpUnit},
		{[]optest.Edge{{U: 0, V: 1, W: 3}, {U: 1, V: 2, W: 0}}, true, ssspU32, sswpK32},
		{[]optest.Edge{{U: 0, V: 1, W: 0.5}, {U: 1, V: 2, W: 2}}, true, ssspF64, sswpK32},
		{[]optest.Edge{{U: 0, V: 1, W: 0.1}, {U: 1, V: 2, W: 2}}, true, ssspF64, sswpK64},
		{[]optest.Edge{{U: 0, V: 1, W: 3e9}, {U: 1, V: 2, W: 2}}, true, ssspF64, sswpK32},
	} {
		g := optest.BuildGraph(t, optest.Shape{Name: "w", Edges: c.edges}, true, c.weighted, edges.KeyInt64)
		if got := (*GPU)(nil).SSSPProgram(g); got != c.sssp {
			t.Errorf("%v weighted=%v: sssp %s, want %s", c.edges, c.weighted, got.Name, c.sssp.Name)
		}
		if got := (*GPU)(nil).SSWPProgram(g); got != c.sswp {
			t.Errorf("%v weighted=%v: sswp %s, want %s", c.edges, c.weighted, got.Name, c.sswp.Name)
		}
	}
}

func TestGPUSSSPDelta(t *testing.T) {
	g := optest.BuildGraph(t, optest.Shape{Name: "k", Edges: optest.KroneckerEdges(t, 10, 16, 1)}, false, true, edges.KeyInt64)
	if d := gpuSSSPDelta(g, operators.Params{Delta: 3}); d != 3 {
		t.Errorf("--delta 3 gives %v", d)
	}
	mean, _, _ := operators.SampleWeights(&g.Out)
	avg := float64(g.NumEdges()) / float64(g.NumVertices())
	if d := gpuSSSPDelta(g, operators.Params{}); d != math.Ceil(32*mean/avg) {
		t.Errorf("default delta %v, want ⌈32·%v/%v⌉", d, mean, avg)
	}
	zero := optest.BuildGraph(t, optest.Shape{Name: "z", Edges: []optest.Edge{{U: 0, V: 1, W: 0}, {U: 1, V: 2, W: 0}}}, true, true, edges.KeyInt64)
	if d := gpuSSSPDelta(zero, operators.Params{}); !math.IsInf(d, 1) {
		t.Errorf("zero weights: delta %v, want +Inf (no steps)", d)
	}
}

// TestGPUEngineSmoke runs every operator in every strategy once on a small
// directed weighted Kronecker graph: quick enough to run under
// compute-sanitizer (docs/gpu.md).
func TestGPUEngineSmoke(t *testing.T) {
	b := testGPU(t)
	g := optest.BuildGraph(t, optest.Shape{Name: "k10", Edges: optest.KroneckerEdges(t, 10, 8, 3)}, true, true, edges.KeyInt64)
	for _, op := range []operators.Operator{operators.SSSP{}, operators.SSWP{}, operators.CC{}, operators.PageRank{}} {
		want := run(t, op, g, 1, operators.Params{})
		for _, s := range Strategies(op.Spec().Name) {
			r, err := runGPUErr(t, b, op, g, 1, operators.Params{Strategy: s})
			if err != nil {
				t.Errorf("%s %s: %v", op.Spec().Name, s, err)
				continue
			}
			for i, c := range r.Columns {
				w := want.Columns[i]
				switch {
				case c.Name == "parent":
				case c.Name == "rank":
					if err := optest.SameRanks(ranksOf(r), ranksOf(want), g.NumVertices()); err != nil {
						t.Errorf("%s %s: %v", op.Spec().Name, s, err)
					}
				case !slices.Equal(c.Vertex, w.Vertex) || !slices.EqualFunc(c.Float64, w.Float64, func(a, b float64) bool {
					return a == b || math.IsNaN(a) && math.IsNaN(b)
				}):
					t.Errorf("%s %s: column %s differs from the CPU's", op.Spec().Name, s, c.Name)
				}
			}
		}
	}
}

// TestGPUPullHubs runs the pull strategies with every row of more than 3
// edges sent to the hubs' kernel, on the shapes, grids and real graphs:
// the hub path (segments pulled by blocks, activations by blocks, changes
// reaching the next iteration through the pending mask) against the CPU.
func TestGPUPullHubs(t *testing.T) {
	b := testGPU(t)
	b.tune.hubDegree = 3
	configs := []operators.Params{{Strategy: "warpseg"}, {Strategy: "kites"}, {Strategy: "kites", VertexGroup: 8, Delta: 0.7}}
	for _, vg := range optest.VPGraphs(t) {
		g := vg.G
		src := optest.SourcesOf(g)[0]
		if !vg.Negative {
			ref := optest.UnreachedInf(run(t, operators.SSSP{}, g, src, operators.Params{}).Column("distance").Float64)
			for _, p := range configs {
				name := fmt.Sprintf("sssp %s/src=%d/%+v", vg.Name, src, p)
				r, err := runGPUErr(t, b, operators.SSSP{}, g, src, p)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if err := optest.ValidateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, ref); err != nil {
					t.Errorf("%s (%s): %v", name, r.Strategy, err)
				}
			}
		}
		want := run(t, operators.SSWP{}, g, src, operators.Params{}).Column("width").Float64
		for _, p := range configs {
			name := fmt.Sprintf("sswp %s/src=%d/%+v", vg.Name, src, p)
			r, err := runGPUErr(t, b, operators.SSWP{}, g, src, p)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if err := optest.SameWidths(r.Column("width").Float64, want); err != nil {
				t.Errorf("%s (%s): %v", name, r.Strategy, err)
			}
		}
		if !g.Weighted || strings.Contains(vg.Name, "rome99") {
			comp := run(t, operators.CC{}, g, 0, operators.Params{}).Column("component").Vertex
			for _, p := range configs {
				p.Delta = 0
				r, err := runGPUErr(t, b, operators.CC{}, g, 0, p)
				if err != nil {
					t.Errorf("cc %s/%+v: %v", vg.Name, p, err)
					continue
				}
				if got := r.Column("component").Vertex; !slices.Equal(got, comp) {
					t.Errorf("cc %s/%+v (%s): components differ from the CPU's", vg.Name, p, r.Strategy)
				}
			}
			ranks := run(t, operators.PageRank{}, g, 0, operators.Params{})
			r, err := runGPUErr(t, b, operators.PageRank{}, g, 0, operators.Params{Strategy: "warpseg"})
			if err != nil {
				t.Errorf("pagerank %s: %v", vg.Name, err)
			} else if err := optest.SameRanks(ranksOf(r), ranksOf(ranks), g.NumVertices()); err != nil {
				t.Errorf("pagerank %s (%s): %v", vg.Name, r.Strategy, err)
			}
		}
		b.Forget(g)
	}
}

// TestPullStrategyParams: --vertex-group is kites' alone, a power of two up
// to 32, and pagerank has no kites strategy (no GPU needed).
func TestPullStrategyParams(t *testing.T) {
	for _, c := range []struct {
		op operators.Operator
		p  operators.Params
		ok bool
	}{
		{operators.SSSP{}, operators.Params{Strategy: "kites", VertexGroup: 32}, true},
		{operators.CC{}, operators.Params{Strategy: "kites", VertexGroup: 1}, true},
		{operators.SSSP{}, operators.Params{Strategy: "kites", VertexGroup: 3}, false},
		{operators.SSWP{}, operators.Params{Strategy: "kites", VertexGroup: 64}, false},
		{operators.SSSP{}, operators.Params{Strategy: "kites", VertexGroup: -2}, false},
		{operators.PageRank{}, operators.Params{Strategy: "kites"}, false},
		{operators.PageRank{}, operators.Params{Strategy: "warpseg"}, true},
	} {
		err := Check(c.op, c.p)
		if c.ok != (err == nil) || err != nil && usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s %+v: %v", c.op.Spec().Name, c.p, err)
		}
	}
	err := Check(operators.PageRank{}, operators.Params{Strategy: "kites"})
	if err == nil || !strings.Contains(err.Error(), "warpseg") {
		t.Errorf("pagerank kites: %v, want the valid strategies listed", err)
	}
}

// TestPullLayouts: what a pull run reads, by graph and strategy.
func TestPullLayouts(t *testing.T) {
	dir := optest.BuildGraph(t, optest.Shapes(t)[4], true, true, edges.KeyInt64)
	und := optest.BuildGraph(t, optest.Shapes(t)[4], false, true, edges.KeyInt64)
	l := pullLayoutOf(dir, ssspU32, strategyKiTES, false, 0)
	if !slices.Equal(l.pull, []Layout{InOffsets, InSources, inWeightsU32}) || !slices.Equal(l.act, []Layout{OutOffsets, OutTargets}) ||
		l.actIn != nil || l.out != nil || !slices.Equal(l.tree, []Layout{OutOffsets, OutTargets, outWeightsU32}) {
		t.Errorf("sssp kites, directed: %+v", l)
	}
	l = pullLayoutOf(dir, CCLabels, strategyKiTES, true, 0)
	if !slices.Equal(l.out, []Layout{OutOffsets, OutTargets}) || !slices.Equal(l.actIn, []Layout{InOffsets, InSources}) || l.tree != nil {
		t.Errorf("cc kites, directed: %+v", l)
	}
	l = pullLayoutOf(dir, CCLabels, strategyKiTES, true, 3)
	if !slices.Equal(l.act, []Layout{groupPart(groupOffsets, 3, true), groupPart(groupTargets, 3, true)}) || l.actIn != nil {
		t.Errorf("cc kites, directed, groups of 8: %+v", l)
	}
	l = pullLayoutOf(und, ssspU32, strategyWarpSeg, false, 0)
	if l.act != nil || l.tree != nil || l.pull[2].of(und) != outWeightsU32 || InSources.of(und) != OutTargets {
		t.Errorf("sssp warpseg, undirected: %+v", l)
	}
	if grouped, plain := pullBytes(nil, dir, sswpK32, strategyKiTES, false, 5), pullBytes(nil, dir, sswpK32, strategyKiTES, false, 0); grouped >= plain {
		t.Errorf("kites with groups of 32 takes %d bytes, without %d", grouped, plain)
	}
	gp := groupPart(groupTargets, 2, false)
	host, err := gp.host(dir)
	if err != nil {
		t.Fatal(err)
	}
	gr, _ := dir.Grouped(2, false)
	if int64(len(host)) != int64(len(gr.Targets))*4 || gp.Bytes(dir) < int64(len(host)) {
		t.Errorf("group targets: %d bytes on the host, %d estimated, %d targets", len(host), gp.Bytes(dir), len(gr.Targets))
	}
}
