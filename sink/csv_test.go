package sink

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestCSVText(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.csv")
	writeInTwo(t, path, rec, Options{})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != testCSV {
		gotLines, wantLines := strings.Split(string(data), "\n"), strings.Split(testCSV, "\n")
		for i := range min(len(gotLines), len(wantLines)) {
			if gotLines[i] != wantLines[i] {
				t.Errorf("line %d: %q, want %q", i+1, gotLines[i], wantLines[i])
			}
		}
		t.Fatalf("CSV:\n%q\nwant:\n%q", data, testCSV)
	}

	// A standard reader parses it back to the same fields.
	r := csv.NewReader(strings.NewReader(string(data)))
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != int(rec.NumRows())+1 {
		t.Fatalf("%d rows", len(rows))
	}
	if strings.Join(rows[0], ",") != "i32,i64,u32,u64,s,ls,f" {
		t.Errorf("header %q", rows[0])
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		for j := 0; j < int(rec.NumCols()); j++ {
			want := cellText(rec.Column(j), i)
			if got := rows[i+1][j]; got != want {
				t.Errorf("row %d column %s: %q, want %q", i, rec.ColumnName(j), got, want)
			}
		}
	}
}

// cellText is the field encoding/csv should read for row i of a: what the
// value means as text ("" for a null, CR LF read as LF as encoding/csv does).
func cellText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return ""
	}
	switch a := a.(type) {
	case *array.Float64:
		f := a.Value(i)
		if math.IsNaN(f) {
			return "nan"
		}
		if math.IsInf(f, 0) {
			return strings.TrimPrefix(strings.ToLower(strconv.FormatFloat(f, 'g', -1, 64)), "+")
		}
		// The text must read back to the same float.
		return strconv.FormatFloat(f, 'g', -1, 64)
	case *array.String:
		return strings.ReplaceAll(a.Value(i), "\r\n", "\n")
	case *array.LargeString:
		return strings.ReplaceAll(a.Value(i), "\r\n", "\n")
	}
	return a.ValueStr(i)
}

func TestCSVFloatsReadBack(t *testing.T) {
	for _, f := range []float64{0.1, 1.0 / 3, 1e-300, 5e-324, math.MaxFloat64, 2.5e15, 123456789012345678} {
		text := string(appendCSVFloat(nil, f, 64))
		back, err := strconv.ParseFloat(text, 64)
		if err != nil || back != f {
			t.Errorf("%v written as %q reads back as %v (%v)", f, text, back, err)
		}
	}
	if got := string(appendCSVFloat(nil, float64(float32(0.1)), 32)); got != "0.1" {
		t.Errorf("float32 0.1 written as %q", got)
	}
}

func TestCSVOtherTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "d", Type: dictType, Nullable: true},
		{Name: "sv", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "n", Type: arrow.Null, Nullable: true},
		{Name: "needs, quotes", Type: arrow.PrimitiveTypes.Int8},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int8Builder).AppendValues([]int8{-128, 0, 127}, []bool{true, false, true})
	b.Field(1).(*array.Int16Builder).AppendValues([]int16{-32768, 1, 32767}, nil)
	b.Field(2).(*array.Uint8Builder).AppendValues([]uint8{0, 1, 255}, nil)
	b.Field(3).(*array.Uint16Builder).AppendValues([]uint16{0, 1, 65535}, nil)
	b.Field(4).(*array.Float32Builder).AppendValues([]float32{0.1, float32(math.Inf(-1)), 0}, []bool{true, true, false})
	b.Field(5).(*array.BooleanBuilder).AppendValues([]bool{true, false, false}, []bool{true, true, false})
	db := b.Field(6).(*array.BinaryDictionaryBuilder)
	if err := db.AppendString("x,y"); err != nil {
		t.Fatal(err)
	}
	db.AppendNull()
	if err := db.AppendString("x,y"); err != nil {
		t.Fatal(err)
	}
	b.Field(7).(*array.StringViewBuilder).AppendValues([]string{"a long string view value", "", "q"}, []bool{true, true, false})
	b.Field(8).(*array.NullBuilder).AppendNulls(3)
	b.Field(9).(*array.Int8Builder).AppendValues([]int8{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	path := filepath.Join(t.TempDir(), "types.csv")
	if err := WriteRecord(context.Background(), path, rec, Options{BatchRows: 2}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `i8,i16,u8,u16,f32,b,d,sv,n,"needs, quotes"` + "\n" +
		`-128,-32768,0,0,0.1,true,"x,y",a long string view value,,1` + "\n" +
		`,1,1,1,-inf,false,,"",,2` + "\n" +
		`127,32767,255,65535,,,"x,y",,,3` + "\n"
	if string(data) != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", data, want)
	}
}

func TestCSVQuoting(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      "plain",
		"":           `""`,
		"a,b":        `"a,b"`,
		`a"b`:        `"a""b"`,
		`""`:         `""""""`,
		"a\nb":       "\"a\nb\"",
		"a\rb":       "\"a\rb\"",
		" a":         `" a"`,
		"a ":         `"a "`,
		"\ta":        "\"\ta\"",
		"in side":    "in side",
		"ünïcödé":    "ünïcödé",
		`say "x", y`: `"say ""x"", y"`,
	} {
		if got := string(appendCSVString(nil, in)); got != want {
			t.Errorf("%q written as %s, want %s", in, got, want)
		}
	}
}

// BenchmarkCSV measures the CSV encoder on a vertex table (uint32 id,
// float64 value, int64 with nulls).
func BenchmarkCSV(b *testing.B) {
	const n = 1 << 16
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "vertex", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "rank", Type: arrow.PrimitiveTypes.Float64},
		{Name: "dist", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Uint32Builder).Append(uint32(i))
		rb.Field(1).(*array.Float64Builder).Append(1 / float64(i+7))
		if i%5 == 0 {
			rb.Field(2).AppendNull()
		} else {
			rb.Field(2).(*array.Int64Builder).Append(int64(i % 50))
		}
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	newEnc, err := csvEncoder(schema, "")
	if err != nil {
		b.Fatal(err)
	}
	var out countWriter
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := &writer{format: FormatCSV, schema: schema, batch: defaultCSVBatch}
		w.track = &trackWriter{w: &out}
		w.bw = newBufWriter(w.track)
		enc, err := newEnc(w.bw)
		if err != nil {
			b.Fatal(err)
		}
		if err := enc.write(rec); err != nil {
			b.Fatal(err)
		}
		_ = w.bw.Flush()
	}
	b.SetBytes(out.n / int64(b.N))
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
