package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/pollctx"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/sink"
)

// The library API around RunJob and Load: the report, Release, SkipInvalid,
// cancellation and the checks made before any input is read.

// writeFile writes text to name in a new temporary directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// reportCSV has 7 rows: a self loop (3→3), a parallel edge (1→2 twice), 5
// vertices of which 4 is only reached from nothing (it has an out-edge) and
// 5 only from 4.
const reportCSV = "src,dst,weight\n1,2,1\n2,3,2\n3,3,1\n1,2,0.5\n3,1,1\n4,5,2\n2,1,3\n"

func TestRunJobReport(t *testing.T) {
	in := writeFile(t, "edges.csv", reportCSV)
	out := filepath.Join(t.TempDir(), "out.arrow")
	var stages []string
	rep, err := RunJob(context.Background(), Job{
		Input: in, Output: out, Op: "bfs", Backend: "cpu",
		Params: operators.Params{Source: "1"},
		Load:   LoadOptions{Stage: func(s string) { stages = append(stages, s) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Release()
	if want := []string{"read", "build", "compute", "write"}; !slices.Equal(stages, want) {
		t.Errorf("stages %v, want %v", stages, want)
	}
	if rep.Input != in || rep.Output != out || rep.Op != "bfs" || rep.Backend != "cpu" || rep.Strategy == "" {
		t.Errorf("report names input %q output %q op %q backend %q strategy %q",
			rep.Input, rep.Output, rep.Op, rep.Backend, rep.Strategy)
	}
	type count struct {
		name      string
		got, want int64
	}
	for _, c := range []count{
		{"RowsRead", rep.RowsRead, 7},
		{"RowsSkipped", rep.RowsSkipped, 0},
		{"InputEdges", rep.InputEdges, 7},
		{"SelfLoops", rep.SelfLoops, 1},
		{"MergedEdges", rep.MergedEdges, 1},
		{"Vertices", int64(rep.Vertices), 5},
		{"Edges", rep.Edges, 5}, // 1→2, 2→3, 3→1, 4→5, 2→1
		{"Unreached", int64(rep.Unreached), 2},
		{"Iterations", int64(rep.Iterations), 3}, // levels 0, 1, 2
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	tm := rep.Timings
	for name, v := range map[string]float64{"read": tm.Read, "build": tm.Build, "compute": tm.Compute,
		"transfer": tm.Transfer, "write": tm.Write, "total": tm.Total} {
		if !(v >= 0) || math.IsInf(v, 0) {
			t.Errorf("timing %s = %v", name, v)
		}
	}
	if tm.Write == 0 || tm.Total == 0 {
		t.Errorf("write %v and total %v should have taken some time", tm.Write, tm.Total)
	}
	if sum := tm.Read + tm.Build + tm.Compute + tm.Write; tm.Total < sum {
		t.Errorf("total %v is less than the stages' sum %v", tm.Total, sum)
	}
	if rep.Result == nil || rep.Result.Graph.NumVertices() != 5 {
		t.Fatalf("report's result: %+v", rep.Result)
	}
	// The JSON names the README documents for --json.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	timings, _ := m["timings"].(map[string]any)
	for _, k := range []string{"read_s", "build_s", "compute_s", "write_s", "total_s"} {
		if _, ok := timings[k]; !ok {
			t.Errorf("JSON timings lack %q: %s", k, b)
		}
	}
	for _, k := range []string{"rows_read", "rows_skipped", "vertices", "edges", "input_edges",
		"self_loops_dropped", "parallel_edges_merged", "backend", "strategy"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}

	// Without an output: nothing is written and the result is in the report.
	rep2, err := RunJob(context.Background(), Job{Input: in, Op: "pagerank", Backend: "cpu",
		Load: LoadOptions{Undirected: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Timings.Write != 0 || rep2.Output != "" || rep2.Iterations < 1 || rep2.Edges != 8 || len(rep2.Warnings) != 0 {
		t.Errorf("undirected pagerank without output: write %v, output %q, %d iterations, %d edges, warnings %q",
			rep2.Timings.Write, rep2.Output, rep2.Iterations, rep2.Edges, rep2.Warnings)
	}
	rep2.Release()

	// A PageRank that stops early says so.
	rep3, err := RunJob(context.Background(), Job{Input: in, Op: "pagerank", Backend: "cpu",
		Params: operators.Params{MaxIterations: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if rep3.Iterations != 2 || len(rep3.Warnings) != 1 || !strings.Contains(rep3.Warnings[0], "did not converge") {
		t.Errorf("pagerank with 2 iterations: %d iterations, warnings %q", rep3.Iterations, rep3.Warnings)
	}
	rep3.Release()
}

// Release may be called twice, on a report and on a graph, and gives back
// everything the graph took from its allocator.
func TestReleaseTwice(t *testing.T) {
	in := writeFile(t, "edges.csv", reportCSV)
	rep, err := RunJob(context.Background(), Job{Input: in, Op: "cc", Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	rep.Release()
	rep.Release()
	var nilReport Report
	nilReport.Release()

	for _, op := range []string{"bfs", "pagerank", "sssp"} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		g, err := Load(context.Background(), in, LoadOptions{Alloc: mem, BuildIn: true,
			Columns: ingestColumns(op == "sssp")})
		if err != nil {
			t.Fatal(err)
		}
		res, err := g.Run(context.Background(), op, operators.Params{Source: "1"}, operators.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		if mem.CurrentAlloc() == 0 {
			t.Errorf("%s: the graph took nothing from the allocator", op)
		}
		rec := res.Record(memory.DefaultAllocator)
		if rec.NumRows() != 5 || rec.ColumnName(0) != VertexColumn {
			t.Errorf("%s: record of %d rows, first column %q", op, rec.NumRows(), rec.ColumnName(0))
		}
		rec.Release()
		g.Release()
		g.Release()
		mem.AssertSize(t, 0)
	}
}

func TestSkipInvalid(t *testing.T) {
	// Rows 1 and 3 have a null key, row 2 a negative weight, row 4 a NaN
	// weight, row 5 an infinite one; rows 0 and 6 are good.
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "dst", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 0, 2, 3, 4, 5, 6}, []bool{true, false, true, true, true, true, true})
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{2, 3, 3, 0, 5, 6, 1}, []bool{true, true, true, false, true, true, true})
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 1, -2, 1, math.NaN(), math.Inf(1), 4}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	in := filepath.Join(t.TempDir(), "edges.arrow")
	writeIPC(t, in, []arrow.RecordBatch{rec}, false)

	for _, c := range []struct {
		op      string
		skipped int64 // rows dropped with SkipInvalid
		row     int64 // the row the error names without it
	}{
		{"bfs", 2, 1},      // null keys only: weights are not read
		{"cc", 2, 1},       //
		{"sswp", 4, 1},     // and the NaN and infinite weights
		{"sssp", 5, 1},     // and the negative weight
		{"pagerank", 2, 1}, //
	} {
		rep, err := RunJob(context.Background(), Job{Input: in, Op: c.op, Backend: "cpu",
			Params: operators.Params{Source: "1"}, Load: LoadOptions{SkipInvalid: true}})
		if err != nil {
			t.Errorf("%s with SkipInvalid: %v", c.op, err)
			continue
		}
		if rep.RowsRead != 7 || rep.RowsSkipped != c.skipped || rep.InputEdges != 7-c.skipped {
			t.Errorf("%s: read %d rows, skipped %d (%v), %d input edges; want 7, %d, %d",
				c.op, rep.RowsRead, rep.RowsSkipped, rep.Skipped, rep.InputEdges, c.skipped, 7-c.skipped)
		}
		var sum int64
		for reason, n := range rep.Skipped {
			if reason == "" || n <= 0 {
				t.Errorf("%s: skipped %d rows for reason %q", c.op, n, reason)
			}
			sum += n
		}
		if sum != rep.RowsSkipped {
			t.Errorf("%s: reasons %v add up to %d, RowsSkipped is %d", c.op, rep.Skipped, sum, rep.RowsSkipped)
		}
		rep.Release()

		_, err = RunJob(context.Background(), Job{Input: in, Op: c.op, Backend: "cpu",
			Params: operators.Params{Source: "1"}})
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != usererr.Input || ue.Row != c.row || !strings.Contains(ue.Fix, "skip-invalid") {
			t.Errorf("%s without SkipInvalid: %v (%+v); want an input error at row %d suggesting --skip-invalid", c.op, err, ue, c.row)
		}
	}

	// A negative weight alone names its row.
	neg := writeFile(t, "neg.csv", "src,dst,weight\n1,2,1\n2,3,-3\n")
	_, err := RunJob(context.Background(), Job{Input: neg, Op: "sssp", Backend: "cpu", Params: operators.Params{Source: "1"}})
	var ue *usererr.Error
	if !errors.As(err, &ue) || ue.Row != 1 || ue.Column != "weight" {
		t.Errorf("negative weight: %v; want column weight, row 1", err)
	}
}

// A canceled context stops the job in any stage with an error that wraps
// context.Canceled, and leaves no output.
func TestRunJobCanceled(t *testing.T) {
	in := writeFile(t, "edges.csv", reportCSV)
	for _, stage := range []string{"", "read", "build", "compute", "write"} {
		for _, op := range []string{"bfs", "sssp", "pagerank", "cc", "sswp"} {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.parquet")
			ctx, cancel := context.WithCancel(context.Background())
			if stage == "" {
				cancel()
			}
			rep, err := RunJob(ctx, Job{Input: in, Output: out, Op: op, Backend: "cpu",
				Params: operators.Params{Source: "1"},
				Load: LoadOptions{Stage: func(s string) {
					if s == stage {
						cancel()
					}
				}}})
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s canceled at %q: %v, want an error wrapping context.Canceled", op, stage, err)
			}
			if rep != nil {
				t.Errorf("%s canceled at %q: a report", op, stage)
				rep.Release()
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("%s canceled at %q left %v", op, stage, ents)
			}
		}
	}

	// A PageRank that would run for minutes (on a path, which mixes slowly,
	// with damping almost 1) stops once its context is canceled, here at
	// its thousandth check (it would hang were it not checking).
	var path strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&path, "%d %d\n", i, i+1)
	}
	pathFile := writeFile(t, "path.el", path.String())
	_, err := RunJob(pollctx.New(1000), Job{Input: pathFile, Op: "pagerank", Backend: "cpu", Load: LoadOptions{Undirected: true},
		Params: operators.Params{Damping: 1 - 1e-9, Tolerance: 1e-300, MaxIterations: 1 << 30}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("pagerank canceled while it runs: %v, want an error wrapping context.Canceled", err)
	}

	// Load and Graph.Run too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, in, LoadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a canceled context: %v", err)
	}
	g, err := Load(context.Background(), in, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	for _, op := range []string{"bfs", "pagerank", "cc"} {
		if _, err := g.Run(ctx, op, operators.Params{Source: "1"}, operators.CPU{}); !errors.Is(err, context.Canceled) {
			t.Errorf("Run %s with a canceled context: %v", op, err)
		}
	}
}

// countingAllocator counts the bytes allocated through it.
type countingAllocator struct {
	memory.Allocator
	bytes atomic.Int64
}

func (a *countingAllocator) Allocate(n int) []byte {
	a.bytes.Add(int64(n))
	return a.Allocator.Allocate(n)
}

func (a *countingAllocator) Reallocate(n int, b []byte) []byte {
	a.bytes.Add(int64(n - len(b)))
	return a.Allocator.Reallocate(n, b)
}

// The result is written a batch at a time, each batch's columns built when
// it is written: a canceled write stops between batches having built few of
// them, rather than after building the whole table first (for a billion
// vertices, seconds of work and as much memory as the result).
func TestWriteResultCanceled(t *testing.T) {
	const n = 1 << 20
	tab := &edges.Table{Name: "chain", Columns: edges.Columns{}.WithDefaults(), KeyType: edges.KeyInt64,
		KeyArrowType: arrow.PrimitiveTypes.Int64, Skipped: edges.Skips{}}
	src, dst := make([]int64, n-1), make([]int64, n-1)
	for i := range src {
		src[i], dst[i] = int64(3*i), int64(3*i+3)
	}
	tab.Chunks = []edges.Chunk{{Src: edges.Keys{Int64: src}, Dst: edges.Keys{Int64: dst}}}
	g, err := Build(context.Background(), tab, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	depth, parent := make([]int32, n), make([]uint32, n)
	for i := range depth {
		depth[i], parent[i] = int32(i), uint32(i-1)
	}
	depth[0], parent[0] = -1, convert.NoVertex
	res := &Result{Graph: g, Result: &operators.Result{Op: "bfs", Columns: []operators.Column{
		{Name: "depth", Type: operators.Int32Column, Int32: depth},
		{Name: "parent", Type: operators.VertexColumn, Vertex: parent},
	}}}
	whole := &countingAllocator{Allocator: memory.DefaultAllocator}
	res.Record(whole).Release()

	for _, format := range []string{sink.FormatArrowStream, sink.FormatCSV} {
		out := filepath.Join(t.TempDir(), "out")
		mem := &countingAllocator{Allocator: memory.DefaultAllocator}
		// Checks before the write, before its first batch and before its
		// second: canceled there.
		err := WriteResult(pollctx.New(3), res, out, sink.Options{Format: format}, mem)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: canceled write: %v", format, err)
		}
		if mem.bytes.Load() > whole.bytes.Load()/4 {
			t.Errorf("%s: canceled after its first batch, the write had built %d bytes of columns, the whole table's %d", format, mem.bytes.Load(), whole.bytes.Load())
		}
		if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
			t.Errorf("%s: canceled write left %v", format, ents)
		}

		// Uncanceled, it writes what Record holds.
		if err := WriteResult(context.Background(), res, out, sink.Options{Format: format}, memory.DefaultAllocator); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(out); err != nil || fi.Size() < n {
			t.Errorf("%s: wrote %v, %v", format, fi, err)
		}
	}
}

// Parameters, the operator and the output format are checked before the
// input is read: a job on an input that does not exist fails on them.
func TestRunJobChecksFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.parquet")
	for _, c := range []struct {
		job  Job
		kind usererr.Kind
		text string
	}{
		{Job{Input: missing, Op: "dfs"}, usererr.Usage, `unknown operator "dfs"`},
		{Job{Input: missing, Op: "cc", Output: "out.json"}, usererr.Usage, `".json"`},
		{Job{Input: missing, Op: "cc", Output: "out.parquet", Sink: sink.Options{Format: "parquett"}}, usererr.Usage, `unknown output format "parquett"`},
		{Job{Input: missing, Op: "cc", Output: "out.parquet", Sink: sink.Options{Compression: "lz4"}}, usererr.Usage, "Parquet compression"},
		{Job{Input: missing, Op: "cc", Output: "-", Sink: sink.Options{BatchRows: -2}}, usererr.Usage, "batch rows"},
		{Job{Input: missing, Op: "pagerank", Params: operators.Params{Damping: 1.5}}, usererr.Usage, "damping"},
		{Job{Input: missing, Op: "pagerank", Backend: "tpu"}, usererr.Usage, `unknown backend "tpu"`},
		{Job{Input: missing, Op: "sssp", Params: operators.Params{Delta: -1}}, usererr.Usage, "delta"},
		{Job{Input: missing, Op: "bfs"}, usererr.Usage, "operator bfs needs a source vertex"},
		{Job{Input: missing, Op: "sswp", Params: operators.Params{Source: "1"}, Output: "x.csv", Sink: sink.Options{Compression: "zstd"}},
			usererr.Usage, "CSV output cannot be compressed"},
		{Job{Input: missing, Op: "cc"}, usererr.Input, "missing.parquet"},
	} {
		_, err := RunJob(context.Background(), c.job)
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != c.kind || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%+v: %v; want a %v error mentioning %s", c.job, err, c.kind, c.text)
		}
	}

	in := writeFile(t, "edges.csv", reportCSV)
	for _, c := range []struct {
		source string
		kind   usererr.Kind
	}{{"", usererr.Usage}, {"99", usererr.NotFound}, {"x", usererr.Usage}} {
		_, err := RunJob(context.Background(), Job{Input: in, Op: "bfs", Backend: "cpu", Params: operators.Params{Source: c.source}})
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != c.kind {
			t.Errorf("source %q: %v; want a %v error", c.source, err, c.kind)
		}
	}
}

func ingestColumns(weights bool) edges.Columns { return edges.Columns{ReadWeight: weights} }

// A job whose input and graph live in a caller's allocator gives all of it
// back on Release, for every input format and key type.
func TestRunJobAllocatorReleased(t *testing.T) {
	for _, in := range rtInputs(t, t.TempDir(), rtEdges) {
		for _, op := range rtOps {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			rep, err := RunJob(context.Background(), Job{Input: in.path, Op: op, Backend: "cpu",
				Params: operators.Params{Source: in.ks.keys[0]}, Load: LoadOptions{Alloc: mem, Undirected: op == "cc"}})
			if err != nil {
				t.Fatalf("%s %s: %v", in.name, op, err)
			}
			if mem.CurrentAlloc() == 0 {
				t.Errorf("%s %s: the graph took nothing from the allocator", in.name, op)
			}
			rep.Release()
			if n := mem.CurrentAlloc(); n != 0 {
				t.Errorf("%s %s: %d bytes not given back", in.name, op, n)
			}
		}
	}
}

// A bad row in a later row group or batch is named by its row number over
// the whole input, counted from 0.
func TestErrorRowAcrossChunks(t *testing.T) {
	edges := slices.Clone(rtEdges)
	edges[12].w = -3 // in the second row group or batch
	for _, in := range rtInputs(t, t.TempDir(), edges) {
		switch filepath.Ext(in.path) {
		case ".parquet", ".arrow", ".arrows", ".feather", ".csv":
		default:
			continue // text and Matrix Market inputs number lines, not rows
		}
		_, err := RunJob(context.Background(), Job{Input: in.path, Op: "sssp", Backend: "cpu",
			Params: operators.Params{Source: in.ks.keys[0]}})
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Row != 12 || ue.Column != "weight" || ue.File != in.path {
			t.Errorf("%s: %v; want file, column weight and row 12", in.name, err)
		}
	}
}

// The note of a weight column an operator ignores shows its name cut short,
// as messages do (it showed it whole).
func TestWeightColumnNoteShort(t *testing.T) {
	op, err := operators.Lookup("bfs")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("w", 1000)
	notes := WeightColumnNotes(op.Spec(), edges.Columns{Weight: long, WeightExplicit: true}, false)
	want := `weight column "` + long[:60] + `..." ignored by bfs, which uses no edge weights (the column was not read)`
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q, want [%q]", notes, want)
	}
}
