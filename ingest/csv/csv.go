// Package csv reads CSV edge tables: a header line names the columns, which
// may come in any order with others beside them; fields may be quoted (RFC
// 4180).
//
// Keys are collected as written and typed at the end, as pyarrow and DuckDB
// infer them: int64 when every key of both columns is an integer, else
// string. An empty key field is a null key and an empty weight a null
// weight. CSV is the interchange format, not the fast path: Parquet, Arrow
// and plain edge lists are read in parallel, this one line by line.
package csv

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/input"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// chunkRows is how many rows go into one chunk.
const chunkRows = 1 << 20

// Read reads the CSV edge table r holds, named name in messages.
func Read(ctx context.Context, name string, r io.Reader, opts edges.Options) (*edges.Table, error) {
	cols := opts.Columns.WithDefaults()
	// Reads check ctx, and stop a record that runs on past input.MaxLine
	// (records.next says where each record starts).
	in := input.NewReader(ctx, r)
	in.Bound(0)
	// The byte order mark goes before the parser sees it: it would make a
	// quoted first field `\ufeff"src"`, a bare quote.
	br := bufio.NewReaderSize(in, 64<<10)
	head, _ := br.Peek(sniff.Len)
	skip, err := sniff.TextStart(name, "CSV text", head)
	if err != nil {
		return nil, err
	}
	_, _ = br.Discard(skip)
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = 0
	recs := records{ctx: ctx, name: name, in: in, cr: cr, skip: int64(skip)}
	header, err := recs.next()
	if err == io.EOF {
		return nil, usererr.InFile(name, "the CSV file is empty: it needs a header line naming the columns",
			fmt.Sprintf("write a header such as %s", echo.Quote(cols.Src+","+cols.Dst)))
	}
	if err != nil {
		return nil, err
	}
	header = append([]string(nil), header...)
	find := func(want string) int {
		for i, h := range header {
			if h == want {
				return i
			}
		}
		return -1
	}
	si, di, wi := find(cols.Src), find(cols.Dst), -1
	if si < 0 && looksBinary(strings.Join(header, ",")) {
		return nil, usererr.InFile(name, fmt.Sprintf("the file does not look like CSV text: its first line holds binary data (%s)", echo.Text(strings.Join(header, ","))),
			"check the path, or name the input's format with --input-format")
	}
	if si < 0 {
		return nil, edges.ErrMissingColumn(name, cols.Src, "source", "--src-col", header)
	}
	if di < 0 {
		return nil, edges.ErrMissingColumn(name, cols.Dst, "destination", "--dst-col", header)
	}
	if err := edges.CheckUnique(name, cols, header); err != nil {
		return nil, err
	}
	// A weight column the user named must be there, read or not (a
	// misspelt name would go unnoticed with an operator that uses none).
	if w := find(cols.Weight); w < 0 && cols.WeightExplicit {
		return nil, edges.ErrMissingColumn(name, cols.Weight, "weight", "--weight-col", header)
	} else if cols.ReadWeight {
		wi = w
	}

	c := collector{name: name, cols: cols, skip: opts.SkipInvalid, weighted: wi >= 0, skipped: edges.Skips{}}
	var row int64
	for {
		if row&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rec, err := recs.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		c.lines.Note(row, int64(line))
		if err := c.add(rec, si, di, wi, row, int64(line)); err != nil {
			return nil, err
		}
		row++
	}
	return c.table(row), nil
}

// records reads the records of a CSV input, each at most input.MaxLine
// bytes long.
type records struct {
	ctx  context.Context
	name string
	in   *input.Reader
	cr   *csv.Reader
	skip int64 // the bytes before the parser's first (a byte order mark)
	// start is where the next record starts in the parser's input, and
	// line the line the last record ends on.
	start, line int64
}

// next is the next record (io.EOF at the end), or a user error; a record
// longer than input.MaxLine is one.
func (r *records) next() ([]string, error) {
	rec, err := r.cr.Read()
	if err != nil {
		if cerr := r.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if errors.Is(err, input.ErrRecordTooLong) {
			return nil, input.ErrLongRecord(r.name, r.line+1)
		}
		if err == io.EOF {
			return nil, err
		}
		return nil, userError(r.name, err, r.cr)
	}
	end := r.cr.InputOffset()
	if end-r.start > int64(input.MaxLine) {
		return nil, input.ErrLongRecord(r.name, r.line+1)
	}
	// The record ends on the line its last field starts on, or as many
	// lines on as that (quoted) field holds line ends.
	last, _ := r.cr.FieldPos(len(rec) - 1)
	r.line = int64(last) + int64(strings.Count(rec[len(rec)-1], "\n"))
	r.start = end
	r.in.Bound(r.skip + end)
	return rec, nil
}

// collector gathers the kept rows' fields.
type collector struct {
	name     string
	cols     edges.Columns
	skip     bool
	weighted bool
	src, dst edges.Strings
	w        []float64
	rows     []int64
	skipped  edges.Skips
	lines    edges.LineMap // rows to lines, for errors found after reading
}

func (c *collector) add(rec []string, si, di, wi int, row, line int64) error {
	s, d := rec[si], rec[di]
	if s == "" || d == "" {
		col := c.cols.Src
		if s != "" {
			col = c.cols.Dst
		}
		if c.skip {
			c.skipped.Add(edges.SkipNullKey(col), 1)
			return nil
		}
		return &usererr.Error{Kind: usererr.Input, File: c.name, Column: col, Row: row, Line: line,
			Problem: "empty (null) vertex key", Fix: "fill in the key or pass --skip-invalid to drop such rows"}
	}
	if !utf8.ValidString(s) || !utf8.ValidString(d) {
		col, key := c.cols.Src, s
		if utf8.ValidString(s) {
			col, key = c.cols.Dst, d
		}
		if c.skip {
			c.skipped.Add(edges.SkipBadUTF8, 1)
			return nil
		}
		return &usererr.Error{Kind: usererr.Input, File: c.name, Column: col, Row: row, Line: line,
			Problem: fmt.Sprintf("vertex key %s is not valid UTF-8", echo.Quote(key)),
			Fix:     "convert the file to UTF-8 (iconv -f latin1 -t utf-8, say), or pass --skip-invalid to drop such rows"}
	}
	w := 1.0
	if wi >= 0 {
		f := rec[wi]
		if f == "" {
			if c.skip {
				c.skipped.Add(edges.SkipNullWeight(c.cols.Weight), 1)
				return nil
			}
			return &usererr.Error{Kind: usererr.Input, File: c.name, Column: c.cols.Weight, Row: row, Line: line,
				Problem: "empty (null) weight", Fix: "fill in the weight or pass --skip-invalid to drop such rows"}
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			if c.skip {
				c.skipped.Add(edges.SkipBadWeight(c.cols.Weight), 1)
				return nil
			}
			return &usererr.Error{Kind: usererr.Input, File: c.name, Column: c.cols.Weight, Row: row, Line: line,
				Problem: fmt.Sprintf("weight %s is not a number", echo.Quote(f)), Fix: "fix the value or pass --skip-invalid to drop such rows"}
		}
		w = v
	}
	appendString(&c.src, s)
	appendString(&c.dst, d)
	if c.weighted {
		c.w = append(c.w, w)
	}
	c.rows = append(c.rows, row)
	return nil
}

func appendString(s *edges.Strings, v string) {
	if len(s.Offsets) == 0 {
		s.Offsets = append(s.Offsets, 0)
	}
	s.Data = append(s.Data, v...)
	s.Offsets = append(s.Offsets, int64(len(s.Data)))
}

// table types the keys and cuts the rows into chunks.
func (c *collector) table(rowsRead int64) *edges.Table {
	t := &edges.Table{Name: c.name, Columns: c.cols, HasWeight: c.weighted, RowsRead: rowsRead, Skipped: c.skipped,
		KeyType: edges.KeyInt64, KeyArrowType: arrow.PrimitiveTypes.Int64, Lines: &c.lines}
	n := c.src.Len()
	srcInt, okS := parseInts(&c.src)
	dstInt, okD := parseInts(&c.dst)
	if !okS || !okD {
		t.KeyType, t.KeyArrowType = edges.KeyString, arrow.BinaryTypes.String
	}
	dense := int64(n) == rowsRead
	for lo := 0; lo < n; lo += chunkRows {
		hi := min(lo+chunkRows, n)
		ch := edges.Chunk{FirstRow: c.rows[lo]}
		if !dense {
			ch.Rows = c.rows[lo:hi]
		}
		if t.KeyType == edges.KeyInt64 {
			ch.Src.Int64, ch.Dst.Int64 = srcInt[lo:hi], dstInt[lo:hi]
		} else {
			ch.Src.Str, ch.Dst.Str = subStrings(&c.src, lo, hi), subStrings(&c.dst, lo, hi)
		}
		if c.weighted {
			ch.Weight = c.w[lo:hi]
		}
		t.Chunks = append(t.Chunks, ch)
	}
	return t
}

// parseInts is the strings as int64s, or false when one is not an integer.
func parseInts(s *edges.Strings) ([]int64, bool) {
	out := make([]int64, s.Len())
	for i := range out {
		v, err := strconv.ParseInt(string(s.At(i)), 10, 64)
		if err != nil {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// subStrings is strings [lo, hi) with offsets rebased to their own data.
func subStrings(s *edges.Strings, lo, hi int) *edges.Strings {
	base := s.Offsets[lo]
	offs := make([]int64, hi-lo+1)
	for i := range offs {
		offs[i] = s.Offsets[lo+i] - base
	}
	return &edges.Strings{Offsets: offs, Data: s.Data[base:s.Offsets[hi]]}
}

// userError turns a parse error of encoding/csv into a one-line user error.
// A quote that is not closed makes the lines after it part of its field, so
// that the parser fails lines later, or at the end of the file: the error
// names the line where the record (and so the quoted field) starts. cr is
// read on to tell the end of the file.
func userError(name string, err error, cr *csv.Reader) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		line, problem := pe.Line, "malformed CSV: "+pe.Err.Error()
		fix := "fix the line; fields that hold commas or quotes must be quoted"
		switch {
		case errors.Is(pe.Err, csv.ErrFieldCount):
			fix = "every line needs as many fields as the header"
		case errors.Is(pe.Err, csv.ErrQuote):
			fix = `close the quote; a quote inside a quoted field is written twice ("")`
			if pe.StartLine == pe.Line {
				break
			}
			line = pe.StartLine
			if _, next := cr.Read(); next == io.EOF {
				problem = fmt.Sprintf("malformed CSV: a quoted field that starts on this line is never closed (it runs to the end of the file, line %d)", pe.Line)
			} else {
				problem = fmt.Sprintf("malformed CSV: a quoted field that starts on this line is not closed where it should be (it runs on to line %d, where %s)", pe.Line, pe.Err)
			}
		}
		return &usererr.Error{Kind: usererr.Input, File: name, Row: -1, Line: int64(line), Problem: problem, Fix: fix}
	}
	return usererr.InFile(name, "cannot read: "+err.Error(), "").Because(err)
}

// looksBinary says whether s holds bytes text does not: a NUL, or many
// control characters or bytes that are not UTF-8 (a Latin-1 name or two
// is still text, and so is a short line).
func looksBinary(s string) bool {
	if strings.IndexByte(s, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 && r != '\t' && r != '\r' && r != '\n' || r == 0x7F {
			bad++
		}
		i += n
	}
	return len(s) >= 16 && bad*8 > len(s)
}
