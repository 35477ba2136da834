package sink

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// An output file is written under a temporary name beside its final path,
// ".NAME.tmp-PID-RANDOM", and renamed to NAME when complete, so that no
// reader ever sees half a file. The writer holds an exclusive flock on the
// temporary file while it writes. A writer killed (kill -9, a machine that
// lost power) cannot remove its temporary file, so the next write of the
// same output removes those whose writer is gone: their PID is no live
// process here, and no one holds their lock (a writer elsewhere, in
// another PID namespace or on another machine sharing the directory,
// still does). Names of another form are never touched.
//
// With a checksum, the SHA-256 of the bytes written goes to NAME.sha256 in
// the format `sha256sum -c` reads ("HEX  NAME"), itself written under a
// temporary name and renamed. The old NAME.sha256 is removed before NAME is
// replaced, then the new one renamed in: a reader may see the new file
// without a checksum for a moment, never with the old file's checksum (and
// an interrupted commit leaves, at worst, a file without one). Replacing
// NAME without a checksum removes NAME.sha256 too: it describes the file
// that is gone, and readers that check it (gpipe's) would refuse the new one.

// ChecksumSuffix is the extension of the checksum file written beside an
// output with Options.Checksum, and read beside an input.
const ChecksumSuffix = ".sha256"

// tmpMarker separates an output's name from the writer's PID in its
// temporary file's name.
const tmpMarker = ".tmp-"

// output is one file being written.
type output struct {
	file  *os.File
	tmp   string    // temporary file to rename to final; "" writes in place
	final string    // where the output ends up (the path, symlinks resolved)
	sum   hash.Hash // SHA-256 of the bytes written; nil without a checksum
	// sumTmp is the checksum file, finished and not yet renamed into place.
	sumTmp string
}

// errNotFile is why an output that is not a regular file (a device, a pipe,
// standard output) cannot have a checksum.
var errNotFile = errors.New("a checksum file needs a file output")

// openOutput creates the temporary file for path, or opens a device or pipe
// to write in place; with checksum, the bytes written are hashed for
// NAME.sha256. The errors are the causes; the caller words them.
func openOutput(path string, checksum bool) (*output, error) {
	final := path
	if resolved, err := filepath.EvalSymlinks(final); err == nil {
		final = resolved
	}
	o := &output{final: final}
	if checksum {
		o.sum = sha256.New()
	}
	fi, err := os.Stat(final)
	switch {
	case err == nil && fi.IsDir():
		return nil, errIsDir
	case err == nil && !fi.Mode().IsRegular():
		// A device, pipe or socket (/dev/stdout, a FIFO): no rename.
		if checksum {
			return nil, errNotFile
		}
		f, err := os.OpenFile(final, os.O_WRONLY, 0)
		if err != nil {
			return nil, &createErr{err, "check that it can be written"}
		}
		o.file = f
		return o, nil
	}
	dir, base := filepath.Split(final)
	if dir == "" {
		dir = "."
	}
	removeStale(dir, base)
	if checksum {
		removeStale(dir, base+ChecksumSuffix)
	}
	f, tmp, err := createTemp(dir, base)
	if err != nil {
		return nil, &createErr{err, "check that the directory exists and is writable"}
	}
	if fi != nil {
		// Replacing a file: keep its permissions, as os.Create would.
		_ = f.Chmod(fi.Mode().Perm())
	}
	o.file, o.tmp = f, tmp
	return o, nil
}

// errIsDir is an output path that names a directory.
var errIsDir = errors.New("is a directory")

// createErr is a cause of a failed open, with the fix for it.
type createErr struct {
	err error
	fix string
}

func (e *createErr) Error() string { return e.err.Error() }
func (e *createErr) Unwrap() error { return e.err }

// createTemp creates and locks a new temporary file for base in dir.
func createTemp(dir, base string) (*os.File, string, error) {
	prefix := "." + base + tmpMarker + strconv.Itoa(os.Getpid()) + "-"
	for range 100 {
		tmp := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		lockWriting(f)
		return f, tmp, nil
	}
	return nil, "", errors.New("cannot make a temporary file name")
}

// Write writes p to the file and adds it to the checksum.
func (o *output) Write(p []byte) (int, error) {
	n, err := o.file.Write(p)
	if o.sum != nil {
		o.sum.Write(p[:n])
	}
	return n, err
}

// inPlace says whether the output is written in place (a device or pipe).
func (o *output) inPlace() bool { return o.tmp == "" }

// target is where a writer's bytes go: a file (output), or an object in
// an S3 store (s3Target).
type target interface {
	io.Writer
	// finish stores every byte written (synced, uploaded) without making
	// the output visible under its name.
	finish() error
	// publish makes it visible, with its checksum file beside it.
	publish() error
	// remove leaves nothing of an output not published; it can run twice.
	remove()
}

// finish syncs and closes the temporary file, and writes its checksum
// file under a temporary name.
func (o *output) finish() error {
	if o.inPlace() {
		err := o.file.Close()
		o.file = nil
		return err
	}
	if err := o.file.Sync(); err != nil {
		return err
	}
	err := o.file.Close()
	o.file = nil
	if err != nil {
		return err
	}
	if o.sum != nil {
		o.sumTmp, err = o.writeChecksum()
	}
	return err
}

// publish renames the finished file into place, and its checksum file
// beside it (the old one removed first).
func (o *output) publish() error {
	if o.inPlace() {
		return nil
	}
	sidecar := o.final + ChecksumSuffix
	if fi, err := os.Lstat(sidecar); err == nil && fi.Mode().IsRegular() {
		if err := os.Remove(sidecar); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove the old checksum file %s: %w", filepath.Base(sidecar), err)
		}
	}
	if err := os.Rename(o.tmp, o.final); err != nil {
		return err
	}
	o.tmp = ""
	if o.sumTmp != "" {
		if err := os.Rename(o.sumTmp, sidecar); err != nil {
			return fmt.Errorf("the output is written but not its checksum file %s: %w", filepath.Base(sidecar), err)
		}
		o.sumTmp = ""
	}
	return nil
}

// writeChecksum writes the checksum file under a temporary name and returns
// that name.
func (o *output) writeChecksum() (string, error) {
	dir, base := filepath.Split(o.final)
	if dir == "" {
		dir = "."
	}
	f, tmp, err := createTemp(dir, base+ChecksumSuffix)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(ChecksumLine(o.sum.Sum(nil), base))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		removeQuietly(tmp)
		return "", err
	}
	return tmp, nil
}

// ChecksumLine is the line `sha256sum` writes for a file named name with
// SHA-256 sum: the digest in hex, two spaces and the name, where a name
// holding a backslash or a line end is escaped and the line starts with a
// backslash.
func ChecksumLine(sum []byte, name string) string {
	prefix := ""
	if strings.ContainsAny(name, "\\\n\r") {
		prefix = "\\"
		name = strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r").Replace(name)
	}
	return prefix + hex.EncodeToString(sum) + "  " + name + "\n"
}

// remove closes the file and removes the temporary ones; it can run
// twice.
func (o *output) remove() {
	if o.file != nil {
		_ = o.file.Close()
		o.file = nil
	}
	removeQuietly(o.tmp)
	removeQuietly(o.sumTmp)
	o.tmp, o.sumTmp = "", ""
}

func removeQuietly(path string) {
	if path != "" {
		_ = os.Remove(path)
	}
}

// removeStale removes the temporary files of base in dir whose writers are
// gone (see the top of this file); what it cannot check it leaves.
func removeStale(dir, base string) {
	prefix := "." + base + tmpMarker
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			continue
		}
		pidText, _, ok := strings.Cut(name[len(prefix):], "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		removeUnlocked(filepath.Join(dir, name))
	}
}

// File is a file output of bytes the caller formats (gpipe gen's edge
// lists), written as this package's writers write theirs: under a temporary
// name beside path, renamed to path by Close, the temporary files of killed
// writers of path removed, and with checksum NAME.sha256 beside it.
type File struct {
	w    writer // for its errors
	done bool   // closed or aborted
	err  error  // the first error
}

// CreateFile starts a file output at path (a device or pipe is written in
// place, and cannot have a checksum).
func CreateFile(path string, checksum bool) (*File, error) {
	f := &File{w: writer{path: path, display: path}}
	out, err := openOutput(path, checksum)
	if err != nil {
		return nil, f.w.openError(err)
	}
	f.w.out = out
	return f, nil
}

// Write implements io.Writer; after an error the output is removed and
// every call returns that error.
func (f *File) Write(p []byte) (int, error) {
	switch {
	case f.err != nil:
		return 0, f.err
	case f.done:
		return 0, errClosed
	}
	n, err := f.w.out.Write(p)
	if err != nil {
		f.err = f.w.ioError(err)
		f.w.out.remove()
	}
	return n, f.err
}

// Close finishes the output (synced, renamed into place, its checksum file
// beside it); on error the output is removed. Called again, it returns the
// first call's result.
func (f *File) Close() error {
	if f.done || f.err != nil {
		return f.err
	}
	f.done = true
	err := f.w.out.finish()
	if err == nil {
		err = f.w.out.publish()
	}
	if err != nil {
		f.err = f.w.ioError(err)
		f.w.out.remove()
	}
	return f.err
}

// Abort removes the temporary file; it does nothing after Close.
func (f *File) Abort() {
	if !f.done {
		f.done = true
		f.w.out.remove()
	}
}

// errClosed is the error of a Write after Close or Abort.
var errClosed = errors.New("sink: write after the output was closed")
