package parquet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/usererr"
)

// The tests write Parquet files with Arrow's Go writer (pqarrow), a writer
// other than the parquet-go library the reader uses, from random tables with
// fixed seeds, and compare every value read with the value written.

// colData is one column of a generated table: its Arrow type and its values
// (nil for null), typed as keyOf returns them for key columns.
type colData struct {
	name   string
	typ    arrow.DataType
	values []any
}

// arrowTable builds an Arrow table of the columns, in order.
func arrowTable(t testing.TB, rows int, cols []colData, nullable bool) arrow.Table {
	t.Helper()
	mem := memory.NewGoAllocator()
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		hasNull := false
		for _, v := range c.values {
			hasNull = hasNull || v == nil
		}
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: nullable || hasNull}
		b := array.NewBuilder(mem, c.typ)
		for _, v := range c.values {
			appendValue(t, b, v)
		}
		arrs[i] = b.NewArray()
		b.Release()
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, arrs, int64(rows))
	for _, a := range arrs {
		a.Release()
	}
	defer rec.Release()
	return array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
}

func appendValue(t testing.TB, b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(v.(uint8))
	case *array.Uint16Builder:
		b.Append(v.(uint16))
	case *array.Uint32Builder:
		b.Append(v.(uint32))
	case *array.Uint64Builder:
		b.Append(v.(uint64))
	case *array.Float16Builder:
		b.Append(v.(float16.Num))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append([]byte(v.(string)))
	case *array.BinaryDictionaryBuilder:
		if err := b.AppendString(v.(string)); err != nil {
			t.Fatal(err)
		}
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int32)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(int64)))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(v.(int64)))
	case *array.FixedSizeBinaryBuilder:
		b.Append([]byte(v.(string)))
	case *array.StructBuilder:
		// {a int32, b list<int64>}, from an int64.
		x := v.(int64)
		b.Append(true)
		b.FieldBuilder(0).(*array.Int32Builder).Append(int32(x))
		lb := b.FieldBuilder(1).(*array.ListBuilder)
		lb.Append(true)
		for j := int64(0); j < x%3; j++ {
			lb.ValueBuilder().(*array.Int64Builder).Append(x + j)
		}
	case *array.ListBuilder:
		// list<string>, from an int64.
		x := v.(int64)
		b.Append(true)
		for j := int64(0); j < x%4; j++ {
			b.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("t%d", x+j))
		}
	default:
		t.Fatalf("no appender for %T", b)
	}
}

var (
	structType = arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "b", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	)
	listType       = arrow.ListOf(arrow.BinaryTypes.String)
	dictStringType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
)

// keyTypes are the key column types the reader accepts, by test name.
var keyTypes = []struct {
	name string
	typ  arrow.DataType
	key  edges.KeyType
}{
	{"int32", arrow.PrimitiveTypes.Int32, edges.KeyInt32},
	{"int64", arrow.PrimitiveTypes.Int64, edges.KeyInt64},
	{"uint32", arrow.PrimitiveTypes.Uint32, edges.KeyUint32},
	{"uint64", arrow.PrimitiveTypes.Uint64, edges.KeyUint64},
	{"string", arrow.BinaryTypes.String, edges.KeyString},
	{"large_string", arrow.BinaryTypes.LargeString, edges.KeyString},
	{"dictionary", dictStringType, edges.KeyString},
}

// randomValue draws a value of type typ. Integers cover their whole range,
// with repeats (vertex keys repeat) from a pool of pool values.
func randomValue(rng *rand.Rand, typ arrow.DataType, pool int) any {
	x := rng.Uint64N(uint64(pool))
	spread := x * 0x9e3779b97f4a7c15 // distinct pool entries, all bits
	switch typ.ID() {
	case arrow.INT8:
		return int8(spread)
	case arrow.INT16:
		return int16(spread)
	case arrow.INT32:
		return int32(spread)
	case arrow.INT64:
		return int64(spread)
	case arrow.UINT8:
		return uint8(spread)
	case arrow.UINT16:
		return uint16(spread)
	case arrow.UINT32:
		return uint32(spread)
	case arrow.UINT64:
		return spread
	case arrow.FLOAT16:
		return float16.New(float32(int64(spread)>>54) / 4)
	case arrow.FLOAT32:
		return float32(int64(spread)>>40) / 8
	case arrow.FLOAT64:
		return float64(int64(spread)>>20) / 1024
	case arrow.BOOL:
		return x%2 == 0
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.DICTIONARY:
		if x%17 == 0 {
			return "" // empty strings are keys too
		}
		return fmt.Sprintf("v%d-%s", x, strings.Repeat("x", int(x%7)))
	case arrow.TIMESTAMP, arrow.TIME64:
		return int64(x) * 1000
	case arrow.DATE32:
		return int32(x)
	case arrow.DECIMAL128:
		return int64(x)
	case arrow.FIXED_SIZE_BINARY:
		return fmt.Sprintf("%016d", x)
	case arrow.STRUCT, arrow.LIST:
		return int64(x)
	}
	panic("no random values of type " + typ.String())
}

// randomColumn draws a column of rows values; each is null with probability
// nullRate, only in even row groups (of rowGroupRows) so that odd ones have
// no nulls.
func randomColumn(rng *rand.Rand, name string, typ arrow.DataType, rows, pool int, nullRate float64, rowGroupRows int) colData {
	c := colData{name: name, typ: typ, values: make([]any, rows)}
	for i := range c.values {
		if nullRate > 0 && (i/rowGroupRows)%2 == 0 && rng.Float64() < nullRate {
			continue
		}
		c.values[i] = randomValue(rng, typ, pool)
	}
	return c
}

// edgeCase is a generated edge table: the columns written and the options
// to read them with.
type edgeCase struct {
	rows   int
	cols   []colData
	src    int // indexes into cols
	dst    int
	weight int // -1: none
}

func (c *edgeCase) write(t testing.TB, dir, name string, nullable bool, w edgetest.ParquetWrite) string {
	tbl := arrowTable(t, c.rows, c.cols, nullable)
	defer tbl.Release()
	return edgetest.WriteParquet(t, dir, name, tbl, w)
}

// randomEdges makes an edge table with key type keyType and weight type
// weightType (nil: none); extra puts other columns around and between the
// edge columns, in another order.
func randomEdges(seed uint64, rows, rowGroupRows int, keyType, weightType arrow.DataType, extra bool, keyNulls, weightNulls float64) *edgeCase {
	rng := rand.New(rand.NewPCG(seed, 1))
	pool := max(rows/3, 2)
	c := &edgeCase{rows: rows, weight: -1}
	add := func(col colData) int {
		c.cols = append(c.cols, col)
		return len(c.cols) - 1
	}
	if extra {
		add(randomColumn(rng, "label", arrow.BinaryTypes.String, rows, 50, 0.1, rowGroupRows))
		add(randomColumn(rng, "nested", structType, rows, 100, 0, rowGroupRows))
		c.dst = add(randomColumn(rng, "dst", keyType, rows, pool, keyNulls, rowGroupRows))
		add(randomColumn(rng, "score", arrow.PrimitiveTypes.Float64, rows, 1000, 0.2, rowGroupRows))
		c.src = add(randomColumn(rng, "src", keyType, rows, pool, keyNulls, rowGroupRows))
		add(randomColumn(rng, "tags", listType, rows, 100, 0, rowGroupRows))
	} else {
		c.src = add(randomColumn(rng, "src", keyType, rows, pool, keyNulls, rowGroupRows))
		c.dst = add(randomColumn(rng, "dst", keyType, rows, pool, keyNulls, rowGroupRows))
	}
	if weightType != nil {
		c.weight = add(randomColumn(rng, "weight", weightType, rows, 1000, weightNulls, rowGroupRows))
	}
	if extra {
		add(randomColumn(rng, "after", arrow.PrimitiveTypes.Int64, rows, 1000, 0.5, rowGroupRows))
	}
	return c
}

// keyOf is key i of k, typed.
func keyOf(k *edges.Keys, i int) any {
	switch {
	case k.Int32 != nil:
		return k.Int32[i]
	case k.Int64 != nil:
		return k.Int64[i]
	case k.Uint32 != nil:
		return k.Uint32[i]
	case k.Uint64 != nil:
		return k.Uint64[i]
	case k.Str != nil:
		return string(k.Str.At(i))
	}
	return nil
}

// weightOf is the float64 a written weight value reads as.
func weightOf(v any) float64 {
	switch v := v.(type) {
	case int8:
		return float64(v)
	case int16:
		return float64(v)
	case int32:
		return float64(v)
	case int64:
		return float64(v)
	case uint8:
		return float64(v)
	case uint16:
		return float64(v)
	case uint32:
		return float64(v)
	case uint64:
		return float64(v)
	case float32:
		return float64(v)
	case float16.Num:
		return float64(v.Float32())
	case float64:
		return v
	}
	panic(fmt.Sprintf("no weight from %T", v))
}

// check compares the table read with the case written: every kept row's
// values, the rows dropped and why, chunk boundaries and row numbers.
func (c *edgeCase) check(t *testing.T, tbl *edges.Table, opts edges.Options, wantKey edges.KeyType, rowGroupRows int) {
	t.Helper()
	src, dst := c.cols[c.src], c.cols[c.dst]
	readWeight := opts.Columns.ReadWeight && c.weight >= 0
	if tbl.KeyType != wantKey {
		t.Fatalf("KeyType %v, want %v", tbl.KeyType, wantKey)
	}
	if !arrow.TypeEqual(tbl.KeyArrowType, wantKey.ArrowType()) {
		t.Fatalf("KeyArrowType %v, want %v", tbl.KeyArrowType, wantKey.ArrowType())
	}
	if tbl.HasWeight != readWeight {
		t.Fatalf("HasWeight %v, want %v", tbl.HasWeight, readWeight)
	}
	if tbl.RowsRead != int64(c.rows) {
		t.Fatalf("RowsRead %d, want %d", tbl.RowsRead, c.rows)
	}
	if want := (c.rows + rowGroupRows - 1) / rowGroupRows; len(tbl.Chunks) != want {
		t.Fatalf("%d chunks, want %d (one per row group)", len(tbl.Chunks), want)
	}
	wantSkips := edges.Skips{}
	next := 0 // the next input row expected
	for ci := range tbl.Chunks {
		ch := &tbl.Chunks[ci]
		if ch.FirstRow != int64(ci*rowGroupRows) {
			t.Fatalf("chunk %d: FirstRow %d, want %d", ci, ch.FirstRow, ci*rowGroupRows)
		}
		end := min((ci+1)*rowGroupRows, c.rows)
		dropped := false
		for i := 0; i < ch.Len(); i++ {
			row := int(ch.Row(i))
			for ; next < row; next++ {
				dropped = true
				switch {
				case src.values[next] == nil:
					wantSkips.Add(edges.SkipNullKey(src.name), 1)
				case dst.values[next] == nil:
					wantSkips.Add(edges.SkipNullKey(dst.name), 1)
				case readWeight && c.cols[c.weight].values[next] == nil:
					wantSkips.Add(edges.SkipNullWeight(c.cols[c.weight].name), 1)
				default:
					t.Fatalf("chunk %d: row %d was dropped but has no null", ci, next)
				}
			}
			if row != next || row >= end {
				t.Fatalf("chunk %d position %d: row %d, want %d (rows %d to %d)", ci, i, row, next, ch.FirstRow, end)
			}
			next++
			if got, want := keyOf(&ch.Src, i), src.values[row]; got != want {
				t.Fatalf("row %d: src %#v, want %#v", row, got, want)
			}
			if got, want := keyOf(&ch.Dst, i), dst.values[row]; got != want {
				t.Fatalf("row %d: dst %#v, want %#v", row, got, want)
			}
			if readWeight {
				w := c.cols[c.weight].values[row]
				if w == nil {
					t.Fatalf("row %d: null weight kept", row)
				}
				if got, want := ch.Weight[i], weightOf(w); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("row %d: weight %v, want %v", row, got, want)
				}
			}
		}
		for ; next < end; next++ {
			dropped = true
			switch {
			case src.values[next] == nil:
				wantSkips.Add(edges.SkipNullKey(src.name), 1)
			case dst.values[next] == nil:
				wantSkips.Add(edges.SkipNullKey(dst.name), 1)
			case readWeight && c.cols[c.weight].values[next] == nil:
				wantSkips.Add(edges.SkipNullWeight(c.cols[c.weight].name), 1)
			default:
				t.Fatalf("chunk %d: row %d was dropped but has no null", ci, next)
			}
		}
		if dropped != (ch.Rows != nil) {
			t.Fatalf("chunk %d: rows dropped %v but Rows set %v", ci, dropped, ch.Rows != nil)
		}
		if readWeight != (ch.Weight != nil) || (readWeight && len(ch.Weight) != ch.Len()) {
			t.Fatalf("chunk %d: %d weights for %d edges", ci, len(ch.Weight), ch.Len())
		}
		if ch.Dst.Len() != ch.Len() {
			t.Fatalf("chunk %d: %d destinations for %d sources", ci, ch.Dst.Len(), ch.Len())
		}
	}
	if next != c.rows {
		t.Fatalf("read up to row %d of %d", next, c.rows)
	}
	if fmt.Sprint(tbl.Skipped) != fmt.Sprint(wantSkips) {
		t.Fatalf("Skipped %v, want %v", tbl.Skipped, wantSkips)
	}
}

// open reads the Parquet file at path, as Open does.
func open(ctx context.Context, path string, opts edges.Options) (*edges.Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(ctx, path, f, opts)
}

// readChecked reads path (as Open does) with a checked allocator, checks it with
// check, and that every allocation is given back on Release.
func readChecked(t *testing.T, path string, opts edges.Options, check func(*edges.Table)) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts.Alloc = mem
	tbl, err := open(context.Background(), path, opts)
	if err != nil {
		mem.AssertSize(t, 0)
		t.Fatalf("reading %s: %v", filepath.Base(path), err)
	}
	check(tbl)
	tbl.Release()
	mem.AssertSize(t, 0)
}

// readErr reads path and returns the user error it must fail with.
func readErr(t *testing.T, path string, opts edges.Options) *usererr.Error {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts.Alloc = mem
	tbl, err := open(context.Background(), path, opts)
	mem.AssertSize(t, 0)
	if err == nil {
		tbl.Release()
		t.Fatalf("reading %s: no error", filepath.Base(path))
	}
	var ue *usererr.Error
	if !errors.As(err, &ue) {
		t.Fatalf("reading %s: %T %v, want a *usererr.Error", filepath.Base(path), err, err)
	}
	if ue.Kind != usererr.Input {
		t.Fatalf("reading %s: kind %v, want Input: %v", filepath.Base(path), ue.Kind, err)
	}
	if ue.File != path || !strings.HasPrefix(err.Error(), path) {
		t.Fatalf("error does not name the file %s: %v", path, err)
	}
	if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("error is not one line: %q", err)
	}
	return ue
}

var testCodecs = []struct {
	name  string
	codec pqcompress.Compression
}{
	{"uncompressed", pqcompress.Codecs.Uncompressed},
	{"snappy", pqcompress.Codecs.Snappy},
	{"gzip", pqcompress.Codecs.Gzip},
	{"zstd", pqcompress.Codecs.Zstd},
	{"brotli", pqcompress.Codecs.Brotli},
}

var weightTypes = []arrow.DataType{
	nil,
	arrow.PrimitiveTypes.Int32,
	arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Float32,
	arrow.PrimitiveTypes.Float64,
	arrow.FixedWidthTypes.Float16,
}

// TestParquetMatrix reads every key type written with every codec, with and
// without dictionaries, in data pages v1 and v2, in many row groups and
// pages, with the weight types, nullable columns and extra columns rotating.
// (Writing dominates the time: each (codec, dictionary, page version) gets
// three of the key types, so that each codec sees every key type.)
func TestParquetMatrix(t *testing.T) {
	dir := t.TempDir()
	const rows, rgRows = 1100, 300
	n, combo := 0, 0
	for _, codec := range testCodecs {
		for _, dict := range []bool{true, false} {
			for _, v2 := range []bool{false, true} {
				combo++
				for k := 0; k < 3; k++ {
					kt := keyTypes[(combo*3+k)%len(keyTypes)]
					n++
					weight := weightTypes[n%len(weightTypes)]
					nullable := n%2 == 0
					extra := n%3 != 0
					w := edgetest.ParquetWrite{Codec: codec.codec, Dict: dict, V2: v2, RowGroupRows: rgRows, PageSize: 512}
					if dict && n%4 == 1 {
						w.DictPageSize = 256 // dictionaries fall back to plain pages mid-chunk
					}
					name := fmt.Sprintf("%s-dict=%v-v2=%v-%s", codec.name, dict, v2, kt.name)
					t.Run(name, func(t *testing.T) {
						c := randomEdges(uint64(n), rows, rgRows, kt.typ, weight, extra, 0, 0)
						path := c.write(t, dir, name+".parquet", nullable, w)
						opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
						readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, kt.key, rgRows) })
					})
				}
			}
		}
	}
}

// TestParquetNulls reads tables with null keys and weights: an error naming
// the first null's column and row, or with SkipInvalid the rows dropped,
// counted, and the chunks' Rows set.
func TestParquetNulls(t *testing.T) {
	dir := t.TempDir()
	const rows, rgRows = 1000, 250
	n := 0
	for _, kt := range []int{1, 2, 4, 6} { // int64, uint32, string, dictionary
		for _, dict := range []bool{true, false} {
			for _, v2 := range []bool{false, true} {
				n++
				key := keyTypes[kt]
				w := edgetest.ParquetWrite{Codec: pqcompress.Codecs.Zstd, Dict: dict, V2: v2, RowGroupRows: rgRows, PageSize: 400}
				name := fmt.Sprintf("%s-dict=%v-v2=%v", key.name, dict, v2)
				t.Run(name, func(t *testing.T) {
					c := randomEdges(uint64(100+n), rows, rgRows, key.typ, arrow.PrimitiveTypes.Float64, n%2 == 0, 0.02, 0.03)
					path := c.write(t, dir, name+".parquet", false, w)

					// Without SkipInvalid: the first row with a null.
					opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
					ue := readErr(t, path, opts)
					row, col := -1, ""
					for i := 0; i < rows && row < 0; i++ {
						for _, ci := range []int{c.src, c.dst, c.weight} {
							if c.cols[ci].values[i] == nil {
								row, col = i, c.cols[ci].name
								break
							}
						}
					}
					if ue.Row != int64(row) || ue.Column != col {
						t.Fatalf("error at column %q row %d, want column %q row %d: %v", ue.Column, ue.Row, col, row, ue)
					}
					want := "null vertex key"
					if col == "weight" {
						want = "null weight"
					}
					if !strings.Contains(ue.Error(), want) || !strings.Contains(ue.Error(), "--skip-invalid") {
						t.Fatalf("error %q does not say %q and suggest --skip-invalid", ue, want)
					}

					// With SkipInvalid.
					opts.SkipInvalid = true
					readChecked(t, path, opts, func(tbl *edges.Table) {
						c.check(t, tbl, opts, key.key, rgRows)
						if tbl.Skipped.Total() == 0 {
							t.Fatal("nothing skipped")
						}
					})

					// Null weights do not matter when weights are not read.
					opts.Columns.ReadWeight = false
					readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, key.key, rgRows) })
				})
			}
		}
	}
}

// TestParquetNullWeightOnly has nulls only in the weight column.
func TestParquetNullWeightOnly(t *testing.T) {
	const rows, rgRows = 600, 200
	c := randomEdges(7, rows, rgRows, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, false, 0, 0.1)
	path := c.write(t, t.TempDir(), "w.parquet", false, edgetest.DefaultParquetWrite.With(rgRows))
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	ue := readErr(t, path, opts)
	if ue.Column != "weight" || !strings.Contains(ue.Problem, "null weight") {
		t.Fatalf("want a null weight error: %v", ue)
	}
	opts.SkipInvalid = true
	readChecked(t, path, opts, func(tbl *edges.Table) {
		c.check(t, tbl, opts, edges.KeyInt32, rgRows)
		if len(tbl.Skipped) != 1 || tbl.Skipped[edges.SkipNullWeight("weight")] == 0 {
			t.Fatalf("Skipped %v", tbl.Skipped)
		}
	})
}

// TestParquetColumns: named columns, the weight column absent or not read,
// unsigned and small integer weights, binary keys, the same column twice.
func TestParquetColumns(t *testing.T) {
	dir := t.TempDir()
	const rows, rgRows = 500, 200
	w := edgetest.DefaultParquetWrite.With(rgRows)

	t.Run("named", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		c := &edgeCase{rows: rows, src: 2, dst: 0, weight: 1, cols: []colData{
			randomColumn(rng, "to", arrow.PrimitiveTypes.Int64, rows, 100, 0, rgRows),
			randomColumn(rng, "cost", arrow.PrimitiveTypes.Uint64, rows, 1000, 0, rgRows),
			randomColumn(rng, "from", arrow.PrimitiveTypes.Int64, rows, 100, 0, rgRows),
		}}
		path := c.write(t, dir, "named.parquet", false, w)
		opts := edges.Options{Columns: edges.Columns{Src: "from", Dst: "to", Weight: "cost", WeightExplicit: true, ReadWeight: true}}
		readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, edges.KeyInt64, rgRows) })
	})

	t.Run("weight-absent-default", func(t *testing.T) {
		c := randomEdges(3, rows, rgRows, arrow.PrimitiveTypes.Int64, nil, true, 0, 0)
		path := c.write(t, dir, "noweight.parquet", false, w)
		opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
		readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, edges.KeyInt64, rgRows) })

		opts.Columns.WeightExplicit = true
		ue := readErr(t, path, opts)
		for _, s := range []string{`no weight column "weight"`, "--weight-col", "label, nested, dst, score, src, tags, after"} {
			if !strings.Contains(ue.Error(), s) {
				t.Errorf("error %q does not contain %q", ue, s)
			}
		}
	})

	t.Run("weight-not-read", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 2))
		c := &edgeCase{rows: rows, src: 0, dst: 1, weight: 2, cols: []colData{
			randomColumn(rng, "src", arrow.PrimitiveTypes.Int32, rows, 100, 0, rgRows),
			randomColumn(rng, "dst", arrow.PrimitiveTypes.Int32, rows, 100, 0, rgRows),
			randomColumn(rng, "weight", arrow.BinaryTypes.String, rows, 100, 0, rgRows), // not a weight type
		}}
		path := c.write(t, dir, "weightnotread.parquet", false, w)
		opts := edges.Options{Columns: edges.Columns{ReadWeight: false, WeightExplicit: true}}
		readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, edges.KeyInt32, rgRows) })
	})

	for _, wt := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Uint8,
		arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64} {
		t.Run("weight-"+wt.String(), func(t *testing.T) {
			c := randomEdges(5, rows, rgRows, arrow.PrimitiveTypes.Uint64, wt, false, 0, 0)
			path := c.write(t, dir, "w-"+wt.String()+".parquet", true, w)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
			readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, edges.KeyUint64, rgRows) })
		})
	}

	t.Run("binary-keys", func(t *testing.T) {
		c := randomEdges(6, rows, rgRows, arrow.BinaryTypes.Binary, nil, false, 0, 0)
		path := c.write(t, dir, "binary.parquet", false, w)
		opts := edges.Options{}
		readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, edges.KeyString, rgRows) })
	})

	t.Run("same-column", func(t *testing.T) {
		c := randomEdges(8, rows, rgRows, arrow.BinaryTypes.String, nil, false, 0, 0)
		c.dst = c.src
		path := c.write(t, dir, "same.parquet", false, w)
		opts := edges.Options{Columns: edges.Columns{Dst: "src"}}
		readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, edges.KeyString, rgRows) })
	})
}

// TestParquetEmpty reads a table of no rows.
func TestParquetEmpty(t *testing.T) {
	for _, kt := range keyTypes {
		t.Run(kt.name, func(t *testing.T) {
			c := randomEdges(1, 0, 100, kt.typ, arrow.PrimitiveTypes.Float64, false, 0, 0)
			path := c.write(t, t.TempDir(), "empty.parquet", false, edgetest.DefaultParquetWrite.With(100))
			readChecked(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}}, func(tbl *edges.Table) {
				if tbl.KeyType != kt.key || tbl.NumEdges() != 0 || tbl.RowsRead != 0 || !tbl.HasWeight {
					t.Fatalf("KeyType %v, %d edges, %d rows, weight %v", tbl.KeyType, tbl.NumEdges(), tbl.RowsRead, tbl.HasWeight)
				}
			})
		})
	}
}
