package operators

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

func run(t testing.TB, op Operator, g *convert.Graph, src uint32, p Params) *Result {
	t.Helper()
	return runTuned(t, op, g, src, p, nil)
}

// runTuned is run with the CPU engine's thresholds tune (nil: the defaults).
func runTuned(t testing.TB, op Operator, g *convert.Graph, src uint32, p Params, tune *tuning) *Result {
	t.Helper()
	if err := op.Prepare(&p); err != nil {
		t.Fatalf("%s: prepare: %v", op.Spec().Name, err)
	}
	r, err := CPU{}.Run(context.Background(), op, Input{Graph: g, Source: src, Params: p, tune: tune})
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
	for _, src := range optest.SourcesOf(g) {
		r := run(t, BFS{}, g, src, Params{})
		ref := optest.RefBFS(g, src)
		if err := optest.ValidateBFS(g, src, r.Column("depth").Int32, r.Column("parent").Vertex, ref); err != nil {
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
				if err := optest.ValidateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, optest.RefDijkstra(g, src)); err != nil {
					t.Fatalf("sssp from %d (delta %v): %v", src, delta, err)
				}
			}
		}

		refW := optest.RefWidest(g, src)
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
	ref := optest.RefPageRank(g, DefaultDamping)
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
	comp, refComp := r.Column("component").Vertex, optest.RefCC(g)
	for v := range comp {
		if comp[v] != refComp[v] {
			t.Fatalf("cc: vertex %d in component %d, reference %d", v, comp[v], refComp[v])
		}
	}
}

func TestOperatorsAgainstReferences(t *testing.T) {
	keyTypes := []edges.KeyType{edges.KeyInt64, edges.KeyInt32, edges.KeyString}
	k := 0
	for _, s := range optest.Shapes(t) {
		for _, directed := range []bool{false, true} {
			for _, weighted := range []bool{false, true} {
				kt := keyTypes[k%len(keyTypes)]
				k++
				name := fmt.Sprintf("%s/directed=%v/weighted=%v/%v", s.Name, directed, weighted, kt)
				t.Run(name, func(t *testing.T) {
					g := optest.BuildGraph(t, s, directed, weighted, kt)
					checkAll(t, g, s.Negative && weighted)
				})
			}
		}
	}
}

// TestOperatorsOddWorkers runs with more workers than cores, an odd
// number, so that chunk boundaries and contention differ from the default.
func TestOperatorsOddWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(5))
	for _, s := range optest.Shapes(t) {
		if s.Name != "kronecker-12-seed3" && s.Name != "star" && s.Name != "zero-weights-ties" {
			continue
		}
		for _, directed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/directed=%v", s.Name, directed), func(t *testing.T) {
				checkAll(t, optest.BuildGraph(t, s, directed, true, edges.KeyInt64), false)
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
	g := optest.BuildGraph(t, optest.Shape{Name: "pair", Edges: []optest.Edge{{U: 1, V: 2, W: 1}}}, false, true, edges.KeyInt64)
	for _, op := range []Operator{BFS{}, SSSP{}, SSWP{}} {
		if _, err := op.RunCPU(context.Background(), Input{Graph: g, Source: 2}); usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s with source 2 of 2 vertices: %v", op.Spec().Name, err)
		}
	}
}

func TestPageRankNotConverged(t *testing.T) {
	g := optest.BuildGraph(t, optest.Shape{Name: "k10", Edges: optest.KroneckerEdges(t, 10, 16, 1)}, true, false, edges.KeyInt64)
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
	g := optest.BuildGraph(t, optest.Shape{Name: "small", Edges: []optest.Edge{{U: 0, V: 1, W: 1}, {U: 0, V: 2, W: 1}, {U: 1, V: 2, W: 1}, {U: 2, V: 0, W: 1}, {U: 3, V: 2, W: 1}, {U: 1, V: 4, W: 1}}}, true, false, edges.KeyInt64)
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
			if optest.EdgeIndex(&g.Out, uint32(u), uint32(v)) >= 0 {
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
	g := optest.BuildGraph(t, optest.Shape{Name: "k10", Edges: optest.KroneckerEdges(t, 10, 16, 1)}, false, true, edges.KeyInt64)
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
	for _, s := range optest.Shapes(t) {
		if s.Name != "chain" && s.Name != "random-sparse" && s.Name != "kronecker-10-seed1" && s.Name != "negative-weights" {
			continue
		}
		g := optest.BuildGraph(t, s, true, true, edges.KeyInt64)
		for _, src := range optest.SourcesOf(g) {
			if !s.Negative {
				r := run(t, SSSP{}, g, src, Params{Delta: 1e-4})
				if err := optest.ValidateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, optest.RefDijkstra(g, src)); err != nil {
					t.Fatalf("%s: sssp from %d: %v", s.Name, src, err)
				}
			}
			r := run(t, SSWP{}, g, src, Params{Delta: 1e-5})
			ref := optest.RefWidest(g, src)
			for v, x := range r.Column("width").Float64 {
				if !(x == ref[v] || math.IsNaN(x) && math.IsInf(ref[v], -1)) {
					t.Fatalf("%s: sswp from %d: vertex %d width %v, reference %v", s.Name, src, v, x, ref[v])
				}
			}
		}
	}
}

// TestSSSPLogChunks shrinks the relaxation log's chunks so that parents
// are recovered from logs spanning many chunks and partly staged buffers.
func TestSSSPLogChunks(t *testing.T) {
	for _, chunk := range []int{1, 100, 300} {
		tune := defaultTuning()
		tune.relaxChunk = chunk
		for _, s := range optest.Shapes(t) {
			if s.Name != "kronecker-12-seed3" && s.Name != "zero-weights-ties" {
				continue
			}
			g := optest.BuildGraph(t, s, false, true, edges.KeyInt64)
			for _, src := range optest.SourcesOf(g) {
				r := runTuned(t, SSSP{}, g, src, Params{}, &tune)
				if err := optest.ValidateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, optest.RefDijkstra(g, src)); err != nil {
					t.Fatalf("%s, chunks of %d: sssp from %d: %v", s.Name, chunk, src, err)
				}
			}
		}
	}
}

// TestPageRankFloat32 checks the float32-contribution path (tolerances of
// Float32Tolerance and looser) against the float64 one and the reference,
// on both directions and with dangling vertices.
func TestPageRankFloat32(t *testing.T) {
	for _, s := range optest.Shapes(t) {
		switch s.Name {
		case "star", "disconnected", "kronecker-11-seed2", "kronecker-12-seed3", "random-sparse":
		default:
			continue
		}
		for _, directed := range []bool{false, true} {
			g := optest.BuildGraph(t, s, directed, false, edges.KeyInt64)
			ref := optest.RefPageRank(g, DefaultDamping)
			for _, tol := range []float64{Float32Tolerance, 1e-4} {
				r32 := run(t, PageRank{}, g, 0, Params{Tolerance: tol})
				if r32.Strategy != "pull (float32 contributions)" {
					t.Fatalf("tolerance %g: strategy %q", tol, r32.Strategy)
				}
				// Just below the threshold: the float64 path.
				r64 := run(t, PageRank{}, g, 0, Params{Tolerance: Float32Tolerance * 0.999})
				if r64.Strategy != "pull" {
					t.Fatalf("tolerance %g: strategy %q", Float32Tolerance*0.999, r64.Strategy)
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
						s.Name, directed, tol, d64, dRef, sum)
				}
				if len(r32.Warnings) != 0 {
					t.Fatalf("%s: warnings %q", s.Name, r32.Warnings)
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
			if len(want) < defaultTuning().sortMin && len(front) < len(want) {
				t.Fatalf("workers %d round %d: frontier of %d, want the %d vertices", workers, round, len(front), len(want))
			}
			if len(want) >= defaultTuning().sortMin {
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
				if len(want) >= defaultTuning().sortMin && v%5 == 0 {
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
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, m := range []int{1, 1 << 30, -7} {
		tune := defaultTuning()
		tune.sortMin = m
		if m < 0 {
			tune.sortMin = 1
			runtime.GOMAXPROCS(-m)
		}
		for _, s := range optest.Shapes(t) {
			switch s.Name {
			case "star", "chain", "zero-weights-ties", "kronecker-11-seed2", "kronecker-12-seed3", "negative-weights":
			default:
				continue
			}
			for _, weighted := range []bool{false, true} {
				g := optest.BuildGraph(t, s, false, weighted, edges.KeyInt64)
				for _, src := range optest.SourcesOf(g) {
					if !(s.Negative && weighted) {
						r := runTuned(t, SSSP{}, g, src, Params{}, &tune)
						if err := optest.ValidateSSSP(g, src, r.Column("distance").Float64, r.Column("parent").Vertex, optest.RefDijkstra(g, src)); err != nil {
							t.Fatalf("%s weighted=%v sortMin %d (workers %d): sssp from %d: %v", s.Name, weighted, tune.sortMin, par.Workers(), src, err)
						}
					}
					r := runTuned(t, SSWP{}, g, src, Params{}, &tune)
					ref := optest.RefWidest(g, src)
					for v, x := range r.Column("width").Float64 {
						if !(x == ref[v] || math.IsNaN(x) && math.IsInf(ref[v], -1)) {
							t.Fatalf("%s weighted=%v sortMin %d (workers %d): sswp from %d: vertex %d width %v, reference %v", s.Name, weighted, tune.sortMin, par.Workers(), src, v, x, ref[v])
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
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ total, workers, want int }{
		{1, 16, 1}, {148, 16, 1}, {1171, 16, 9}, {100_000, 16, 64}, {1000, 2, 62}, {2000, 1, 64},
	} {
		if got := shareChunk(c.total, c.workers); got != c.want {
			t.Fatalf("shareChunk(%d, %d) = %d, want %d", c.total, c.workers, got, c.want)
		}
	}
	d := newDeltaStepper(64)
	def := defaultTuning()
	d.offs = []int64{0, 0, 10, def.fuseEdges + 10} // degrees 0, 10, fuseEdges
	for _, c := range []struct {
		us   []uint32
		want bool
	}{{nil, false}, {[]uint32{0, 1}, true}, {[]uint32{1, 2}, false}, {make([]uint32, fuseLimit), false}} {
		if got := d.fuses(c.us); got != c.want {
			t.Fatalf("fuses(%v) = %v, want %v", c.us, got, c.want)
		}
	}
	for _, c := range []struct{ fuse, split, piece int64 }{
		{def.fuseEdges, def.splitEdges, def.pieceEdges}, {1, def.splitEdges, def.pieceEdges}, {def.fuseEdges, 1, 3}, {1, 4, 1},
	} {
		tune := def
		tune.fuseEdges, tune.splitEdges, tune.pieceEdges = c.fuse, c.split, c.piece
		for _, procs := range []int{1, 3, 2*runtime.NumCPU() + 1} {
			runtime.GOMAXPROCS(procs)
			for _, s := range optest.Shapes(t) {
				switch s.Name {
				case "star", "chain", "zero-weights-ties", "kronecker-11-seed2", "kronecker-12-seed3":
				default:
					continue
				}
				g := optest.BuildGraph(t, s, false, true, edges.KeyInt64)
				for _, src := range optest.SourcesOf(g) {
					runSSSPBothWidths(t, g, src, Params{}, tune)
					r := runTuned(t, SSWP{}, g, src, Params{}, &tune)
					ref := optest.RefWidest(g, src)
					for v, x := range r.Column("width").Float64 {
						if !(x == ref[v] || math.IsNaN(x) && math.IsInf(ref[v], -1)) {
							t.Fatalf("%s %+v (workers %d): sswp from %d: vertex %d width %v, reference %v", s.Name, c, procs, src, v, x, ref[v])
						}
					}
				}
			}
		}
	}
}
