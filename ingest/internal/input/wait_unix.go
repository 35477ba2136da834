//go:build unix

package input

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// pollMillis is how long a wait for input sleeps in poll(2) before it looks
// at the context again: a signal is seen within it.
const pollMillis = 100

// waitReadable waits until f has bytes to read (or its end, or an error,
// which the read that follows reports), or until ctx is done. A read of a
// pipe, FIFO or terminal blocks in the kernel until the producer writes or
// closes, and nothing the process does to the file ends it (closing the
// descriptor does not wake a read; setting O_NONBLOCK would change the file
// for every process that shares it, a shell's terminal included). poll(2)
// waits without reading, changes nothing, and returns to look at ctx.
func waitReadable(ctx context.Context, f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil // the read reports it
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var n int
		var perr error
		if err := rc.Control(func(fd uintptr) {
			n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, pollMillis)
		}); err != nil {
			return nil
		}
		switch {
		case perr == unix.EINTR:
		case perr != nil || n > 0:
			return nil // readable, at its end, or failed: the read says which
		}
	}
}
