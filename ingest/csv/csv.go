// Package csv reads CSV edge tables (and TSV: CSV with tabs): a header
// line names the columns, which may come in any order with others beside
// them; fields may be quoted (RFC 4180). Without a header (Options.Header
// HeaderNo, or HeaderAuto where the first line fits the types of the lines
// after it, as DuckDB's sniffer tells) the fields are src, dst and an
// optional weight by position, as in an edge list. Options.Delimiter
// separates the fields (',' by default); a file whose first line holds
// another one is refused with a hint.
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
	"slices"
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
	comma, err := delimiter(opts.Delimiter)
	if err != nil {
		return nil, err
	}
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
	cr.Comma = comma
	cr.ReuseRecord = true
	cr.FieldsPerRecord = 0
	recs := records{ctx: ctx, name: name, in: in, cr: cr, skip: int64(skip)}
	first, err := recs.next()
	if err == io.EOF {
		if opts.Header == edges.HeaderNo {
			return nil, usererr.InFile(name, "the CSV file is empty", "write its edges, one a line: src,dst[,weight]")
		}
		return nil, usererr.InFile(name, "the CSV file is empty: it needs a header line naming the columns",
			fmt.Sprintf("write a header such as %s", echo.Quote(cols.Src+string(comma)+cols.Dst)))
	}
	if err != nil {
		return nil, err
	}
	first.fields = append([]string(nil), first.fields...)
	recs.first = first.fields
	header, ambiguous, err := recs.hasHeader(first, cols, opts.Header)
	if err != nil {
		return nil, err
	}
	var at layout
	if header {
		at, err = namedColumns(name, first.fields, cols, comma, ambiguous)
	} else {
		recs.unread(first)
		at, err = positionalColumns(name, first, cols, comma)
	}
	if err != nil {
		return nil, err
	}

	c := collector{name: name, cols: cols, skip: opts.SkipInvalid, weighted: at.wi >= 0, weightUnread: at.unread, skipped: edges.Skips{}}
	var row int64
	for {
		if row&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			opts.CountRows(min(row, 0x10000))
		}
		rec, err := recs.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		c.lines.Note(row, rec.line)
		if err := c.add(rec.fields, at.si, at.di, at.wi, row, rec.line); err != nil {
			return nil, err
		}
		row++
	}
	opts.CountRows(row & 0xffff)
	return c.table(row), nil
}

// layout is where the edge columns are in a record: source, destination
// and weight (-1: not read); unread says the record has a weight the
// read leaves out (Columns.ReadWeight false).
type layout struct {
	si, di, wi int
	unread     bool
}

// namedColumns finds the edge columns in a header line. ambiguous says the
// header was assumed (HeaderAuto, on lines that do not tell), so that a
// missing column's message says how to read the line as an edge.
func namedColumns(name string, header []string, cols edges.Columns, comma rune, ambiguous bool) (layout, error) {
	find := func(want string) int {
		for i, h := range header {
			if h == want {
				return i
			}
		}
		return -1
	}
	at := layout{si: find(cols.Src), di: find(cols.Dst), wi: -1}
	if at.si < 0 && looksBinary(strings.Join(header, string(comma))) {
		return at, usererr.InFile(name, fmt.Sprintf("the file does not look like CSV text: its first line holds binary data (%s)", echo.Text(strings.Join(header, string(comma)))),
			"check the path, or name the input's format with --input-format")
	}
	missing := func(col, role, flag string) error {
		err := edges.ErrMissingColumn(name, col, role, flag, header)
		if ue, ok := err.(*usererr.Error); ok {
			if hint := delimiterHint(header, comma); hint != "" {
				ue.Fix = hint
			} else if ambiguous {
				ue.Fix += "; if the first line is an edge rather than a header, pass --header no"
			}
		}
		return err
	}
	if at.si < 0 {
		return at, missing(cols.Src, "source", "--src-col")
	}
	if at.di < 0 {
		return at, missing(cols.Dst, "destination", "--dst-col")
	}
	if err := edges.CheckUnique(name, cols, header); err != nil {
		return at, err
	}
	// A weight column the user named must be there, read or not (a
	// misspelt name would go unnoticed with an operator that uses none).
	if w := find(cols.Weight); w < 0 && cols.WeightExplicit {
		return at, missing(cols.Weight, "weight", "--weight-col")
	} else if cols.ReadWeight {
		at.wi = w
	} else {
		at.unread = w >= 0
	}
	return at, nil
}

// positionalColumns is the layout of a file without a header line: src,
// dst and an optional weight, by position, as in an edge list. first is
// its first record; every other has as many fields (encoding/csv checks).
func positionalColumns(name string, first record, cols edges.Columns, comma rune) (layout, error) {
	n := len(first.fields)
	if n < 2 || n > 3 {
		problem := fmt.Sprintf("line %d has %d fields, and without a header line the fields are src%cdst[%cweight]", first.line, n, comma, comma)
		fix := "add a header line naming the columns (and name them with --src-col, --dst-col and --weight-col)"
		if hint := delimiterHint(first.fields, comma); hint != "" {
			problem = fmt.Sprintf("line %d has 1 field, and without a header line the fields are src%cdst[%cweight]", first.line, comma, comma)
			fix = hint
		}
		return layout{}, &usererr.Error{Kind: usererr.Input, File: name, Row: -1, Line: first.line, Problem: problem, Fix: fix}
	}
	if cols.Src != "src" || cols.Dst != "dst" || cols.WeightExplicit {
		named := cols.Src
		switch {
		case cols.Src == "src" && cols.Dst != "dst":
			named = cols.Dst
		case cols.Src == "src" && cols.Dst == "dst":
			named = cols.Weight
		}
		return layout{}, &usererr.Error{Kind: usererr.Usage, File: name, Row: -1, Line: first.line,
			Problem: fmt.Sprintf("the file has no header line (line %d is an edge: %s), so no column is named %s", first.line, echo.Text(strings.Join(first.fields, string(comma))), echo.Quote(named)),
			Fix:     "add a header line naming the columns, or pass --header yes if the first line is one; without a header the fields are src,dst[,weight] by position and take no column flags"}
	}
	at := layout{si: 0, di: 1, wi: -1}
	if n == 3 && cols.ReadWeight {
		at.wi = 2
	}
	at.unread = n == 3 && !cols.ReadWeight
	return at, nil
}

// delimiter is the field delimiter opts name: ',' by default.
func delimiter(d rune) (rune, error) {
	if d == 0 {
		return ',', nil
	}
	if d == '"' || d == '\r' || d == '\n' || d == utf8.RuneError || !utf8.ValidRune(d) {
		return 0, usererr.New(usererr.Usage, fmt.Sprintf("%s cannot separate CSV fields", strconv.QuoteRune(d)),
			"use a character other than a quote or a line end: --delimiter ';', --delimiter tab")
	}
	return d, nil
}

// ParseDelimiter reads --delimiter's value: one character, or tab (also
// written \t).
func ParseDelimiter(s string) (rune, error) {
	switch strings.ToLower(s) {
	case "tab", `\t`:
		return '\t', nil
	}
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || n != len(s) {
		return 0, usererr.New(usererr.Usage, fmt.Sprintf("--delimiter %s is not one character", echo.Quote(s)),
			"give one character: --delimiter ';', --delimiter '|', or --delimiter tab")
	}
	return delimiter(r)
}

// delimiterNames name the delimiters a hint suggests.
var delimiterNames = []struct {
	r          rune
	what, flag string
}{
	{';', "semicolons", "--delimiter ';'"},
	{'\t', "tabs", "--delimiter tab"},
	{'|', "'|'", "--delimiter '|'"},
	{',', "commas", "--delimiter ,"},
}

// delimiterHint says which delimiter a file read with comma seems to use
// instead, from its first record: "" unless that is one field holding one
// of the others.
func delimiterHint(first []string, comma rune) string {
	if len(first) != 1 {
		return ""
	}
	name := string(comma)
	for _, d := range delimiterNames {
		if d.r == comma {
			name = d.what
		}
	}
	for _, d := range delimiterNames {
		if d.r != comma && strings.ContainsRune(first[0], d.r) {
			return fmt.Sprintf("the first line holds %s, not %s: pass %s", d.what, name, d.flag)
		}
	}
	if comma == '\t' && strings.ContainsRune(strings.TrimSpace(first[0]), ' ') {
		return "the first line's fields are separated by spaces, not tabs: read it as an edge list (--input-format text)"
	}
	return ""
}

// record is one CSV record and the line it starts on.
type record struct {
	fields []string
	line   int64
}

// records reads the records of a CSV input, each at most input.MaxLine
// bytes long, with a look ahead at the first ones (hasHeader).
type records struct {
	ctx  context.Context
	name string
	in   *input.Reader
	cr   *csv.Reader
	skip int64 // the bytes before the parser's first (a byte order mark)
	// start is where the next record starts in the parser's input, and
	// line the line the last record ends on.
	start, line int64
	// ahead are records read to decide on the header, and aheadErr what
	// reading on after them gave (nil: nothing yet).
	ahead    []record
	aheadErr error
	// first is the first record's fields, for hints.
	first []string
}

// next is the next record (io.EOF at the end), or a user error; a record
// longer than input.MaxLine is one. Its fields are valid until the next
// call.
func (r *records) next() (record, error) {
	if len(r.ahead) > 0 {
		rec := r.ahead[0]
		r.ahead = r.ahead[1:]
		return rec, nil
	}
	if r.aheadErr != nil {
		return record{}, r.aheadErr
	}
	return r.read()
}

// unread puts rec back, to come next.
func (r *records) unread(rec record) { r.ahead = append([]record{rec}, r.ahead...) }

func (r *records) read() (record, error) {
	rec, err := r.cr.Read()
	if err != nil {
		if cerr := r.ctx.Err(); cerr != nil {
			return record{}, cerr
		}
		if errors.Is(err, input.ErrRecordTooLong) {
			return record{}, input.ErrLongRecord(r.name, r.line+1)
		}
		if err == io.EOF {
			return record{}, err
		}
		uerr := userError(r.name, err, r.cr)
		// A line of another field count after a first line of one field
		// that holds another delimiter: ; with decimal commas, say.
		if ue, ok := uerr.(*usererr.Error); ok && errors.Is(err, csv.ErrFieldCount) {
			if hint := delimiterHint(r.first, r.cr.Comma); hint != "" {
				ue.Fix = hint
			}
		}
		return record{}, uerr
	}
	end := r.cr.InputOffset()
	if end-r.start > int64(input.MaxLine) {
		return record{}, input.ErrLongRecord(r.name, r.line+1)
	}
	line, _ := r.cr.FieldPos(0)
	// The record ends on the line its last field starts on, or as many
	// lines on as that (quoted) field holds line ends.
	last, _ := r.cr.FieldPos(len(rec) - 1)
	r.line = int64(last) + int64(strings.Count(rec[len(rec)-1], "\n"))
	r.start = end
	r.in.Bound(r.skip + end)
	return record{fields: rec, line: int64(line)}, nil
}

// The look ahead that decides on a header reads at most this many records,
// and stops once they hold this many bytes.
const (
	sampleRows  = 1024
	sampleBytes = 1 << 20
)

// hasHeader says whether first, the first record, is a header: as mode
// says, or for HeaderAuto as DuckDB's sniffer decides, from the records
// after it. It is when it names the source and destination columns, or
// when a field of it is text over a column of numbers in the records that
// follow (a name over numbers); it is not when every field fits (a number
// over numbers, whatever its kind, or anything over text). Where no
// column of those records is numeric the lines do not tell, and the first
// is taken for a header (ambiguous), as pyarrow takes it: a header read as
// an edge would be a wrong answer, a missing column is an error that says
// what to do.
func (r *records) hasHeader(first record, cols edges.Columns, mode edges.Header) (header, ambiguous bool, err error) {
	switch mode {
	case edges.HeaderYes:
		return true, false, nil
	case edges.HeaderNo:
		return false, false, nil
	case edges.HeaderAuto:
	default:
		return false, false, usererr.New(usererr.Usage, fmt.Sprintf("--header %s is not yes, no or auto", echo.Quote(string(mode))), "pass --header yes, no or auto")
	}
	if slices.Contains(first.fields, cols.Src) && slices.Contains(first.fields, cols.Dst) {
		return true, false, nil
	}
	bytes := 0
	for len(r.ahead) < sampleRows && bytes < sampleBytes {
		rec, err := r.read()
		if err != nil {
			if err != io.EOF && r.ctx.Err() != nil {
				return false, false, err
			}
			r.aheadErr = err
			break
		}
		rec.fields = append([]string(nil), rec.fields...)
		for _, f := range rec.fields {
			bytes += len(f)
		}
		r.ahead = append(r.ahead, rec)
	}
	if len(r.ahead) == 0 && r.aheadErr != nil && r.aheadErr != io.EOF {
		return false, false, r.aheadErr // the second record is malformed: that is the news
	}
	kinds := columnKinds(r.ahead, len(first.fields))
	numeric := false
	for j, k := range kinds {
		if k == kindString {
			continue
		}
		numeric = true
		if kindOf(first.fields[j]) == kindString {
			return true, false, nil // a name over numbers
		}
	}
	return !numeric, !numeric, nil
}

// The kinds of values a column holds, each taking the ones before it: a
// column is of the first kind every one of its values fits.
const (
	kindEmpty = iota // no value
	kindInt
	kindNumber
	kindString
)

// kindOf is the kind of one field.
func kindOf(f string) int {
	switch {
	case f == "":
		return kindEmpty
	case isInt(f):
		return kindInt
	case isNumber(f):
		return kindNumber
	}
	return kindString
}

func isInt(f string) bool {
	_, err := strconv.ParseInt(f, 10, 64)
	return err == nil
}

func isNumber(f string) bool {
	_, err := strconv.ParseFloat(f, 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// columnKinds is the kind of each of the first n columns of recs; a column
// of no values (all empty, or no records) is a string column, which tells
// nothing.
func columnKinds(recs []record, n int) []int {
	kinds := make([]int, n)
	for _, rec := range recs {
		for j := 0; j < n && j < len(rec.fields); j++ {
			kinds[j] = max(kinds[j], kindOf(rec.fields[j]))
		}
	}
	for j, k := range kinds {
		if k == kindEmpty {
			kinds[j] = kindString
		}
	}
	return kinds
}

// collector gathers the kept rows' fields.
type collector struct {
	name     string
	cols     edges.Columns
	skip     bool
	weighted bool
	// weightUnread is the layout's unread: a weight column left out.
	weightUnread bool
	src, dst     edges.Strings
	w            []float64
	rows         []int64
	skipped      edges.Skips
	lines        edges.LineMap // rows to lines, for errors found after reading
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
	t := &edges.Table{Name: c.name, Columns: c.cols, HasWeight: c.weighted, WeightUnread: c.weightUnread, RowsRead: rowsRead, Skipped: c.skipped,
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
