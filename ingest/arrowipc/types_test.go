package arrowipc

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// column is a column of a record written for a test: its values in
// Arrow's JSON.
type column struct {
	name string
	typ  arrow.DataType
	json string
}

// readAllWays writes the columns as one record to an Arrow IPC file and a
// stream, and reads them with opts from the file (mapped), the stream and
// the records themselves, calling check with each table or error.
func readAllWays(t *testing.T, cols []column, opts edges.Options, check func(how string, tbl *edges.Table, err error)) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var fields []arrow.Field
	var arrs []arrow.Array
	for _, c := range cols {
		arr, _, err := array.FromJSON(mem, c.typ, strings.NewReader(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		defer arr.Release()
		fields = append(fields, arrow.Field{Name: c.name, Type: c.typ, Nullable: true})
		arrs = append(arrs, arr)
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, arrs, int64(arrs[0].Len()))
	defer rec.Release()
	recs := []arrow.RecordBatch{rec}
	path := filepath.Join(t.TempDir(), "e.arrow")
	edgetest.WriteArrowFile(t, path, schema, recs)

	tbl, err := ReadFile(context.Background(), path, opts)
	check("file", tbl, err)
	tbl, err = ReadStream(context.Background(), "-", bytes.NewReader(edgetest.ArrowStream(t, schema, recs)), opts)
	check("stream", tbl, err)
	rr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	opts.Alloc = mem
	tbl, err = ReadRecords(context.Background(), "records", rr, opts)
	check("records", tbl, err)
}

// Integer key columns of different widths or signedness are read as one
// type that holds both; where none does, the error names the rows.
func TestArrowKeysWidened(t *testing.T) {
	for _, tc := range []struct {
		src, dst   arrow.DataType
		sj, dj     string
		want       edges.KeyType
		wantSrc    []any
		wantDst    []any
		wantErrors []string
	}{
		{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, "[1, -2, 3]", "[2, 3, 4000000000]", edges.KeyInt64,
			[]any{int64(1), int64(-2), int64(3)}, []any{int64(2), int64(3), int64(4000000000)}, nil},
		{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint16, "[1, -2, 3]", "[2, 3, 65535]", edges.KeyInt32,
			[]any{int64(1), int64(-2), int64(3)}, []any{int64(2), int64(3), int64(65535)}, nil},
		{arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64, "[1, 2, 3]", "[2, 3, 18446744073709551615]", edges.KeyUint64,
			[]any{uint64(1), uint64(2), uint64(3)}, []any{uint64(2), uint64(3), uint64(18446744073709551615)}, nil},
		{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64, "[1, 2, 3]", "[2, 3, 4]", edges.KeyInt64,
			[]any{int64(1), int64(2), int64(3)}, []any{int64(2), int64(3), int64(4)}, nil},
		{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64, "[1, -2, 3]", "[2, 3, 18446744073709551615]", 0, nil, nil,
			[]string{`column "dst", row 2: source column "src" is int64 and destination column "dst" is uint64, and no integer type holds both: key 18446744073709551615 is above int64's range, and column "src" has the negative key -2 (row 1)`}},
		{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, "[1, 2, 3]", `["a", "b", "c"]`, 0, nil, nil,
			[]string{`source column "src" is int64 but destination column "dst" is string`}},
	} {
		cols := []column{{"src", tc.src, tc.sj}, {"dst", tc.dst, tc.dj}}
		readAllWays(t, cols, edges.Options{}, func(how string, tbl *edges.Table, err error) {
			if tc.wantErrors != nil {
				edgetest.UserErr(t, err, "", tc.wantErrors...)
				return
			}
			if err != nil {
				t.Fatalf("%s, %s from %s: %v", tc.src, tc.dst, how, err)
			}
			defer tbl.Release()
			if tbl.KeyType != tc.want || !arrow.TypeEqual(tbl.KeyArrowType, tc.want.ArrowType()) {
				t.Errorf("%s, %s from %s: keys %v (%v), want %v", tc.src, tc.dst, how, tbl.KeyType, tbl.KeyArrowType, tc.want)
			}
			var want []edgetest.Edge
			for i := range tc.wantSrc {
				want = append(want, edgetest.Edge{Row: int64(i), Src: tc.wantSrc[i], Dst: tc.wantDst[i]})
			}
			edgetest.Same(t, edgetest.Edges(t, tbl), want)
		})
	}
}

// Decimal weights of every width are read as float64, each the nearest
// double to its value (0.3, not 0.30000000000000004); weights a float64
// rounds are counted in the table's note, which names the first.
func TestArrowDecimalWeights(t *testing.T) {
	keys := []column{{"src", arrow.PrimitiveTypes.Int64, "[0, 1, 2, 3]"}, {"dst", arrow.PrimitiveTypes.Int64, "[1, 2, 3, 4]"}}
	weighted := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	for _, typ := range []arrow.DataType{
		&arrow.Decimal32Type{Precision: 9, Scale: 2}, &arrow.Decimal64Type{Precision: 18, Scale: 2},
		&arrow.Decimal128Type{Precision: 38, Scale: 2}, &arrow.Decimal256Type{Precision: 76, Scale: 2},
	} {
		cols := append(keys[:2:2], column{"weight", typ, `["1.50", "0.30", "-2.25", "1234567.89"]`})
		readAllWays(t, cols, weighted, func(how string, tbl *edges.Table, err error) {
			if err != nil {
				t.Fatalf("%s from %s: %v", typ, how, err)
			}
			defer tbl.Release()
			for i, want := range []float64{1.5, 0.3, -2.25, 1234567.89} {
				if got := edgetest.Edges(t, tbl)[i].W; got != want {
					t.Errorf("%s from %s: weight %d is %v, want %v", typ, how, i, got, want)
				}
			}
			if tbl.Notes != nil {
				t.Errorf("%s from %s: notes %q", typ, how, tbl.Notes)
			}
		})
	}
	cols := append(keys[:2:2], column{"weight", &arrow.Decimal128Type{Precision: 38, Scale: 10},
		`["1.5", "1234567890123.1234567891", null, "-9999999999999999999999999999.9999999999"]`})
	readAllWays(t, cols, weighted, func(how string, tbl *edges.Table, err error) {
		edgetest.UserErr(t, err, "", `column "weight", row 2: null weight`)
	})
	skip := weighted
	skip.SkipInvalid = true
	readAllWays(t, cols, skip, func(how string, tbl *edges.Table, err error) {
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		defer tbl.Release()
		edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{
			{Row: 0, Src: int64(0), Dst: int64(1), W: 1.5},
			{Row: 1, Src: int64(1), Dst: int64(2), W: 1234567890123.1234567891},
			{Row: 3, Src: int64(3), Dst: int64(4), W: -1e28},
		})
		want := `weight column "weight" is decimal(38,10), read as float64: 2 weights have more significant digits than a float64 holds (15 to 17) and were rounded (the first, row 1: 1234567890123.1234567891 became 1.2345678901231235e+12)`
		if len(tbl.Notes) != 1 || tbl.Notes[0] != want {
			t.Errorf("%s: notes %q, want [%s]", how, tbl.Notes, want)
		}
	})
}
