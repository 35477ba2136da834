package vpgpu

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators/internal/optest"
	"github.com/gpipe/gpipe/operators/vprog"
)

// device is the GPU of the tests; they skip without one (and fail under
// GPIPE_REQUIRE_GPU=1).
func device(t testing.TB) *gpu.Context {
	t.Helper()
	c, err := gpu.Default()
	if err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("GPIPE_REQUIRE_GPU=1 but no GPU is usable: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return c
}

func example(t testing.TB, name string) *vprog.Program {
	t.Helper()
	path := filepath.Join("..", "..", "..", "examples", "programs", name+".vp")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := vprog.Parse(path, string(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type graphCase struct {
	name   string
	g      *convert.Graph
	scaled bool
}

func graphs(t *testing.T) []graphCase {
	var list []graphCase
	for _, s := range optest.Shapes(t) {
		if s.Negative {
			continue
		}
		for _, directed := range []bool{true, false} {
			list = append(list,
				graphCase{fmt.Sprintf("%s/directed=%v", s.Name, directed), optest.BuildGraph(t, s, directed, true, edges.KeyInt64), false},
				graphCase{fmt.Sprintf("%s/directed=%v/scaled", s.Name, directed), optest.BuildGraph(t, optest.ScaledWeights(s), directed, true, edges.KeyInt64), true})
		}
	}
	for _, rg := range optest.RealGraphs(t) {
		list = append(list, graphCase{"real/" + rg.Name, rg.G, false})
	}
	return list
}

// TestExamplesGPU runs the eight examples on the GPU with every strategy
// (vwc with several virtual warp sizes) and compares them with the CPU's
// runs: integer programs exactly (and their iterations), float ones
// within their tolerance.
func TestExamplesGPU(t *testing.T) {
	c := device(t)
	progs := map[string]*vprog.Program{}
	for _, name := range []string{"bfs", "sssp", "pr", "cc", "sswp", "nn", "hs", "cs"} {
		p := example(t, name)
		if name == "hs" || name == "cs" {
			var err error
			if p, err = p.With(vprog.Options{MaxIterations: 300}); err != nil {
				t.Fatal(err)
			}
		}
		progs[name] = p
	}
	for _, gc := range graphs(t) {
		t.Run(gc.name, func(t *testing.T) { examplesOn(t, c, gc, progs) })
	}
}

// examplesOn compares the programs' GPU runs on gc with every config
// with their CPU runs (a subtest a graph: its log shows how far a run
// got).
func examplesOn(t *testing.T, c *gpu.Context, gc graphCase, progs map[string]*vprog.Program) {
	srcs := optest.SourcesOf(gc.g)
	if len(srcs) == 0 {
		return
	}
	src := int64(srcs[len(srcs)-1])
	for name, p := range progs {
		if (name == "nn" || name == "hs") && !gc.scaled {
			continue
		}
		in := vprog.Input{Graph: gc.g, Source: src}
		want, err := vprog.RunCPU(context.Background(), p, in)
		if err != nil {
			t.Fatalf("%s on the CPU: %v", name, err)
		}
		for _, o := range configs(strings.HasPrefix(gc.name, "real/")) {
			got, st, err := Run(context.Background(), c, p, in, o)
			if err != nil {
				t.Fatalf("%s on the GPU (%+v): %v", name, o, err)
			}
			if err := same(p, got, want); err != nil {
				t.Errorf("%s on the GPU (%s, %s): %v", name, st.Strategy, st.Shape(), err)
			}
		}
	}
}

// configs are the runs each test graph gets: vwc at several virtual warp
// sizes, auto, and every other strategy (gshards also with windows of 7
// vertices, so that small graphs have several shards, the last partial);
// on the real graphs auto and each strategy once.
func configs(real bool) []Options {
	list := []Options{{}}
	if !real {
		list = append(list, Options{Strategy: "vwc", VWarp: 1}, Options{Strategy: "vwc", VWarp: 32}, Options{Strategy: "gshards", ShardVertices: 7})
	}
	for _, s := range vprog.Strategies() {
		list = append(list, Options{Strategy: s})
	}
	return list
}

// same compares a GPU outcome with the CPU's.
func same(p *vprog.Program, got, want *vprog.Outcome) error {
	exact := true
	for k, f := range p.Vertex {
		if f.Type.IsFloat() {
			exact = false
			if err := closeFloats(got.Vertex[k].Float, want.Vertex[k].Float, p.Tolerance); err != nil {
				return fmt.Errorf("field %s: %v", f.Name, err)
			}
			continue
		}
		for i, x := range want.Vertex[k].Int {
			if got.Vertex[k].Int[i] != x {
				return fmt.Errorf("field %s, vertex %d: %d, the CPU's %d", f.Name, i, got.Vertex[k].Int[i], x)
			}
		}
	}
	if exact && (got.Iterations != want.Iterations || got.Converged != want.Converged) {
		return fmt.Errorf("%d iterations (converged %v), the CPU's %d (%v)", got.Iterations, got.Converged, want.Iterations, want.Converged)
	}
	return nil
}

// closeFloats compares within 1000 tolerances, or 1e-5 of the value:
// sums in another order may stop a vertex an iteration sooner or later.
// Programs without a tolerance (sssp, sswp: min and max) are exact.
func closeFloats(got, want []float64, tol float64) error {
	for i, w := range want {
		g := got[i]
		if g == w || tol > 0 && math.Abs(g-w) <= math.Max(1000*tol, 1e-5*math.Abs(w)) {
			continue
		}
		return fmt.Errorf("vertex %d: %v, the CPU's %v", i, g, w)
	}
	return nil
}

// TestFaultGPU checks that a division by zero on the GPU is the error the
// CPU gives, with every strategy: the program's line and column, and a
// vertex.
func TestFaultGPU(t *testing.T) {
	c := device(t)
	g := optest.BuildGraph(t, optest.Shapes(t)[3], true, true, edges.KeyInt64)
	text := "program t\nvertex x float64 = 1 output\ncompute { atomicAdd(local.x, src.x / (src.x - 1)) }\nupdate_condition { return false }"
	p, err := vprog.Parse("bad.vp", text)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range vprog.Strategies() {
		_, _, err = Run(context.Background(), c, p, vprog.Input{Graph: g, Source: -1}, Options{Strategy: s, VWarp: 4})
		if usererr.KindOf(err) != usererr.Input || !strings.HasPrefix(fmt.Sprint(err), "bad.vp, line 3: column 36: division by zero at vertex ") {
			t.Errorf("%s: %v, want the division by zero at bad.vp line 3 column 36", s, err)
		}
	}
}

// TestStrategyRefused checks that a strategy programs do not have is a
// usage error naming those they have (cw is gshards here: ptx_shards.go).
func TestStrategyRefused(t *testing.T) {
	g := optest.BuildGraph(t, optest.Shapes(t)[3], true, true, edges.KeyInt64)
	_, _, err := Run(context.Background(), nil, example(t, "cc"), vprog.Input{Graph: g, Source: -1}, Options{Strategy: "cw"})
	if usererr.KindOf(err) != usererr.Usage || !strings.Contains(fmt.Sprint(err), "vwc, warpseg, kites, gshards") {
		t.Fatalf("%v, want a usage error listing the strategies", err)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// TestNeed checks the memory estimate the Flight server places programs
// by: each strategy's extra buffers on top of vwc's, auto the most.
func TestNeed(t *testing.T) {
	g := optest.BuildGraph(t, optest.Shapes(t)[3], true, true, edges.KeyInt64)
	p := example(t, "sssp")
	vwc := Need(p, g, "vwc")
	n, m := int64(g.NumVertices()), g.NumEdges()
	if min := 2*8*(n+1) + 8*m + 2*4*n; vwc < min {
		t.Errorf("vwc needs %d bytes, less than the layouts and the field's %d", vwc, min)
	}
	for _, s := range []string{"warpseg", "gshards", "kites"} {
		if need := Need(p, g, s); need <= vwc || need > Need(p, g, "auto") {
			t.Errorf("%s needs %d bytes: vwc %d, auto %d", s, need, vwc, Need(p, g, "auto"))
		}
	}
}

// TestChoose checks auto's rule (the H200's figures, strategy.go): a sum
// over skewed in-degrees takes warpseg, HS's too though it starts from a
// source; a traversal there, and any program on even in-degrees, vwc.
func TestChoose(t *testing.T) {
	shapes := map[string]optest.Shape{}
	for _, s := range optest.Shapes(t) {
		shapes[s.Name] = s
	}
	star := optest.BuildGraph(t, shapes["star"], true, true, edges.KeyInt64)
	chain := optest.BuildGraph(t, shapes["chain"], false, true, edges.KeyInt64)
	for _, c := range []struct {
		prog string
		g    *convert.Graph
		want string
	}{{"pr", star, "warpseg"}, {"hs", star, "warpseg"}, {"bfs", star, "vwc"}, {"cc", star, "vwc"}, {"pr", chain, "vwc"}} {
		if got, why := choose(example(t, c.prog), c.g); got != c.want || !strings.HasPrefix(why, "auto: ") {
			t.Errorf("%s: auto chose %s (%s), want %s", c.prog, got, why, c.want)
		}
	}
}
