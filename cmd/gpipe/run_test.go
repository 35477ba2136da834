package main_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// intKey names vertex i by a signed integer, negatives included.
func intKey(i int) any { return int64(i*7 - 50) }

// randomTable is a weighted random graph with int64 keys.
func randomTable(seed uint64) table {
	return table{
		keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.PrimitiveTypes.Float64,
		edges: randomEdges(seed, 40, 90, intKey),
	}
}

// firstSource is a key with out-edges: the first edge's source that is not
// a self loop.
func firstSource(t *testing.T, es []edge) string {
	t.Helper()
	for _, e := range es {
		if fmt.Sprint(e.src) != fmt.Sprint(e.dst) {
			return fmt.Sprint(e.src)
		}
	}
	t.Fatal("no edge")
	return ""
}

// checkOp checks an operator's output against the reference.
func checkOp(t *testing.T, o *output, op string, g *ref, src string) {
	t.Helper()
	switch op {
	case "bfs":
		checkBFS(t, o, g, src)
	case "sssp":
		checkSSSP(t, o, g, src)
	case "sswp":
		checkSSWP(t, o, g, src)
	case "cc":
		checkCC(t, o, g)
	case "pagerank":
		checkPageRank(t, o, g, 0.85)
	default:
		t.Fatalf("checkOp %s", op)
	}
}

func TestOperatorsMatchReference(t *testing.T) {
	t.Parallel()
	for _, undirected := range []bool{false, true} {
		for _, op := range []string{"bfs", "sssp", "pagerank", "cc", "sswp"} {
			name := op
			if undirected {
				name += "-undirected"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tb := randomTable(uint64(len(op)) + 10)
				writeInput(t, dir, "edges.parquet", tb)
				src := firstSource(t, tb.edges)
				args := []string{"run", "--input", "edges.parquet", "--op", op, "--output", "out.parquet"}
				if op != "pagerank" && op != "cc" {
					args = append(args, "--source", src)
				}
				if undirected {
					args = append(args, "--undirected")
				}
				ok(t, dir, nil, args...)
				o := readOutput(t, filepath.Join(dir, "out.parquet"))
				checkSchema(t, o, op, arrow.PrimitiveTypes.Int64)
				checkOp(t, o, op, newRef(tb.edges, true, undirected, true), src)
			})
		}
	}
}

// Every input format gives the same answer for the same edges.
func TestInputFormats(t *testing.T) {
	t.Parallel()
	tb := randomTable(3)
	src := firstSource(t, tb.edges)
	g := newRef(tb.edges, true, false, true)
	for _, in := range []string{"e.parquet", "e.pq", "e.arrow", "e.feather", "e.ipc", "e.arrows", "e.csv", "e.txt", "e.el", "e.wel", "e.tsv", "-"} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			stdin := writeInput(t, dir, in, tb)
			r := ok(t, dir, stdin, "run", "--input", in, "--op", "sssp", "--source", src, "--output", "out.arrow", "--json")
			o := readOutput(t, filepath.Join(dir, "out.arrow"))
			checkSchema(t, o, "sssp", arrow.PrimitiveTypes.Int64)
			checkSSSP(t, o, g, src)
			rep := jobReport(t, r)
			if got := rep["rows_read"]; got != float64(len(tb.edges)) {
				t.Errorf("rows_read %v, want %d", got, len(tb.edges))
			}
		})
	}
}

// Every output format holds the same answer.
func TestOutputFormats(t *testing.T) {
	t.Parallel()
	tb := randomTable(4)
	src := firstSource(t, tb.edges)
	g := newRef(tb.edges, true, false, true)
	dir := t.TempDir()
	writeInput(t, dir, "e.parquet", tb)
	for _, out := range []string{"o.parquet", "o.arrow", "o.feather", "o.arrows", "o.csv", "-"} {
		for _, op := range []string{"bfs", "sswp"} {
			if op == "sswp" && out != "o.csv" && out != "-" {
				continue // +Inf widths: CSV's inf and stdout are enough
			}
			t.Run(out+"/"+op, func(t *testing.T) {
				t.Parallel()
				odir := t.TempDir()
				path := out
				if out != "-" {
					path = filepath.Join(odir, out)
				}
				r := ok(t, dir, nil, "run", "--input", "e.parquet", "--op", op, "--source", src, "--output", path)
				var o *output
				if out == "-" {
					o = readStream(t, []byte(r.stdout))
				} else {
					if r.stdout != "" {
						t.Errorf("stdout %q, want nothing with --output", r.stdout)
					}
					o = readOutput(t, filepath.Join(odir, out))
					// Nothing else is left beside the output (no temporary file).
					entries, _ := os.ReadDir(odir)
					if len(entries) != 1 {
						t.Errorf("the output directory holds %d entries, want 1", len(entries))
					}
				}
				checkSchema(t, o, op, arrow.PrimitiveTypes.Int64)
				checkOp(t, o, op, g, src)
			})
		}
	}
}

// The README's pipeline: an Arrow IPC stream in on stdin, out on stdout.
func TestStdinToStdoutPageRank(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := randomTable(5)
	writeInput(t, dir, "edges.arrows", tb)
	in, err := os.ReadFile(filepath.Join(dir, "edges.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	r := ok(t, dir, in, "run", "--input", "-", "--op", "pagerank", "--output", "-")
	// The table has a weight column, which unweighted pagerank says it
	// ignored; nothing else is said.
	if want := "gpipe: note: pagerank ignored weight column \"weight\": unweighted pagerank (networkx.pagerank(G, weight=None)) counts every out-edge of a vertex the same; pass --weighted to weigh them by the column, as networkx.pagerank(G) does by default\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	o := readStream(t, []byte(r.stdout))
	checkSchema(t, o, "pagerank", arrow.PrimitiveTypes.Int64)
	checkPageRank(t, o, newRef(tb.edges, true, false, true), 0.85)
}

// Each key type comes back as the vertex (and parent, component) type.
func TestKeyTypes(t *testing.T) {
	t.Parallel()
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	type keyCase struct {
		name    string
		typ     arrow.DataType
		out     arrow.DataType // the output's key type
		numeric bool
		key     func(int) any
	}
	cases := []keyCase{
		{"int32", arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int32, true, func(i int) any { return int64(i*1000003 - 9000000) }},
		{"int64", arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64, true, func(i int) any { return int64(i)*1e12 - 7e12 }},
		{"uint32", arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint32, true, func(i int) any { return int64(4294967295 - i*3) }},
		{"uint64", arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Uint64, true, func(i int) any { return uint64(math.MaxUint64) - uint64(i*5) }},
		{"utf8", arrow.BinaryTypes.String, arrow.BinaryTypes.String, false, func(i int) any { return fmt.Sprintf("v%d", i) }},
		{"large_utf8", arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeString, false, func(i int) any { return fmt.Sprintf("k-%02d", (i*7)%31) + "é" }},
		{"dictionary", dict, arrow.BinaryTypes.String, false, func(i int) any { return fmt.Sprintf("node %d", i) }},
	}
	for _, kc := range cases {
		for _, in := range []string{"e.parquet", "e.arrow", "e.arrows"} {
			t.Run(kc.name+"/"+in, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tb := table{keyType: kc.typ, weightType: arrow.PrimitiveTypes.Int32, edges: randomEdges(11, 25, 50, kc.key)}
				writeInput(t, dir, in, tb)
				src := firstSource(t, tb.edges)
				g := newRef(tb.edges, true, false, kc.numeric)
				out := kc.out
				if in == "e.parquet" && kc.name == "large_utf8" {
					out = nil // Parquet has one string type; either Arrow type will do
				}
				if in != "e.arrows" {
					ok(t, dir, nil, "run", "--input", in, "--op", "bfs", "--source", src, "--output", "bfs.parquet")
					o := readOutput(t, filepath.Join(dir, "bfs.parquet"))
					if out == nil {
						checkStringKeys(t, o)
					}
					checkSchema(t, o, "bfs", out)
					checkBFS(t, o, g, src)
				}
				if in != "e.arrow" {
					ok(t, dir, nil, "run", "--input", in, "--op", "cc", "--output", "cc.arrows")
					o := readOutput(t, filepath.Join(dir, "cc.arrows"))
					if out == nil {
						checkStringKeys(t, o)
					}
					checkSchema(t, o, "cc", out)
					checkCC(t, o, g)
				}
			})
		}
	}
}

// CSV keys are int64 when every key is an integer, else strings.
func TestCSVKeyInference(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ints.csv"), []byte("src,dst\n10,2\n2,-3\n"))
	writeFile(t, filepath.Join(dir, "strs.csv"), []byte("src,dst\n10,2\n2,x3\n\"a,b\",10\n"))
	ok(t, dir, nil, "run", "--input", "ints.csv", "--op", "cc", "--output", "ints.arrow")
	o := readOutput(t, filepath.Join(dir, "ints.arrow"))
	checkSchema(t, o, "cc", arrow.PrimitiveTypes.Int64)
	if got := fmt.Sprint(o.vertices(t)); got != "[-3 2 10]" {
		t.Errorf("vertices %s, want [-3 2 10]", got)
	}
	ok(t, dir, nil, "run", "--input", "strs.csv", "--op", "cc", "--output", "strs.arrow")
	o = readOutput(t, filepath.Join(dir, "strs.arrow"))
	checkSchema(t, o, "cc", arrow.BinaryTypes.String)
	if got := fmt.Sprintf("%q", o.vertices(t)); got != `["10" "2" "a,b" "x3"]` {
		t.Errorf("vertices %s, want [10 2 a,b x3]", got)
	}
	for _, c := range o.cols["component"] {
		if c != "10" {
			t.Errorf("components %v, want all 10", o.cols["component"])
			break
		}
	}
}

// A small graph worked by hand: self loops dropped, parallel edges merged
// with the minimum weight, unreachable vertices null (empty in CSV), +Inf
// width at the source written as inf.
func TestSemanticsByHand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 1 -> 2 twice (weights 5 and 2), 2 -> 3 (1), 1 -> 3 (4), 3 -> 3 (self
	// loop), 4 -> 5 (7, unreachable from 1), 6 -> 6 (only a self loop).
	writeFile(t, filepath.Join(dir, "g.csv"), []byte("src,dst,weight\n1,2,5\n1,2,2\n2,3,1\n1,3,4\n3,3,0.5\n4,5,7\n6,6,1\n"))
	want := map[string]string{
		"bfs":      "vertex,depth,parent\n1,0,1\n2,1,1\n3,1,1\n4,,\n5,,\n6,,\n",
		"sssp":     "vertex,distance,parent\n1,0,1\n2,2,1\n3,3,2\n4,,\n5,,\n6,,\n",
		"sswp":     "vertex,width,parent\n",
		"cc":       "vertex,component\n1,1\n2,1\n3,1\n4,4\n5,4\n6,6\n",
		"pagerank": "",
	}
	for op, csvWant := range want {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			out := op + ".csv"
			args := []string{"run", "--input", "g.csv", "--op", op, "--output", out, "--json"}
			if op != "cc" && op != "pagerank" {
				args = append(args, "--source", "1")
			}
			r := ok(t, dir, nil, args...)
			rep := jobReport(t, r)
			for k, v := range map[string]float64{
				"rows_read": 7, "vertices": 6, "input_edges": 7, "edges": 4, "self_loops_dropped": 2, "parallel_edges_merged": 1,
			} {
				if rep[k] != v {
					t.Errorf("--json %s = %v, want %v", k, rep[k], v)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, out))
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			switch op {
			case "sswp":
				// 1 -> 2 is 2 (the lighter parallel edge), 1 -> 3 is max(4,
				// min(2, 1)) = 4.
				if want := "vertex,width\n1,inf\n2,2\n3,4\n4,\n5,\n6,\n"; got != want {
					t.Errorf("sswp output:\n%s\nwant:\n%s", got, want)
				}
			case "pagerank":
				o := readCSVOutput(t, b)
				checkPageRank(t, o, newRef([]edge{{1, 2, nil}, {2, 3, nil}, {1, 3, nil}, {3, 3, nil}, {4, 5, nil}, {6, 6, nil}}, false, false, true), 0.85)
			case "bfs":
				// The parent of 3 can only be 1 (depth 1).
				if got != csvWant {
					t.Errorf("bfs output:\n%s\nwant:\n%s", got, csvWant)
				}
			default:
				if got != csvWant {
					t.Errorf("%s output:\n%s\nwant:\n%s", op, got, csvWant)
				}
			}
		})
	}
}

// jobReport parses the one JSON object --json prints on stderr.
func jobReport(t *testing.T, r result) map[string]any {
	t.Helper()
	var rep map[string]any
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if err := json.Unmarshal([]byte(last), &rep); err != nil {
		t.Fatalf("--json: stderr does not end in a JSON object: %v\n%s", err, r.stderr)
	}
	return rep
}

func TestJSONReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := randomTable(6)
	writeInput(t, dir, "e.parquet", tb)
	src := firstSource(t, tb.edges)
	g := newRef(tb.edges, true, false, true)
	for _, backend := range []string{"", "auto", "cpu"} {
		args := []string{"run", "--input", "e.parquet", "--op", "bfs", "--source", src, "--output", "o.parquet", "--json"}
		if backend != "" {
			args = append(args, "--backend", backend)
		}
		r := ok(t, dir, nil, args...)
		if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("--json: want one line on stderr, got %q", r.stderr)
		}
		rep := jobReport(t, r)
		if rep["backend"] != "cpu" {
			t.Errorf("backend %v, want cpu (there is no GPU)", rep["backend"])
		}
		if rep["op"] != "bfs" || rep["input"] != "e.parquet" || rep["output"] != "o.parquet" {
			t.Errorf("op, input, output: %v %v %v", rep["op"], rep["input"], rep["output"])
		}
		if s, _ := rep["strategy"].(string); s == "" {
			t.Errorf("no strategy in %v", rep)
		}
		if backend != "cpu" {
			if reason, _ := rep["backend_reason"].(string); !strings.Contains(reason, "GPU") {
				t.Errorf("backend_reason %q does not say why the GPU was not used", reason)
			}
		}
		timings, _ := rep["timings"].(map[string]any)
		for _, k := range []string{"read_s", "build_s", "compute_s", "write_s", "total_s"} {
			v, isNum := timings[k].(float64)
			if !isNum || v < 0 || v > 60 {
				t.Errorf("timings.%s = %v", k, timings[k])
			}
		}
		if total, _ := timings["total_s"].(float64); total < timings["read_s"].(float64)+timings["compute_s"].(float64) {
			t.Errorf("total_s %v is less than read_s + compute_s", timings)
		}
		edges := 0
		for _, out := range g.adj {
			edges += len(out)
		}
		for k, v := range map[string]float64{
			"rows_read": float64(len(tb.edges)), "rows_skipped": 0, "vertices": float64(len(g.keys)),
			"edges": float64(edges), "input_edges": float64(len(tb.edges)),
		} {
			if rep[k] != v {
				t.Errorf("%s = %v, want %v", k, rep[k], v)
			}
		}
	}
}

func TestBackendGPUWithoutGPU(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2\n2 3\n"))
	for _, op := range []string{"bfs", "pagerank", "cc"} {
		args := []string{"run", "--input", "e.txt", "--op", op, "--backend", "gpu", "--output", "o.csv"}
		if op == "bfs" {
			args = append(args, "--source", "1")
		}
		fails(t, dir, nil, 4, []string{"--backend cpu"}, args...)
		if _, err := os.Stat(filepath.Join(dir, "o.csv")); err == nil {
			t.Errorf("%s --backend gpu failed but left o.csv", op)
		}
	}
	fails(t, dir, nil, 2, []string{`"tpu"`}, "run", "--input", "e.txt", "--op", "cc", "--backend", "tpu")
}

// The column flags: names, an absent default weight column (weight 1), extra
// columns beside the edge columns.
func TestColumnFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := randomTable(7)
	tb.srcCol, tb.dstCol, tb.weightCol, tb.extra = "from", "to", "cost", true
	src := firstSource(t, tb.edges)
	for _, in := range []string{"e.parquet", "e.csv", "e.arrow"} {
		writeInput(t, dir, in, tb)
		out := "w-" + in + ".parquet"
		ok(t, dir, nil, "run", "--input", in, "--src-col", "from", "--dst-col", "to", "--weight-col", "cost",
			"--op", "sssp", "--source", src, "--output", out)
		checkSSSP(t, readOutput(t, filepath.Join(dir, out)), newRef(tb.edges, true, false, true), src)
		// Without --weight-col, the default "weight" is absent: every weight is 1.
		out = "u-" + in + ".parquet"
		ok(t, dir, nil, "run", "--input", in, "--src-col", "from", "--dst-col", "to",
			"--op", "sssp", "--source", src, "--output", out)
		checkSSSP(t, readOutput(t, filepath.Join(dir, out)), newRef(tb.edges, false, false, true), src)
	}
}

// A pipeline names its table's columns once, whatever operator it runs: the
// operators that use no weights take --weight-col and do not read the column
// (so a null weight, which sssp refuses, does not matter to them), and
// --json says so; the column must be there all the same. Operator
// parameters stay refused.
func TestTableFlagsForEveryOperator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := table{keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.PrimitiveTypes.Float64,
		srcCol: "from", dstCol: "to", weightCol: "cost", extra: true,
		edges: []edge{{int64(1), int64(2), 0.5}, {int64(2), int64(3), nil}}}
	for _, in := range []string{"e.parquet", "e.csv", "e.arrow"} {
		writeInput(t, dir, in, tb)
		cols := []string{"--input", in, "--src-col", "from", "--dst-col", "to", "--weight-col", "cost"}
		for _, op := range []string{"bfs", "pagerank", "cc", "sssp", "sswp"} {
			args := append([]string{"run"}, cols...)
			args = append(args, "--op", op, "--output", "o.csv", "--json")
			if op == "bfs" || op == "sssp" || op == "sswp" {
				args = append(args, "--source", "1")
			}
			if op == "sssp" || op == "sswp" {
				fails(t, dir, nil, 3, []string{`column "cost"`, "null"}, args...)
				continue
			}
			rep := jobReport(t, ok(t, dir, nil, args...))
			want := `weight column "cost" ignored by ` + op + `, which uses no edge weights (the column was not read)`
			if op == "pagerank" {
				// Unweighted pagerank: how to use the column.
				want = `pagerank ignored weight column "cost": unweighted pagerank (networkx.pagerank(G, weight=None)) counts every out-edge of a vertex the same; pass --weighted to weigh them by the column, as networkx.pagerank(G) does by default`
			}
			if notes, _ := rep["notes"].([]any); len(notes) != 1 || notes[0] != want {
				t.Errorf("%s %s: notes %v, want [%s]", in, op, rep["notes"], want)
			}
			if op == "bfs" {
				if o := readOutput(t, filepath.Join(dir, "o.csv")); o.rows() != 3 {
					t.Errorf("%s bfs: %d rows, want 3", in, o.rows())
				}
			}

			bench := append([]string{"bench"}, cols...)
			bench = append(bench, "--op", op, "--trials", "1", "--json")
			var rep2 map[string]any
			if err := json.Unmarshal([]byte(ok(t, dir, nil, bench...).stdout), &rep2); err != nil {
				t.Fatalf("bench --json: %v", err)
			}
			if notes, _ := rep2["notes"].([]any); len(notes) != 1 || notes[0] != want {
				t.Errorf("bench %s %s: notes %v, want [%s]", in, op, rep2["notes"], want)
			}
		}
		// Without --weight-col there is nothing to note.
		if rep := jobReport(t, ok(t, dir, nil, "run", "--input", in, "--src-col", "from", "--dst-col", "to", "--op", "cc", "--json")); rep["notes"] != nil {
			t.Errorf("%s cc without --weight-col: notes %v", in, rep["notes"])
		}
		fails(t, dir, nil, 2, []string{"--tolerance does not apply to operator bfs"},
			append(append([]string{"run"}, cols...), "--op", "bfs", "--source", "1", "--tolerance", "1e-3")...)
		// A weight column named explicitly must be there, whether the
		// operator reads it or not: a misspelt name went unnoticed.
		for _, op := range []string{"bfs", "pagerank", "cc"} {
			args := []string{"run", "--input", in, "--src-col", "from", "--dst-col", "to", "--weight-col", "wieght", "--op", op}
			if op == "bfs" {
				args = append(args, "--source", "1")
			}
			fails(t, dir, nil, 3, []string{`no weight column "wieght" (columns: `, "name the weight column with --weight-col"}, args...)
		}
	}
}

func TestFormatOverrides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := randomTable(8)
	src := firstSource(t, tb.edges)
	g := newRef(tb.edges, true, false, true)
	writeInput(t, dir, "e.parquet", tb)
	writeInput(t, dir, "e.csv", tb)
	writeInput(t, dir, "e.arrows", tb)
	os.Rename(filepath.Join(dir, "e.parquet"), filepath.Join(dir, "edges.data"))
	os.Rename(filepath.Join(dir, "e.csv"), filepath.Join(dir, "edges.parquet")) // misnamed
	os.Rename(filepath.Join(dir, "e.arrows"), filepath.Join(dir, "edges.bin"))
	for _, c := range []struct{ in, format, out, oformat string }{
		{"edges.data", "parquet", "o1.bin", "csv"},
		{"edges.parquet", "csv", "o2.bin", "parquet"},
		{"edges.bin", "arrows", "o3.csv", "arrow"},
		{"edges.data", "parquet", "o4.txt", "arrows"},
	} {
		ok(t, dir, nil, "run", "--input", c.in, "--input-format", c.format, "--op", "bfs", "--source", src,
			"--output", c.out, "--output-format", c.oformat)
		ext := map[string]string{"csv": ".csv", "parquet": ".parquet", "arrow": ".arrow", "arrows": ".arrows"}[c.oformat]
		if err := os.Rename(filepath.Join(dir, c.out), filepath.Join(dir, c.out+ext)); err != nil {
			t.Fatal(err)
		}
		checkBFS(t, readOutput(t, filepath.Join(dir, c.out+ext)), g, src)
	}
	// Without the override, the extension decides, and a wrong one is an
	// error saying which extensions there are.
	fails(t, dir, nil, 2, []string{"edges.data", `".data"`, ".parquet", "--input-format"}, "run", "--input", "edges.data", "--op", "cc")
	fails(t, dir, nil, 2, []string{`"xml"`}, "run", "--input", "edges.data", "--input-format", "xml", "--op", "cc")
	fails(t, dir, nil, 2, []string{"o.xml", `".xml"`, "--output-format"}, "run", "--input", "edges.data", "--input-format", "parquet", "--op", "cc", "--output", "o.xml")
	fails(t, dir, nil, 2, []string{`"xml"`}, "run", "--input", "edges.data", "--input-format", "parquet", "--op", "cc", "--output", "o.csv", "--output-format", "xml")
	if _, err := os.Stat(filepath.Join(dir, "o.xml")); err == nil {
		t.Error("a run with an unknown output format left o.xml")
	}
}

func TestMatrixMarket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "general.mtx"), []byte(`%%MatrixMarket matrix coordinate real general
% a comment
5 5 5
1 2 2.5
2 3 1
1 3 4
3 3 9
4 5 1
`))
	writeFile(t, filepath.Join(dir, "sym.mtx"), []byte(`%%MatrixMarket matrix coordinate pattern symmetric
4 4 2
2 1
4 3
`))
	ok(t, dir, nil, "run", "--input", "general.mtx", "--op", "sssp", "--source", "1", "--output", "g.csv")
	b, _ := os.ReadFile(filepath.Join(dir, "g.csv"))
	if want := "vertex,distance,parent\n1,0,1\n2,2.5,1\n3,3.5,2\n4,,\n5,,\n"; string(b) != want {
		t.Errorf("general.mtx sssp:\n%s\nwant:\n%s", b, want)
	}
	// Symmetric: each entry counts both ways, so 1 reaches 2 and 2 reaches 1.
	ok(t, dir, nil, "run", "--input", "sym.mtx", "--op", "bfs", "--source", "1", "--output", "s.csv")
	b, _ = os.ReadFile(filepath.Join(dir, "s.csv"))
	if want := "vertex,depth,parent\n1,0,1\n2,1,1\n3,,\n4,,\n"; string(b) != want {
		t.Errorf("sym.mtx bfs:\n%s\nwant:\n%s", b, want)
	}
}

func TestPageRankFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := randomTable(9)
	writeInput(t, dir, "e.parquet", tb)
	g := newRef(tb.edges, false, false, true)
	ok(t, dir, nil, "run", "--input", "e.parquet", "--op", "pagerank", "--damping", "0.5", "--output", "d.parquet")
	checkPageRank(t, readOutput(t, filepath.Join(dir, "d.parquet")), g, 0.5)

	iters := func(args ...string) (float64, result) {
		r := ok(t, dir, nil, append([]string{"run", "--input", "e.parquet", "--op", "pagerank", "--output", "o.parquet", "--json"}, args...)...)
		n, _ := jobReport(t, r)["iterations"].(float64)
		return n, r
	}
	full, r := iters()
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("a converged run warns: %s", r.stderr)
	}
	loose, _ := iters("--tolerance", "1e-3")
	if !(loose >= 1 && loose < full) {
		t.Errorf("iterations: %v with --tolerance 1e-3, %v by default; want fewer", loose, full)
	}
	two, r := iters("--max-iterations", "2")
	if two != 2 {
		t.Errorf("--max-iterations 2: %v iterations", two)
	}
	if !strings.Contains(r.stderr, "gpipe: warning:") || !strings.Contains(r.stderr, "converge") {
		t.Errorf("--max-iterations 2: no warning that it did not converge:\n%s", r.stderr)
	}
	// Stopped early, the ranks still sum to 1.
	sum := 0.0
	for _, v := range readOutput(t, filepath.Join(dir, "o.parquet")).cols["rank"] {
		sum += v.(float64)
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("--max-iterations 2: ranks sum to %v", sum)
	}
	for _, bad := range [][]string{{"--damping", "1.5", "damping"}, {"--tolerance", "-1", "tolerance"}, {"--max-iterations", "-3", "iterations"}, {"--damping", "x", "damping"}} {
		fails(t, dir, nil, 2, bad[2:], "run", "--input", "e.parquet", "--op", "pagerank", bad[0], bad[1])
	}
}

func TestDelta(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := randomTable(12)
	writeInput(t, dir, "e.parquet", tb)
	src := firstSource(t, tb.edges)
	g := newRef(tb.edges, true, false, true)
	for _, delta := range []string{"0.5", "3", "1000"} {
		for _, op := range []string{"sssp", "sswp"} {
			if delta == "1000" && op == "sswp" {
				continue
			}
			out := op + delta + ".parquet"
			ok(t, dir, nil, "run", "--input", "e.parquet", "--op", op, "--source", src, "--delta", delta, "--output", out)
			checkOp(t, readOutput(t, filepath.Join(dir, out)), op, g, src)
		}
	}
	fails(t, dir, nil, 2, []string{"delta"}, "run", "--input", "e.parquet", "--op", "sssp", "--source", src, "--delta", "-1")
}

// sswp allows negative weights; sssp does not.
func TestSSWPNegativeWeights(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.csv"), []byte("src,dst,weight\na,b,-2\nb,c,5\na,c,-7\nc,d,0\n"))
	ok(t, dir, nil, "run", "--input", "e.csv", "--op", "sswp", "--source", "a", "--output", "o.csv")
	b, _ := os.ReadFile(filepath.Join(dir, "o.csv"))
	if want := "vertex,width\na,inf\nb,-2\nc,-2\nd,-2\n"; string(b) != want {
		t.Errorf("sswp:\n%s\nwant:\n%s", b, want)
	}
}

// Without --output, a summary goes to stdout.
func TestSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2\n2 3\n3 4\n5 6\n"))
	r := ok(t, dir, nil, "run", "--input", "e.txt", "--op", "bfs", "--source", "1")
	for _, want := range []string{"bfs on e.txt: 6 vertices, 4 edges", "reached 4 of 6 vertices", "vertex", "depth", "parent"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	r = ok(t, dir, nil, "run", "--input", "e.txt", "--op", "cc")
	if !strings.Contains(r.stdout, "2 components; the largest has 4 vertices") {
		t.Errorf("cc summary:\n%s", r.stdout)
	}
}

// checkStringKeys checks that the key columns are both utf8 or both
// large_utf8.
func checkStringKeys(t *testing.T, o *output) {
	t.Helper()
	var types []arrow.DataType
	for _, f := range o.schema.Fields() {
		if keyColumns[f.Name] {
			types = append(types, f.Type)
		}
	}
	for _, typ := range types {
		if !arrow.TypeEqual(typ, types[0]) || typ.ID() != arrow.STRING && typ.ID() != arrow.LARGE_STRING {
			t.Errorf("key columns of types %v, want one string type", types)
			break
		}
	}
}
