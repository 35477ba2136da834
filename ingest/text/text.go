// Package text reads whitespace-separated edge lists (SNAP, GAP .el/.wel, TSV
// without a header) and Matrix Market files (mtx.go), whose entries the edge
// list parser reads.
//
// The input is memory-mapped (or read whole), cut into blocks of a few
// megabytes at line ends, and the blocks are parsed in parallel, each into
// its own chunk, with a hand-written integer parser and no allocation per
// line. A block's newlines are counted first, which sizes its columns and
// numbers its lines for messages. Keys are parsed as int64; when some key
// is not an integer, every block is parsed again with string keys, as they
// are written.
package text

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/input"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/mmap"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// maxBlock is the most bytes of input a block holds (it ends at the next
// line end after that), and minBlock the least, but for the last:
// inputs smaller than a few blocks per core get smaller blocks. Tests set
// them small to cut their inputs into many blocks.
var (
	maxBlock = 8 << 20
	minBlock = 256 << 10
)

// The modes a block's keys are parsed in.
const (
	modeInts = iota
	modeStrings
)

// config is what a parse of edge lines needs to know.
type config struct {
	name string
	opts edges.Options
	// mtx: Matrix Market entries: integer keys, exactly fields fields, in
	// [1, rows] × [1, cols]; mirror (1 symmetric, -1 skew-symmetric) adds
	// each off-diagonal entry's transpose.
	mtx        bool
	fields     int
	rows, cols int64
	mirror     int
	// intValues: the values (weights) must be integers (a Matrix Market
	// integer matrix).
	intValues bool
	// firstLine is the line number of the input's first byte.
	firstLine int64
}

// what is what the input is read as, for messages.
func (cfg *config) what() string {
	if cfg.mtx {
		return "a Matrix Market file"
	}
	return "an edge list"
}

// blockError is the first error in a block.
type blockError struct {
	line   int    // within the block, 0-based
	row    int    // data line within the block, 0-based
	column string // "" when none
	token  string
	kind   int
	nf     int // fields on the line
}

// Kinds of blockError.
const (
	kindFields   = iota + 1 // 1 field, or more than 3
	kindMismatch            // a different number of fields than the line before
	kindWeight              // a weight that is not a number
	kindIndex               // mtx: an index that is not an integer
	kindRange               // mtx: an index out of range
	kindUTF8                // a string key that is not valid UTF-8
	kindInteger             // mtx: a value of an integer matrix that is not an integer
)

// block is a block of input lines and what parsing it gave.
type block struct {
	data     []byte
	newlines int // '\n' in data
	mode     int // how it was parsed
	nonInt   bool
	rows     int // data lines (kept or not)
	nf       int // fields on the first data line
	nfLine   int // its line within the block
	err      *blockError
	skipped  int64 // lines dropped for bad weights
	badUTF8  int64 // lines dropped for keys that are not UTF-8
	// The chunk's columns; rowsOf maps positions to rows relative to the
	// block's first row where lines were dropped or entries mirrored.
	src, dst   []int64
	sStr, dStr edges.Strings
	w          []float64
	rowsOf     []int64
	n          int // edges kept
	// gaps holds, for each blank or comment line, the number of data lines
	// before it in the block: what maps rows back to lines (edges.LineMap).
	gaps  []int32
	frees []func()
}

// inputBytes is the bytes of an input (read as what: "an edge list"):
// mapped for a file, else read whole, checking ctx between reads and
// refusing a line longer than input.MaxLine as it comes (an endless input
// without line ends would fill memory).
func inputBytes(ctx context.Context, name, what string, r io.Reader) ([]byte, func(), error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			m, err := mmap.Map(name, f)
			if err != nil {
				return nil, nil, err
			}
			return m.Data, m.Close, nil
		}
	}
	var data []byte
	var err error
	if l, ok := r.(interface{ Len() int }); ok {
		// A bytes.Reader or the like: read it in one go (split measures
		// its lines).
		data = make([]byte, l.Len())
		_, err = io.ReadFull(r, data)
	} else {
		data, err = input.ReadLines(ctx, name, what, r)
	}
	var ue *usererr.Error
	switch {
	case err == nil:
		return data, func() {}, nil
	case errors.As(err, &ue) || ctx.Err() != nil:
		return nil, nil, err
	}
	return nil, nil, usererr.InFile(name, "cannot read: "+err.Error(), "check the path").Because(err)
}

// Read reads the edge list r holds, named name in messages.
func Read(ctx context.Context, name string, r io.Reader, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	data, done, err := inputBytes(ctx, name, "an edge list", r)
	if err != nil {
		return nil, err
	}
	defer done()
	skip, err := sniff.TextStart(name, "a text edge list", data[:min(len(data), sniff.Len)])
	if err != nil {
		return nil, err
	}
	return readEdgeList(ctx, data[skip:], config{name: name, opts: opts, firstLine: 1})
}

// split cuts data into blocks at line ends. It returns, instead, where a
// line longer than input.MaxLine starts, if one does: every line but the
// one a block's cut falls in is shorter than a block, so that only those
// are measured.
func split(data []byte) (blocks []block, long int) {
	size := maxBlock
	if w := par.Workers(); len(data)/(4*w) < size {
		size = max(len(data)/(4*w), minBlock)
	}
	size = min(size, input.MaxLine)
	for off := 0; off < len(data); {
		rest := data[off:]
		end := len(rest)
		if end > size {
			start := bytes.LastIndexByte(rest[:size], '\n') + 1 // of the line the cut falls in
			limit := min(len(rest), max(size, start+input.MaxLine+1))
			if j := bytes.IndexByte(rest[size:limit], '\n'); j >= 0 {
				end = size + j + 1
			} else if limit-start > input.MaxLine {
				return nil, off + start
			}
		}
		blocks = append(blocks, block{data: rest[:end]})
		off += end
	}
	return blocks, -1
}

// parseEdgeLines parses the lines of data into an edge table.
func parseEdgeLines(ctx context.Context, data []byte, cfg config) (*edges.Table, error) {
	blocks, long := split(data)
	if long >= 0 {
		return nil, input.ErrLongLine(cfg.name, cfg.firstLine+int64(bytes.Count(data[:long], []byte{'\n'})), cfg.what())
	}
	var strMode atomic.Bool
	parse := func(force bool) {
		par.For(len(blocks), 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if ctx.Err() != nil {
					return
				}
				b := &blocks[i]
				if force {
					if b.mode == modeStrings {
						continue
					}
					b.reset()
				} else {
					b.newlines = bytes.Count(b.data, []byte{'\n'})
				}
				mode := modeInts
				if strMode.Load() && !cfg.mtx {
					mode = modeStrings
				}
				cfg.parseBlock(b, mode)
				if b.nonInt && !cfg.mtx {
					strMode.Store(true)
					b.reset()
					cfg.parseBlock(b, modeStrings)
				}
				if !force {
					cfg.opts.CountRows(int64(b.rows))
				}
			}
		})
	}
	ok := false
	defer func() {
		if !ok {
			for i := range blocks {
				blocks[i].reset()
			}
		}
	}()
	parse(false)
	if strMode.Load() {
		parse(true)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cfg.firstError(blocks); err != nil {
		return nil, err
	}
	t := cfg.assemble(blocks, strMode.Load())
	ok = true
	return t, nil
}

// reset frees what parsing the block allocated.
func (b *block) reset() {
	for _, f := range b.frees {
		f()
	}
	*b = block{data: b.data, newlines: b.newlines}
}

// allocate is a slice of n T from the allocator, freed by the block's reset
// or with the table.
func allocate[T any](a memory.Allocator, b *block, n int) []T {
	s := alloc.Slice[T](a, n)
	if a != nil && n > 0 {
		b.frees = append(b.frees, func() { alloc.Free(a, s) })
	}
	return s
}

// columnNames names the fields of a line in messages.
var columnNames = [3]string{"src", "dst", "weight"}

// isSep marks the bytes that end a field: blanks and the line end.
var isSep = [256]bool{' ': true, '\t': true, '\r': true, '\v': true, '\f': true, '\n': true}

// isBlank marks the blanks between fields.
var isBlank = [256]bool{' ': true, '\t': true, '\r': true, '\v': true, '\f': true}

// parseInt parses the integer field starting at b[p] (not a separator). It
// returns the value, the position after the field, and false when the
// field is not an int64 (then q is still the field's end).
func parseInt(b []byte, p int) (v int64, q int, ok bool) {
	start := p
	neg := false
	if c := b[p]; c == '-' || c == '+' {
		neg = c == '-'
		p++
	}
	digits := p
	var u uint64
	for p < len(b) {
		d := b[p] - '0'
		if d > 9 {
			break
		}
		u = u*10 + uint64(d)
		p++
	}
	n := p - digits
	if p < len(b) && !isSep[b[p]] || n == 0 || n > 19 {
		for p < len(b) && !isSep[b[p]] {
			p++
		}
		if n <= 19 {
			return 0, p, false
		}
		// More than 19 digits: leading zeros (any number of them, as
		// strconv and the CSV reader allow), or too large. Let strconv judge.
		x, err := strconv.ParseInt(unsafe.String(&b[start], p-start), 10, 64)
		return x, p, err == nil
	}
	if neg {
		if u > 1<<63 {
			return 0, p, false
		}
		return -int64(u), p, true
	}
	if u > math.MaxInt64 {
		return 0, p, false
	}
	return int64(u), p, true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat parses a weight field: plain decimals of up to 15 digits exactly
// and fast (as strconv would round them), anything else with strconv.
func parseFloat(tok []byte) (float64, bool) {
	p := 0
	neg := false
	if len(tok) > 0 && (tok[0] == '-' || tok[0] == '+') {
		neg = tok[0] == '-'
		p++
	}
	var m uint64
	digits, frac := 0, -1
	for ; p < len(tok); p++ {
		c := tok[p]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
			continue
		case c == '.' && frac < 0:
			frac = 0
			continue
		}
		break
	}
	if p == len(tok) && digits > 0 && digits <= 15 {
		f := float64(m)
		if frac > 0 {
			f /= pow10[frac]
		}
		if neg {
			f = -f
		}
		return f, true
	}
	if len(tok) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafe.String(&tok[0], len(tok)), 64)
	// Out of range is ±Inf or 0, as strconv rounds it: a number still.
	return f, err == nil || errors.Is(err, strconv.ErrRange)
}

// parseBlock parses a block's lines, stopping at the first error (or, in
// int mode, at the first key that is not an integer: b.nonInt). The loop
// keeps its state in locals; it runs once per input line.
func (cfg *config) parseBlock(b *block, mode int) {
	b.mode = mode
	data := b.data
	a := cfg.opts.Alloc
	capN := b.newlines + 1 // lines: the most edges, or twice that mirrored
	if cfg.mirror != 0 {
		capN *= 2
	}
	o := cfg.blockColumns(b, mode, capN)
	readWeight := cfg.opts.Columns.ReadWeight
	ints, mtx, mirror := mode == modeInts, cfg.mtx, cfg.mirror
	wantFields := cfg.fields
	n, rows, line, p := 0, 0, 0, 0
	b.gaps = b.gaps[:0]
	defer func() { o.finish(a, b, n, rows) }()
	// skip counts a line that is not an edge (SkipInvalid) and moves on.
	skip := func() {
		if o.rowsOf == nil {
			o.rowsOf = rowMap(n, capN)
		}
		rows++
		line++
		p++ // the newline, if any
	}
	var f lineFields
	for p < len(data) {
		if c := data[p]; isBlank[c] || c == '\n' || c == '#' || c == '%' {
			q, gap, end := skipBlankLines(data, p)
			if gap {
				b.gaps = append(b.gaps, int32(rows))
				p = q
				line++
				continue
			}
			if end {
				return
			}
			p = q
		}
		q, nonInt := scanFields(&f, data, p, ints, mtx)
		if nonInt {
			b.nonInt = true
			return
		}
		p = q
		// The usual line has the file's field count, and only a Matrix
		// Market file's indices have a range to check.
		if (f.nf != wantFields || mtx) && !cfg.checkLine(b, &f, data, line, rows, &wantFields) {
			return
		}
		var wv float64
		if f.nf == 3 && readWeight {
			if o.w == nil {
				o.w = allocate[float64](a, b, capN)
			}
			v, kind, ok := cfg.weightOf(data, &f)
			if !ok {
				if !cfg.opts.SkipInvalid {
					b.fail(kind, line, rows, f.nf, "weight", data[f.fs[2]:f.fe[2]])
					return
				}
				b.skipped++
				skip()
				continue
			}
			wv = v
		}
		if ints {
			o.src[n], o.dst[n] = f.sv, f.dv
		} else {
			// String keys become Arrow utf8, which other readers (pyarrow,
			// DuckDB) refuse unless it is valid UTF-8.
			if k := badUTF8Key(data, f.fs, f.fe); k >= 0 {
				if !cfg.opts.SkipInvalid {
					b.fail(kindUTF8, line, rows, f.nf, columnNames[k], data[f.fs[k]:f.fe[k]])
					return
				}
				b.badUTF8++
				skip()
				continue
			}
			o.addStrings(data, &f, n)
		}
		if o.w != nil {
			o.w[n] = wv
		}
		if o.rowsOf != nil {
			o.rowsOf = append(o.rowsOf, int64(rows))
		}
		n++
		if mirror != 0 && f.sv != f.dv {
			if o.rowsOf == nil {
				o.rowsOf = rowMap(n, capN)
			}
			o.src[n], o.dst[n] = f.dv, f.sv
			if o.w != nil {
				o.w[n] = wv * float64(mirror)
			}
			o.rowsOf = append(o.rowsOf, int64(rows))
			n++
		}
		rows++
		line++
		p++ // the newline, if any
	}
}

// blockCols are the columns a block's lines are parsed into: integer keys
// (src, dst) or strings (offsets and bytes), weights where read, and the
// input row of each edge where edges and rows part (a line skipped, an
// edge mirrored).
type blockCols struct {
	mode         int
	src, dst     []int64
	sOff, dOff   []int64
	sData, dData []byte
	w            []float64
	rowsOf       []int64
}

// blockColumns allocates the columns of block b's capN edges in mode.
func (cfg *config) blockColumns(b *block, mode, capN int) *blockCols {
	a := cfg.opts.Alloc
	o := &blockCols{mode: mode}
	if mode == modeInts {
		o.src = allocate[int64](a, b, capN)
		o.dst = allocate[int64](a, b, capN)
	} else {
		o.sOff = allocate[int64](a, b, capN+1)
		o.dOff = allocate[int64](a, b, capN+1)
		o.sData = make([]byte, 0, len(b.data)/4+16)
		o.dData = make([]byte, 0, len(b.data)/4+16)
	}
	return o
}

// addStrings appends edge n's string keys.
func (o *blockCols) addStrings(data []byte, f *lineFields, n int) {
	o.sData = append(o.sData, data[f.fs[0]:f.fe[0]]...)
	o.dData = append(o.dData, data[f.fs[1]:f.fe[1]]...)
	o.sOff[n+1] = int64(len(o.sData))
	o.dOff[n+1] = int64(len(o.dData))
}

// finish hands the block its n edges of rows lines.
func (o *blockCols) finish(a memory.Allocator, b *block, n, rows int) {
	b.src, b.dst, b.w, b.rowsOf = o.src, o.dst, o.w, o.rowsOf
	b.n, b.rows = n, rows
	if o.mode == modeStrings {
		b.sStr = edges.Strings{Offsets: o.sOff[:n+1], Data: keep(a, b, o.sData)}
		b.dStr = edges.Strings{Offsets: o.dOff[:n+1], Data: keep(a, b, o.dData)}
	}
}

// skipBlankLines moves p past blanks. At a newline or a comment line it
// returns the position after that line with gap set (a line that is no
// edge); end says the data ended; otherwise q is a data line's first field.
func skipBlankLines(data []byte, p int) (q int, gap, end bool) {
	c := data[p]
	for isBlank[c] {
		if p++; p == len(data) {
			return p, false, true
		}
		c = data[p]
	}
	if c == '\n' {
		return p + 1, true, false
	}
	if c == '#' || c == '%' {
		j := bytes.IndexByte(data[p:], '\n')
		if j < 0 {
			return len(data), false, true
		}
		return p + j + 1, true, false
	}
	return p, false, false
}

// lineFields are a data line's fields: where each starts and ends (up to
// three; nf 4 means more), its keys where they parse as integers, and the
// first key that does not (a Matrix Market index: badIndex, else -1).
type lineFields struct {
	fs, fe   [3]int
	sv, dv   int64
	nf       int
	badIndex int
}

// scanFields reads into f the fields of the data line at p: src dst [weight]. In
// int mode (ints) the keys are parsed as they are scanned; a key that is
// not an integer ends the scan with nonInt, except in a Matrix Market file
// (mtx), where it is a bad index. q is the position after the fields.
func scanFields(f *lineFields, data []byte, p int, ints, mtx bool) (q int, nonInt bool) {
	f.nf, f.badIndex = 0, -1
	for p < len(data) && data[p] != '\n' {
		if f.nf == 3 {
			f.nf = 4 // or more
			break
		}
		f.fs[f.nf] = p
		if ints && f.nf < 2 {
			v, next, ok := parseInt(data, p)
			if !ok {
				if !mtx {
					return p, true
				}
				if f.badIndex < 0 {
					f.badIndex = f.nf
				}
			}
			if f.nf == 0 {
				f.sv = v
			} else {
				f.dv = v
			}
			p = next
		} else {
			for p < len(data) && !isSep[data[p]] {
				p++
			}
		}
		f.fe[f.nf] = p
		f.nf++
		for p < len(data) && isBlank[data[p]] {
			p++
		}
	}
	return p, false
}

// checkLine checks a data line's field count against the file's (the
// first data line sets it: *want) and a Matrix Market line's indices
// against the matrix's size; on a failure it records it in b.
func (cfg *config) checkLine(b *block, f *lineFields, data []byte, line, rows int, want *int) bool {
	switch {
	case f.nf < 2 || f.nf > 3:
		b.fail(kindFields, line, rows, f.nf, "", nil)
		return false
	case f.nf != *want:
		if *want != 0 {
			b.fail(kindMismatch, line, rows, f.nf, "", nil)
			return false
		}
		b.nf, b.nfLine = f.nf, line
		*want = f.nf
	}
	if !cfg.mtx {
		return true
	}
	switch {
	case f.badIndex >= 0:
		b.fail(kindIndex, line, rows, f.nf, columnNames[f.badIndex], data[f.fs[f.badIndex]:f.fe[f.badIndex]])
	case f.sv < 1 || f.sv > cfg.rows:
		b.fail(kindRange, line, rows, f.nf, "src", data[f.fs[0]:f.fe[0]])
	case f.dv < 1 || f.dv > cfg.cols:
		b.fail(kindRange, line, rows, f.nf, "dst", data[f.fs[1]:f.fe[1]])
	default:
		return true
	}
	return false
}

// weightOf parses a line's third field as its weight: an integer in a
// Matrix Market integer file (cfg.intValues), else a float. On a failure
// kind is the error's.
func (cfg *config) weightOf(data []byte, f *lineFields) (w float64, kind int, ok bool) {
	if cfg.intValues {
		v, _, ok := parseInt(data, f.fs[2])
		return float64(v), kindInteger, ok
	}
	w, ok = parseFloat(data[f.fs[2]:f.fe[2]])
	return w, kindWeight, ok
}

// badUTF8Key is the index of the first key field (src, dst) that is not
// valid UTF-8, or -1.
func badUTF8Key(data []byte, fs, fe [3]int) int {
	for k := 0; k < 2; k++ {
		if !utf8.Valid(data[fs[k]:fe[k]]) {
			return k
		}
	}
	return -1
}

// fail records the block's error.
func (b *block) fail(kind, line, row, nf int, column string, token []byte) {
	// A message shows what echo cuts it to; one byte more says it was cut.
	tok := string(token[:min(len(token), echo.Len+1)])
	b.err = &blockError{line: line, kind: kind, column: column, token: tok, nf: nf, row: row}
}

// rowMap starts the row map of a block whose first n positions are rows
// 0..n-1.
func rowMap(n, capN int) []int64 {
	rows := make([]int64, n, capN)
	for i := range rows {
		rows[i] = int64(i)
	}
	return rows
}

// keep is string data built in Go memory, moved to the allocator's.
func keep(a memory.Allocator, b *block, data []byte) []byte {
	if a == nil {
		if cap(data) > len(data)+len(data)/4+1024 {
			return bytes.Clone(data)
		}
		return data
	}
	out := allocate[byte](a, b, len(data))
	copy(out, data)
	return out
}

// lineOf is the line number of line l of block i.
func (cfg *config) lineOf(blocks []block, i, l int) int64 {
	line := cfg.firstLine + int64(l)
	for _, b := range blocks[:i] {
		line += int64(b.newlines)
	}
	return line
}

// firstError is the error of the earliest line, if any.
func (cfg *config) firstError(blocks []block) error {
	want, wantLine := cfg.fields, int64(0)
	var rows int64
	for i := range blocks {
		b := &blocks[i]
		if b.nf != 0 && want == 0 {
			want, wantLine = b.nf, cfg.lineOf(blocks, i, b.nfLine)
		}
		// A block's first data line (before its error, if any) must agree
		// with the first of the file.
		if b.nf != 0 && b.nf != want {
			return cfg.fieldsError(cfg.lineOf(blocks, i, b.nfLine), b.nf, want, wantLine)
		}
		if e := b.err; e != nil {
			line := cfg.lineOf(blocks, i, e.line)
			if e.kind == kindMismatch {
				return cfg.fieldsError(line, e.nf, want, wantLine)
			}
			return cfg.lineError(e, line, rows+int64(e.row))
		}
		rows += int64(b.rows)
	}
	return nil
}

// fieldsError reports a line with another number of fields than wanted.
func (cfg *config) fieldsError(line int64, nf, want int, wantLine int64) error {
	if cfg.mtx {
		// The parser stops counting at 4.
		has := fmt.Sprintf("%d fields", nf)
		switch {
		case nf == 1:
			has = "1 field"
		case nf > 3:
			has = "more than 3 fields"
		}
		return usererr.AtLine(cfg.name, line, fmt.Sprintf("entry has %s where this matrix's entries have %d (%s)", has, want, mtxEntryForm(want)),
			"give every entry the same fields, as the header's field type says")
	}
	return usererr.AtLine(cfg.name, line, fmt.Sprintf("line has %d fields where line %d has %d", nf, wantLine, want),
		"give every line src dst, or every line src dst weight")
}

// lineError reports a block's error at line (input row row).
func (cfg *config) lineError(e *blockError, line, row int64) error {
	switch e.kind {
	case kindFields:
		if cfg.mtx {
			return cfg.fieldsError(line, e.nf, cfg.fields, 0)
		}
		what := fmt.Sprintf("line has %d field", e.nf)
		if e.nf > 3 {
			what = "line has more than 3 fields"
		}
		return usererr.AtLine(cfg.name, line, what+"; an edge list line is src dst, or src dst weight",
			"separate the fields with spaces or tabs; for a table with more columns, use CSV with a header row")
	case kindWeight:
		return &usererr.Error{Kind: usererr.Input, File: cfg.name, Column: e.column, Row: row, Line: line,
			Problem: fmt.Sprintf("weight %s is not a number", echo.Quote(e.token)),
			Fix:     "write weights as decimal numbers, or pass --skip-invalid to drop such lines"}
	case kindInteger:
		problem := fmt.Sprintf("value %s is not an integer, as the banner's field type integer says it must be", echo.Quote(e.token))
		fix := "write the value as an integer, or make the banner's field type real; or pass --skip-invalid to drop such entries"
		// All digits, it was too large.
		digits := e.token
		if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
			digits = digits[1:]
		}
		if digits != "" && strings.Trim(digits, "0123456789") == "" {
			problem = fmt.Sprintf("value %s is too large for an integer (the banner's field type is integer: at most 19 digits)", echo.Prefix(e.token))
			fix = "make the banner's field type real, or pass --skip-invalid to drop such entries"
		}
		return &usererr.Error{Kind: usererr.Input, File: cfg.name, Column: e.column, Row: row, Line: line, Problem: problem, Fix: fix}
	case kindIndex:
		what := "row"
		if e.column == "dst" {
			what = "column"
		}
		return usererr.AtLine(cfg.name, line, fmt.Sprintf("%s index %s is not an integer", what, echo.Quote(e.token)),
			"a coordinate entry is: row column [value], with 1-based integer indices")
	case kindUTF8:
		return &usererr.Error{Kind: usererr.Input, File: cfg.name, Column: e.column, Row: row, Line: line,
			Problem: fmt.Sprintf("vertex key %s is not valid UTF-8", echo.Quote(e.token)),
			Fix:     "convert the file to UTF-8 (iconv -f latin1 -t utf-8, say), or pass --skip-invalid to drop such lines"}
	case kindRange:
		what, limit := "row", cfg.rows
		if e.column == "dst" {
			what, limit = "column", cfg.cols
		}
		return usererr.AtLine(cfg.name, line, fmt.Sprintf("%s index %s is outside 1..%d (the size line's %s count)", what, echo.Prefix(e.token), limit, what),
			"fix the entry or the size line")
	}
	return usererr.AtLine(cfg.name, line, "cannot parse the line", "")
}

// assemble makes the table from the parsed blocks, one chunk per block.
func (cfg *config) assemble(blocks []block, strKeys bool) *edges.Table {
	t := &edges.Table{
		Name:         cfg.name,
		Columns:      cfg.opts.Columns,
		KeyType:      edges.KeyInt64,
		KeyArrowType: arrow.PrimitiveTypes.Int64,
		Skipped:      edges.Skips{},
	}
	if strKeys {
		t.KeyType, t.KeyArrowType = edges.KeyString, arrow.BinaryTypes.String
	}
	want := cfg.fields
	for i := range blocks {
		if want == 0 {
			want = blocks[i].nf
		}
	}
	t.HasWeight = cfg.opts.Columns.ReadWeight && want == 3
	t.WeightUnread = !cfg.opts.Columns.ReadWeight && want == 3
	var row, skipped, badUTF8 int64
	lines := &edges.LineMap{}
	firstLine := cfg.firstLine
	for i := range blocks {
		b := &blocks[i]
		if b.rows > 0 {
			lines.AddBlock(row, firstLine, b.gaps)
		}
		firstLine += int64(b.newlines)
		for _, f := range b.frees {
			t.OnRelease(f)
		}
		b.frees = nil
		skipped += b.skipped
		badUTF8 += b.badUTF8
		if b.n > 0 {
			ch := edges.Chunk{FirstRow: row}
			if strKeys {
				s, d := b.sStr, b.dStr
				ch.Src.Str, ch.Dst.Str = &s, &d
			} else {
				ch.Src.Int64, ch.Dst.Int64 = b.src[:b.n], b.dst[:b.n]
			}
			if t.HasWeight {
				ch.Weight = b.w[:b.n]
			}
			if b.rowsOf != nil {
				ch.Rows = b.rowsOf
				for k := range ch.Rows {
					ch.Rows[k] += row
				}
			}
			t.Chunks = append(t.Chunks, ch)
		}
		row += int64(b.rows)
	}
	t.RowsRead = row
	t.Lines = lines
	if skipped > 0 {
		t.Skipped.Add(edges.SkipBadWeight(cfg.opts.Columns.Weight), skipped)
	}
	if badUTF8 > 0 {
		t.Skipped.Add(edges.SkipBadUTF8, badUTF8)
	}
	return t
}
