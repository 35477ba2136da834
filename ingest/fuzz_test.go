package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Fuzz targets for the text readers: edge lists, Matrix Market and CSV.
//
// Each target writes the input to a file and reads it through Open, as
// `gpipe run --input x.txt|x.mtx|x.csv` does, under several options
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

// fzLineBreak reports the characters that end a line (Unicode's line
// terminators): an error message holds none of them.
func fzLineBreak(r rune) bool {
	switch r {
	case '\n', '\v', '\f', '\r', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// fzWant is what the reference reader says an input holds.
type fzWant struct {
	// An invalid input: the error's line (0: none), row (-1: none) and
	// column, and words its message must hold.
	err     bool
	errLine int64
	errRow  int64
	errCol  string
	errSays string

	edges     []edgetest.Edge
	keyType   edges.KeyType
	hasWeight bool
	rows      int64 // RowsRead
	skipped   int64
	mirrored  bool // an input row may give two edges (symmetric matrices)
}

func (w *fzWant) fail(line, row int64, col, says string) {
	w.err, w.errLine, w.errRow, w.errCol, w.errSays = true, line, row, col, says
}

// fzCheck checks a read's outcome against the reference.
func fzCheck(t *testing.T, what string, tbl *edges.Table, err error, path string, want *fzWant) {
	t.Helper()
	if want.err {
		if err == nil {
			tbl.Release()
			t.Fatalf("%s: no error; want one at line %d saying %q", what, want.errLine, want.errSays)
		}
		ue := fzUserErr(t, what, err, path)
		msg := err.Error()
		if ue.Line != want.errLine || ue.Row != want.errRow || ue.Column != want.errCol || !strings.Contains(msg, want.errSays) {
			t.Fatalf("%s: error %q (line %d, row %d, column %q); want line %d, row %d, column %q, saying %q",
				what, msg, ue.Line, ue.Row, ue.Column, want.errLine, want.errRow, want.errCol, want.errSays)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	fzTable(t, what, tbl, path, want.mirrored)
	if tbl.KeyType != want.keyType || tbl.HasWeight != want.hasWeight || tbl.RowsRead != want.rows || tbl.Skipped.Total() != want.skipped {
		t.Fatalf("%s: %v keys, weight %v, %d rows read, skipped %v; want %v keys, weight %v, %d rows, %d skipped",
			what, tbl.KeyType, tbl.HasWeight, tbl.RowsRead, tbl.Skipped, want.keyType, want.hasWeight, want.rows, want.skipped)
	}
	fzSameEdges(t, what, edgetest.Edges(t, tbl), want.edges)
}

// fzUserErr checks that err is a one-line input error that names the file
// (and the line or row it names in its fields).
func fzUserErr(t *testing.T, what string, err error, path string) *usererr.Error {
	t.Helper()
	var ue *usererr.Error
	if !errors.As(err, &ue) {
		t.Fatalf("%s: error %v (%T) is not a usererr.Error", what, err, err)
	}
	msg := err.Error()
	if ue.Kind != usererr.Input {
		t.Errorf("%s: error %q is of kind %v, not Input", what, msg, ue.Kind)
	}
	if strings.IndexFunc(msg, fzLineBreak) >= 0 {
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

// fzTable checks that a table's chunks are consistent.
func fzTable(t *testing.T, what string, tbl *edges.Table, path string, mirrored bool) {
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
				ok = ok && k.Int64 == nil && k.Str != nil && fzStringsOK(k.Str, n)
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

// fzStringsOK says whether s holds n strings within its data.
func fzStringsOK(s *edges.Strings, n int) bool {
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

// fzSameWeight compares weights bit for bit, any NaN equal to any other.
func fzSameWeight(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// fzSameEdges compares edges read with edges expected.
func fzSameEdges(t *testing.T, what string, got, want []edgetest.Edge) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d edges, want %d:\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Row != w.Row || g.Src != w.Src || g.Dst != w.Dst || !fzSameWeight(g.W, w.W) {
			t.Fatalf("%s: edge %d: got %+v, want %+v", what, i, g, w)
		}
	}
}

// fzFloat is a weight field as the readers take it: any number strconv
// reads, out-of-range ones (±Inf, 0) included.
func fzFloat(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil || errors.Is(err, strconv.ErrRange)
}

// fzToken is a bad token as the edge list reader shows it: its first 60
// bytes.
func fzToken(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// fzQuoteToken is fzToken quoted.
func fzQuoteToken(s string) string { return strconv.Quote(fzToken(s)) }

// fzFirstBadUTF8 is the index of the first key that is not valid UTF-8, or -1.
func fzFirstBadUTF8(keys ...string) int {
	for k, key := range keys {
		if !utf8.ValidString(key) {
			return k
		}
	}
	return -1
}

// fzOptions are the options every input is read with.
var fzOptions = []struct {
	name             string
	readWeight, skip bool
}{
	{"weights", true, false},
	{"weights, skip-invalid", true, true},
	{"no weights", false, false},
}

// fzWriteFile writes data to the file at path.
func fzWriteFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fzRead reads an input with a checked allocator and checks the outcome;
// it returns the table (to be released by the caller) or nil.
func fzRead(t *testing.T, what, path string, want *fzWant, read func(edges.Options) (*edges.Table, error), opts edges.Options) *edges.Table {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts.Alloc = mem
	tbl, err := read(opts)
	fzCheck(t, what, tbl, err, path, want)
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

// fzKeyString is a key as written in a text format.
func fzKeyString(k any) string { return fmt.Sprint(k) }

// fzSameKey compares a key read back with the key written, where the
// key type may differ: string keys whose only non-integer keys were on
// skipped lines are integers when read back ("007" reads back as 7).
func fzSameKey(back, orig any) bool {
	if s, ok := orig.(string); ok {
		if v, ok := back.(int64); ok {
			x, err := strconv.ParseInt(s, 10, 64)
			return err == nil && x == v
		}
	}
	return back == orig
}

// fzRoundTrip checks that edges written out and read back are the same:
// the same keys (and, when sameType, key type), weights, and rows 0, 1, ...
func fzRoundTrip(t *testing.T, what string, orig []edgetest.Edge, origType edges.KeyType, sameType bool, tbl *edges.Table, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: reading back: %v", what, err)
	}
	defer tbl.Release()
	got := edgetest.Edges(t, tbl)
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
			same = fzSameKey(g.Src, o.Src) && fzSameKey(g.Dst, o.Dst)
		}
		if !same || g.Row != int64(i) || !fzSameWeight(g.W, o.W) {
			t.Fatalf("%s: edge %d read back as %+v, want %+v at row %d", what, i, g, o, i)
		}
	}
}

// fzTinyBlocks cuts text inputs into blocks of n bytes (each ends at the
// line end after that) until the test ends.
func fzTinyBlocks(t *testing.T, n int) {
	bs, mb := txtBlockSize, txtMinBlock
	txtBlockSize, txtMinBlock = n, n
	t.Cleanup(func() { txtBlockSize, txtMinBlock = bs, mb })
}

// fzStart does what the text readers do with an input's first bytes (as
// TestUTF8BOM, TestWideText and TestBinaryAsText check): it returns data
// without a UTF-8 byte order mark, or false having recorded the error.
func fzStart(w *fzWant, data []byte, what string) ([]byte, bool) {
	skip, err := sniff.TextStart("x", what, data[:min(len(data), sniff.Len)])
	if err != nil {
		var ue *usererr.Error
		if !errors.As(err, &ue) {
			panic(err)
		}
		w.fail(0, -1, "", ue.Problem)
		return nil, false
	}
	return data[skip:], true
}

// ---- Edge lists ----

// fzTextRef reads an edge list the slow, obvious way.
func fzTextRef(data []byte, readWeight, skip bool) *fzWant {
	w := &fzWant{keyType: edges.KeyInt64}
	data, ok := fzStart(w, data, "a text edge list")
	if !ok {
		return w
	}
	lines := refTextLines(data, 1)
	skipped := make(map[int]bool)
	want, wantLine := 0, int64(0)
	for i, l := range lines {
		nf := len(l.fields)
		switch {
		case nf == 1:
			w.fail(l.line, -1, "", "line has 1 field; an edge list line is src dst, or src dst weight")
			return w
		case nf > 3:
			w.fail(l.line, -1, "", "line has more than 3 fields")
			return w
		case want == 0:
			want, wantLine = nf, l.line
		case nf != want:
			w.fail(l.line, -1, "", fmt.Sprintf("line has %d fields where line %d has %d", nf, wantLine, want))
			return w
		}
		if readWeight && nf == 3 {
			if _, ok := fzFloat(l.fields[2]); !ok {
				if !skip {
					w.fail(l.line, int64(i), "weight", fmt.Sprintf("weight %s is not a number", fzQuoteToken(l.fields[2])))
					return w
				}
				w.skipped++
				skipped[i] = true
				continue
			}
		}
		// A key that is not UTF-8 is not an integer either, so the keys
		// are strings, which must be UTF-8.
		for k, f := range l.fields[:2] {
			if !utf8.ValidString(f) {
				if !skip {
					w.fail(l.line, int64(i), txtColumn[k], fmt.Sprintf("vertex key %s is not valid UTF-8", fzQuoteToken(f)))
					return w
				}
				w.skipped++
				skipped[i] = true
				break
			}
		}
	}
	// Keys are integers when every key is, skipped lines' too.
	for _, l := range lines {
		for _, f := range l.fields[:2] {
			if _, err := strconv.ParseInt(f, 10, 64); err != nil {
				w.keyType = edges.KeyString
			}
		}
	}
	w.hasWeight = readWeight && want == 3
	w.rows = int64(len(lines))
	for i, l := range lines {
		if skipped[i] {
			continue
		}
		e := edgetest.Edge{Row: int64(i), Src: refKey(l.fields[0], w.keyType), Dst: refKey(l.fields[1], w.keyType)}
		if w.hasWeight {
			e.W, _ = fzFloat(l.fields[2])
		}
		w.edges = append(w.edges, e)
	}
	return w
}

var fzTextSeeds = []string{
	"",
	"1 2\n",
	"# Directed graph (each unordered pair of nodes is saved once): web-Google.txt\n# Nodes: 4 Edges: 3\n# FromNodeId\tToNodeId\n0\t11342\n0\t824020\n11342\t0\n",
	"% a comment\n1 2 0.5\n2 3 1e-3\n3 1 -4\n",
	"1\t2\r\n2\t3\r\n\r\n3\t1\r\n",
	"1 2 x\n3 4 5\n",
	"alice bob 1\nbob carol 2.5\n",
	"1 2\n3\n",
	"1 2 3 4\n",
	"1 2\n3 4 5\n",
	"-9223372036854775808 9223372036854775807\n9223372036854775808 1\n",
	"000000000000000000000000000000000000000000001 2\n",
	"1 2 1e400\n2 3 nan\n3 4 -inf\n4 5 0x1p-3\n",
	"  1 2  \n\t3 4\t\n1 2 # trailing\n",
	"1 2\n3 4",
	"\ufeff1 2\n2 3\n",
	"\xfe\xff\x001\x00 \x002\x00\n",
	"\x1f\x8b\b\x00\x00\x00\x00\x00\x00\x03",
}

func FuzzText(f *testing.F) {
	for _, s := range fzTextSeeds {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "edges.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		fzWriteFile(t, path, data)
		for _, o := range fzOptions {
			want := fzTextRef(data, o.readWeight, o.skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.readWeight}, SkipInvalid: o.skip}
			tbl := fzRead(t, "Open "+o.name, path, want, func(opts edges.Options) (*edges.Table, error) {
				return Open(context.Background(), path, nil, opts)
			}, opts)
			if tbl == nil {
				continue
			}
			// Written back out and read again.
			written := edgetest.Edges(t, tbl)
			var b bytes.Buffer
			for _, e := range written {
				b.WriteString(fzKeyString(e.Src) + "\t" + fzKeyString(e.Dst))
				if tbl.HasWeight {
					b.WriteString(" " + strconv.FormatFloat(e.W, 'g', -1, 64))
				}
				b.WriteByte('\n')
			}
			back, err := readText(context.Background(), path, bytes.NewReader(b.Bytes()), edges.Options{Columns: edges.Columns{ReadWeight: o.readWeight}})
			fzRoundTrip(t, "round trip "+o.name, written, tbl.KeyType, tbl.Skipped.Total() == 0, back, err)
			tbl.Release()
		}
		fzInTinyBlocks(t, path, data, fzTextRef, readText)
	})
}

// fzInTinyBlocks reads data again cut into blocks of a few bytes, which
// must give the outcome ref says, as whole blocks do.
func fzInTinyBlocks(t *testing.T, path string, data []byte, ref func([]byte, bool, bool) *fzWant,
	read func(context.Context, string, io.Reader, edges.Options) (*edges.Table, error)) {
	for _, n := range []int{1, 3 + len(data)%13} {
		fzTinyBlocks(t, n)
		for _, o := range fzOptions[:2] {
			want := ref(data, o.readWeight, o.skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.readWeight}, SkipInvalid: o.skip}
			what := fmt.Sprintf("blocks of %d, %s", n, o.name)
			if tbl := fzRead(t, what, path, want, func(opts edges.Options) (*edges.Table, error) {
				return read(context.Background(), path, bytes.NewReader(data), opts)
			}, opts); tbl != nil {
				tbl.Release()
			}
		}
	}
}

// ---- Matrix Market ----

// fzMTXRef reads a Matrix Market file the slow, obvious way.
func fzMTXRef(data []byte, readWeight, skip bool) *fzWant {
	w := &fzWant{keyType: edges.KeyInt64}
	data, ok := fzStart(w, data, "a Matrix Market file")
	if !ok {
		return w
	}
	// Lines as the file has them, without their '\n'; a final '\n' ends
	// the last line rather than starting an empty one.
	text := string(data)
	var lines []string
	if text != "" {
		lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	banner := ""
	if len(lines) > 0 {
		banner = lines[0]
	}
	words := strings.Fields(strings.ToLower(banner))
	switch {
	case len(words) == 0 || words[0] != "%%matrixmarket":
		w.fail(1, -1, "", "not a Matrix Market file")
		return w
	case len(words) != 5:
		w.fail(1, -1, "", fmt.Sprintf("the banner has %d words", len(words)))
		return w
	case words[1] != "matrix":
		w.fail(1, -1, "", "not a matrix")
		return w
	case words[2] == "array":
		w.fail(1, -1, "", "dense array format")
		return w
	case words[2] != "coordinate":
		w.fail(1, -1, "", "unknown Matrix Market format")
		return w
	}
	field, sym := words[3], words[4]
	switch field {
	case "real", "double", "integer", "pattern":
	case "complex":
		w.fail(1, -1, "", "complex values")
		return w
	default:
		w.fail(1, -1, "", "unknown Matrix Market field type")
		return w
	}
	mirror := 0
	switch sym {
	case "general":
	case "symmetric", "hermitian":
		mirror = 1
	case "skew-symmetric":
		if field == "pattern" {
			w.fail(1, -1, "", "a pattern matrix cannot be skew-symmetric")
			return w
		}
		mirror = -1
	default:
		w.fail(1, -1, "", "unknown Matrix Market symmetry")
		return w
	}
	// The size line: the first after the banner that is neither blank nor
	// a % comment.
	sizeAt := 1
	for ; sizeAt < len(lines); sizeAt++ {
		if t := strings.TrimSpace(lines[sizeAt]); t != "" && t[0] != '%' {
			break
		}
	}
	if sizeAt == len(lines) {
		w.fail(int64(len(lines))+1, -1, "", "the file ends before the size line")
		return w
	}
	sizeLine := int64(sizeAt) + 1
	size := strings.Fields(lines[sizeAt])
	if len(size) != 3 {
		w.fail(sizeLine, -1, "", fmt.Sprintf("the size line has %d numbers", len(size)))
		return w
	}
	var dims [3]int64
	for i, s := range size {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			w.fail(sizeLine, -1, "", fmt.Sprintf("%s is not a count", fzQuoteToken(s)))
			return w
		}
		dims[i] = v
	}
	nRows, nCols, nnz := dims[0], dims[1], dims[2]
	if mirror != 0 && nRows != nCols {
		w.fail(sizeLine, -1, "", "matrix must be square")
		return w
	}
	// The entries: lines after the size line, # comments too.
	nf := 3
	if field == "pattern" {
		nf = 2
	}
	bodyLine := sizeLine + 1
	var body []byte
	if off := len(strings.Join(lines[:sizeAt+1], "\n")) + 1; off < len(data) {
		body = data[off:]
	}
	entries := refTextLines(body, bodyLine)
	form := map[int]string{2: "row column", 3: "row column value"}[nf]
	w.mirrored = mirror != 0
	w.hasWeight = readWeight && nf == 3
	for k, l := range entries {
		if len(l.fields) != nf {
			has := fmt.Sprintf("%d fields", len(l.fields))
			switch {
			case len(l.fields) == 1:
				has = "1 field"
			case len(l.fields) > 3:
				has = "more than 3 fields"
			}
			w.fail(l.line, -1, "", fmt.Sprintf("entry has %s where this matrix's entries have %d (%s)", has, nf, form))
			return w
		}
		var idx [2]int64
		for c, s := range l.fields[:2] {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				w.fail(l.line, -1, "", fmt.Sprintf("%s index %q is not an integer", []string{"row", "column"}[c], s))
				return w
			}
			idx[c] = v
		}
		for c, limit := range []int64{nRows, nCols} {
			if idx[c] < 1 || idx[c] > limit {
				what := []string{"row", "column"}[c]
				w.fail(l.line, -1, "", fmt.Sprintf("%s index %s is outside 1..%d (the size line's %s count)", what, fzToken(l.fields[c]), limit, what))
				return w
			}
		}
		var wv float64
		if w.hasWeight {
			v, ok := fzFloat(l.fields[2])
			says := fmt.Sprintf("weight %s is not a number", fzQuoteToken(l.fields[2]))
			if field == "integer" {
				// An integer matrix's values must be int64s.
				x, err := strconv.ParseInt(l.fields[2], 10, 64)
				v, ok = float64(x), err == nil
				says = fmt.Sprintf("value %s is not an integer", fzQuoteToken(l.fields[2]))
				if errors.Is(err, strconv.ErrRange) {
					says = fmt.Sprintf("value %s is too large for an integer", fzToken(l.fields[2]))
				}
			}
			if !ok {
				if !skip {
					w.fail(l.line, int64(k), "weight", says)
					return w
				}
				w.skipped++
				continue
			}
			wv = v
		}
		w.edges = append(w.edges, edgetest.Edge{Row: int64(k), Src: idx[0], Dst: idx[1], W: wv})
		if mirror != 0 && idx[0] != idx[1] {
			mw := wv
			if w.hasWeight {
				mw = wv * float64(mirror)
			}
			w.edges = append(w.edges, edgetest.Edge{Row: int64(k), Src: idx[1], Dst: idx[0], W: mw})
		}
	}
	w.rows = int64(len(entries))
	switch {
	case w.rows < nnz:
		// The file's last line.
		w.fail(int64(len(lines)), -1, "",
			fmt.Sprintf("the file ends after %d of the %d entries its size line (line %d) announces", w.rows, nnz, sizeLine))
	case w.rows > nnz:
		w.fail(entries[nnz].line, -1, "", fmt.Sprintf("entry %d is beyond the %d entries the size line (line %d) announces", nnz+1, nnz, sizeLine))
	}
	return w
}

var fzMTXSeeds = []string{
	"%%MatrixMarket matrix coordinate real general\n% a comment\n3 3 3\n1 2 0.5\n2 3 1.5\n3 1 -2\n",
	"%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n2 1\n3 1\n4 4\n",
	"%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 2 -7\n",
	"%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n",
	"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n",
	"\ufeff%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1\n",
	"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n",
	"1 2 3\n1 2 1\n",
	"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
	"%%MatrixMarket matrix coordinate pattern general\r\n2 3 2\r\n1 3\r\n2 1\r\n",
	"%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n",
	"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 x\n",
	"%%MatrixMarket matrix coordinate integer general\n3 3 3\n1 2 1.5\n2 3 99999999999999999999999\n3 1 -7\n",
	"%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n1 2 +007\n2 3 1e3\n",
	"%%MatrixMarket matrix coordinate real general\n3 3 5\n1 2 1\n2 3 1\n",
	"%%MatrixMarket matrix coordinate real general\n3 3 5\n1 2 1\n% c\n\n",
	"%%MatrixMarket matrix coordinate real general\n3 3 5\n1 2 1",
	"%%MatrixMarket matrix coordinate real general\n3 3 5",
	"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 3 4 5\n",
	"%%MatrixMarket matrix coordinate real general\n\n%\n",
	"%%MatrixMarket matrix coordinate pattern general\n9223372036854775807 9223372036854775807 1\n9223372036854775807 1\n",
}

func FuzzMatrixMarket(f *testing.F) {
	for _, s := range fzMTXSeeds {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "matrix.mtx")
	f.Fuzz(func(t *testing.T, data []byte) {
		fzWriteFile(t, path, data)
		for _, o := range fzOptions {
			want := fzMTXRef(data, o.readWeight, o.skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.readWeight}, SkipInvalid: o.skip}
			tbl := fzRead(t, "Open "+o.name, path, want, func(opts edges.Options) (*edges.Table, error) {
				return Open(context.Background(), path, nil, opts)
			}, opts)
			if tbl == nil {
				continue
			}
			// Written back out as a general matrix and read again.
			written := edgetest.Edges(t, tbl)
			var b bytes.Buffer
			field := "pattern"
			if tbl.HasWeight {
				field = "real"
			}
			var maxS, maxD int64 = 1, 1
			for _, e := range written {
				maxS, maxD = max(maxS, e.Src.(int64)), max(maxD, e.Dst.(int64))
			}
			fmt.Fprintf(&b, "%%%%MatrixMarket matrix coordinate %s general\n%d %d %d\n", field, maxS, maxD, len(written))
			for _, e := range written {
				fmt.Fprint(&b, e.Src, " ", e.Dst)
				if tbl.HasWeight {
					b.WriteString(" " + strconv.FormatFloat(e.W, 'g', -1, 64))
				}
				b.WriteByte('\n')
			}
			back, err := readMatrixMarket(context.Background(), path, bytes.NewReader(b.Bytes()), edges.Options{Columns: edges.Columns{ReadWeight: o.readWeight}})
			fzRoundTrip(t, "round trip "+o.name, written, edges.KeyInt64, true, back, err)
			tbl.Release()
		}
		fzInTinyBlocks(t, path, data, fzMTXRef, readMatrixMarket)
	})
}

// ---- CSV ----

// fzCSVRef reads a CSV edge table record by record with encoding/csv.
func fzCSVRef(data []byte, readWeight, skip bool) *fzWant {
	w := &fzWant{keyType: edges.KeyInt64}
	data, ok := fzStart(w, data, "CSV text")
	if !ok {
		return w
	}
	r := csv.NewReader(bytes.NewReader(data))
	parseErr := func(err error) {
		var pe *csv.ParseError
		if !errors.As(err, &pe) {
			panic(err)
		}
		// An unbalanced quote is named where its record starts.
		if errors.Is(pe.Err, csv.ErrQuote) {
			w.fail(int64(pe.StartLine), -1, "", "malformed CSV: ")
			return
		}
		w.fail(int64(pe.Line), -1, "", "malformed CSV: "+pe.Err.Error())
	}
	header, err := r.Read()
	if err == io.EOF {
		w.fail(0, -1, "", "the CSV file is empty")
		return w
	}
	if err != nil {
		parseErr(err)
		return w
	}
	header = append([]string(nil), header...)
	col := func(name string) int {
		for i, h := range header {
			if h == name {
				return i
			}
		}
		return -1
	}
	si, di, wi := col("src"), col("dst"), -1
	if readWeight {
		wi = col("weight")
	}
	switch {
	case si < 0 && looksBinary(strings.Join(header, ",")):
		w.fail(0, -1, "", "does not look like CSV text")
		return w
	case si < 0:
		w.fail(0, -1, "", `no source column "src"`)
		return w
	case di < 0:
		w.fail(0, -1, "", `no destination column "dst"`)
		return w
	}
	// An edge column's name must be one column's.
	for _, c := range []string{"src", "dst", "weight"} {
		n := 0
		for _, h := range header {
			if h == c {
				n++
			}
		}
		if n > 1 && (c != "weight" || readWeight) {
			w.fail(0, -1, c, fmt.Sprintf("%d columns are named %q", n, c))
			return w
		}
	}
	w.hasWeight = wi >= 0
	for row := int64(0); ; row++ {
		rec, err := r.Read()
		if err == io.EOF {
			w.rows = row
			break
		}
		if err != nil {
			parseErr(err)
			return w
		}
		line, _ := r.FieldPos(0)
		if rec[si] == "" || rec[di] == "" {
			c := "src"
			if rec[si] != "" {
				c = "dst"
			}
			if !skip {
				w.fail(int64(line), row, c, "empty (null) vertex key")
				return w
			}
			w.skipped++
			continue
		}
		if k := fzFirstBadUTF8(rec[si], rec[di]); k >= 0 {
			if !skip {
				w.fail(int64(line), row, []string{"src", "dst"}[k], fmt.Sprintf("vertex key %s is not valid UTF-8", fzQuoteToken([]string{rec[si], rec[di]}[k])))
				return w
			}
			w.skipped++
			continue
		}
		e := edgetest.Edge{Row: row, Src: rec[si], Dst: rec[di]}
		if wi >= 0 {
			f := rec[wi]
			v, ok := fzFloat(f)
			switch {
			case f == "" && !skip:
				w.fail(int64(line), row, "weight", "empty (null) weight")
				return w
			case !ok && !skip:
				w.fail(int64(line), row, "weight", fmt.Sprintf("weight %s is not a number", fzQuoteToken(f)))
				return w
			case !ok:
				w.skipped++
				continue
			}
			e.W = v
		}
		w.edges = append(w.edges, e)
	}
	// Keys are integers when every key kept is.
	for _, e := range w.edges {
		for _, k := range []any{e.Src, e.Dst} {
			if _, err := strconv.ParseInt(k.(string), 10, 64); err != nil {
				w.keyType = edges.KeyString
			}
		}
	}
	if w.keyType == edges.KeyInt64 {
		for i := range w.edges {
			e := &w.edges[i]
			e.Src, e.Dst = refKey(e.Src.(string), edges.KeyInt64), refKey(e.Dst.(string), edges.KeyInt64)
		}
	}
	return w
}

var fzCSVSeeds = []string{
	"src,dst\n1,2\n2,3\n",
	"src,dst,weight\n1,2,0.5\n2,3,1e3\n3,1,-4\n",
	"\ufeffsrc,dst,weight\r\n1,2,1\r\n2,3,2\r\n",
	"\ufeff\"src\",\"dst\"\n1,2\n",
	"\xff\xfes\x00r\x00c\x00,\x00d\x00s\x00t\x00\n\x00",
	"PAR1\x15\x04\x15\xe0\x1a\x15\xf8\x05L\x15\xac\x03\x15\x00\x12\x00\x00(",
	"id,dst,src,weight,note\n7,b,a,1,x\n8,c,b,2,\"y, z\"\n",
	"src,dst\n\"a,1\",\"b\"\"q\"\n\"multi\nline\",c\n",
	"src,dst,weight\n1,,1\n,2,1\n3,4,\n5,6,x\n7,8,9\n",
	"src,dst\n1,2,3\n",
	"src,dst\n1\n",
	"a,b\n1,2\n",
	"src,dst\n1,2\n\"unterminated,3\n",
	"src,dst\n1,2\n\"2,3\n4,5\n",
	"src,dst\n1,2\n\"2,3\n4,\"5\"\n6,7\n",
	"src,dst\n9223372036854775807,-9223372036854775808\n9223372036854775808,1\n",
	"src,dst,weight\n1,2,1e400\n2,3,NaN\n3,4,-Inf\n",
	"src,dst\n01,+2\n\n",
	"",
}

func FuzzCSV(f *testing.F) {
	for _, s := range fzCSVSeeds {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "edges.csv")
	f.Fuzz(func(t *testing.T, data []byte) {
		fzWriteFile(t, path, data)
		for _, o := range fzOptions {
			want := fzCSVRef(data, o.readWeight, o.skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.readWeight}, SkipInvalid: o.skip}
			tbl := fzRead(t, "Open "+o.name, path, want, func(opts edges.Options) (*edges.Table, error) {
				return Open(context.Background(), path, nil, opts)
			}, opts)
			if tbl == nil {
				continue
			}
			// Written back out with encoding/csv and read again.
			written := edgetest.Edges(t, tbl)
			var b bytes.Buffer
			cw := csv.NewWriter(&b)
			header := []string{"src", "dst"}
			if tbl.HasWeight {
				header = append(header, "weight")
			}
			_ = cw.Write(header)
			for _, e := range written {
				rec := []string{fzKeyString(e.Src), fzKeyString(e.Dst)}
				if tbl.HasWeight {
					rec = append(rec, strconv.FormatFloat(e.W, 'g', -1, 64))
				}
				_ = cw.Write(rec)
			}
			cw.Flush()
			if err := cw.Error(); err != nil {
				t.Fatal(err)
			}
			back, err := readCSV(context.Background(), path, bytes.NewReader(b.Bytes()), edges.Options{Columns: edges.Columns{ReadWeight: o.readWeight}})
			fzRoundTrip(t, "round trip "+o.name, written, tbl.KeyType, true, back, err)
			tbl.Release()
		}
	})
}
