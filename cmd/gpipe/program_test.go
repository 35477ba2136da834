package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// csvColumn reads column name of a CSV result (keys as text).
func csvColumn(t *testing.T, path, name string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	header := strings.Split(lines[0], ",")
	col := -1
	for i, h := range header {
		if h == name {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("%s: no column %q in %q", path, name, lines[0])
	}
	var out []string
	for _, l := range lines[1:] {
		out = append(out, strings.Split(l, ",")[col])
	}
	return out
}

func sameColumn(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestRunProgram runs example programs with --program and compares them
// with the built-in operators; bad uses fail with their places.
func TestRunProgram(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	karate := filepath.Join(root, "examples", "data", "karate.parquet")
	prog := func(name string) string { return filepath.Join(root, "examples", "programs", name+".vp") }
	out := func(name string) string { return filepath.Join(dir, name+".csv") }

	ok(t, dir, nil, "run", "--program", prog("bfs"), "--input", karate, "--source", "1", "--undirected", "--output", out("pbfs"), "-q")
	ok(t, dir, nil, "run", "--op", "bfs", "--input", karate, "--source", "1", "--undirected", "--output", out("bfs"), "-q")
	sameColumn(t, "bfs.vp's depth", csvColumn(t, out("pbfs"), "depth"), csvColumn(t, out("bfs"), "depth"))
	// Directed, from a vertex that reaches few: nulls where unreached.
	ok(t, dir, nil, "run", "--program", prog("bfs"), "--input", karate, "--source", "20", "--output", out("pbfs2"), "-q")
	ok(t, dir, nil, "run", "--op", "bfs", "--input", karate, "--source", "20", "--output", out("bfs2"), "-q")
	depth := csvColumn(t, out("pbfs2"), "depth")
	sameColumn(t, "bfs.vp's directed depth", depth, csvColumn(t, out("bfs2"), "depth"))
	if !strings.Contains(strings.Join(depth, ","), ",,") {
		t.Errorf("directed bfs from 20 reaches every vertex (%v): the test needs some unreached", depth)
	}
	ok(t, dir, nil, "run", "--program", prog("cc"), "--input", karate, "--undirected", "--output", out("pcc"), "-q")
	ok(t, dir, nil, "run", "--op", "cc", "--input", karate, "--undirected", "--output", out("cc"), "-q")
	sameColumn(t, "cc.vp's component", csvColumn(t, out("pcc"), "component"), csvColumn(t, out("cc"), "component"))
	r := ok(t, dir, nil, "run", "--program", prog("bfs"), "--input", karate, "--source", "1", "--json", "--output", out("j"), "--backend", "cpu")
	if !strings.Contains(r.stderr, `"op":"program bfs"`) || !strings.Contains(r.stderr, `"strategy":"pull"`) {
		t.Errorf("--json: %s", r.stderr)
	}

	bad := filepath.Join(dir, "bad.vp")
	if err := os.WriteFile(bad, []byte("program bad\nvertex x uint32 = 1.5\ncompute {}\nupdate_condition { return false }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, dir, nil, 3, []string{bad + ", line 2: column 19", "not an integer"}, "run", "--program", bad, "--input", karate)
	fails(t, dir, nil, 2, []string{"--op with --program"}, "run", "--program", prog("bfs"), "--op", "bfs", "--input", karate)
	fails(t, dir, nil, 3, []string{"cannot read the program"}, "run", "--program", filepath.Join(dir, "none.vp"), "--input", karate)
	fails(t, dir, nil, 2, []string{"needs a source vertex"}, "run", "--program", prog("bfs"), "--input", karate)
	fails(t, dir, nil, 2, []string{`no GPU strategy "cw"`, "vwc, warpseg, kites, gshards"}, "run", "--program", prog("cc"), "--input", karate, "--strategy", "cw")
	for _, s := range []string{"warpseg", "kites", "gshards"} {
		ok(t, dir, nil, "run", "--program", prog("cc"), "--input", karate, "--strategy", s, "--output", out("s"+s), "-q")
	}
	fails(t, dir, nil, 2, []string{"vwarp (the lanes a vertex) 3"}, "run", "--program", prog("cc"), "--input", karate, "--vwarp", "3")
	fails(t, dir, nil, 2, []string{"--dynamic does not apply to operator program cc"}, "run", "--program", prog("cc"), "--input", karate, "--dynamic")
	fails(t, dir, nil, 2, []string{`--weight-col "w" with a program that reads the edge column "nn_weight"`}, "run", "--program", prog("nn"), "--input", karate, "--weight-col", "w")
}

// TestGenEdgeColumns checks --edge-columns' columns and their ranges, and
// runs NN, HS and CS on them.
func TestGenEdgeColumns(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	g := filepath.Join(dir, "g.csv")
	ok(t, dir, nil, "gen", "grid", "--rows", "6", "--cols", "7", "--edge-columns", "nn,hs,cs", "--output", g, "-q")
	ranges := map[string][2]float64{"nn_weight": {0, 1}, "hs_coeff": {0, 0.9 / 4}, "cs_g": {0.5, 1.5}}
	for name, r := range ranges {
		for _, v := range csvColumn(t, g, name) {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x <= r[0] || x > r[1] {
				t.Errorf("%s: %s out of (%v, %v]", name, v, r[0], r[1])
			}
		}
	}
	for _, p := range []string{"nn", "hs", "cs"} {
		ok(t, dir, nil, "run", "--program", filepath.Join(root, "examples", "programs", p+".vp"), "--input", g, "--source", "8",
			"--undirected", "--output", filepath.Join(dir, p+".csv"), "-q")
	}
	fails(t, dir, nil, 2, []string{"--edge-columns with an edge list output"}, "gen", "grid", "--rows", "2", "--cols", "2", "--edge-columns", "nn", "--output", filepath.Join(dir, "g.txt"))
	fails(t, dir, nil, 2, []string{`unknown column kind "xx"`}, "gen", "grid", "--rows", "2", "--cols", "2", "--edge-columns", "nn,xx", "--output", g)
}

// TestBenchProgram times a vertex program with gpipe bench: one report a
// strategy of the list, the program named as run names it; a strategy
// programs do not have, and --op with --program, are usage errors.
func TestBenchProgram(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	cc := filepath.Join(root, "examples", "programs", "cc.vp")
	bfs := filepath.Join(root, "examples", "programs", "bfs.vp")
	r := ok(t, dir, nil, "bench", "--gen", "kronecker:6", "--undirected", "--program", cc, "--strategy", "vwc,gshards", "--trials", "2", "--json", "-q")
	if n := strings.Count(r.stdout, `"op":"program cc"`); n != 2 {
		t.Errorf("%d reports of program cc, want 2 (one a strategy): %s", n, r.stdout)
	}
	ok(t, dir, nil, "bench", "--gen", "kronecker:6", "--program", bfs, "--sources", "2", "--trials", "2", "-q")
	fails(t, dir, nil, 2, []string{`no GPU strategy "cw"`}, "bench", "--gen", "kronecker:6", "--program", cc, "--strategy", "vwc,cw")
	fails(t, dir, nil, 2, []string{"--op with --program"}, "bench", "--gen", "kronecker:6", "--program", cc, "--op", "cc")
	fails(t, dir, nil, 2, []string{"--sources does not apply to operator program cc"}, "bench", "--gen", "kronecker:6", "--program", cc, "--sources", "2")
}
