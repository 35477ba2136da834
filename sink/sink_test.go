package sink

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/gpipe/gpipe/internal/usererr"
)

// testSchema is the schema of testRecord.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// testRecord has nulls in every column, extreme integers, +-Inf, NaN, -0,
// empty strings and strings that need quotes in CSV.
func testRecord(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	valid := func(nulls ...int) []bool {
		v := make([]bool, 10)
		for i := range v {
			v[i] = true
		}
		for _, i := range nulls {
			v[i] = false
		}
		return v
	}
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, -2, 0, math.MaxInt32, math.MinInt32, 0, 7, 0, 9, 10}, valid(2, 7))
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1 << 40, -1, 0, math.MaxInt64, math.MinInt64, 0, 7, 8, 9, 10}, valid(2))
	b.Field(2).(*array.Uint32Builder).AppendValues([]uint32{0, math.MaxUint32, 0, 7, 8, 9, 0, 11, 12, 13}, valid(2, 6))
	b.Field(3).(*array.Uint64Builder).AppendValues([]uint64{0, math.MaxUint64, 0, 7, 8, 9, 10, 0, 12, 13}, valid(2, 7))
	b.Field(4).(*array.StringBuilder).AppendValues([]string{"a", "", "", "has,comma", `say "hi"`, "line\nbreak", " lead", "plain", "ünï", "tab\t"}, valid(2))
	b.Field(5).(*array.LargeStringBuilder).AppendValues([]string{"a", "", "", "x", `"`, "crlf\r\n", "trail ", "", "", "z"}, valid(2, 7))
	b.Field(6).(*array.Float64Builder).AppendValues([]float64{1.5, math.Inf(1), math.NaN(), 0, math.Inf(-1), 0.1, 1e-7, 1e21, math.Copysign(0, -1), 123456789.125}, valid(3))
	return b.NewRecordBatch()
}

// testCSV is testRecord as CSV.
const testCSV = "i32,i64,u32,u64,s,ls,f\n" +
	"1,1099511627776,0,0,a,a,1.5\n" +
	`-2,-1,4294967295,18446744073709551615,"","",inf` + "\n" +
	",,,,,,nan\n" +
	`2147483647,9223372036854775807,7,7,"has,comma",x,` + "\n" +
	`-2147483648,-9223372036854775808,8,8,"say ""hi""","""",-inf` + "\n" +
	"0,0,9,9,\"line\nbreak\",\"crlf\r\n\",0.1\n" +
	`7,7,,10," lead","trail ",1e-07` + "\n" +
	",8,11,,plain,,1e+21\n" +
	`9,9,12,12,ünï,"",-0` + "\n" +
	"10,10,13,13,\"tab\t\",z,1.23456789125e+08\n"

// writeInTwo writes rec through a writer with BatchRows 3 in two Write calls
// (rows 0-3 and 4-9), so batches are 3,1,3,3 and row groups 3,3,3,1.
func writeInTwo(t *testing.T, path string, rec arrow.RecordBatch, opts Options) {
	t.Helper()
	opts.BatchRows = 3
	w, err := Create(path, rec.Schema(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, r := range [][2]int64{{0, 4}, {4, rec.NumRows()}} {
		s := rec.NewSlice(r[0], r[1])
		err := w.Write(s)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkRecords compares records read back with want, column by column.
func checkRecords(t *testing.T, want arrow.RecordBatch, got []arrow.RecordBatch) {
	t.Helper()
	if len(got) == 0 {
		if want.NumRows() != 0 {
			t.Fatalf("no records read back, want %d rows", want.NumRows())
		}
		return
	}
	if !sameFields(got[0].Schema(), want.Schema()) {
		t.Fatalf("schema read back:\n%s\nwant:\n%s", got[0].Schema(), want.Schema())
	}
	for j := 0; j < int(want.NumCols()); j++ {
		chunks := make([]arrow.Array, len(got))
		for i, r := range got {
			chunks[i] = r.Column(j)
		}
		col, err := array.Concatenate(chunks, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if !array.ApproxEqual(want.Column(j), col, array.WithNaNsEqual(true)) {
			t.Errorf("column %s read back:\n%v\nwant:\n%v", want.ColumnName(j), col, want.Column(j))
		}
		col.Release()
	}
}

// sameFields says whether two schemas have the same field names, types and
// nullability; unlike Schema.Equal it ignores field metadata (Parquet
// readers add PARQUET:field_id).
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Nullable != fb.Nullable || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

func batchSizes(recs []arrow.RecordBatch) []int64 {
	var n []int64
	for _, r := range recs {
		n = append(n, r.NumRows())
	}
	return n
}

func equalSizes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func readIPCFile(t *testing.T, path string) []arrow.RecordBatch {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	return recs
}

func readIPCStream(t *testing.T, data []byte) ([]arrow.RecordBatch, *arrow.Schema) {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var recs []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return recs, r.Schema()
}

// readParquet reads a Parquet file back with pqarrow; it returns the rows as
// one record per row group.
func readParquet(t *testing.T, path string) ([]arrow.RecordBatch, *file.Reader) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pf.Close() })
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	for g := 0; g < pf.NumRowGroups(); g++ {
		all := make([]int, pf.MetaData().Schema.NumColumns())
		for i := range all {
			all[i] = i
		}
		tbl, err := fr.ReadRowGroups(context.Background(), all, []int{g})
		if err != nil {
			t.Fatal(err)
		}
		cols := make([]arrow.Array, tbl.NumCols())
		for j := range cols {
			c, err := array.Concatenate(tbl.Column(j).Data().Chunks(), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			cols[j] = c
		}
		recs = append(recs, array.NewRecordBatch(tbl.Schema(), cols, tbl.NumRows()))
		tbl.Release()
	}
	if len(recs) == 0 {
		sc, err := fr.Schema()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, array.NewRecordBatch(sc, emptyColumns(sc), 0))
	}
	return recs, pf
}

func emptyColumns(sc *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, sc.NumFields())
	for i, f := range sc.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	return cols
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestParquetRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.parquet")
	writeInTwo(t, path, rec, Options{})

	got, pf := readParquet(t, path)
	if sizes := batchSizes(got); !equalSizes(sizes, []int64{3, 3, 3, 1}) {
		t.Errorf("row groups of %v rows, want [3 3 3 1]", sizes)
	}
	checkRecords(t, rec, got)
	cc, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Compression() != compress.Codecs.Zstd {
		t.Errorf("compression %v, want zstd", cc.Compression())
	}
	if ok, err := cc.StatsSet(); !ok || err != nil {
		t.Errorf("statistics not set (%v)", err)
	}
	if pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema") == nil {
		t.Error("no ARROW:schema in the file's metadata")
	}
}

func TestParquetCompressions(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	for name, want := range map[string]compress.Compression{
		"snappy": compress.Codecs.Snappy, "gzip": compress.Codecs.Gzip,
		"none": compress.Codecs.Uncompressed, "ZSTD": compress.Codecs.Zstd,
	} {
		path := filepath.Join(t.TempDir(), "out.pq")
		if err := WriteRecord(context.Background(), path, rec, Options{Compression: name}); err != nil {
			t.Fatal(err)
		}
		got, pf := readParquet(t, path)
		checkRecords(t, rec, got)
		cc, err := pf.MetaData().RowGroup(0).ColumnChunk(4)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Compression() != want {
			t.Errorf("%s: compression %v", name, cc.Compression())
		}
	}
}

func TestArrowFileRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()
	for _, name := range []string{"out.arrow", "out.feather", "out.IPC"} {
		path := filepath.Join(t.TempDir(), name)
		writeInTwo(t, path, rec, Options{})
		got := readIPCFile(t, path)
		if sizes := batchSizes(got); !equalSizes(sizes, []int64{3, 1, 3, 3}) {
			t.Errorf("%s: batches of %v rows, want [3 1 3 3]", name, sizes)
		}
		checkRecords(t, rec, got)
	}
}

func TestArrowStreamRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.arrows")
	writeInTwo(t, path, rec, Options{})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readIPCStream(t, data)
	if sizes := batchSizes(got); !equalSizes(sizes, []int64{3, 1, 3, 3}) {
		t.Errorf("batches of %v rows, want [3 1 3 3]", sizes)
	}
	checkRecords(t, rec, got)
}

func TestIPCCompression(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	for _, c := range []string{"zstd", "lz4"} {
		path := filepath.Join(t.TempDir(), "out.arrow")
		if err := WriteRecord(context.Background(), path, rec, Options{Compression: c}); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, rec, readIPCFile(t, path))
	}
}

// closeSpy is a standard output that must never be closed.
type closeSpy struct {
	bytes.Buffer
	closed bool
}

func (c *closeSpy) Close() error { c.closed = true; return nil }

func TestStdoutStream(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	var out closeSpy
	writeInTwo(t, "-", rec, Options{Stdout: &out})
	if out.closed {
		t.Error("standard output was closed")
	}
	got, sc := readIPCStream(t, out.Bytes())
	if !sc.Equal(testSchema) {
		t.Errorf("schema %s", sc)
	}
	if sizes := batchSizes(got); !equalSizes(sizes, []int64{3, 1, 3, 3}) {
		t.Errorf("batches of %v rows, want [3 1 3 3]", sizes)
	}
	checkRecords(t, rec, got)
}

func TestStdoutFlushedPerWrite(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	var out bytes.Buffer
	w, err := Create("-", rec.Schema(), Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	// The batch is readable before Close: a downstream tool sees it at once.
	r, err := ipc.NewReader(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() || r.RecordBatch().NumRows() != rec.NumRows() {
		t.Fatal("the first batch did not reach standard output before Close")
	}
	r.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStdoutOtherFormats(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	ctx := context.Background()

	var csvOut bytes.Buffer
	if err := WriteRecord(ctx, "-", rec, Options{Format: "csv", Stdout: &csvOut}); err != nil {
		t.Fatal(err)
	}
	if csvOut.String() != testCSV {
		t.Errorf("CSV on standard output:\n%q\nwant:\n%q", csvOut.String(), testCSV)
	}

	var fileOut bytes.Buffer
	if err := WriteRecord(ctx, "-", rec, Options{Format: "arrow", Stdout: &fileOut, BatchRows: 4}); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(fileOut.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var got []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		rec.Retain()
		got = append(got, rec)
	}
	r.Close()
	if sizes := batchSizes(got); !equalSizes(sizes, []int64{4, 4, 2}) {
		t.Errorf("batches of %v rows, want [4 4 2]", sizes)
	}
	checkRecords(t, rec, got)

	var pqOut bytes.Buffer
	if err := WriteRecord(ctx, "-", rec, Options{Format: "parquet", Stdout: &pqOut}); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(pqOut.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != rec.NumRows() {
		t.Errorf("parquet on standard output has %d rows", pf.NumRows())
	}
}

func TestZeroRows(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	empty := rec.NewSlice(0, 0)
	defer empty.Release()
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"z.parquet", "z.arrow", "z.arrows", "z.csv"} {
		for _, how := range []string{"record", "nothing"} {
			path := filepath.Join(dir, how+"-"+name)
			if how == "record" {
				if err := WriteRecord(ctx, path, empty, Options{}); err != nil {
					t.Fatal(err)
				}
			} else {
				w, err := Create(path, testSchema, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			var got []arrow.RecordBatch
			switch filepath.Ext(name) {
			case ".parquet":
				got, _ = readParquet(t, path)
			case ".arrow":
				got = readIPCFile(t, path)
			case ".arrows":
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var sc *arrow.Schema
				got, sc = readIPCStream(t, data)
				if !sc.Equal(testSchema) {
					t.Errorf("%s: schema %s", path, sc)
				}
			case ".csv":
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if string(data) != "i32,i64,u32,u64,s,ls,f\n" {
					t.Errorf("%s: %q", path, data)
				}
				continue
			}
			var n int64
			for _, r := range got {
				n += r.NumRows()
				if !sameFields(r.Schema(), testSchema) {
					t.Errorf("%s: schema %s", path, r.Schema())
				}
			}
			if n != 0 {
				t.Errorf("%s: %d rows", path, n)
			}
		}
	}
}

func TestWriteRecordBatches(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.arrow")
	if err := WriteRecord(context.Background(), path, rec, Options{BatchRows: 4}); err != nil {
		t.Fatal(err)
	}
	got := readIPCFile(t, path)
	if sizes := batchSizes(got); !equalSizes(sizes, []int64{4, 4, 2}) {
		t.Errorf("batches of %v rows, want [4 4 2]", sizes)
	}
	checkRecords(t, rec, got)
}

func TestWriteRecordCanceled(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WriteRecord(ctx, filepath.Join(dir, "out.parquet"), rec, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("left %v", names)
	}
}

func TestTempFileRenamedOnClose(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	for _, name := range []string{"out.parquet", "out.arrow", "out.arrows", "out.csv"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		w, err := Create(path, rec.Schema(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		names := dirEntries(t, dir)
		if len(names) != 1 || !strings.HasPrefix(names[0], "."+name+".tmp-") {
			t.Errorf("%s: while writing the directory holds %v, want one hidden temporary file", name, names)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if names := dirEntries(t, dir); len(names) != 1 || names[0] != name {
			t.Errorf("%s: after Close the directory holds %v", name, names)
		}
		if err := w.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		w.Abort() // after Close: does nothing
		if _, err := os.Stat(path); err != nil {
			t.Errorf("Abort after Close removed the output: %v", err)
		}
		if err := w.Write(rec); err == nil {
			t.Error("Write after Close succeeded")
		}
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "out.parquet"), rec.Schema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("after Abort the directory holds %v", names)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after Abort succeeded")
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("after Abort and Close the directory holds %v", names)
	}
}

func TestErrorLeavesNothingAndKeepsOldFile(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	other := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int8}}, nil),
		[]arrow.Array{array.MakeArrayOfNull(memory.DefaultAllocator, arrow.PrimitiveTypes.Int8, 1)}, 1)
	defer other.Release()
	for _, name := range []string{"out.parquet", "out.arrow", "out.arrows", "out.csv"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := Create(path, rec.Schema(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		werr := w.Write(other)
		if werr == nil {
			t.Fatalf("%s: writing a record of another schema succeeded", name)
		}
		if !strings.Contains(werr.Error(), path) {
			t.Errorf("%s: error %q does not name the output", name, werr)
		}
		if names := dirEntries(t, dir); len(names) != 1 || names[0] != name {
			t.Errorf("%s: after the error the directory holds %v", name, names)
		}
		if err := w.Close(); err != werr {
			t.Errorf("%s: Close = %v, want the Write error", name, err)
		}
		if data, _ := os.ReadFile(path); string(data) != "old" {
			t.Errorf("%s: the old file was changed: %q", name, data)
		}

		// A successful write replaces it and keeps its permissions.
		if err := WriteRecord(context.Background(), path, rec, Options{}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() <= 3 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: replaced file has size %d, mode %v", name, fi.Size(), fi.Mode())
		}
	}
}

func TestSymlinkOutput(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "target.csv")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	if err := WriteRecord(context.Background(), link, rec, Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced (%v)", err)
	}
	if data, _ := os.ReadFile(target); string(data) != testCSV {
		t.Errorf("target holds %q", data)
	}
}

func TestBadDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "missing", "out.parquet")
	_, err := Create(path, testSchema, Options{})
	if err == nil {
		t.Fatal("Create in a missing directory succeeded")
	}
	if usererr.KindOf(err) != usererr.Usage {
		t.Errorf("kind %v", usererr.KindOf(err))
	}
	msg := err.Error()
	for _, want := range []string{path, "no such file or directory", "check that the directory exists and is writable"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, ".tmp-") {
		t.Errorf("error %q names the temporary file", msg)
	}

	// An output that is a directory gets part files (dataset.go), but not
	// beside files gpipe did not write.
	sub := filepath.Join(dir, "out.csv")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(sub, testSchema, Options{}); err == nil || !strings.Contains(err.Error(), `holds "notes.txt", which gpipe did not write`) {
		t.Errorf("Create on a directory: %v", err)
	}
}

func TestDiskFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	for _, format := range []string{"csv", "parquet", "arrow", "arrows"} {
		err := WriteRecord(context.Background(), "/dev/full", rec, Options{Format: format})
		if err == nil {
			t.Fatalf("%s: writing to /dev/full succeeded", format)
		}
		msg := err.Error()
		for _, want := range []string{"/dev/full", "no space left on device", "free some space"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", format, msg, want)
			}
		}
		if usererr.KindOf(err) != usererr.Internal {
			t.Errorf("%s: kind %v", format, usererr.KindOf(err))
		}

		// Standard output on a full disk (> /dev/full) says the same, not
		// that the reader of a pipe went away.
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = WriteRecord(context.Background(), "-", rec, Options{Format: format, Stdout: full})
		full.Close()
		if err == nil || !strings.Contains(err.Error(), "free some space") || strings.Contains(err.Error(), "program reading") {
			t.Errorf("%s to a full standard output: %v", format, err)
		}
	}
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]string{
		"-": FormatArrowStream, "out.parquet": FormatParquet, "dir/OUT.PQ": FormatParquet,
		"a.arrow": FormatArrowFile, "a.feather": FormatArrowFile, "a.ipc": FormatArrowFile,
		"a.arrows": FormatArrowStream, "a.Csv": FormatCSV, "v1.2/x.csv": FormatCSV,
	} {
		got, err := FormatOf(path)
		if err != nil || got != want {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"out.txt", "out", "dir.v1/out", "out.json", ""} {
		_, err := FormatOf(path)
		if err == nil {
			t.Errorf("FormatOf(%q) succeeded", path)
			continue
		}
		if usererr.KindOf(err) != usererr.Usage {
			t.Errorf("FormatOf(%q): kind %v", path, usererr.KindOf(err))
		}
		if path != "" && !strings.Contains(err.Error(), ".parquet") || path != "" && !strings.Contains(err.Error(), ".arrows") {
			t.Errorf("FormatOf(%q): %q does not list the extensions", path, err)
		}
	}
}

func TestBadOptions(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		path string
		opts Options
	}{
		"format":         {"out.parquet", Options{Format: "json"}},
		"parquet codec":  {"out.parquet", Options{Compression: "lz4"}},
		"ipc codec":      {"out.arrow", Options{Compression: "snappy"}},
		"csv codec":      {"out.csv", Options{Compression: "zstd"}},
		"batch rows":     {"out.arrow", Options{BatchRows: -1}},
		"extension":      {"out.txt", Options{}},
		"empty path":     {"", Options{Format: "csv"}},
		"csv list type":  {"list.csv", Options{}},
		"parquet format": {"out.dat", Options{Format: "PQ", Compression: "brotli"}},
	} {
		schema := testSchema
		if name == "csv list type" {
			schema = arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}}, nil)
		}
		path := c.path
		if path != "" {
			path = filepath.Join(dir, path)
		}
		// Check finds the same problems, but for the column types.
		if err := Check(path, c.opts); name != "csv list type" && usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s: Check: %v", name, err)
		}
		_, err := Create(path, schema, c.opts)
		if err == nil {
			t.Errorf("%s: Create succeeded", name)
			continue
		}
		if usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%s: kind %v (%v)", name, usererr.KindOf(err), err)
		}
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("bad options left %v", names)
	}
	// Format names are accepted as extensions without the dot too.
	for _, f := range []string{"parquet", "pq", "arrow", "feather", "ipc", "arrows", "CSV"} {
		if err := Check(filepath.Join(dir, "x.out"), Options{Format: f}); err != nil {
			t.Errorf("format %q: Check: %v", f, err)
		}
		w, err := Create(filepath.Join(dir, "x.out"), testSchema, Options{Format: f})
		if err != nil {
			t.Errorf("format %q: %v", f, err)
			continue
		}
		w.Abort()
	}
}
