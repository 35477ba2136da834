//go:build linux

package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// `gpipe run --input /dev/zero --input-format csv` (or text): exit 3, a
// line that names the file and the line; it grew to 2 GB in 15 s, and did
// not stop on SIGTERM.
func TestRunDevZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, format := range []string{"csv", "text"} {
		fails(t, dir, nil, 3, []string{"gpipe: /dev/zero, line 1: ", "longer than 64 MiB"},
			"run", "--input", "/dev/zero", "--input-format", format, "--op", "cc")
	}
}

// SIGTERM while gpipe reads an endless edge list from standard input ends
// it (exit 130, "interrupted"): the first signal, which cancels the run,
// not the second, which kills. The list was read into memory to its end,
// which there is none of, and a signal only canceled what came after. (The
// test waits for the exit with a generous bound; it measures no speed.)
func TestRunSIGTERMWhileReading(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	runs.Add(1)
	cmd := exec.Command(gpipeBin, "run", "--input", "-", "--input-format", "text", "--op", "cc")
	cmd.Stdin = r
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	var written atomic.Int64
	go func() {
		lines := bytes.Repeat([]byte("1 2\n"), 16<<10)
		for written.Load() < 1<<30 {
			n, err := w.Write(lines)
			written.Add(int64(n))
			if err != nil {
				break
			}
		}
		w.Close()
	}()
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	bound := time.After(30 * time.Second)
	for written.Load() < 4<<20 {
		select {
		case <-exited:
			t.Fatalf("gpipe ended before it was signaled: %v, %s", cmd.ProcessState, stderr.String())
		case <-bound:
			cmd.Process.Kill()
			t.Fatal("gpipe did not read 4 MiB of its input")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-bound:
		cmd.Process.Kill()
		<-exited
		t.Fatalf("gpipe went on reading after SIGTERM: %d bytes written to it", written.Load())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "gpipe: interrupted") {
		t.Errorf("gpipe %v, stderr %q; want exit 130 and \"interrupted\"", cmd.ProcessState, stderr.String())
	}
}
