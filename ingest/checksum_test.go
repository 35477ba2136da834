package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/sink"
)

// marker is a key whose bytes the test finds in the file to change one.
const marker = int64(0x1122334455667788)

// checksummedArrow writes an Arrow IPC file of edges, one of whose keys is
// marker, with its checksum file beside it, and returns its path.
func checksummedArrow(t *testing.T, dir string) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, marker, 4}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{2, 3, 1, 1}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(dir, "edges.arrow")
	if err := sink.WriteRecord(context.Background(), path, rec, sink.Options{Checksum: true}); err != nil {
		t.Fatal(err)
	}
	return path
}

// changeKey changes a byte of the marker key in the file at path.
func changeKey(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, binary.LittleEndian.AppendUint64(nil, uint64(marker)))
	if at < 0 {
		t.Fatal("the marker key is not in the file")
	}
	data[at] ^= 0x01
	if err := os.WriteFile(path, data, 0o666); err != nil {
		t.Fatal(err)
	}
}

// TestChecksumFileVerified: an input with a checksum file beside it is
// read when it matches, and refused, naming both files, when a byte of it
// changed (which, in an Arrow file, otherwise reads as another key).
func TestChecksumFileVerified(t *testing.T) {
	dir := t.TempDir()
	path := checksummedArrow(t, dir)
	tbl := readFile(t, path, edges.Options{})
	tbl.Release()

	changeKey(t, path)
	_, err := Open(context.Background(), path, nil, edges.Options{})
	var ue *usererr.Error
	if !errors.As(err, &ue) || ue.Kind != usererr.Input || ue.File != path ||
		!strings.Contains(ue.Problem, "does not match its checksum in "+path+".sha256") || !strings.Contains(ue.Fix, "copy the file again") {
		t.Fatalf("a changed file with a checksum: %v, want an input error naming both files", err)
	}

	// Without the checksum file the change goes unseen: a key like another.
	if err := os.Remove(path + ".sha256"); err != nil {
		t.Fatal(err)
	}
	tbl = readFile(t, path, edges.Options{})
	if tbl.Chunks[0].Src.Int64[2] == marker {
		t.Fatal("the key was not changed")
	}
	tbl.Release()
}

// TestChecksumFileForms: the forms of sha256sum's output read (binary mode,
// the BSD form, several lines, through a symbolic link), and a checksum file
// that is not one refused, naming it.
func TestChecksumFileForms(t *testing.T) {
	dir := t.TempDir()
	path := checksummedArrow(t, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	other := strings.Repeat("ab", 32)
	good := map[string]string{
		"binary mode":       hexSum + " *edges.arrow\n",
		"BSD form":          "SHA256 (edges.arrow) = " + hexSum + "\n",
		"several lines":     other + "  a.arrow\n" + hexSum + "  ./edges.arrow\n" + other + "  b.arrow\n",
		"one line, renamed": hexSum + "  old-name.arrow\r\n",
	}
	for name, text := range good {
		if err := os.WriteFile(path+".sha256", []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
		tbl, err := Open(context.Background(), path, nil, edges.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tbl.Release()
	}
	bad := map[string]string{
		"not hex":          strings.Repeat("zz", 32) + "  edges.arrow\n",
		"short":            hexSum[:40] + "  edges.arrow\n",
		"empty":            "",
		"no line names it": other + "  a.arrow\n" + other + "  b.arrow\n",
	}
	for name, text := range bad {
		if err := os.WriteFile(path+".sha256", []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), path, nil, edges.Options{})
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != usererr.Input || ue.File != path+".sha256" || !strings.Contains(ue.Fix, "sha256sum edges.arrow") {
			t.Fatalf("%s: %v, want an input error about the checksum file", name, err)
		}
	}
	// A wrong sum of the right form: the file does not match.
	if err := os.WriteFile(path+".sha256", []byte(other+"  edges.arrow\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), path, nil, edges.Options{}); err == nil || !strings.Contains(err.Error(), "does not match its checksum") {
		t.Fatalf("a wrong sum: %v", err)
	}

	// Through a symbolic link: the checksum file beside the file it names.
	if err := os.WriteFile(path+".sha256", []byte(other+"  edges.arrow\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.arrow")
	if err := os.Symlink(path, link); err != nil {
		t.Skip(err)
	}
	if _, err := Open(context.Background(), link, nil, edges.Options{}); err == nil || !strings.Contains(err.Error(), "does not match its checksum") {
		t.Fatalf("through a link: %v", err)
	}
}
