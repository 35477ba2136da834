package edgetest

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/gpipe/gpipe/ingest/internal/input"
)

// Endless is an input without end, as /dev/zero or `yes` are: Prefix, then
// Pattern over and over. Past Limit bytes it fails its reads
// (ErrReadTooFar), so that a reader that does not stop where it should
// fails its test instead of filling memory. It counts what it gave. One
// goroutine reads it.
type Endless struct {
	Prefix, Pattern []byte
	Limit           int64
	n               atomic.Int64
	block           []byte // Pattern repeated, 64 KiB or more, to copy from
}

// ErrReadTooFar is what an Endless returns past its limit.
var ErrReadTooFar = errors.New("edgetest: the endless input was read past its limit")

// Read fills p with the input's next bytes.
func (e *Endless) Read(p []byte) (int, error) {
	n := e.n.Load()
	if n >= e.Limit {
		return 0, ErrReadTooFar
	}
	p = p[:min(int64(len(p)), e.Limit-n)]
	done := 0
	if n < int64(len(e.Prefix)) {
		done = copy(p, e.Prefix[n:])
	}
	if e.block == nil {
		e.block = bytes.Repeat(e.Pattern, 1+(64<<10)/len(e.Pattern))
	}
	for done < len(p) {
		at := (n + int64(done) - int64(len(e.Prefix))) % int64(len(e.Pattern))
		done += copy(p[done:], e.block[at:])
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// ReadBytes is how many bytes were read.
func (e *Endless) ReadBytes() int64 { return e.n.Load() }

// ShortLines makes input.MaxLine, the longest line a text input may have,
// n bytes for the test, so that the test need not read 64 MiB to reach it.
func ShortLines(t testing.TB, n int) {
	old := input.MaxLine
	input.MaxLine = n
	t.Cleanup(func() { input.MaxLine = old })
}
