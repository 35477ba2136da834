package text

import (
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// A header line in an edge list is never an edge: with --header auto (the
// default) it is refused naming its line where the other lines have integer
// keys or its fields are column names; --header yes skips it and --header
// no reads it as an edge.
func TestTextHeaderLine(t *testing.T) {
	for _, tc := range []struct{ data, says string }{
		{"src dst\n1 2\n2 3\n", `line 1: the first line "src dst" looks like a header, not an edge: its fields are column names`},
		{"# a graph\n\nfrom\tto\tweight\n1\t2\t0.5\n", `line 3: the first line "from\tto\tweight" looks like a header`},
		{"a b\n1 2\n", `line 1: the first line "a b" looks like a header, not an edge: it is text where every other line has integer keys`},
		{"source target\nalice bob\n", `line 1: the first line "source target" looks like a header, not an edge: its fields are column names`},
		{"u v weight\nx y 1\n", `line 1: the first line "u v weight" looks like a header`},
	} {
		_, err := readTextBytes([]byte(tc.data), edges.Options{Columns: edges.Columns{ReadWeight: true}})
		edgetest.UserErr(t, err, "edges.txt", tc.says, "comment the line out with '#', or pass --header yes to skip it")
	}
	for _, tc := range []struct {
		data string
		opts edges.Options
		want []edgetest.Edge
		line int64 // of row 0
	}{
		{"src dst\n1 2\n2 3\n", edges.Options{Header: edges.HeaderYes},
			[]edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}}, 2},
		{"# c\nsrc dst\n\n1 2\n", edges.Options{Header: edges.HeaderYes}, []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}}, 4},
		{"source target\nalice bob\n", edges.Options{Header: edges.HeaderNo},
			[]edgetest.Edge{{Row: 0, Src: "source", Dst: "target"}, {Row: 1, Src: "alice", Dst: "bob"}}, 1},
		// Lines that do not tell are edges: string keys, "u v" alone, a
		// key too large for int64.
		{"alice bob\nbob 1\n", edges.Options{}, []edgetest.Edge{{Row: 0, Src: "alice", Dst: "bob"}, {Row: 1, Src: "bob", Dst: "1"}}, 1},
		{"u v\nv w\n", edges.Options{}, []edgetest.Edge{{Row: 0, Src: "u", Dst: "v"}, {Row: 1, Src: "v", Dst: "w"}}, 1},
		{"1 99999999999999999999\n1 2\n", edges.Options{}, []edgetest.Edge{{Row: 0, Src: "1", Dst: "99999999999999999999"}, {Row: 1, Src: "1", Dst: "2"}}, 1},
		// Integer keys after a first line of text, then text again: string keys.
		{"a b\n1 2\nc d\n", edges.Options{}, []edgetest.Edge{{Row: 0, Src: "a", Dst: "b"}, {Row: 1, Src: "1", Dst: "2"}, {Row: 2, Src: "c", Dst: "d"}}, 1},
	} {
		tbl, err := readTextBytes([]byte(tc.data), tc.opts)
		if err != nil {
			t.Errorf("%q: %v", tc.data, err)
			continue
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), tc.want)
		if got := tbl.LineOf(0); got != tc.line {
			t.Errorf("%q: row 0 on line %d, want %d", tc.data, got, tc.line)
		}
		tbl.Release()
	}
}
