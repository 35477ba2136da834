//go:build linux

package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
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

// A SIGTERM or SIGINT ends a run whose producer has stalled: it wrote the
// start of its input and holds the pipe (or FIFO) open without writing
// more, so that gpipe's read waits in the kernel. The run ends with exit
// 130, in every format read from a pipe: as it arrives (CSV, an Arrow IPC
// stream) or whole first (edge lists, Parquet, Arrow IPC files). It used to
// wait for the producer. (The test waits for the exit with a generous bound,
// after which it kills the process; it measures no speed.)
func TestSignalEndsStalledRead(t *testing.T) {
	t.Parallel()
	tb := table{keyType: arrow.PrimitiveTypes.Int64, edges: []edge{{src: int64(1), dst: int64(2)}}}
	stream := arrowStream(t, tb, 1)
	stream = stream[:len(stream)-8] // the end-of-stream marker, which a stalled producer has not written
	for _, tc := range []struct {
		format, start string
		fifo          bool
		sig           syscall.Signal
	}{
		{"csv", "src,dst\n1,2\n", false, syscall.SIGTERM},
		{"csv", "src,dst\n1,2\n", false, syscall.SIGINT},
		{"text", "1 2\n", false, syscall.SIGTERM},
		{"arrows", string(stream), false, syscall.SIGTERM},
		{"parquet", "PAR1", false, syscall.SIGTERM},
		{"arrow", "ARROW1\x00\x00", false, syscall.SIGTERM},
		{"csv", "src,dst\n1,2\n", true, syscall.SIGTERM},
	} {
		name := fmt.Sprintf("%s,fifo=%v,%v", tc.format, tc.fifo, tc.sig)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, exited := runStalled(t, tc.format, tc.start, tc.fifo, tc.sig)
			if !exited {
				t.Fatalf("gpipe went on reading a stalled input after %v", tc.sig)
			}
			if code != 130 {
				t.Errorf("exit %d after %v; want 130", code, tc.sig)
			}
		})
	}
}

// runStalled starts gpipe reading start from a pipe (or a FIFO it names as
// --input) that stays open, waits until gpipe has read all of it, sends
// sig, and waits up to 10 s for gpipe to exit: its exit code, and whether
// it exited (it is killed otherwise).
func runStalled(t *testing.T, format, start string, fifo bool, sig syscall.Signal) (int, bool) {
	args := []string{"run", "--input", "-", "--input-format", format, "--op", "cc"}
	var r, w *os.File // the read end gpipe gets, and the producer's end
	var err error
	if fifo {
		path := filepath.Join(t.TempDir(), "edges.csv")
		if err := unix.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		// O_RDWR opens a FIFO without waiting for a reader (Linux).
		if w, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
			t.Fatal(err)
		}
		args[2] = path
	} else if r, w, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString(start); err != nil {
		t.Fatal(err)
	}
	runs.Add(1)
	cmd := exec.Command(gpipeBin, args...)
	if r != nil {
		cmd.Stdin = r
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if r != nil {
		r.Close()
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	bound := time.After(10 * time.Second)
	// Until the pipe is empty, gpipe has not reached its read (nor, maybe,
	// set up its signal handling).
	for waiting := true; waiting; {
		n, err := unix.IoctlGetInt(int(w.Fd()), unix.TIOCINQ) // FIONREAD: the bytes waiting in the pipe
		if err != nil {
			t.Fatal(err)
		}
		waiting = n > 0
		select {
		case <-exited:
			t.Fatalf("gpipe ended before it read its input: %v", cmd.ProcessState)
		case <-bound:
			cmd.Process.Kill()
			t.Fatalf("gpipe did not read its input (%d bytes left)", n)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cmd.Process.Signal(sig)
	select {
	case <-exited:
		return cmd.ProcessState.ExitCode(), true
	case <-bound:
		cmd.Process.Kill()
		<-exited
		return cmd.ProcessState.ExitCode(), false
	}
}
