package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// chain is 0 -> 1 -> ... -> n-1 with weights 1, int64 keys.
func chain(n int) []edge {
	var es []edge
	for i := 0; i+1 < n; i++ {
		es = append(es, edge{src: int64(i), dst: int64(i + 1), w: 1.0})
	}
	return es
}

// A null key fails naming the file, the column and the row, counted from 0
// over the whole input (across row groups and batches); --skip-invalid drops
// the row and says so.
func TestNullKey(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"e.parquet", "e.arrow", "e.arrows", "e.csv", "-"} {
		for _, col := range []string{"src", "dst"} {
			if col == "dst" && in != "e.parquet" && in != "e.csv" {
				continue
			}
			t.Run(in+"/"+col, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				es := chain(12)
				// Rows 6 and 9 have a null key: beyond the first row group
				// (4 rows) and batch (5 or 3 rows).
				for _, row := range []int{6, 9} {
					if col == "src" {
						es[row].src = nil
					} else {
						es[row].dst = nil
					}
				}
				tb := table{keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.PrimitiveTypes.Float64, edges: es}
				stdin := writeInput(t, dir, in, tb)
				where := fmt.Sprintf("column %q, row 6: null vertex key", col)
				if in == "e.csv" {
					// CSV errors name the line: row 6 is after the header.
					where = fmt.Sprintf("column %q, line 8: empty (null) vertex key", col)
				}
				fails(t, dir, stdin, 3, []string{in + ": ", where, "--skip-invalid"},
					"run", "--input", in, "--op", "cc", "--output", "o.csv")
				if _, err := os.Stat(filepath.Join(dir, "o.csv")); err == nil {
					t.Error("a failed run left its output")
				}

				r := ok(t, dir, stdin, "run", "--input", in, "--op", "bfs", "--source", "0", "--output", "o.csv", "--skip-invalid", "--json")
				want := fmt.Sprintf("gpipe: skipped 2 invalid rows (2 rows: null key in column %q)\n", col)
				if !strings.HasPrefix(r.stderr, want) {
					t.Errorf("stderr %q, want it to start with %q", r.stderr, want)
				}
				rep := jobReport(t, r)
				if rep["rows_skipped"] != 2.0 || rep["input_edges"] != 9.0 {
					t.Errorf("rows_skipped %v, input_edges %v; want 2, 9", rep["rows_skipped"], rep["input_edges"])
				}
				var kept []edge
				for _, e := range es {
					if e.src != nil && e.dst != nil {
						kept = append(kept, e)
					}
				}
				checkBFS(t, readOutput(t, filepath.Join(dir, "o.csv")), newRef(kept, false, false, true), "0")
			})
		}
	}
}

func TestNullWeight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	es := chain(8)
	es[5].w = nil
	tb := table{keyType: arrow.PrimitiveTypes.Int32, weightType: arrow.PrimitiveTypes.Float64, edges: es}
	writeInput(t, dir, "e.parquet", tb)
	fails(t, dir, nil, 3, []string{`e.parquet: column "weight", row 5: null weight`}, "run", "--input", "e.parquet", "--op", "sssp", "--source", "0")
	r := ok(t, dir, nil, "run", "--input", "e.parquet", "--op", "sssp", "--source", "0", "--skip-invalid", "--output", "o.csv")
	if !strings.Contains(r.stderr, `skipped 1 invalid row (1 row: null weight in column "weight")`) {
		t.Errorf("stderr %q does not report the skipped row", r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "o.csv"))
	if want := "vertex,distance,parent\n0,0,0\n1,1,0\n2,2,1\n3,3,2\n4,4,3\n5,5,4\n6,,\n7,,\n"; string(b) != want {
		t.Errorf("output:\n%s\nwant:\n%s", b, want)
	}
}

// A negative weight fails sssp naming its row, and --skip-invalid drops it;
// cc, bfs and sswp accept it.
func TestNegativeWeight(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"e.parquet", "e.arrows", "e.csv", "e.txt"} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			es := chain(9)
			es = append(es, edge{src: int64(0), dst: int64(8), w: 100.0})
			es[7].w = -2.5 // 7 -> 8
			tb := table{keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.PrimitiveTypes.Float64, edges: es}
			writeInput(t, dir, in, tb)
			// Binary inputs name the data row, counting from 0; text
			// inputs name the line, counting from 1 with the CSV header
			// and the edge list's comment lines (two at the top, one after
			// the third edge).
			where := map[string]string{"e.parquet": `column "weight", row 7`, "e.arrows": `column "weight", row 7`,
				"e.csv": `column "weight", line 9`, "e.txt": `column "weight", line 11`}[in]
			fails(t, dir, nil, 3, []string{in, where, "negative weight -2.5"}, "run", "--input", in, "--op", "sssp", "--source", "0")
			r := ok(t, dir, nil, "run", "--input", in, "--op", "sssp", "--source", "0", "--skip-invalid", "--output", "o.csv")
			if !strings.Contains(r.stderr, "skipped 1 invalid row (") {
				t.Errorf("stderr %q does not report the skipped row", r.stderr)
			}
			o := readOutput(t, filepath.Join(dir, "o.csv"))
			if d := o.byVertex(t, "distance")["8"]; d != 100.0 {
				t.Errorf("distance of 8 is %v, want 100 (the edge 7 -> 8 dropped)", d)
			}
			if in == "e.parquet" {
				for _, op := range []string{"bfs", "sswp"} {
					ok(t, dir, nil, "run", "--input", in, "--op", op, "--source", "0", "--output", op+".csv")
				}
				ok(t, dir, nil, "run", "--input", in, "--op", "cc", "--output", "cc.csv")
			}
		})
	}
}

func TestBadKeyColumns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	es := chain(5)
	for i := range es {
		es[i].src, es[i].dst = float64(i)+0.5, float64(i)+1.5
	}
	writeInput(t, dir, "float.parquet", table{keyType: arrow.PrimitiveTypes.Float64, edges: es})
	writeInput(t, dir, "float.arrow", table{keyType: arrow.PrimitiveTypes.Float64, edges: es})
	for _, in := range []string{"float.parquet", "float.arrow"} {
		fails(t, dir, nil, 3, []string{in, `column "src"`, "double", "cannot be a vertex key", "int64"},
			"run", "--input", in, "--op", "cc")
	}
	writeInput(t, dir, "ok.parquet", table{keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.BinaryTypes.String, edges: []edge{{int64(1), int64(2), "heavy"}}})
	fails(t, dir, nil, 3, []string{"ok.parquet", `column "weight"`, "cannot be an edge weight"},
		"run", "--input", "ok.parquet", "--op", "sssp", "--source", "1")
}

func TestMissingColumns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := table{keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.PrimitiveTypes.Float64, edges: chain(4), srcCol: "a", dstCol: "b", weightCol: "w"}
	for _, in := range []string{"e.parquet", "e.arrow", "e.arrows", "e.csv", "-"} {
		stdin := writeInput(t, dir, in, tb)
		fails(t, dir, stdin, 3, []string{in + ": ", `no source column "src" (columns: a, b, w)`, "--src-col"},
			"run", "--input", in, "--op", "cc")
		if in != "e.parquet" && in != "e.csv" {
			continue
		}
		fails(t, dir, stdin, 3, []string{`no destination column "dst" (columns: a, b, w)`, "--dst-col"},
			"run", "--input", in, "--op", "cc", "--src-col", "a")
		fails(t, dir, stdin, 3, []string{`no weight column "weight" (columns: a, b, w)`, "--weight-col"},
			"run", "--input", in, "--op", "sssp", "--source", "0", "--src-col", "a", "--dst-col", "b", "--weight-col", "weight")
	}
}

func TestUnknownSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ints.txt"), []byte("1 2\n2 3\n"))
	writeFile(t, filepath.Join(dir, "strs.csv"), []byte("src,dst\nalice,bob\n"))
	for _, op := range []string{"bfs", "sssp", "sswp"} {
		fails(t, dir, nil, 3, []string{`"99"`}, "run", "--input", "ints.txt", "--op", op, "--source", "99", "--output", "o.csv")
	}
	fails(t, dir, nil, 3, []string{`"carol"`}, "run", "--input", "strs.csv", "--op", "bfs", "--source", "carol")
	// A key that cannot be of the key type at all is a bad parameter.
	fails(t, dir, nil, 2, []string{`"x"`}, "run", "--input", "ints.txt", "--op", "sssp", "--source", "x")
	fails(t, dir, nil, 2, []string{"--source"}, "run", "--input", "ints.txt", "--op", "sswp")
	if _, err := os.Stat(filepath.Join(dir, "o.csv")); err == nil {
		t.Error("a failed run left its output")
	}
	ok(t, dir, nil, "run", "--input", "strs.csv", "--op", "bfs", "--source", "alice")
}

func TestBrokenFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := table{keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.PrimitiveTypes.Float64, edges: chain(200)}
	writeInput(t, dir, "good.parquet", tb)
	writeInput(t, dir, "good.arrow", tb)
	good, _ := os.ReadFile(filepath.Join(dir, "good.parquet"))
	writeFile(t, filepath.Join(dir, "cut.parquet"), good[:len(good)/2])
	writeFile(t, filepath.Join(dir, "tail.parquet"), good[:len(good)-3])
	writeFile(t, filepath.Join(dir, "tiny.parquet"), good[:6])
	writeFile(t, filepath.Join(dir, "empty.parquet"), nil)
	writeFile(t, filepath.Join(dir, "text.parquet"), []byte(csvText(tb)))
	goodArrow, _ := os.ReadFile(filepath.Join(dir, "good.arrow"))
	writeFile(t, filepath.Join(dir, "cut.arrow"), goodArrow[:len(goodArrow)/2])
	stream := arrowStream(t, tb, 50)
	writeFile(t, filepath.Join(dir, "cut.arrows"), stream[:len(stream)*2/3])
	for in, wants := range map[string][]string{
		"cut.parquet":   {"truncated"},
		"tail.parquet":  {"truncated"},
		"tiny.parquet":  {"truncated"},
		"empty.parquet": {"empty"},
		"text.parquet":  {"not a Parquet file"},
		"cut.arrow":     {"truncated"},
		"cut.arrows":    {},
		"missing.csv":   {"cannot open", "no such file"},
	} {
		fails(t, dir, nil, 3, append([]string{"gpipe: " + in + ": "}, wants...), "run", "--input", in, "--op", "cc", "--output", "o.csv")
	}
	// Stdin that is not an Arrow IPC stream.
	fails(t, dir, []byte(csvText(tb)), 3, []string{"gpipe: -: ", "Arrow IPC stream"}, "run", "--input", "-", "--op", "cc", "--output", "o.csv")
	fails(t, dir, []byte{}, 3, []string{"gpipe: -: ", "empty"}, "run", "--input", "-", "--op", "cc", "--output", "o.csv")
	if _, err := os.Stat(filepath.Join(dir, "o.csv")); err == nil {
		t.Error("a failed run left its output")
	}
}

func TestMalformedText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, c := range map[string]struct {
		text  string
		wants []string
	}{
		"one.txt":    {"# c\n1 2\n3\n4 5\n", []string{"one.txt, line 3", "1 field"}},
		"four.el":    {"1 2\n2 3\n% x\n3 4 5 6\n", []string{"four.el, line 4", "more than 3 fields"}},
		"weight.txt": {"1 2 1.5\n2 3 heavy\n", []string{`weight.txt: column "weight", line 2`, `"heavy" is not a number`}},
		"mixed.tsv":  {"1\t2\t3\n2\t3\n", []string{"mixed.tsv, line 2", "wrong number of fields"}},
		"bad.csv":    {"src,dst\n1,2\n\"3,4\n", []string{"bad.csv"}},
		"bad.mtx":    {"%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n", []string{"bad.mtx, line", "1 of the 2 entries"}},
		"range.mtx":  {"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 4\n", []string{"range.mtx, line 3", "outside 1..3"}},
	} {
		writeFile(t, filepath.Join(dir, name), []byte(c.text))
		// sssp: cc does not read the weights.
		fails(t, dir, nil, 3, c.wants, "run", "--input", name, "--op", "sssp", "--source", "1", "--output", "o.csv")
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2\n"))
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"run", "--input", "e.txt"}, []string{"--op or --program is required", "gpipe run --help"}},
		{[]string{"run", "--op", "cc"}, []string{"--input is required"}},
		{[]string{"run", "--input", "e.txt", "--op", "dijkstra"}, []string{`unknown operator "dijkstra"`, "bfs", "sssp", "pagerank", "cc", "sswp"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "run", "gen", "bench", "devices"}},
		{[]string{"run", "--input", "e.txt", "--op", "cc", "stray"}, []string{`unexpected argument "stray"`}},
		{[]string{"run", "--input", "e.txt", "--op", "cc", "--no-such-flag"}, []string{"no-such-flag", "gpipe run --help"}},
		{[]string{"run", "--input", "e.txt", "--op", "bfs", "--source"}, []string{"source"}},
		{[]string{"run", "--input", "e.txt", "--op", "pagerank", "--max-iterations", "many"}, []string{"max-iterations"}},
		{[]string{"--no-such-flag"}, []string{"no-such-flag", "'gpipe --help'"}},
		{[]string{"gen", "kronecker", "--scale", "big", "--output", "k.csv"}, []string{"scale", "gpipe gen kronecker --help"}},
		{[]string{"gen", "kronecker", "--output", "k.csv"}, []string{"--scale"}},
		{[]string{"gen", "kronecker", "--scale", "40", "--output", "k.csv"}, []string{"scale 40"}},
		{[]string{"bench", "--gen", "kronecker:4", "--op", "bfs", "--trials", "x"}, []string{"trials", "gpipe bench --help"}},
		{[]string{"bench", "--gen", "kronecker:4"}, []string{"--op"}},
		{[]string{"bench", "--gen", "kronecker:4", "--op", "bfs", "--trials", "0"}, []string{"--trials"}},
		{[]string{"bench", "--gen", "erdos:4", "--op", "bfs"}, []string{`"erdos:4"`}},
		{[]string{"bench", "--op", "bfs"}, []string{"--input", "--gen"}},
		{[]string{"devices", "--verbose"}, []string{"verbose"}},
	} {
		r := fails(t, dir, nil, 2, c.wants, c.args...)
		if r.stdout != "" {
			t.Errorf("gpipe %s: stdout %q, want nothing", strings.Join(c.args, " "), r.stdout)
		}
	}
}

// An operator flag given to an operator that does not take it is refused,
// not ignored, and so is a 0 that would silently stand for the default.
func TestParamsThatDoNotApply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2\n2 3\n"))
	run := []string{"run", "--input", "e.txt", "--output", "o.csv"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--op", "pagerank", "--source", "1"}, []string{"--source does not apply to operator pagerank", "--tolerance, --max-iterations, --damping"}},
		{[]string{"--op", "cc", "--source", "1"}, []string{"--source does not apply to operator cc (it takes --strategy, --vwarp"}},
		{[]string{"--op", "bfs", "--source", "1", "--damping", "0.5"}, []string{"--damping does not apply to operator bfs"}},
		{[]string{"--op", "sssp", "--source", "1", "--max-iterations", "3"}, []string{"--max-iterations does not apply to operator sssp", "--delta"}},
		{[]string{"--op", "cc", "--strategy", "gshard"}, []string{`operator cc has no GPU strategy "gshard"`, "afforest, vwc, gshards, cw"}},
		{[]string{"--op", "pagerank", "--max-iterations", "0"}, []string{"--max-iterations 0 is not valid"}},
		{[]string{"--op", "pagerank", "--tolerance", "0"}, []string{"--tolerance 0 is not valid"}},
		{[]string{"--op", "pagerank", "--damping", "0"}, []string{"--damping 0 is not valid"}},
		{[]string{"--op", "bfs", "--source", "1", "--vwarp", "3"}, []string{"vwarp", "3 is not 1, 2, 4, 8, 16 or 32"}},
	} {
		fails(t, dir, nil, 2, c.want, append(run, c.args...)...)
	}
	fails(t, dir, nil, 2, []string{"--sources does not apply to operator pagerank"}, "bench", "--input", "e.txt", "--op", "pagerank", "--sources", "2")
	fails(t, dir, nil, 2, []string{"--sources 0 must be at least 1"}, "bench", "--input", "e.txt", "--op", "bfs", "--sources", "0")
	// What applies is taken: GPU flags for pagerank (ignored on the CPU),
	// and --delta 0, which means "choose from the weights".
	ok(t, dir, nil, append(run, "--op", "pagerank", "--vwarp", "8", "--damping", "0.5")...)
	ok(t, dir, nil, append(run, "--op", "sssp", "--source", "1", "--delta", "0")...)
}

// Options that would destroy the input or silently empty the graph are
// refused before anything is read or written.
func TestRefusedOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	edges := []byte("src,dst\n1,2\n2,3\n")
	writeFile(t, filepath.Join(dir, "e.csv"), edges)
	if err := os.Symlink("e.csv", filepath.Join(dir, "link.csv")); err != nil {
		t.Fatal(err)
	}
	fails(t, dir, nil, 2, []string{"--output e.csv is the input file"}, "run", "--input", "e.csv", "--op", "cc", "--output", "e.csv")
	fails(t, dir, nil, 2, []string{"--output link.csv is the input file"}, "run", "--input", "e.csv", "--op", "cc", "--output", "link.csv")
	fails(t, dir, nil, 2, []string{`"src" is named as both the source and the destination column`},
		"run", "--input", "e.csv", "--op", "cc", "--dst-col", "src")
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2 0.5\n"))
	fails(t, dir, nil, 2, []string{"--src-col does not apply to e.txt", "by position"}, "run", "--input", "e.txt", "--op", "cc", "--src-col", "a")
	fails(t, dir, nil, 2, []string{"--weight-col does not apply to e.txt"}, "run", "--input", "e.txt", "--op", "sssp", "--source", "1", "--weight-col", "w")
	fails(t, dir, nil, 2, []string{"--dst-col does not apply"}, "bench", "--input", "e.txt", "--op", "cc", "--dst-col", "b")
	if b, _ := os.ReadFile(filepath.Join(dir, "e.csv")); string(b) != string(edges) {
		t.Errorf("the input changed:\n%s", b)
	}
}

// An output that is the file standard input reads (< e.parquet), or the
// file standard output writes (1<> e.arrows), is refused as the input's own
// path is, and the file is left as it was.
func TestRefusedOutputIsStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := table{keyType: arrow.PrimitiveTypes.Int64, edges: []edge{{src: int64(1), dst: int64(2)}, {src: int64(2), dst: int64(3)}}}
	for _, name := range []string{"e.parquet", "e.arrows", "e.arrow", "e.csv"} {
		format := strings.TrimPrefix(filepath.Ext(name), ".")
		writeInput(t, dir, name, tb)
		path := filepath.Join(dir, name)
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := gpipeStdio(t, dir, path, os.O_RDONLY, "run", "--input", "-", "--input-format", format, "--op", "cc", "--output", name)
		if r.code != 2 || !strings.Contains(r.stderr, "--output "+name+" is the file on standard input") {
			t.Errorf("stdin is the output: %v", r)
		}
		r = gpipeStdio(t, dir, path, os.O_RDWR, "run", "--input", name, "--op", "cc", "--output", "-", "--output-format", format)
		if r.code != 2 || !strings.Contains(r.stderr, "standard output is the input file") {
			t.Errorf("stdout is the input: %v", r)
		}
		checkOneLineError(t, r)
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
			t.Errorf("%s changed", name)
		}
	}
}

// String keys of Arrow inputs that are not UTF-8 are refused as CSV's are
// (exit 3, naming the column and row), or with --skip-invalid dropped and
// counted; they used to pass into the utf8 vertex column of the result.
func TestArrowKeysNotUTF8(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := table{keyType: arrow.BinaryTypes.String, edges: []edge{{src: "a", dst: "b"}, {src: "b", dst: "c\xff"}, {src: "c", dst: "d"}}}
	for _, name := range []string{"e.arrow", "e.arrows", "-"} {
		stdin := writeInput(t, dir, name, tb)
		fails(t, dir, stdin, 3, []string{`column "dst", row 1: vertex key "c\xff" is not valid UTF-8`, "--skip-invalid"},
			"run", "--input", name, "--op", "cc")
		r := ok(t, dir, stdin, "run", "--input", name, "--op", "cc", "--skip-invalid", "--output", "out.csv")
		if !strings.Contains(r.stderr, "skipped 1 invalid row (1 row: vertex key not valid UTF-8)") {
			t.Errorf("%s: stderr %q", name, r.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "out.csv")); string(b) != "vertex,component\na,a\nb,a\nc,c\nd,c\n" {
			t.Errorf("%s: output %q", name, b)
		}
	}
}

// gpipeStdio runs the binary in dir with path opened (flag: os.O_RDONLY for
// standard input, os.O_RDWR for standard output, which 1<> opens) as the
// standard stream the flag names.
func gpipeStdio(t *testing.T, dir, path string, flag int, args ...string) result {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs.Add(1)
	cmd := exec.Command(gpipeBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if flag == os.O_RDONLY {
		cmd.Stdin = f
	} else {
		cmd.Stdout = f
	}
	err = cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	checkNoPanic(t, r)
	return r
}

// The summary says when PageRank stopped short, and keeps long keys from
// widening every row of the preview.
func TestSummaryText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := strings.Repeat("k", 5000)
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("a b\nb c\nc "+long+"\n"))
	r := ok(t, dir, nil, "run", "--input", "e.txt", "--op", "pagerank", "--max-iterations", "1")
	if !strings.Contains(r.stdout, "stopped after 1 iteration without converging") || strings.Contains(r.stdout, "converged after") {
		t.Errorf("summary does not say pagerank stopped short:\n%s", r.stdout)
	}
	if len(r.stdout) > 2000 || !strings.Contains(r.stdout, strings.Repeat("k", 39)+"…") {
		t.Errorf("summary of %d bytes does not shorten the long key:\n%.500s", len(r.stdout), r.stdout)
	}
	r = ok(t, dir, nil, "run", "--input", "e.txt", "--op", "pagerank")
	if !strings.Contains(r.stdout, "converged after") {
		t.Errorf("summary:\n%s", r.stdout)
	}
}

// Write errors say what to do about them.
func TestRunDiskFull(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2\n"))
	fails(t, dir, nil, 1, []string{"/dev/full", "no space left on device", "free some space"},
		"run", "--input", "e.txt", "--op", "cc", "--output", "/dev/full", "--output-format", "csv")
}
