package gpipe

import (
	"context"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
)

// TestFromRecordsReadsInPlace checks that the table FromRecords builds from
// reads the records' key and weight buffers in place, for every key type
// whose layout is the build's (and a utf8 column's string data, whose
// offsets widen to 64 bits), over several records: no column is copied.
func TestFromRecordsReadsInPlace(t *testing.T) {
	cases := []struct {
		key     arrow.DataType
		inPlace func(c *edges.Chunk) [2]unsafe.Pointer // src's and dst's buffer the table reads
	}{
		{arrow.PrimitiveTypes.Int32, func(c *edges.Chunk) [2]unsafe.Pointer { return ptrs(c.Src.Int32, c.Dst.Int32) }},
		{arrow.PrimitiveTypes.Int64, func(c *edges.Chunk) [2]unsafe.Pointer { return ptrs(c.Src.Int64, c.Dst.Int64) }},
		{arrow.PrimitiveTypes.Uint32, func(c *edges.Chunk) [2]unsafe.Pointer { return ptrs(c.Src.Uint32, c.Dst.Uint32) }},
		{arrow.PrimitiveTypes.Uint64, func(c *edges.Chunk) [2]unsafe.Pointer { return ptrs(c.Src.Uint64, c.Dst.Uint64) }},
		{arrow.BinaryTypes.LargeString, func(c *edges.Chunk) [2]unsafe.Pointer { return ptrs(c.Src.Str.Offsets, c.Dst.Str.Offsets) }},
		{arrow.BinaryTypes.String, func(c *edges.Chunk) [2]unsafe.Pointer { return ptrs(c.Src.Str.Data, c.Dst.Str.Data) }},
	}
	for _, tc := range cases {
		t.Run(tc.key.String(), func(t *testing.T) {
			recs := keyRecords(t, tc.key, 3, 100)
			defer release(recs)
			rr, err := array.NewRecordReader(recs[0].Schema(), recs)
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Release()
			opts := LoadOptions{Backend: "cpu"}
			_, lo, err := opts.open()
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := readRecords(context.Background(), rr, opts, lo)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			if len(tbl.Chunks) != len(recs) {
				t.Fatalf("%d chunks from %d records", len(tbl.Chunks), len(recs))
			}
			for i, rec := range recs {
				c := &tbl.Chunks[i]
				got := tc.inPlace(c)
				buf := 1 // the values; a string column's offsets, or its data for utf8
				if tc.key.ID() == arrow.STRING {
					buf = 2
				}
				for j := range 2 {
					want := unsafe.Pointer(unsafe.SliceData(rec.Column(j).Data().Buffers()[buf].Bytes()))
					if got[j] != want {
						t.Errorf("record %d column %d: the table's keys are a copy, not the record's buffer", i, j)
					}
				}
				want := unsafe.Pointer(unsafe.SliceData(rec.Column(2).Data().Buffers()[1].Bytes()))
				if unsafe.Pointer(unsafe.SliceData(c.Weight)) != want {
					t.Errorf("record %d: the table's weights are a copy, not the record's buffer", i)
				}
			}
		})
	}
}

func ptrs[T any](a, b []T) [2]unsafe.Pointer {
	return [2]unsafe.Pointer{unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))}
}

// keyRecords are n records of rows edges each, keys of type key (i ->
// i+1, i -> i+7 over 64 vertices), float64 weights.
func keyRecords(t testing.TB, key arrow.DataType, n, rows int) []arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: key}, {Name: "dst", Type: key}, {Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var recs []arrow.RecordBatch
	for r := range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range rows {
			e := r*rows + i
			src, dst := e%64, (e%64+1+6*(e/64%2))%64
			appendKey(t, b.Field(0), src)
			appendKey(t, b.Field(1), dst)
			b.Field(2).(*array.Float64Builder).Append(float64(1 + e%5))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return recs
}

func appendKey(t testing.TB, b array.Builder, k int) {
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(k))
	case *array.Int64Builder:
		b.Append(int64(k) << 33) // keys beyond 32 bits
	case *array.Uint32Builder:
		b.Append(uint32(k))
	case *array.Uint64Builder:
		b.Append(uint64(k) << 40)
	case *array.StringBuilder:
		b.Append("v" + string(rune('A'+k)))
	case *array.LargeStringBuilder:
		b.Append("v" + string(rune('A'+k)))
	case *array.BinaryDictionaryBuilder:
		if err := b.AppendString("v" + string(rune('A'+k))); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no key builder for %T", b)
	}
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
