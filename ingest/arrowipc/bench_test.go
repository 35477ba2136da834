package arrowipc

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
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
					kb.Append(keyString(rng.IntN(1 << 20)))
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
// converted, data in place). The bytes counted are the file's.
func BenchmarkReadArrowFile(b *testing.B) {
	for _, key := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String} {
		b.Run(key.Name(), func(b *testing.B) {
			schema, recs := benchRecords(b, key, 4, 1<<20)
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
