package sink

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/parquet"
)

// TestParquetWriterIngest reads edge tables written by the sink with
// gpipe's own reader: keys of every type it reads (nulls among them,
// dropped with SkipInvalid), float64 and float32 weights, dictionary and
// plain chunks, several row groups.
func TestParquetWriterIngest(t *testing.T) {
	// Indexes into allTypeColumns.
	keys := map[string]int{"int32": 0, "uint32": 1, "int64": 2, "uint64": 3, "string": 6, "large_string": 7, "dictionary": 10}
	weights := map[string]int{"float32": 4, "float64": 5}
	for keyName, k := range keys {
		for weightName, wc := range weights {
			for _, card := range []int{40, 1 << 40} {
				src := allTypeColumns(card, 1)[k]
				dst := allTypeColumns(card, 2)[k]
				weight := allTypeColumns(card, 3)[wc]
				src.field.Name, dst.field.Name, weight.field.Name = "src", "dst", "weight"
				cols := []pqCol{src, dst, weight}
				// Row groups of 25000 rows hold more than dictProbe
				// non-null keys, so that the unique keys are written plain.
				rows := 75000
				mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
				rec := buildRecord(mem, cols, rows)
				path := filepath.Join(t.TempDir(), "e.parquet")
				writePieces(t, path, rec, []int{7000}, Options{BatchRows: 25000})

				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				tbl, err := parquet.Read(context.Background(), path, f, edges.Options{
					Columns:     edges.Columns{ReadWeight: true},
					SkipInvalid: true,
				})
				f.Close()
				if err != nil {
					t.Fatalf("%s keys, %s weights: %v", keyName, weightName, err)
				}
				checkIngested(t, keyName+" keys, "+weightName+" weights", tbl, cols, rows, 25000)
				if card > 1000 {
					checkEncoding(t, path, 2, "plain", 1)
				} else {
					checkEncoding(t, path, 2, "dict", 1)
				}
				tbl.Release()
				rec.Release()
				mem.AssertSize(t, 0)
			}
		}
	}
}

// checkIngested compares the edges read with the table's rows, those with
// a null key or weight left out.
func checkIngested(t *testing.T, what string, tbl *edges.Table, cols []pqCol, rows, group int) {
	t.Helper()
	if tbl.RowsRead != int64(rows) {
		t.Fatalf("%s: %d rows read, want %d", what, tbl.RowsRead, rows)
	}
	if want := (rows + group - 1) / group; len(tbl.Chunks) != want {
		t.Fatalf("%s: %d chunks, want %d (one per row group)", what, len(tbl.Chunks), want)
	}
	next := 0
	skipped := 0
	for ci := range tbl.Chunks {
		ch := &tbl.Chunks[ci]
		for i := 0; i < ch.Len(); i++ {
			row := int(ch.Row(i))
			for ; next < row; next++ {
				if cols[0].value(next) != nil && cols[1].value(next) != nil && cols[2].value(next) != nil {
					t.Fatalf("%s: row %d dropped, but it has no null", what, next)
				}
				skipped++
			}
			next++
			if got, want := ingestedKey(&ch.Src, i), cols[0].value(row); !sameValue(want, got) {
				t.Fatalf("%s: row %d: src %#v, want %#v", what, row, got, want)
			}
			if got, want := ingestedKey(&ch.Dst, i), cols[1].value(row); !sameValue(want, got) {
				t.Fatalf("%s: row %d: dst %#v, want %#v", what, row, got, want)
			}
			want := cols[2].value(row)
			if w, ok := want.(float32); ok {
				want = float64(w)
			}
			if !sameValue(want, ch.Weight[i]) {
				t.Fatalf("%s: row %d: weight %v, want %v", what, row, ch.Weight[i], want)
			}
		}
	}
	for ; next < rows; next++ {
		skipped++
	}
	if tbl.Skipped.Total() != int64(skipped) || skipped == 0 {
		t.Fatalf("%s: %d rows skipped (%v), want %d", what, tbl.Skipped.Total(), tbl.Skipped, skipped)
	}
}

// ingestedKey is key i of a chunk's column as a cell.
func ingestedKey(k *edges.Keys, i int) any {
	switch {
	case k.Int32 != nil:
		return k.Int32[i]
	case k.Int64 != nil:
		return k.Int64[i]
	case k.Uint32 != nil:
		return k.Uint32[i]
	case k.Uint64 != nil:
		return k.Uint64[i]
	case k.Str != nil:
		return string(k.Str.At(i))
	}
	return nil
}
