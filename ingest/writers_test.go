package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// Edge tables written by other tools: pyarrow and DuckDB (their Parquet,
// Arrow IPC and CSV writers), checked in under testdata/writers by the
// scripts in scripts/fixtures. Each file holds the same logical table
// (writersRow); the file name says which writer, options and key kind.

// writersN is the number of rows in every fixture.
const writersN = 2500

// writerFixture is how one fixture is read and what its keys are.
type writerFixture struct {
	keys    string // int32, int64, uint32, uint64 or string: what key() gives
	cols    edges.Columns
	intW    bool    // weights are integers: i % 97
	nullRow []int64 // rows with a null key or weight (skipped with SkipInvalid)
	delim   rune    // the CSV delimiter, where it is not the extension's
}

var writerFixtures = map[string]writerFixture{
	"pyarrow-snappy-int64.parquet":                 {keys: "int64"},
	"pyarrow-zstd-v2-int32.parquet":                {keys: "int32"},
	"pyarrow-gzip-plain-uint64.parquet":            {keys: "uint64"},
	"pyarrow-brotli-string.parquet":                {keys: "string"},
	"pyarrow-lz4-uint32.parquet":                   {keys: "uint32"},
	"pyarrow-none-large_string-float32.parquet":    {keys: "string"},
	"pyarrow-dictionary-float16.parquet":           {keys: "string"},
	"pyarrow-int32-weights.parquet":                {keys: "int64", intW: true},
	"pyarrow-delta-int64.parquet":                  {keys: "int64"},
	"pyarrow-delta-string.parquet":                 {keys: "string"},
	"pyarrow-names-from-to-cost.parquet":           {keys: "int64", cols: edges.Columns{Src: "from", Dst: "to", Weight: "cost"}},
	"pyarrow-nulls-int64.parquet":                  {keys: "int64", nullRow: []int64{17, 1203, 2100}},
	"pyarrow-file-int64.arrow":                     {keys: "int64"},
	"pyarrow-file-lz4-string.arrow":                {keys: "string"},
	"pyarrow-file-zstd-uint32.arrow":               {keys: "uint32"},
	"pyarrow-feather-large_string-float32.feather": {keys: "string"},
	"pyarrow-stream-dictionary.arrows":             {keys: "string"},
	"pyarrow-stream-zstd-int32.arrows":             {keys: "int32"},
	"pyarrow-string.csv":                           {keys: "string"},
	"pyarrow-int64.csv":                            {keys: "int64"},
	"duckdb-snappy-int64.parquet":                  {keys: "int64"},
	"duckdb-zstd-v2-string.parquet":                {keys: "string"},
	"duckdb-uncompressed-v2-int32.parquet":         {keys: "int32"},
	"duckdb-gzip-uint64.parquet":                   {keys: "uint64"},
	"duckdb-lz4-uint32.parquet":                    {keys: "uint32"},
	"duckdb-brotli-string-float32.parquet":         {keys: "string"},
	"duckdb-enum.parquet":                          {keys: "string"},
	"duckdb-int64.csv":                             {keys: "int64"},
	"duckdb-string.csv":                            {keys: "string"},
	// Issue 37: DECIMAL weights (INT32, INT64, FIXED_LEN_BYTE_ARRAY), int32
	// sources beside BIGINT destinations, TSV, ;-separated and headerless CSV.
	"duckdb-decimal9-int64.parquet":   {keys: "int64"},
	"duckdb-decimal18-int32.parquet":  {keys: "int32"},
	"duckdb-decimal38-string.parquet": {keys: "string"},
	"duckdb-int32-bigint.parquet":     {keys: "int32"},
	"duckdb-int64.tsv":                {keys: "int64"},
	"duckdb-semicolon-string.csv":     {keys: "string", delim: ';'},
	"duckdb-noheader-int64.csv":       {keys: "int64"},
}

// writersKey is key(x) of scripts/fixtures/pyarrow-writers.py, normalized
// as edgetest.Key gives it (int64, uint64 or string).
func writersKey(kind string, x int64) any {
	switch kind {
	case "int32":
		return x - 250
	case "int64":
		return x*1_000_000_007 - 3
	case "uint32":
		return uint64(x) + 3_000_000_000
	case "uint64":
		return uint64(x) + 1<<63 + 1
	}
	if x%50 == 0 {
		return fmt.Sprintf("ключ-%d", x)
	}
	return fmt.Sprintf("v%d", x)
}

// writersRow is row i of the logical table.
func writersRow(f writerFixture, i int64) edgetest.Edge {
	a, b := (i*7919+13)%500, (i*104729+71)%500
	w := float64(i%97) / 8
	if f.intW {
		w = float64(i % 97)
	}
	return edgetest.Edge{Row: i, Src: writersKey(f.keys, a), Dst: writersKey(f.keys, b), W: w}
}

func TestOtherWriters(t *testing.T) {
	dir := filepath.Join("testdata", "writers")
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, de := range files {
		name := de.Name()
		if strings.HasSuffix(name, ".md") {
			continue
		}
		f, ok := writerFixtures[name]
		if !ok {
			t.Errorf("%s: a fixture the test does not know; add it to writerFixtures", name)
			continue
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			opts := edges.Options{Columns: f.cols, Delimiter: f.delim}
			opts.Columns.ReadWeight = true
			var want []edgetest.Edge
			skip := map[int64]bool{}
			for _, r := range f.nullRow {
				skip[r] = true
			}
			for i := int64(0); i < writersN; i++ {
				if !skip[i] {
					want = append(want, writersRow(f, i))
				}
			}
			if len(f.nullRow) > 0 {
				_, err := Open(context.Background(), path, nil, opts)
				ue := edgetest.UserErr(t, err, path, `column "src", row 17: null vertex key`)
				if ue.Row != 17 {
					t.Errorf("row %d, want 17", ue.Row)
				}
				opts.SkipInvalid = true
			}
			tbl, err := Open(context.Background(), path, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			if !tbl.HasWeight {
				t.Fatal("the weight column was not read")
			}
			edgetest.Same(t, edgetest.Edges(t, tbl), want)
			if tbl.RowsRead != writersN || tbl.Skipped.Total() != int64(len(f.nullRow)) {
				t.Errorf("rows read %d, skipped %v; want %d, %d", tbl.RowsRead, tbl.Skipped, writersN, len(f.nullRow))
			}
		})
	}
	for name := range writerFixtures {
		if !seen[name] {
			t.Errorf("%s: listed but not in %s; regenerate the fixtures (testdata/writers/README.md)", name, dir)
		}
	}
}
