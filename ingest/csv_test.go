package ingest

import (
	"bytes"
	"context"
	"testing"
)

// readCSVBytes reads data as a CSV edge table named edges.csv.
func readCSVBytes(data []byte, opts Options) (*EdgeTable, error) {
	return readCSV(context.Background(), "edges.csv", bytes.NewReader(data), opts)
}

// A header name with a CR or a vertical tab is quoted in the message, which
// stays one line (found by FuzzCSV).
func TestCSVMissingColumnControlChars(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"\v\n", `no source column "src" (columns: "\v")`},
		{"src,\"dst\r\",w\n1,2,3\n", `no destination column "dst" (columns: src, "dst\r", w)`},
		{"a,b\n", `no source column "src" (columns: a, b)`},
	} {
		_, err := readCSVBytes([]byte(tc.data), Options{})
		userErr(t, err, "edges.csv", tc.want)
	}
}

// String keys must be UTF-8 (the vertex column is Arrow utf8); a Latin-1
// key fails naming its row and line, and --skip-invalid drops its row.
func TestCSVKeysNotUTF8(t *testing.T) {
	data := []byte("src,dst\nanna,bob\nbob,Jos\xe9\ncarl,anna\n")
	_, err := readCSVBytes(data, Options{})
	ue := userErr(t, err, "edges.csv", `column "dst", line 3: vertex key "Jos\xe9" is not valid UTF-8; convert the file to UTF-8`)
	if ue.Row != 1 || ue.Line != 3 {
		t.Errorf("row %d, line %d; want 1, 3", ue.Row, ue.Line)
	}
	tbl, err := readCSVBytes(data, Options{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	sameEdges(t, tableEdges(t, tbl), []arEdge{{row: 0, src: "anna", dst: "bob"}, {row: 2, src: "carl", dst: "anna"}})
	if tbl.Skipped[skipBadUTF8] != 1 || tbl.Skipped.Total() != 1 {
		t.Errorf("skipped %v", tbl.Skipped)
	}
}
