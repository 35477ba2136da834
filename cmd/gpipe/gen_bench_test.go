package main_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// readEdgeRows reads an edge table written by gpipe gen as rows of text:
// "src dst" or "src dst weight".
func readEdgeRows(t *testing.T, o *output) []string {
	t.Helper()
	src, dst, w := o.cols["src"], o.cols["dst"], o.cols["weight"]
	if len(src) == 0 || len(src) != len(dst) {
		t.Fatalf("edge table with %d src and %d dst values (columns %v)", len(src), len(dst), o.names)
	}
	rows := make([]string, len(src))
	for i := range src {
		rows[i] = fmt.Sprint(src[i], " ", dst[i])
		if w != nil {
			rows[i] += fmt.Sprint(" ", w[i])
		}
	}
	return rows
}

// readGenerated reads a generated edge table in any format; for CSV the
// columns come back as numbers, as from the others.
func readGenerated(t *testing.T, path string, stdout string) []string {
	t.Helper()
	var o *output
	if path == "-" {
		o = readStream(t, []byte(stdout))
	} else {
		o = readOutput(t, path)
	}
	if o.schema != nil {
		for _, f := range o.schema.Fields() {
			want := arrow.DataType(arrow.PrimitiveTypes.Int64)
			if f.Name == "weight" {
				want = arrow.PrimitiveTypes.Float64
			}
			if !arrow.TypeEqual(f.Type, want) {
				t.Errorf("%s: column %s is %v, want %v", path, f.Name, f.Type, want)
			}
		}
	}
	return readEdgeRows(t, o)
}

func TestGenKronecker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gen := func(out string, args ...string) result {
		r := ok(t, dir, nil, append([]string{"gen", "kronecker", "--scale", "8", "--edge-factor", "4", "--output", out}, args...)...)
		if out != "-" && !strings.Contains(r.stderr, "wrote 1024 edges to "+out) {
			t.Errorf("stderr %q does not say what was written", r.stderr)
		}
		return r
	}
	gen("k.parquet")
	gen("again.parquet")
	gen("seed2.parquet", "--seed", "2")
	rows := readGenerated(t, filepath.Join(dir, "k.parquet"), "")
	if len(rows) != 1024 {
		t.Fatalf("%d rows, want 2^8 * 4 = 1024", len(rows))
	}
	for _, r := range rows {
		var s, d int64
		if _, err := fmt.Sscan(r, &s, &d); err != nil || s < 0 || s >= 256 || d < 0 || d >= 256 {
			t.Fatalf("row %q: keys must be in [0, 256)", r)
		}
	}
	if again := readGenerated(t, filepath.Join(dir, "again.parquet"), ""); !slices.Equal(rows, again) {
		t.Error("the same seed gave different rows")
	}
	if other := readGenerated(t, filepath.Join(dir, "seed2.parquet"), ""); slices.Equal(rows, other) {
		t.Error("seeds 1 and 2 gave the same rows")
	}
	// --seed 1 is the default; every format holds the same rows.
	gen("k.csv", "--seed", "1")
	gen("k.arrow")
	r := gen("-")
	for _, out := range []string{"k.csv", "k.arrow", "-"} {
		path := out
		if out != "-" {
			path = filepath.Join(dir, out)
		}
		if got := readGenerated(t, path, r.stdout); !slices.Equal(rows, got) {
			t.Errorf("%s holds other rows than k.parquet", out)
		}
	}

	// Weighted: integer weights in [1, 255], and the same seed gives the
	// same weights.
	gen("w.parquet", "--weighted", "--seed", "7")
	gen("w2.arrows", "--weighted", "--seed", "7")
	wrows := readGenerated(t, filepath.Join(dir, "w.parquet"), "")
	if !slices.Equal(wrows, readGenerated(t, filepath.Join(dir, "w2.arrows"), "")) {
		t.Error("--weighted: the same seed gave different rows")
	}
	distinct := map[float64]bool{}
	for _, r := range wrows {
		f := strings.Fields(r)
		w, err := strconv.ParseFloat(f[len(f)-1], 64)
		if len(f) != 3 || err != nil || w != math.Trunc(w) || w < 1 || w > 255 {
			t.Fatalf("weighted row %q: want an integer weight in [1, 255]", r)
		}
		distinct[w] = true
	}
	if len(distinct) < 100 {
		t.Errorf("only %d distinct weights in 1024 rows", len(distinct))
	}
	// Edge lists, as GAP reads them (.el, .wel) and with tabs (.tsv), hold
	// the same rows, and read back as the same graph.
	gen("w.wel", "--weighted", "--seed", "7")
	gen("k.el")
	gen("k.tsv")
	r = gen("-", "--output-format", "text")
	for name, text := range map[string]string{"w.wel": "", "k.el": "", "k.tsv": "", "-": r.stdout} {
		if name != "-" {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			text = string(b)
		}
		want := rows
		if name == "w.wel" {
			want = wrows
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines, want %d", name, len(lines), len(want))
		}
		for i, l := range lines {
			if name == "k.tsv" {
				l = strings.ReplaceAll(l, "\t", " ")
			}
			if l != want[i] {
				t.Fatalf("%s line %d: %q, want %q", name, i+1, l, want[i])
			}
		}
	}
	ok(t, dir, nil, "run", "--input", "k.el", "--op", "pagerank", "--output", "pr-el.parquet")
	checkPageRank(t, readOutput(t, filepath.Join(dir, "pr-el.parquet")), newRef(func() []edge {
		var es []edge
		for _, r := range rows {
			var s, d int64
			fmt.Sscan(r, &s, &d)
			es = append(es, edge{src: s, dst: d})
		}
		return es
	}(), false, false, true), 0.85)

	// ...on the edges the same seed gives without --weighted.
	gen("s7.parquet", "--seed", "7")
	for i, r := range readGenerated(t, filepath.Join(dir, "s7.parquet"), "") {
		if f := strings.Fields(wrows[i]); r != f[0]+" "+f[1] {
			t.Fatalf("row %d: %q weighted, %q without weights: --weighted changed the edges", i, wrows[i], r)
		}
	}

	// The generated graph runs, and the answers match the reference.
	var es []edge
	for _, r := range rows {
		var s, d int64
		fmt.Sscan(r, &s, &d)
		es = append(es, edge{src: s, dst: d})
	}
	g := newRef(es, false, false, true)
	ok(t, dir, nil, "run", "--input", "k.parquet", "--op", "pagerank", "--output", "pr.parquet")
	checkPageRank(t, readOutput(t, filepath.Join(dir, "pr.parquet")), g, 0.85)
	src := firstSource(t, es)
	ok(t, dir, nil, "run", "--input", "k.parquet", "--op", "bfs", "--undirected", "--source", src, "--output", "bfs.parquet")
	checkBFS(t, readOutput(t, filepath.Join(dir, "bfs.parquet")), newRef(es, false, true, true), src)
}

// gpipe gen grid writes the rows × cols grid, each right and down neighbour
// once, the same rows in every format, weights from the seed on the same
// edges; read with --undirected, vertex r·cols + c is r + c BFS levels from
// vertex 0.
func TestGenGrid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const rows, cols = 6, 9
	var want []string
	for v := int64(0); v < rows*cols; v++ {
		if v%cols+1 < cols {
			want = append(want, fmt.Sprint(v, " ", v+1))
		}
		if v/cols+1 < rows {
			want = append(want, fmt.Sprint(v, " ", v+cols))
		}
	}
	gen := func(out string, args ...string) result {
		r := ok(t, dir, nil, append([]string{"gen", "grid", "--rows", "6", "--cols", "9", "--output", out}, args...)...)
		if out != "-" && !strings.Contains(r.stderr, fmt.Sprintf("wrote %d edges to %s", len(want), out)) {
			t.Errorf("stderr %q does not say what was written", r.stderr)
		}
		return r
	}
	gen("g.parquet")
	gen("g.csv")
	gen("g.arrow")
	r := gen("-")
	for _, out := range []string{"g.parquet", "g.csv", "g.arrow", "-"} {
		path := out
		if out != "-" {
			path = filepath.Join(dir, out)
		}
		if got := readGenerated(t, path, r.stdout); !slices.Equal(got, want) {
			t.Errorf("%s: rows\n%v\nwant\n%v", out, got, want)
		}
	}
	gen("g.el")
	if b, err := os.ReadFile(filepath.Join(dir, "g.el")); err != nil || string(b) != strings.Join(want, "\n")+"\n" {
		t.Errorf("g.el: %q, %v", b, err)
	}

	gen("w.parquet", "--weighted", "--seed", "3")
	gen("w.arrows", "--weighted", "--seed", "3")
	gen("w4.parquet", "--weighted", "--seed", "4")
	wrows := readGenerated(t, filepath.Join(dir, "w.parquet"), "")
	if !slices.Equal(wrows, readGenerated(t, filepath.Join(dir, "w.arrows"), "")) {
		t.Error("--weighted: the same seed gave different rows")
	}
	if slices.Equal(wrows, readGenerated(t, filepath.Join(dir, "w4.parquet"), "")) {
		t.Error("--weighted: seeds 3 and 4 gave the same rows")
	}
	for i, row := range wrows {
		f := strings.Fields(row)
		w, err := strconv.ParseFloat(f[len(f)-1], 64)
		if len(f) != 3 || f[0]+" "+f[1] != want[i] || err != nil || w != math.Trunc(w) || w < 1 || w > 255 {
			t.Fatalf("weighted row %d %q: want %q and an integer weight in [1, 255]", i, row, want[i])
		}
	}

	ok(t, dir, nil, "run", "--input", "g.el", "--op", "bfs", "--source", "0", "--undirected", "--output", "bfs.parquet")
	depth := readOutput(t, filepath.Join(dir, "bfs.parquet")).byVertex(t, "depth")
	if len(depth) != rows*cols {
		t.Fatalf("%d vertices, want %d", len(depth), rows*cols)
	}
	for v := 0; v < rows*cols; v++ {
		if d := depth[strconv.Itoa(v)]; d != int64(v/cols+v%cols) {
			t.Errorf("vertex %d: depth %v, want %d", v, d, v/cols+v%cols)
		}
	}

	// Bad sizes fail on one line before anything is written.
	fails(t, dir, nil, 2, []string{"grid 0x9: rows and columns must be at least 1"}, "gen", "grid", "--rows", "0", "--cols", "9", "--output", "bad.parquet")
	fails(t, dir, nil, 2, []string{"grid 6x-2"}, "gen", "grid", "--rows", "6", "--cols", "-2", "--output", "bad.parquet")
	fails(t, dir, nil, 2, []string{"more than 4294967295 vertices", "uint32"}, "gen", "grid", "--rows", "100000", "--cols", "100000", "--output", "bad.parquet")
	fails(t, dir, nil, 2, []string{"--rows, --cols and --output are required", "gpipe gen grid --help"}, "gen", "grid", "--cols", "9", "--output", "bad.parquet")
	if _, err := os.Stat(filepath.Join(dir, "bad.parquet")); err == nil {
		t.Error("a refused gen left an output file")
	}
}

// benchJSON runs gpipe bench with --json and parses stdout.
func benchJSON(t *testing.T, dir string, args ...string) map[string]any {
	t.Helper()
	r := ok(t, dir, nil, append([]string{"bench", "--json"}, args...)...)
	if r.stderr != "" {
		t.Errorf("gpipe bench %s: stderr %q, want nothing", strings.Join(args, " "), r.stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("gpipe bench --json: stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Errorf("gpipe bench --json: stdout has more than one line:\n%s", r.stdout)
	}
	return rep
}

// checkBenchReport checks the fields every bench report has.
func checkBenchReport(t *testing.T, rep map[string]any, op string, trials int) []float64 {
	t.Helper()
	if rep["op"] != op || rep["backend"] != "cpu" {
		t.Errorf("op %v backend %v, want %s on cpu", rep["op"], rep["backend"], op)
	}
	if s, _ := rep["strategy"].(string); s == "" {
		t.Errorf("no strategy: %v", rep)
	}
	for _, k := range []string{"vertices", "edges", "input_edges", "read_s", "build_s", "median_s"} {
		if v, isNum := rep[k].(float64); !isNum || v < 0 || (v == 0 && !strings.HasSuffix(k, "_s")) {
			t.Errorf("%s = %v", k, rep[k])
		}
	}
	raw, _ := rep["trials_s"].([]any)
	var ts []float64
	for _, x := range raw {
		if f, isNum := x.(float64); isNum && f > 0 {
			ts = append(ts, f)
		}
	}
	if len(ts) != trials || len(raw) != trials {
		t.Fatalf("trials_s %v, want %d positive times", rep["trials_s"], trials)
	}
	sorted := slices.Clone(ts)
	slices.Sort(sorted)
	if m := rep["median_s"].(float64); m != sorted[(trials-1)/2] && m != (sorted[trials/2-1]+sorted[trials/2])/2 {
		t.Errorf("median_s %v is not the median of %v", m, ts)
	}
	return ts
}

func TestBenchGen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rep := benchJSON(t, dir, "--gen", "kronecker:10", "--op", "bfs", "--trials", "3")
	ts := checkBenchReport(t, rep, "bfs", 3)
	if rep["input_edges"] != 16384.0 {
		t.Errorf("input_edges %v, want 2^10 * 16", rep["input_edges"])
	}
	if v := rep["vertices"].(float64); v > 1024 {
		t.Errorf("%v vertices from scale 10", v)
	}
	if e := rep["edges"].(float64); e > 16384 || e < 1000 {
		t.Errorf("edges %v: want at most the 16384 input edges, after cleaning", e)
	}
	// GTEPS: the harmonic mean of input edges over each trial's time.
	inv := 0.0
	for _, s := range ts {
		inv += s / 16384
	}
	if g, want := rep["gteps"].(float64), 3/inv/1e9; math.Abs(g-want) > 1e-9*want {
		t.Errorf("gteps %v, want %v", g, want)
	}
	if _, has := rep["iterations"]; has {
		t.Errorf("bfs report has iterations")
	}
	// The seed makes the graph: the same counts again.
	again := benchJSON(t, dir, "--gen", "kronecker:10", "--op", "bfs", "--trials", "1")
	if again["vertices"] != rep["vertices"] || again["edges"] != rep["edges"] {
		t.Errorf("kronecker:10 twice: %v/%v vertices, %v/%v edges", rep["vertices"], again["vertices"], rep["edges"], again["edges"])
	}

	rep = benchJSON(t, dir, "--gen", "kronecker:10:4", "--undirected", "--op", "pagerank", "--trials", "3")
	checkBenchReport(t, rep, "pagerank", 3)
	if rep["input_edges"] != 4096.0 {
		t.Errorf("input_edges %v, want 2^10 * 4", rep["input_edges"])
	}
	n, _ := rep["iterations"].(float64)
	if n < 1 || n > 1000 || n != math.Trunc(n) {
		t.Errorf("iterations %v", rep["iterations"])
	}
	if s, want := rep["s_per_iteration"].(float64), rep["median_s"].(float64)/n; math.Abs(s-want) > 1e-12 {
		t.Errorf("s_per_iteration %v, want median_s / iterations = %v", s, want)
	}
	if _, has := rep["gteps"]; has {
		t.Errorf("pagerank report has gteps")
	}
}

// gpipe bench --gen grid:ROWSxCOLS benchmarks the grid, as deep as it is wide.
func TestBenchGrid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rep := benchJSON(t, dir, "--gen", "grid:32x48", "--undirected", "--op", "bfs", "--trials", "2")
	checkBenchReport(t, rep, "bfs", 2)
	m := 32*47 + 31*48
	if rep["vertices"] != float64(32*48) || rep["input_edges"] != float64(m) || rep["edges"] != float64(2*m) || rep["input"] != "grid:32x48" {
		t.Errorf("vertices %v, input_edges %v, edges %v, input %v; want %d, %d, %d, grid:32x48",
			rep["vertices"], rep["input_edges"], rep["edges"], rep["input"], 32*48, m, 2*m)
	}
	rep = benchJSON(t, dir, "--gen", "grid:16x16", "--undirected", "--op", "sssp", "--trials", "1")
	checkBenchReport(t, rep, "sssp", 1)
	fails(t, dir, nil, 2, []string{"grid 0x4: rows and columns must be at least 1"}, "bench", "--gen", "grid:0x4", "--op", "bfs")
	fails(t, dir, nil, 2, []string{`bad generator "grid:4"`, "grid:ROWSxCOLS"}, "bench", "--gen", "grid:4", "--op", "bfs")
}

func TestBenchInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// GAP's edge lists: .el unweighted, .wel weighted.
	tb := table{keyType: arrow.PrimitiveTypes.Int64, edges: randomEdges(21, 50, 150, func(i int) any { return int64(i) })}
	writeFile(t, filepath.Join(dir, "g.el"), []byte(edgeListText(tb)))
	tb.weightType = arrow.PrimitiveTypes.Float64
	writeFile(t, filepath.Join(dir, "g.wel"), []byte(edgeListText(tb)))
	g := newRef(tb.edges, true, false, true)
	edges := 0
	for _, out := range g.adj {
		edges += len(out)
	}
	for _, c := range []struct{ in, op string }{{"g.el", "bfs"}, {"g.wel", "sssp"}, {"g.el", "cc"}, {"g.wel", "sswp"}} {
		args := []string{"--input", c.in, "--op", c.op, "--trials", "2"}
		if c.op != "cc" {
			args = append(args, "--sources", "2")
		}
		rep := benchJSON(t, dir, args...)
		checkBenchReport(t, rep, c.op, 2)
		if rep["vertices"] != float64(len(g.keys)) || rep["edges"] != float64(edges) || rep["input_edges"] != float64(len(tb.edges)) {
			t.Errorf("%s %s: vertices %v edges %v input_edges %v; want %d %d %d", c.in, c.op,
				rep["vertices"], rep["edges"], rep["input_edges"], len(g.keys), edges, len(tb.edges))
		}
		if rep["input"] != c.in {
			t.Errorf("input %v, want %s", rep["input"], c.in)
		}
		if c.op != "cc" {
			srcs, _ := rep["sources"].([]any)
			if len(srcs) != 2 {
				t.Errorf("%s: sources %v, want 2", c.op, rep["sources"])
			}
			for _, s := range srcs {
				if len(g.adj[fmt.Sprint(s)]) == 0 {
					t.Errorf("%s: source %v has no out-edges", c.op, s)
				}
			}
		}
	}

	// Without --json, a table on stdout.
	r := ok(t, dir, nil, "bench", "--input", "g.el", "--op", "bfs", "--trials", "2")
	for _, want := range []string{
		fmt.Sprintf("g.el: %d vertices, %d edges (%d input edges)", len(g.keys), edges, len(tb.edges)),
		"read, build", "operator", "bfs on cpu", "trials", "2: median", "GTEPS",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("bench table lacks %q:\n%s", want, r.stdout)
		}
	}
	r = ok(t, dir, nil, "bench", "--input", "g.el", "--op", "pagerank", "--trials", "1")
	if !strings.Contains(r.stdout, "iterations") {
		t.Errorf("pagerank bench table lacks iterations:\n%s", r.stdout)
	}

	fails(t, dir, nil, 4, []string{"--backend cpu"}, "bench", "--input", "g.el", "--op", "bfs", "--backend", "gpu")
	fails(t, dir, nil, 3, []string{"missing.el"}, "bench", "--input", "missing.el", "--op", "bfs")
	fails(t, dir, nil, 2, []string{"exactly one"}, "bench", "--input", "g.el", "--gen", "kronecker:4", "--op", "bfs")
}

// Without a GPU, devices says why, on one line, and exits 4 (backend not
// available); with --json, stdout has the same as a JSON object.
func TestDevicesWithoutGPU(t *testing.T) {
	t.Parallel()
	if os.Getenv("GPIPE_REQUIRE_GPU") != "" {
		t.Skip("a GPU machine")
	}
	dir := t.TempDir()
	want := []string{"no usable GPU", "NVIDIA driver", "libcuda.so.1", "use the CPU"}
	if r := fails(t, dir, nil, 4, want, "devices"); r.stdout != "" {
		t.Errorf("gpipe devices: stdout %q", r.stdout)
	}
	r := fails(t, dir, nil, 4, want, "devices", "--json")
	var got struct {
		Devices []any  `json:"devices"`
		Error   string `json:"error"`
		NCCL    struct {
			Version, Path, Error string
		} `json:"nccl"`
		Peers []any `json:"peers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Devices == nil || len(got.Devices) != 0 || !strings.Contains(got.Error, "no usable GPU") {
		t.Errorf("gpipe devices --json: stdout %q (%v)", r.stdout, err)
	}
	// NCCL needs no GPU: where it loads, its version and file, else why not.
	if (got.NCCL.Version == "" || got.NCCL.Path == "") == (got.NCCL.Error == "") || got.Peers == nil || len(got.Peers) != 0 {
		t.Errorf("gpipe devices --json: nccl %+v, peers %v", got.NCCL, got.Peers)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := ok(t, dir, nil, "--help")
	for _, want := range []string{"run", "gen", "bench", "serve", "devices", "directed unless --undirected", "self loops", "parallel edges", "minimum weight", "nulls"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gpipe --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if r2 := ok(t, dir, nil); r2.stdout != r.stdout {
		t.Error("gpipe without arguments does not print the help")
	}
	r = ok(t, dir, nil, "run", "--help")
	for _, want := range []string{
		"--input", "--op", "--source", "--undirected", "--skip-invalid", "--backend", "--json",
		"directed unless --undirected", "Self loops are dropped", "Parallel edges are merged", "minimum weight",
		"ascending key order", "Unreachable vertices get nulls",
		"depth (int32), parent (key)", "distance (float64)", "rank (float64)", "smallest key", "weakly", "width (float64)", "+Inf",
		".parquet", ".arrows", ".csv", ".mtx", "Exit codes",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gpipe run --help lacks %q", want)
		}
	}
	for _, cmd := range [][]string{{"gen", "kronecker", "--help"}, {"gen", "grid", "--help"}, {"bench", "--help"}, {"devices", "--help"}} {
		r := ok(t, dir, nil, cmd...)
		if !strings.Contains(r.stdout, "USAGE") {
			t.Errorf("gpipe %s: no usage:\n%s", strings.Join(cmd, " "), r.stdout)
		}
	}
	r = ok(t, dir, nil, "--version")
	if !strings.HasPrefix(r.stdout, "gpipe version ") {
		t.Errorf("--version: %q", r.stdout)
	}
}

// An output file that exists is replaced whole; a failed run leaves the old
// one alone.
func TestOutputReplaced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2\n2 3\n"))
	writeFile(t, filepath.Join(dir, "o.csv"), []byte(strings.Repeat("old contents\n", 100)))
	fails(t, dir, nil, 3, []string{`"9"`}, "run", "--input", "e.txt", "--op", "bfs", "--source", "9", "--output", "o.csv")
	if b, _ := os.ReadFile(filepath.Join(dir, "o.csv")); !strings.HasPrefix(string(b), "old contents\n") {
		t.Errorf("a failed run changed the existing output: %q", b)
	}
	ok(t, dir, nil, "run", "--input", "e.txt", "--op", "bfs", "--source", "1", "--output", "o.csv")
	if b, _ := os.ReadFile(filepath.Join(dir, "o.csv")); string(b) != "vertex,depth,parent\n1,0,1\n2,1,1\n3,2,2\n" {
		t.Errorf("output %q", b)
	}
	fails(t, dir, nil, 2, []string{"no-such-dir/o.csv", "directory"}, "run", "--input", "e.txt", "--op", "cc", "--output", "no-such-dir/o.csv")
}

// A graph too large for the machine's memory, or for int64 counts, is
// refused with one line before anything is allocated (it panicked or ran out
// of memory with a goroutine dump).
func TestGenTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fails(t, dir, nil, 2, []string{"edge factor 9999999999999", "choose a smaller scale or edge factor"},
		"gen", "kronecker", "--scale", "8", "--edge-factor", "9999999999999", "--output", "g.parquet")
	fails(t, dir, nil, 2, []string{"kronecker scale 31, edge factor 1048576", "of memory", "choose a smaller"},
		"gen", "kronecker", "--scale", "31", "--edge-factor", "1048576", "--output", "g.parquet")
	fails(t, dir, nil, 2, []string{"more than 2^58 edges"},
		"gen", "kronecker", "--scale", "31", "--edge-factor", "4294967296", "--output", "g.parquet")
	// 2^61 edges: the bytes they need were counted past int64's end.
	fails(t, dir, nil, 2, []string{"more than 2^58 edges"},
		"gen", "kronecker", "--scale", "1", "--edge-factor", "1152921504606846976", "--output", "g.parquet")
	fails(t, dir, nil, 2, []string{"more than 2^58 edges"},
		"gen", "kronecker", "--scale", "31", "--edge-factor", "1000000000", "--output", "g.parquet")
	fails(t, dir, nil, 2, []string{"edge factor 99999999999"}, "bench", "--gen", "kronecker:8:99999999999", "--op", "bfs")
	if _, err := os.Stat(filepath.Join(dir, "g.parquet")); err == nil {
		t.Error("a refused gen left an output file")
	}
}

// An absurd count of trials or sources is a one-line usage error naming the
// most gpipe bench runs, before the graph is made: the sources, one a
// trial, were drawn first, and 9999999999 of them ran out of memory with a
// goroutine dump.
func TestBenchTooManyTrials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bench := []string{"bench", "--gen", "kronecker:4", "--op", "bfs"}
	fails(t, dir, nil, 2, []string{"--trials 9999999999 is more than 1000000, the most gpipe bench runs"}, append(bench, "--trials", "9999999999")...)
	fails(t, dir, nil, 2, []string{"--trials 1000001 is more than 1000000"}, append(bench, "--trials", "1000001")...)
	fails(t, dir, nil, 2, []string{"--sources 9999999999 is more than 1000000"}, append(bench, "--trials", "1", "--sources", "9999999999")...)
}

func TestGenUnknownGenerator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fails(t, dir, nil, 2, []string{`unknown generator "erdos"`, "kronecker, grid and road"}, "gen", "erdos", "--scale", "3", "--output", "g.parquet")
	fails(t, dir, nil, 2, []string{"name a generator"}, "gen")
}

// TestGenMissingDirectory: every output format says the same about a
// directory that does not exist, without the name of a temporary file.
func TestGenMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, out := range []string{"no/such/g.parquet", "no/such/g.el", "no/such/g.arrow"} {
		r := fails(t, dir, nil, 2, []string{"no/such/", "cannot create the output: no such file or directory", "check that the directory exists"},
			"gen", "grid", "--rows", "2", "--cols", "2", "--output", out)
		if strings.Contains(r.stderr, ".tmp") {
			t.Errorf("gen --output %s: the message names a temporary file: %s", out, r.stderr)
		}
	}
}
