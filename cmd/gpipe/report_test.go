package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Issue 37: nothing silent, the types pipelines write, a CLI that reports
// itself. These run the binary as a scheduled job would.

// sssp and sswp on a table without a weight column say on stderr and in
// --json that every weight was 1 (they ran silently with hop counts);
// --unweighted says that is meant, and silences it.
func TestWeightNoteOnStderr(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.csv"), []byte("src,dst\n1,2\n2,3\n"))
	want := `gpipe: note: sssp used weight 1 for every edge, as the input has no weight column "weight": its distances count edges; name the weight column with --weight-col, or pass --unweighted to say weight 1 is meant`
	r := ok(t, dir, nil, "run", "--input", "e.csv", "--op", "sssp", "--source", "1", "--output", "o.csv", "--json")
	if !strings.Contains(r.stderr, want+"\n") {
		t.Errorf("stderr lacks the note:\n%s", r.stderr)
	}
	notes, _ := jobReport(t, r)["notes"].([]any)
	if len(notes) != 1 || "gpipe: note: "+notes[0].(string) != want {
		t.Errorf("--json notes %v", notes)
	}
	r = ok(t, dir, nil, "run", "--input", "e.csv", "--op", "sssp", "--source", "1", "--output", "o.csv", "--unweighted", "--quiet")
	if r.stderr != "" {
		t.Errorf("--unweighted --quiet: stderr %q", r.stderr)
	}
	fails(t, dir, nil, 2, []string{"--unweighted with --weight-col"}, "run", "--input", "e.csv", "--op", "sssp", "--source", "1", "--unweighted", "--weight-col", "w")
	r = ok(t, dir, nil, "bench", "--input", "e.csv", "--op", "sswp", "--trials", "1")
	if !strings.Contains(r.stdout, "note         sswp used weight 1 for every edge") {
		t.Errorf("bench report lacks the note:\n%s", r.stdout)
	}
	r = ok(t, dir, nil, "bench", "--input", "e.csv", "--op", "sswp", "--trials", "1", "--unweighted")
	if strings.Contains(r.stdout, "note") {
		t.Errorf("bench --unweighted notes:\n%s", r.stdout)
	}
}

// A header line is never an edge: a .tsv is tab-separated CSV whose header
// names the columns (it was read as an edge list, the header an edge
// src→dst), and an edge list's header line is refused naming its line.
func TestHeaderLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.tsv"), []byte("src\tdst\n1\t2\n2\t3\n"))
	ok(t, dir, nil, "run", "--input", "e.tsv", "--op", "cc", "--output", "cc.csv")
	o := readOutput(t, filepath.Join(dir, "cc.csv"))
	if got := strings.Join(o.vertices(t), " "); got != "1 2 3" {
		t.Errorf("vertices %s, want 1 2 3 (the header is no edge)", got)
	}
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("# exported\nsrc dst\n1 2\n2 3\n"))
	fails(t, dir, nil, 3, []string{`e.txt, line 2: the first line "src dst" looks like a header, not an edge`, "--header yes"},
		"run", "--input", "e.txt", "--op", "pagerank")
	ok(t, dir, nil, "run", "--input", "e.txt", "--op", "pagerank", "--header", "yes", "--output", "pr.csv")
	if n := readOutput(t, filepath.Join(dir, "pr.csv")).rows(); n != 3 {
		t.Errorf("--header yes: %d vertices, want 3", n)
	}
	// Without a header line, a CSV's first line is an edge like the rest.
	writeFile(t, filepath.Join(dir, "plain.csv"), []byte("1,2\n2,3\n"))
	ok(t, dir, nil, "run", "--input", "plain.csv", "--op", "bfs", "--source", "1", "--output", "b.csv")
	if n := readOutput(t, filepath.Join(dir, "b.csv")).rows(); n != 3 {
		t.Errorf("headerless CSV: %d vertices, want 3", n)
	}
	fails(t, dir, nil, 2, []string{"--header applies to CSV, TSV and edge list inputs"}, "run", "--input", "x.parquet", "--op", "cc", "--header", "no")
	fails(t, dir, nil, 2, []string{"--src-col with --header no"}, "run", "--input", "plain.csv", "--op", "cc", "--header", "no", "--src-col", "a")
}

// --delimiter reads ;-separated CSV, and a file read with the wrong one
// says which flag reads it.
func TestDelimiterFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.csv"), []byte("src;dst;weight\n1;2;0.5\n2;3;1\n"))
	fails(t, dir, nil, 3, []string{`e.csv: no source column "src" (columns: src;dst;weight); the first line holds semicolons, not commas: pass --delimiter ';'`},
		"run", "--input", "e.csv", "--op", "cc")
	// With decimal commas, the second line has two fields.
	writeFile(t, filepath.Join(dir, "dec.csv"), []byte("src;dst;weight\n1;2;0,5\n2;3;1\n"))
	fails(t, dir, nil, 3, []string{`dec.csv, line 2: malformed CSV: wrong number of fields; the first line holds semicolons, not commas: pass --delimiter ';'`},
		"run", "--input", "dec.csv", "--op", "cc")
	ok(t, dir, nil, "run", "--input", "e.csv", "--op", "cc", "--delimiter", ";", "--output", "cc.csv")
	fails(t, dir, nil, 2, []string{"--delimiter applies to CSV and TSV inputs"}, "run", "--input", "e.txt", "--op", "cc", "--delimiter", ";")
	fails(t, dir, nil, 2, []string{`--delimiter ";;" is not one character`}, "run", "--input", "e.csv", "--op", "cc", "--delimiter", ";;")
}

// Parquet and Arrow IPC files on stdin are read without --input-format
// (stdin was taken for an Arrow IPC stream).
func TestStdinParquetWithoutFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := randomTable(9)
	src := firstSource(t, tb.edges)
	g := newRef(tb.edges, true, false, true)
	for _, name := range []string{"e.parquet", "e.arrow"} {
		writeInput(t, dir, name, tb)
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ok(t, dir, data, "run", "--input", "-", "--op", "sssp", "--source", src, "--output", "o.arrow", "--quiet")
		checkSSSP(t, readOutput(t, filepath.Join(dir, "o.arrow")), g, src)
	}
}

// DECIMAL weights and int32/int64 key columns, as DuckDB and Spark write
// them, are read (they were refused); a weight a float64 rounds is noted.
func TestDecimalWeightsAndMixedKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int32}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64},
		{Name: "weight", Type: &arrow.Decimal128Type{Precision: 38, Scale: 3}},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(
		`[{"src": 1, "dst": 2, "weight": "1.5"}, {"src": 2, "dst": 3, "weight": "0.25"}, {"src": 1, "dst": 3, "weight": "12345678901234567890.125"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	f, err := os.Create(filepath.Join(dir, "d.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, f, 10, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	r := ok(t, dir, nil, "run", "--input", "d.parquet", "--op", "sssp", "--source", "1", "--output", "o.csv")
	if !strings.Contains(r.stderr, `gpipe: note: weight column "weight" is decimal(38,3), read as float64: 1 weight has more significant digits than a float64 holds`) {
		t.Errorf("stderr lacks the decimal note:\n%s", r.stderr)
	}
	dist := readOutput(t, filepath.Join(dir, "o.csv")).byVertex(t, "distance")
	if dist["2"] != 1.5 || dist["3"] != 1.75 {
		t.Errorf("distances %v, want 2: 1.5, 3: 1.75", dist)
	}
}

// A run with --output ends with one line on stderr saying what it did
// (a scheduled job's log showed nothing); --quiet, --json and --output -
// have none.
func TestSummaryLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.csv"), []byte("src,dst\n1,2\n2,3\n3,1\n"))
	r := ok(t, dir, nil, "run", "--input", "e.csv", "--op", "bfs", "--source", "1", "--output", "o.parquet")
	line := strings.TrimSuffix(r.stderr, "\n")
	for _, want := range []string{"gpipe: bfs on e.csv: 3 rows, 3 vertices, 3 edges; cpu (", " s (read ", "; wrote o.parquet"} {
		if !strings.Contains(line, want) || strings.Contains(line, "\n") {
			t.Errorf("stderr %q: want one line with %q", r.stderr, want)
		}
	}
	for _, extra := range [][]string{{"--quiet"}, {"-q"}, {"--json"}} {
		r := ok(t, dir, nil, append([]string{"run", "--input", "e.csv", "--op", "bfs", "--source", "1", "--output", "o.parquet"}, extra...)...)
		if strings.Contains(r.stderr, "wrote o.parquet") {
			t.Errorf("%v: stderr %q", extra, r.stderr)
		}
	}
	r = ok(t, dir, nil, "gen", "grid", "--rows", "3", "--cols", "3", "--output", "g.parquet", "--quiet")
	if r.stderr != "" {
		t.Errorf("gen --quiet: stderr %q", r.stderr)
	}
}

// --version says which build this is: its version or commit, the Go
// version and platform, and the CUDA driver or why there is none (it said
// "dev").
func TestVersion(t *testing.T) {
	t.Parallel()
	r := ok(t, t.TempDir(), nil, "--version")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "gpipe ") || !strings.HasPrefix(lines[1], "CUDA: ") {
		t.Fatalf("--version: %q", r.stdout)
	}
	if want := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH; !strings.HasSuffix(lines[0], want) {
		t.Errorf("--version %q lacks %q", lines[0], want)
	}
	// The commit, where the go command recorded one in the binary.
	out, err := exec.Command("go", "version", "-m", gpipeBin).Output() // go test runs with the go command on PATH
	if err != nil {
		t.Skipf("go version -m: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
			if rev := strings.TrimPrefix(f[1], "vcs.revision="); !strings.Contains(lines[0], "commit "+rev[:12]) {
				t.Errorf("--version %q lacks the commit %s", lines[0], rev[:12])
			}
		}
	}
	if r := ok(t, t.TempDir(), nil, "-v"); r.stdout != strings.Join(lines, "\n")+"\n" {
		t.Errorf("-v: %q", r.stdout)
	}
}

// A misspelt flag or command gets a suggestion; one far from any gets
// none.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fails(t, dir, nil, 2, []string{"flag provided but not defined: -sourc", "did you mean --source? (see 'gpipe run --help')"},
		"run", "--input", "e.csv", "--op", "bfs", "--sourc", "1")
	fails(t, dir, nil, 2, []string{"did you mean --weight-col?"}, "run", "--input", "e.csv", "--op", "sssp", "--wieght-col", "w")
	fails(t, dir, nil, 2, []string{"did you mean --edge-factor?"}, "gen", "kronecker", "--scale", "3", "--edge_factor", "4")
	fails(t, dir, nil, 2, []string{`unknown command "rn"; did you mean run?`}, "rn")
	r := fails(t, dir, nil, 2, []string{"flag provided but not defined: -xyz"}, "run", "--xyz")
	if strings.Contains(r.stderr, "did you mean") {
		t.Errorf("a suggestion for --xyz: %s", r.stderr)
	}
}

// Shell completion (bash and zsh ask gpipe for the words; fish gets a
// script of every flag) and the manual page come from the CLI's own
// description of its commands and flags.
func TestCompletionAndMan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for shell, want := range map[string]string{
		"bash": "complete -o bashdefault -o default -F _gpipe_bash_autocomplete gpipe",
		"zsh":  "compdef _gpipe gpipe",
		"fish": "complete -c gpipe -n '__fish_seen_subcommand_from run' -f -l source",
	} {
		r := ok(t, dir, nil, "completion", shell)
		if !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s lacks %q:\n%s", shell, want, r.stdout)
		}
	}
	fails(t, dir, nil, 2, []string{`no completion for the shell "tcsh"`}, "completion", "tcsh")
	if r := ok(t, dir, nil, "run", "--sou", "--generate-bash-completion"); !strings.Contains(r.stdout, "--source") {
		t.Errorf("completing run --sou: %q", r.stdout)
	}
	if r := ok(t, dir, nil, "--generate-bash-completion"); !strings.Contains(r.stdout, "run") || !strings.Contains(r.stdout, "serve") {
		t.Errorf("completing a command: %q", r.stdout)
	}
	r := ok(t, dir, nil, "man")
	for _, want := range []string{".TH gpipe 1", ".SH NAME", "--weight-col", "--unweighted"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("man lacks %q", want)
		}
	}
}
