package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// ChecksumSuffix names the checksum file beside an input: NAME.sha256, as
// `gpipe run --checksum` and `gpipe gen --checksum` write it (sink's
// ChecksumSuffix) and `sha256sum NAME > NAME.sha256` does.
const ChecksumSuffix = ".sha256"

// The Arrow IPC format has no checksums and Parquet's cover only the pages
// (not the footer), so a changed key or weight in an Arrow file, or a
// changed byte of a footer, can read as other data. A checksum file beside
// an input is verified while the input is read: the SHA-256 of the whole
// file, on a goroutine of its own, so that the read and the hash overlap.
// An input read whole (a Parquet file's unread columns too) is hashed
// whole; what a file costs to hash is its size over SHA-256's speed (about
// 2 GB/s a core with the SHA extensions).

// maxChecksumFile bounds what is read of a checksum file: a line is 64 hex
// digits, two characters and a name.
const maxChecksumFile = 64 << 10

// checksum is the verification of one input against its checksum file.
type checksum struct {
	path, sidecar string
	want          []byte
	cancel        context.CancelFunc
	done          chan struct{}
	got           []byte
	err           error
}

// startChecksum starts hashing path if a checksum file is beside it (path
// with ChecksumSuffix, or beside the file a symbolic link names), else it
// returns nil. Only regular files are checked.
func startChecksum(ctx context.Context, path string) (*checksum, error) {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return nil, nil
	}
	sidecar := path + ChecksumSuffix
	if _, err := os.Stat(sidecar); errors.Is(err, fs.ErrNotExist) {
		resolved, rerr := filepath.EvalSymlinks(path)
		if rerr != nil || resolved == path {
			return nil, nil
		}
		if sidecar = resolved + ChecksumSuffix; !exists(sidecar) {
			return nil, nil
		}
	}
	want, err := readChecksumFile(sidecar, filepath.Base(path))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &checksum{path: path, sidecar: sidecar, want: want, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.got, c.err = hashFile(ctx, path)
	}()
	return c, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// finish waits for the hash of an input that read as t (or failed with err)
// and returns the read's result, unless the input does not match its
// checksum: that is the error then, whatever else the read found wrong
// (damage that the reader refused too is best told as such).
func (c *checksum) finish(t *edges.Table, err error) (*edges.Table, error) {
	release := func() {
		if t != nil {
			t.Release()
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		c.cancel()
		<-c.done
		return nil, err
	}
	<-c.done
	c.cancel()
	switch {
	case errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded):
		release()
		return nil, c.err
	case c.err != nil && err != nil:
		return nil, err
	case c.err != nil:
		release()
		return nil, usererr.InFile(c.path, "cannot read it to check its checksum: "+c.err.Error(), "check the file").Because(c.err)
	case !bytes.Equal(c.got, c.want):
		release()
		got, want := hex.EncodeToString(c.got), hex.EncodeToString(c.want)
		return nil, usererr.InFile(c.path,
			fmt.Sprintf("does not match its checksum in %s (SHA-256 %s..., the checksum file says %s...): the file was changed or damaged after the checksum was written",
				c.sidecar, got[:16], want[:16]),
			fmt.Sprintf("copy the file again, or re-export it with its checksum; if it was changed on purpose, remove %s", filepath.Base(c.sidecar)))
	}
	return t, err
}

// hashFile is the SHA-256 of the file at path, read 1 MiB at a time with a
// look at ctx before every read.
func hashFile(ctx context.Context, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return h.Sum(nil), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readChecksumFile reads the SHA-256 for the file named name from a checksum
// file: its one line, or the line that names name, in the format sha256sum
// writes ("HEX  NAME", "HEX *NAME", a leading backslash for escaped names)
// or in its BSD form ("SHA256 (NAME) = HEX").
func readChecksumFile(sidecar, name string) ([]byte, error) {
	bad := func(problem string) error {
		return usererr.InFile(sidecar, problem,
			fmt.Sprintf("write it with: sha256sum %s > %s (or remove it to read the file unchecked)", name, filepath.Base(sidecar)))
	}
	f, err := os.Open(sidecar)
	if err != nil {
		return nil, bad("cannot read the checksum file: " + err.Error())
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxChecksumFile+1))
	if err != nil {
		return nil, bad("cannot read the checksum file: " + err.Error())
	}
	if len(data) > maxChecksumFile {
		return nil, bad(fmt.Sprintf("is not a checksum file: it holds more than %d bytes", maxChecksumFile))
	}
	var sums [][]byte
	var names []string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\r\n"), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		sum, file, ok := parseChecksumLine(line)
		if !ok {
			return nil, bad(fmt.Sprintf("is not a SHA-256 checksum file: line %s is not a sha256sum line (64 hex digits, two spaces, a name)", echo.Quote(line)))
		}
		sums, names = append(sums, sum), append(names, file)
	}
	switch {
	case len(sums) == 1:
		return sums[0], nil
	case len(sums) == 0:
		return nil, bad("the checksum file is empty")
	}
	for i, n := range names {
		if filepath.Base(n) == name {
			return sums[i], nil
		}
	}
	return nil, bad(fmt.Sprintf("the checksum file has %d lines and none for %s", len(sums), echo.Quote(name)))
}

// parseChecksumLine reads one line of sha256sum's output, or of its BSD
// form.
func parseChecksumLine(line string) (sum []byte, name string, ok bool) {
	if rest, found := strings.CutPrefix(line, "SHA256 ("); found {
		i := strings.LastIndex(rest, ") = ")
		if i < 0 {
			return nil, "", false
		}
		name, digits := rest[:i], rest[i+len(") = "):]
		sum, err := hex.DecodeString(digits)
		return sum, name, err == nil && len(sum) == sha256.Size
	}
	escaped := strings.HasPrefix(line, "\\")
	if escaped {
		line = line[1:]
	}
	if len(line) < 2*sha256.Size+2 || line[2*sha256.Size] != ' ' || (line[2*sha256.Size+1] != ' ' && line[2*sha256.Size+1] != '*') {
		return nil, "", false
	}
	sum, err := hex.DecodeString(line[:2*sha256.Size])
	if err != nil {
		return nil, "", false
	}
	name = line[2*sha256.Size+2:]
	if escaped {
		name = strings.NewReplacer("\\\\", "\\", "\\n", "\n", "\\r", "\r").Replace(name)
	}
	return sum, name, true
}
