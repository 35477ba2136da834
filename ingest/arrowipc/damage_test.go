package arrowipc

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/mmap"
)

// Damaged Arrow IPC inputs: byte flips in the metadata (which must give a
// message in a user's words, never a recovered runtime error) and anywhere
// in a file (which the checks must catch wherever the bytes say more than
// the values of the edge columns).

// span is a range of bytes of an input.
type span struct{ lo, hi int }

// messageSpans lists the metadata (prefix and flatbuffer) of the messages
// of the stream in data[off:end], up to its end-of-stream marker or end.
func messageSpans(t *testing.T, data []byte, off, end int) []span {
	t.Helper()
	var spans []span
	for off+8 <= end {
		prefix, n := 4, int(binary.LittleEndian.Uint32(data[off:]))
		if uint32(n) == 0xFFFFFFFF {
			prefix, n = 8, int(binary.LittleEndian.Uint32(data[off+4:]))
		}
		if n == 0 {
			break
		}
		body, ok := flatbuf.Root(data[off+prefix:off+prefix+n]).Int64(messageBodyLength, 0)
		if !ok {
			t.Fatalf("no message at %d", off)
		}
		spans = append(spans, span{off, off + prefix + n})
		off += prefix + n + int(body)
	}
	return spans
}

// fileMetadata lists an IPC file's metadata: its leading schema message,
// every dictionary and record batch's message metadata, and its footer.
func fileMetadata(t *testing.T, data []byte) []span {
	t.Helper()
	footer := len(data) - 10 - int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	return append(messageSpans(t, data, 8, footer), span{footer, len(data) - 10})
}

// internalWords are what a message must not show of a panic or of arrow's
// insides.
var internalWords = []string{"runtime error", "index out of range", "slice bounds", "nil pointer", errArrowFailed.Error(), "arrow/"}

// checkDamaged checks what reading a damaged input gave: a table, or a
// one-line user error in a user's words.
func checkDamaged(t *testing.T, what string, tbl *edges.Table, err error) {
	t.Helper()
	if err == nil {
		edgetest.Edges(t, tbl)
		tbl.Release()
		return
	}
	edgetest.UserErr(t, err, "")
	for _, w := range internalWords {
		if strings.Contains(err.Error(), w) {
			t.Fatalf("%s: the message says %q: %v", what, w, err)
		}
	}
}

// damageInputs are Arrow IPC files and streams to damage: written here
// (many column types, a dictionary, compressed and not) and by pyarrow.
func damageInputs(t *testing.T) (files, streams map[string][]byte) {
	files, streams = map[string][]byte{}, map[string][]byte{}
	c := recordCase{key: arrow.PrimitiveTypes.Int64, weight: arrow.PrimitiveTypes.Float64, batches: []int{10, 13}, keyNulls: 0.2, extra: true}
	schema, recs := c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	dir := t.TempDir()
	for name, opts := range map[string][]ipc.Option{"go.arrow": nil, "go-zstd.arrow": {ipc.WithZstd()}} {
		p := filepath.Join(dir, name)
		edgetest.WriteArrowFile(t, p, schema, recs, opts...)
		files[name] = readBytes(t, p)
	}
	streams["go.arrows"] = edgetest.ArrowStream(t, schema, recs)
	for _, name := range []string{"pyarrow-file-int64.arrow", "pyarrow-file-lz4-string.arrow", "pyarrow-feather-large_string-float32.feather"} {
		files[name] = readBytes(t, filepath.Join("..", "testdata", "writers", name))
	}
	for _, name := range []string{"pyarrow-stream-dictionary.arrows", "pyarrow-stream-zstd-int32.arrows"} {
		streams[name] = readBytes(t, filepath.Join("..", "testdata", "writers", name))
	}
	return files, streams
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readMappedBytes reads data as a mapped IPC file would be read.
func readMappedBytes(data []byte, opts edges.Options) (*edges.Table, error) {
	m := mmap.InMemory(data)
	tbl, err := ReadMapped(context.Background(), "in.arrow", m, opts)
	if err != nil {
		m.Close()
	}
	return tbl, err
}

// metadataFlips is how many bytes of each input's metadata
// TestArrowMetadataFlips flips. (Flipping every byte of them 14 ways each,
// a few minutes' work, found nothing more.)
var metadataFlips = 300

// Bytes of the metadata of files and streams, flipped: the damage is caught
// by checking bounds before arrow's reader reads (a footer whose field
// points past its end made arrow's reader panic, and the message show
// "runtime error: slice bounds out of range [331:216]"), and no message
// shows a panic or arrow's insides.
func TestArrowMetadataFlips(t *testing.T) {
	files, streams := damageInputs(t)
	rng := rand.New(rand.NewPCG(5, 15))
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}
	flipAll := func(name string, data []byte, spans []span, read func([]byte) (*edges.Table, error)) {
		var at []int
		for _, s := range spans {
			for i := s.lo; i < s.hi; i++ {
				at = append(at, i)
			}
		}
		rng.Shuffle(len(at), func(i, j int) { at[i], at[j] = at[j], at[i] })
		for _, i := range at[:min(len(at), metadataFlips)] {
			bad := bytes.Clone(data)
			bad[i] ^= byte(1 + rng.IntN(255))
			tbl, err := read(bad)
			checkDamaged(t, name, tbl, err)
		}
	}
	for name, data := range files {
		flipAll(name, data, fileMetadata(t, data), func(b []byte) (*edges.Table, error) { return readMappedBytes(b, opts) })
	}
	for name, data := range streams {
		flipAll(name, data, messageSpans(t, data, 0, len(data)), func(b []byte) (*edges.Table, error) {
			return ReadStream(context.Background(), name, bytes.NewReader(b), opts)
		})
	}
}
