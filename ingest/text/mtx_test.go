package text

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// readMTXBytes reads data as a Matrix Market file named m.mtx.
func readMTXBytes(data []byte, opts edges.Options) (*edges.Table, error) {
	return ReadMatrixMarket(context.Background(), "m.mtx", bytes.NewReader(data), opts)
}

// An entry with the wrong number of fields says how many it has: "1 field",
// and "more than 3 fields" where the parser stopped counting at 4 (found by
// FuzzMatrixMarket: 5 fields were reported as 4).
func TestMatrixMarketEntryFields(t *testing.T) {
	const real = "%%MatrixMarket matrix coordinate real general\n2 2 1\n"
	const pattern = "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 1\n"
	for _, tc := range []struct {
		data string
		line int64
		want string
	}{
		{real + "1 2 3 4 5\n", 3, "line 3: entry has more than 3 fields where this matrix's entries have 3 (row column value)"},
		{real + "1 2 3 4\n", 3, "line 3: entry has more than 3 fields where this matrix's entries have 3"},
		{real + "% c\n1\n", 4, "line 4: entry has 1 field where this matrix's entries have 3"},
		{real + "1 2\n", 3, "line 3: entry has 2 fields where this matrix's entries have 3 (row column value)"},
		{pattern + "1 2 3\n", 3, "line 3: entry has 3 fields where this matrix's entries have 2 (row column)"},
		{pattern + "1 2 3 4 5 6\n", 3, "line 3: entry has more than 3 fields where this matrix's entries have 2 (row column)"},
	} {
		_, err := readMTXBytes([]byte(tc.data), edges.Options{Columns: edges.Columns{ReadWeight: true}})
		if ue := edgetest.UserErr(t, err, "m.mtx", tc.want); ue.Line != tc.line {
			t.Errorf("%q: line %d, want %d", tc.data, ue.Line, tc.line)
		}
	}
}

// A file with fewer entries than its size line announces is named at its
// last line (it named the line after the end of the file).
func TestMatrixMarketFewerEntries(t *testing.T) {
	const head = "%%MatrixMarket matrix coordinate real general\n3 3 5\n"
	for _, tc := range []struct {
		data string
		line int64
	}{
		{head + "1 2 1\n2 3 1\n", 4},
		{head + "1 2 1\n2 3 1", 4},
		{head + "1 2 1\n2 3 1\n% trailing comment\n\n", 6},
		{head, 2},
		{"%%MatrixMarket matrix coordinate real general\n3 3 5", 2},
	} {
		_, err := readMTXBytes([]byte(tc.data), edges.Options{})
		if ue := edgetest.UserErr(t, err, "m.mtx", "the file ends after", "entries its size line (line 2) announces"); ue.Line != tc.line {
			t.Errorf("%q: line %d, want %d", tc.data, ue.Line, tc.line)
		}
	}
}

// The values of an integer matrix must be integers (1.5 and 10^23 were read
// as weights); a real matrix's are read as before.
func TestMatrixMarketIntegerValues(t *testing.T) {
	const head = "%%MatrixMarket matrix coordinate integer general\n3 3 2\n"
	read := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	for _, tc := range []struct{ entry, says string }{
		{"2 3 1.5", `column "weight", line 4: value "1.5" is not an integer, as the banner's field type integer says`},
		{"2 3 99999999999999999999999", `line 4: value 99999999999999999999999 is too large for an integer`},
		{"2 3 " + strings.Repeat("9", 100), `line 4: value ` + strings.Repeat("9", 60) + `... is too large`},
		{"2 3 1e3", `value "1e3" is not an integer`},
		{"2 3 x", `value "x" is not an integer`},
	} {
		_, err := readMTXBytes([]byte(head+"1 2 3\n"+tc.entry+"\n"), read)
		if ue := edgetest.UserErr(t, err, "m.mtx", tc.says, "make the banner's field type real", "--skip-invalid"); ue.Line != 4 || ue.Row != 1 {
			t.Errorf("%q: line %d, row %d; want 4, 1", tc.entry, ue.Line, ue.Row)
		}
		// --skip-invalid drops the entry, as for a weight that is not a number.
		tbl, err := readMTXBytes([]byte(head+"1 2 3\n"+tc.entry+"\n"), edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true})
		if err != nil {
			t.Fatal(err)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 3}})
		tbl.Release()
	}
	tbl, err := readMTXBytes([]byte(head+"1 2 +007\n2 3 -9223372036854775808\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 7}, {Row: 1, Src: int64(2), Dst: int64(3), W: -9223372036854775808}})
	tbl.Release()
	tbl, err = readMTXBytes([]byte("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 1.5\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 1.5}})
	tbl.Release()
}

// MirrorOf tells the edges a symmetric or skew-symmetric file implies from
// those it holds, and names the entry they mirror.
func TestMatrixMarketMirrorOf(t *testing.T) {
	for _, tc := range []struct {
		sym  string
		want []string
	}{
		// Edges: 2→1, its mirror, 3→2, its mirror, 3→3 (a diagonal entry
		// has no mirror); for general, 2→1, 3→2, 3→3.
		{"skew-symmetric", []string{"", "the skew-symmetric mirror of the entry 2 1 5", "", "the skew-symmetric mirror of the entry 3 2 -1.5", ""}},
		{"symmetric", []string{"", "the symmetric mirror of the entry 2 1 5", "", "the symmetric mirror of the entry 3 2 -1.5", ""}},
		{"general", []string{"", "", ""}},
	} {
		data := "%%MatrixMarket matrix coordinate real " + tc.sym + "\n3 3 3\n2 1 5\n% c\n3 2 -1.5\n3 3 7\n"
		tbl, err := readMTXBytes([]byte(data), edges.Options{Columns: edges.Columns{ReadWeight: true}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for ci := range tbl.Chunks {
			c := &tbl.Chunks[ci]
			for j := 0; j < c.Len() && len(got) < len(tc.want); j++ {
				note, fix := tbl.MirrorOf(c, j)
				if (note == "") != (fix == "") {
					t.Errorf("%s: edge %d: note %q, fix %q", tc.sym, j, note, fix)
				}
				got = append(got, note)
			}
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", tc.sym, got, tc.want)
		}
		tbl.Release()
	}
}

// A field echoed in a message is cut to 60 bytes.
func TestMatrixMarketLongFieldsEchoedShort(t *testing.T) {
	long := strings.Repeat("x", 100000)
	_, err := readMTXBytes([]byte("%%MatrixMarket matrix coordinate "+long+" general\n"), edges.Options{})
	edgetest.UserErr(t, err, "m.mtx", `unknown Matrix Market field type "`+strings.Repeat("x", 60)+`..."`)
	_, err = readMTXBytes([]byte("%%MatrixMarket matrix coordinate real general\n1 1 "+long+"\n"), edges.Options{})
	edgetest.UserErr(t, err, "m.mtx", `entry count "`+strings.Repeat("x", 60)+`..." is not a count`)
	if len(err.Error()) > 300 {
		t.Errorf("message of %d bytes", len(err.Error()))
	}
}
