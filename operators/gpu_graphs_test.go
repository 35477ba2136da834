package operators

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
)

// Graphs the GPU strategies are checked on besides the random shapes: grids
// (the high-diameter stand-in for road networks) and the real graphs of
// ../shared/data/real (MANIFEST.md there).

// gridEdges is the rows × cols 4-neighbour grid, vertex r·cols + c, each
// edge once, with random integer weights 1..255.
func gridEdges(rows, cols int64, seed uint64) []tedge {
	rng := rand.New(rand.NewPCG(seed, 3))
	var edges []tedge
	for r := int64(0); r < rows; r++ {
		for c := int64(0); c < cols; c++ {
			v := r*cols + c
			if c+1 < cols {
				edges = append(edges, tedge{v, v + 1, float64(1 + rng.IntN(255))})
			}
			if r+1 < rows {
				edges = append(edges, tedge{v, v + cols, float64(1 + rng.IntN(255))})
			}
		}
	}
	return edges
}

// gridShapes are grids of several aspect ratios: a square, a long strip (a
// diameter in the thousands with a frontier of a few vertices) and a path.
func gridShapes(seed uint64) []shape {
	return []shape{
		{name: "grid-120x90", edges: gridEdges(120, 90, seed)},
		{name: "grid-3x2500", edges: gridEdges(3, 2500, seed+1)},
		{name: "path-6000", edges: gridEdges(1, 6000, seed+2)},
	}
}

// realGraphFiles are the real graphs the GPU tests read, each a different
// shape: road (two), social, citation, e-mail, votes, ego networks.
var realGraphFiles = []string{
	"luxembourg_osm.mtx", "rome99.txt", "ego-Twitter-undirected.txt", "soc-Slashdot0902.txt",
	"cit-HepPh.txt", "email-Enron.txt", "wiki-Vote.txt", "facebook_combined.txt",
}

// realGraphDir is where the real graphs are: $GPIPE_REAL_GRAPHS, or
// shared/data/real beside the checkout. It is "" where neither exists (a
// clean clone in CI); a GPIPE_REAL_GRAPHS that does not exist fails.
func realGraphDir(t testing.TB) string {
	if dir := os.Getenv("GPIPE_REAL_GRAPHS"); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("GPIPE_REAL_GRAPHS: %v", err)
		}
		return dir
	}
	dir := filepath.Join("..", "..", "shared", "data", "real")
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST.md")); err != nil {
		t.Logf("no real graphs at %s and GPIPE_REAL_GRAPHS unset: testing without them", dir)
		return ""
	}
	return dir
}

// realGraph is one real graph, built as the CLI builds it.
type realGraph struct {
	name string
	g    *convert.Graph
}

// realGraphs reads every real graph and builds it directed and undirected,
// weighted where the file has weights (rome99; the others get weight 1).
func realGraphs(t testing.TB) []realGraph {
	dir := realGraphDir(t)
	if dir == "" {
		return nil
	}
	var list []realGraph
	for _, file := range realGraphFiles {
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
			list = append(list, realGraph{name: name, g: g})
		}
		tab.Release()
	}
	return list
}
