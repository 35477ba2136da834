package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/csv"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/ingest/text"
	"github.com/gpipe/gpipe/internal/usererr"
)

// textBytes reads data as a text edge list named edges.txt.
func textBytes(data []byte, opts edges.Options) (*edges.Table, error) {
	return text.Read(context.Background(), "edges.txt", bytes.NewReader(data), opts)
}

// mtxBytes reads data as a Matrix Market file named m.mtx.
func mtxBytes(data []byte, opts edges.Options) (*edges.Table, error) {
	return text.ReadMatrixMarket(context.Background(), "m.mtx", bytes.NewReader(data), opts)
}

// csvBytes reads data as a CSV edge table named edges.csv.
func csvBytes(data []byte, opts edges.Options) (*edges.Table, error) {
	return csv.Read(context.Background(), "edges.csv", bytes.NewReader(data), opts)
}

// A UTF-8 byte order mark at the start of a text input is dropped: it
// became part of the first key of an edge list (all keys strings, "\ufeff1"),
// hid a Matrix Market banner, and, before a quoted CSV header (Excel's "CSV
// UTF-8"), made the parser fail with a bare quote.
func TestUTF8BOM(t *testing.T) {
	bom := "\xef\xbb\xbf"
	tbl, err := textBytes([]byte(bom+"1 2\n2 3\n"), edges.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.KeyType != edges.KeyInt64 {
		t.Errorf("edge list keys are %v, want int64", tbl.KeyType)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}})
	tbl.Release()

	tbl, err = mtxBytes([]byte(bom+"%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n"), edges.Options{})
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}})
	tbl.Release()
	// Lines are counted as before: the mark is part of line 1.
	_, err = mtxBytes([]byte(bom+"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 9\n"), edges.Options{})
	if ue := edgetest.UserErr(t, err, "m.mtx", "column index 9 is outside 1..3"); ue.Line != 3 {
		t.Errorf("line %d, want 3", ue.Line)
	}

	for _, data := range []string{bom + "\"src\",\"dst\"\n1,2\n2,3\n", bom + "src,dst\n1,2\n2,3\n"} {
		tbl, err = csvBytes([]byte(data), edges.Options{})
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}})
		tbl.Release()
	}
}

// A UTF-16 (or UTF-32) text input is refused saying so and how to convert
// it, rather than as keys that are not UTF-8 with a Latin-1 hint.
func TestWideText(t *testing.T) {
	utf16 := func(s string, be bool) []byte {
		out := []byte{0xFF, 0xFE}
		if be {
			out = []byte{0xFE, 0xFF}
		}
		for _, c := range []byte(s) {
			if be {
				out = append(out, 0, c)
			} else {
				out = append(out, c, 0)
			}
		}
		return out
	}
	for _, be := range []bool{false, true} {
		for _, r := range []struct {
			name string
			read func([]byte, edges.Options) (*edges.Table, error)
			data string
		}{
			{"edges.csv", csvBytes, "src,dst\n1,2\n"},
			{"edges.txt", textBytes, "1 2\n"},
			{"m.mtx", mtxBytes, "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n"},
		} {
			_, err := r.read(utf16(r.data, be), edges.Options{})
			ue := edgetest.UserErr(t, err, r.name, "is UTF-16 text", "iconv -f utf-16 -t utf-8")
			if strings.Contains(err.Error(), "latin1") || ue.Line != 0 {
				t.Errorf("%s: %v", r.name, err)
			}
		}
	}
	_, err := csvBytes([]byte{0xFF, 0xFE, 0, 0, 's', 0, 0, 0}, edges.Options{})
	edgetest.UserErr(t, err, "edges.csv", "UTF-32", "iconv -f utf-32 -t utf-8")
}

// Binary files read as text say what they look like, in a short message
// (the bytes of a Parquet file's first line, all of it echoed, made a
// message of 1.5 KB).
func TestBinaryAsText(t *testing.T) {
	parquet := append([]byte("PAR1\x15\x04\x15\xe0\x1a\x15\xf8\x05L\x15\xac\x03\x15\x00\x12\x00\x00("), bytes.Repeat([]byte{0xb5, 0x2f, 0x00, ','}, 500)...)
	gzip := append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3}, bytes.Repeat([]byte("\x00,x\xd6"), 500)...)
	cases := []struct {
		data []byte
		says []string
	}{
		{parquet, []string{"looks like a Parquet file", "--input-format parquet"}},
		{gzip, []string{"looks like a gzip-compressed file", "decompress it"}},
		{[]byte("ARROW1\x00\x00\xff\xff\xff\xff"), []string{"looks like an Arrow IPC file", "--input-format arrow"}},
		{[]byte("\xff\xff\xff\xff\x10\x00\x00\x00"), []string{"looks like an Arrow IPC stream", "--input-format arrows"}},
		{[]byte("\x28\xb5\x2f\xfd\x00"), []string{"zstd-compressed"}},
		{[]byte("PK\x03\x04\x14\x00"), []string{"ZIP archive", "export the sheet as CSV"}},
	}
	for _, tc := range cases {
		for _, r := range []struct {
			name, what string
			read       func([]byte, edges.Options) (*edges.Table, error)
		}{
			{"edges.csv", "not CSV text", csvBytes},
			{"edges.txt", "not a text edge list", textBytes},
			{"m.mtx", "not a Matrix Market file", mtxBytes},
		} {
			_, err := r.read(tc.data, edges.Options{})
			edgetest.UserErr(t, err, r.name, append([]string{r.what}, tc.says...)...)
			if len(err.Error()) > 300 {
				t.Errorf("%s: message of %d bytes: %v", r.name, len(err.Error()), err)
			}
		}
	}
	// Text that starts like a magic number is text.
	tbl, err := textBytes([]byte("PAR1 PAR2\nBZh9 x\n"), edges.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl.Release()
	// Another binary file: its header is echoed short, and said not to be text.
	junk := append([]byte("\x01\x02\x00\x00"), bytes.Repeat([]byte("\x00\xf0x"), 2000)...)
	_, err = csvBytes(junk, edges.Options{})
	edgetest.UserErr(t, err, "edges.csv", `the file does not look like CSV text: its first line holds binary data ("\x01\x02\x00\x00\x00\xf0x`, `"...)`, "--input-format")
	if len(err.Error()) > 400 {
		t.Errorf("message of %d bytes: %v", len(err.Error()), err)
	}
}

// A directory given as the input is a dataset of part files (datasets.go);
// one without any says so, whatever its format (read as an Arrow IPC
// stream it was "the input is empty").
func TestDirectoryInput(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"d.csv", "d.txt", "d.mtx", "d.parquet", "d.arrow", "d.arrows"} {
		path := filepath.Join(dir, name)
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"", FormatParquet, FormatArrowFile, FormatArrowStream, FormatCSV, FormatText, FormatMTX} {
			_, err := Open(context.Background(), path, nil, edges.Options{Format: format})
			ue := edgetest.UserErr(t, err, path, ": holds no part files", "; check the path")
			if ue.Kind != usererr.NotFound {
				t.Errorf("%s as %q: kind %v", name, format, ue.Kind)
			}
		}
	}
}

// A file read as Parquet or as an Arrow IPC file that is another format
// says which, and how to read it.
func TestNotParquetOrArrowFile(t *testing.T) {
	dir := t.TempDir()
	inputs := map[string]string{
		"csv":    "src,dst\n1,2\n",
		"mtx":    "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n",
		"arrows": "\xff\xff\xff\xff\x10\x00\x00\x00\x00\x00\x0a\x00",
		"arrow":  "ARROW1\x00\x00\xff\xff\xff\xff",
		"gz":     "\x1f\x8b\x08\x00\x00\x00\x00\x00",
	}
	for _, tc := range []struct{ in, as, says string }{
		{"csv", FormatParquet, "not a Parquet file: it looks like CSV text; name it .csv or pass --input-format csv"},
		{"mtx", FormatParquet, "not a Parquet file: it looks like a Matrix Market file; name it .mtx or pass --input-format mtx"},
		{"arrows", FormatParquet, "not a Parquet file: it looks like an Arrow IPC stream; name it .arrows or pass --input-format arrows"},
		{"arrow", FormatParquet, "not a Parquet file: it looks like an Arrow IPC file; name it .arrow or pass --input-format arrow"},
		{"gz", FormatParquet, "not a Parquet file: it looks like a gzip-compressed file; decompress it first"},
		{"csv", FormatArrowFile, "not an Arrow IPC file: it looks like CSV text; name it .csv or pass --input-format csv"},
		{"gz", FormatArrowFile, "not an Arrow IPC file: it looks like a gzip-compressed file; decompress it first"},
	} {
		path := filepath.Join(dir, "in."+tc.in)
		if err := os.WriteFile(path, []byte(inputs[tc.in]), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), path, nil, edges.Options{Format: tc.as})
		edgetest.UserErr(t, err, path, tc.says)
		_, err = Open(context.Background(), "-", strings.NewReader(inputs[tc.in]), edges.Options{Format: tc.as})
		edgetest.UserErr(t, err, "-", strings.Split(tc.says, ";")[0])
	}
}
