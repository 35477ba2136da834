package parquet

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// Key columns of different integer types (int32 sources, int64
// destinations: a join's output) are read as one type that holds both,
// and int8 and int16 keys as int32.
func TestParquetKeysWidened(t *testing.T) {
	dir := t.TempDir()
	const rows = 120
	for _, tc := range []struct {
		src, dst arrow.DataType
		want     edges.KeyType
	}{
		{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, edges.KeyInt64},
		{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, edges.KeyInt64},
		{arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int64, edges.KeyInt64},
		{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Uint32, edges.KeyInt64},
		{arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64, edges.KeyUint64},
		{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int8, edges.KeyInt32},
		{arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Uint16, edges.KeyInt32},
		{arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int32, edges.KeyInt32},
	} {
		rng := rand.New(rand.NewPCG(4, 4))
		c := &edgeCase{rows: rows, src: 0, dst: 1, weight: -1, cols: []colData{
			randomColumn(rng, "src", tc.src, rows, 40, 0.1, 50),
			randomColumn(rng, "dst", tc.dst, rows, 40, 0, 50),
		}}
		path := c.write(t, dir, tc.src.Name()+"-"+tc.dst.Name()+".parquet", true, edgetest.DefaultParquetWrite.With(50))
		for _, skip := range []bool{false, true} {
			if !skip {
				readErr(t, path, edges.Options{}) // the null source keys
				continue
			}
			readChecked(t, path, edges.Options{SkipInvalid: true}, func(tbl *edges.Table) {
				if tbl.KeyType != tc.want || !arrow.TypeEqual(tbl.KeyArrowType, tc.want.ArrowType()) {
					t.Errorf("%s, %s: keys %v (%v), want %v", tc.src, tc.dst, tbl.KeyType, tbl.KeyArrowType, tc.want)
				}
				got := edgetest.Edges(t, tbl)
				k := 0
				for i := 0; i < rows; i++ {
					s, d := c.cols[0].values[i], c.cols[1].values[i]
					if s == nil {
						continue
					}
					e := got[k]
					k++
					if e.Row != int64(i) || !sameInt(e.Src, s) || !sameInt(e.Dst, d) {
						t.Fatalf("%s, %s: edge %v, want row %d %v -> %v", tc.src, tc.dst, e, i, s, d)
					}
				}
			})
		}
	}
}

// sameInt says whether a key read (int64 or uint64) is the integer v.
func sameInt(got, v any) bool {
	return bigOf(got).Cmp(bigOf(v)) == 0
}

func bigOf(v any) *big.Int {
	switch x := v.(type) {
	case int8:
		return big.NewInt(int64(x))
	case int16:
		return big.NewInt(int64(x))
	case int32:
		return big.NewInt(int64(x))
	case int64:
		return big.NewInt(x)
	case uint8:
		return big.NewInt(int64(x))
	case uint16:
		return big.NewInt(int64(x))
	case uint32:
		return big.NewInt(int64(x))
	case uint64:
		return new(big.Int).SetUint64(x)
	}
	panic(v)
}

// int64 and uint64 key columns are read as int64 where every uint64 key
// fits, as uint64 where no int64 key is negative, and refused naming both
// rows where neither holds.
func TestParquetKeysSignedAndUnsigned(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, src []any, dst []any) string {
		c := &edgeCase{rows: len(src), src: 0, dst: 1, weight: -1, cols: []colData{
			{name: "src", typ: arrow.PrimitiveTypes.Int64, values: src},
			{name: "dst", typ: arrow.PrimitiveTypes.Uint64, values: dst},
		}}
		return c.write(t, dir, name, false, edgetest.DefaultParquetWrite.With(2))
	}
	path := write("fit.parquet", []any{int64(-1), int64(2), int64(3)}, []any{uint64(2), uint64(3), uint64(1)})
	readChecked(t, path, edges.Options{}, func(tbl *edges.Table) {
		if tbl.KeyType != edges.KeyInt64 {
			t.Errorf("keys %v, want int64", tbl.KeyType)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(-1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}, {Row: 2, Src: int64(3), Dst: int64(1)}})
	})
	path = write("unsigned.parquet", []any{int64(1), int64(2), int64(3)}, []any{uint64(2), uint64(math.MaxUint64), uint64(1)})
	readChecked(t, path, edges.Options{}, func(tbl *edges.Table) {
		if tbl.KeyType != edges.KeyUint64 {
			t.Errorf("keys %v, want uint64", tbl.KeyType)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: uint64(1), Dst: uint64(2)}, {Row: 1, Src: uint64(2), Dst: uint64(math.MaxUint64)}, {Row: 2, Src: uint64(3), Dst: uint64(1)}})
	})
	path = write("neither.parquet", []any{int64(1), int64(2), int64(-3)}, []any{uint64(2), uint64(math.MaxUint64), uint64(1)})
	ue := readErr(t, path, edges.Options{})
	if want := `column "dst", row 1: source column "src" is int64 and destination column "dst" is uint64, and no integer type holds both: key 18446744073709551615 is above int64's range, and column "src" has the negative key -3 (row 2), which uint64 cannot hold; cast both key columns to one type`; !strings.Contains(ue.Error(), want) {
		t.Errorf("error %q, want it to contain %q", ue, want)
	}
}

// decimalFile writes src, dst and a DECIMAL(precision, scale) weight
// column of physical type typ with parquet-go, the weights given by their
// unscaled values (nil: null).
func decimalFile(t *testing.T, path string, typ parquet.Type, precision, scale int, enc encoding.Encoding, unscaled []*big.Int) {
	t.Helper()
	node := parquet.Decimal(scale, precision, typ)
	if enc != nil {
		node = parquet.Encoded(node, enc)
	}
	schema := parquet.NewSchema("edges", parquet.Group{
		"src":    parquet.Leaf(parquet.Int64Type),
		"dst":    parquet.Leaf(parquet.Int64Type),
		"weight": parquet.Optional(node),
	})
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(f, schema)
	// Columns in name order: dst 0, src 1, weight 2.
	var rows []parquet.Row
	for i, u := range unscaled {
		wv := parquet.NullValue().Level(0, 0, 2)
		if u != nil {
			var v parquet.Value
			switch typ.Kind() {
			case parquet.Int32:
				v = parquet.Int32Value(int32(u.Int64()))
			case parquet.Int64:
				v = parquet.Int64Value(u.Int64())
			case parquet.FixedLenByteArray:
				v = parquet.FixedLenByteArrayValue(twos(u, typ.Length()))
			default:
				v = parquet.ByteArrayValue(twos(u, 0))
			}
			wv = v.Level(0, 1, 2)
		}
		rows = append(rows, parquet.Row{parquet.Int64Value(int64(i+1)).Level(0, 0, 0), parquet.Int64Value(int64(i)).Level(0, 0, 1), wv})
	}
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// twos is n in big-endian two's complement: in width bytes, or the fewest
// that hold it (width 0).
func twos(n *big.Int, width int) []byte {
	if width == 0 {
		width = (n.BitLen() + 8) / 8 // room for the sign bit
	}
	m := new(big.Int).Set(n)
	if n.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*width)))
	}
	return m.FillBytes(make([]byte, width))
}

// DECIMAL weights (DuckDB's type for 1.5; Spark's and warehouses' exports)
// are read as float64 in every physical type the format allows, the nearest
// double to each; a weight with more digits than a float64 holds is
// rounded and the table's notes say so.
func TestParquetDecimalWeights(t *testing.T) {
	dir := t.TempDir()
	b := func(s string) *big.Int {
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			t.Fatal(s)
		}
		return n
	}
	small := []*big.Int{b("15"), b("3"), b("-225"), b("0"), b("123456789")}
	wantSmall := []float64{0.15, 0.03, -2.25, 0, 1234567.89}
	for _, tc := range []struct {
		name      string
		typ       parquet.Type
		precision int
		enc       encoding.Encoding
	}{
		{"int32", parquet.Int32Type, 9, nil},
		{"int32-dict", parquet.Int32Type, 9, &parquet.RLEDictionary},
		{"int64", parquet.Int64Type, 18, nil},
		{"int64-delta", parquet.Int64Type, 18, &parquet.DeltaBinaryPacked},
		{"flba16", parquet.FixedLenByteArrayType(16), 38, nil},
		{"flba16-dict", parquet.FixedLenByteArrayType(16), 38, &parquet.RLEDictionary},
		{"flba16-delta", parquet.FixedLenByteArrayType(16), 38, &parquet.DeltaByteArray},
		{"flba16-split", parquet.FixedLenByteArrayType(16), 38, &parquet.ByteStreamSplit},
		{"flba32", parquet.FixedLenByteArrayType(32), 76, nil},
		{"bytes", parquet.ByteArrayType, 38, nil},
		{"bytes-dict", parquet.ByteArrayType, 38, &parquet.RLEDictionary},
		{"bytes-delta", parquet.ByteArrayType, 38, &parquet.DeltaByteArray},
	} {
		path := filepath.Join(dir, tc.name+".parquet")
		decimalFile(t, path, tc.typ, tc.precision, 2, tc.enc, small)
		readChecked(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}}, func(tbl *edges.Table) {
			got := edgetest.Edges(t, tbl)
			for i, e := range got {
				if e.W != wantSmall[i] {
					t.Errorf("%s: row %d weight %v, want %v", tc.name, i, e.W, wantSmall[i])
				}
			}
			if len(tbl.Notes) != 0 {
				t.Errorf("%s: notes %q for weights a float64 holds", tc.name, tbl.Notes)
			}
		})
	}

	// 20 and 40 digits do not survive; nulls are errors, or skipped.
	wide := []*big.Int{b("15"), b("1234567890123456789012"), nil, b("-1234567890123456789012345678901234567890"), b("7")}
	for _, tc := range []struct {
		name string
		typ  parquet.Type
	}{{"wide-flba", parquet.FixedLenByteArrayType(32)}, {"wide-bytes", parquet.ByteArrayType}} {
		path := filepath.Join(dir, tc.name+".parquet")
		decimalFile(t, path, tc.typ, 76, 3, nil, wide)
		ue := readErr(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}})
		if !strings.Contains(ue.Error(), `column "weight", row 2: null weight`) {
			t.Errorf("%s: %v", tc.name, ue)
		}
		readChecked(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}, func(tbl *edges.Table) {
			edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{
				{Row: 0, Src: int64(0), Dst: int64(1), W: 0.015},
				{Row: 1, Src: int64(1), Dst: int64(2), W: 1234567890123456789.012},
				{Row: 3, Src: int64(3), Dst: int64(4), W: -1234567890123456789012345678901234567.890},
				{Row: 4, Src: int64(4), Dst: int64(5), W: 0.007},
			})
			want := `weight column "weight" is decimal(76,3), read as float64: 2 weights have more significant digits than a float64 holds (15 to 17) and were rounded (the first, row 1: 1234567890123456789.012 became 1.2345678901234568e+18)`
			if len(tbl.Notes) != 1 || tbl.Notes[0] != want {
				t.Errorf("%s: notes %q, want [%s]", tc.name, tbl.Notes, want)
			}
		})
	}
}
