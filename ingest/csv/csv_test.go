package csv

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// readCSVBytes reads data as a CSV edge table named edges.csv.
func readCSVBytes(data []byte, opts edges.Options) (*edges.Table, error) {
	return Read(context.Background(), "edges.csv", bytes.NewReader(data), opts)
}

// A header name with a CR or a vertical tab is quoted in the message, which
// stays one line (found by FuzzCSV).
func TestCSVMissingColumnControlChars(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"\v\n", `no source column "src" (columns: "\v")`},
		{"src,\"dst\r\",w\n1,2,3\n", `no destination column "dst" (columns: src, "dst\r", w)`},
		{"a,b\n", `no source column "src" (columns: a, b)`},
	} {
		_, err := readCSVBytes([]byte(tc.data), edges.Options{})
		edgetest.UserErr(t, err, "edges.csv", tc.want)
	}
}

// String keys must be UTF-8 (the vertex column is Arrow utf8); a Latin-1
// key fails naming its row and line, and --skip-invalid drops its row.
func TestCSVKeysNotUTF8(t *testing.T) {
	data := []byte("src,dst\nanna,bob\nbob,Jos\xe9\ncarl,anna\n")
	_, err := readCSVBytes(data, edges.Options{})
	ue := edgetest.UserErr(t, err, "edges.csv", `column "dst", line 3: vertex key "Jos\xe9" is not valid UTF-8; convert the file to UTF-8`)
	if ue.Row != 1 || ue.Line != 3 {
		t.Errorf("row %d, line %d; want 1, 3", ue.Row, ue.Line)
	}
	tbl, err := readCSVBytes(data, edges.Options{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: "anna", Dst: "bob"}, {Row: 2, Src: "carl", Dst: "anna"}})
	if tbl.Skipped[edges.SkipBadUTF8] != 1 || tbl.Skipped.Total() != 1 {
		t.Errorf("skipped %v", tbl.Skipped)
	}
}

// A quote that is not closed is named on the line where its field starts,
// not on the line where the parser gave up (the last line of the file).
func TestCSVUnbalancedQuote(t *testing.T) {
	for _, tc := range []struct {
		data string
		line int64
		says string
	}{
		{"src,dst\n1,2\n\"2,3\n4,5\n", 3, "line 3: malformed CSV: a quoted field that starts on this line is never closed (it runs to the end of the file, line 4)"},
		{"src,dst\n1,2\n\"2,3\n4,5\n6,7\n8,9", 3, "line 3: malformed CSV: a quoted field that starts on this line is never closed (it runs to the end of the file, line 6)"},
		{"src,dst\n1,2\n\"2,3\n4,\"5\"\n6,7\n", 3, "line 3: malformed CSV: a quoted field that starts on this line is not closed where it should be (it runs on to line 4, where extraneous"},
		{"src,dst\n1,2\n\"2\"x,3\n4,5\n", 3, `line 3: malformed CSV: extraneous or missing " in quoted-field`},
		{"src,dst\n1,2\n2,3\n\"4,5\n", 4, "line 4: malformed CSV"},
	} {
		_, err := readCSVBytes([]byte(tc.data), edges.Options{})
		if ue := edgetest.UserErr(t, err, "edges.csv", tc.says, "close the quote"); ue.Line != tc.line {
			t.Errorf("%q: line %d, want %d", tc.data, ue.Line, tc.line)
		}
	}
}

// A field echoed in a message is cut to 60 bytes (a 100 KB weight made a
// message of 100 KB).
func TestCSVLongFieldsEchoedShort(t *testing.T) {
	long := strings.Repeat("x", 100000)
	_, err := readCSVBytes([]byte("src,dst,weight\n1,2,"+long+"\n"), edges.Options{Columns: edges.Columns{ReadWeight: true}})
	edgetest.UserErr(t, err, "edges.csv", `weight "`+strings.Repeat("x", 60)+`..." is not a number`)
	_, err = readCSVBytes([]byte("src,dst\n1,"+strings.Repeat("\xe9", 100000)+"\n"), edges.Options{})
	edgetest.UserErr(t, err, "edges.csv", `vertex key "`+strings.Repeat(`\xe9`, 60)+`..." is not valid UTF-8`)
}

// The columns a message lists are cut short: a 10 MB header line.
func TestCSVLongHeaderListed(t *testing.T) {
	data := []byte("src,dst," + strings.Repeat("c", 10<<20) + "\n1,2,3\n")
	_, err := Read(context.Background(), "h.csv", bytes.NewReader(data), edges.Options{Columns: edges.Columns{Src: "x"}})
	edgetest.UserErr(t, err, "h.csv", `no source column "x" (columns: src, dst, "ccc`)
	if len(err.Error()) > 200 {
		t.Errorf("message of %d bytes", len(err.Error()))
	}
}

// LineOf for CSV: rows after records with quoted line breaks and after blank
// lines are on the lines an editor shows.
func TestLineOfCSV(t *testing.T) {
	data := "src,dst,weight\n" + // line 1
		"1,2,1\n" + // 2: row 0
		"\"a\nb\",3,2\n" + // 3-4: row 1
		"\n\n" + // 5-6
		"4,5,3\n" + // 7: row 2
		"6,\"x\n\ny\",4\n" + // 8-10: row 3
		"7,8,5\n" // 11: row 4
	tbl, err := readCSVBytes([]byte(data), edges.Options{Columns: edges.Columns{ReadWeight: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for row, want := range []int64{2, 3, 7, 8, 11} {
		if got := tbl.LineOf(int64(row)); got != want {
			t.Errorf("row %d: line %d, want %d", row, got, want)
		}
	}
}

// BenchmarkReadCSV reads a million weighted CSV rows from memory.
func BenchmarkReadCSV(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	var buf bytes.Buffer
	buf.WriteString("src,dst,weight\n")
	for i := 0; i < 1_000_000; i++ {
		fmt.Fprintf(&buf, "%d,%d,%d\n", rng.IntN(1<<22), rng.IntN(1<<22), 1+rng.IntN(255))
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tbl, err := readCSVBytes(data, edges.Options{Columns: edges.Columns{ReadWeight: true}})
		if err != nil {
			b.Fatal(err)
		}
		tbl.Release()
	}
}
