package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/gpipe/gpipe/operators"
)

// An operator that uses weights, run on a table without a weight column,
// says in the report's notes that every weight was 1 (hop counts reported
// as distances went unnoticed); Unweighted says that is meant and silences
// it; operators that use no weights have nothing to say.
func TestMissingWeightNote(t *testing.T) {
	unweighted := writeFile(t, "edges.csv", "src,dst\n1,2\n2,3\n")
	weighted := writeFile(t, "w.csv", "src,dst,weight\n1,2,0.5\n2,3,2\n")
	for _, tc := range []struct {
		in, op     string
		unweighted bool
		want       string
	}{
		{unweighted, "sssp", false, `sssp used weight 1 for every edge, as the input has no weight column "weight": its distances count edges; name the weight column with --weight-col, or pass --unweighted to say weight 1 is meant`},
		{unweighted, "sswp", false, `sswp used weight 1 for every edge, as the input has no weight column "weight": every width is 1`},
		{unweighted, "sssp", true, ""},
		{unweighted, "bfs", false, ""},
		{weighted, "sssp", false, ""},
	} {
		rep, err := RunJob(context.Background(), Job{Input: tc.in, Op: tc.op, Backend: "cpu", Unweighted: tc.unweighted,
			Params: operators.Params{Source: "1"}})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.want == "" && rep.Notes != nil:
			t.Errorf("%s on %s (unweighted %v): notes %q", tc.op, tc.in, tc.unweighted, rep.Notes)
		case tc.want != "" && (len(rep.Notes) != 1 || !strings.HasPrefix(rep.Notes[0], tc.want)):
			t.Errorf("%s on %s: notes %q, want [%s...]", tc.op, tc.in, rep.Notes, tc.want)
		}
		rep.Release()
	}
	// Unweighted on a table with weights reads none: hop counts, meant.
	rep, err := RunJob(context.Background(), Job{Input: weighted, Op: "sssp", Backend: "cpu", Unweighted: true, Params: operators.Params{Source: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Release()
	if d := rep.Result.Column("distance").Float64; !slices.Equal(d, []float64{0, 1, 2}) || rep.Notes != nil {
		t.Errorf("unweighted: distances %v, notes %q", d, rep.Notes)
	}
}

// The table's notes (decimal weights rounded) reach the report, and
// LoadOptions.Progress counts the rows as they are read.
func TestTableNotesAndProgress(t *testing.T) {
	in := writeFile(t, "edges.tsv", "src\tdst\tweight\n1\t2\t0.5\n2\t3\t2\n3\t1\t1\n")
	var rows atomic.Int64
	rep, err := RunJob(context.Background(), Job{Input: in, Op: "sssp", Backend: "cpu", Params: operators.Params{Source: "1"},
		Load: LoadOptions{Progress: &rows}})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Release()
	if rows.Load() != 3 || rep.RowsRead != 3 {
		t.Errorf("progress counted %d rows, the report %d; want 3", rows.Load(), rep.RowsRead)
	}
	if d := rep.Result.Column("distance").Float64; !slices.Equal(d, []float64{0, 0.5, 2.5}) {
		t.Errorf("distances %v", d)
	}
}

// A Parquet file's DECIMAL weights a float64 rounds are noted in the
// report.
func TestDecimalNoteInReport(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int32}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64},
		{Name: "weight", Type: &arrow.Decimal128Type{Precision: 38, Scale: 2}},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema,
		strings.NewReader(`[{"src": 1, "dst": 2, "weight": "1.50"}, {"src": 2, "dst": 3, "weight": "123456789012345678.25"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	in := filepath.Join(t.TempDir(), "d.parquet")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, f, 10, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	rep, err := RunJob(context.Background(), Job{Input: in, Op: "sssp", Backend: "cpu", Params: operators.Params{Source: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Release()
	want := `weight column "weight" is decimal(38,2), read as float64: 1 weight has more significant digits than a float64 holds (15 to 17) and was rounded (the first, row 1: 123456789012345678.25 became 1.2345678901234568e+17)`
	if len(rep.Notes) != 1 || rep.Notes[0] != want {
		t.Errorf("notes %q, want [%s]", rep.Notes, want)
	}
	if d := rep.Result.Column("distance").Float64; d[1] != 1.5 {
		t.Errorf("distances %v", d)
	}
}
