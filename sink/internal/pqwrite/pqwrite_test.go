package pqwrite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/format"
)

// The files themselves are checked by package sink's tests, with three
// readers; these check the pieces, and what the writer does with its
// goroutines and the records it keeps.

func TestLevels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		// Parts with validity bitmaps at odd offsets, some without nulls.
		var parts []part
		var want []uint8
		for range 1 + rng.IntN(4) {
			n := 1 + rng.IntN(70)
			off := rng.IntN(13)
			bits := make([]byte, bitutil.BytesForBits(int64(off+n)))
			nullRate := []int{0, 2, 10, 100}[rng.IntN(4)]
			nulls := 0
			for i := 0; i < n; i++ {
				valid := nullRate == 0 || rng.IntN(nullRate) != 0
				if trial%7 == 0 {
					valid = false
				}
				bitutil.SetBitTo(bits, off+i, valid)
				if valid {
					want = append(want, 1)
				} else {
					want = append(want, 0)
					nulls++
				}
			}
			p := part{n: n, nulls: nulls, valid: bits, vbit: off}
			if nulls == 0 && rng.IntN(2) == 0 {
				p.valid = nil
			}
			parts = append(parts, p)
		}
		cur := cursor{parts: parts}
		pieces := cur.take(len(want))
		page, nulls := appendLevels([]byte{0xAB}, pieces, len(want))
		if page[0] != 0xAB {
			t.Fatal("appendLevels overwrote the page")
		}
		size := binary.LittleEndian.Uint32(page[1:])
		if int(size) != len(page)-5 {
			t.Fatalf("length prefix %d, want %d", size, len(page)-5)
		}
		enc := rle.Encoding{BitWidth: 1}
		got, err := enc.DecodeLevels(nil, page[5:])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < len(want) || !bytes.Equal(got[:len(want)], want) {
			t.Fatalf("trial %d: levels %v, want %v", trial, got, want)
		}
		if n := bytes.Count(want, []byte{0}); nulls != n {
			t.Fatalf("trial %d: %d nulls, want %d", trial, nulls, n)
		}
	}
}

func TestIndexes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var e encoder
	for trial := range 200 {
		size := 1 + rng.IntN(5000)
		idx := make([]int32, rng.IntN(3000))
		for i := range idx {
			if rng.IntN(3) == 0 && i > 0 {
				idx[i] = idx[i-1] // runs
			} else {
				idx[i] = int32(rng.IntN(size))
			}
		}
		page := e.appendIndexes([]byte{1, 2}, idx, bitWidth(size))
		if page[2] != byte(bitWidth(size)) {
			t.Fatalf("bit width %d, want %d", page[2], bitWidth(size))
		}
		var dec rle.DictionaryEncoding
		got, err := dec.DecodeInt32(nil, page[2:])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < len(idx) {
			t.Fatalf("trial %d: %d indexes, want %d", trial, len(got), len(idx))
		}
		for i := range idx {
			if got[i] != idx[i] {
				t.Fatalf("trial %d: index %d is %d, want %d", trial, i, got[i], idx[i])
			}
		}
	}
	if bitWidth(1) != 1 || bitWidth(2) != 1 || bitWidth(3) != 2 || bitWidth(256) != 8 || bitWidth(257) != 9 {
		t.Error("bitWidth")
	}
}

func TestFixedDict(t *testing.T) {
	var d fixedDict
	for round := range 3 {
		d.reset()
		seen := map[uint64]int32{}
		rng := rand.New(rand.NewPCG(uint64(round), 9))
		for range 20000 {
			k := rng.Uint64() % 5000
			if round == 2 {
				k <<= 40 // keys that differ only in their high bits
			}
			i := d.index(k)
			if j, ok := seen[k]; ok && i != j {
				t.Fatalf("key %d: index %d, then %d", k, j, i)
			}
			seen[k] = i
			if d.keys[i] != k {
				t.Fatalf("entry %d is %d, want %d", i, d.keys[i], k)
			}
		}
		if len(d.keys) != len(seen) {
			t.Fatalf("%d entries, want %d", len(d.keys), len(seen))
		}
	}
}

// int64Record is n rows of a nullable int64 column (every seventh null) and
// a string column.
func int64Record(mem memory.Allocator, n int, seed uint64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 1))
	ib := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	for i := 0; i < n; i++ {
		if i%7 == 0 {
			ib.AppendNull()
		} else {
			ib.Append(rng.Int64())
		}
		sb.Append(strings.Repeat("x", i%5))
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	cols := []arrow.Array{ib.NewArray(), sb.NewArray()}
	ib.Release()
	sb.Release()
	rec := array.NewRecordBatch(schema, cols, int64(n))
	cols[0].Release()
	cols[1].Release()
	return rec
}

// write writes rec in pieces of piece rows with opts and returns the file.
func write(t *testing.T, rec arrow.RecordBatch, piece int64, opts Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, rec.Schema(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < rec.NumRows(); off += piece {
		s := rec.NewSlice(off, min(off+piece, rec.NumRows()))
		err := w.Write(s)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSameFileOnAnyWorkers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := int64Record(mem, 30000, 1)
	defer rec.Release()
	one := write(t, rec, 999, Options{RowGroupRows: 1000, Codec: format.Zstd, Workers: 1})
	for _, workers := range []int{2, 7, 32} {
		many := write(t, rec, 4321, Options{RowGroupRows: 1000, Codec: format.Zstd, Workers: workers})
		if !bytes.Equal(one, many) {
			t.Errorf("%d workers wrote another file than one worker", workers)
		}
	}
}

func TestAbortReleasesAndStops(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	before := runtime.NumGoroutine()
	for _, at := range []int64{0, 1500, 10000} {
		rec := int64Record(mem, 20000, 2)
		var buf bytes.Buffer
		w, err := NewWriter(&buf, rec.Schema(), Options{RowGroupRows: 1000, Codec: format.Zstd, Workers: 4})
		if err != nil {
			t.Fatal(err)
		}
		s := rec.NewSlice(0, at)
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
		s.Release()
		rec.Release() // the writer holds what it still needs
		w.Abort()
		w.Abort()
		if err := w.Write(rec); !errors.Is(err, errStopped) {
			t.Errorf("Write after Abort: %v", err)
		}
		if err := w.Close(); !errors.Is(err, errStopped) {
			t.Errorf("Close after Abort: %v", err)
		}
	}
	waitGoroutines(t, before)
}

// waitGoroutines waits for the goroutine count to fall back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	for range 200 {
		if runtime.NumGoroutine() <= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("%d goroutines, %d before", runtime.NumGoroutine(), n)
}

// failWriter fails its writes after ok bytes.
type failWriter struct{ ok int }

var errDisk = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.ok {
		n := f.ok
		f.ok = 0
		return n, errDisk
	}
	f.ok -= len(p)
	return len(p), nil
}

func TestWriteErrorStops(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	before := runtime.NumGoroutine()
	rec := int64Record(mem, 50000, 3)
	defer rec.Release()
	w, err := NewWriter(&failWriter{ok: 20000}, rec.Schema(), Options{RowGroupRows: 1000, Codec: format.Uncompressed, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for off := int64(0); off < rec.NumRows() && werr == nil; off += 500 {
		s := rec.NewSlice(off, off+500)
		werr = w.Write(s)
		s.Release()
	}
	if cerr := w.Close(); !errors.Is(cerr, errDisk) || (werr != nil && !errors.Is(werr, errDisk)) {
		t.Errorf("Write: %v, Close: %v; want the disk's error", werr, cerr)
	}
	waitGoroutines(t, before)
}

func TestNotNullableWithNulls(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2, 3}, []bool{true, false, true})
	arr := b.NewArray()
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{arr}, 3)
	defer rec.Release()
	w, err := NewWriter(&bytes.Buffer{}, schema, Options{RowGroupRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), `column "k" is not nullable but has a null`) {
		t.Errorf("Close: %v", err)
	}
}

func TestSupported(t *testing.T) {
	ok := []arrow.DataType{
		arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
		arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary,
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint8, ValueType: arrow.BinaryTypes.String},
	}
	for _, dt := range ok {
		if err := Supported(arrow.NewSchema([]arrow.Field{{Name: "x", Type: dt}}, nil)); err != nil {
			t.Errorf("%s: %v", dt, err)
		}
	}
	no := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int8, arrow.FixedWidthTypes.Timestamp_us,
		arrow.ListOf(arrow.PrimitiveTypes.Int32), arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}),
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.FixedWidthTypes.Date32},
	}
	for _, dt := range no {
		err := Supported(arrow.NewSchema([]arrow.Field{{Name: "x", Type: dt}}, nil))
		if err == nil || !strings.Contains(err.Error(), `column "x"`) {
			t.Errorf("%s: %v", dt, err)
		}
	}
}
