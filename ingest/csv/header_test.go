package csv

import (
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/usererr"
)

// --header auto (the default) reads a first line whose fields fit the
// types of the lines after it as an edge, and one that does not (or that
// names the key columns) as the header; --header yes and no say which.
func TestCSVHeaderAuto(t *testing.T) {
	weighted := edges.Columns{ReadWeight: true}
	for _, tc := range []struct {
		what, data string
		opts       edges.Options
		want       []edgetest.Edge
		lines      []int64
	}{
		{"integers, no header", "1,2\n2,3\n", edges.Options{},
			[]edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}}, []int64{1, 2}},
		{"weights, no header", "1,2,0.5\n2,3,4\n", edges.Options{Columns: weighted},
			[]edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 0.5}, {Row: 1, Src: int64(2), Dst: int64(3), W: 4}}, []int64{1, 2}},
		{"string keys with weights, no header", "alice,bob,1.5\nbob,carol,2\n", edges.Options{Columns: weighted},
			[]edgetest.Edge{{Row: 0, Src: "alice", Dst: "bob", W: 1.5}, {Row: 1, Src: "bob", Dst: "carol", W: 2}}, []int64{1, 2}},
		{"a header of other names over numbers", "from,to,cost\n1,2,3\n", edges.Options{Columns: edges.Columns{Src: "from", Dst: "to", Weight: "cost", ReadWeight: true}},
			[]edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 3}}, []int64{2}},
		{"a header naming the columns over strings", "src,dst\nalice,bob\n", edges.Options{},
			[]edgetest.Edge{{Row: 0, Src: "alice", Dst: "bob"}}, []int64{2}},
		{"--header no over strings", "alice,bob\nbob,carol\n", edges.Options{Header: edges.HeaderNo},
			[]edgetest.Edge{{Row: 0, Src: "alice", Dst: "bob"}, {Row: 1, Src: "bob", Dst: "carol"}}, []int64{1, 2}},
		{"--header yes over numbers", "7,8\n1,2\n", edges.Options{Header: edges.HeaderYes, Columns: edges.Columns{Src: "7", Dst: "8"}},
			[]edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}}, []int64{2}},
		{"a weight column not read", "1,2,x\n2,3,y\n", edges.Options{},
			[]edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}}, []int64{1, 2}},
	} {
		tbl, err := readCSVBytes([]byte(tc.data), tc.opts)
		if err != nil {
			t.Errorf("%s: %v", tc.what, err)
			continue
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), tc.want)
		for row, line := range tc.lines {
			if got := tbl.LineOf(int64(row)); got != line {
				t.Errorf("%s: row %d on line %d, want %d", tc.what, row, got, line)
			}
		}
		tbl.Release()
	}
}

// A first line that cannot be told from an edge (every column strings) is
// a header, never an edge; its message says how to read it as one.
func TestCSVHeaderAmbiguous(t *testing.T) {
	_, err := readCSVBytes([]byte("alice,bob\nbob,carol\n"), edges.Options{})
	edgetest.UserErr(t, err, "edges.csv", `no source column "src" (columns: alice, bob)`, "pass --header no")
	// A header of other names over numbers is a header for sure: no hint.
	_, err = readCSVBytes([]byte("a,b\n1,2\n"), edges.Options{})
	if ue := edgetest.UserErr(t, err, "edges.csv", `no source column "src" (columns: a, b)`); ue.Fix != "name the source column with --src-col" {
		t.Errorf("fix %q", ue.Fix)
	}
}

// Without a header, the fields are src, dst [, weight]: column flags name
// nothing, and a fourth field is an error naming the line.
func TestCSVNoHeaderPositional(t *testing.T) {
	_, err := readCSVBytes([]byte("1,2\n3,4\n"), edges.Options{Columns: edges.Columns{Src: "from"}})
	ue := edgetest.UserErr(t, err, "edges.csv", `the file has no header line (line 1 is an edge: 1,2), so no column is named "from"`, "--header yes")
	if ue.Kind != usererr.Usage {
		t.Errorf("kind %v, want Usage", ue.Kind)
	}
	_, err = readCSVBytes([]byte("1,2,3,4\n5,6,7,8\n"), edges.Options{})
	if ue := edgetest.UserErr(t, err, "edges.csv", "line 1 has 4 fields, and without a header line the fields are src,dst[,weight]", "add a header line"); ue.Line != 1 {
		t.Errorf("line %d", ue.Line)
	}
}

// --delimiter reads other separators; a file separated by another one
// than the delimiter is refused with the flag that reads it.
func TestCSVDelimiter(t *testing.T) {
	tbl, err := readCSVBytes([]byte("src;dst;weight\n1;2;0.5\n"), edges.Options{Delimiter: ';', Columns: edges.Columns{ReadWeight: true}})
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 0.5}})
	tbl.Release()
	tbl, err = readCSVBytes([]byte("1\t2\n2\t3\n"), edges.Options{Delimiter: '\t'})
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}})
	tbl.Release()

	for _, tc := range []struct {
		data  string
		delim rune
		says  string
	}{
		{"src;dst\n1;2\n", 0, "the first line holds semicolons, not commas: pass --delimiter ';'"},
		{"1;2\n2;3\n", 0, "the first line holds semicolons, not commas: pass --delimiter ';'"},
		{"src\tdst\n1\t2\n", 0, "the first line holds tabs, not commas: pass --delimiter tab"},
		{"src,dst\n1,2\n", '\t', "the first line holds commas, not tabs: pass --delimiter ,"},
		{"src dst\n1 2\n", '\t', "separated by spaces, not tabs: read it as an edge list (--input-format text)"},
	} {
		_, err := readCSVBytes([]byte(tc.data), edges.Options{Delimiter: tc.delim})
		edgetest.UserErr(t, err, "edges.csv", tc.says)
	}
}

func TestParseDelimiter(t *testing.T) {
	for in, want := range map[string]rune{",": ',', ";": ';', "tab": '\t', `\t`: '\t', "\t": '\t', "|": '|', "§": '§'} {
		if got, err := ParseDelimiter(in); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ";;", `"`, "\n"} {
		if _, err := ParseDelimiter(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
