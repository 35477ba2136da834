package text

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// tinyBlocks cuts text inputs into blocks of n bytes (each ends at the
// line end after that) until the test ends.
func tinyBlocks(t *testing.T, n int) {
	bs, mb := maxBlock, minBlock
	maxBlock, minBlock = n, n
	t.Cleanup(func() { maxBlock, minBlock = bs, mb })
}

// ---- Edge lists ----

// textRef reads an edge list the slow, obvious way.
func textRef(data []byte, readWeight, skip bool) *edgetest.Want {
	w := &edgetest.Want{KeyType: edges.KeyInt64}
	data, ok := edgetest.TextStart(w, data, "a text edge list")
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
			w.Fail(l.line, -1, "", "line has 1 field; an edge list line is src dst, or src dst weight")
			return w
		case nf > 3:
			w.Fail(l.line, -1, "", "line has more than 3 fields")
			return w
		case want == 0:
			want, wantLine = nf, l.line
		case nf != want:
			w.Fail(l.line, -1, "", fmt.Sprintf("line has %d fields where line %d has %d", nf, wantLine, want))
			return w
		}
		if readWeight && nf == 3 {
			if _, ok := edgetest.ParseWeight(l.fields[2]); !ok {
				if !skip {
					w.Fail(l.line, int64(i), "weight", fmt.Sprintf("weight %s is not a number", edgetest.QuotedToken(l.fields[2])))
					return w
				}
				w.Skipped++
				skipped[i] = true
				continue
			}
		}
		// A key that is not UTF-8 is not an integer either, so the keys
		// are strings, which must be UTF-8.
		for k, f := range l.fields[:2] {
			if !utf8.ValidString(f) {
				if !skip {
					w.Fail(l.line, int64(i), columnNames[k], fmt.Sprintf("vertex key %s is not valid UTF-8", edgetest.QuotedToken(f)))
					return w
				}
				w.Skipped++
				skipped[i] = true
				break
			}
		}
	}
	// Keys are integers when every key is, skipped lines' too.
	for _, l := range lines {
		for _, f := range l.fields[:2] {
			if _, err := strconv.ParseInt(f, 10, 64); err != nil {
				w.KeyType = edges.KeyString
			}
		}
	}
	w.HasWeight = readWeight && want == 3
	w.Rows = int64(len(lines))
	for i, l := range lines {
		if skipped[i] {
			continue
		}
		e := edgetest.Edge{Row: int64(i), Src: edgetest.ParseKey(l.fields[0], w.KeyType), Dst: edgetest.ParseKey(l.fields[1], w.KeyType)}
		if w.HasWeight {
			e.W, _ = edgetest.ParseWeight(l.fields[2])
		}
		w.Edges = append(w.Edges, e)
	}
	return w
}

var textSeeds = []string{
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
	for _, s := range textSeeds {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "edges.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		edgetest.WriteFile(t, path, data)
		for _, o := range edgetest.ReadOptions {
			want := textRef(data, o.ReadWeight, o.Skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.ReadWeight}, SkipInvalid: o.Skip, Header: edges.HeaderNo}
			tbl := edgetest.ReadChecked(t, "file "+o.Name, path, want, func(opts edges.Options) (*edges.Table, error) {
				return edgetest.ReadFile(path, Read, opts)
			}, opts)
			if tbl == nil {
				continue
			}
			// Written back out and read again.
			written := edgetest.Edges(t, tbl)
			var b bytes.Buffer
			for _, e := range written {
				b.WriteString(edgetest.KeyString(e.Src) + "\t" + edgetest.KeyString(e.Dst))
				if tbl.HasWeight {
					b.WriteString(" " + strconv.FormatFloat(e.W, 'g', -1, 64))
				}
				b.WriteByte('\n')
			}
			back, err := Read(context.Background(), path, bytes.NewReader(b.Bytes()), edges.Options{Columns: edges.Columns{ReadWeight: o.ReadWeight}, Header: edges.HeaderNo})
			edgetest.RoundTrip(t, "round trip "+o.Name, written, tbl.KeyType, tbl.Skipped.Total() == 0, back, err)
			tbl.Release()
		}
		inTinyBlocks(t, path, data, textRef, Read)
	})
}

// inTinyBlocks reads data again cut into blocks of a few bytes, which
// must give the outcome ref says, as whole blocks do.
func inTinyBlocks(t *testing.T, path string, data []byte, ref func([]byte, bool, bool) *edgetest.Want,
	read func(context.Context, string, io.Reader, edges.Options) (*edges.Table, error)) {
	for _, n := range []int{1, 3 + len(data)%13} {
		tinyBlocks(t, n)
		for _, o := range edgetest.ReadOptions[:2] {
			want := ref(data, o.ReadWeight, o.Skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.ReadWeight}, SkipInvalid: o.Skip, Header: edges.HeaderNo}
			what := fmt.Sprintf("blocks of %d, %s", n, o.Name)
			if tbl := edgetest.ReadChecked(t, what, path, want, func(opts edges.Options) (*edges.Table, error) {
				return read(context.Background(), path, bytes.NewReader(data), opts)
			}, opts); tbl != nil {
				tbl.Release()
			}
		}
	}
}

// ---- Matrix Market ----

// mtxRef reads a Matrix Market file the slow, obvious way.
func mtxRef(data []byte, readWeight, skip bool) *edgetest.Want {
	w := &edgetest.Want{KeyType: edges.KeyInt64}
	data, ok := edgetest.TextStart(w, data, "a Matrix Market file")
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
		w.Fail(1, -1, "", "not a Matrix Market file")
		return w
	case len(words) != 5:
		w.Fail(1, -1, "", fmt.Sprintf("the banner has %d words", len(words)))
		return w
	case words[1] != "matrix":
		w.Fail(1, -1, "", "not a matrix")
		return w
	case words[2] == "array":
		w.Fail(1, -1, "", "dense array format")
		return w
	case words[2] != "coordinate":
		w.Fail(1, -1, "", "unknown Matrix Market format")
		return w
	}
	field, sym := words[3], words[4]
	switch field {
	case "real", "double", "integer", "pattern":
	case "complex":
		w.Fail(1, -1, "", "complex values")
		return w
	default:
		w.Fail(1, -1, "", "unknown Matrix Market field type")
		return w
	}
	mirror := 0
	switch sym {
	case "general":
	case "symmetric", "hermitian":
		mirror = 1
	case "skew-symmetric":
		if field == "pattern" {
			w.Fail(1, -1, "", "a pattern matrix cannot be skew-symmetric")
			return w
		}
		mirror = -1
	default:
		w.Fail(1, -1, "", "unknown Matrix Market symmetry")
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
		w.Fail(int64(len(lines))+1, -1, "", "the file ends before the size line")
		return w
	}
	sizeLine := int64(sizeAt) + 1
	size := strings.Fields(lines[sizeAt])
	if len(size) != 3 {
		w.Fail(sizeLine, -1, "", fmt.Sprintf("the size line has %d numbers", len(size)))
		return w
	}
	var dims [3]int64
	for i, s := range size {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			w.Fail(sizeLine, -1, "", fmt.Sprintf("%s is not a count", edgetest.QuotedToken(s)))
			return w
		}
		dims[i] = v
	}
	nRows, nCols, nnz := dims[0], dims[1], dims[2]
	if mirror != 0 && nRows != nCols {
		w.Fail(sizeLine, -1, "", "matrix must be square")
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
	w.Mirrored = mirror != 0
	w.HasWeight = readWeight && nf == 3
	for k, l := range entries {
		if len(l.fields) != nf {
			has := fmt.Sprintf("%d fields", len(l.fields))
			switch {
			case len(l.fields) == 1:
				has = "1 field"
			case len(l.fields) > 3:
				has = "more than 3 fields"
			}
			w.Fail(l.line, -1, "", fmt.Sprintf("entry has %s where this matrix's entries have %d (%s)", has, nf, form))
			return w
		}
		var idx [2]int64
		for c, s := range l.fields[:2] {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				w.Fail(l.line, -1, "", fmt.Sprintf("%s index %q is not an integer", []string{"row", "column"}[c], s))
				return w
			}
			idx[c] = v
		}
		for c, limit := range []int64{nRows, nCols} {
			if idx[c] < 1 || idx[c] > limit {
				what := []string{"row", "column"}[c]
				w.Fail(l.line, -1, "", fmt.Sprintf("%s index %s is outside 1..%d (the size line's %s count)", what, edgetest.Token(l.fields[c]), limit, what))
				return w
			}
		}
		var wv float64
		if w.HasWeight {
			v, ok := edgetest.ParseWeight(l.fields[2])
			says := fmt.Sprintf("weight %s is not a number", edgetest.QuotedToken(l.fields[2]))
			if field == "integer" {
				// An integer matrix's values must be int64s.
				x, err := strconv.ParseInt(l.fields[2], 10, 64)
				v, ok = float64(x), err == nil
				says = fmt.Sprintf("value %s is not an integer", edgetest.QuotedToken(l.fields[2]))
				if errors.Is(err, strconv.ErrRange) {
					says = fmt.Sprintf("value %s is too large for an integer", edgetest.Token(l.fields[2]))
				}
			}
			if !ok {
				if !skip {
					w.Fail(l.line, int64(k), "weight", says)
					return w
				}
				w.Skipped++
				continue
			}
			wv = v
		}
		w.Edges = append(w.Edges, edgetest.Edge{Row: int64(k), Src: idx[0], Dst: idx[1], W: wv})
		if mirror != 0 && idx[0] != idx[1] {
			mw := wv
			if w.HasWeight {
				mw = wv * float64(mirror)
			}
			w.Edges = append(w.Edges, edgetest.Edge{Row: int64(k), Src: idx[1], Dst: idx[0], W: mw})
		}
	}
	w.Rows = int64(len(entries))
	switch {
	case w.Rows < nnz:
		// The file's last line.
		w.Fail(int64(len(lines)), -1, "",
			fmt.Sprintf("the file ends after %d of the %d entries its size line (line %d) announces", w.Rows, nnz, sizeLine))
	case w.Rows > nnz:
		w.Fail(entries[nnz].line, -1, "", fmt.Sprintf("entry %d is beyond the %d entries the size line (line %d) announces", nnz+1, nnz, sizeLine))
	}
	return w
}

var mtxSeeds = []string{
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
	for _, s := range mtxSeeds {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "matrix.mtx")
	f.Fuzz(func(t *testing.T, data []byte) {
		edgetest.WriteFile(t, path, data)
		for _, o := range edgetest.ReadOptions {
			want := mtxRef(data, o.ReadWeight, o.Skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.ReadWeight}, SkipInvalid: o.Skip}
			tbl := edgetest.ReadChecked(t, "file "+o.Name, path, want, func(opts edges.Options) (*edges.Table, error) {
				return edgetest.ReadFile(path, ReadMatrixMarket, opts)
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
			back, err := ReadMatrixMarket(context.Background(), path, bytes.NewReader(b.Bytes()), edges.Options{Columns: edges.Columns{ReadWeight: o.ReadWeight}})
			edgetest.RoundTrip(t, "round trip "+o.Name, written, edges.KeyInt64, true, back, err)
			tbl.Release()
		}
		inTinyBlocks(t, path, data, mtxRef, ReadMatrixMarket)
	})
}
