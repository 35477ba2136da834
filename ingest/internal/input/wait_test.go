//go:build unix

package input

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/gpipe/gpipe/internal/pollctx"
)

// A read of a pipe whose producer has stalled (it holds the pipe open and
// writes nothing) ends when the context is canceled: it used to wait in
// the kernel for the producer. What came before the stall is read. The
// context cancels itself at its 10th poll, past those before the read
// blocks, so that the cancellation comes while the read waits. (The test
// waits a generous bound for the read to end, then closes the pipe to let
// a stuck read go; it measures no speed.)
func TestReadStalledPipeCanceled(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.WriteString("src,dst\n"); err != nil {
		t.Fatal(err)
	}
	ctx := pollctx.New(10)
	in := NewReader(ctx, r)
	buf := make([]byte, 64)
	if n, err := in.Read(buf); n != 8 || err != nil {
		t.Fatalf("first read: %d bytes, %v", n, err)
	}
	returned := make(chan error, 1)
	go func() {
		_, err := in.Read(buf)
		returned <- err
	}()
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("read after the cancel: %v, want the cancellation", err)
		}
	case <-time.After(10 * time.Second):
		w.Close()
		<-returned
		t.Fatal("the read waited for a stalled producer after its context was canceled")
	}
}
