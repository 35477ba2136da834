package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gpipe gen road writes the seeded road, the same for the same seed; sssp
// runs on it; a road without vertices fails on one line.
func TestGenRoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := ok(t, dir, nil, "gen", "road", "--vertices", "400", "--weighted", "--seed", "3", "--output", "r.el")
	if !strings.Contains(r.stderr, "edges to r.el") {
		t.Errorf("stderr %q does not say what was written", r.stderr)
	}
	ok(t, dir, nil, "gen", "road", "--vertices", "400", "--weighted", "--seed", "3", "--output", "same.el")
	ok(t, dir, nil, "gen", "road", "--vertices", "400", "--weighted", "--seed", "4", "--output", "other.el")
	read := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	lines := read("r.el")
	if !slices.Equal(lines, read("same.el")) || slices.Equal(lines, read("other.el")) {
		t.Error("seed 3 twice gave different roads, or seeds 3 and 4 the same")
	}
	// 20 × 20 cells: between a spanning tree's 399 streets and the grid's 760.
	if len(lines) < 399 || len(lines) > 760 || len(strings.Fields(lines[0])) != 3 {
		t.Fatalf("%d streets, first %q", len(lines), lines[0])
	}
	ok(t, dir, nil, "run", "--input", "r.el", "--op", "sssp", "--source", "0", "--undirected", "--backend", "cpu", "--output", "sssp.parquet")
	dist := readOutput(t, filepath.Join(dir, "sssp.parquet")).byVertex(t, "distance")
	if len(dist) != 400 {
		t.Fatalf("%d vertices reached, want all 400 (a road is connected)", len(dist))
	}
	fails(t, dir, nil, 2, []string{"road of 0 vertices"}, "gen", "road", "--vertices", "0", "--output", "bad.parquet")
	fails(t, dir, nil, 2, []string{"--vertices and --output are required", "gpipe gen road --help"}, "gen", "road", "--output", "bad.parquet")
}
