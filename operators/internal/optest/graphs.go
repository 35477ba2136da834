// Package optest holds what the operators' tests share, on the CPU and the
// GPU: the test graphs (random shapes, Kronecker, grids, the real graphs of
// ../shared/data/real) and the simple sequential references every
// implementation is compared with.
package optest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
)

// Edge is a test edge between integer keys.
type Edge struct {
	U, V int64
	W    float64
}

// Shape is a test graph as an edge list. Negative says some weights are
// negative (so sssp does not apply).
type Shape struct {
	Name     string
	Edges    []Edge
	Negative bool
}

// BuildGraph builds edges with keys of the given type (integer keys are
// mapped so that neither their order nor their values are the ids'; string
// keys sort differently from the numbers they spell).
func BuildGraph(t testing.TB, s Shape, directed, weighted bool, kt edges.KeyType) *convert.Graph {
	t.Helper()
	tab := &edges.Table{
		Name:      s.Name,
		Columns:   edges.Columns{}.WithDefaults(),
		KeyType:   kt,
		HasWeight: weighted,
		RowsRead:  int64(len(s.Edges)),
		Skipped:   edges.Skips{},
	}
	// Two chunks, to exercise chunked tables.
	half := len(s.Edges) / 2
	for ci, part := range [][]Edge{s.Edges[:half], s.Edges[half:]} {
		c := edges.Chunk{FirstRow: int64(ci * half)}
		var src, dst edges.Keys
		switch kt {
		case edges.KeyInt32:
			src.Int32, dst.Int32 = make([]int32, 0, len(part)), make([]int32, 0, len(part))
			for _, e := range part {
				src.Int32 = append(src.Int32, int32(1000-3*e.U))
				dst.Int32 = append(dst.Int32, int32(1000-3*e.V))
			}
		case edges.KeyInt64:
			src.Int64, dst.Int64 = make([]int64, 0, len(part)), make([]int64, 0, len(part))
			for _, e := range part {
				src.Int64 = append(src.Int64, e.U<<33+5)
				dst.Int64 = append(dst.Int64, e.V<<33+5)
			}
		case edges.KeyString:
			src.Str, dst.Str = &edges.Strings{Offsets: []int64{0}}, &edges.Strings{Offsets: []int64{0}}
			for _, e := range part {
				for _, p := range []struct {
					s *edges.Strings
					k int64
				}{{src.Str, e.U}, {dst.Str, e.V}} {
					p.s.Data = append(p.s.Data, "k"+strconv.FormatInt(p.k, 10)...)
					p.s.Offsets = append(p.s.Offsets, int64(len(p.s.Data)))
				}
			}
		}
		c.Src, c.Dst = src, dst
		if weighted {
			for _, e := range part {
				c.Weight = append(c.Weight, e.W)
			}
		}
		tab.Chunks = append(tab.Chunks, c)
	}
	g, err := convert.Build(context.Background(), tab, convert.BuildOptions{
		Undirected: !directed, Weighted: weighted, Weights: convert.FiniteWeights, BuildIn: true,
	})
	if err != nil {
		t.Fatalf("%s: build: %v", s.Name, err)
	}
	return g
}

// KroneckerEdges draws a small Graph 500 graph with GAP's weights.
func KroneckerEdges(t testing.TB, scale, edgeFactor int, seed uint64) []Edge {
	t.Helper()
	tab, err := gen.Kronecker{Scale: scale, EdgeFactor: edgeFactor, Seed: seed, Weighted: true}.Generate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var edges []Edge
	for _, c := range tab.Chunks {
		for i := range c.Src.Int64 {
			edges = append(edges, Edge{c.Src.Int64[i], c.Dst.Int64[i], c.Weight[i]})
		}
	}
	return edges
}

// ScaledWeights is s, named NAME/scaled, with each edge's weight in
// (0, 0.9/(deg(u)+deg(v))], the degrees counting both ends of every edge:
// the weights into any vertex sum below 0.9 whichever way the edges are
// stored, so that the sum programs HS and NN converge (as gpipe gen
// --edge-columns makes them).
func ScaledWeights(s Shape) Shape {
	deg := map[int64]int{}
	for _, e := range s.Edges {
		deg[e.U]++
		deg[e.V]++
	}
	out := Shape{Name: s.Name + "/scaled"}
	for i, e := range s.Edges {
		frac := 0.1 + 0.8*math.Mod(float64(i)*0.6180339887, 1)
		out.Edges = append(out.Edges, Edge{U: e.U, V: e.V, W: frac / float64(deg[e.U]+deg[e.V])})
	}
	return out
}

// Shapes are the graphs every operator is tested on.
func Shapes(t testing.TB) []Shape {
	rng := rand.New(rand.NewPCG(42, 7))
	var list []Shape
	add := func(name string, edges []Edge, negative bool) {
		list = append(list, Shape{name, edges, negative})
	}
	add("one-vertex", []Edge{{7, 7, 1}}, false)
	add("self-loops-only", []Edge{{1, 1, 1}, {2, 2, 3}, {3, 3, 2}}, false)
	add("parallel-edges", []Edge{{0, 1, 5}, {0, 1, 2}, {1, 2, 3}, {1, 2, 9}, {0, 2, 10}, {2, 0, 1}, {2, 3, 4}, {3, 2, 1}, {2, 2, 1}}, false)
	var dis []Edge
	for i := int64(0); i < 30; i++ { // a cycle, a path, isolated pairs
		dis = append(dis, Edge{i, (i + 1) % 30, float64(1 + i%4)})
		dis = append(dis, Edge{100 + i, 101 + i, float64(1 + i%3)})
		dis = append(dis, Edge{200 + 2*i, 201 + 2*i, 2})
	}
	add("disconnected", dis, false)
	var star []Edge
	for i := int64(1); i <= 3000; i++ {
		star = append(star, Edge{0, i, float64(1 + i%7)}, Edge{i, 0, float64(1 + i%5)})
		if i%10 == 0 {
			star = append(star, Edge{i, i + 1, 1})
		}
	}
	add("star", star, false)
	var chain []Edge
	for i := int64(0); i < 3000; i++ {
		chain = append(chain, Edge{i, i + 1, float64(1 + rng.IntN(100))})
	}
	add("chain", chain, false)
	var complete []Edge
	for i := int64(0); i < 40; i++ {
		for j := int64(0); j < 40; j++ {
			if i != j {
				complete = append(complete, Edge{i, j, float64(rng.IntN(5))})
			}
		}
	}
	add("complete", complete, false)
	// Zero weights and many ties: shortest-path trees must stay trees.
	var ties []Edge
	for i := 0; i < 3000; i++ {
		ties = append(ties, Edge{int64(rng.IntN(800)), int64(rng.IntN(800)), float64(rng.IntN(3))})
	}
	add("zero-weights-ties", ties, false)
	var sparse []Edge
	for i := 0; i < 6000; i++ {
		sparse = append(sparse, Edge{int64(rng.IntN(3000)), int64(rng.IntN(3000)), rng.Float64() * 10})
	}
	add("random-sparse", sparse, false)
	var neg []Edge
	for i := 0; i < 6000; i++ {
		neg = append(neg, Edge{int64(rng.IntN(2000)), int64(rng.IntN(2000)), math.Round((rng.Float64()*10-5)*100) / 100})
	}
	add("negative-weights", neg, true)
	add("kronecker-10-seed1", KroneckerEdges(t, 10, 16, 1), false)
	add("kronecker-11-seed2", KroneckerEdges(t, 11, 8, 2), false)
	add("kronecker-12-seed3", KroneckerEdges(t, 12, 16, 3), false)
	return list
}

// SourcesOf picks the first vertex, a middle one and the largest out-degree.
func SourcesOf(g *convert.Graph) []uint32 {
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

// GridEdges is the rows × cols 4-neighbour grid, vertex r·cols + c, each
// edge once, with random integer weights 1..255.
func GridEdges(rows, cols int64, seed uint64) []Edge {
	rng := rand.New(rand.NewPCG(seed, 3))
	var edges []Edge
	for r := int64(0); r < rows; r++ {
		for c := int64(0); c < cols; c++ {
			v := r*cols + c
			if c+1 < cols {
				edges = append(edges, Edge{v, v + 1, float64(1 + rng.IntN(255))})
			}
			if r+1 < rows {
				edges = append(edges, Edge{v, v + cols, float64(1 + rng.IntN(255))})
			}
		}
	}
	return edges
}

// GridShapes are grids of several aspect ratios: a square, a long strip (a
// diameter in the thousands with a frontier of a few vertices) and a path.
func GridShapes(seed uint64) []Shape {
	return []Shape{
		{Name: "grid-120x90", Edges: GridEdges(120, 90, seed)},
		{Name: "grid-3x2500", Edges: GridEdges(3, 2500, seed+1)},
		{Name: "path-6000", Edges: GridEdges(1, 6000, seed+2)},
	}
}

// ChainShapes are graphs whose vertices are most of them inside chains
// (paths of vertices of degree 2, convert.Chains), with random integer
// weights 1..20: a random graph on a core of vertices whose edges are cut
// into chains of up to 8 vertices, a chain from a core vertex back to
// itself, and cycles of vertices of degree 2 alone beside it; of two
// sizes.
func ChainShapes(seed uint64) []Shape {
	var list []Shape
	for _, core := range []int64{300, 40} {
		rng := rand.New(rand.NewPCG(seed, uint64(core)))
		next := core
		var edges []Edge
		path := func(vs ...int64) {
			for i := 1; i < len(vs); i++ {
				edges = append(edges, Edge{vs[i-1], vs[i], float64(1 + rng.IntN(20))})
			}
		}
		chain := func(u, v int64, inside int) {
			vs := []int64{u}
			for range inside {
				vs = append(vs, next)
				next++
			}
			path(append(vs, v)...)
		}
		for range 2 * core {
			chain(rng.Int64N(core), rng.Int64N(core), rng.IntN(9))
		}
		chain(0, 0, 4)
		for range 3 {
			first := next
			next++
			chain(first, first, 2+rng.IntN(6)) // a cycle of degree-2 vertices
		}
		list = append(list, Shape{Name: fmt.Sprintf("chains-%d", next), Edges: edges})
	}
	return list
}

// RoadShapes are road-like graphs (gen.Road: planar, degree 2 to 4,
// Euclidean integer weights, a diameter of about the side) drawn from seed,
// of two sizes.
func RoadShapes(t testing.TB, seed uint64) []Shape {
	var list []Shape
	for _, size := range []struct {
		name string
		n    int
	}{{"road-3000", 3000}, {"road-900", 900}} {
		tab, err := gen.Road{Vertices: size.n, Seed: seed, Weighted: true}.Generate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s := Shape{Name: size.name}
		for _, c := range tab.Chunks {
			for i := range c.Src.Int64 {
				s.Edges = append(s.Edges, Edge{c.Src.Int64[i], c.Dst.Int64[i], c.Weight[i]})
			}
		}
		list = append(list, s)
	}
	return list
}

// RealGraphFiles are the real graphs the GPU tests read, each a different
// Shape: road (two), social, citation, e-mail, votes, ego networks.
var RealGraphFiles = []string{
	"luxembourg_osm.mtx", "rome99.txt", "ego-Twitter-undirected.txt", "soc-Slashdot0902.txt",
	"cit-HepPh.txt", "email-Enron.txt", "wiki-Vote.txt", "facebook_combined.txt",
}

// RealGraphDir is where the real graphs are: $GPIPE_REAL_GRAPHS, or
// shared/data/real beside the checkout. It is "" where neither exists (a
// clean clone in CI); a GPIPE_REAL_GRAPHS that does not exist fails.
func RealGraphDir(t testing.TB) string {
	if dir := os.Getenv("GPIPE_REAL_GRAPHS"); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("GPIPE_REAL_GRAPHS: %v", err)
		}
		return dir
	}
	dir := filepath.Join(moduleRoot(t), "..", "shared", "data", "real")
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST.md")); err != nil {
		t.Logf("no real graphs at %s and GPIPE_REAL_GRAPHS unset: testing without them", dir)
		return ""
	}
	return dir
}

// RealGraph is one real graph, built as the CLI builds it.
type RealGraph struct {
	Name string
	G    *convert.Graph
}

// RealGraphs reads every real graph and builds it directed and undirected,
// weighted where the file has weights (rome99; the others get weight 1).
func RealGraphs(t testing.TB) []RealGraph {
	dir := RealGraphDir(t)
	if dir == "" {
		return nil
	}
	var list []RealGraph
	for _, file := range RealGraphFiles {
		path := filepath.Join(dir, file)
		tab, err := ingest.Open(context.Background(), path, nil, edges.Options{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, directed := range []bool{true, false} {
			g, err := convert.Build(context.Background(), tab, convert.BuildOptions{
				Undirected: !directed, Weighted: tab.HasWeight, Weights: convert.FiniteWeights, BuildIn: true,
			})
			if err != nil {
				t.Fatalf("%s: build: %v", path, err)
			}
			name := file + "/directed"
			if !directed {
				name = file + "/undirected"
			}
			list = append(list, RealGraph{Name: name, G: g})
		}
		tab.Release()
	}
	return list
}

// moduleRoot is the directory of the module's go.mod, above the test's
// working directory (its package's directory).
func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
