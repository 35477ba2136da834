package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// The tests of the Parquet writer read every file back with three readers:
// Arrow's (pqarrow, which also judges the statistics), parquet-go's (row by
// row, and the footer's statistics byte by byte) and, for edge tables,
// gpipe's own (ingest/parquet, in parquet_ingest_test.go). DuckDB and
// pyarrow read the committed files of testdata/parquet-writer
// (parquet_fixtures_test.go).

// pqCol is one column of a test table: its field and row i's value, nil
// for a null; values are int32, uint32, int64, uint64, float32, float64,
// string or []byte.
type pqCol struct {
	field arrow.Field
	value func(i int) any
}

// mix is a hash of i and seed (splitmix64), the tables' randomness.
func mix(seed uint64, i int) uint64 {
	z := seed + uint64(i)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// allTypeColumns is a column of every type the parallel writer encodes,
// with card distinct values or so each (small: dictionary encoded; large:
// plain), nulls scattered and in runs of 64, and the awkward values of each
// type: extremes, NaN, infinities, -0, empty and non-ASCII strings.
func allTypeColumns(card int, seed uint64) []pqCol {
	null := func(c, i int) bool {
		h := mix(seed+uint64(c)*101, i)
		return h%5 == 0 || (i/64)%11 == 3+c%4
	}
	pick := func(c, i int) uint64 { return mix(seed+uint64(c)*977, i) % uint64(card) }
	nullable := func(c int, f func(i int) any) func(i int) any {
		return func(i int) any {
			if null(c, i) {
				return nil
			}
			return f(i)
		}
	}
	dictStr := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	dictI64 := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.PrimitiveTypes.Int64}
	str := func(c int) func(i int) any {
		return func(i int) any {
			switch v := pick(c, i); {
			case i%97 == 5:
				return ""
			case v%13 == 1:
				return "ключ-" + strconv.FormatUint(v, 10)
			default:
				return "v" + strconv.FormatUint(v, 10)
			}
		}
	}
	bin := func(c int) func(i int) any {
		return func(i int) any {
			v := pick(c, i)
			return []byte{0, byte(v), 0xFF, byte(v >> 8), byte(v >> 16)}[:1+v%5]
		}
	}
	cols := []pqCol{
		{arrow.Field{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, func(i int) any {
			switch i % 1000 {
			case 7:
				return int32(math.MinInt32)
			case 8:
				return int32(math.MaxInt32)
			}
			return int32(pick(0, i)) - int32(card/2)
		}},
		{arrow.Field{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true}, func(i int) any {
			if i%1000 == 9 {
				return uint32(math.MaxUint32)
			}
			return uint32(pick(1, i))
		}},
		{arrow.Field{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, func(i int) any {
			if i%1000 == 10 {
				return int64(math.MinInt64)
			}
			return int64(pick(2, i))*1_000_000_007 - 3
		}},
		{arrow.Field{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true}, func(i int) any {
			// Above 2^63: the unsigned order is not the signed one.
			return uint64(pick(3, i)) + 1<<63 - uint64(card/2)
		}},
		{arrow.Field{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true}, func(i int) any {
			switch i % 500 {
			case 1:
				return float32(math.NaN())
			case 2:
				return float32(math.Inf(-1))
			case 3:
				return float32(math.Copysign(0, -1))
			}
			return float32(pick(4, i)) / 8
		}},
		{arrow.Field{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, func(i int) any {
			switch i % 500 {
			case 4:
				return math.NaN()
			case 5:
				return math.Inf(1)
			case 6:
				return math.Copysign(0, -1)
			}
			return float64(pick(5, i))/3 - 7
		}},
		{arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, str(6)},
		{arrow.Field{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true}, str(7)},
		{arrow.Field{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true}, bin(8)},
		{arrow.Field{Name: "lb", Type: arrow.BinaryTypes.LargeBinary, Nullable: true}, bin(9)},
		{arrow.Field{Name: "ds", Type: dictStr, Nullable: true}, str(10)},
		{arrow.Field{Name: "di", Type: dictI64, Nullable: true}, func(i int) any { return int64(pick(11, i)) << 20 }},
		{arrow.Field{Name: "req", Type: arrow.PrimitiveTypes.Int64}, func(i int) any { return int64(pick(12, i)) }},
		{arrow.Field{Name: "reqs", Type: arrow.BinaryTypes.String}, str(13)},
	}
	for c := range cols {
		if cols[c].field.Nullable {
			cols[c].value = nullable(c, cols[c].value)
		}
	}
	return cols
}

// buildRecord makes rows rows of cols.
func buildRecord(mem memory.Allocator, cols []pqCol, rows int) arrow.RecordBatch {
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for c, col := range cols {
		fields[c] = col.field
		b := array.NewBuilder(mem, col.field.Type)
		for i := 0; i < rows; i++ {
			appendValue(b, col.value(i))
		}
		arrs[c] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(rows))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Uint32Builder:
		bb.Append(v.(uint32))
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.Uint64Builder:
		bb.Append(v.(uint64))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.LargeStringBuilder:
		bb.Append(v.(string))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.BinaryDictionaryBuilder:
		if err := bb.AppendString(v.(string)); err != nil {
			panic(err)
		}
	case *array.Int64DictionaryBuilder:
		if err := bb.Append(v.(int64)); err != nil {
			panic(err)
		}
	default:
		panic(fmt.Sprintf("no append for %T", b))
	}
}

// cell is row i of arr as the value makers give it (nil for null), the
// value of a dictionary array's index.
func cell(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int32:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.Dictionary:
		return cell(a.Dictionary(), a.GetValueIndex(i))
	}
	panic(fmt.Sprintf("no cell for %T", arr))
}

// sameValue compares two cells: floats by their bits, any NaN equal to any
// other, so that -0 and +0 differ.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float32:
		y, ok := b.(float32)
		return ok && (math.Float32bits(x) == math.Float32bits(y) || x != x && y != y)
	case float64:
		y, ok := b.(float64)
		return ok && (math.Float64bits(x) == math.Float64bits(y) || x != x && y != y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return a == b
}

// pqCase is a table written through the sink in pieces of the given sizes
// (cycled), with the given options.
type pqCase struct {
	name   string
	rows   int
	card   int
	pieces []int
	opts   Options
	cols   []int // indexes into allTypeColumns; nil: all
	extra  []pqCol
	// encoding is what the chunks of the first encCols columns (at least
	// one) must be: "dict" (all dictionary encoded), "plain" (no
	// dictionary page); pages the least number of data pages in each.
	encoding string
	encCols  int
	pages    int
}

func (c pqCase) columns() []pqCol {
	all := allTypeColumns(c.card, uint64(len(c.name)))
	if c.cols == nil {
		return append(c.extra, all...)
	}
	cols := c.extra
	for _, j := range c.cols {
		cols = append(cols, all[j])
	}
	return cols
}

// writePieces writes rec to path through Create and Write, pieces rows at a
// time (cycling through the sizes; 0 writes an empty slice).
func writePieces(t *testing.T, path string, rec arrow.RecordBatch, pieces []int, opts Options) {
	t.Helper()
	w, err := Create(path, rec.Schema(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	n := rec.NumRows()
	for off, k := int64(0), 0; off < n || k == 0; k++ {
		size := int64(1 << 30)
		if len(pieces) > 0 {
			size = int64(pieces[k%len(pieces)])
		}
		s := rec.NewSlice(off, min(off+size, n))
		err := w.Write(s)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		off = min(off+size, n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

var pqCases = []pqCase{
	{name: "empty", rows: 0, card: 10},
	{name: "one row", rows: 1, card: 10},
	{name: "dictionary", rows: 5000, card: 50, pieces: []int{333, 0, 1000, 17}, opts: Options{BatchRows: 1000}, encoding: "dict", pages: 1},
	{name: "many row groups", rows: 1000, card: 10, pieces: []int{3, 64, 5}, opts: Options{BatchRows: 7}},
	{name: "plain", rows: 40000, card: 1 << 40, pieces: []int{4096}, opts: Options{BatchRows: 20000},
		cols: []int{12, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13}, encoding: "plain", pages: 1},
	{name: "snappy", rows: 3000, card: 1 << 30, opts: Options{BatchRows: 1000, Compression: "snappy"}},
	{name: "gzip", rows: 3000, card: 100, opts: Options{BatchRows: 1000, Compression: "gzip"}},
	{name: "none", rows: 3000, card: 1 << 30, opts: Options{BatchRows: 1000, Compression: "none"}},
	// Pages: 1 MiB of int64 is 131072 rows; the strings cut by bytes.
	{name: "pages", rows: 300000, card: 1 << 40, pieces: []int{65536}, cols: []int{2, 5, 6, 12}, encoding: "plain", pages: 3},
	// Dictionaries that outgrow 1 MiB: repeats first (so that the probe
	// goes on), then 200000 distinct int64, or strings.
	{name: "dictionary limit", rows: 400000, card: 200000, cols: []int{6}, encoding: "plain", encCols: 2, pages: 2, extra: []pqCol{
		{arrow.Field{Name: "late", Type: arrow.PrimitiveTypes.Int64}, func(i int) any { return int64(max(i%100, i-10000)) }},
		{arrow.Field{Name: "lates", Type: arrow.BinaryTypes.String, Nullable: true}, func(i int) any {
			if i%3 == 0 {
				return nil
			}
			return "s" + strconv.Itoa(max(i%100, i-10000))
		}},
	}},
	{name: "dictionary pages", rows: 400000, card: 5000, cols: []int{6, 12}, encoding: "dict", pages: 2},
}

func TestParquetWriterReaders(t *testing.T) {
	for _, c := range pqCases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			rec := buildRecord(mem, c.columns(), c.rows)
			defer rec.Release()
			path := filepath.Join(t.TempDir(), "t.parquet")
			writePieces(t, path, rec, c.pieces, c.opts)

			group := int64(c.opts.BatchRows)
			if group == 0 {
				group = DefaultParquetRowGroup
			}
			var want []int64
			for lo := int64(0); lo < rec.NumRows(); lo += group {
				want = append(want, min(group, rec.NumRows()-lo))
			}
			got, pf := readParquet(t, path)
			if sizes := batchSizes(got); c.rows > 0 && !equalSizes(sizes, want) {
				t.Errorf("row groups of %v rows, want %v", sizes, want)
			}
			checkCells(t, "pqarrow", rec, got)
			checkArrowStats(t, pf)
			checkWithParquetGo(t, path, rec, want)
			if c.encoding != "" {
				checkEncoding(t, path, max(1, c.encCols), c.encoding, c.pages)
			}
		})
	}
}

// checkEncoding checks the encoding of the chunks of the first cols
// columns and their least number of data pages.
func checkEncoding(t *testing.T, path string, cols int, encoding string, pages int) {
	t.Helper()
	md := openParquetGo(t, path).Metadata()
	for g, rg := range md.RowGroups {
		for j := range cols {
			cm := rg.Columns[j].MetaData
			dict := cm.DictionaryPageOffset != 0
			if dict != (encoding == "dict") {
				t.Errorf("row group %d column %d: dictionary page %v, want %s encoding (%v)", g, j, dict, encoding, cm.EncodingStats)
			}
			for _, es := range cm.EncodingStats {
				if es.PageType == format.DataPage && int(es.Count) < pages {
					t.Errorf("row group %d column %d: %d data pages, want %d or more", g, j, es.Count, pages)
				}
			}
		}
	}
}

// openParquetGo opens path with parquet-go.
func openParquetGo(t *testing.T, path string) *pq.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pq.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatalf("parquet-go: %v", err)
	}
	return pf
}

// checkCells compares records read back with want, cell by cell, and the
// schema (names, types, nullability) as ARROW:schema gives it back.
func checkCells(t *testing.T, reader string, want arrow.RecordBatch, got []arrow.RecordBatch) {
	t.Helper()
	if len(got) > 0 && !sameReadFields(got[0].Schema(), want.Schema()) {
		t.Fatalf("%s: schema read back:\n%s\nwant:\n%s", reader, got[0].Schema(), want.Schema())
	}
	for j := 0; j < int(want.NumCols()); j++ {
		row := 0
		bad := 0
		for _, r := range got {
			col := r.Column(j)
			for i := 0; i < col.Len(); i++ {
				if w, g := cell(want.Column(j), row), cell(col, i); !sameValue(w, g) && bad < 3 {
					t.Errorf("%s: column %s row %d: %v, want %v", reader, want.ColumnName(j), row, g, w)
					bad++
				}
				row++
			}
		}
		if row != int(want.NumRows()) {
			t.Errorf("%s: column %s: %d rows, want %d", reader, want.ColumnName(j), row, want.NumRows())
		}
	}
}

// sameReadFields is sameFields, but for a dictionary of numbers, which
// Arrow's readers (Go and C++) read back as its values: they make
// dictionaries of strings and binaries only.
func sameReadFields(got, want *arrow.Schema) bool {
	fields := want.Fields()
	for i, f := range fields {
		if d, ok := f.Type.(*arrow.DictionaryType); ok && !arrow.IsBaseBinary(d.ValueType.ID()) {
			fields[i].Type = d.ValueType
		}
	}
	return sameFields(got, arrow.NewSchema(fields, nil))
}

// checkArrowStats checks that Arrow's reader takes every chunk's
// statistics as valid (it drops those of writers it knows to be wrong).
func checkArrowStats(t *testing.T, pf *file.Reader) {
	t.Helper()
	md := pf.MetaData()
	for g := 0; g < pf.NumRowGroups(); g++ {
		for j := 0; j < md.Schema.NumColumns(); j++ {
			cc, err := md.RowGroup(g).ColumnChunk(j)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := cc.StatsSet(); !ok || err != nil {
				t.Errorf("row group %d column %d: Arrow ignores the statistics (%v)", g, j, err)
			}
			if cc.Compression() == compress.Codecs.Lz4 {
				t.Errorf("row group %d column %d: lz4", g, j)
			}
		}
	}
}

// checkWithParquetGo reads path with parquet-go, row by row, compares the
// cells with want and every chunk's statistics with those of its rows.
func checkWithParquetGo(t *testing.T, path string, want arrow.RecordBatch, groups []int64) {
	t.Helper()
	pf := openParquetGo(t, path)
	if pf.NumRows() != want.NumRows() {
		t.Fatalf("parquet-go: %d rows, want %d", pf.NumRows(), want.NumRows())
	}
	if len(pf.RowGroups()) != len(groups) {
		t.Fatalf("parquet-go: %d row groups, want %d", len(pf.RowGroups()), len(groups))
	}
	row := 0
	buf := make([]pq.Row, 256)
	for g, rg := range pf.RowGroups() {
		first := row
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				if len(r) != int(want.NumCols()) {
					t.Fatalf("parquet-go: row %d has %d values", row, len(r))
				}
				for j, v := range r {
					w := cell(want.Column(j), row)
					if g := pqGoCell(v, want.Column(j).DataType()); !sameValue(w, g) {
						t.Fatalf("parquet-go: column %s row %d: %v, want %v", want.ColumnName(j), row, g, w)
					}
				}
				row++
			}
			if err != nil {
				break
			}
		}
		rows.Close()
		if int64(row-first) != groups[g] {
			t.Fatalf("parquet-go: row group %d has %d rows, want %d", g, row-first, groups[g])
		}
		for j, cc := range pf.Metadata().RowGroups[g].Columns {
			checkChunkStats(t, g, want.Column(j), first, row, cc.MetaData.Statistics)
		}
	}
	if row != int(want.NumRows()) {
		t.Fatalf("parquet-go: %d rows read, want %d", row, want.NumRows())
	}
}

// pqGoCell is a parquet-go value as a cell of an Arrow column of type dt.
func pqGoCell(v pq.Value, dt arrow.DataType) any {
	if v.IsNull() {
		return nil
	}
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.INT32:
		return v.Int32()
	case arrow.UINT32:
		return v.Uint32()
	case arrow.INT64:
		return v.Int64()
	case arrow.UINT64:
		return v.Uint64()
	case arrow.FLOAT32:
		return v.Float()
	case arrow.FLOAT64:
		return v.Double()
	case arrow.STRING, arrow.LARGE_STRING:
		return string(v.ByteArray())
	}
	return append([]byte{}, v.ByteArray()...)
}

// checkChunkStats compares a chunk's statistics with rows [lo, hi) of col:
// the null count, and min and max PLAIN-encoded in the order of the
// column's type (NaN left out, a zero min written -0 and a zero max +0),
// in the deprecated fields too where that order is signed.
func checkChunkStats(t *testing.T, g int, col arrow.Array, lo, hi int, st format.Statistics) {
	t.Helper()
	var nulls int64
	var vals []any
	for i := lo; i < hi; i++ {
		v := cell(col, i)
		switch x := v.(type) {
		case nil:
			nulls++
			continue
		case float32:
			if x != x {
				continue
			}
		case float64:
			if x != x {
				continue
			}
		}
		vals = append(vals, v)
	}
	name := col.DataType().String()
	if st.NullCount != nulls {
		t.Errorf("row group %d %s: null count %d, want %d", g, name, st.NullCount, nulls)
	}
	if len(vals) == 0 {
		if st.MinValue != nil || st.MaxValue != nil {
			t.Errorf("row group %d %s: min %x max %x of no values", g, name, st.MinValue, st.MaxValue)
		}
		return
	}
	lo_, hi_ := vals[0], vals[0]
	for _, v := range vals[1:] {
		if less(v, lo_) {
			lo_ = v
		}
		if less(hi_, v) {
			hi_ = v
		}
	}
	signed := true
	switch x := lo_.(type) {
	case float32:
		if x == 0 {
			lo_ = float32(math.Copysign(0, -1))
		}
	case float64:
		if x == 0 {
			lo_ = math.Copysign(0, -1)
		}
	case uint32, uint64, string, []byte:
		signed = false
	}
	switch x := hi_.(type) {
	case float32:
		if x == 0 {
			hi_ = float32(0)
		}
	case float64:
		if x == 0 {
			hi_ = float64(0)
		}
	}
	wantMin, wantMax := plain(lo_), plain(hi_)
	if !bytes.Equal(st.MinValue, wantMin) || !bytes.Equal(st.MaxValue, wantMax) {
		t.Errorf("row group %d %s: min_value %x max_value %x, want %x %x", g, name, st.MinValue, st.MaxValue, wantMin, wantMax)
	}
	if signed && (!bytes.Equal(st.Min, wantMin) || !bytes.Equal(st.Max, wantMax)) {
		t.Errorf("row group %d %s: min %x max %x, want %x %x", g, name, st.Min, st.Max, wantMin, wantMax)
	}
	if !signed && (st.Min != nil || st.Max != nil) {
		t.Errorf("row group %d %s: deprecated min/max set for an unsigned order", g, name)
	}
}

// less orders cells of one column by the order of its Parquet type.
func less(a, b any) bool {
	switch x := a.(type) {
	case int32:
		return x < b.(int32)
	case uint32:
		return x < b.(uint32)
	case int64:
		return x < b.(int64)
	case uint64:
		return x < b.(uint64)
	case float32:
		return x < b.(float32)
	case float64:
		return x < b.(float64)
	case string:
		return x < b.(string)
	case []byte:
		return bytes.Compare(x, b.([]byte)) < 0
	}
	panic(fmt.Sprintf("less: %T", a))
}

// plain is a cell's PLAIN encoding without a length: what statistics hold.
func plain(v any) []byte {
	switch x := v.(type) {
	case int32:
		return binary.LittleEndian.AppendUint32(nil, uint32(x))
	case uint32:
		return binary.LittleEndian.AppendUint32(nil, x)
	case int64:
		return binary.LittleEndian.AppendUint64(nil, uint64(x))
	case uint64:
		return binary.LittleEndian.AppendUint64(nil, x)
	case float32:
		return binary.LittleEndian.AppendUint32(nil, math.Float32bits(x))
	case float64:
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(x))
	case string:
		return []byte(x)
	case []byte:
		return x
	}
	panic(fmt.Sprintf("plain: %T", v))
}

func TestParquetWriterWholeRecord(t *testing.T) {
	// WriteRecord, as the result writer and examples use it.
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := buildRecord(mem, allTypeColumns(30, 7), 2500)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "w.parquet")
	if err := WriteRecord(context.Background(), path, rec, Options{BatchRows: 1024}); err != nil {
		t.Fatal(err)
	}
	got, _ := readParquet(t, path)
	checkCells(t, "pqarrow", rec, got)
	checkWithParquetGo(t, path, rec, []int64{1024, 1024, 452})
}

func TestParquetWriterOtherTypes(t *testing.T) {
	// Types package pqwrite leaves to Arrow's writer: written all the same.
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "at", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.BooleanBuilder).AppendValues([]bool{true, false, true}, []bool{true, true, false})
	b.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1, 2, 3}, []bool{false, true, true})
	b.Field(2).(*array.Int64Builder).AppendValues([]int64{7, 8, 9}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "o.parquet")
	if err := WriteRecord(context.Background(), path, rec, Options{}); err != nil {
		t.Fatal(err)
	}
	got, _ := readParquet(t, path)
	checkRecords(t, rec, got)
}

func TestParquetWriterCanceledMidway(t *testing.T) {
	// Rows made while earlier row groups are encoding, then a cancel: the
	// error is the context's, nothing is left, every batch is released.
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	cols := allTypeColumns(100, 5)
	rec := buildRecord(mem, cols, 5000)
	defer rec.Release()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batches := 0
	err := WriteRows(ctx, filepath.Join(dir, "c.parquet"), rec.Schema(), rec.NumRows(), func(lo, hi int64) arrow.RecordBatch {
		if batches++; batches == 3 {
			cancel()
		}
		// A copy, so that only the writer holds it once WriteRows lets go.
		b := buildRecord(mem, cols, int(hi))
		defer b.Release()
		return b.NewSlice(lo, hi)
	}, Options{BatchRows: 1000})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("left %v", names)
	}
}

func TestParquetWriterRandomShapes(t *testing.T) {
	// Row groups, pieces and cardinalities at random: pages that cross the
	// record slices' boundaries, validity bitmaps at odd offsets.
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 25 {
		c := pqCase{
			name: fmt.Sprintf("random %d", trial),
			rows: rng.IntN(3000),
			card: []int{1, 3, 300, 1 << 40}[rng.IntN(4)],
			opts: Options{BatchRows: 1 + rng.IntN(1500), Compression: []string{"zstd", "snappy", "none"}[rng.IntN(3)]},
		}
		for range 1 + rng.IntN(3) {
			c.pieces = append(c.pieces, 1+rng.IntN(700))
		}
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		rec := buildRecord(mem, c.columns(), c.rows)
		path := filepath.Join(t.TempDir(), "r.parquet")
		writePieces(t, path, rec, c.pieces, c.opts)
		var want []int64
		for lo := 0; lo < c.rows; lo += c.opts.BatchRows {
			want = append(want, int64(min(c.opts.BatchRows, c.rows-lo)))
		}
		got, pf := readParquet(t, path)
		checkCells(t, c.name, rec, got)
		checkArrowStats(t, pf)
		checkWithParquetGo(t, path, rec, want)
		for _, r := range got {
			r.Release()
		}
		rec.Release()
		mem.AssertSize(t, 0)
	}
}
