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

// nullKey stands for a null in utf8Rows.
const nullKey = "\x00null"

// utf8Rows are the edges of the UTF-8 tests, src and dst keys: rows 2, 5,
// 6 and 7 have keys that are not UTF-8 and row 8 a null. Rows 5 and 6 are
// the halves of "xéy" cut inside the é: the column's bytes are valid as a
// whole, and only the cut between them shows.
var utf8Rows = [][2]string{
	{"a", "b"}, {"é", "ü"}, {"c\xff", "d"}, {"e", "f"},
	{"g", "h"}, {"x\xc3", "k"}, {"\xa9y", "l"}, {"m", "n\xc3"}, {nullKey, "o"}, {"p", "q"},
}

// utf8Records are rows as one record batch, keys of type key, cut into two
// batches (slices of it) at its middle. A dictionary holds each row's key
// (row i is index i), and last a key that is not UTF-8 and no row uses.
func utf8Records(t *testing.T, key arrow.DataType, rows [][2]string) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: key, Nullable: true}, {Name: "dst", Type: key, Nullable: true}}, nil)
	column := func(c int) arrow.Array {
		dt := key
		dict, isDict := key.(*arrow.DictionaryType)
		if isDict {
			dt = dict.ValueType
		}
		b := array.NewBuilder(mem, dt).(array.StringLikeBuilder)
		defer b.Release()
		for _, r := range rows {
			if r[c] == nullKey {
				b.AppendNull()
			} else {
				b.Append(r[c])
			}
		}
		if !isDict {
			return b.NewArray()
		}
		b.Append("unused\xff")
		values := b.NewArray()
		defer values.Release()
		ib := array.NewBuilder(mem, dict.IndexType)
		defer ib.Release()
		for i := range rows {
			switch ib := ib.(type) {
			case *array.Int8Builder:
				ib.Append(int8(i))
			case *array.Int32Builder:
				ib.Append(int32(i))
			default:
				t.Fatalf("no index builder for %s", key)
			}
		}
		idx := ib.NewArray()
		defer idx.Release()
		// The null rows are null in the dictionary (a null index would do
		// too).
		return array.NewDictionaryArray(key, idx, values)
	}
	src, dst := column(0), column(1)
	defer src.Release()
	defer dst.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{src, dst}, int64(len(rows)))
	defer rec.Release()
	half := int64(len(rows) / 2)
	return schema, []arrow.RecordBatch{rec.NewSlice(0, half), rec.NewSlice(half, int64(len(rows)))}
}

// utf8Readers read rows, written with keys of type key, from each Arrow
// source: a mapped file (written to path), a stream, and the Appender that
// Flight's DoPut uses.
func utf8Readers(t *testing.T, key arrow.DataType, path string, rows [][2]string, opts edges.Options) map[string]func() (*edges.Table, error) {
	schema, recs := utf8Records(t, key, rows)
	t.Cleanup(func() { releaseAll(recs) })
	edgetest.WriteArrowFile(t, path, schema, recs)
	stream := edgetest.ArrowStream(t, schema, recs)
	return map[string]func() (*edges.Table, error){
		"file": func() (*edges.Table, error) { return ReadFile(context.Background(), path, opts) },
		"stream": func() (*edges.Table, error) {
			return ReadStream(context.Background(), path, bytes.NewReader(stream), opts)
		},
		"appender": func() (*edges.Table, error) {
			a, err := NewAppender(path, schema, opts)
			if err != nil {
				return nil, err
			}
			defer a.Release()
			for _, r := range recs {
				if err := a.Append(r); err != nil {
					return nil, err
				}
			}
			return a.Finish()
		},
	}
}

// String keys that are not UTF-8 are refused in every string type and from
// every Arrow source, naming the column and the row, as the CSV reader
// refuses them; with SkipInvalid their rows are dropped and counted under
// the CSV reader's reason. They used to be read as they were, and written
// into utf8 result columns that stricter readers refuse.
func TestInvalidUTF8Keys(t *testing.T) {
	dir := t.TempDir()
	for _, key := range []arrow.DataType{
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.StringView,
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.LargeString},
	} {
		name := arrowTypeName(key)
		path := filepath.Join(dir, strings.NewReplacer("<", "_", ">", "_").Replace(name)+".arrow")
		for source, read := range utf8Readers(t, key, path, utf8Rows[:8], edges.Options{}) {
			_, err := read()
			if err == nil {
				t.Errorf("%s, %s: keys that are not UTF-8 accepted", name, source)
				continue
			}
			edgetest.UserErr(t, err, path, `column "src", row 2: vertex key "c\xff" is not valid UTF-8`, "--skip-invalid")
		}
		// The halves of "xéy", each a key of its own.
		for source, read := range utf8Readers(t, key, path, utf8Rows[4:7], edges.Options{}) {
			_, err := read()
			if err == nil {
				t.Errorf("%s, %s: keys cut inside a character accepted", name, source)
				continue
			}
			edgetest.UserErr(t, err, path, `column "src", row 1: vertex key "x\xc3" is not valid UTF-8`)
		}
		want := []edgetest.Edge{{Row: 0, Src: "a", Dst: "b"}, {Row: 1, Src: "é", Dst: "ü"}, {Row: 3, Src: "e", Dst: "f"},
			{Row: 4, Src: "g", Dst: "h"}, {Row: 9, Src: "p", Dst: "q"}}
		for source, read := range utf8Readers(t, key, path, utf8Rows, edges.Options{SkipInvalid: true}) {
			tbl, err := read()
			if err != nil {
				t.Fatalf("%s, %s: %v", name, source, err)
			}
			edgetest.Same(t, edgetest.Edges(t, tbl), want)
			if tbl.Skipped[edges.SkipBadUTF8] != 4 || tbl.Skipped[edges.SkipNullKey("src")] != 1 {
				t.Errorf("%s, %s: skipped %v; want 4 for %q and 1 null", name, source, tbl.Skipped, edges.SkipBadUTF8)
			}
			tbl.Release()
		}
	}
}
