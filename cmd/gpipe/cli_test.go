// End-to-end tests of the gpipe command line: TestMain builds the binary once
// and the tests run it as a user would, on small inputs they write in every
// format, and compare its exit code, stderr and output with answers worked
// out by hand or by the small reference implementations in reference_test.go.
package main_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// gpipeBin is the binary TestMain builds.
var gpipeBin string

// runs counts the binary's runs.
var runs atomic.Int64

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpipe-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gpipeBin = filepath.Join(dir, "gpipe")
	if err := buildBinary(gpipeBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if testing.Verbose() {
		fmt.Printf("gpipe ran %d times\n", runs.Load())
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary builds this package (the gpipe command) into out, with the go
// command of the toolchain running the tests, else the one on PATH.
func buildBinary(out string) error {
	//lint:ignore SA1019 the toolchain that runs the tests is the one to build with; PATH may hold another
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			return fmt.Errorf("no go command to build gpipe with: %v", err)
		}
	}
	cmd := exec.Command(goCmd, "build", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, b)
	}
	return nil
}

// result is what one run of the binary did.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("gpipe %s: exit %d\nstderr: %s", strings.Join(r.args, " "), r.code, r.stderr)
}

// gpipe runs the binary in dir with args and stdin (nil: none) and returns
// what it did. A run that takes more than a minute fails the test.
func gpipe(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runs.Add(1)
	cmd := exec.CommandContext(ctx, gpipeBin, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("gpipe %s: %v (ctx: %v)\nstderr: %s", strings.Join(args, " "), err, ctx.Err(), r.stderr)
		}
		r.code = ee.ExitCode()
	}
	checkNoPanic(t, r)
	return r
}

// ok runs gpipe and fails the test unless it exits 0.
func ok(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	r := gpipe(t, dir, stdin, args...)
	if r.code != 0 {
		t.Fatalf("want exit 0; %v", r)
	}
	return r
}

// fails runs gpipe and checks that it exits with code, printing one line on
// stderr that starts with "gpipe: " and contains each of wants.
func fails(t *testing.T, dir string, stdin []byte, code int, wants []string, args ...string) result {
	t.Helper()
	r := gpipe(t, dir, stdin, args...)
	if r.code != code {
		t.Errorf("want exit %d; %v", code, r)
	}
	checkOneLineError(t, r)
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("gpipe %s: stderr %q lacks %q", strings.Join(args, " "), r.stderr, w)
		}
	}
	return r
}

func checkNoPanic(t *testing.T, r result) {
	t.Helper()
	for _, bad := range []string{"panic", "goroutine ", "runtime error"} {
		if strings.Contains(r.stderr, bad) || strings.Contains(r.stdout, bad) {
			t.Fatalf("gpipe %s: output shows %q:\nstderr: %s", strings.Join(r.args, " "), bad, r.stderr)
		}
	}
}

func checkOneLineError(t *testing.T, r result) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "gpipe: ") || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("gpipe %s: want one line \"gpipe: ...\" on stderr, got %q", strings.Join(r.args, " "), r.stderr)
	}
}

// ---- inputs ----

// edge is one input row; a nil key or weight is a null.
type edge struct {
	src, dst any // int64, string or nil
	w        any // float64, int64 or nil; ignored without a weight column
}

// table describes an input edge table.
type table struct {
	keyType    arrow.DataType // type of src and dst
	weightType arrow.DataType // nil: no weight column
	srcCol     string         // default "src"
	dstCol     string         // default "dst"
	weightCol  string         // default "weight"
	extra      bool           // add an unrelated string column first
	edges      []edge
}

func (tb table) names() (string, string, string) {
	s, d, w := tb.srcCol, tb.dstCol, tb.weightCol
	if s == "" {
		s = "src"
	}
	if d == "" {
		d = "dst"
	}
	if w == "" {
		w = "weight"
	}
	return s, d, w
}

// record builds the table as one Arrow record.
func (tb table) record(t *testing.T) arrow.RecordBatch {
	t.Helper()
	mem := memory.DefaultAllocator
	s, d, w := tb.names()
	var fields []arrow.Field
	var cols []arrow.Array
	if tb.extra {
		b := array.NewStringBuilder(mem)
		for i := range tb.edges {
			b.Append(fmt.Sprintf("note %d", i))
		}
		fields = append(fields, arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true})
		cols = append(cols, b.NewArray())
	}
	var srcs, dsts, ws []any
	for _, e := range tb.edges {
		srcs, dsts, ws = append(srcs, e.src), append(dsts, e.dst), append(ws, e.w)
	}
	fields = append(fields, arrow.Field{Name: s, Type: tb.keyType, Nullable: true}, arrow.Field{Name: d, Type: tb.keyType, Nullable: true})
	cols = append(cols, buildArray(t, tb.keyType, srcs), buildArray(t, tb.keyType, dsts))
	if tb.weightType != nil {
		fields = append(fields, arrow.Field{Name: w, Type: tb.weightType, Nullable: true})
		cols = append(cols, buildArray(t, tb.weightType, ws))
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(len(tb.edges)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// buildArray builds an array of type dt from vals (nil: null).
func buildArray(t *testing.T, dt arrow.DataType, vals []any) arrow.Array {
	t.Helper()
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.Int32Builder:
			b.Append(int32(asInt(t, v)))
		case *array.Int64Builder:
			b.Append(asInt(t, v))
		case *array.Uint32Builder:
			b.Append(uint32(asInt(t, v)))
		case *array.Uint64Builder:
			if u, isU := v.(uint64); isU {
				b.Append(u)
			} else {
				b.Append(uint64(asInt(t, v)))
			}
		case *array.Float32Builder:
			b.Append(float32(asFloat(t, v)))
		case *array.Float64Builder:
			b.Append(asFloat(t, v))
		case *array.StringBuilder:
			b.Append(fmt.Sprint(v))
		case *array.LargeStringBuilder:
			b.Append(fmt.Sprint(v))
		case *array.BinaryDictionaryBuilder:
			if err := b.AppendString(fmt.Sprint(v)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("buildArray: no case for %T", b)
		}
	}
	return b.NewArray()
}

func asInt(t *testing.T, v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case float64:
		return int64(v)
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("key %q is not an integer", v)
		}
		return n
	}
	t.Fatalf("asInt(%T)", v)
	return 0
}

func asFloat(t *testing.T, v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case int:
		return float64(v)
	}
	t.Fatalf("asFloat(%T)", v)
	return 0
}

// writeParquet writes the table to path as Parquet, in row groups of
// rowGroup rows (0: one).
func writeParquet(t *testing.T, path string, tb table, rowGroup int64) {
	t.Helper()
	rec := tb.record(t)
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rowGroup <= 0 {
		rowGroup = max(rec.NumRows(), 1)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rowGroup))
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteBuffered(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeArrowFile writes the table as an Arrow IPC file, in batches of batch
// rows (0: one).
func writeArrowFile(t *testing.T, path string, tb table, batch int64) {
	t.Helper()
	rec := tb.record(t)
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(rec.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	writeBatches(t, rec, batch, w.Write)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// arrowStream is the table as an Arrow IPC stream, in batches of batch rows.
func arrowStream(t *testing.T, tb table, batch int64) []byte {
	t.Helper()
	rec := tb.record(t)
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	writeBatches(t, rec, batch, w.Write)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeBatches(t *testing.T, rec arrow.RecordBatch, batch int64, write func(arrow.RecordBatch) error) {
	t.Helper()
	n := rec.NumRows()
	if batch <= 0 {
		batch = max(n, 1)
	}
	for i := int64(0); i < n || i == 0; i += batch {
		s := rec.NewSlice(i, min(i+batch, n))
		err := write(s)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
}

// csvText is the table as CSV with a header; nulls are empty fields.
func csvText(tb table) string {
	s, d, w := tb.names()
	var b strings.Builder
	header := []string{s, d}
	if tb.weightType != nil {
		header = append(header, w)
	}
	if tb.extra {
		header = append([]string{"note"}, header...)
	}
	b.WriteString(strings.Join(header, ",") + "\n")
	for i, e := range tb.edges {
		fields := []string{field(e.src), field(e.dst)}
		if tb.weightType != nil {
			fields = append(fields, field(e.w))
		}
		if tb.extra {
			fields = append([]string{fmt.Sprintf("\"note, %d\"", i)}, fields...)
		}
		b.WriteString(strings.Join(fields, ",") + "\n")
	}
	return b.String()
}

func field(v any) string {
	if v == nil {
		return ""
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// edgeListText is the table as a whitespace edge list with comments.
func edgeListText(tb table) string {
	var b strings.Builder
	b.WriteString("# an edge list\n% written by the test\n")
	for i, e := range tb.edges {
		sep := " "
		if i%2 == 1 {
			sep = "\t"
		}
		b.WriteString(field(e.src) + sep + field(e.dst))
		if tb.weightType != nil {
			b.WriteString(sep + field(e.w))
		}
		b.WriteString("\n")
		if i == 2 {
			b.WriteString("# a comment in the middle\n")
		}
	}
	return b.String()
}

// writeInput writes tb to dir/name in the format its extension names and
// returns the bytes to give on stdin for "-" (nil otherwise).
func writeInput(t *testing.T, dir, name string, tb table) []byte {
	t.Helper()
	path := filepath.Join(dir, name)
	switch ext := filepath.Ext(name); {
	case name == "-":
		return arrowStream(t, tb, 3)
	case ext == ".parquet" || ext == ".pq":
		writeParquet(t, path, tb, 4)
	case ext == ".arrow" || ext == ".feather" || ext == ".ipc":
		writeArrowFile(t, path, tb, 5)
	case ext == ".arrows":
		writeFile(t, path, arrowStream(t, tb, 3))
	case ext == ".csv":
		writeFile(t, path, []byte(csvText(tb)))
	case ext == ".tsv":
		writeFile(t, path, []byte(strings.ReplaceAll(csvText(tb), ",", "\t")))
	case ext == ".txt" || ext == ".el" || ext == ".wel":
		writeFile(t, path, []byte(edgeListText(tb)))
	default:
		t.Fatalf("writeInput: no writer for %q", name)
	}
	return nil
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---- outputs ----

// output is a result table read back: its schema (nil for CSV) and its
// columns, with keys as text, int32 columns as int64, float columns as
// float64 and nulls as nil.
type output struct {
	schema *arrow.Schema
	names  []string
	cols   map[string][]any
}

func (o *output) rows() int { return len(o.cols["vertex"]) }

// vertices is the vertex column as text.
func (o *output) vertices(t *testing.T) []string {
	t.Helper()
	var vs []string
	for i, v := range o.cols["vertex"] {
		if v == nil {
			t.Fatalf("vertex %d is null", i)
		}
		vs = append(vs, v.(string))
	}
	return vs
}

// byVertex maps each vertex to its value in column name.
func (o *output) byVertex(t *testing.T, name string) map[string]any {
	t.Helper()
	col, ok := o.cols[name]
	if !ok {
		t.Fatalf("the output has no column %q (columns %v)", name, o.names)
	}
	m := map[string]any{}
	for i, v := range o.vertices(t) {
		if _, dup := m[v]; dup {
			t.Fatalf("vertex %s appears twice", v)
		}
		m[v] = col[i]
	}
	return m
}

// readOutput reads the result at path in the format its extension names.
func readOutput(t *testing.T, path string) *output {
	t.Helper()
	switch filepath.Ext(path) {
	case ".parquet":
		return readParquetOutput(t, path)
	case ".arrow", ".feather":
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := ipc.NewFileReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer r.Close()
		var recs []arrow.RecordBatch
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
		return fromRecords(t, r.Schema(), recs)
	case ".arrows":
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return readStream(t, b)
	case ".csv":
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return readCSVOutput(t, b)
	}
	t.Fatalf("readOutput: no reader for %s", path)
	return nil
}

func readParquetOutput(t *testing.T, path string) *output {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 1<<20)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	return fromRecords(t, tbl.Schema(), recs)
}

// readStream reads an Arrow IPC stream.
func readStream(t *testing.T, b []byte) *output {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not an Arrow IPC stream: %v", err)
	}
	defer r.Release()
	var recs []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return fromRecords(t, r.Schema(), recs)
}

func fromRecords(t *testing.T, schema *arrow.Schema, recs []arrow.RecordBatch) *output {
	t.Helper()
	o := &output{schema: schema, cols: map[string][]any{}}
	for _, f := range schema.Fields() {
		o.names = append(o.names, f.Name)
		o.cols[f.Name] = []any{}
	}
	for _, rec := range recs {
		for i, f := range schema.Fields() {
			a := rec.Column(i)
			for j := 0; j < a.Len(); j++ {
				v := value(t, a, j)
				if _, isText := v.(string); v != nil && !isText && keyColumns[f.Name] {
					v = fmt.Sprint(v)
				}
				o.cols[f.Name] = append(o.cols[f.Name], v)
			}
		}
		rec.Release()
	}
	return o
}

// value is a[j], normalized as output describes.
func value(t *testing.T, a arrow.Array, j int) any {
	if a.IsNull(j) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int32:
		return int64(a.Value(j))
	case *array.Int64:
		return a.Value(j)
	case *array.Uint32:
		return uint64(a.Value(j))
	case *array.Uint64:
		return a.Value(j)
	case *array.Float64:
		return a.Value(j)
	case *array.String:
		return a.Value(j)
	case *array.LargeString:
		return a.Value(j)
	case *array.Dictionary:
		return value(t, a.Dictionary(), a.GetValueIndex(j))
	}
	t.Fatalf("value: no case for %T", a)
	return nil
}

// keyColumns are the columns holding keys; the others hold numbers.
var keyColumns = map[string]bool{"vertex": true, "parent": true, "component": true}

// readCSVOutput parses a CSV result: keys stay text, depth becomes int64,
// other columns float64 (inf, -inf), empty fields nil.
func readCSVOutput(t *testing.T, b []byte) *output {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV output does not parse: %v\n%s", err, b)
	}
	if len(recs) == 0 {
		t.Fatal("the CSV output is empty")
	}
	o := &output{names: recs[0], cols: map[string][]any{}}
	for _, n := range o.names {
		o.cols[n] = []any{}
	}
	for _, rec := range recs[1:] {
		for i, n := range o.names {
			s := rec[i]
			var v any
			switch {
			case s == "":
			case keyColumns[n]:
				v = s
			case n == "depth":
				d, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatalf("depth %q: %v", s, err)
				}
				v = d
			default:
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatalf("column %s: %q: %v", n, s, err)
				}
				v = f
			}
			o.cols[n] = append(o.cols[n], v)
		}
	}
	return o
}

// checkSchema checks the result's columns and, where the format keeps them,
// their types: the key columns have keyType.
func checkSchema(t *testing.T, o *output, op string, keyType arrow.DataType) {
	t.Helper()
	want := map[string][]string{
		"bfs": {"vertex", "depth", "parent"}, "sssp": {"vertex", "distance", "parent"},
		"pagerank": {"vertex", "rank"}, "cc": {"vertex", "component"}, "sswp": {"vertex", "width"},
	}[op]
	if strings.Join(o.names, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: columns %v, want %v", op, o.names, want)
	}
	if o.schema == nil || keyType == nil {
		return
	}
	for _, f := range o.schema.Fields() {
		var wt arrow.DataType
		switch {
		case keyColumns[f.Name]:
			wt = keyType
		case f.Name == "depth":
			wt = arrow.PrimitiveTypes.Int32
		default:
			wt = arrow.PrimitiveTypes.Float64
		}
		if !arrow.TypeEqual(f.Type, wt) {
			t.Errorf("%s: column %s has type %v, want %v", op, f.Name, f.Type, wt)
		}
	}
}

// numLess compares decimal integers of any size and sign.
func numLess(a, b string) bool {
	an, bn := strings.HasPrefix(a, "-"), strings.HasPrefix(b, "-")
	if an != bn {
		return an
	}
	a, b = strings.TrimPrefix(a, "-"), strings.TrimPrefix(b, "-")
	l := len(a) < len(b) || len(a) == len(b) && a < b
	if an {
		return !l && a != b
	}
	return l
}

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b))
}

// --gpus is refused where no GPU may run the job, and below 0.
func TestGPUsFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tb := table{keyType: arrow.PrimitiveTypes.Int64, weightType: arrow.PrimitiveTypes.Float64, edges: chain(5)}
	writeInput(t, dir, "e.parquet", tb)
	fails(t, dir, nil, 2, []string{"--gpus 2 with --backend cpu", "leave --gpus out"},
		"run", "--input", "e.parquet", "--op", "cc", "--backend", "cpu", "--gpus", "2", "--output", "o.csv")
	fails(t, dir, nil, 2, []string{"--gpus -1 must be at least 1"},
		"bench", "--input", "e.parquet", "--op", "cc", "--gpus", "-1")
	// Without a GPU, auto runs on the CPU whatever --gpus says.
	r := ok(t, dir, nil, "run", "--input", "e.parquet", "--op", "cc", "--gpus", "0", "--output", "o.csv", "--json")
	rep := jobReport(t, r)
	if gpus, ok := rep["gpus"]; !ok || rep["backend"] == "cpu" && gpus != 0.0 {
		t.Errorf("--json says gpus %v on backend %v", gpus, rep["backend"])
	}
}
