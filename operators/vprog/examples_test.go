package vprog

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators/internal/optest"
)

// example reads and checks examples/programs/NAME.vp.
func example(t testing.TB, name string) *Program {
	t.Helper()
	return parseFile(t, filepath.Join("..", "..", "examples", "programs", name+".vp"))
}

// testGraph is a graph the examples run on, and which programs apply.
type testGraph struct {
	name string
	g    *convert.Graph
	// scaled says the weights are the diffusion coefficients of
	// optest.ScaledWeights (every vertex's in-edges sum below 1), which HS and NN
	// need to converge.
	scaled bool
	// negative says some weights are negative (no sssp).
	negative bool
}

// testGraphs are optest's shapes, directed and undirected, with their
// own weights and with scaled ones.
func testGraphs(t testing.TB) []testGraph {
	var list []testGraph
	for _, s := range optest.Shapes(t) {
		for _, directed := range []bool{true, false} {
			name := fmt.Sprintf("%s/directed=%v", s.Name, directed)
			list = append(list,
				testGraph{name, optest.BuildGraph(t, s, directed, true, edges.KeyInt64), false, s.Negative},
				testGraph{name + "/scaled", optest.BuildGraph(t, optest.ScaledWeights(s), directed, true, edges.KeyInt64), true, false})
		}
	}
	return list
}

func runCPU(t testing.TB, p *Program, g *convert.Graph, src int64) *Outcome {
	t.Helper()
	out, err := RunCPU(context.Background(), p, Input{Graph: g, Source: src})
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	return out
}

// TestTraversalsCPU checks bfs, sssp, sswp and cc against sequential
// references.
func TestTraversalsCPU(t *testing.T) {
	bfs, sssp, sswp, cc := example(t, "bfs"), example(t, "sssp"), example(t, "sswp"), example(t, "cc")
	for _, tg := range testGraphs(t) {
		if tg.scaled {
			continue
		}
		g := tg.g
		for _, s := range optest.SourcesOf(g) {
			if err := sameInts(runCPU(t, bfs, g, int64(s)).Vertex[0].Int, refLevels(g, s)); err != nil {
				t.Errorf("%s: bfs from %d: %v", tg.name, s, err)
			}
			if !tg.negative {
				if err := sameFloats(runCPU(t, sssp, g, int64(s)).Vertex[0].Float, optest.RefDijkstra(g, s), 1e-9); err != nil {
					t.Errorf("%s: sssp from %d: %v", tg.name, s, err)
				}
			}
			want := optest.RefWidest(g, s)
			for i, w := range want {
				if w <= 0 { // unreached, or only over weights <= 0: the program's 0
					want[i] = 0
				}
			}
			if err := sameFloats(runCPU(t, sswp, g, int64(s)).Vertex[0].Float, want, 0); err != nil {
				t.Errorf("%s: sswp from %d: %v", tg.name, s, err)
			}
		}
		if !g.Directed {
			ref := optest.RefCC(g)
			got := runCPU(t, cc, g, -1).Vertex[0].Int
			for i := range ref {
				if got[i] != int64(ref[i]) {
					t.Errorf("%s: cc: vertex %d in component %d, want %d", tg.name, i, got[i], ref[i])
					break
				}
			}
		}
	}
}

// refLevels is BFS's levels with the program's INF for unreached.
func refLevels(g *convert.Graph, s uint32) []int64 {
	var out []int64
	for _, d := range optest.RefBFS(g, s) {
		if d < 0 {
			out = append(out, math.MaxUint32)
		} else {
			out = append(out, int64(d))
		}
	}
	return out
}

func sameInts(got, want []int64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("vertex %d: %d, want %d", i, got[i], want[i])
		}
	}
	return nil
}

// sameFloats compares within rel·max(1, |want|); infinities must match.
func sameFloats(got, want []float64, rel float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g == w {
			continue
		}
		if math.IsInf(w, 0) || math.IsInf(g, 0) || math.Abs(g-w) > rel*math.Max(1, math.Abs(w)) {
			return fmt.Errorf("vertex %d: %v, want %v", i, g, w)
		}
	}
	return nil
}

// TestSumProgramsCPU checks pr, nn, hs and cs against sequential
// references of their definitions (CuSha's Table 3).
func TestSumProgramsCPU(t *testing.T) {
	pr, nn, hs, cs := example(t, "pr"), example(t, "nn"), example(t, "hs"), example(t, "cs")
	// CuSha's HS and CS converge slowly (Jacobi's iteration): a few
	// hundred iterations, stopped at the limit where they have not, keep
	// the test quick; the reference stops there too.
	hs, cs = limited(t, hs, 200), limited(t, cs, 200)
	for _, tg := range testGraphs(t) {
		g := tg.g
		if g.NumEdges() > 100000 {
			continue // kronecker-12: the traversals run on it
		}
		check := func(what string, got []float64, want []float64, it int, out *Outcome, rel float64) {
			t.Helper()
			if err := sameFloats(got, want, rel); err != nil {
				t.Errorf("%s: %s: %v", tg.name, what, err)
			}
			if out.Iterations != it {
				t.Errorf("%s: %s: %d iterations, the reference %d", tg.name, what, out.Iterations, it)
			}
		}
		want, it := refPR(g, 0.85, pr.Tolerance, pr.MaxIterations)
		out := runCPU(t, pr, g, -1)
		check("pr", out.Vertex[0].Float, want, it, out, 0)
		if !tg.scaled {
			continue
		}
		want, it = refNN(g, nn.Tolerance, nn.MaxIterations)
		out = runCPU(t, nn, g, -1)
		check("nn", out.Vertex[0].Float, want, it, out, 1e-6)
		srcs := optest.SourcesOf(g)
		for _, s := range srcs[len(srcs)-1:] {
			want, it = refHS(g, s, hs.Tolerance, hs.MaxIterations)
			out = runCPU(t, hs, g, int64(s))
			check(fmt.Sprintf("hs from %d", s), out.Vertex[0].Float, want, it, out, 0)
			want, it = refCS(g, s, cs.Tolerance, cs.MaxIterations)
			out = runCPU(t, cs, g, int64(s))
			check(fmt.Sprintf("cs from %d", s), out.Vertex[0].Float, want, it, out, 0)
		}
	}
}

// jacobi runs a vertex program's iteration the plain way: every vertex
// every iteration, from the previous iteration's values; step(v, x)
// returns v's new value and whether it changed. It returns the values
// and the iterations run.
func jacobi[T any](n int, x []T, maxIt int, step func(v int, x []T) (T, bool)) ([]T, int) {
	next := make([]T, n)
	for it := 1; it <= maxIt; it++ {
		changed := false
		for v := 0; v < n; v++ {
			nv, ok := step(v, x)
			next[v] = x[v]
			if ok {
				next[v], changed = nv, true
			}
		}
		if !changed {
			return x, it
		}
		x, next = next, x
	}
	return x, maxIt
}

func refPR(g *convert.Graph, d, tol float64, maxIt int) ([]float64, int) {
	n, in := g.NumVertices(), g.In()
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / float64(n)
	}
	return jacobi(n, x, maxIt, func(v int, x []float64) (float64, bool) {
		sum := 0.0
		for e := in.Offsets[v]; e < in.Offsets[v+1]; e++ {
			u := in.Targets[e]
			sum += x[u] / float64(g.Out.Degree(u))
		}
		r := (1-d)/float64(n) + d*sum
		return r, math.Abs(r-x[v]) > tol
	})
}

func refNN(g *convert.Graph, tol float64, maxIt int) ([]float64, int) {
	n, in := g.NumVertices(), g.In()
	x := make([]float32, n)
	for i := range x {
		x[i] = 1
	}
	x, it := jacobi(n, x, maxIt, func(v int, x []float32) (float32, bool) {
		var sum float32
		for e := in.Offsets[v]; e < in.Offsets[v+1]; e++ {
			sum += x[in.Targets[e]] * float32(in.Weights[e])
		}
		y := float32(math.Tanh(float64(sum)))
		return y, math.Abs(float64(y-x[v])) > tol
	})
	return widen(x), it
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func refHS(g *convert.Graph, s uint32, tol float64, maxIt int) ([]float64, int) {
	n, in := g.NumVertices(), g.In()
	q := make([]float32, n)
	q[s] = 1000
	q, it := jacobi(n, q, maxIt, func(v int, q []float32) (float32, bool) {
		qn := q[v]
		for e := in.Offsets[v]; e < in.Offsets[v+1]; e++ {
			qn += (q[in.Targets[e]] - q[v]) * float32(in.Weights[e])
		}
		return qn, math.Abs(float64(q[v]-qn)) > tol
	})
	return widen(q), it
}

func refCS(g *convert.Graph, s uint32, tol float64, maxIt int) ([]float64, int) {
	n, in := g.NumVertices(), g.In()
	volts := make([]float32, n)
	volts[s] = 1
	volts, it := jacobi(n, volts, maxIt, func(v int, volts []float32) (float32, bool) {
		if v == int(s) || v == 0 {
			return volts[v], false
		}
		var sum, gsum float32
		for e := in.Offsets[v]; e < in.Offsets[v+1]; e++ {
			w := float32(in.Weights[e])
			sum += volts[in.Targets[e]] * w
			gsum += w
		}
		if gsum == 0 {
			return 0, false
		}
		y := sum / gsum
		return y, math.Abs(float64(y-volts[v])) > tol
	})
	return widen(volts), it
}

func limited(t testing.TB, p *Program, maxIt int) *Program {
	p, err := p.With(Options{MaxIterations: maxIt})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
