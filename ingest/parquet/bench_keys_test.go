package parquet

import (
	"context"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/sink"
)

// The costs of what the reader checks, on files gpipe's writer wrote:
//
//	go test ./ingest/parquet -run xxx -bench 'ReadParquet(Checksums|StringKeys)' -count 6
//	go test ./ingest/parquet -run xxx -bench StringKeys -kronecker-scale 22 -benchtime 3x

var (
	kroneckerScale = flag.Int("kronecker-scale", 20, "scale of BenchmarkReadParquetStringKeys's Kronecker graph")
	kroneckerFile  = flag.String("kronecker-file", "", "BenchmarkReadParquetStringKeys's file: written there if absent, else read as it is (so that two builds read one file)")
)

// BenchmarkReadParquetChecksums reads 4M int64 edges written by gpipe's
// writer (zstd, row groups of 512Ki rows) as written, every page's CRC-32
// verified, and with the CRCs taken out of the page headers.
func BenchmarkReadParquetChecksums(b *testing.B) {
	const rows = 4 << 20
	keys := func(seed uint64) arrow.Array {
		bld := array.NewInt64Builder(memory.DefaultAllocator)
		defer bld.Release()
		x := seed
		for range rows {
			x = x*6364136223846793005 + 1442695040888963407
			bld.Append(int64(x>>40) % (1 << 22))
		}
		return bld.NewArray()
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src, dst := keys(1), keys(2)
	rec := array.NewRecordBatch(schema, []arrow.Array{src, dst}, rows)
	src.Release()
	dst.Release()
	dir := b.TempDir()
	withCRC := filepath.Join(dir, "crc.parquet")
	if err := sink.WriteRecord(context.Background(), withCRC, rec, sink.Options{BatchRows: 512 << 10}); err != nil {
		b.Fatal(err)
	}
	rec.Release()
	data, err := os.ReadFile(withCRC)
	if err != nil {
		b.Fatal(err)
	}
	noCRC := filepath.Join(dir, "no-crc.parquet")
	if err := os.WriteFile(noCRC, withoutChecksums(b, data), 0o666); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, path string }{{"crc", withCRC}, {"no-crc", noCRC}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(rows * 16)
			cpu := cpuTime()
			for range b.N {
				readBench(b, bc.path, rows)
			}
			b.ReportMetric((cpuTime()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// withoutChecksums is a Parquet file with its pages' CRC fields taken out
// (the headers rewritten, the footer's offsets moved to match).
func withoutChecksums(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var proto thrift.CompactProtocol
	size := len(data)
	flen := int(binary.LittleEndian.Uint32(data[size-8:]))
	var meta format.FileMetaData
	if err := thrift.Unmarshal(&proto, data[size-8-flen:size-8], &meta); err != nil {
		tb.Fatal(err)
	}
	out := []byte("PAR1")
	for g := range meta.RowGroups {
		rg := &meta.RowGroups[g]
		rg.FileOffset = int64(len(out))
		for ci := range rg.Columns {
			md := &rg.Columns[ci].MetaData
			start := md.DataPageOffset
			if d := md.DictionaryPageOffset; d > 0 && d < start {
				start = d
			}
			end := start + md.TotalCompressedSize
			newStart, firstData := int64(len(out)), int64(-1)
			if md.DictionaryPageOffset > 0 {
				md.DictionaryPageOffset = newStart
			}
			for p := start; p < end; {
				pr := proto.NewReaderFromBytes(data[p:end])
				var h format.PageHeader
				if err := thrift.NewDecoder(pr).Decode(&h); err != nil {
					tb.Fatal(err)
				}
				body := data[p+int64(pr.BytesRead()) : p+int64(pr.BytesRead())+int64(h.CompressedPageSize)]
				p += int64(pr.BytesRead()) + int64(h.CompressedPageSize)
				if h.Type == format.DataPage && firstData < 0 {
					firstData = int64(len(out))
				}
				h.CRC = 0
				hb, err := thrift.Marshal(&proto, &h)
				if err != nil {
					tb.Fatal(err)
				}
				out = append(append(out, hb...), body...)
			}
			md.DataPageOffset = firstData
			md.TotalCompressedSize = int64(len(out)) - newStart
			rg.Columns[ci].FileOffset = newStart
		}
	}
	footer, err := thrift.Marshal(&proto, &meta)
	if err != nil {
		tb.Fatal(err)
	}
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// cpuTime is the process's user and system CPU time so far: on a machine
// shared with other work, CPU time varies less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readBench reads path as a benchmark does, checking the edges' count.
func readBench(b *testing.B, path string, rows int64) {
	tbl, err := open(context.Background(), path, edges.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if tbl.NumEdges() != rows {
		b.Fatalf("%d edges, want %d", tbl.NumEdges(), rows)
	}
	tbl.Release()
}

// BenchmarkReadParquetStringKeys reads a Kronecker graph (scale
// -kronecker-scale, edge factor 16) whose keys are written as strings (the
// decimal labels), as gpipe's writer writes a table: "read" is the whole
// read, "utf8" the UTF-8 check of every key alone, on one core (the reader
// runs it for each row group's column on the core that decoded it).
func BenchmarkReadParquetStringKeys(b *testing.B) {
	path, rows := *kroneckerFile, int64(0)
	if _, err := os.Stat(path); err == nil {
		rows = countRows(b, path)
	} else {
		if path == "" {
			path = filepath.Join(b.TempDir(), "kronecker-strings.parquet")
		}
		rows = kroneckerStrings(b, path, *kroneckerScale)
	}
	b.Run("read", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			readBench(b, path, rows)
		}
		b.ReportMetric((cpuTime()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/op")
	})
	b.Run("utf8", func(b *testing.B) {
		tbl, err := open(context.Background(), path, edges.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer tbl.Release()
		var size int64
		for _, ch := range tbl.Chunks {
			size += int64(len(ch.Src.Str.Data) + len(ch.Dst.Str.Data))
		}
		b.SetBytes(size)
		b.ResetTimer()
		for range b.N {
			for _, ch := range tbl.Chunks {
				for _, s := range []*edges.Strings{ch.Src.Str, ch.Dst.Str} {
					if !edges.ValidUTF8(s.Data, s.Offsets) {
						b.Fatal("a key is not UTF-8")
					}
				}
			}
		}
	})
}

// countRows is the number of edges in path.
func countRows(b *testing.B, path string) int64 {
	tbl, err := open(context.Background(), path, edges.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tbl.Release()
	return tbl.NumEdges()
}

// kroneckerStrings writes a Kronecker graph with string keys to path with
// gpipe's writer (zstd, row groups of 1Mi rows) and returns its number of
// edges.
func kroneckerStrings(b *testing.B, path string, scale int) int64 {
	b.Helper()
	t, err := gen.Kronecker{Scale: scale, EdgeFactor: 16, Seed: 1}.Generate(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer t.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.BinaryTypes.String}, {Name: "dst", Type: arrow.BinaryTypes.String}}, nil)
	w, err := sink.Create(path, schema, sink.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	var buf []byte
	column := func(keys []int64) arrow.Array {
		bld := array.NewStringBuilder(memory.DefaultAllocator)
		defer bld.Release()
		bld.Reserve(len(keys))
		for _, k := range keys {
			buf = strconv.AppendInt(buf[:0], k, 10)
			bld.BinaryBuilder.Append(buf)
		}
		return bld.NewArray()
	}
	for _, ch := range t.Chunks {
		src, dst := column(ch.Src.Int64), column(ch.Dst.Int64)
		rec := array.NewRecordBatch(schema, []arrow.Array{src, dst}, int64(len(ch.Src.Int64)))
		src.Release()
		dst.Release()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return t.NumEdges()
}
