// Package input reads the bytes of an input for the readers: checking for
// cancellation before every read, so that a signal ends the read of an
// endless input (a pipe, /dev/zero), and waiting for a pipe, FIFO or
// terminal to have input before reading it, so that a signal also ends a
// read whose producer has stalled; and, for the text formats, refusing a
// line (or a CSV record) longer than MaxLine, so that an input without line
// ends (binary data, /dev/zero, `yes | tr -d '\n'`) fails with a message
// that names the line, instead of filling memory.
package input

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/usererr"
)

// MaxLine is the most bytes a line of a text input (an edge list, a
// Matrix Market file) or a record of a CSV file may hold: 64 MiB. No edge
// table has lines near it; an input that does is not text, or not one line
// an edge. Tests set it small (edgetest.ShortLines).
var MaxLine = 64 << 20

// maxRead is the most bytes one read asks for, so that an endless input is
// read no further than that past MaxLine, and the context is checked
// between reads of at most that.
const maxRead = 1 << 20

// ErrLongLine reports line line of the input name (read as what: "an edge
// list", "a Matrix Market file"), which is longer than MaxLine.
func ErrLongLine(name string, line int64, what string) error {
	return usererr.AtLine(name, line, fmt.Sprintf("the line is longer than %s, the most a line of %s may hold", bytesize.Format(int64(MaxLine)), what),
		fmt.Sprintf("check that the input is %s, one edge a line (binary data, or text without line ends, is not)", what))
}

// ErrLongRecord reports a CSV record that starts on line line of the input
// name and is longer than MaxLine.
func ErrLongRecord(name string, line int64) error {
	return usererr.AtLine(name, line, fmt.Sprintf("the CSV record that starts on this line is longer than %s, the most a record may hold", bytesize.Format(int64(MaxLine))),
		"check that the input is CSV text, and that every quoted field is closed (a quote left open runs on to the end)")
}

// ReadLines reads r to its end, as io.ReadAll does, but checks ctx before
// every read (and waits for a pipe's input as a Reader does) and stops at a line longer than MaxLine (ErrLongLine, naming
// the input name read as what).
func ReadLines(ctx context.Context, name, what string, r io.Reader) ([]byte, error) {
	data := make([]byte, 0, 64<<10)
	line := 0 // where the last line starts
	r = NewReader(ctx, r)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		k, err := r.Read(data[len(data):min(cap(data), len(data)+maxRead)])
		read := data[len(data) : len(data)+k]
		data = data[:len(data)+k]
		if i := bytes.LastIndexByte(read, '\n'); i >= 0 {
			line = len(data) - k + i + 1
		}
		if len(data)-line > MaxLine {
			return nil, ErrLongLine(name, int64(bytes.Count(data[:line], []byte{'\n'}))+1, what)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadAll reads r to its end, as io.ReadAll does, but checks ctx before
// every read.
func ReadAll(ctx context.Context, r io.Reader) ([]byte, error) {
	return io.ReadAll(NewReader(ctx, r))
}

// ErrRecordTooLong is what a Reader returns once a record runs past its
// bound.
var ErrRecordTooLong = errors.New("a record is longer than the most a record may hold")

// Reader reads r, checking a context before every read, and stops (with
// ErrRecordTooLong) a record that runs more than MaxLine bytes past where
// its reader said it starts (Bound).
type Reader struct {
	ctx   context.Context
	r     io.Reader
	wait  *os.File // r, where its reads can block for as long as a producer stalls
	n     int64    // bytes read
	limit int64    // the offset reads stop at; 0: none
}

// NewReader is a Reader of r that checks ctx. Where r is a pipe, a FIFO,
// a terminal or a socket (an *os.File that is not a regular file) and ctx
// can be canceled, every read waits for input first, looking at ctx as it
// waits (waitReadable).
func NewReader(ctx context.Context, r io.Reader) *Reader {
	in := &Reader{ctx: ctx, r: r}
	under := r
	if p, ok := r.(*Prefixed); ok {
		under = p.r
	}
	if f, ok := under.(*os.File); ok && ctx.Done() != nil {
		if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
			in.wait = f
		}
	}
	return in
}

// Read reads as r does, after checking the context.
func (r *Reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if r.wait != nil {
		if err := waitReadable(r.ctx, r.wait); err != nil {
			return 0, err
		}
	}
	p = p[:min(len(p), maxRead)]
	if r.limit > 0 {
		if r.n >= r.limit {
			return 0, ErrRecordTooLong
		}
		p = p[:min(int64(len(p)), r.limit-r.n)]
	}
	k, err := r.r.Read(p)
	r.n += int64(k)
	return k, err
}

// recordSlack is how far past MaxLine bytes beyond a record's start a
// Reader reads before it stops the record: more than a buffered reader
// above it reads ahead, so that reads stop only once the record itself is
// longer than MaxLine.
const recordSlack = 1 << 20

// Bound says the record read next starts at byte off of the input: reads
// stop once they reach recordSlack bytes past MaxLine beyond it.
func (r *Reader) Bound(off int64) { r.limit = off + int64(MaxLine) + recordSlack }

// Prefixed reads bytes read already (an input's first, looked at to tell
// its format), then the rest of the input they came from. A Reader of it
// waits for input as it would for the input itself.
type Prefixed struct {
	head []byte
	r    io.Reader
}

// Prefix is a reader of head, then r.
func Prefix(head []byte, r io.Reader) *Prefixed { return &Prefixed{head: head, r: r} }

// Read reads what is left of head, then r: the first read that empties
// head goes on with one read of r, so that a reader that looks at what
// one read gave (a format's guess from the buffered bytes) sees more than
// head.
func (p *Prefixed) Read(b []byte) (int, error) {
	if len(p.head) == 0 {
		return p.r.Read(b)
	}
	n := copy(b, p.head)
	p.head = p.head[n:]
	if len(p.head) > 0 || n == len(b) {
		return n, nil
	}
	m, err := p.r.Read(b[n:])
	if err == io.EOF {
		err = nil // the next read says so
	}
	return n + m, err
}
