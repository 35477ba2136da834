package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// endless is standard input without end (/dev/zero, `yes`): prefix, then
// pattern over and over. Past limit bytes its reads fail, so that a gpipe
// that does not stop where it should fails the test instead of filling
// memory. At cancelAt bytes, if set, it calls cancel: an interrupt that
// comes while gpipe reads.
type endless struct {
	prefix, pattern []byte
	limit           int64
	cancelAt        int64
	cancel          context.CancelFunc
	n               atomic.Int64
	block           []byte
}

var errReadTooFar = errors.New("the endless input was read past its limit")

func (e *endless) Read(p []byte) (int, error) {
	n := e.n.Load()
	if n >= e.limit {
		return 0, errReadTooFar
	}
	if e.cancel != nil && n >= e.cancelAt {
		e.cancel()
	}
	if e.block == nil {
		e.block = bytes.Repeat(e.pattern, 1+(64<<10)/len(e.pattern))
	}
	p = p[:min(int64(len(p)), e.limit-n)]
	done := 0
	if n < int64(len(e.prefix)) {
		done = copy(p, e.prefix[n:])
	}
	for done < len(p) {
		done += copy(p[done:], e.block[(n+int64(done)-int64(len(e.prefix)))%int64(len(e.pattern)):])
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// maxLine is the line cap the README documents (ingest/internal/input).
const maxLine = 64 << 20

// `gpipe run --input - --input-format csv` (or text) with standard input
// that has no line ends, as `yes | tr -d '\n'` or /dev/zero: exit 3 with a
// one-line message naming the line, having read little past the cap. It
// used to read on, 2 GB in 15 s, until killed.
func TestRunEndlessStdin(t *testing.T) {
	for _, tc := range []struct {
		format, pattern, says string
	}{
		{"csv", "y", "-, line 1: the CSV record that starts on this line is longer than 64 MiB, the most a record may hold; check that the input is CSV text"},
		{"text", "y", "-, line 1: the line is longer than 64 MiB, the most a line of an edge list may hold; check that the input is an edge list"},
		{"mtx", "\x00", "-, line 1: the line is longer than 64 MiB"},
	} {
		in := &endless{pattern: []byte(tc.pattern), limit: maxLine + 32<<20}
		var stderr strings.Builder
		code := run(context.Background(), []string{"gpipe", "run", "--input", "-", "--input-format", tc.format, "--op", "cc"},
			&env{stdin: in, stdout: &strings.Builder{}, stderr: &stderr})
		if code != 3 || !strings.HasPrefix(stderr.String(), "gpipe: "+tc.says) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 3 and %q", tc.format, code, stderr.String(), tc.says)
		}
		if n := in.n.Load(); n > maxLine+4<<20 {
			t.Errorf("%s: read %d bytes of an endless line", tc.format, n)
		}
	}
}

// An interrupt while gpipe reads an endless standard input ends the run
// (exit 130) at once, in every format read from standard input: text and
// Parquet (read whole into memory first) used to read on.
func TestRunInterruptedWhileReading(t *testing.T) {
	for _, tc := range []struct {
		format, prefix, pattern string
	}{
		{"csv", "src,dst\n", "1,2\n"},
		{"text", "", "1 2\n"},
		{"mtx", "%%MatrixMarket matrix coordinate pattern general\n9 9 99999999999\n", "1 2\n"},
		{"parquet", "PAR1", "\x00"},
		{"arrow", "ARROW1\x00\x00", "\x00"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		in := &endless{prefix: []byte(tc.prefix), pattern: []byte(tc.pattern), limit: 256 << 20, cancelAt: 4 << 20, cancel: cancel}
		var stderr strings.Builder
		code := run(ctx, []string{"gpipe", "run", "--input", "-", "--input-format", tc.format, "--op", "cc"},
			&env{stdin: in, stdout: &strings.Builder{}, stderr: &stderr})
		cancel()
		if code != exitInterrupted || stderr.String() != "gpipe: interrupted\n" {
			t.Errorf("%s: exit %d, stderr %q; want exit %d, interrupted", tc.format, code, stderr.String(), exitInterrupted)
		}
		if n := in.n.Load(); n > 8<<20 {
			t.Errorf("%s: read %d bytes, interrupted at %d", tc.format, n, 4<<20)
		}
	}
}
