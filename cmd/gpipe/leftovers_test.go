//go:build linux

package main_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledWriteLeavesNothing: gpipe killed with SIGKILL while it writes
// leaves its temporary file (nothing can remove it then); the next write of
// the same output removes it. For the sink's formats and gen's edge lists.
// (The waits are bounds after which the test gives up; it measures no speed.)
func TestKilledWriteLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"k.parquet", "k.el"} {
		dir := t.TempDir()
		runs.Add(1)
		cmd := exec.Command(gpipeBin, "gen", "kronecker", "--scale", "18", "--output", name)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it once its temporary file has bytes in it.
		bound := time.Now().Add(time.Minute)
		for {
			if tmp := tempFiles(t, dir); len(tmp) > 0 {
				if fi, err := os.Stat(filepath.Join(dir, tmp[0])); err == nil && fi.Size() > 0 {
					break
				}
			}
			if time.Now().After(bound) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%s: no temporary file with bytes in it appeared", name)
			}
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Skipf("%s: gpipe finished before it was killed", name)
		}
		if tmp := tempFiles(t, dir); len(tmp) != 1 {
			t.Fatalf("%s: after the kill the directory holds %v, want its temporary file", name, tmp)
		}

		ok(t, dir, nil, "gen", "kronecker", "--scale", "6", "--output", name)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != name {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("%s: after the next write the directory holds %v", name, names)
		}
	}
}

// tempFiles lists the hidden temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestStdoutReaderGone: when the program reading --output - stops early (as
// head does), gpipe ends by SIGPIPE, quietly, as cat and grep do (the shell
// reports 141); the help says so.
func TestStdoutReaderGone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	edgesPath := filepath.Join(dir, "k.parquet")
	// The result, 64Ki rows, is more than a pipe holds.
	ok(t, dir, nil, "gen", "kronecker", "--scale", "16", "--output", edgesPath)
	for _, args := range [][]string{
		{"gen", "kronecker", "--scale", "16", "--output", "-"},
		{"gen", "kronecker", "--scale", "16", "--output", "-", "--output-format", "text"},
		{"run", "--input", edgesPath, "--op", "cc", "--output", "-", "--output-format", "csv"},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		runs.Add(1)
		cmd := exec.Command(gpipeBin, args...)
		cmd.Stdout = w
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if _, err := io.ReadFull(r, make([]byte, 10)); err != nil { // head -c 10
			t.Fatal(err)
		}
		r.Close()
		cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE || stderr.Len() > 0 {
			t.Errorf("gpipe %s: %v, stderr %q; want an end by SIGPIPE and nothing on stderr", strings.Join(args, " "), cmd.ProcessState, stderr.String())
		}
	}
	help := ok(t, dir, nil, "run", "--help")
	if !strings.Contains(strings.Join(strings.Fields(help.stdout), " "), "141 (from the shell) the program reading --output - stopped early") {
		t.Errorf("gpipe run --help does not give exit code 141:\n%s", help.stdout)
	}
}

// TestChecksumFlag: --checksum writes OUTPUT.sha256 beside the output of run
// and gen; reading a file whose checksum file no longer matches it (a key
// changed: an Arrow file would read it as another key) is an input error
// naming both files; standard output cannot have one.
func TestChecksumFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, nil, "gen", "kronecker", "--scale", "8", "--output", "k.arrow", "--checksum")
	ok(t, dir, nil, "gen", "grid", "--rows", "3", "--cols", "3", "--output", "g.el", "--checksum")
	ok(t, dir, nil, "run", "--input", "k.arrow", "--op", "cc", "--output", "cc.parquet", "--checksum")
	for _, name := range []string{"k.arrow", "g.el", "cc.parquet"} {
		if _, err := os.Stat(filepath.Join(dir, name+".sha256")); err != nil {
			t.Fatalf("no checksum file for %s: %v", name, err)
		}
	}
	ok(t, dir, nil, "run", "--input", "k.arrow", "--op", "cc")
	ok(t, dir, nil, "run", "--input", "cc.parquet", "--src-col", "vertex", "--dst-col", "component", "--op", "cc")

	// Change a byte in the middle of the Arrow file: a key, or anything.
	path := filepath.Join(dir, "k.arrow")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x01
	if err := os.WriteFile(path, data, 0o666); err != nil {
		t.Fatal(err)
	}
	fails(t, dir, nil, 3, []string{"k.arrow: does not match its checksum in k.arrow.sha256"}, "run", "--input", "k.arrow", "--op", "cc")

	fails(t, dir, nil, 2, []string{"checksum"}, "gen", "kronecker", "--scale", "4", "--output", "-", "--checksum")
	fails(t, dir, nil, 2, []string{"checksum"}, "run", "--input", "g.el", "--op", "cc", "--output", "-", "--checksum")
}
