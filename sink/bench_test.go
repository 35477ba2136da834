package sink

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// resultLike is a table shaped as a BFS result of a Kronecker graph:
// n sorted unique int64 vertex keys, an int32 depth and an int64 parent,
// both null for the unreached tenth of the vertices.
func resultLike(n int) arrow.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]int64, 0, n)
	for k := int64(0); len(keys) < n; k++ {
		if rng.IntN(7) < 4 {
			keys = append(keys, k)
		}
	}
	mem := memory.DefaultAllocator
	vb := array.NewInt64Builder(mem)
	db := array.NewInt32Builder(mem)
	pb := array.NewInt64Builder(mem)
	for i := range n {
		vb.Append(keys[i])
		if rng.IntN(10) == 0 {
			db.AppendNull()
			pb.AppendNull()
			continue
		}
		db.Append(int32(rng.IntN(8)))
		pb.Append(keys[rng.IntN(n)])
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "vertex", Type: arrow.PrimitiveTypes.Int64},
		{Name: "depth", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "parent", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	cols := []arrow.Array{vb.NewArray(), db.NewArray(), pb.NewArray()}
	return array.NewRecord(schema, cols, int64(n))
}

// edgesLike is a generated edge table: src and dst int64 drawn from n keys
// with a Kronecker-like skew.
func edgesLike(rows, scale int) arrow.Record {
	rng := rand.New(rand.NewPCG(3, 4))
	mem := memory.DefaultAllocator
	sb := array.NewInt64Builder(mem)
	db := array.NewInt64Builder(mem)
	perm := rng.Perm(1 << scale)
	draw := func() int64 {
		v := 0
		for b := 0; b < scale; b++ {
			r := rng.Float64()
			if r > 0.57 {
				v |= 1 << b
			}
		}
		return int64(perm[v])
	}
	for range rows {
		sb.Append(draw())
		db.Append(draw())
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int64},
		{Name: "dst", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	return array.NewRecord(schema, []arrow.Array{sb.NewArray(), db.NewArray()}, int64(rows))
}

func benchWrite(b *testing.B, rec arrow.Record, opts Options) {
	path := filepath.Join(b.TempDir(), "out.parquet")
	var bytes int64
	for _, c := range rec.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				bytes += int64(buf.Len())
			}
		}
	}
	b.SetBytes(bytes)
	b.ResetTimer()
	for range b.N {
		if err := WriteRecord(context.Background(), path, rec, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	if fi, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(fi.Size()), "file-bytes")
	}
}

var _ = slices.Sort[[]int]

func BenchmarkParquetResult(b *testing.B) {
	rec := resultLike(2395814)
	defer rec.Release()
	benchWrite(b, rec, Options{})
}

func BenchmarkParquetEdges(b *testing.B) {
	rec := edgesLike(16<<18, 18)
	defer rec.Release()
	benchWrite(b, rec, Options{})
}
