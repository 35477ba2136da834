package main

import (
	"context"
	"io"
	"testing"
)

// cancelingWriter counts what is written to it and cancels a context on the
// first write.
type cancelingWriter struct {
	cancel context.CancelFunc
	n      int64
}

func (w *cancelingWriter) Write(p []byte) (int, error) {
	if w.cancel != nil {
		w.cancel()
	}
	w.n += int64(len(p))
	return len(p), nil
}

// gpipe gen stops soon after an interrupt while it writes: the generator's
// table is one chunk of a million edges here, and the writers check between
// pieces of it, not between chunks. The interrupt comes with the first
// bytes on standard output; the run ends (exit 130) having written a small
// part of what an uninterrupted run writes.
func TestGenInterruptedWhileWriting(t *testing.T) {
	for _, format := range []string{"arrows", "csv", "text"} {
		args := []string{"gpipe", "gen", "kronecker", "--scale", "16", "--output", "-", "--output-format", format}
		whole := &cancelingWriter{}
		if code := run(context.Background(), args, &env{stdin: nil, stdout: whole, stderr: io.Discard}); code != 0 {
			t.Fatalf("%s: exit %d", format, code)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cut := &cancelingWriter{cancel: cancel}
		code := run(ctx, args, &env{stdout: cut, stderr: io.Discard})
		cancel()
		if code != exitInterrupted || cut.n > whole.n/4 {
			t.Errorf("%s: interrupted with the first bytes, exit %d after %d of %d bytes; want exit %d, soon",
				format, code, cut.n, whole.n, exitInterrupted)
		}
	}
}
