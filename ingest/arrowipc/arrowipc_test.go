package arrowipc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// recordCase describes record batches of edges to write.
type recordCase struct {
	key      arrow.DataType
	weight   arrow.DataType // nil: no weight column
	batches  []int          // rows per batch
	keyNulls float64        // rate of null keys
	wNulls   float64        // rate of null weights
	extra    bool           // columns of many types before the edge columns
	seed     uint64
}

// extraTypes are columns the mapped reader must step over.
var extraTypes = []struct {
	name string
	typ  arrow.DataType
	json []string // values cycled through
}{
	{"a_null", arrow.Null, []string{"null"}},
	{"a_bool", arrow.FixedWidthTypes.Boolean, []string{"true", "null", "false"}},
	{"a_struct", arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int16, Nullable: true}, arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}),
		[]string{`{"x": 1, "y": "a"}`, `null`, `{"x": null, "y": "bcd"}`}},
	{"a_list", arrow.ListOf(arrow.PrimitiveTypes.Int64), []string{"[1, 2]", "[]", "null", "[3]"}},
	{"a_large_list", arrow.LargeListOf(arrow.BinaryTypes.String), []string{`["a", "b"]`, "null"}},
	{"a_fsl", arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int8), []string{"[1, 2]", "null"}},
	{"a_map", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), []string{`[{"key": "k", "value": 1}]`, "[]", "null"}},
	{"a_dense", arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, []arrow.UnionTypeCode{0, 1}),
		[]string{`[0, 5]`, `[1, "x"]`, `[0, null]`}},
	{"a_sparse", arrow.SparseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, []arrow.UnionTypeCode{0, 1}),
		[]string{`[0, 5]`, `[1, 2.5]`}},
	{"a_view", arrow.BinaryTypes.StringView, []string{`"short"`, `"a string longer than twelve bytes"`, "null"}},
	{"a_binview", arrow.BinaryTypes.BinaryView, []string{`"c2hvcnQ="`, "null"}},
	{"a_decimal", &arrow.Decimal128Type{Precision: 10, Scale: 2}, []string{`"1.25"`, "null"}},
	{"a_ts", arrow.FixedWidthTypes.Timestamp_ms, []string{`"2024-01-02T03:04:05Z"`, "null"}},
	{"a_binary", arrow.BinaryTypes.Binary, []string{`"YWJj"`, "null"}},
	// A dictionary column: json gives the indices into the values "p", "q", "r".
	{"a_dict", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, []string{"0", "2", "null"}},
}

// keyString is the i-th string key.
func keyString(i int) string { return "v" + strconv.Itoa(i*7919%1000) }

func appendKey(b array.Builder, i int) {
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(i*37 - 400))
	case *array.Int64Builder:
		b.Append(int64(i)*1_000_000_007 - 5)
	case *array.Uint32Builder:
		b.Append(uint32(i*37 + 1<<31))
	case *array.Uint64Builder:
		b.Append(uint64(i)*1_000_000_007 + 1<<63)
	case *array.StringBuilder:
		b.Append(keyString(i))
	case *array.LargeStringBuilder:
		b.Append(keyString(i))
	case *array.StringViewBuilder:
		b.Append(keyString(i) + strings.Repeat("-", i%20))
	default:
		panic(fmt.Sprintf("no key builder %T", b))
	}
}

func appendWeight(b array.Builder, x int) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(x % 100))
	case *array.Int16Builder:
		b.Append(int16(x - 500))
	case *array.Int32Builder:
		b.Append(int32(x * 3))
	case *array.Int64Builder:
		b.Append(int64(x) << 20)
	case *array.Uint8Builder:
		b.Append(uint8(x))
	case *array.Uint16Builder:
		b.Append(uint16(x))
	case *array.Uint32Builder:
		b.Append(uint32(x * 5))
	case *array.Uint64Builder:
		b.Append(uint64(x) << 40)
	case *array.Float16Builder:
		b.Append(float16.New(float32(x) / 4))
	case *array.Float32Builder:
		b.Append(float32(x) / 8)
	case *array.Float64Builder:
		b.Append(float64(x)/16 - 3)
	default: // a weight column of a type that cannot hold weights
		appendKey(b, x)
	}
}

// randomColumn builds n values of type dt, nulls at rate nullRate.
func randomColumn(mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n int, nullRate float64, weight bool) arrow.Array {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		const pool = 60
		dict := randomColumn(mem, rng, d.ValueType, pool, 0, weight)
		defer dict.Release()
		ib := array.NewBuilder(mem, d.IndexType)
		defer ib.Release()
		for i := 0; i < n; i++ {
			if rng.Float64() < nullRate {
				ib.AppendNull()
				continue
			}
			x := rng.IntN(pool)
			switch ib := ib.(type) {
			case *array.Int8Builder:
				ib.Append(int8(x))
			case *array.Int16Builder:
				ib.Append(int16(x))
			case *array.Int32Builder:
				ib.Append(int32(x))
			case *array.Uint8Builder:
				ib.Append(uint8(x))
			case *array.Uint32Builder:
				ib.Append(uint32(x))
			case *array.Int64Builder:
				ib.Append(int64(x))
			}
		}
		idx := ib.NewArray()
		defer idx.Release()
		return array.NewDictionaryArray(dt, idx, dict)
	}
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for i := 0; i < n; i++ {
		switch {
		case rng.Float64() < nullRate:
			b.AppendNull()
		case n == 60 && weight: // a dictionary's values: the same in every batch
			appendWeight(b, i*17)
		case n == 60:
			appendKey(b, i)
		case weight:
			appendWeight(b, rng.IntN(1000))
		default:
			appendKey(b, rng.IntN(500))
		}
	}
	return b.NewArray()
}

// records builds the case's schema and batches.
func (c recordCase) records(t testing.TB, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	rng := rand.New(rand.NewPCG(c.seed, 7))
	var fields []arrow.Field
	if c.extra {
		for _, x := range extraTypes {
			fields = append(fields, arrow.Field{Name: x.name, Type: x.typ, Nullable: true})
		}
	}
	fields = append(fields, arrow.Field{Name: "src", Type: c.key, Nullable: true}, arrow.Field{Name: "dst", Type: c.key, Nullable: true})
	if c.weight != nil {
		fields = append(fields, arrow.Field{Name: "weight", Type: c.weight, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: "after", Type: arrow.BinaryTypes.String, Nullable: true})
	schema := arrow.NewSchema(fields, nil)
	var recs []arrow.RecordBatch
	for _, n := range c.batches {
		var cols []arrow.Array
		if c.extra {
			for _, x := range extraTypes {
				vals := make([]string, n)
				for i := range vals {
					vals[i] = x.json[(i+rng.IntN(2))%len(x.json)]
				}
				typ := x.typ
				dt, isDict := typ.(*arrow.DictionaryType)
				if isDict {
					typ = dt.IndexType
				}
				arr, _, err := array.FromJSON(mem, typ, strings.NewReader("["+strings.Join(vals, ",")+"]"))
				if err != nil {
					t.Fatalf("%s: %v", x.name, err)
				}
				if isDict {
					dict, _, err := array.FromJSON(mem, dt.ValueType, strings.NewReader(`["p", "q", "r"]`))
					if err != nil {
						t.Fatal(err)
					}
					idx := arr
					arr = array.NewDictionaryArray(dt, idx, dict)
					idx.Release()
					dict.Release()
				}
				cols = append(cols, arr)
			}
		}
		cols = append(cols, randomColumn(mem, rng, c.key, n, c.keyNulls, false), randomColumn(mem, rng, c.key, n, c.keyNulls, false))
		if c.weight != nil {
			cols = append(cols, randomColumn(mem, rng, c.weight, n, c.wNulls, true))
		}
		cols = append(cols, randomColumn(mem, rng, arrow.BinaryTypes.String, n, 0.3, false))
		recs = append(recs, array.NewRecordBatch(schema, cols, int64(n)))
		for _, a := range cols {
			a.Release()
		}
	}
	return schema, recs
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// valueAt is value i of arr normalized (int64, uint64, string, float64),
// and whether it is null (a dictionary's null value counts).
func valueAt(arr arrow.Array, i int) (any, bool) {
	if arr.IsNull(i) {
		return nil, true
	}
	switch a := arr.(type) {
	case *array.Dictionary:
		j := a.GetValueIndex(i)
		return valueAt(a.Dictionary(), j)
	case *array.Int8:
		return float64(a.Value(i)), false
	case *array.Int16:
		return float64(a.Value(i)), false
	case *array.Uint8:
		return float64(a.Value(i)), false
	case *array.Uint16:
		return float64(a.Value(i)), false
	case *array.Float16:
		return float64(a.Value(i).Float32()), false
	case *array.Float32:
		return float64(a.Value(i)), false
	case *array.Float64:
		return a.Value(i), false
	case *array.Int32:
		return int64(a.Value(i)), false
	case *array.Int64:
		return a.Value(i), false
	case *array.Uint32:
		return uint64(a.Value(i)), false
	case *array.Uint64:
		return a.Value(i), false
	case *array.String:
		return a.Value(i), false
	case *array.LargeString:
		return a.Value(i), false
	case *array.StringView:
		return a.Value(i), false
	}
	panic(fmt.Sprintf("no value from %T", arr))
}

func asFloat(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	case float64:
		return v
	}
	panic(fmt.Sprintf("no float from %T", v))
}

// expected is what reading recs must give: kept edges, and the rows
// dropped by reason.
func expected(recs []arrow.RecordBatch, opts edges.Options) ([]edgetest.Edge, edges.Skips) {
	cols := opts.Columns.WithDefaults()
	var out []edgetest.Edge
	skips := edges.Skips{}
	var row int64
	for _, r := range recs {
		s := r.Schema()
		src := r.Column(s.FieldIndices(cols.Src)[0])
		dst := r.Column(s.FieldIndices(cols.Dst)[0])
		var w arrow.Array
		if cols.ReadWeight {
			if ix := s.FieldIndices(cols.Weight); len(ix) > 0 {
				w = r.Column(ix[0])
			}
		}
		for i := 0; i < int(r.NumRows()); i, row = i+1, row+1 {
			sv, sn := valueAt(src, i)
			dv, dn := valueAt(dst, i)
			e := edgetest.Edge{Row: row, Src: sv, Dst: dv}
			switch {
			case sn:
				skips.Add(edges.SkipNullKey(cols.Src), 1)
				continue
			case dn:
				skips.Add(edges.SkipNullKey(cols.Dst), 1)
				continue
			}
			if w != nil {
				wv, wn := valueAt(w, i)
				if wn {
					skips.Add(edges.SkipNullWeight(cols.Weight), 1)
					continue
				}
				e.W = asFloat(wv)
			}
			out = append(out, e)
		}
	}
	return out, skips
}

// checkTable compares a table with the batches it was read from.
func checkTable(t testing.TB, tbl *edges.Table, recs []arrow.RecordBatch, opts edges.Options) {
	t.Helper()
	want, skips := expected(recs, opts)
	edgetest.Same(t, edgetest.Edges(t, tbl), want)
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if tbl.RowsRead != rows {
		t.Errorf("RowsRead %d, want %d", tbl.RowsRead, rows)
	}
	if fmt.Sprint(tbl.Skipped) != fmt.Sprint(skips) {
		t.Errorf("Skipped %v, want %v", tbl.Skipped, skips)
	}
	src := recs[0].Schema().Field(recs[0].Schema().FieldIndices("src")[0]).Type
	if want := keyTypeOf(src); tbl.KeyType != want {
		t.Errorf("KeyType %v, want %v", tbl.KeyType, want)
	}
	wantArrow := src
	if d, ok := src.(*arrow.DictionaryType); ok {
		wantArrow = d.ValueType
	}
	if wantArrow.ID() == arrow.STRING_VIEW {
		wantArrow = arrow.BinaryTypes.String
	}
	if !arrow.TypeEqual(tbl.KeyArrowType, wantArrow) {
		t.Errorf("KeyArrowType %v, want %v", tbl.KeyArrowType, wantArrow)
	}
}

var keyTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.StringView,
	&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
	&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.LargeString},
	&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint32, ValueType: arrow.PrimitiveTypes.Int64},
}

var weightTypes = []arrow.DataType{
	nil, arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
	arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32,
	arrow.PrimitiveTypes.Uint64, arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Float32,
	&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.PrimitiveTypes.Float64},
}

var compressions = []struct {
	name string
	opt  []ipc.Option
}{
	{"plain", nil},
	{"lz4", []ipc.Option{ipc.WithLZ4()}},
	{"zstd", []ipc.Option{ipc.WithZstd()}},
}

// readFile reads the Arrow IPC file at path with opts, failing the test
// on an error.
func readFile(t testing.TB, path string, opts edges.Options) *edges.Table {
	t.Helper()
	tbl, err := ReadFile(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("read %s: %v", filepath.Base(path), err)
	}
	return tbl
}

func TestArrowFileTypes(t *testing.T) {
	dir := t.TempDir()
	n := 0
	for ki, key := range keyTypes {
		for wi, w := range weightTypes {
			if (ki+wi)%3 != 0 && wi > 1 && ki > 1 {
				continue // a spread of pairs, not all of them
			}
			comp := compressions[n%len(compressions)]
			n++
			c := recordCase{key: key, weight: w, batches: []int{130, 0, 77, 300}, seed: uint64(ki*100 + wi)}
			name := fmt.Sprintf("%s_%v_%s", arrowTypeName(key), w, comp.name)
			t.Run(name, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				schema, recs := c.records(t, memory.DefaultAllocator)
				defer releaseAll(recs)
				path := filepath.Join(dir, strings.NewReplacer("<", "_", ">", "_").Replace(name)+".arrow")
				edgetest.WriteArrowFile(t, path, schema, recs, comp.opt...)
				for _, readWeight := range []bool{true, false} {
					opts := edges.Options{Columns: edges.Columns{ReadWeight: readWeight}, Alloc: mem}
					tbl := readFile(t, path, opts)
					checkTable(t, tbl, recs, opts)
					if want := readWeight && w != nil; tbl.HasWeight != want {
						t.Errorf("HasWeight %v, want %v", tbl.HasWeight, want)
					}
					tbl.Release()
				}
				mem.AssertSize(t, 0)
			})
		}
	}
}

// mappings lists the address ranges /proc/self/maps gives for path.
func mappings(t testing.TB, path string) [][2]uintptr {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps:", err)
	}
	defer f.Close()
	var out [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, " "+path) {
			continue
		}
		var lo, hi uintptr
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]uintptr{lo, hi})
	}
	return out
}

func inside(p unsafe.Pointer, maps [][2]uintptr) bool {
	for _, m := range maps {
		if uintptr(p) >= m[0] && uintptr(p) < m[1] {
			return true
		}
	}
	return false
}

func TestArrowFileAliasesMapping(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint32, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.String} {
		t.Run(key.Name(), func(t *testing.T) {
			c := recordCase{key: key, weight: arrow.PrimitiveTypes.Float64, batches: []int{1000, 2000}, extra: true, seed: 3}
			schema, recs := c.records(t, memory.DefaultAllocator)
			defer releaseAll(recs)
			path := filepath.Join(dir, key.Name()+".arrow")
			edgetest.WriteArrowFile(t, path, schema, recs)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
			tbl := readFile(t, path, opts)
			checkTable(t, tbl, recs, opts)
			maps := mappings(t, path)
			if len(maps) == 0 {
				t.Fatalf("%s is not mapped after the read", path)
			}
			for ci, ch := range tbl.Chunks {
				var p, q unsafe.Pointer
				switch {
				case ch.Src.Int64 != nil:
					p, q = unsafe.Pointer(&ch.Src.Int64[0]), unsafe.Pointer(&ch.Dst.Int64[0])
				case ch.Src.Uint32 != nil:
					p, q = unsafe.Pointer(&ch.Src.Uint32[0]), unsafe.Pointer(&ch.Dst.Uint32[0])
				case key.ID() == arrow.LARGE_STRING:
					p, q = unsafe.Pointer(&ch.Src.Str.Offsets[0]), unsafe.Pointer(&ch.Dst.Str.Data[0])
				default: // utf8: the offsets are widened, the data stays
					p, q = unsafe.Pointer(&ch.Src.Str.Data[0]), unsafe.Pointer(&ch.Dst.Str.Data[0])
					if inside(unsafe.Pointer(&ch.Src.Str.Offsets[0]), maps) {
						t.Errorf("chunk %d: widened utf8 offsets inside the mapping", ci)
					}
				}
				if !inside(p, maps) || !inside(q, maps) {
					t.Errorf("chunk %d: keys at %p, %p, not in the mapping %x", ci, p, q, maps)
				}
				if !inside(unsafe.Pointer(&ch.Weight[0]), maps) {
					t.Errorf("chunk %d: float64 weights copied", ci)
				}
			}
			tbl.Release()
			if maps := mappings(t, path); len(maps) != 0 {
				t.Errorf("%s still mapped after Release: %x", path, maps)
			}
		})
	}
	// A file read entirely through arrow's reader gives its mapping back at once.
	c := recordCase{key: arrow.PrimitiveTypes.Int64, batches: []int{100}, seed: 4}
	schema, recs := c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	path := filepath.Join(dir, "zstd.arrow")
	edgetest.WriteArrowFile(t, path, schema, recs, ipc.WithZstd())
	tbl := readFile(t, path, edges.Options{})
	defer tbl.Release()
	checkTable(t, tbl, recs, edges.Options{})
	if maps := mappings(t, path); len(maps) != 0 {
		t.Errorf("compressed file still mapped after the read: %x", maps)
	}
}

func TestArrowFileExtraColumns(t *testing.T) {
	// Every kind of column before the edge columns, so that the mapped
	// reader's walk over nodes and buffers is checked against arrow's.
	dir := t.TempDir()
	for _, key := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String} {
		for _, comp := range compressions[:2] {
			c := recordCase{key: key, weight: arrow.PrimitiveTypes.Int64, batches: []int{50, 0, 120}, extra: true, keyNulls: 0.05, wNulls: 0.05, seed: 9}
			schema, recs := c.records(t, memory.DefaultAllocator)
			path := filepath.Join(dir, key.Name()+comp.name+".arrow")
			edgetest.WriteArrowFile(t, path, schema, recs, comp.opt...)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}
			tbl := readFile(t, path, opts)
			checkTable(t, tbl, recs, opts)
			tbl.Release()
			releaseAll(recs)
		}
	}
}

func TestArrowFileNulls(t *testing.T) {
	dir := t.TempDir()
	for _, key := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.LargeString, keyTypes[7]} {
		for _, comp := range compressions[:2] {
			c := recordCase{key: key, weight: arrow.PrimitiveTypes.Float64, batches: []int{200, 300, 5000}, keyNulls: 0.01, wNulls: 0.02, seed: 11}
			schema, recs := c.records(t, memory.DefaultAllocator)
			path := filepath.Join(dir, "nulls_"+strconv.Itoa(int(key.ID()))+comp.name+".arrow")
			edgetest.WriteArrowFile(t, path, schema, recs, comp.opt...)

			// Skipping: every row with a null is dropped and counted.
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true, Alloc: mem}
			tbl := readFile(t, path, opts)
			checkTable(t, tbl, recs, opts)
			if tbl.Skipped.Total() == 0 {
				t.Errorf("%s: nothing skipped", path)
			}
			tbl.Release()
			mem.AssertSize(t, 0)

			// Failing: the first null, by row, named with its column.
			_, err := ReadFile(context.Background(), path, edges.Options{Columns: edges.Columns{ReadWeight: true}})
			want, _ := expected(recs, edges.Options{Columns: edges.Columns{ReadWeight: true}})
			first := int64(0)
			for i, e := range want {
				if e.Row != int64(i) {
					break
				}
				first = int64(i) + 1
			}
			ue := edgetest.UserErr(t, err, path, fmt.Sprintf("row %d: null", first))
			if ue.Row != first {
				t.Errorf("error at row %d, want %d", ue.Row, first)
			}
			// Without weights, null weights do not matter.
			opts = edges.Options{SkipInvalid: true}
			tbl = readFile(t, path, opts)
			checkTable(t, tbl, recs, opts)
			tbl.Release()
			releaseAll(recs)
		}
	}
}

func TestArrowFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, schema *arrow.Schema, recs []arrow.RecordBatch) string {
		path := filepath.Join(dir, name)
		edgetest.WriteArrowFile(t, path, schema, recs)
		return path
	}
	c := recordCase{key: arrow.PrimitiveTypes.Int64, weight: arrow.BinaryTypes.String, batches: []int{10}}
	schema, recs := c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	good := write("good.arrow", schema, recs)

	cases := []struct {
		name     string
		path     string
		opts     edges.Options
		contains []string
	}{
		{"missing src", good, edges.Options{Columns: edges.Columns{Src: "from"}}, []string{`no source column "from"`, "src, dst, weight, after", "--src-col"}},
		{"missing dst", good, edges.Options{Columns: edges.Columns{Dst: "to"}}, []string{`no destination column "to"`}},
		{"missing weight", good, edges.Options{Columns: edges.Columns{Weight: "w", WeightExplicit: true, ReadWeight: true}}, []string{`no weight column "w"`}},
		{"weight type", good, edges.Options{Columns: edges.Columns{ReadWeight: true}}, []string{`column "weight"`, "type string cannot be an edge weight"}},
		{"key type", good, edges.Options{Columns: edges.Columns{Src: "after"}}, []string{`source column "after" is string but destination column "dst" is int64`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFile(context.Background(), tc.path, tc.opts)
			edgetest.UserErr(t, err, tc.path, tc.contains...)
		})
	}

	// A key column of type double.
	dbl := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Float64}, {Name: "dst", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, dbl)
	b.Field(0).(*array.Float64Builder).Append(1)
	b.Field(1).(*array.Float64Builder).Append(2)
	rec := b.NewRecordBatch()
	b.Release()
	p := write("double.arrow", dbl, []arrow.RecordBatch{rec})
	rec.Release()
	_, err := ReadFile(context.Background(), p, edges.Options{})
	edgetest.UserErr(t, err, p, `column "src"`, "type double cannot be a vertex key")

	// Damaged files.
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 3, 6, 100, len(data) / 2, len(data) - 11, len(data) - 1} {
		p := filepath.Join(dir, fmt.Sprintf("cut%d.arrow", cut))
		if err := os.WriteFile(p, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(context.Background(), p, edges.Options{})
		want := "truncated"
		if cut == 0 {
			want = "empty"
		}
		edgetest.UserErr(t, err, p, want)
	}
	for name, content := range map[string][]byte{
		"text.arrow":    []byte("src,dst\n1,2\n"),
		"stream.arrow":  edgetest.ArrowStream(t, schema, recs),
		"parquet.arrow": []byte("PAR1 and more bytes PAR1"),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(context.Background(), p, edges.Options{})
		edgetest.UserErr(t, err, p, map[string]string{"text.arrow": "not an Arrow IPC file", "stream.arrow": "Arrow IPC stream", "parquet.arrow": "Parquet"}[name])
	}
	// Damage inside: a footer that points outside the file, metadata that
	// is not a flatbuffer.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < flips; i++ {
		bad := bytes.Clone(data)
		for k := 0; k < 1+rng.IntN(4); k++ {
			bad[8+rng.IntN(len(bad)-16)] ^= byte(1 << rng.IntN(8))
		}
		p := filepath.Join(dir, "flip.arrow")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		tbl, err := ReadFile(context.Background(), p, edges.Options{})
		if err != nil {
			edgetest.UserErr(t, err, p)
			continue
		}
		edgetest.Edges(t, tbl)
		tbl.Release()
	}
	_, err = ReadFile(context.Background(), dir, edges.Options{})
	edgetest.UserErr(t, err, dir, "directory")
	_, err = ReadFile(context.Background(), filepath.Join(dir, "none.arrow"), edges.Options{})
	edgetest.UserErr(t, err, filepath.Join(dir, "none.arrow"), "cannot open")
}

func TestArrowStream(t *testing.T) {
	for ki, key := range keyTypes {
		for _, comp := range compressions {
			c := recordCase{key: key, weight: weightTypes[1+ki%(len(weightTypes)-1)], batches: []int{40, 0, 333, 1}, keyNulls: 0.02, wNulls: 0.02, seed: uint64(ki)}
			schema, recs := c.records(t, memory.DefaultAllocator)
			data := edgetest.ArrowStream(t, schema, recs, comp.opt...)
			for _, skip := range []bool{true, false} {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: skip, Alloc: mem}
				tbl, err := ReadStream(context.Background(), "-", bytes.NewReader(data), opts)
				if !skip {
					edgetest.UserErr(t, err, "-", "null")
				} else {
					if err != nil {
						t.Fatalf("%v %s: %v", key, comp.name, err)
					}
					checkTable(t, tbl, recs, opts)
					tbl.Release()
				}
				mem.AssertSize(t, 0)
			}
			releaseAll(recs)
		}
	}
}

func TestArrowStreamErrors(t *testing.T) {
	c := recordCase{key: arrow.PrimitiveTypes.Int32, batches: []int{100, 100}}
	schema, recs := c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	data := edgetest.ArrowStream(t, schema, recs)
	for _, cut := range []int{len(data) - 9, len(data) / 2} {
		_, err := ReadStream(context.Background(), "in.arrows", bytes.NewReader(data[:cut]), edges.Options{})
		edgetest.UserErr(t, err, "in.arrows", "the Arrow IPC stream is corrupt or truncated at record batch", "(the input ends inside the batch)")
	}
	// Damaged batches (testdata/corrupt: a stream of 3 rows with a
	// column's length, or the batch's, set to 1000): arrow's reader panics
	// or reports its internals; the checks before it say what is wrong.
	for _, tc := range []struct{ file, says string }{
		{"buffer-length.arrows", `the Arrow IPC stream is corrupt or truncated at record batch 0 (column "src" has 1000 values in a batch of 3 rows)`},
		{"batch-length.arrows", "the Arrow IPC stream is corrupt or truncated at record batch 0 ("},
	} {
		f, err := os.Open(filepath.Join("testdata", "corrupt", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadStream(context.Background(), tc.file, f, edges.Options{})
		f.Close()
		edgetest.UserErr(t, err, tc.file, tc.says, "re-export it")
		for _, internal := range []string{"runtime error", "unknown error", "arrow/", "slice bounds"} {
			if strings.Contains(err.Error(), internal) {
				t.Errorf("%s: error says %q: %v", tc.file, internal, err)
			}
		}
	}
	_, err := ReadStream(context.Background(), "in.arrows", bytes.NewReader(data[:200]), edges.Options{})
	edgetest.UserErr(t, err, "in.arrows", "cannot read the Arrow IPC stream's schema")
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{nil, "empty"},
		{[]byte("ARROW1\x00\x00rest"), "not an Arrow IPC stream: it looks like an Arrow IPC file; pass --input-format arrow"},
		{[]byte("src dst\n1 2\n"), "not an Arrow IPC stream: it looks like text (an edge list?); pass --input-format text"},
		{[]byte("\xef\xbb\xbf\"src\",\"dst\"\n1,2\n"), "not an Arrow IPC stream: it looks like CSV text; pass --input-format csv"},
		{[]byte("%%matrixmarket matrix coordinate real general\n"), "it looks like a Matrix Market file; pass --input-format mtx"},
		{[]byte("PAR1\x15\x04"), "it looks like a Parquet file; pass --input-format parquet"},
		{[]byte{0x1f, 0x8b, 8, 0}, "it looks like a gzip-compressed file; decompress it first"},
		{[]byte("\x10\x00\x00\x00\x00\x00"), "not an Arrow IPC stream ("},
		{data[:6], "cannot read the Arrow IPC stream's schema"},
	} {
		_, err := ReadStream(context.Background(), "-", bytes.NewReader(tc.data), edges.Options{})
		edgetest.UserErr(t, err, "-", tc.want)
	}
	// From a file, as Open reads a stream file.
	path := filepath.Join(t.TempDir(), "s.arrows")
	if err = os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := ReadStream(context.Background(), path, f, edges.Options{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, tbl, recs, edges.Options{})
	tbl.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadStream(ctx, "-", bytes.NewReader(data), edges.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled read: %v", err)
	}
}

func TestAppender(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c := recordCase{key: arrow.PrimitiveTypes.Int64, weight: arrow.PrimitiveTypes.Float64, batches: []int{100, 50, 200}, keyNulls: 0.01, seed: 5}
	schema, recs := c.records(t, mem)
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}
	a, err := NewAppender("flight:edges", schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, r := range recs {
		if err := a.Append(r); err != nil {
			t.Fatal(err)
		}
		rows += r.NumRows()
		if a.Rows() != rows {
			t.Errorf("Rows %d, want %d", a.Rows(), rows)
		}
	}
	if a.Bytes() <= 0 {
		t.Errorf("Bytes %d", a.Bytes())
	}
	// The caller releases its batches; the table keeps what it aliases.
	want := bytes.Buffer{}
	wantEdges, wantSkips := expected(recs, opts)
	fmt.Fprint(&want, wantEdges, wantSkips)
	releaseAll(recs)
	tbl, err := a.Finish()
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.Buffer{}
	fmt.Fprint(&got, edgetest.Edges(t, tbl), tbl.Skipped)
	if got.String() != want.String() {
		t.Errorf("appended table differs from its batches")
	}
	if err := a.Append(recs[0]); err == nil {
		t.Error("Append after Finish succeeded")
	}
	tbl.Release()
	mem.AssertSize(t, 0)

	// Sliced batches (arrays with offsets), and a batch of another schema.
	schema, recs = c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	var sliced []arrow.RecordBatch
	for _, r := range recs {
		sliced = append(sliced, r.NewSlice(7, r.NumRows()-3))
	}
	defer releaseAll(sliced)
	a, err = NewAppender("flight:edges", schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sliced {
		if err := a.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int32}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}, {Name: "weight", Type: arrow.PrimitiveTypes.Float64}}, nil)
	ob := array.NewRecordBuilder(memory.DefaultAllocator, other)
	ob.Field(0).(*array.Int32Builder).Append(1)
	ob.Field(1).(*array.Int64Builder).Append(1)
	ob.Field(2).(*array.Float64Builder).Append(1)
	orec := ob.NewRecordBatch()
	ob.Release()
	defer orec.Release()
	edgetest.UserErr(t, a.Append(orec), "flight:edges", `column "src"`, "record batch 3 has the column as int32 where the schema announced int64")
	a.Release()
	a, _ = NewAppender("flight:edges", schema, opts)
	for _, r := range sliced {
		if err := a.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = a.Finish()
	checkTable(t, tbl, sliced, opts)
	tbl.Release()

	if _, err := NewAppender("flight:x", other, edges.Options{Columns: edges.Columns{Src: "nope"}}); err == nil {
		t.Error("missing column accepted")
	} else {
		edgetest.UserErr(t, err, "flight:x", `no source column "nope"`)
	}
}

func TestReadRecords(t *testing.T) {
	c := recordCase{key: arrow.BinaryTypes.String, weight: arrow.PrimitiveTypes.Int32, batches: []int{10, 20}, seed: 8}
	schema, recs := c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	rdr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	tbl, err := ReadRecords(context.Background(), "records", rdr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	checkTable(t, tbl, recs, opts)
	if tbl.Name != "records" {
		t.Errorf("Name %q", tbl.Name)
	}
}

// flips is how many damaged copies TestArrowFileErrors reads.
var flips = 200
