//go:build linux

package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// runWithStdout runs gpipe in dir with f as its standard output and returns
// its exit code and stderr.
func runWithStdout(t *testing.T, dir string, f *os.File, args ...string) (int, string) {
	t.Helper()
	runs.Add(1)
	cmd := exec.Command(gpipeBin, args...)
	cmd.Dir = dir
	cmd.Stdout = f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	} else if err != nil {
		t.Fatalf("gpipe %s: %v", strings.Join(args, " "), err)
	}
	return 0, stderr.String()
}

// Binary output to a character device that is not a terminal is what a
// redirect asks for: /dev/null takes it, /dev/full fails as a full disk
// does. Only a terminal is refused.
func TestStdoutDevices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.txt"), []byte("1 2\n2 3\n"))
	args := []string{"run", "--input", "e.txt", "--op", "cc", "--output", "-"}
	for _, c := range []struct {
		dev   string
		code  int
		wants []string
	}{
		{"/dev/null", 0, nil},
		{"/dev/full", 1, []string{"standard output", "no space left on device", "free some space"}},
	} {
		f, err := os.OpenFile(c.dev, os.O_WRONLY, 0)
		if err != nil {
			t.Logf("skipping %s: %v", c.dev, err)
			continue
		}
		code, stderr := runWithStdout(t, dir, f, args...)
		f.Close()
		if code != c.code {
			t.Errorf("--output - > %s: exit %d, want %d; stderr: %s", c.dev, code, c.code, stderr)
		}
		for _, w := range c.wants {
			if !strings.Contains(stderr, w) {
				t.Errorf("--output - > %s: stderr %q lacks %q", c.dev, stderr, w)
			}
		}
	}

	tty := openPTY(t)
	code, stderr := runWithStdout(t, dir, tty, args...)
	if code != 2 || !strings.Contains(stderr, "standard output is a terminal") {
		t.Errorf("--output - to a terminal: exit %d, stderr %q; want exit 2, refused", code, stderr)
	}
	// CSV is text, which a terminal shows.
	if code, stderr := runWithStdout(t, dir, tty, append(args, "--output-format", "csv")...); code != 0 {
		t.Errorf("--output - --output-format csv to a terminal: exit %d, stderr %q", code, stderr)
	}
}

// openPTY opens a pseudo-terminal and returns its terminal side (the one a
// shell's programs get), closed when the test ends. It skips the test where
// the system has none to give.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	// Read what the program writes, so that it never blocks on a full
	// terminal buffer.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := ptmx.Read(buf); err != nil {
				return
			}
		}
	}()
	var n int
	err = withFd(ptmx, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
			return err
		}
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN) // ptsname
		return err
	})
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// withFd calls fn with f's descriptor, without putting f in blocking mode as
// f.Fd would (the reader goroutine above relies on the poller).
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
