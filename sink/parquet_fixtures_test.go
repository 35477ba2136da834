package sink

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The files of testdata/parquet-writer are what the sink writes for the
// tables below, and expected.json says what they hold, so that readers
// without Go read them back: DuckDB (scripts/parquet-readback/duckdb-check.mjs,
// run by TestParquetWriterDuckDB where DuckDB is installed) and pyarrow
// (scripts/parquet-readback/pyarrow-check.py, on the GPU machine). The test
// below fails when the writer's output changes; then run
//
//	go test ./sink -run TestParquetWriterFixtures -update
//
// and commit the files.

var update = flag.Bool("update", false, "rewrite testdata/parquet-writer")

const fixtureDir = "testdata/parquet-writer"

// fixture is one committed file: a table and how it is written.
type fixture struct {
	file string
	cols []pqCol
	rows int
	opts Options
}

// fixtures are the committed files: every column type with nulls, in
// dictionary chunks and in plain ones (unique values, more than dictProbe
// of them in a row group), every codec, no rows, one row, and an edge table
// as gpipe gen writes it.
func fixtures() []fixture {
	seq := func(name string, dt arrow.DataType, f func(i int) any) pqCol {
		return pqCol{arrow.Field{Name: name, Type: dt}, f}
	}
	plain := []pqCol{
		seq("vertex", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(i*3 - 5000) }),
		seq("u32", arrow.PrimitiveTypes.Uint32, func(i int) any { return uint32(1<<31) + uint32(i)*7 - 20000 }),
		seq("f32", arrow.PrimitiveTypes.Float32, func(i int) any { return float32(i)/3 - 10 }),
		seq("name", arrow.BinaryTypes.LargeString, func(i int) any { return "k" + strconv.Itoa(i*13) }),
		// A nullable column of unique values, nulls in runs.
		{arrow.Field{Name: "parent", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, func(i int) any {
			if i%1000 < 50 {
				return nil
			}
			return int64(i*2 + 1)
		}},
	}
	edges := []pqCol{
		seq("src", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(mix(1, i) % 4096) }),
		seq("dst", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(mix(2, i) % 4096) }),
		seq("weight", arrow.PrimitiveTypes.Float64, func(i int) any { return float64(1 + mix(3, i)%255) }),
	}
	return []fixture{
		{"all-types-zstd.parquet", allTypeColumns(50, 11), 1500, Options{BatchRows: 600}},
		{"all-types-snappy.parquet", allTypeColumns(1000, 12), 300, Options{BatchRows: 128, Compression: "snappy"}},
		{"all-types-gzip.parquet", allTypeColumns(20, 13), 300, Options{BatchRows: 128, Compression: "gzip"}},
		{"all-types-none.parquet", allTypeColumns(1000, 14), 300, Options{BatchRows: 128, Compression: "none"}},
		{"all-types-empty.parquet", allTypeColumns(10, 15), 0, Options{}},
		{"all-types-one-row.parquet", allTypeColumns(10, 16), 1, Options{}},
		{"plain-zstd.parquet", plain, 5000, Options{}},
		{"edges-zstd.parquet", edges, 3000, Options{BatchRows: 1024}},
	}
}

// expectedFile is what expected.json says of one file.
type expectedFile struct {
	File      string           `json:"file"`
	Rows      int              `json:"rows"`
	RowGroups []int            `json:"row_groups"`
	Columns   []expectedColumn `json:"columns"`
}

type expectedColumn struct {
	Name string `json:"name"`
	// Arrow is the type pyarrow reads back (dictionaries of numbers come
	// back as numbers), DuckDB the type DuckDB gives the column, Physical
	// the kind of the values: int, float, double, string, binary.
	Arrow    string `json:"arrow"`
	DuckDB   string `json:"duckdb"`
	Physical string `json:"physical"`
	// Values are the cells as text: integers in decimal, floats as Go
	// prints them (shortest form; "NaN", "+Inf", "-Inf", "-0"), binaries
	// in hex; null for a null.
	Values []*string `json:"values"`
	// Stats is each row group's: min and max (as the values; null where
	// the row group has no non-null value other than NaN) and null count.
	Stats []expectedStats `json:"stats"`
}

type expectedStats struct {
	Min   *string `json:"min"`
	Max   *string `json:"max"`
	Nulls int     `json:"nulls"`
}

func TestParquetWriterFixtures(t *testing.T) {
	var want []expectedFile
	for _, fx := range fixtures() {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		rec := buildRecord(mem, fx.cols, fx.rows)
		path := filepath.Join(t.TempDir(), fx.file)
		writePieces(t, path, rec, []int{700}, fx.opts)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		committed := filepath.Join(fixtureDir, fx.file)
		if *update {
			if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(committed, got, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if old, err := os.ReadFile(committed); err != nil || !bytes.Equal(old, got) {
			t.Errorf("%s: the writer's output changed (%v); rerun with -update and commit %s", fx.file, err, fixtureDir)
		}
		want = append(want, expectFile(fx, rec, path))
		rec.Release()
		mem.AssertSize(t, 0)
	}
	// One line a file: compact, and a change shows which file it touches.
	js := []byte("[\n")
	for i, ef := range want {
		line, err := json.Marshal(ef)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			js = append(js, ",\n"...)
		}
		js = append(js, line...)
	}
	js = append(js, "\n]\n"...)
	committed := filepath.Join(fixtureDir, "expected.json")
	if *update {
		if err := os.WriteFile(committed, js, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if old, err := os.ReadFile(committed); err != nil || !bytes.Equal(old, js) {
		t.Errorf("expected.json changed (%v); rerun with -update and commit %s", err, fixtureDir)
	}
}

// expectFile describes the file written at path from rec.
func expectFile(fx fixture, rec arrow.RecordBatch, path string) expectedFile {
	ef := expectedFile{File: fx.file, Rows: fx.rows, RowGroups: []int{}}
	group := fx.opts.BatchRows
	if group == 0 {
		group = DefaultParquetRowGroup
	}
	for lo := 0; lo < fx.rows; lo += group {
		ef.RowGroups = append(ef.RowGroups, min(group, fx.rows-lo))
	}
	for j, f := range rec.Schema().Fields() {
		col := rec.Column(j)
		ec := expectedColumn{Name: f.Name, Values: []*string{}, Stats: []expectedStats{}}
		ec.Arrow, ec.DuckDB, ec.Physical = expectedTypes(f.Type)
		for i := 0; i < col.Len(); i++ {
			ec.Values = append(ec.Values, expectedText(cell(col, i)))
		}
		lo := 0
		for _, n := range ef.RowGroups {
			ec.Stats = append(ec.Stats, expectStats(col, lo, lo+n))
			lo += n
		}
		ef.Columns = append(ef.Columns, ec)
	}
	return ef
}

// expectedTypes names an Arrow type as pyarrow reads it back and as DuckDB
// reads it, and the kind of its values.
func expectedTypes(dt arrow.DataType) (arrowName, duckdb, physical string) {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		a, dk, p := expectedTypes(d.ValueType)
		if arrow.IsBaseBinary(d.ValueType.ID()) {
			a = "dictionary<values=" + a + ", indices=" + d.IndexType.String() + ", ordered=0>"
		}
		return a, dk, p
	}
	switch dt.ID() {
	case arrow.INT32:
		return "int32", "INTEGER", "int"
	case arrow.UINT32:
		return "uint32", "UINTEGER", "int"
	case arrow.INT64:
		return "int64", "BIGINT", "int"
	case arrow.UINT64:
		return "uint64", "UBIGINT", "int"
	case arrow.FLOAT32:
		return "float", "FLOAT", "float"
	case arrow.FLOAT64:
		return "double", "DOUBLE", "double"
	case arrow.STRING:
		return "string", "VARCHAR", "string"
	case arrow.LARGE_STRING:
		return "large_string", "VARCHAR", "string"
	case arrow.BINARY:
		return "binary", "BLOB", "binary"
	case arrow.LARGE_BINARY:
		return "large_binary", "BLOB", "binary"
	}
	panic("expectedTypes: " + dt.String())
}

// expectedText is a cell as expected.json writes it.
func expectedText(v any) *string {
	var s string
	switch x := v.(type) {
	case nil:
		return nil
	case int32:
		s = strconv.FormatInt(int64(x), 10)
	case uint32:
		s = strconv.FormatUint(uint64(x), 10)
	case int64:
		s = strconv.FormatInt(x, 10)
	case uint64:
		s = strconv.FormatUint(x, 10)
	case float32:
		s = strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		s = x
	case []byte:
		s = hex.EncodeToString(x)
	}
	return &s
}

// expectStats is the statistics of rows [lo, hi) of col, as checkChunkStats
// checks them.
func expectStats(col arrow.Array, lo, hi int) expectedStats {
	var st expectedStats
	var low, high any
	for i := lo; i < hi; i++ {
		v := cell(col, i)
		switch x := v.(type) {
		case nil:
			st.Nulls++
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
		if low == nil || less(v, low) {
			low = v
		}
		if high == nil || less(high, v) {
			high = v
		}
	}
	switch x := low.(type) {
	case float32:
		if x == 0 {
			low = float32(math.Copysign(0, -1))
		}
	case float64:
		if x == 0 {
			low = math.Copysign(0, -1)
		}
	}
	switch x := high.(type) {
	case float32:
		if x == 0 {
			high = float32(0)
		}
	case float64:
		if x == 0 {
			high = float64(0)
		}
	}
	st.Min, st.Max = expectedText(low), expectedText(high)
	return st
}

// TestParquetWriterFixturesRead reads the committed files with the Go
// readers, against expected.json, so that the file the other readers
// check is known good here too.
func TestParquetWriterFixturesRead(t *testing.T) {
	js, err := os.ReadFile(filepath.Join(fixtureDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var files []expectedFile
	if err := json.Unmarshal(js, &files); err != nil {
		t.Fatal(err)
	}
	if len(files) != len(fixtures()) {
		t.Fatalf("expected.json has %d files, want %d", len(files), len(fixtures()))
	}
	for _, ef := range files {
		path := filepath.Join(fixtureDir, ef.File)
		recs, _ := readParquet(t, path)
		for j, ec := range ef.Columns {
			row := 0
			for _, r := range recs {
				if got := r.Schema().Field(j).Type; arrowName(got) != ec.Arrow {
					t.Fatalf("%s: column %s read as %s, want %s", ef.File, ec.Name, got, ec.Arrow)
				}
				for i := 0; i < r.Column(j).Len(); i++ {
					if got, want := expectedText(cell(r.Column(j), i)), ec.Values[row]; !sameText(got, want) {
						t.Fatalf("%s: column %s row %d: %v, want %v", ef.File, ec.Name, row, deref(got), deref(want))
					}
					row++
				}
			}
			if row != ef.Rows {
				t.Fatalf("%s: column %s has %d rows, want %d", ef.File, ec.Name, row, ef.Rows)
			}
		}
		pf := openParquetGo(t, path)
		if int(pf.NumRows()) != ef.Rows || len(pf.RowGroups()) != len(ef.RowGroups) {
			t.Fatalf("%s: parquet-go reads %d rows in %d row groups", ef.File, pf.NumRows(), len(pf.RowGroups()))
		}
	}
}

// arrowName is an Arrow type's name as pyarrow prints it.
func arrowName(dt arrow.DataType) string {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		return "dictionary<values=" + arrowName(d.ValueType) + ", indices=" + d.IndexType.String() + ", ordered=0>"
	}
	switch dt.ID() {
	case arrow.FLOAT32:
		return "float"
	case arrow.FLOAT64:
		return "double"
	case arrow.STRING:
		return "string"
	case arrow.LARGE_STRING:
		return "large_string"
	}
	return dt.String()
}

func sameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// duckdbModules is where the DuckDB checker finds @duckdb/node-api:
// $GPIPE_DUCKDB_MODULES, else .duckdb/node_modules at the repository root
// (scripts/parquet-readback/install-duckdb.sh puts it there).
func duckdbModules() string {
	if d := os.Getenv("GPIPE_DUCKDB_MODULES"); d != "" {
		return d
	}
	abs, _ := filepath.Abs(filepath.Join("..", ".duckdb", "node_modules"))
	return abs
}

// TestParquetWriterDuckDB reads the committed files with DuckDB (its own
// Parquet reader, in C++), where node and DuckDB's node package are
// installed; it skips elsewhere, and fails under GPIPE_REQUIRE_DUCKDB=1.
func TestParquetWriterDuckDB(t *testing.T) {
	mods := duckdbModules()
	_, err := os.Stat(filepath.Join(mods, "@duckdb", "node-api"))
	node, nerr := exec.LookPath("node")
	if err != nil || nerr != nil {
		if os.Getenv("GPIPE_REQUIRE_DUCKDB") == "1" {
			t.Fatalf("DuckDB is required: node %v, @duckdb/node-api in %s: %v", nerr, mods, err)
		}
		t.Skip("no node or no @duckdb/node-api (scripts/parquet-readback/install-duckdb.sh installs it)")
	}
	cmd := exec.Command(node, filepath.Join("..", "scripts", "parquet-readback", "duckdb-check.mjs"), fixtureDir)
	cmd.Env = append(os.Environ(), "GPIPE_DUCKDB_MODULES="+mods)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("DuckDB check failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), " 0 failed") {
		t.Fatalf("DuckDB check:\n%s", out)
	}
	t.Logf("%s", out)
}
