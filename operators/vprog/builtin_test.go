package vprog

import (
	"context"
	"math"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/operators"
)

// builtin runs a built-in operator on the CPU.
func builtin(t *testing.T, op operators.Operator, g *convert.Graph, src uint32) *operators.Result {
	t.Helper()
	p := operators.Params{Source: "s"}
	if err := op.Prepare(&p); err != nil {
		t.Fatal(err)
	}
	r, err := op.RunCPU(context.Background(), operators.Input{Graph: g, Source: src, Params: p})
	if err != nil {
		t.Fatalf("%s: %v", op.Spec().Name, err)
	}
	return r
}

// TestAgainstBuiltins compares bfs.vp, sssp.vp, sswp.vp, cc.vp and pr.vp
// with gpipe's operators bfs, sssp, sswp, cc and pagerank.
func TestAgainstBuiltins(t *testing.T) {
	bfs, sssp, sswp, cc, pr := example(t, "bfs"), example(t, "sssp"), example(t, "sswp"), example(t, "cc"), example(t, "pr")
	for _, tg := range testGraphs(t) {
		if tg.scaled || tg.negative || tg.g.NumEdges() > 100000 {
			continue
		}
		g := tg.g
		for _, s := range builtinSources(g) {
			depth := builtin(t, operators.BFS{}, g, s).Column("depth").Int32
			for i, d := range runCPU(t, bfs, g, int64(s)).Vertex[0].Int {
				if (d == math.MaxUint32) != (depth[i] < 0) || d != math.MaxUint32 && d != int64(depth[i]) {
					t.Fatalf("%s: bfs.vp from %d: vertex %d at %d, bfs's depth %d", tg.name, s, i, d, depth[i])
				}
			}
			dist := builtin(t, operators.SSSP{}, g, s).Column("distance").Float64
			checkNullFloats(t, tg.name+": sssp.vp", runCPU(t, sssp, g, int64(s)).Vertex[0].Float, dist, math.Inf(1), 1e-9)
			width := builtin(t, operators.SSWP{}, g, s).Column("width").Float64
			got := runCPU(t, sswp, g, int64(s)).Vertex[0].Float
			for i, w := range width {
				if w == 0 { // reached only through weights 0: the program's null
					width[i] = math.NaN()
				}
			}
			checkNullFloats(t, tg.name+": sswp.vp", got, width, 0, 0)
		}
		if !g.Directed {
			comp := builtin(t, operators.CC{}, g, 0).Column("component").Vertex
			for i, c := range runCPU(t, cc, g, -1).Vertex[0].Int {
				if c != int64(comp[i]) {
					t.Fatalf("%s: cc.vp: vertex %d in %d, cc's %d", tg.name, i, c, comp[i])
				}
			}
			if noDangling(g) {
				rank := builtin(t, operators.PageRank{}, g, 0).Column("rank").Float64
				checkNullFloats(t, tg.name+": pr.vp", runCPU(t, pr, g, -1).Vertex[0].Float, rank, math.NaN(), 1e-6)
			}
		}
	}
}

func builtinSources(g *convert.Graph) []uint32 {
	if g.NumVertices() == 0 {
		return nil
	}
	return []uint32{0, uint32(g.NumVertices() / 2)}
}

func noDangling(g *convert.Graph) bool {
	for v := 0; v < g.NumVertices(); v++ {
		if g.Out.Degree(uint32(v)) == 0 {
			return false
		}
	}
	return g.NumVertices() > 0
}

// checkNullFloats compares a program's floats (null where they equal
// null) with an operator's (NaN for null), within rel.
func checkNullFloats(t *testing.T, what string, got, want []float64, null, rel float64) {
	t.Helper()
	for i, w := range want {
		g := got[i]
		gNull := g == null || math.IsNaN(null) && math.IsNaN(g)
		switch {
		case gNull != math.IsNaN(w):
			t.Fatalf("%s: vertex %d: %v, the operator's %v", what, i, g, w)
		case gNull:
		case math.Abs(g-w) > rel*math.Max(1, math.Abs(w)):
			t.Fatalf("%s: vertex %d: %v, the operator's %v", what, i, g, w)
		}
	}
}
