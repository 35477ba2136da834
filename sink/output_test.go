//go:build unix

package sink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/internal/usererr"
)

// deadPID is the PID of a process that has ended (and been waited for).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	return cmd.Process.Pid
}

// TestStaleTempFilesRemoved: a write removes the temporary files of its
// output left by writers that were killed (their PID is gone and no one
// holds their lock), and of those only: a live process's, a locked one (a
// writer in another PID namespace, say), one of a concurrent writer in this
// process, files of another output and names of another form stay.
func TestStaleTempFilesRemoved(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	dead := strconv.Itoa(deadPID(t))
	touch := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o666); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := []string{
		touch(".out.parquet.tmp-" + dead + "-abc123"),
		touch(".out.parquet.tmp-" + dead + "-zz"),
		touch(".out.parquet.sha256.tmp-" + dead + "-q1"), // a checksum file's (with Checksum)
	}
	kept := []string{
		touch(".out.parquet.tmp-1-abc"),                  // PID 1 is alive
		touch(".out.parquet.tmp-" + dead),                // not the form gpipe writes
		touch(".out.parquet.tmp-xyz"),                    // an older gpipe's form: no PID
		touch(".other.parquet.tmp-" + dead + "-abc"),     // another output's
		touch(".out.parquet.tmp-" + dead + "5x-abc"),     // not a PID
		touch(".out.parquet.tmp-" + dead + ".tmp-9-abc"), // output "out.parquet.tmp-PID"'s
	}
	// A dead PID whose file is locked: a live writer elsewhere.
	locked := touch(".out.parquet.tmp-" + dead + "-locked")
	lf, err := os.Open(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skip("no flock here:", err)
	}
	kept = append(kept, locked)
	// A writer of the same output at work.
	other, err := Create(path, rec.Schema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Abort()
	if err := other.Write(rec); err != nil {
		t.Fatal(err)
	}

	if err := WriteRecord(context.Background(), path, rec, Options{Checksum: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", filepath.Base(p), err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if err := other.Close(); err != nil {
		t.Fatalf("the concurrent writer lost its temporary file: %v", err)
	}
}

// TestTempFileNamesPID: the temporary file is named for the writer's PID
// and locked while it writes.
func TestTempFileNamesPID(t *testing.T) {
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "out.arrow"), rec.Schema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	names := dirEntries(t, dir)
	prefix := ".out.arrow.tmp-" + strconv.Itoa(os.Getpid()) + "-"
	if len(names) != 1 || !strings.HasPrefix(names[0], prefix) {
		t.Fatalf("directory holds %v, want one file named %s...", names, prefix)
	}
	f, err := os.Open(filepath.Join(dir, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("the temporary file is not locked by its writer: flock says %v", err)
	}
}

// TestChecksumFile: with Checksum, NAME.sha256 holds the SHA-256 of the file
// as sha256sum writes it (and sha256sum -c accepts it), for every format
// and for File; replacing the file without a checksum removes it; an
// output that is not a file cannot have one.
func TestChecksumFile(t *testing.T) {
	if ChecksumSuffix != ingest.ChecksumSuffix {
		t.Fatalf("sink writes %s, ingest reads %s", ChecksumSuffix, ingest.ChecksumSuffix)
	}
	rec := testRecord(memory.DefaultAllocator)
	defer rec.Release()
	dir := t.TempDir()
	check := func(name string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		want := hex.EncodeToString(sum[:]) + "  " + name + "\n"
		if got, err := os.ReadFile(filepath.Join(dir, name+".sha256")); err != nil || string(got) != want {
			t.Fatalf("%s.sha256 holds %q (%v), want %q", name, got, err, want)
		}
		if _, err := exec.LookPath("sha256sum"); err == nil {
			cmd := exec.Command("sha256sum", "-c", "--strict", name+".sha256")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("sha256sum -c: %v: %s", err, out)
			}
		}
	}
	for _, name := range []string{"out.parquet", "out.arrow", "out.arrows", "out.csv"} {
		if err := WriteRecord(context.Background(), filepath.Join(dir, name), rec, Options{Checksum: true}); err != nil {
			t.Fatal(err)
		}
		check(name)
	}
	f, err := CreateFile(filepath.Join(dir, "edges.el"), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("1 2\n2 3\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	check("edges.el")

	// Replaced without a checksum: the old checksum goes.
	if err := WriteRecord(context.Background(), filepath.Join(dir, "out.arrow"), rec, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.arrow.sha256")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the replaced file's checksum file is still there (%v)", err)
	}
	for _, n := range dirEntries(t, dir) {
		if strings.Contains(n, ".tmp-") {
			t.Errorf("left %s", n)
		}
	}

	// Not a file.
	for _, path := range []string{"-", "/dev/null"} {
		err := Check(path, Options{Checksum: true, Format: FormatCSV})
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != usererr.Usage || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("Check(%s) with a checksum: %v, want a usage error", path, err)
		}
		if _, err := Create(path, rec.Schema(), Options{Checksum: true, Format: FormatCSV}); err == nil {
			t.Errorf("Create(%s) with a checksum succeeded", path)
		}
	}
	if _, err := CreateFile("/dev/null", true); err == nil {
		t.Error("CreateFile(/dev/null) with a checksum succeeded")
	}
}
