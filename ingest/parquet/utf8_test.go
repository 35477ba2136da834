package parquet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// utf8Case is an edge table of string keys, some of them not UTF-8.
type utf8Case struct {
	src, dst []any // keys, nil for null
}

// utf8Edges is rows edges of valid keys (ASCII, and characters of two,
// three and four bytes), with bad put in: row → (column 0 src, 1 dst, key).
func utf8Edges(rows int, bad map[int][2]any) utf8Case {
	names := []string{"é", "日本", "😀x", "plain", "ü-ß"}
	c := utf8Case{src: make([]any, rows), dst: make([]any, rows)}
	for i := range rows {
		c.src[i] = fmt.Sprintf("%s%d", names[i%len(names)], i%97)
		c.dst[i] = fmt.Sprintf("%s%d", names[(i+2)%len(names)], i%89)
	}
	for row, b := range bad {
		if b[0].(int) == 0 {
			c.src[row] = b[1]
		} else {
			c.dst[row] = b[1]
		}
	}
	return c
}

// write writes the case as a Parquet file of key type typ.
func (c utf8Case) write(t *testing.T, name string, typ arrow.DataType, w edgetest.ParquetWrite) string {
	t.Helper()
	tbl := arrowTable(t, len(c.src), []colData{{"src", typ, c.src}, {"dst", typ, c.dst}}, false)
	defer tbl.Release()
	return edgetest.WriteParquet(t, t.TempDir(), name, tbl, w)
}

// TestParquetUTF8Keys: string keys that are not valid UTF-8 are refused with
// the CSV reader's message, naming the column and the row, or dropped and
// counted with SkipInvalid; that holds for keys annotated STRING and for
// plain BYTE_ARRAY, plain and dictionary pages, and for a character cut in
// two between two keys (whose bytes are valid UTF-8 one after the other).
func TestParquetUTF8Keys(t *testing.T) {
	const rows, rgRows = 1200, 500
	bad := map[int][2]any{
		1033: {1, "a\xffb"},           // row group 2
		1100: {0, "\xc3"},             // a character's first byte
		1101: {0, "\xa9z"},            // ... and its second, in the next key
		1150: {1, "\xed\xa0\x80"},     // a surrogate
		1190: {0, "ok\xe6\x97"},       // cut short
		1191: {1, "\xf0\x9f\x98\x80"}, // valid: a four-byte character
	}
	firstRow, firstCol := 1033, "dst"
	nBad := 5
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, dictStringType} {
		for _, dict := range []bool{false, true} {
			name := fmt.Sprintf("%s-dict=%v", typ, dict)
			t.Run(name, func(t *testing.T) {
				c := utf8Edges(rows, bad)
				w := edgetest.ParquetWrite{Codec: pqcompress.Codecs.Snappy, Dict: dict, RowGroupRows: rgRows, PageSize: 2048}
				path := c.write(t, "keys.parquet", typ, w)

				ue := readErr(t, path, edges.Options{})
				if ue.Row != int64(firstRow) || ue.Column != firstCol ||
					!strings.Contains(ue.Problem, `vertex key "a\xffb" is not valid UTF-8`) || !strings.Contains(ue.Fix, "--skip-invalid") {
					t.Fatalf("want the error of column %q row %d: %v", firstCol, firstRow, ue)
				}

				readChecked(t, path, edges.Options{SkipInvalid: true}, func(tbl *edges.Table) {
					if tbl.NumEdges() != rows-int64(nBad) || tbl.Skipped[edges.SkipBadUTF8] != int64(nBad) || tbl.Skipped.Total() != int64(nBad) {
						t.Fatalf("%d edges, skipped %v; want %d edges, %d skipped for %q", tbl.NumEdges(), tbl.Skipped, rows-nBad, nBad, edges.SkipBadUTF8)
					}
					var keys []string
					for _, ch := range tbl.Chunks {
						for i := range ch.Len() {
							keys = append(keys, string(ch.Src.Str.At(i)), string(ch.Dst.Str.At(i)))
						}
					}
					for _, k := range []string{"\xf0\x9f\x98\x80", "é0", "日本1"} {
						if !containsString(keys, k) {
							t.Fatalf("valid key %q dropped", k)
						}
					}
				})
			})
		}
	}
}

// TestParquetUTF8Order: of a null and a key that is not UTF-8, the error is
// the one of the lower row, as the CSV reader, row by row, reports it; in a
// row with both, the null (the CSV reader checks nulls first), and that is
// the reason SkipInvalid counts the row under.
func TestParquetUTF8Order(t *testing.T) {
	for _, tc := range []struct {
		bad          map[int][2]any
		row          int
		column, want string
		skips        edges.Skips
	}{
		{map[int][2]any{5: {1, "\xff"}, 9: {0, nil}}, 5, "dst", "not valid UTF-8",
			edges.Skips{edges.SkipBadUTF8: 1, edges.SkipNullKey("src"): 1}},
		{map[int][2]any{9: {1, "\xff"}, 5: {0, nil}}, 5, "src", "null vertex key",
			edges.Skips{edges.SkipBadUTF8: 1, edges.SkipNullKey("src"): 1}},
		{map[int][2]any{5: {0, "\xff"}, 7: {1, nil}}, 5, "src", "not valid UTF-8",
			edges.Skips{edges.SkipBadUTF8: 1, edges.SkipNullKey("dst"): 1}},
	} {
		c := utf8Edges(40, tc.bad)
		path := c.write(t, "order.parquet", arrow.BinaryTypes.String, edgetest.DefaultParquetWrite)
		ue := readErr(t, path, edges.Options{})
		if ue.Row != int64(tc.row) || ue.Column != tc.column || !strings.Contains(ue.Problem, tc.want) {
			t.Fatalf("%v: got %v, want column %q row %d: %s", tc.bad, ue, tc.column, tc.row, tc.want)
		}
		readChecked(t, path, edges.Options{SkipInvalid: true}, func(tbl *edges.Table) {
			if fmt.Sprint(tbl.Skipped) != fmt.Sprint(tc.skips) || tbl.NumEdges() != 38 {
				t.Fatalf("%v: %d edges, skipped %v, want 38 and %v", tc.bad, tbl.NumEdges(), tbl.Skipped, tc.skips)
			}
		})
	}
	// A row whose src is null and whose dst is not UTF-8 counts as a null.
	c := utf8Edges(40, map[int][2]any{5: {0, nil}})
	c.dst[5] = "\xff"
	path := c.write(t, "both.parquet", arrow.BinaryTypes.String, edgetest.DefaultParquetWrite)
	if ue := readErr(t, path, edges.Options{}); ue.Row != 5 || ue.Column != "src" || !strings.Contains(ue.Problem, "null vertex key") {
		t.Fatalf("null and bad UTF-8 in one row: %v", ue)
	}
	readChecked(t, path, edges.Options{SkipInvalid: true}, func(tbl *edges.Table) {
		if want := (edges.Skips{edges.SkipNullKey("src"): 1}); fmt.Sprint(tbl.Skipped) != fmt.Sprint(want) {
			t.Fatalf("skipped %v, want %v", tbl.Skipped, want)
		}
	})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
