package edgetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/usererr"
)

// The harness of the fuzz targets of the text readers: edge lists and Matrix
// Market (text.FuzzText, text.FuzzMatrixMarket) and CSV (csv.FuzzCSV).
//
// Each target writes the input to a file and reads it as Open does for
// `gpipe run --input x.txt|x.mtx|x.csv`, under several options
// (weights read or not, --skip-invalid or not; for edge lists and Matrix
// Market also from a reader cut into blocks of a few bytes, so that every
// line boundary is a block boundary somewhere), and checks the outcome
// against a reference reader written the slow, obvious way:
//
//   - an invalid input gives a usererr.Error of kind Input whose message is
//     one line, starts with the file's name, and names the line (and row,
//     column) the reference says is the first bad one, saying what is wrong;
//   - a valid input gives a table whose chunks are consistent (key and weight
//     columns of equal lengths, string offsets within their data, input rows
//     ascending and below RowsRead), whose RowsRead is the number of data
//     lines (records, entries), where every row is either an edge or counted
//     in Skipped, and whose edges (keys, key type, weights, rows) are the
//     reference's;
//   - no allocator memory is left once the table is released or the read
//     failed;
//   - the table's edges written back out in the same format read back as the
//     same edges.

// lineBreak reports the characters that end a line (Unicode's line
// terminators): an error message holds none of them.
func lineBreak(r rune) bool {
	switch r {
	case '\n', '\v', '\f', '\r', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// Want is what the reference reader says an input holds.
type Want struct {
	// An invalid input: the error's line (0: none), row (-1: none) and
	// column, and words its message must hold.
	Err     bool
	ErrLine int64
	ErrRow  int64
	ErrCol  string
	ErrSays string

	Edges     []Edge
	KeyType   edges.KeyType
	HasWeight bool
	Rows      int64 // RowsRead
	Skipped   int64
	Mirrored  bool // an input row may give two edges (symmetric matrices)
}

// Fail records that the input is invalid: the error the read must give.
func (w *Want) Fail(line, row int64, col, says string) {
	w.Err, w.ErrLine, w.ErrRow, w.ErrCol, w.ErrSays = true, line, row, col, says
}

// Check checks a read's outcome against the reference.
func Check(t *testing.T, what string, tbl *edges.Table, err error, path string, want *Want) {
	t.Helper()
	if want.Err {
		if err == nil {
			tbl.Release()
			t.Fatalf("%s: no error; want one at line %d saying %q", what, want.ErrLine, want.ErrSays)
		}
		ue := checkUserErr(t, what, err, path)
		msg := err.Error()
		if ue.Line != want.ErrLine || ue.Row != want.ErrRow || ue.Column != want.ErrCol || !strings.Contains(msg, want.ErrSays) {
			t.Fatalf("%s: error %q (line %d, row %d, column %q); want line %d, row %d, column %q, saying %q",
				what, msg, ue.Line, ue.Row, ue.Column, want.ErrLine, want.ErrRow, want.ErrCol, want.ErrSays)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkTable(t, what, tbl, path, want.Mirrored)
	if tbl.KeyType != want.KeyType || tbl.HasWeight != want.HasWeight || tbl.RowsRead != want.Rows || tbl.Skipped.Total() != want.Skipped {
		t.Fatalf("%s: %v keys, weight %v, %d rows read, skipped %v; want %v keys, weight %v, %d rows, %d skipped",
			what, tbl.KeyType, tbl.HasWeight, tbl.RowsRead, tbl.Skipped, want.KeyType, want.HasWeight, want.Rows, want.Skipped)
	}
	sameEdges(t, what, Edges(t, tbl), want.Edges)
}

// checkUserErr checks that err is a one-line input error that names the file
// (and the line or row it names in its fields).
func checkUserErr(t *testing.T, what string, err error, path string) *usererr.Error {
	t.Helper()
	var ue *usererr.Error
	if !errors.As(err, &ue) {
		t.Fatalf("%s: error %v (%T) is not a usererr.Error", what, err, err)
	}
	msg := err.Error()
	if ue.Kind != usererr.Input {
		t.Errorf("%s: error %q is of kind %v, not Input", what, msg, ue.Kind)
	}
	if strings.IndexFunc(msg, lineBreak) >= 0 {
		t.Errorf("%s: error is not one line: %q", what, msg)
	}
	if !strings.HasPrefix(msg, path+": ") && !strings.HasPrefix(msg, path+", ") {
		t.Errorf("%s: error %q does not start with the file name", what, msg)
	}
	switch {
	case ue.Line > 0:
		if !strings.Contains(msg, fmt.Sprintf(", line %d: ", ue.Line)) {
			t.Errorf("%s: error %q does not name its line %d", what, msg, ue.Line)
		}
	case ue.Row >= 0:
		if !strings.Contains(msg, fmt.Sprintf(", row %d: ", ue.Row)) {
			t.Errorf("%s: error %q does not name its row %d", what, msg, ue.Row)
		}
	}
	if ue.Column != "" && !strings.Contains(msg, fmt.Sprintf("column %q", ue.Column)) {
		t.Errorf("%s: error %q does not name its column %q", what, msg, ue.Column)
	}
	return ue
}

// checkTable checks that a table's chunks are consistent.
func checkTable(t *testing.T, what string, tbl *edges.Table, path string, mirrored bool) {
	t.Helper()
	if tbl.Name != path {
		t.Fatalf("%s: Name %q", what, tbl.Name)
	}
	wantArrow := arrow.DataType(arrow.PrimitiveTypes.Int64)
	switch tbl.KeyType {
	case edges.KeyInt64:
	case edges.KeyString:
		wantArrow = arrow.BinaryTypes.String
	default:
		t.Fatalf("%s: key type %v", what, tbl.KeyType)
	}
	if !arrow.TypeEqual(tbl.KeyArrowType, wantArrow) {
		t.Fatalf("%s: %v keys of Arrow type %v", what, tbl.KeyType, tbl.KeyArrowType)
	}
	prev, rows := int64(-1), int64(0)
	for ci := range tbl.Chunks {
		c := &tbl.Chunks[ci]
		n := c.Len()
		for _, k := range []*edges.Keys{&c.Src, &c.Dst} {
			ok := k.Int32 == nil && k.Uint32 == nil && k.Uint64 == nil
			if tbl.KeyType == edges.KeyInt64 {
				ok = ok && k.Str == nil && len(k.Int64) == n
			} else {
				ok = ok && k.Int64 == nil && k.Str != nil && stringsOK(k.Str, n)
			}
			if !ok {
				t.Fatalf("%s: chunk %d: bad %v key column of %d rows: %+v", what, ci, tbl.KeyType, n, *k)
			}
		}
		if (c.Weight != nil) != tbl.HasWeight || (c.Weight != nil && len(c.Weight) != n) || (c.Rows != nil && len(c.Rows) != n) {
			t.Fatalf("%s: chunk %d: %d keys, %d weights (HasWeight %v), %d rows", what, ci, n, len(c.Weight), tbl.HasWeight, len(c.Rows))
		}
		for i := 0; i < n; i++ {
			r := c.Row(i)
			if r < prev || r == prev && !mirrored || r >= tbl.RowsRead {
				t.Fatalf("%s: chunk %d position %d is row %d (after row %d, of %d rows read)", what, ci, i, r, prev, tbl.RowsRead)
			}
			if r != prev {
				rows++
			}
			prev = r
		}
	}
	for reason, n := range tbl.Skipped {
		if n <= 0 || reason == "" {
			t.Fatalf("%s: Skipped %v", what, tbl.Skipped)
		}
	}
	if rows+tbl.Skipped.Total() != tbl.RowsRead {
		t.Fatalf("%s: %d rows with edges and %d skipped (%v), but %d rows read", what, rows, tbl.Skipped.Total(), tbl.Skipped, tbl.RowsRead)
	}
}

// stringsOK says whether s holds n strings within its data.
func stringsOK(s *edges.Strings, n int) bool {
	if len(s.Offsets) != n+1 || s.Offsets[0] < 0 || s.Offsets[n] > int64(len(s.Data)) {
		return false
	}
	for i := 0; i < n; i++ {
		if s.Offsets[i] > s.Offsets[i+1] {
			return false
		}
	}
	return true
}

// SameWeight compares weights bit for bit, any NaN equal to any other.
func SameWeight(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// sameEdges compares edges read with edges expected.
func sameEdges(t *testing.T, what string, got, want []Edge) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d edges, want %d:\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Row != w.Row || g.Src != w.Src || g.Dst != w.Dst || !SameWeight(g.W, w.W) {
			t.Fatalf("%s: edge %d: got %+v, want %+v", what, i, g, w)
		}
	}
}

// ParseWeight is a weight field as the readers take it: any number strconv
// reads, out-of-range ones (±Inf, 0) included.
func ParseWeight(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil || errors.Is(err, strconv.ErrRange)
}

// Token is a bad token as the edge list reader shows it: its first 60
// bytes.
func Token(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// QuotedToken is Token quoted.
func QuotedToken(s string) string { return strconv.Quote(Token(s)) }

// FirstBadUTF8 is the index of the first key that is not valid UTF-8, or -1.
func FirstBadUTF8(keys ...string) int {
	for k, key := range keys {
		if !utf8.ValidString(key) {
			return k
		}
	}
	return -1
}

// ReadOption is a way an input is read.
type ReadOption struct {
	Name             string
	ReadWeight, Skip bool
}

// ReadOptions are the options every input is read with.
var ReadOptions = []ReadOption{
	{"weights", true, false},
	{"weights, skip-invalid", true, true},
	{"no weights", false, false},
}

// WriteFile writes data to the file at path.
func WriteFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadChecked reads an input with a checked allocator and checks the outcome;
// it returns the table (to be released by the caller) or nil.
func ReadChecked(t *testing.T, what, path string, want *Want, read func(edges.Options) (*edges.Table, error), opts edges.Options) *edges.Table {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts.Alloc = mem
	tbl, err := read(opts)
	Check(t, what, tbl, err, path, want)
	if err != nil {
		if n := mem.CurrentAlloc(); n != 0 {
			t.Fatalf("%s: %d bytes left allocated after the error", what, n)
		}
		return nil
	}
	checked := &edges.Table{Name: tbl.Name, Columns: tbl.Columns, KeyType: tbl.KeyType, HasWeight: tbl.HasWeight,
		Chunks: tbl.Chunks, RowsRead: tbl.RowsRead, Skipped: tbl.Skipped, KeyArrowType: tbl.KeyArrowType}
	checked.OnRelease(func() {
		tbl.Release()
		if n := mem.CurrentAlloc(); n != 0 {
			t.Fatalf("%s: %d bytes left allocated after Release", what, n)
		}
	})
	return checked
}

// ReadFile reads the file at path with read, as Open does.
func ReadFile(path string, read func(context.Context, string, io.Reader, edges.Options) (*edges.Table, error), opts edges.Options) (*edges.Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(context.Background(), path, f, opts)
}

// KeyString is a key as written in a text format.
func KeyString(k any) string { return fmt.Sprint(k) }

// sameKey compares a key read back with the key written, where the
// key type may differ: string keys whose only non-integer keys were on
// skipped lines are integers when read back ("007" reads back as 7).
func sameKey(back, orig any) bool {
	if s, ok := orig.(string); ok {
		if v, ok := back.(int64); ok {
			x, err := strconv.ParseInt(s, 10, 64)
			return err == nil && x == v
		}
	}
	return back == orig
}

// RoundTrip checks that edges written out and read back are the same:
// the same keys (and, when sameType, key type), weights, and rows 0, 1, ...
func RoundTrip(t *testing.T, what string, orig []Edge, origType edges.KeyType, sameType bool, tbl *edges.Table, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: reading back: %v", what, err)
	}
	defer tbl.Release()
	got := Edges(t, tbl)
	if len(got) != len(orig) {
		t.Fatalf("%s: %d edges read back, want %d", what, len(got), len(orig))
	}
	if sameType && len(orig) > 0 && tbl.KeyType != origType {
		t.Fatalf("%s: %v keys read back, want %v", what, tbl.KeyType, origType)
	}
	for i, g := range got {
		o := orig[i]
		same := g.Src == o.Src && g.Dst == o.Dst
		if !sameType {
			same = sameKey(g.Src, o.Src) && sameKey(g.Dst, o.Dst)
		}
		if !same || g.Row != int64(i) || !SameWeight(g.W, o.W) {
			t.Fatalf("%s: edge %d read back as %+v, want %+v at row %d", what, i, g, o, i)
		}
	}
}

// TextStart does what the text readers do with an input's first bytes (as
// TestUTF8BOM, TestWideText and TestBinaryAsText check): it returns data
// without a UTF-8 byte order mark, or false having recorded the error.
func TextStart(w *Want, data []byte, what string) ([]byte, bool) {
	skip, err := sniff.TextStart("x", what, data[:min(len(data), sniff.Len)])
	if err != nil {
		var ue *usererr.Error
		if !errors.As(err, &ue) {
			panic(err)
		}
		w.Fail(0, -1, "", ue.Problem)
		return nil, false
	}
	return data[skip:], true
}
