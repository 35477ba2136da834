package gpipe_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators/cost"
)

// edge is one row of a test table: keys as text, a weight.
type edge struct {
	src, dst string
	w        float64
}

// testEdges is a directed graph of 40 vertices: a chain with shortcuts and
// a second component, weights 1 to 4.
func testEdges() []edge {
	var es []edge
	for i := range 30 {
		es = append(es, edge{fmt.Sprint(i), fmt.Sprint(i + 1), float64(1 + i%4)})
		if i%3 == 0 {
			es = append(es, edge{fmt.Sprint(i), fmt.Sprint(i + 4), float64(2 + i%3)})
		}
	}
	for i := 32; i < 40; i++ {
		es = append(es, edge{fmt.Sprint(i), fmt.Sprint(32 + (i+1)%8), 1})
	}
	return es
}

// recordsOf is es as records of at most per rows, keys of type key.
func recordsOf(t *testing.T, es []edge, key arrow.DataType, per int) []arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: key}, {Name: "b", Type: key}, {Name: "w", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(es); lo += per {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for _, e := range es[lo:min(lo+per, len(es))] {
			appendKey(t, b.Field(0), e.src)
			appendKey(t, b.Field(1), e.dst)
			b.Field(2).(*array.Float64Builder).Append(e.w)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return recs
}

func appendKey(t *testing.T, b array.Builder, key string) {
	var n int64
	fmt.Sscan(key, &n)
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(n))
	case *array.Int64Builder:
		b.Append(n)
	case *array.Uint32Builder:
		b.Append(uint32(n))
	case *array.Uint64Builder:
		b.Append(uint64(n))
	case *array.StringBuilder:
		b.Append(key)
	case *array.LargeStringBuilder:
		b.Append(key)
	case *array.BinaryDictionaryBuilder:
		if err := b.AppendString(key); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no key builder for %T", b)
	}
}

// writeCSV writes es as a CSV file a, b, w, the reference input.
func writeCSV(t *testing.T, es []edge) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("a,b,w\n")
	for _, e := range es {
		fmt.Fprintf(&sb, "%s,%s,%v\n", e.src, e.dst, e.w)
	}
	path := filepath.Join(t.TempDir(), "edges.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func fromRecords(t *testing.T, recs []arrow.RecordBatch, opts gpipe.LoadOptions) (*gpipe.Graph, error) {
	t.Helper()
	rr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	return gpipe.FromRecords(context.Background(), rr, opts)
}

// table is a result as text: vertex key -> its other columns but parents,
// so that results with keys of different types compare.
func table(t *testing.T, res *gpipe.Result) map[string]string {
	t.Helper()
	rec := res.Record()
	defer rec.Release()
	out := map[string]string{}
	for i := 0; i < int(rec.NumRows()); i++ {
		var vals []string
		for c := 1; c < int(rec.NumCols()); c++ {
			if rec.Schema().Field(c).Name == "parent" {
				continue // any valid tree; the operators' tests check them
			}
			col := rec.Column(c)
			v := col.ValueStr(i)
			if f, ok := col.(*array.Float64); ok && col.IsValid(i) {
				v = fmt.Sprintf("%.9f", f.Value(i))
			}
			vals = append(vals, v)
		}
		out[rec.Column(0).ValueStr(i)] = strings.Join(vals, " ")
	}
	return out
}

var allOps = []struct {
	op string
	p  gpipe.Params
}{
	{gpipe.BFS, gpipe.Params{Source: "0"}},
	{gpipe.SSSP, gpipe.Params{Source: "0"}},
	{gpipe.SSWP, gpipe.Params{Source: "3"}},
	{gpipe.PageRank, gpipe.Params{}},
	{gpipe.CC, gpipe.Params{}},
}

// TestFromRecordsKeyTypes runs every operator on the same edges held as
// records of every key type, over several records, and compares with the
// same table read from a CSV file.
func TestFromRecordsKeyTypes(t *testing.T) {
	ctx := context.Background()
	es := testEdges()
	opts := gpipe.LoadOptions{Src: "a", Dst: "b", Weight: "w", Backend: "cpu"}
	ref, err := gpipe.Load(ctx, writeCSV(t, es), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Release()
	keys := []arrow.DataType{
		arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String},
	}
	for _, key := range keys {
		recs := recordsOf(t, es, key, 7)
		g, err := fromRecords(t, recs, opts)
		release(recs) // the graph holds nothing of the records
		if err != nil {
			t.Fatalf("%v: %v", key, err)
		}
		if g.NumVertices() != ref.NumVertices() || g.NumEdges() != ref.NumEdges() {
			t.Errorf("%v: %d vertices, %d edges; the CSV's %d, %d", key, g.NumVertices(), g.NumEdges(), ref.NumVertices(), ref.NumEdges())
		}
		for _, o := range allOps {
			want, err := ref.Run(ctx, o.op, o.p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.Run(ctx, o.op, o.p)
			if err != nil {
				t.Fatalf("%v %s: %v", key, o.op, err)
			}
			if a, b := table(t, got), table(t, want); fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("%v %s: records give\n%v\nthe CSV gives\n%v", key, o.op, a, b)
			}
		}
		g.Release()
	}
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// withNull is es as int64 records with src null in the row at index row.
func withNull(t *testing.T, es []edge, row int) []arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, e := range es {
		if i == row {
			b.Field(0).AppendNull()
		} else {
			appendKey(t, b.Field(0), e.src)
		}
		appendKey(t, b.Field(1), e.dst)
	}
	return []arrow.RecordBatch{b.NewRecordBatch()}
}

// TestFromRecordsNulls checks that a null key is an input error naming its
// row, and is dropped and counted under SkipInvalid.
func TestFromRecordsNulls(t *testing.T) {
	es := testEdges()
	recs := withNull(t, es, 5)
	defer release(recs)
	_, err := fromRecords(t, recs, gpipe.LoadOptions{Backend: "cpu", Name: "batch"})
	var e *gpipe.Error
	if !errors.Is(err, gpipe.ErrInput) || !errors.As(err, &e) || e.Row != 5 || e.File != "batch" || e.Column != "src" {
		t.Fatalf("a null key: %v; want an input error in batch, column src, row 5", err)
	}
	if !strings.Contains(e.Fix, "LoadOptions.SkipInvalid") {
		t.Errorf("the fix names the command line's flag, not the library's option: %q", e.Fix)
	}
	g, err := fromRecords(t, recs, gpipe.LoadOptions{Backend: "cpu", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	if s := g.Stats(); s.RowsSkipped != 1 || s.RowsRead != int64(len(es)) || s.InputEdges != int64(len(es)-1) {
		t.Errorf("SkipInvalid: %+v; want 1 of %d rows skipped", s, len(es))
	}
}

// TestErrorsBranch checks the errors a program branches on: kinds by
// errors.Is and errors.As, causes kept, cancellation as the context's.
func TestErrorsBranch(t *testing.T) {
	ctx := context.Background()
	path := writeCSV(t, testEdges())
	opts := gpipe.LoadOptions{Src: "a", Dst: "b", Backend: "cpu"}
	g, err := gpipe.Load(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	_, errRun := g.Run(ctx, gpipe.BFS, gpipe.Params{Source: "999"})
	_, errParam := g.Run(ctx, gpipe.BFS, gpipe.Params{Source: "0", Tolerance: 1e-3})
	_, errOp := g.Run(ctx, "bfs2", gpipe.Params{})
	_, errMissing := gpipe.Load(ctx, filepath.Join(t.TempDir(), "none.parquet"), opts)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, errCanceled := gpipe.Load(canceled, path, opts)
	_, errCanceledRun := g.Run(canceled, gpipe.PageRank, gpipe.Params{})
	cases := []struct {
		name string
		err  error
		is   []error
		kind gpipe.ErrorKind
	}{
		{"unknown source", errRun, []error{gpipe.ErrNotFound}, gpipe.KindNotFound},
		{"parameter of another operator", errParam, []error{gpipe.ErrUsage}, gpipe.KindUsage},
		{"unknown operator", errOp, []error{gpipe.ErrUsage}, gpipe.KindUsage},
		{"missing file", errMissing, []error{gpipe.ErrInput, fs.ErrNotExist}, gpipe.KindInput},
		{"canceled load", errCanceled, []error{context.Canceled}, gpipe.KindInternal},
		{"canceled run", errCanceledRun, []error{context.Canceled}, gpipe.KindInternal},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, target := range c.is {
			if !errors.Is(c.err, target) {
				t.Errorf("%s: %v is not %v", c.name, c.err, target)
			}
		}
		for _, other := range []error{gpipe.ErrUsage, gpipe.ErrInput, gpipe.ErrNotFound, gpipe.ErrBackend, gpipe.ErrLimit} {
			if errors.Is(c.err, other) && !contains(c.is, other) {
				t.Errorf("%s: %v is also %v", c.name, c.err, other)
			}
		}
		if k := gpipe.KindOf(c.err); k != c.kind {
			t.Errorf("%s: kind %v, want %v", c.name, k, c.kind)
		}
	}
	if !strings.Contains(errParam.Error(), "Params.Tolerance") {
		t.Errorf("a parameter is named as the command line writes it: %v", errParam)
	}
}

func contains(errs []error, e error) bool {
	for _, x := range errs {
		if x == e {
			return true
		}
	}
	return false
}

// TestNegativeWeights checks that sssp refuses a graph with a negative
// weight, which sswp and bfs run on.
func TestNegativeWeights(t *testing.T) {
	es := testEdges()
	es[3].w = -2
	g, err := gpipe.Load(context.Background(), writeCSV(t, es), gpipe.LoadOptions{Src: "a", Dst: "b", Weight: "w", Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	if _, err := g.Run(context.Background(), gpipe.SSSP, gpipe.Params{Source: "0"}); !errors.Is(err, gpipe.ErrInput) || !strings.Contains(err.Error(), "-2") {
		t.Errorf("sssp on a negative weight: %v", err)
	}
	for _, op := range []string{gpipe.SSWP, gpipe.BFS} {
		if _, err := g.Run(context.Background(), op, gpipe.Params{Source: "0"}); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
}

// TestResultRecordsAndWrite checks that RecordReader's batches make up
// Record, and that WriteRecords over them writes what Result.Write does.
func TestResultRecordsAndWrite(t *testing.T) {
	ctx := context.Background()
	g, err := gpipe.Load(ctx, writeCSV(t, testEdges()), gpipe.LoadOptions{Src: "a", Dst: "b", Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	res, err := g.Run(ctx, gpipe.BFS, gpipe.Params{Source: "2"})
	if err != nil {
		t.Fatal(err)
	}
	whole := res.Record()
	defer whole.Release()
	rr := res.RecordReader(9)
	var rows int64
	for rr.Next() {
		rec := rr.RecordBatch()
		if !array.RecordEqual(rec, whole.NewSlice(rows, rows+rec.NumRows())) {
			t.Errorf("batch at row %d differs from the record", rows)
		}
		rows += rec.NumRows()
	}
	rr.Release()
	if rows != int64(res.NumRows()) || rows != whole.NumRows() {
		t.Errorf("the reader gave %d rows of %d", rows, res.NumRows())
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	if err := res.Write(ctx, a, gpipe.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rr = res.RecordReader(0)
	defer rr.Release()
	if err := gpipe.WriteRecords(ctx, b, rr, gpipe.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ra, _ := os.ReadFile(a)
	rb, _ := os.ReadFile(b)
	if len(ra) == 0 || string(ra) != string(rb) {
		t.Errorf("WriteRecords wrote %d bytes, Result.Write %d, not the same", len(rb), len(ra))
	}
}

// TestRunJob checks a whole job through the library's face, and that an
// unweighted job reads no weights.
func TestRunJob(t *testing.T) {
	ctx := context.Background()
	in := writeCSV(t, testEdges())
	out := filepath.Join(t.TempDir(), "d.parquet")
	load := gpipe.LoadOptions{Src: "a", Dst: "b", Backend: "cpu"}
	rep, err := gpipe.RunJob(ctx, gpipe.Job{Input: in, Output: out, Op: gpipe.SSSP, Params: gpipe.Params{Source: "0"},
		Load: gpipe.LoadOptions{Src: "a", Dst: "b", Weight: "w", Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Release()
	hops, err := gpipe.RunJob(ctx, gpipe.Job{Input: in, Op: gpipe.SSSP, Params: gpipe.Params{Source: "0"},
		Load: gpipe.LoadOptions{Src: "a", Dst: "b", Unweighted: true, Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer hops.Release()
	g, err := gpipe.Load(ctx, out, gpipe.LoadOptions{Src: "vertex", Dst: "parent", Unweighted: true, Backend: "cpu", SkipInvalid: true})
	if err != nil {
		t.Fatalf("the job's output does not read back: %v", err)
	}
	g.Release()
	d, h := table(t, rep.Result), table(t, hops.Result)
	if rep.Vertices != 40 || rep.Backend != "cpu" || !strings.HasPrefix(d["4"], "2.0") || !strings.HasPrefix(h["4"], "1.0") {
		t.Errorf("weighted job: %d vertices on %s, vertex 4 at %s (want 2); unweighted at %s (want 1 hop)", rep.Vertices, rep.Backend, d["4"], h["4"])
	}
	if _, err := gpipe.RunJob(ctx, gpipe.Job{Input: in, Output: in, Op: gpipe.CC, Load: load}); !errors.Is(err, gpipe.ErrUsage) {
		t.Errorf("an output that is the input: %v", err)
	}
}

// TestConcurrentRuns runs every operator from several goroutines at once
// on one graph and compares with runs one at a time.
func TestConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	g, err := gpipe.Load(ctx, writeCSV(t, testEdges()), gpipe.LoadOptions{Src: "a", Dst: "b", Weight: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	want := map[string]map[string]string{}
	for _, o := range allOps {
		res, err := g.Run(ctx, o.op, o.p)
		if err != nil {
			t.Fatal(err)
		}
		want[o.op] = table(t, res)
	}
	var wg sync.WaitGroup
	for i := range 4 * len(allOps) {
		o := allOps[i%len(allOps)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.Run(ctx, o.op, o.p)
			if err != nil {
				t.Error(err)
				return
			}
			if got := table(t, res); fmt.Sprint(got) != fmt.Sprint(want[o.op]) {
				t.Errorf("%s at once with others differs", o.op)
			}
		}()
	}
	wg.Wait()
}

// TestAutoMatchesCPU runs every operator on the automatic backend, with
// cost models that send it to the GPU (the graph built there from the
// records) and to the CPU, and on the CPU, on records of a Kronecker-like
// graph: the results are the same whichever side auto picks.
func TestAutoMatchesCPU(t *testing.T) {
	for side, skew := range map[string][2]float64{"gpu": {1e6, 1e-6}, "cpu": {1e-6, 1e6}} {
		t.Run(side, func(t *testing.T) { autoMatchesCPU(t, side, skew) })
	}
}

func autoMatchesCPU(t *testing.T, side string, skew [2]float64) {
	if _, err := pipeline.SharedGPU(); err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("GPIPE_REQUIRE_GPU=1 and no usable GPU: %v", err)
		}
		t.Skipf("no usable GPU: %v", err)
	}
	ctx := context.Background()
	es := skewedEdges(1<<14, 8)
	recs := recordsOf(t, es, arrow.PrimitiveTypes.Int64, 1<<14)
	defer release(recs)
	base := gpipe.LoadOptions{Src: "a", Dst: "b", Weight: "w", Undirected: true}
	cpuOpts := base
	cpuOpts.Backend = "cpu"
	autoOpts := gpipe.WithCostModel(base, cost.Skewed(runtime.GOMAXPROCS(0), "", 0, skew[0], skew[1]))
	cpu, err := fromRecords(t, recs, cpuOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Release()
	auto, err := fromRecords(t, recs, autoOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer auto.Release()
	if s := auto.Stats(); s.BuildDevice != side {
		t.Errorf("auto built the graph on %s (%s), want %s", s.BuildDevice, s.BuildReason, side)
	}
	for _, o := range allOps {
		want, err := cpu.Run(ctx, o.op, o.p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := auto.Run(ctx, o.op, o.p)
		if err != nil {
			t.Fatalf("%s: %v", o.op, err)
		}
		if got.Backend != side {
			t.Errorf("%s ran on %s, want %s: %s", o.op, got.Backend, side, got.BackendReason)
		}
		compareResults(t, o.op, got, want)
	}
}

// compareResults compares a result with the CPU's: every column equal but
// parents (any valid tree) and ranks (within 1e-6 in L1).
func compareResults(t *testing.T, op string, got, want *gpipe.Result) {
	t.Helper()
	g, w := got.Record(), want.Record()
	defer g.Release()
	defer w.Release()
	for c := 0; c < int(w.NumCols()); c++ {
		name := w.Schema().Field(c).Name
		switch name {
		case "parent":
			continue
		case "rank":
			gr, wr := g.Column(c).(*array.Float64).Float64Values(), w.Column(c).(*array.Float64).Float64Values()
			l1 := 0.0
			for i := range wr {
				l1 += math.Abs(gr[i] - wr[i])
			}
			if l1 > 1e-6 {
				t.Errorf("%s: ranks differ by %g in L1", op, l1)
			}
			continue
		}
		if !array.Equal(g.Column(c), w.Column(c)) {
			t.Errorf("%s: column %s differs from the CPU's", op, name)
		}
	}
}

// skewedEdges are m·n edges of n vertices with a skewed degree
// distribution (a product of uniforms), weights 1 to 8.
func skewedEdges(n, m int) []edge {
	es := make([]edge, 0, n*m)
	x := uint64(88172645463325252)
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	for i := 0; i < n*m; i++ {
		a := next() % uint64(n)
		b := (next() % uint64(n)) * (next() % uint64(n)) / uint64(n)
		es = append(es, edge{fmt.Sprint(a), fmt.Sprint(b), float64(1 + next()%8)})
	}
	return es
}
