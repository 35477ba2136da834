package sink

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/gen"
)

// The writer's benchmarks: a table shaped as a BFS result of Kronecker 22
// (2,395,814 rows), written as WriteRows writes results, and a Kronecker 18
// edge table (4,194,304 rows) written as `gpipe gen` writes it, 64 Ki rows
// at a time; each as Parquet (zstd) and as an Arrow IPC file, whose time
// is the bar Parquet is held to. Rows per second are reported, and bytes
// per second of the table's Arrow buffers.
//
//	go test ./sink -run xxx -bench Write -count 6

// resultLike is a table shaped as a BFS result of a Kronecker graph: n
// sorted unique int64 vertex keys, an int32 depth and an int64 parent,
// both null for the unreached tenth of the vertices.
func resultLike(n int) arrow.RecordBatch {
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
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// arrowBytes is the size of rec's buffers.
func arrowBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// cpuTime is the process's user and system CPU time so far: on a machine
// shared with other work, CPU time per operation varies less than wall
// time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report sets the rates of a benchmark that wrote rows rows to path in each
// of b.N iterations, using cpu of CPU time.
func report(b *testing.B, rows int64, path string, cpu time.Duration) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
	if fi, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(fi.Size()), "file-bytes")
	}
}

func benchmarkResult(b *testing.B, name string) {
	rec := resultLike(2395814)
	defer rec.Release()
	path := filepath.Join(b.TempDir(), name)
	b.SetBytes(arrowBytes(rec))
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		if err := WriteRecord(context.Background(), path, rec, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	report(b, rec.NumRows(), path, cpuTime()-cpu)
}

func BenchmarkWriteResultParquet(b *testing.B) { benchmarkResult(b, "r.parquet") }
func BenchmarkWriteResultArrow(b *testing.B)   { benchmarkResult(b, "r.arrow") }

func benchmarkKronecker(b *testing.B, name string) {
	t, err := gen.Kronecker{Scale: 18, EdgeFactor: 16, Seed: 1}.Generate(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer t.Release()
	path := filepath.Join(b.TempDir(), name)
	b.SetBytes(t.NumEdges() * 16)
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		w, err := Create(path, t.Schema(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		rdr := t.RecordReader()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for lo := int64(0); lo < rec.NumRows(); lo += DefaultIPCBatch {
				piece := rec.NewSlice(lo, min(lo+DefaultIPCBatch, rec.NumRows()))
				err := w.Write(piece)
				piece.Release()
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		rdr.Release()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	report(b, t.NumEdges(), path, cpuTime()-cpu)
}

func BenchmarkWriteKroneckerParquet(b *testing.B) { benchmarkKronecker(b, "k.parquet") }
func BenchmarkWriteKroneckerArrow(b *testing.B)   { benchmarkKronecker(b, "k.arrow") }
