//go:build linux

package main_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A second SIGTERM ends gpipe at once, even in a stage that cannot see the
// first: here a write of the result to a pipe whose reader has stopped
// reading. The first signal cancels the job; the second gets the default
// action. (The test waits for the exit with a generous bound, after which
// it lets the process go; it measures no speed.)
func TestSecondSignalEnds(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs.Add(1)
	cmd := exec.Command(gpipeBin, "gen", "kronecker", "--scale", "14", "--output", "-")
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()

	// Wait until the pipe is full: then gpipe is inside a write that cannot
	// finish (it writes 256 KiB at a time, the pipe holds less).
	size, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	bound := time.After(30 * time.Second)
	for full := false; !full; {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD: the bytes waiting in the pipe
		if err != nil {
			t.Fatal(err)
		}
		full = n >= size
		select {
		case <-exited:
			t.Fatalf("gpipe ended before it filled the pipe: %v", cmd.ProcessState)
		case <-bound:
			cmd.Process.Kill()
			t.Fatalf("gpipe did not fill the pipe (%d of %d bytes)", n, size)
		case <-time.After(5 * time.Millisecond):
		}
	}

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			done = true
		case <-bound:
			r.Close() // let it go: its write fails
			<-exited
			done = true
		case <-tick.C:
		}
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("gpipe %v; want it ended by the second SIGTERM", cmd.ProcessState)
	}
}
