package operators

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// tedge is a test edge between integer keys.
type tedge struct {
	u, v int64
	w    float64
}

// shape is a test graph as an edge list. Negative says some weights are
// negative (so sssp does not apply).
type shape struct {
	name     string
	edges    []tedge
	negative bool
}

// buildGraph builds edges with keys of the given type (integer keys are
// mapped so that neither their order nor their values are the ids'; string
// keys sort differently from the numbers they spell).
func buildGraph(t testing.TB, s shape, directed, weighted bool, kt edges.KeyType) *convert.Graph {
	t.Helper()
	tab := &edges.Table{
		Name:      s.name,
		Columns:   edges.Columns{}.WithDefaults(),
		KeyType:   kt,
		HasWeight: weighted,
		RowsRead:  int64(len(s.edges)),
		Skipped:   edges.Skips{},
	}
	// Two chunks, to exercise chunked tables.
	half := len(s.edges) / 2
	for ci, part := range [][]tedge{s.edges[:half], s.edges[half:]} {
		c := edges.Chunk{FirstRow: int64(ci * half)}
		var src, dst edges.Keys
		switch kt {
		case edges.KeyInt32:
			src.Int32, dst.Int32 = make([]int32, 0, len(part)), make([]int32, 0, len(part))
			for _, e := range part {
				src.Int32 = append(src.Int32, int32(1000-3*e.u))
				dst.Int32 = append(dst.Int32, int32(1000-3*e.v))
			}
		case edges.KeyInt64:
			src.Int64, dst.Int64 = make([]int64, 0, len(part)), make([]int64, 0, len(part))
			for _, e := range part {
				src.Int64 = append(src.Int64, e.u<<33+5)
				dst.Int64 = append(dst.Int64, e.v<<33+5)
			}
		case edges.KeyString:
			src.Str, dst.Str = &edges.Strings{Offsets: []int64{0}}, &edges.Strings{Offsets: []int64{0}}
			for _, e := range part {
				for _, p := range []struct {
					s *edges.Strings
					k int64
				}{{src.Str, e.u}, {dst.Str, e.v}} {
					p.s.Data = append(p.s.Data, "k"+strconv.FormatInt(p.k, 10)...)
					p.s.Offsets = append(p.s.Offsets, int64(len(p.s.Data)))
				}
			}
		}
		c.Src, c.Dst = src, dst
		if weighted {
			for _, e := range part {
				c.Weight = append(c.Weight, e.w)
			}
		}
		tab.Chunks = append(tab.Chunks, c)
	}
	g, err := convert.Build(context.Background(), tab, convert.BuildOptions{
		Undirected: !directed, Weighted: weighted, Weights: convert.FiniteWeights, BuildIn: true,
	})
	if err != nil {
		t.Fatalf("%s: build: %v", s.name, err)
	}
	return g
}

// kroneckerEdges draws a small Graph 500 graph with GAP's weights.
func kroneckerEdges(t testing.TB, scale, edgeFactor int, seed uint64) []tedge {
	t.Helper()
	tab, err := gen.Kronecker{Scale: scale, EdgeFactor: edgeFactor, Seed: seed, Weighted: true}.Generate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var edges []tedge
	for _, c := range tab.Chunks {
		for i := range c.Src.Int64 {
			edges = append(edges, tedge{c.Src.Int64[i], c.Dst.Int64[i], c.Weight[i]})
		}
	}
	return edges
}

// shapes are the graphs every operator is tested on.
func shapes(t testing.TB) []shape {
	rng := rand.New(rand.NewPCG(42, 7))
	var list []shape
	add := func(name string, edges []tedge, negative bool) {
		list = append(list, shape{name, edges, negative})
	}
	add("one-vertex", []tedge{{7, 7, 1}}, false)
	add("self-loops-only", []tedge{{1, 1, 1}, {2, 2, 3}, {3, 3, 2}}, false)
	add("parallel-edges", []tedge{{0, 1, 5}, {0, 1, 2}, {1, 2, 3}, {1, 2, 9}, {0, 2, 10}, {2, 0, 1}, {2, 3, 4}, {3, 2, 1}, {2, 2, 1}}, false)
	var dis []tedge
	for i := int64(0); i < 30; i++ { // a cycle, a path, isolated pairs
		dis = append(dis, tedge{i, (i + 1) % 30, float64(1 + i%4)})
		dis = append(dis, tedge{100 + i, 101 + i, float64(1 + i%3)})
		dis = append(dis, tedge{200 + 2*i, 201 + 2*i, 2})
	}
	add("disconnected", dis, false)
	var star []tedge
	for i := int64(1); i <= 3000; i++ {
		star = append(star, tedge{0, i, float64(1 + i%7)}, tedge{i, 0, float64(1 + i%5)})
		if i%10 == 0 {
			star = append(star, tedge{i, i + 1, 1})
		}
	}
	add("star", star, false)
	var chain []tedge
	for i := int64(0); i < 3000; i++ {
		chain = append(chain, tedge{i, i + 1, float64(1 + rng.IntN(100))})
	}
	add("chain", chain, false)
	var complete []tedge
	for i := int64(0); i < 40; i++ {
		for j := int64(0); j < 40; j++ {
			if i != j {
				complete = append(complete, tedge{i, j, float64(rng.IntN(5))})
			}
		}
	}
	add("complete", complete, false)
	// Zero weights and many ties: shortest-path trees must stay trees.
	var ties []tedge
	for i := 0; i < 3000; i++ {
		ties = append(ties, tedge{int64(rng.IntN(800)), int64(rng.IntN(800)), float64(rng.IntN(3))})
	}
	add("zero-weights-ties", ties, false)
	var sparse []tedge
	for i := 0; i < 6000; i++ {
		sparse = append(sparse, tedge{int64(rng.IntN(3000)), int64(rng.IntN(3000)), rng.Float64() * 10})
	}
	add("random-sparse", sparse, false)
	var neg []tedge
	for i := 0; i < 6000; i++ {
		neg = append(neg, tedge{int64(rng.IntN(2000)), int64(rng.IntN(2000)), math.Round((rng.Float64()*10-5)*100) / 100})
	}
	add("negative-weights", neg, true)
	add("kronecker-10-seed1", kroneckerEdges(t, 10, 16, 1), false)
	add("kronecker-11-seed2", kroneckerEdges(t, 11, 8, 2), false)
	add("kronecker-12-seed3", kroneckerEdges(t, 12, 16, 3), false)
	return list
}

// sourcesOf picks the first vertex, a middle one and the largest out-degree.
func sourcesOf(g *convert.Graph) []uint32 {
	n := g.NumVertices()
	if n == 0 {
		return nil
	}
	best := uint32(0)
	for v := 1; v < n; v++ {
		if g.Out.Degree(uint32(v)) > g.Out.Degree(best) {
			best = uint32(v)
		}
	}
	srcs := []uint32{0}
	for _, s := range []uint32{uint32(n / 2), best} {
		if s != srcs[len(srcs)-1] && s != 0 {
			srcs = append(srcs, s)
		}
	}
	return srcs
}

func run(t testing.TB, op Operator, g *convert.Graph, src uint32, p Params) *Result {
	t.Helper()
	if err := op.Prepare(&p); err != nil {
		t.Fatalf("%s: prepare: %v", op.Spec().Name, err)
	}
	r, err := CPU{}.Run(context.Background(), op, Input{Graph: g, Source: src, Params: p})
	if err != nil {
		t.Fatalf("%s: %v", op.Spec().Name, err)
	}
	if r.Op != op.Spec().Name || r.Backend != "cpu" || r.Strategy == "" || r.Compute < 0 {
		t.Fatalf("%s: result header op=%q backend=%q strategy=%q compute=%v", op.Spec().Name, r.Op, r.Backend, r.Strategy, r.Compute)
	}
	for _, cs := range op.Spec().Columns {
		c := r.Column(cs.Name)
		if c == nil || c.Type != cs.Type {
			t.Fatalf("%s: column %q missing or of the wrong type", op.Spec().Name, cs.Name)
		}
		rows := len(c.Int32) + len(c.Float64) + len(c.Vertex)
		if rows != g.NumVertices() {
			t.Fatalf("%s: column %q has %d rows, want %d", op.Spec().Name, cs.Name, rows, g.NumVertices())
		}
	}
	return r
}

// checkAll runs every operator on g and compares it with the references.
func checkAll(t *testing.T, g *convert.Graph, negative bool) {
	for _, src := range sourcesOf(g) {
		r := run(t, BFS{}, g, src, Params{})
		ref := refBFS(g, src)
		if err := validateBFS(g, src, r.Column("depth").Int32, r.Column("parent").Vertex, ref); err != nil {
			t.Fatalf("bfs from %d: %v", src, err)
		}
		maxDepth := int32(0)
		for _, d := range ref {
			maxDepth = max(maxDepth, d)
		}
		if r.Iterations != int(maxDepth)+1 {
			t.Fatalf("bfs from %d: %d iterations, want %d levels", src, r.Iterations, maxDepth+1)
		}

		if !negative {
			for _, delta := range []float64{0, 0.7, 50} {
				r = run(t, SSSP{}, g, src, Params{Delta: delta})
				if err := validateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, refDijkstra(g, src)); err != nil {
					t.Fatalf("sssp from %d (delta %v): %v", src, delta, err)
				}
			}
		}

		refW := refWidest(g, src)
		for _, delta := range []float64{0, 0.3, 1000} {
			r = run(t, SSWP{}, g, src, Params{Delta: delta})
			width := r.Column("width").Float64
			for v := range width {
				want := refW[v]
				if math.IsInf(want, -1) {
					want = math.NaN()
				}
				if !(width[v] == want || math.IsNaN(width[v]) && math.IsNaN(want)) {
					t.Fatalf("sswp from %d (delta %v): vertex %d width %v, reference %v", src, delta, v, width[v], want)
				}
			}
		}
	}

	r := run(t, PageRank{}, g, 0, Params{})
	rank := r.Column("rank").Float64
	ref := refPageRank(g, DefaultDamping)
	var l1, sum float64
	for v := range rank {
		l1 += math.Abs(rank[v] - ref[v])
		sum += rank[v]
	}
	if l1 >= 1e-6 || (len(rank) > 0 && math.Abs(sum-1) > 1e-9) {
		t.Fatalf("pagerank: L1 distance %g to the reference, sum %v", l1, sum)
	}
	if len(r.Warnings) != 0 {
		t.Fatalf("pagerank: warnings %v", r.Warnings)
	}

	r = run(t, CC{}, g, 0, Params{})
	comp, refComp := r.Column("component").Vertex, refCC(g)
	for v := range comp {
		if comp[v] != refComp[v] {
			t.Fatalf("cc: vertex %d in component %d, reference %d", v, comp[v], refComp[v])
		}
	}
}

func TestOperatorsAgainstReferences(t *testing.T) {
	keyTypes := []edges.KeyType{edges.KeyInt64, edges.KeyInt32, edges.KeyString}
	k := 0
	for _, s := range shapes(t) {
		for _, directed := range []bool{false, true} {
			for _, weighted := range []bool{false, true} {
				kt := keyTypes[k%len(keyTypes)]
				k++
				name := fmt.Sprintf("%s/directed=%v/weighted=%v/%v", s.name, directed, weighted, kt)
				t.Run(name, func(t *testing.T) {
					g := buildGraph(t, s, directed, weighted, kt)
					checkAll(t, g, s.negative && weighted)
				})
			}
		}
	}
}

// TestOperatorsOddWorkers runs with more workers than cores, an odd
// number, so that chunk boundaries and contention differ from the default.
func TestOperatorsOddWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(5))
	for _, s := range shapes(t) {
		if s.name != "kronecker-12-seed3" && s.name != "star" && s.name != "zero-weights-ties" {
			continue
		}
		for _, directed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/directed=%v", s.name, directed), func(t *testing.T) {
				checkAll(t, buildGraph(t, s, directed, true, edges.KeyInt64), false)
			})
		}
	}
}

func TestEmptyGraph(t *testing.T) {
	tab := &edges.Table{Name: "empty", Columns: edges.Columns{}.WithDefaults(), KeyType: edges.KeyInt64, Skipped: edges.Skips{}}
	g, err := convert.Build(context.Background(), tab, convert.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range All() {
		p := Params{}
		if err := op.Prepare(&p); err != nil {
			t.Fatal(err)
		}
		r, err := op.RunCPU(context.Background(), Input{Graph: g, Params: p})
		if op.Spec().NeedsSource {
			if usererr.KindOf(err) != usererr.Usage {
				t.Errorf("%s on an empty graph: %v, want a usage error", op.Spec().Name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", op.Spec().Name, err)
		}
		for _, c := range r.Columns {
			if len(c.Int32)+len(c.Float64)+len(c.Vertex) != 0 {
				t.Errorf("%s: column %s has rows", op.Spec().Name, c.Name)
			}
		}
	}
}

func TestRegistry(t *testing.T) {
	want := []string{"bfs", "sssp", "sswp", "pagerank", "cc"}
	if got := Names(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		op, err := Lookup(name)
		if err != nil || op.Spec().Name != name {
			t.Fatalf("Lookup(%q) = %v, %v", name, op, err)
		}
		s := op.Spec()
		if s.Summary == "" || len(s.Columns) == 0 {
			t.Errorf("%s: incomplete spec %+v", name, s)
		}
	}
	if _, err := Lookup("nope"); usererr.KindOf(err) != usererr.Usage {
		t.Fatalf("Lookup(nope): %v", err)
	}
	if s := (SSSP{}).Spec(); !s.Weighted || s.Weights != convert.NonNegativeWeights || !s.NeedsSource {
		t.Errorf("sssp spec %+v", s)
	}
	if s := (SSWP{}).Spec(); !s.Weighted || s.Weights != convert.FiniteWeights || !s.NeedsSource {
		t.Errorf("sswp spec %+v", s)
	}
	if s := (PageRank{}).Spec(); s.Weighted || !s.NeedsIn || s.NeedsSource {
		t.Errorf("pagerank spec %+v", s)
	}
}

func TestParams(t *testing.T) {
	p := Params{}
	if err := (PageRank{}).Prepare(&p); err != nil || p.Damping != 0.85 || p.Tolerance != 1e-9 || p.MaxIterations != 1000 {
		t.Fatalf("pagerank defaults: %+v, %v", p, err)
	}
	bad := []struct {
		op Operator
		p  Params
	}{
		{PageRank{}, Params{Damping: 1}},
		{PageRank{}, Params{Damping: -0.5}},
		{PageRank{}, Params{Damping: 1.5}},
		{PageRank{}, Params{Damping: math.NaN()}},
		{PageRank{}, Params{Tolerance: -1}},
		{PageRank{}, Params{Tolerance: math.NaN()}},
		{PageRank{}, Params{MaxIterations: -3}},
		{SSSP{}, Params{Delta: -1}},
		{SSSP{}, Params{Delta: math.Inf(1)}},
		{SSSP{}, Params{Delta: math.NaN()}},
		{SSWP{}, Params{Delta: -2}},
	}
	for _, b := range bad {
		p := b.p
		err := b.op.Prepare(&p)
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != usererr.Usage || ue.Fix == "" {
			t.Errorf("%s.Prepare(%+v) = %v, want a usage error with a fix", b.op.Spec().Name, b.p, err)
		}
	}
	for _, op := range All() {
		p := Params{Delta: 2.5}
		if err := op.Prepare(&p); err != nil {
			t.Errorf("%s.Prepare(%+v): %v", op.Spec().Name, p, err)
		}
	}
}

func TestSourceOutOfRange(t *testing.T) {
	g := buildGraph(t, shape{name: "pair", edges: []tedge{{1, 2, 1}}}, false, true, edges.KeyInt64)
	for _, op := range []Operator{BFS{}, SSSP{}, SSWP{}} {
		if _, err := op.RunCPU(context.Background(), Input{Graph: g, Source: 2}); usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s with source 2 of 2 vertices: %v", op.Spec().Name, err)
		}
	}
}

func TestPageRankNotConverged(t *testing.T) {
	g := buildGraph(t, shape{name: "k10", edges: kroneckerEdges(t, 10, 16, 1)}, true, false, edges.KeyInt64)
	r := run(t, PageRank{}, g, 0, Params{MaxIterations: 3})
	if r.Iterations != 3 || len(r.Warnings) != 1 {
		t.Fatalf("iterations %d, warnings %q", r.Iterations, r.Warnings)
	}
	var sum float64
	for _, x := range r.Column("rank").Float64 {
		sum += x
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("ranks sum to %v", sum)
	}
	r = run(t, PageRank{}, g, 0, Params{Tolerance: 1e-4, Damping: 0.5})
	if len(r.Warnings) != 0 || r.Iterations < 2 || r.Iterations > 40 {
		t.Fatalf("tolerance 1e-4: iterations %d, warnings %q", r.Iterations, r.Warnings)
	}
}

// TestPageRankSmall checks that the result satisfies networkx's fixed-point
// equation on a small directed graph with a dangling vertex.
func TestPageRankSmall(t *testing.T) {
	// 0→1, 0→2, 1→2, 2→0, 3→2, and 4 dangling (1→4).
	g := buildGraph(t, shape{name: "small", edges: []tedge{{0, 1, 1}, {0, 2, 1}, {1, 2, 1}, {2, 0, 1}, {3, 2, 1}, {1, 4, 1}}}, true, false, edges.KeyInt64)
	r := run(t, PageRank{}, g, 0, Params{Tolerance: 1e-15})
	rank := r.Column("rank").Float64
	// The fixed point satisfies the networkx equation exactly.
	n := 5.0
	var dangling float64
	for v := range rank {
		if g.Out.Degree(uint32(v)) == 0 {
			dangling += rank[v]
		}
	}
	for v := range rank {
		var in float64
		for u := 0; u < 5; u++ {
			if edgeIndex(&g.Out, uint32(u), uint32(v)) >= 0 {
				in += rank[u] / float64(g.Out.Degree(uint32(u)))
			}
		}
		want := 0.85*(in+dangling/n) + 0.15/n
		if math.Abs(rank[v]-want) > 1e-12 {
			t.Fatalf("vertex %d: rank %v, equation gives %v", v, rank[v], want)
		}
	}
}

func TestCanceled(t *testing.T) {
	g := buildGraph(t, shape{name: "k10", edges: kroneckerEdges(t, 10, 16, 1)}, false, true, edges.KeyInt64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, op := range All() {
		p := Params{}
		if err := op.Prepare(&p); err != nil {
			t.Fatal(err)
		}
		if _, err := op.RunCPU(ctx, Input{Graph: g, Source: 1, Params: p}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v", op.Spec().Name, err)
		}
	}
}

// TestDeltaFar uses bucket widths far below the weights, so that most
// relaxations land beyond the bucket ring and wait in the far lists.
func TestDeltaFar(t *testing.T) {
	for _, s := range shapes(t) {
		if s.name != "chain" && s.name != "random-sparse" && s.name != "kronecker-10-seed1" && s.name != "negative-weights" {
			continue
		}
		g := buildGraph(t, s, true, true, edges.KeyInt64)
		for _, src := range sourcesOf(g) {
			if !s.negative {
				r := run(t, SSSP{}, g, src, Params{Delta: 1e-4})
				if err := validateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, refDijkstra(g, src)); err != nil {
					t.Fatalf("%s: sssp from %d: %v", s.name, src, err)
				}
			}
			r := run(t, SSWP{}, g, src, Params{Delta: 1e-5})
			ref := refWidest(g, src)
			for v, x := range r.Column("width").Float64 {
				if !(x == ref[v] || math.IsNaN(x) && math.IsInf(ref[v], -1)) {
					t.Fatalf("%s: sswp from %d: vertex %d width %v, reference %v", s.name, src, v, x, ref[v])
				}
			}
		}
	}
}

// nanUnreached is dist with +Inf replaced by NaN, as results carry it.
func nanUnreached(dist []float64) []float64 {
	out := make([]float64, len(dist))
	for i, d := range dist {
		out[i] = d
		if math.IsInf(d, 1) {
			out[i] = math.NaN()
		}
	}
	return out
}

// TestSSSPLogChunks shrinks the relaxation log's chunks so that parents
// are recovered from logs spanning many chunks and partly staged buffers.
func TestSSSPLogChunks(t *testing.T) {
	defer func(c int) { relaxChunk = c }(relaxChunk)
	for _, chunk := range []int{1, 100, 300} {
		relaxChunk = chunk
		for _, s := range shapes(t) {
			if s.name != "kronecker-12-seed3" && s.name != "zero-weights-ties" {
				continue
			}
			g := buildGraph(t, s, false, true, edges.KeyInt64)
			for _, src := range sourcesOf(g) {
				r := run(t, SSSP{}, g, src, Params{})
				if err := validateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, refDijkstra(g, src)); err != nil {
					t.Fatalf("%s, chunks of %d: sssp from %d: %v", s.name, chunk, src, err)
				}
			}
		}
	}
}

// TestPageRankFloat32 checks the float32-contribution path (tolerances of
// prFloat32Tolerance and looser) against the float64 one and the reference,
// on both directions and with dangling vertices.
func TestPageRankFloat32(t *testing.T) {
	for _, s := range shapes(t) {
		switch s.name {
		case "star", "disconnected", "kronecker-11-seed2", "kronecker-12-seed3", "random-sparse":
		default:
			continue
		}
		for _, directed := range []bool{false, true} {
			g := buildGraph(t, s, directed, false, edges.KeyInt64)
			ref := refPageRank(g, DefaultDamping)
			for _, tol := range []float64{prFloat32Tolerance, 1e-4} {
				r32 := run(t, PageRank{}, g, 0, Params{Tolerance: tol})
				if r32.Strategy != "pull (float32 contributions)" {
					t.Fatalf("tolerance %g: strategy %q", tol, r32.Strategy)
				}
				// Just below the threshold: the float64 path.
				r64 := run(t, PageRank{}, g, 0, Params{Tolerance: prFloat32Tolerance * 0.999})
				if r64.Strategy != "pull" {
					t.Fatalf("tolerance %g: strategy %q", prFloat32Tolerance*0.999, r64.Strategy)
				}
				x32, x64 := r32.Column("rank").Float64, r64.Column("rank").Float64
				var d64, dRef, sum float64
				for v := range x32 {
					d64 += math.Abs(x32[v] - x64[v])
					dRef += math.Abs(x32[v] - ref[v])
					sum += x32[v]
				}
				// The two paths stop within an iteration of each other;
				// each is within a few tolerances of the fixed point.
				if dRef > 20*tol || d64 > 20*tol || math.Abs(sum-1) > 1e-6 {
					t.Fatalf("%s directed=%v tolerance %g: L1 to float64 path %g, to reference %g, sum %v",
						s.name, directed, tol, d64, dRef, sum)
				}
				if len(r32.Warnings) != 0 {
					t.Fatalf("%s: warnings %q", s.name, r32.Warnings)
				}
			}
		}
	}
}

// TestDeltaGather fills the workers' buckets with overlapping random
// shares, some vertices twice in one share, every fifth vertex stale, and
// checks that gather makes the frontier their union: where it is large,
// each vertex that is not stale once and in order; that slice reads it
// back in pieces; and that the shared bitmap is left zero. At 1, 3 and 7
// workers, small and large frontiers.
func TestDeltaGather(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, workers := range []int{1, 3, 7} {
		runtime.GOMAXPROCS(workers)
		d := newDeltaStepper(64)
		rng := rand.New(rand.NewPCG(uint64(workers), 9))
		for round, n := range []int{50, 5000, 100_000, 5000} {
			const cur = 70 // past the ring's length: buckets wrap
			want := map[uint32]bool{}
			for w := range d.bins {
				for k := rng.IntN(3 * n / workers); k > 0; k-- {
					v := uint32(rng.IntN(n))
					d.bins[w].push(cur, v)
					want[v] = true
				}
				d.bins[w].push(cur+1, uint32(rng.IntN(n))) // another bucket, left alone
			}
			d.gather(staleFifths{cur}, cur, n)
			// Read back as the workers do, in pieces of up to 64 (37 here)
			// that may start in one part and end in the next.
			var front []uint32
			part := 0
			for i := 0; i < d.frontier.len(); i += 37 {
				end := min(i+37, d.frontier.len())
				for j := i; j < end; {
					us := d.frontier.slice(j, end, &part)
					front = append(front, us...)
					j += len(us)
				}
			}
			if len(want) < sortMin && len(front) < len(want) {
				t.Fatalf("workers %d round %d: frontier of %d, want the %d vertices", workers, round, len(front), len(want))
			}
			if len(want) >= sortMin {
				live := 0
				for v := range want {
					if v%5 != 0 {
						live++
					}
				}
				if len(front) != live {
					t.Fatalf("workers %d round %d: frontier of %d, want each of the %d live vertices once", workers, round, len(front), live)
				}
				for i := 1; i < len(front); i++ {
					if front[i] <= front[i-1] {
						t.Fatalf("workers %d round %d: frontier %d then %d", workers, round, front[i-1], front[i])
					}
				}
			}
			for _, v := range front {
				if !want[v] {
					t.Fatalf("workers %d round %d: %d in the frontier, not in a share", workers, round, v)
				}
				if len(want) >= sortMin && v%5 == 0 {
					t.Fatalf("workers %d round %d: stale %d in a sorted frontier", workers, round, v)
				}
			}
			for i, x := range d.marks {
				if x != 0 {
					t.Fatalf("workers %d round %d: bitmap word %d left %#x", workers, round, i, x)
				}
			}
			for w, bs := range d.bins {
				if bs.size(cur) != 0 || bs.size(cur+1) != 1 {
					t.Fatalf("workers %d round %d: worker %d holds %d in the bucket gathered, %d in the next, want 0 and 1", workers, round, w, bs.size(cur), bs.size(cur+1))
				}
				bs.take(cur + 1)
			}
		}
	}
}

// staleFifths is a relaxer for gather alone: every fifth vertex has moved
// to the bucket before cur.
type staleFifths struct{ cur uint64 }

func (staleFifths) relax(*deltaStepper, int, []uint32, uint64) {}

func (staleFifths) relaxEdges(*deltaStepper, int, uint32, int64, int64, uint64) {}

func (s staleFifths) bucket(v uint32) uint64 {
	if v%5 == 0 {
		return s.cur - 1
	}
	return s.cur
}

// TestDeltaFrontierOrder runs Δ-stepping with every frontier sorted
// through the shared bitmap and with none, against the references, at the
// default workers and at more workers than cores (shares that overlap).
func TestDeltaFrontierOrder(t *testing.T) {
	defer func(m int) { sortMin = m }(sortMin)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, m := range []int{1, 1 << 30, -7} {
		sortMin = m
		if m < 0 {
			sortMin = 1
			runtime.GOMAXPROCS(-m)
		}
		for _, s := range shapes(t) {
			switch s.name {
			case "star", "chain", "zero-weights-ties", "kronecker-11-seed2", "kronecker-12-seed3", "negative-weights":
			default:
				continue
			}
			for _, weighted := range []bool{false, true} {
				g := buildGraph(t, s, false, weighted, edges.KeyInt64)
				for _, src := range sourcesOf(g) {
					if !(s.negative && weighted) {
						r := run(t, SSSP{}, g, src, Params{})
						if err := validateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, refDijkstra(g, src)); err != nil {
							t.Fatalf("%s weighted=%v sortMin %d (workers %d): sssp from %d: %v", s.name, weighted, sortMin, par.Workers(), src, err)
						}
					}
					r := run(t, SSWP{}, g, src, Params{})
					ref := refWidest(g, src)
					for v, x := range r.Column("width").Float64 {
						if !(x == ref[v] || math.IsNaN(x) && math.IsInf(ref[v], -1)) {
							t.Fatalf("%s weighted=%v sortMin %d (workers %d): sswp from %d: vertex %d width %v, reference %v", s.name, weighted, sortMin, par.Workers(), src, v, x, ref[v])
						}
					}
				}
			}
		}
	}
}

// TestDeltaFusion runs Δ-stepping with fused rounds bounded as in a run
// and with every worker's share of the current bucket left to the next
// phase (fuseEdges 1: no share with an edge fuses), with hubs split as in
// a run and with every vertex of an edge or more a hub (in pieces of 3
// edges, and of 1; more than maxHubs a phase), against the references, at
// 1 and 3 workers and at more workers than cores; and checks fuses'
// bounds and that shareChunk gives every worker a part.
func TestDeltaFusion(t *testing.T) {
	defer func(e, s, p int64) { fuseEdges, splitEdges, pieceEdges = e, s, p }(fuseEdges, splitEdges, pieceEdges)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ total, workers, want int }{
		{1, 16, 1}, {148, 16, 1}, {1171, 16, 9}, {100_000, 16, 64}, {1000, 2, 62}, {2000, 1, 64},
	} {
		if got := shareChunk(c.total, c.workers); got != c.want {
			t.Fatalf("shareChunk(%d, %d) = %d, want %d", c.total, c.workers, got, c.want)
		}
	}
	d := newDeltaStepper(64)
	d.offs = []int64{0, 0, 10, fuseEdges + 10} // degrees 0, 10, fuseEdges
	for _, c := range []struct {
		us   []uint32
		want bool
	}{{nil, false}, {[]uint32{0, 1}, true}, {[]uint32{1, 2}, false}, {make([]uint32, fuseLimit), false}} {
		if got := d.fuses(c.us); got != c.want {
			t.Fatalf("fuses(%v) = %v, want %v", c.us, got, c.want)
		}
	}
	for _, c := range []struct{ fuse, split, piece int64 }{
		{fuseEdges, splitEdges, pieceEdges}, {1, splitEdges, pieceEdges}, {fuseEdges, 1, 3}, {1, 4, 1},
	} {
		fuseEdges, splitEdges, pieceEdges = c.fuse, c.split, c.piece
		for _, procs := range []int{1, 3, 2*runtime.NumCPU() + 1} {
			runtime.GOMAXPROCS(procs)
			for _, s := range shapes(t) {
				switch s.name {
				case "star", "chain", "zero-weights-ties", "kronecker-11-seed2", "kronecker-12-seed3":
				default:
					continue
				}
				g := buildGraph(t, s, false, true, edges.KeyInt64)
				for _, src := range sourcesOf(g) {
					runSSSPBothWidths(t, g, src, Params{})
					r := run(t, SSWP{}, g, src, Params{})
					ref := refWidest(g, src)
					for v, x := range r.Column("width").Float64 {
						if !(x == ref[v] || math.IsNaN(x) && math.IsInf(ref[v], -1)) {
							t.Fatalf("%s %+v (workers %d): sswp from %d: vertex %d width %v, reference %v", s.name, c, procs, src, v, x, ref[v])
						}
					}
				}
			}
		}
	}
}
