package ingest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
)

// readFile reads path with opts, failing the test on an error.
func readFile(t testing.TB, path string, opts edges.Options) *edges.Table {
	t.Helper()
	tbl, err := Open(context.Background(), path, nil, opts)
	if err != nil {
		t.Fatalf("read %s: %v", filepath.Base(path), err)
	}
	return tbl
}

// Standard input is read in the format --input-format names (it was always
// an Arrow IPC stream, and other formats were refused): from a pipe, from
// a regular file (< file), and from any io.Reader.
func TestStdinFormats(t *testing.T) {
	dir := t.TempDir()
	want := []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 0.5}, {Row: 1, Src: int64(2), Dst: int64(3), W: 1.5}}

	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}, {Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{2, 3}, nil)
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{0.5, 1.5}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	arrowPath := filepath.Join(dir, "e.arrow")
	edgetest.WriteArrowFile(t, arrowPath, schema, []arrow.RecordBatch{rec})
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	pqPath := edgetest.WriteParquet(t, dir, "e.parquet", tbl, edgetest.DefaultParquetWrite)
	tbl.Release()
	fileBytes := func(path string) []byte {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	inputs := map[string][]byte{
		FormatArrowStream: edgetest.ArrowStream(t, schema, []arrow.RecordBatch{rec}),
		FormatArrowFile:   fileBytes(arrowPath),
		FormatParquet:     fileBytes(pqPath),
		FormatCSV:         []byte("\xef\xbb\xbf\"src\",\"dst\",\"weight\"\n1,2,0.5\n2,3,1.5\n"),
		FormatText:        []byte("# comment\n1 2 0.5\n2 3 1.5\n"),
		FormatMTX:         []byte("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 0.5\n2 3 1.5\n"),
	}
	opts := func(format string) edges.Options {
		return edges.Options{Format: format, Columns: edges.Columns{ReadWeight: true}}
	}
	for format, data := range inputs {
		check := func(how string, tbl *edges.Table, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s from %s: %v", format, how, err)
			}
			if tbl.Name != "-" {
				t.Errorf("%s from %s: name %q", format, how, tbl.Name)
			}
			edgetest.Same(t, edgetest.Edges(t, tbl), want)
			tbl.Release()
		}
		tbl, err := Open(context.Background(), "-", bytes.NewReader(data), opts(format))
		check("a bytes.Reader", tbl, err)

		path := filepath.Join(dir, "in-"+format)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err = Open(context.Background(), "-", f, opts(format))
		check("a regular file", tbl, err)
		f.Close()

		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, _ = pw.Write(data)
			pw.Close()
		}()
		tbl, err = Open(context.Background(), "-", pr, opts(format))
		check("a pipe", tbl, err)
		pr.Close()
	}

	// Without --input-format, Parquet and Arrow IPC files and streams are
	// told from their first bytes, from a bytes.Reader, a file and a pipe.
	for _, format := range []string{FormatParquet, FormatArrowFile, FormatArrowStream} {
		data := inputs[format]
		noFormat := edges.Options{Columns: edges.Columns{ReadWeight: true}}
		tbl, err := Open(context.Background(), "-", bytes.NewReader(data), noFormat)
		check := func(how string, tbl *edges.Table, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s from %s without a format: %v", format, how, err)
			}
			edgetest.Same(t, edgetest.Edges(t, tbl), want)
			tbl.Release()
		}
		check("a bytes.Reader", tbl, err)
		f, err := os.Open(filepath.Join(dir, "in-"+format))
		if err != nil {
			t.Fatal(err)
		}
		tbl, err = Open(context.Background(), "-", f, noFormat)
		check("a regular file", tbl, err)
		f.Close()
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, _ = pw.Write(data)
			pw.Close()
		}()
		tbl, err = Open(context.Background(), "-", pr, noFormat)
		check("a pipe", tbl, err)
		pr.Close()
	}

	// Read as a stream (no --input-format), each text format says what it
	// looks like and which --input-format reads it.
	for format, says := range map[string]string{
		FormatCSV:  "-: the input is not an Arrow IPC stream: it looks like CSV text; pass --input-format csv",
		FormatMTX:  "-: the input is not an Arrow IPC stream: it looks like a Matrix Market file; pass --input-format mtx",
		FormatText: "-: the input is not an Arrow IPC stream: it looks like text (an edge list?); pass --input-format text",
	} {
		_, err := Open(context.Background(), "-", io.MultiReader(bytes.NewReader(inputs[format])), edges.Options{})
		edgetest.UserErr(t, err, "-", says)
	}
	// A file named .arrows says how to name it.
	path := filepath.Join(dir, "e.arrows")
	if err := os.WriteFile(path, inputs[FormatCSV], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, nil, edges.Options{})
	edgetest.UserErr(t, err, path, "it looks like CSV text; name it .csv or pass --input-format csv")

	// An empty standard input is an error, as an empty file is (an empty
	// edge list is an empty graph).
	for format := range inputs {
		tbl, err := Open(context.Background(), "-", bytes.NewReader(nil), edges.Options{Format: format})
		if format == FormatText {
			if err != nil || tbl.NumEdges() != 0 {
				t.Errorf("empty edge list: %v", err)
			}
			continue
		}
		edgetest.UserErr(t, err, "-")
	}
	_, err = Open(context.Background(), "-", bytes.NewReader(nil), edges.Options{Format: "xml"})
	edgetest.UserErr(t, err, "", `unknown input format "xml"`)
}

// Every extension an edge list has reads as one through Open, and names
// the table by its path.
func TestEdgeListExtensions(t *testing.T) {
	dir := t.TempDir()
	want := []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 0.5}, {Row: 1, Src: int64(2), Dst: int64(3), W: 1.5}}
	for _, ext := range []string{".txt", ".el", ".wel", ".edges", ".snap"} {
		path := filepath.Join(dir, "g"+ext)
		if err := os.WriteFile(path, []byte("# c\n1\t2\t0.5\n2 3 1.5\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tbl := readFile(t, path, edges.Options{Columns: edges.Columns{ReadWeight: true}})
		edgetest.Same(t, edgetest.Edges(t, tbl), want)
		if tbl.Name != path {
			t.Errorf("%s: Name %q", ext, tbl.Name)
		}
		tbl.Release()
	}
}

// A .tsv file is CSV separated by tabs, with a header line or without
// (--header auto tells), and --input-format tsv reads one from stdin.
func TestTSV(t *testing.T) {
	dir := t.TempDir()
	want := []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 0.5}, {Row: 1, Src: int64(2), Dst: int64(3), W: 1.5}}
	weighted := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	for _, data := range []string{"src\tdst\tweight\n1\t2\t0.5\n2\t3\t1.5\n", "1\t2\t0.5\n2\t3\t1.5\n", "\"src\"\t\"dst\"\tweight\n1\t2\t0.5\n2\t3\t1.5\n"} {
		path := filepath.Join(dir, "g.tsv")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		tbl := readFile(t, path, weighted)
		edgetest.Same(t, edgetest.Edges(t, tbl), want)
		tbl.Release()
		stdin := weighted
		stdin.Format = FormatTSV
		tbl, err := Open(context.Background(), "-", strings.NewReader(data), stdin)
		if err != nil {
			t.Fatal(err)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), want)
		tbl.Release()
	}
	// The header of a TSV file is never an edge (it was, read as an edge
	// list, for bfs, cc and pagerank).
	path := filepath.Join(dir, "h.tsv")
	if err := os.WriteFile(path, []byte("from\tto\n1\t2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, nil, edges.Options{})
	edgetest.UserErr(t, err, path, `no source column "src" (columns: from, to)`)
}

// The format names the readers' messages suggest (--input-format csv, name
// it .csv) are the ones Open takes, and the extensions they suggest say the
// same format to FormatOf.
func TestFormatNames(t *testing.T) {
	for format, name := range map[string]string{
		FormatParquet: sniff.Parquet, FormatArrowFile: sniff.ArrowFile, FormatArrowStream: sniff.ArrowStream,
		FormatCSV: sniff.CSV, FormatText: sniff.Text, FormatMTX: sniff.MTX,
	} {
		if name != format {
			t.Errorf("the readers name format %q %q", format, name)
		}
		if got, err := FormatOf("x" + sniff.Ext[format]); err != nil || got != format {
			t.Errorf("format %s: messages suggest %q, which FormatOf reads as %q, %v", format, sniff.Ext[format], got, err)
		}
	}
	if len(sniff.Ext) != 6 {
		t.Errorf("extensions of %d formats, want 6", len(sniff.Ext))
	}
}

// An extension or a format name the user gave is shown cut short, as other
// values are.
func TestFormatEchoesShort(t *testing.T) {
	long := strings.Repeat("x", 1000)
	_, err := FormatOf("edges." + long)
	edgetest.UserErr(t, err, "edges.", `from the extension ".`+long[:59]+`..."`)
	_, err = Open(context.Background(), "-", bytes.NewReader(nil), edges.Options{Format: long})
	edgetest.UserErr(t, err, "", `unknown input format "`+long[:60]+`..."`)
	if len(err.Error()) > 400 {
		t.Errorf("message of %d bytes", len(err.Error()))
	}
}
