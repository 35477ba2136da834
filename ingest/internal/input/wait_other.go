//go:build !unix

package input

import (
	"context"
	"os"
)

// waitReadable returns at once: where there is no poll(2), a read of a
// stalled pipe blocks until its producer writes or closes, and a signal is
// seen after it.
func waitReadable(ctx context.Context, f *os.File) error { return ctx.Err() }
