package arrowipc

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// benchRecords are batches of random edges: keys of type key (int64 or
// string), float64 weights.
func benchRecords(b *testing.B, key arrow.DataType, batches, rows int) (*arrow.Schema, []arrow.RecordBatch) {
	return benchRecordsOf(b, key, batches, rows, func(rng *rand.Rand) string { return keyString(rng.IntN(1 << 20)) })
}

// benchRecordsOf is benchRecords with string keys drawn by str.
func benchRecordsOf(b *testing.B, key arrow.DataType, batches, rows int, str func(*rand.Rand) string) (*arrow.Schema, []arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: key}, {Name: "dst", Type: key}, {Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rng := rand.New(rand.NewPCG(3, 3))
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	for range batches {
		bld := array.NewRecordBuilder(mem, schema)
		for i := 0; i < 2; i++ {
			switch kb := bld.Field(i).(type) {
			case *array.Int64Builder:
				for range rows {
					kb.Append(rng.Int64N(1 << 22))
				}
			case *array.StringBuilder:
				for range rows {
					kb.Append(str(rng))
				}
			}
		}
		wb := bld.Field(2).(*array.Float64Builder)
		for range rows {
			wb.Append(rng.Float64())
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
	}
	return schema, recs
}

// BenchmarkReadArrowFile reads a mapped IPC file of 4 batches of 1Mi edges
// with their weights: int64 keys (used in place) or string keys (offsets
// converted, data in place, checked to be UTF-8): short ones ("v0" to
// "v999"), or the decimal vertex ids of a Kronecker scale-22 graph (up to
// 7 digits; k22). The bytes counted are the file's.
func BenchmarkReadArrowFile(b *testing.B) {
	short := func(rng *rand.Rand) string { return keyString(rng.IntN(1 << 20)) }
	k22 := func(rng *rand.Rand) string { return strconv.Itoa(rng.IntN(1 << 22)) }
	for _, tc := range []struct {
		name string
		key  arrow.DataType
		str  func(*rand.Rand) string
	}{
		{"int64", arrow.PrimitiveTypes.Int64, nil},
		{"utf8", arrow.BinaryTypes.String, short},
		{"utf8_k22", arrow.BinaryTypes.String, k22},
	} {
		b.Run(tc.name, func(b *testing.B) {
			schema, recs := benchRecordsOf(b, tc.key, 4, 1<<20, tc.str)
			path := filepath.Join(b.TempDir(), "bench.arrow")
			edgetest.WriteArrowFile(b, path, schema, recs)
			var size int64
			for _, r := range recs {
				for _, c := range r.Columns() {
					for _, buf := range c.Data().Buffers() {
						if buf != nil {
							size += int64(buf.Len())
						}
					}
				}
			}
			releaseAll(recs)
			b.SetBytes(size)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tbl, err := ReadFile(context.Background(), path, opts)
				if err != nil {
					b.Fatal(err)
				}
				if tbl.NumEdges() != 4<<20 {
					b.Fatalf("%d edges", tbl.NumEdges())
				}
				tbl.Release()
			}
		})
	}
}

// BenchmarkReadArrowStream reads an IPC stream of 4 batches of 1Mi int64
// edges with their weights from memory.
func BenchmarkReadArrowStream(b *testing.B) {
	schema, recs := benchRecords(b, arrow.PrimitiveTypes.Int64, 4, 1<<20)
	data := edgetest.ArrowStream(b, schema, recs)
	releaseAll(recs)
	b.SetBytes(int64(len(data)))
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tbl, err := ReadStream(context.Background(), "-", bytes.NewReader(data), opts)
		if err != nil {
			b.Fatal(err)
		}
		tbl.Release()
	}
}

// BenchmarkValidStrings is the UTF-8 check of string keys alone, on a
// chunk of 4Mi decimal vertex ids of a Kronecker scale-22 graph (ascii), and
// on the same ids after an "é" (the path for keys that are not all ASCII),
// the bytes counted those of the keys.
func BenchmarkValidStrings(b *testing.B) {
	for _, prefix := range []string{"", "é"} {
		name := "ascii"
		if prefix != "" {
			name = "non-ascii"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 3))
			s := &edges.Strings{Offsets: make([]int64, 1, 1<<22+1)}
			for range 1 << 22 {
				s.Data = strconv.AppendInt(append(s.Data, prefix...), int64(rng.IntN(1<<22)), 10)
				s.Offsets = append(s.Offsets, int64(len(s.Data)))
			}
			b.SetBytes(int64(len(s.Data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !validKeys(s) {
					b.Fatal("keys not valid")
				}
			}
		})
	}
}
