package parquet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/usererr"
)

// TestParquetMissingColumn: the message names the role, the flag and the
// columns there are.
func TestParquetMissingColumn(t *testing.T) {
	c := randomEdges(1, 100, 50, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, true, 0, 0)
	path := c.write(t, t.TempDir(), "m.parquet", false, edgetest.DefaultParquetWrite.With(50))
	const cols = "(columns: label, nested, dst, score, src, tags, weight, after)"
	for _, tc := range []struct {
		cols edges.Columns
		want string
	}{
		{edges.Columns{Src: "from"}, `no source column "from" ` + cols + `; name the source column with --src-col`},
		{edges.Columns{Dst: "to"}, `no destination column "to" ` + cols + `; name the destination column with --dst-col`},
		{edges.Columns{Weight: "w", WeightExplicit: true, ReadWeight: true}, `no weight column "w" ` + cols + `; name the weight column with --weight-col`},
		{edges.Columns{Src: "a", Dst: "b"}, `no source column "a"`},
	} {
		ue := readErr(t, path, edges.Options{Columns: tc.cols})
		if !strings.Contains(ue.Error(), tc.want) {
			t.Errorf("error %q, want it to contain %q", ue, tc.want)
		}
	}
	// A nested column's fields are not top-level columns.
	ue := readErr(t, path, edges.Options{Columns: edges.Columns{Src: "a"}})
	if !strings.Contains(ue.Error(), `no source column "a"`) {
		t.Errorf("error %q", ue)
	}
}

// TestParquetKeyTypes: key columns of types that cannot hold vertex keys,
// named as a user would say them, and source and destination of different
// types.
func TestParquetKeyTypes(t *testing.T) {
	dir := t.TempDir()
	const rows = 60
	for _, tc := range []struct {
		typ  arrow.DataType
		name string
	}{
		{arrow.PrimitiveTypes.Float64, "double"},
		{arrow.PrimitiveTypes.Float32, "float"},
		{arrow.FixedWidthTypes.Boolean, "boolean"},
		{arrow.FixedWidthTypes.Timestamp_us, "timestamp"},
		{arrow.FixedWidthTypes.Date32, "date"},
		{arrow.FixedWidthTypes.Time64us, "time"},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, "decimal(10,2)"},
		{&arrow.FixedSizeBinaryType{ByteWidth: 16}, "fixed_len_byte_array(16)"},
		{structType, "struct"},
		{listType, "list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := randomEdges(2, rows, 50, tc.typ, nil, false, 0, 0)
			path := c.write(t, dir, tc.name+".parquet", false, edgetest.DefaultParquetWrite.With(50))
			ue := readErr(t, path, edges.Options{})
			want := fmt.Sprintf(`column "src": type %s cannot be a vertex key`, tc.name)
			if ue.Column != "src" || !strings.Contains(ue.Error(), want) || ue.Fix == "" {
				t.Fatalf("error %q, want it to contain %q", ue, want)
			}

			// The same type as a weight.
			if tc.name == "double" || tc.name == "float" || strings.HasPrefix(tc.name, "decimal") {
				return
			}
			c = randomEdges(2, rows, 50, arrow.PrimitiveTypes.Int32, tc.typ, false, 0, 0)
			path = c.write(t, dir, tc.name+"-w.parquet", false, edgetest.DefaultParquetWrite.With(50))
			ue = readErr(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}})
			want = fmt.Sprintf(`column "weight": type %s cannot be an edge weight`, tc.name)
			if !strings.Contains(ue.Error(), want) {
				t.Fatalf("error %q, want it to contain %q", ue, want)
			}
		})
	}

	t.Run("string-weight", func(t *testing.T) {
		c := randomEdges(3, rows, 50, arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String, false, 0, 0)
		path := c.write(t, dir, "sw.parquet", false, edgetest.DefaultParquetWrite.With(50))
		ue := readErr(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}})
		if !strings.Contains(ue.Error(), "type string cannot be an edge weight") {
			t.Fatalf("error %q", ue)
		}
	})

	t.Run("differ", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 3))
		c := &edgeCase{rows: rows, src: 0, dst: 1, weight: -1, cols: []colData{
			randomColumn(rng, "src", arrow.PrimitiveTypes.Int32, rows, 10, 0, 50),
			randomColumn(rng, "dst", arrow.BinaryTypes.String, rows, 10, 0, 50),
		}}
		path := c.write(t, dir, "differ.parquet", false, edgetest.DefaultParquetWrite.With(50))
		ue := readErr(t, path, edges.Options{})
		want := `source column "src" is int32 but destination column "dst" is string; cast both key columns to the same type`
		if !strings.Contains(ue.Error(), want) {
			t.Fatalf("error %q, want it to contain %q", ue, want)
		}
	})
}

// validFile writes a small valid edge file and returns its bytes.
func validFile(t *testing.T, dir string, codec pqcompress.Compression) (string, []byte, *edgeCase) {
	t.Helper()
	c := randomEdges(9, 2000, 500, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, true, 0, 0)
	w := edgetest.DefaultParquetWrite.With(500)
	w.Codec = codec
	path := c.write(t, dir, "valid.parquet", false, w)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data, c
}

func writeBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParquetNotParquet: files that are not Parquet, empty or cut short.
func TestParquetNotParquet(t *testing.T) {
	dir := t.TempDir()
	_, valid, _ := validFile(t, dir, pqcompress.Codecs.Snappy)

	text := filepath.Join(dir, "edges.parquet")
	writeBytes(t, text, []byte("src,dst\n1,2\n2,3\n"))
	if ue := readErr(t, text, edges.Options{}); !strings.Contains(ue.Error(), "not a Parquet file") || !strings.Contains(ue.Error(), "--input-format") {
		t.Fatalf("text file: %v", ue)
	}

	enc := filepath.Join(dir, "encrypted.parquet")
	writeBytes(t, enc, append([]byte("PARE"), valid[4:]...))
	if ue := readErr(t, enc, edges.Options{}); !strings.Contains(ue.Error(), "encrypted") {
		t.Fatalf("encrypted file: %v", ue)
	}

	empty := filepath.Join(dir, "empty.parquet")
	writeBytes(t, empty, nil)
	if ue := readErr(t, empty, edges.Options{}); !strings.Contains(ue.Error(), "empty") {
		t.Fatalf("empty file: %v", ue)
	}

	for _, n := range []int{1, 4, 7, 12, 100, len(valid) / 3, len(valid) / 2, len(valid) - 9, len(valid) - 8, len(valid) - 4, len(valid) - 1} {
		cut := filepath.Join(dir, fmt.Sprintf("cut%d.parquet", n))
		writeBytes(t, cut, valid[:n])
		ue := readErr(t, cut, edges.Options{Columns: edges.Columns{ReadWeight: true}})
		if !strings.Contains(ue.Error(), "truncated") || !strings.Contains(ue.Error(), "re-export") {
			t.Fatalf("cut at %d of %d bytes: %v", n, len(valid), ue)
		}
	}

	// A footer length that points outside the file.
	bad := bytes.Clone(valid)
	copy(bad[len(bad)-8:], []byte{0xff, 0xff, 0xff, 0x7f})
	path := filepath.Join(dir, "footerlen.parquet")
	writeBytes(t, path, bad)
	if ue := readErr(t, path, edges.Options{}); !strings.Contains(ue.Error(), "footer is corrupt") {
		t.Fatalf("footer length: %v", ue)
	}

	// A footer of garbage.
	bad = bytes.Clone(valid)
	footer := int(uint32(bad[len(bad)-8]) | uint32(bad[len(bad)-7])<<8 | uint32(bad[len(bad)-6])<<16)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := len(bad) - 8 - footer; i < len(bad)-8; i++ {
		bad[i] = byte(rng.Uint32())
	}
	writeBytes(t, path, bad)
	if ue := readErr(t, path, edges.Options{}); !strings.Contains(ue.Error(), "footer is corrupt") {
		t.Fatalf("footer garbage: %v", ue)
	}
}

// chunkRange is where column name's chunk of row group g lies in the file.
func chunkRange(t *testing.T, data []byte, g int, name string) (int64, int64) {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	leaf := pf.Root().Column(name).Index()
	md := pf.Metadata().RowGroups[g].Columns[leaf].MetaData
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	return start, start + md.TotalCompressedSize
}

// TestParquetCorruptPages: damaged pages give an error naming the column
// and a row, never a panic; damage to columns not read does no harm.
func TestParquetCorruptPages(t *testing.T) {
	dir := t.TempDir()
	path, valid, c := validFile(t, dir, pqcompress.Codecs.Snappy)
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}

	// The page header of dst in row group 2.
	lo, _ := chunkRange(t, valid, 2, "dst")
	bad := bytes.Clone(valid)
	for i := lo; i < lo+12; i++ {
		bad[i] = 0xff
	}
	writeBytes(t, path, bad)
	ue := readErr(t, path, opts)
	if ue.Column != "dst" || ue.Row < 1000 || ue.Row >= 1500 || !strings.Contains(ue.Error(), "cannot decode") || !strings.Contains(ue.Error(), "re-export") {
		t.Fatalf("corrupt page header: %v", ue)
	}

	// Columns that are not read: their damage is not seen.
	bad = bytes.Clone(valid)
	for _, col := range []string{"label", "score", "after"} {
		for g := 0; g < 4; g++ {
			lo, hi := chunkRange(t, valid, g, col)
			for i := lo; i < hi; i++ {
				bad[i] = 0xee
			}
		}
	}
	writeBytes(t, path, bad)
	readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, edges.KeyInt64, 500) })

	// Random damage inside the edge columns' chunks: an error or (where
	// the damage hit only values) a table, never a panic.
	rng := rand.New(rand.NewPCG(11, 12))
	errs := 0
	for trial := 0; trial < 60; trial++ {
		bad = bytes.Clone(valid)
		col := []string{"src", "dst", "weight"}[trial%3]
		lo, hi := chunkRange(t, valid, trial%4, col)
		for k := 0; k < 1+trial%4; k++ {
			bad[lo+rng.Int64N(hi-lo)] ^= byte(1 + rng.IntN(255))
		}
		writeBytes(t, path, bad)
		tbl, err := open(context.Background(), path, opts)
		if err == nil {
			tbl.Release()
			continue
		}
		errs++
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != usererr.Input || strings.Contains(err.Error(), "\n") {
			t.Fatalf("trial %d: %T %v", trial, err, err)
		}
	}
	if errs == 0 {
		t.Fatal("no damage was noticed")
	}
}

// TestParquetCanceled: a canceled context stops the read.
func TestParquetCanceled(t *testing.T) {
	path, _, _ := validFile(t, t.TempDir(), pqcompress.Codecs.Gzip)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := open(ctx, path, edges.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestParquetLZ4Raw reads LZ4_RAW pages, which Arrow's Go writer does not
// write, from parquet-go's own writer.
func TestParquetLZ4Raw(t *testing.T) {
	type row struct {
		Src    string  `parquet:"src,dict"`
		Extra  int32   `parquet:"extra"`
		Dst    string  `parquet:"dst,optional"`
		Weight float32 `parquet:"weight"`
	}
	rng := rand.New(rand.NewPCG(13, 13))
	rows := make([]row, 3000)
	for i := range rows {
		rows[i] = row{Src: fmt.Sprint(rng.IntN(500)), Extra: rng.Int32(), Dst: fmt.Sprint(rng.IntN(500)), Weight: float32(rng.IntN(100)) / 4}
	}
	path := filepath.Join(t.TempDir(), "lz4.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](f, parquet.Compression(&parquet.Lz4Raw), parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(1024))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	readChecked(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}}, func(tbl *edges.Table) {
		if tbl.KeyType != edges.KeyString || len(tbl.Chunks) != 5 || tbl.NumEdges() != 3000 {
			t.Fatalf("KeyType %v, %d chunks, %d edges", tbl.KeyType, len(tbl.Chunks), tbl.NumEdges())
		}
		for _, ch := range tbl.Chunks {
			for i := 0; i < ch.Len(); i++ {
				r := rows[ch.Row(i)]
				if string(ch.Src.Str.At(i)) != r.Src || string(ch.Dst.Str.At(i)) != r.Dst || ch.Weight[i] != float64(r.Weight) {
					t.Fatalf("row %d: %q %q %v, want %+v", ch.Row(i), ch.Src.Str.At(i), ch.Dst.Str.At(i), ch.Weight[i], r)
				}
			}
		}
	})
}

// BenchmarkReadParquet reads 4M int64 edges (snappy, no dictionary, row
// groups of 512Ki rows); the bytes counted are those of the decoded keys.
func BenchmarkReadParquet(b *testing.B) {
	const rows = 4 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	mem := memory.NewGoAllocator()
	cols := make([]arrow.Array, 2)
	for i := range cols {
		vals := make([]int64, rows)
		for j := range vals {
			vals[j] = rng.Int64N(1 << 22)
		}
		bld := array.NewInt64Builder(mem)
		bld.AppendValues(vals, nil)
		cols[i] = bld.NewArray()
		bld.Release()
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, cols, rows)
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	rec.Release()
	cols[0].Release()
	cols[1].Release()
	w := edgetest.ParquetWrite{Codec: pqcompress.Codecs.Snappy, Dict: false, RowGroupRows: 512 << 10, PageSize: 1 << 20}
	path := edgetest.WriteParquet(b, b.TempDir(), "bench.parquet", tbl, w)
	tbl.Release()
	b.SetBytes(rows * 16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tbl, err := open(context.Background(), path, edges.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if tbl.NumEdges() != rows {
			b.Fatalf("%d edges", tbl.NumEdges())
		}
		tbl.Release()
	}
}

// The footer's messages name a column as others do: a long name cut short
// (they showed it whole).
func TestParquetFooterMessagesShort(t *testing.T) {
	long := strings.Repeat("s", 1000)
	schema := arrow.NewSchema([]arrow.Field{{Name: long, Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{2, 3}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	rec.Release()
	path := edgetest.WriteParquet(t, t.TempDir(), "long.parquet", tbl, edgetest.DefaultParquetWrite)
	tbl.Release()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := openFile(path, f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	// A footer that counts a value too many in the column.
	pf.Metadata().RowGroups[0].Columns[0].MetaData.NumValues++
	r := &reader{ctx: context.Background(), name: path, file: f, size: st.Size(), opts: edges.Options{Columns: edges.Columns{Src: long}.WithDefaults()}}
	if _, err = r.resolve(pf); err == nil {
		_, err = r.planGroups(pf)
	}
	edgetest.UserErr(t, err, path, `row group 0 has 2 rows but 3 values in column "`+strings.Repeat("s", 60)+`..."`)
	if len(err.Error()) > 400 {
		t.Errorf("message of %d bytes: %v", len(err.Error()), err)
	}
}

// A footer whose schema's child counts do not make a tree (a count flipped
// negative, a leaf with children, a row group with a column chunk too few)
// is refused in words: parquet-go panicked on some ("runtime error: slice
// bounds out of range [::-2]"), and the message showed that.
func TestParquetSchemaTree(t *testing.T) {
	dir := t.TempDir()
	path, valid, _ := validFile(t, dir, pqcompress.Codecs.Snappy)
	size := len(valid)
	flen := int(binary.LittleEndian.Uint32(valid[size-8:]))
	for name, damage := range map[string]func(m *format.FileMetaData){
		"negative count":  func(m *format.FileMetaData) { m.Schema[0].NumChildren.V = -2 },
		"leaf's children": func(m *format.FileMetaData) { m.Schema[1].NumChildren = thrift.New[int32](1) },
		"too many":        func(m *format.FileMetaData) { m.Schema[0].NumChildren.V += 3 },
		"chunk missing":   func(m *format.FileMetaData) { m.RowGroups[1].Columns = m.RowGroups[1].Columns[1:] },
	} {
		var proto thrift.CompactProtocol
		var meta format.FileMetaData
		if err := thrift.Unmarshal(&proto, valid[size-8-flen:size-8], &meta); err != nil {
			t.Fatal(err)
		}
		damage(&meta)
		footer, err := thrift.Marshal(&proto, &meta)
		if err != nil {
			t.Fatal(err)
		}
		bad := append(bytes.Clone(valid[:size-8-flen]), footer...)
		bad = binary.LittleEndian.AppendUint32(bad, uint32(len(footer)))
		writeBytes(t, path, append(bad, "PAR1"...))
		ue := readErr(t, path, edges.Options{})
		if !strings.Contains(ue.Error(), "the Parquet footer is corrupt (") || strings.Contains(ue.Error(), "runtime error") {
			t.Errorf("%s: %v", name, ue)
		}
	}
}
