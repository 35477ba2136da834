package operators

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
)

// The vertex-program engine's operators against the CPU: every strategy
// and its options, on the random shapes, grids and real graphs, directed
// and undirected, unweighted, weighted and with the wide (8-byte) values
// forced. Failures are reported and the tests go on, so that one run on
// the GPU machine shows all of them.

// vpConfigs are the strategies and options sssp and sswp run with.
var vpConfigs = []Params{
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

// ccConfigs are cc's.
var ccConfigs = []Params{
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

// vpGraph is a test graph for the engine, with what its weights allow.
type vpGraph struct {
	name     string
	g        *convert.Graph
	integers bool // distances must be exact
	negative bool // sssp does not apply
}

// The real graphs, read once for all the engine's tests.
var (
	realOnce  sync.Once
	realCache []realGraph
	// realLoaded stays false when the load stopped its test (a file that
	// does not read): every later caller fails too, rather than run
	// without the real graphs.
	realLoaded bool
)

// vpGraphs are the shapes, grids and real graphs, directed and undirected,
// unweighted and weighted.
func vpGraphs(t *testing.T) []vpGraph {
	var list []vpGraph
	seed := freshSeed(t)
	for _, s := range append(gpuShapes(t), gridShapes(seed)...) {
		integers := true
		for _, e := range s.edges {
			integers = integers && e.w == math.Trunc(e.w) && e.w >= 0
		}
		for _, directed := range []bool{true, false} {
			for _, weighted := range []bool{false, true} {
				name := fmt.Sprintf("%s/directed=%v/weighted=%v", s.name, directed, weighted)
				list = append(list, vpGraph{name: name, g: buildGraph(t, s, directed, weighted, edges.KeyInt64),
					integers: integers || !weighted, negative: s.negative && weighted})
			}
		}
	}
	realOnce.Do(func() { realCache, realLoaded = realGraphs(t), true })
	if !realLoaded {
		t.Fatal("the real graphs did not load (the first test that loaded them says why)")
	}
	for _, rg := range realCache {
		integers := true
		for _, w := range rg.g.Out.Weights {
			integers = integers && w == math.Trunc(w) && w >= 0
		}
		list = append(list, vpGraph{name: rg.name, g: rg.g, integers: integers})
	}
	return list
}

// withWide runs fn with the wide values on and off where the graph has
// weights.
func withWide(vg vpGraph, fn func(wide bool)) {
	fn(false)
	if vg.g.Weighted {
		gpuWideValues = true
		defer func() { gpuWideValues = false }()
		fn(true)
	}
}

// runGPUErr is runGPU that reports instead of stopping the test.
func runGPUErr(t *testing.T, b *GPU, op Operator, g *convert.Graph, src uint32, p Params) (*Result, error) {
	t.Helper()
	if err := op.Prepare(&p); err != nil {
		return nil, err
	}
	r, err := b.Run(context.Background(), op, Input{Graph: g, Source: src, Params: p})
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
	for _, vg := range vpGraphs(t) {
		if vg.negative {
			continue
		}
		g := vg.g
		for _, src := range sourcesOf(g) {
			want := run(t, SSSP{}, g, src, Params{})
			ref := unreachedInf(want.Column("distance").Float64)
			withWide(vg, func(wide bool) {
				for _, p := range vpConfigs {
					name := fmt.Sprintf("%s/src=%d/wide=%v/%+v", vg.name, src, wide, p)
					r, err := runGPUErr(t, b, SSSP{}, g, src, p)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					dist, parent := r.Column("distance").Float64, r.Column("parent").Vertex
					if err := validateSSSP(g, src, dist, parent, ref); err != nil {
						t.Errorf("%s (%s): %v", name, r.Strategy, err)
						continue
					}
					if vg.integers {
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
	for _, vg := range vpGraphs(t) {
		g := vg.g
		for _, src := range sourcesOf(g) {
			want := run(t, SSWP{}, g, src, Params{}).Column("width").Float64
			withWide(vg, func(wide bool) {
				for _, p := range vpConfigs {
					name := fmt.Sprintf("%s/src=%d/wide=%v/%+v", vg.name, src, wide, p)
					r, err := runGPUErr(t, b, SSWP{}, g, src, p)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					if err := sameWidths(r.Column("width").Float64, want); err != nil {
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
	for _, vg := range vpGraphs(t) {
		if vg.g.Weighted && !strings.Contains(vg.name, "rome99") {
			continue // cc reads no weights
		}
		g := vg.g
		want := run(t, CC{}, g, 0, Params{}).Column("component").Vertex
		for _, p := range ccConfigs {
			name := fmt.Sprintf("%s/%+v", vg.name, p)
			r, err := runGPUErr(t, b, CC{}, g, 0, p)
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

// TestGPUPageRankStrategies runs PageRank in every layout, at the default
// tolerance (float64 contributions) and at 1e-6 (float32), with and
// without the hubs-first numbering and the evict-first hint on the
// indices, on the shapes and the real graphs.
func TestGPUPageRankStrategies(t *testing.T) {
	b := testGPU(t)
	defer func() { prHubOrder, prStreamIndices = true, true }()
	for _, vg := range vpGraphs(t) {
		if vg.g.Weighted && !strings.Contains(vg.name, "rome99") {
			continue // pagerank reads no weights
		}
		g := vg.g
		for _, tol := range []float64{0, 1e-6} {
			want := run(t, PageRank{}, g, 0, Params{Tolerance: tol})
			for _, c := range []struct {
				p           Params
				hub, stream bool
			}{
				{Params{Tolerance: tol}, true, true},
				{Params{Tolerance: tol, Strategy: "vwc", VWarp: 4, Dynamic: true}, true, false},
				{Params{Tolerance: tol, Strategy: "vwc", VWarp: 2}, false, true},
				{Params{Tolerance: tol, Strategy: "gshards"}, true, true},
				{Params{Tolerance: tol, Strategy: "cw"}, true, true},
				{Params{Tolerance: tol, Strategy: "warpseg"}, true, true},
				{Params{Tolerance: tol, Strategy: "warpseg"}, false, false},
			} {
				prHubOrder, prStreamIndices = c.hub, c.stream
				name := fmt.Sprintf("%s/%+v/hub=%v/stream=%v", vg.name, c.p, c.hub, c.stream)
				r, err := runGPUErr(t, b, PageRank{}, g, 0, c.p)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if err := sameRanks(r, want, g.NumVertices()); err != nil {
					t.Errorf("%s (%s): %v", name, r.Strategy, err)
				}
			}
			b.Forget(g) // the hub and plain layouts differ
		}
	}
}

// unreachedInf is the CPU's distances with unreached vertices (NaN) at
// +Inf, as validateSSSP takes them.
func unreachedInf(dist []float64) []float64 {
	ref := slices.Clone(dist)
	for v, d := range ref {
		if math.IsNaN(d) {
			ref[v] = math.Inf(1)
		}
	}
	return ref
}

// sameWidths compares GPU widths with the CPU's: equal, or both unreached.
func sameWidths(got, want []float64) error {
	for v := range got {
		if !(got[v] == want[v] || math.IsNaN(got[v]) && math.IsNaN(want[v])) {
			return fmt.Errorf("vertex %d width %v, the CPU's %v", v, got[v], want[v])
		}
	}
	return nil
}

// sameRanks compares GPU ranks with the CPU's: within 1e-6 in L1, summing
// to 1 (within 1e-9, or 1e-7 with float32 contributions, whose rounding
// the CPU's ranks carry too), iteration counts within one.
func sameRanks(r, want *Result, n int) error {
	got := r.Column("rank").Float64
	var l1, sum float64
	for v, x := range got {
		if math.IsNaN(x) {
			return fmt.Errorf("rank of vertex %d is NaN (unwritten?)", v)
		}
		l1 += math.Abs(x - want.Column("rank").Float64[v])
		sum += x
	}
	if l1 > 1e-6 {
		return fmt.Errorf("L1 distance to the CPU ranks %g > 1e-6", l1)
	}
	slack := 1e-9
	if strings.Contains(r.Strategy, "float32") {
		slack = 1e-7
	}
	if n > 0 && math.Abs(sum-1) > slack {
		return fmt.Errorf("ranks sum to %v", sum)
	}
	if d := r.Iterations - want.Iterations; d < -1 || d > 1 {
		return fmt.Errorf("%d iterations on the GPU, %d on the CPU", r.Iterations, want.Iterations)
	}
	if valid := r.Column("rank").Valid; valid != nil {
		return allValidBits(valid, n)
	}
	return nil
}

// allValidBits says whether valid is the bitmap of n valid rows in
// Column.Valid's layout: whole words, the bits past n clear.
func allValidBits(valid []byte, n int) error {
	if want := int(bitmapBytes(int64(n))); len(valid) != want {
		return fmt.Errorf("bitmap of %d bytes for %d rows, want %d", len(valid), n, want)
	}
	for i := 0; i < 8*len(valid); i++ {
		if got := valid[i/8]>>(i%8)&1 == 1; got != (i < n) {
			return fmt.Errorf("bit %d of the bitmap of %d rows is %v", i, n, got)
		}
	}
	return nil
}

// TestGPUStrategyOptions: options a strategy does not read are refused, and
// auto says why it chose.
func TestGPUStrategyOptions(t *testing.T) {
	b := testGPU(t)
	g := buildGraph(t, shapes(t)[4], true, true, edges.KeyInt64)
	for _, c := range []struct {
		op Operator
		p  Params
	}{
		{SSSP{}, Params{Strategy: "gshards", VWarp: 4}},
		{SSWP{}, Params{Strategy: "cw", Dynamic: true}},
		{CC{}, Params{Strategy: "afforest", DeferOutliers: 9}},
		{PageRank{}, Params{Strategy: "cw", ChunkSize: 9}},
		{SSSP{}, Params{Strategy: "vwc", VertexGroup: 4}},
		{CC{}, Params{Strategy: "warpseg", VertexGroup: 2}},
	} {
		if _, err := runGPUErr(t, b, c.op, g, 0, c.p); usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s %+v: %v, want a usage error", c.op.Spec().Name, c.p, err)
		}
	}
	for _, op := range []Operator{SSSP{}, SSWP{}, CC{}, PageRank{}} {
		r, err := runGPUErr(t, b, op, g, 0, Params{})
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
	// ones, 2 eight-byte counters, 2 four-byte ones.
	if vpStateBytes != 88 || unsafe.Offsetof(vpState{}.Active) != 32 || unsafe.Offsetof(vpState{}.Outliers) != 56 || unsafe.Offsetof(vpState{}.Examined) != 64 {
		t.Fatalf("vpState is %d bytes, Active at %d, Outliers at %d, Examined at %d", vpStateBytes,
			unsafe.Offsetof(vpState{}.Active), unsafe.Offsetof(vpState{}.Outliers), unsafe.Offsetof(vpState{}.Examined))
	}
}

func TestOrderKeys(t *testing.T) {
	xs := []float64{math.Inf(-1), -1e300, -3.5, -1, -0.25, 0, 0.25, 1, 2, 3.5, 1e30, math.Inf(1)}
	for i, x := range xs {
		if x32 := float64(float32(x)); x32 == x {
			if got := fromKey32(key32(x)); got != x {
				t.Errorf("key32 of %v decodes to %v", x, got)
			}
			if key32(x) == 0 {
				t.Errorf("key32 of %v is the none key", x)
			}
		}
		if got := fromKey64(key64(x)); got != x {
			t.Errorf("key64 of %v decodes to %v", x, got)
		}
		if i > 0 {
			if key64(xs[i-1]) >= key64(x) {
				t.Errorf("key64 does not order %v below %v", xs[i-1], x)
			}
			if float64(float32(xs[i-1])) == xs[i-1] && float64(float32(x)) == x && key32(xs[i-1]) >= key32(x) {
				t.Errorf("key32 does not order %v below %v", xs[i-1], x)
			}
		}
	}
	if key32(1) != 0xbf800000 || key64(1) != 0xbff0000000000000 {
		t.Errorf("the keys of 1 are %#x and %#x, not vertex_program.cuh's", key32(1), key64(1))
	}
}

// TestCandidates: auto considers the strategies that read every option
// given (an option is meant for them), in its order for the graph; a
// strategy named with an option it does not read is refused.
func TestCandidates(t *testing.T) {
	small := buildGraph(t, shapes(t)[4], true, false, edges.KeyInt64)
	for _, c := range []struct {
		op    string
		plans []gpuPlan
		p     Params
		want  []string
	}{
		{"pagerank", PageRank{}.gpuPlans(nil), Params{}, []string{"warpseg", "vwc", "gshards", "cw"}},
		{"pagerank", PageRank{}.gpuPlans(nil), Params{VWarp: 1}, []string{"vwc"}},
		{"sssp", SSSP{}.gpuPlans(small), Params{}, []string{"cw", "vwc", "gshards", "kites", "warpseg"}},
		{"sssp", SSSP{}.gpuPlans(small), Params{VertexGroup: 8}, []string{"kites"}},
		{"sssp", SSSP{}.gpuPlans(nil), Params{DeferOutliers: 5}, []string{"vwc"}},
		{"sswp", SSWP{}.gpuPlans(small), Params{Strategy: "gshards"}, []string{"gshards"}},
		{"cc", CC{}.gpuPlans(small), Params{VWarp: 2}, []string{"afforest", "vwc"}},
		{"cc", CC{}.gpuPlans(small), Params{Dynamic: true}, []string{"vwc"}},
	} {
		got, err := candidates(c.op, c.plans, c.p)
		if err != nil || !slices.Equal(planNames(got), c.want) {
			t.Errorf("%s %+v: %v, %v; want %v", c.op, c.p, planNames(got), err, c.want)
		}
	}
	_, err := candidates("cc", CC{}.gpuPlans(small), Params{Strategy: "afforest", VWarp: 4, Dynamic: true})
	if usererr.KindOf(err) != usererr.Usage || !strings.Contains(err.Error(), "dynamic") || strings.Contains(err.Error(), "vwarp") {
		t.Errorf("afforest with --dynamic: %v", err)
	}
	if got := planBytes("pagerank", PageRank{}.gpuPlans(nil), small, Params{VWarp: 1}); got != prVWCBytes(nil, small, Params{VWarp: 1}) {
		t.Errorf("auto with --vwarp: %d bytes, want vwc's %d", got, prVWCBytes(nil, small, Params{VWarp: 1}))
	}
}

func TestVPProgramsFollowTheWeights(t *testing.T) {
	for _, c := range []struct {
		edges      []tedge
		weighted   bool
		sssp, sswp vprogram
	}{
		{[]tedge{{0, 1, 3}, {1, 2, 0}}, false, ssspUnit, sswpUnit},
		{[]tedge{{0, 1, 3}, {1, 2, 0}}, true, ssspU32, sswpK32},
		{[]tedge{{0, 1, 0.5}, {1, 2, 2}}, true, ssspF64, sswpK32},
		{[]tedge{{0, 1, 0.1}, {1, 2, 2}}, true, ssspF64, sswpK64},
		{[]tedge{{0, 1, 3e9}, {1, 2, 2}}, true, ssspF64, sswpK32},
	} {
		g := buildGraph(t, shape{name: "w", edges: c.edges}, true, c.weighted, edges.KeyInt64)
		if got := ssspProgram(g); got != c.sssp {
			t.Errorf("%v weighted=%v: sssp %s, want %s", c.edges, c.weighted, got.name, c.sssp.name)
		}
		if got := sswpProgram(g); got != c.sswp {
			t.Errorf("%v weighted=%v: sswp %s, want %s", c.edges, c.weighted, got.name, c.sswp.name)
		}
	}
}

func TestGPUSSSPDelta(t *testing.T) {
	g := buildGraph(t, shape{name: "k", edges: kroneckerEdges(t, 10, 16, 1)}, false, true, edges.KeyInt64)
	if d := gpuSSSPDelta(g, Params{Delta: 3}); d != 3 {
		t.Errorf("--delta 3 gives %v", d)
	}
	mean, _, _ := sampleWeights(&g.Out)
	avg := float64(g.NumEdges()) / float64(g.NumVertices())
	if d := gpuSSSPDelta(g, Params{}); d != math.Ceil(32*mean/avg) {
		t.Errorf("default delta %v, want ⌈32·%v/%v⌉", d, mean, avg)
	}
	zero := buildGraph(t, shape{name: "z", edges: []tedge{{0, 1, 0}, {1, 2, 0}}}, true, true, edges.KeyInt64)
	if d := gpuSSSPDelta(zero, Params{}); !math.IsInf(d, 1) {
		t.Errorf("zero weights: delta %v, want +Inf (no steps)", d)
	}
}

// TestGPUEngineSmoke runs every operator in every strategy once on a small
// directed weighted Kronecker graph: quick enough to run under
// compute-sanitizer (docs/gpu.md).
func TestGPUEngineSmoke(t *testing.T) {
	b := testGPU(t)
	g := buildGraph(t, shape{name: "k10", edges: kroneckerEdges(t, 10, 8, 3)}, true, true, edges.KeyInt64)
	for _, op := range []Operator{SSSP{}, SSWP{}, CC{}, PageRank{}} {
		want := run(t, op, g, 1, Params{})
		for _, s := range GPUStrategies(op.Spec().Name) {
			r, err := runGPUErr(t, b, op, g, 1, Params{Strategy: s})
			if err != nil {
				t.Errorf("%s %s: %v", op.Spec().Name, s, err)
				continue
			}
			for i, c := range r.Columns {
				w := want.Columns[i]
				switch {
				case c.Name == "parent":
				case c.Name == "rank":
					if err := sameRanks(r, want, g.NumVertices()); err != nil {
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
	defer func(h int64) { wsHubDegree = h }(wsHubDegree)
	wsHubDegree = 3
	configs := []Params{{Strategy: "warpseg"}, {Strategy: "kites"}, {Strategy: "kites", VertexGroup: 8, Delta: 0.7}}
	for _, vg := range vpGraphs(t) {
		g := vg.g
		src := sourcesOf(g)[0]
		if !vg.negative {
			ref := unreachedInf(run(t, SSSP{}, g, src, Params{}).Column("distance").Float64)
			for _, p := range configs {
				name := fmt.Sprintf("sssp %s/src=%d/%+v", vg.name, src, p)
				r, err := runGPUErr(t, b, SSSP{}, g, src, p)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if err := validateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, ref); err != nil {
					t.Errorf("%s (%s): %v", name, r.Strategy, err)
				}
			}
		}
		want := run(t, SSWP{}, g, src, Params{}).Column("width").Float64
		for _, p := range configs {
			name := fmt.Sprintf("sswp %s/src=%d/%+v", vg.name, src, p)
			r, err := runGPUErr(t, b, SSWP{}, g, src, p)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if err := sameWidths(r.Column("width").Float64, want); err != nil {
				t.Errorf("%s (%s): %v", name, r.Strategy, err)
			}
		}
		if !g.Weighted || strings.Contains(vg.name, "rome99") {
			comp := run(t, CC{}, g, 0, Params{}).Column("component").Vertex
			for _, p := range configs {
				p.Delta = 0
				r, err := runGPUErr(t, b, CC{}, g, 0, p)
				if err != nil {
					t.Errorf("cc %s/%+v: %v", vg.name, p, err)
					continue
				}
				if got := r.Column("component").Vertex; !slices.Equal(got, comp) {
					t.Errorf("cc %s/%+v (%s): components differ from the CPU's", vg.name, p, r.Strategy)
				}
			}
			ranks := run(t, PageRank{}, g, 0, Params{})
			r, err := runGPUErr(t, b, PageRank{}, g, 0, Params{Strategy: "warpseg"})
			if err != nil {
				t.Errorf("pagerank %s: %v", vg.name, err)
			} else if err := sameRanks(r, ranks, g.NumVertices()); err != nil {
				t.Errorf("pagerank %s (%s): %v", vg.name, r.Strategy, err)
			}
		}
		b.Forget(g)
	}
}

// TestPullStrategyParams: --vertex-group is kites' alone, a power of two up
// to 32, and pagerank has no kites strategy (no GPU needed).
func TestPullStrategyParams(t *testing.T) {
	for _, c := range []struct {
		op Operator
		p  Params
		ok bool
	}{
		{SSSP{}, Params{Strategy: "kites", VertexGroup: 32}, true},
		{CC{}, Params{Strategy: "kites", VertexGroup: 1}, true},
		{SSSP{}, Params{Strategy: "kites", VertexGroup: 3}, false},
		{SSWP{}, Params{Strategy: "kites", VertexGroup: 64}, false},
		{SSSP{}, Params{Strategy: "kites", VertexGroup: -2}, false},
		{PageRank{}, Params{Strategy: "kites"}, false},
		{PageRank{}, Params{Strategy: "warpseg"}, true},
	} {
		err := CheckGPUParams(c.op, c.p)
		if c.ok != (err == nil) || err != nil && usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s %+v: %v", c.op.Spec().Name, c.p, err)
		}
	}
	err := CheckGPUParams(PageRank{}, Params{Strategy: "kites"})
	if err == nil || !strings.Contains(err.Error(), "warpseg") {
		t.Errorf("pagerank kites: %v, want the valid strategies listed", err)
	}
}

// TestPullLayouts: what a pull run reads, by graph and strategy.
func TestPullLayouts(t *testing.T) {
	dir := buildGraph(t, shapes(t)[4], true, true, edges.KeyInt64)
	und := buildGraph(t, shapes(t)[4], false, true, edges.KeyInt64)
	l := pullLayoutOf(dir, ssspU32, strategyKiTES, false, 0)
	if !slices.Equal(l.pull, []layout{inOffsets, inSources, inWeightsU32}) || !slices.Equal(l.act, []layout{outOffsets, outTargets}) ||
		l.actIn != nil || l.out != nil || !slices.Equal(l.tree, []layout{outOffsets, outTargets, outWeightsU32}) {
		t.Errorf("sssp kites, directed: %+v", l)
	}
	l = pullLayoutOf(dir, ccLabels, strategyKiTES, true, 0)
	if !slices.Equal(l.out, []layout{outOffsets, outTargets}) || !slices.Equal(l.actIn, []layout{inOffsets, inSources}) || l.tree != nil {
		t.Errorf("cc kites, directed: %+v", l)
	}
	l = pullLayoutOf(dir, ccLabels, strategyKiTES, true, 3)
	if !slices.Equal(l.act, []layout{groupPart(groupOffsets, 3, true), groupPart(groupTargets, 3, true)}) || l.actIn != nil {
		t.Errorf("cc kites, directed, groups of 8: %+v", l)
	}
	l = pullLayoutOf(und, ssspU32, strategyWarpSeg, false, 0)
	if l.act != nil || l.tree != nil || l.pull[2].of(und) != outWeightsU32 || inSources.of(und) != outTargets {
		t.Errorf("sssp warpseg, undirected: %+v", l)
	}
	if grouped, plain := pullBytes(dir, sswpK32, strategyKiTES, false, 5), pullBytes(dir, sswpK32, strategyKiTES, false, 0); grouped >= plain {
		t.Errorf("kites with groups of 32 takes %d bytes, without %d", grouped, plain)
	}
	gp := groupPart(groupTargets, 2, false)
	host, err := gp.host(dir)
	if err != nil {
		t.Fatal(err)
	}
	gr, _ := dir.Grouped(2, false)
	if int64(len(host)) != int64(len(gr.Targets))*4 || gp.bytes(dir) < int64(len(host)) {
		t.Errorf("group targets: %d bytes on the host, %d estimated, %d targets", len(host), gp.bytes(dir), len(gr.Targets))
	}
}
