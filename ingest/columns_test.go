package ingest

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/gpipe/gpipe/ingest/arrowipc"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// An edge column whose name two columns have is ambiguous: the readers took
// the first silently. Other columns may share a name.
func TestDuplicateColumns(t *testing.T) {
	weighted := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	for _, tc := range []struct {
		names []string
		opts  edges.Options
		says  string // "" for no error
	}{
		{[]string{"src", "dst", "weight", "weight"}, weighted, `column "weight": 2 columns are named "weight", so the weight column is ambiguous (columns: src, dst, weight, weight); rename one of them, or name another weight column with --weight-col`},
		{[]string{"src", "dst", "src"}, edges.Options{}, `column "src": 2 columns are named "src", so the source column is ambiguous (columns: src, dst, src); rename one of them, or name another source column with --src-col`},
		{[]string{"dst", "src", "dst", "dst"}, edges.Options{}, `column "dst": 3 columns are named "dst", so the destination column is ambiguous`},
		{[]string{"a", "b", "a"}, edges.Options{Columns: edges.Columns{Src: "a", Dst: "b"}}, `2 columns are named "a"`},
		// The weight column is not read: its name does not matter.
		{[]string{"src", "dst", "weight", "weight"}, edges.Options{}, ""},
		{[]string{"src", "dst", "x", "x"}, weighted, ""},
	} {
		check := func(format string, tbl *edges.Table, err error) {
			t.Helper()
			if tc.says == "" {
				if err != nil {
					t.Errorf("%s %v: %v", format, tc.names, err)
					return
				}
				tbl.Release()
				return
			}
			if err == nil {
				tbl.Release()
				t.Errorf("%s %v: no error", format, tc.names)
				return
			}
			edgetest.UserErr(t, err, "", tc.says)
		}
		readEveryFormat(t, tc.names, tc.opts, check)
	}
}

// A weight column named explicitly (--weight-col) must be there for an
// operator that reads no weights too: a misspelt name went unnoticed with
// bfs, pagerank and cc. The column is looked for by its name in the header
// or schema, not read.
func TestNamedWeightColumnNotRead(t *testing.T) {
	names := []string{"src", "dst", "weight"}
	for _, tc := range []struct {
		cols edges.Columns
		says string
	}{
		{edges.Columns{Weight: "wieght", WeightExplicit: true}, `no weight column "wieght" (columns: src, dst, weight); name the weight column with --weight-col`},
		{edges.Columns{Weight: "wieght", WeightExplicit: true, ReadWeight: true}, `no weight column "wieght"`},
		{edges.Columns{Weight: "weight", WeightExplicit: true}, ""},
		{edges.Columns{Weight: "wieght"}, ""}, // a default (the Flight protocol's): weight 1 where it is absent
	} {
		readEveryFormat(t, names, edges.Options{Columns: tc.cols}, func(format string, tbl *edges.Table, err error) {
			t.Helper()
			if tc.says != "" {
				edgetest.UserErr(t, err, "", tc.says)
				return
			}
			if err != nil {
				t.Fatalf("%s %+v: %v", format, tc.cols, err)
			}
			if tbl.HasWeight {
				t.Errorf("%s %+v: weights read", format, tc.cols)
			}
			tbl.Release()
		})
	}
}

// readEveryFormat writes a table of two int64 rows whose columns have the
// given names as CSV, an Arrow IPC file and stream, and Parquet, reads each
// (and starts an Appender, as Flight's DoPut does, on its schema) with opts,
// and hands what it gave to check.
func readEveryFormat(t *testing.T, names []string, opts edges.Options, check func(format string, tbl *edges.Table, err error)) {
	t.Helper()
	// CSV.
	var csvData bytes.Buffer
	for i, n := range names {
		if i > 0 {
			csvData.WriteByte(',')
		}
		csvData.WriteString(n)
	}
	csvData.WriteString("\n")
	for i := range names {
		if i > 0 {
			csvData.WriteByte(',')
		}
		csvData.WriteString("1")
	}
	csvData.WriteString("\n")
	tbl, err := csvBytes(csvData.Bytes(), opts)
	check("csv", tbl, err)

	// Arrow IPC file and stream, and Parquet, of int64 columns.
	mem := memory.NewGoAllocator()
	fields := make([]arrow.Field, len(names))
	arrs := make([]arrow.Array, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int64}
		b := array.NewInt64Builder(mem)
		b.AppendValues([]int64{1, 2}, nil)
		arrs[i] = b.NewArray()
		b.Release()
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, arrs, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "e.arrow")
	edgetest.WriteArrowFile(t, path, schema, []arrow.RecordBatch{rec})
	tbl, err = Open(context.Background(), path, nil, opts)
	check("arrow", tbl, err)
	tbl, err = arrowipc.ReadStream(context.Background(), "e.arrows", bytes.NewReader(edgetest.ArrowStream(t, schema, []arrow.RecordBatch{rec})), opts)
	check("arrows", tbl, err)
	a, err := arrowipc.NewAppender("flight", schema, opts)
	if err == nil {
		a.Release()
	}
	check("appender", &edges.Table{}, err)
	at := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	path = edgetest.WriteParquet(t, dir, "e.parquet", at, edgetest.DefaultParquetWrite)
	at.Release()
	tbl, err = Open(context.Background(), path, nil, opts)
	check("parquet", tbl, err)
	rec.Release()
	for _, a := range arrs {
		a.Release()
	}
}
