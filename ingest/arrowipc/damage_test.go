package arrowipc

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
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
	return ReadBytes(context.Background(), "in.arrow", data, nil, opts)
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

// edgeValueSpans lists where an IPC file holds its record batches' buffers
// of the columns named: bytes whose damage no check can see (a key or
// weight changed is another key or weight, an offset moved within the
// string data another string).
func edgeValueSpans(t *testing.T, data []byte, names ...string) []span {
	t.Helper()
	footer, problem := checkFile(data)
	if problem != "" {
		t.Fatal(problem)
	}
	bodies := data[:len(data)-10-int(binary.LittleEndian.Uint32(data[len(data)-10:]))]
	var spans []span
	for _, blk := range footer.batches {
		b, problem := checkMessage(bodies, blk, headerRecordBatch, footer.layout)
		if problem != "" {
			t.Fatal(problem)
		}
		body := int(blk.offset) + int(blk.meta)
		for ci, col := range footer.layout.columns {
			if !slices.Contains(names, col.name) {
				continue
			}
			end := b.buffers.N
			if ci+1 < len(b.starts) {
				end = b.starts[ci+1].buf
			}
			for k := b.starts[ci].buf; k < end; k++ {
				off, n := int(b.buffers.I64(k, 0)), int(b.buffers.I64(k, 8))
				spans = append(spans, span{body + off, body + off + n})
			}
		}
	}
	return spans
}

// flipCounts is what reading copies of a file with one byte changed gave.
type flipCounts struct {
	caught    int // an error
	unchanged int // the same edges: the byte is one the reader does not use
	changed   int // other edges: the byte is a key's or a weight's
}

// fileFlips is how many damaged copies of each file TestArrowFileFlips reads.
var fileFlips = 300

// Files with one random byte changed, anywhere: the reader finds the damage
// wherever the byte says more than a value of an edge column (where no
// check can see it: the format has no checksums). It used to read on where
// the byte was the schema at the start of the file, a buffer's offset or
// length, a field node's length, the footer's body length, a validity bit.
func TestArrowFileFlips(t *testing.T) {
	dir := t.TempDir()
	small := recordCase{key: arrow.PrimitiveTypes.Int64, weight: arrow.PrimitiveTypes.Float64, batches: []int{10}}
	mixed := recordCase{key: arrow.BinaryTypes.String, weight: arrow.PrimitiveTypes.Float64, batches: []int{50, 50}, keyNulls: 0.1, extra: true, seed: 3}
	inputs := map[string][]byte{
		"pyarrow-file-int64.arrow": readBytes(t, filepath.Join("..", "testdata", "writers", "pyarrow-file-int64.arrow")),
	}
	for name, c := range map[string]recordCase{"small.arrow": small, "mixed.arrow": mixed} {
		schema, recs := c.records(t, memory.DefaultAllocator)
		p := filepath.Join(dir, name)
		edgetest.WriteArrowFile(t, p, schema, recs)
		releaseAll(recs)
		inputs[name] = readBytes(t, p)
	}
	// The least of each file's copies that must be caught (of 300; the
	// reader before these checks caught 127, 58 and 5). Most bytes of the
	// pyarrow file are values: 160 of its copies change an edge, and 134
	// a byte of a column that is not read.
	least := map[string]int{"small.arrow": 170, "mixed.arrow": 75, "pyarrow-file-int64.arrow": 6}
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			orig, err := readMappedBytes(data, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := edgetest.Edges(t, orig)
			wantSkips := fmt.Sprint(orig.Skipped)
			orig.Release()
			values := edgeValueSpans(t, data, "src", "dst", "weight")
			rng := rand.New(rand.NewPCG(11, 12))
			var n flipCounts
			for range fileFlips {
				bad := bytes.Clone(data)
				at := rng.IntN(len(bad))
				bad[at] ^= byte(1 + rng.IntN(255))
				tbl, err := readMappedBytes(bad, opts)
				if err != nil {
					checkDamaged(t, name, nil, err)
					n.caught++
					continue
				}
				got, gotSkips := edgetest.Edges(t, tbl), fmt.Sprint(tbl.Skipped)
				tbl.Release()
				if reflect.DeepEqual(got, want) && gotSkips == wantSkips {
					n.unchanged++
					continue
				}
				n.changed++
				if !slices.ContainsFunc(values, func(s span) bool { return at >= s.lo && at < s.hi }) {
					t.Errorf("byte %d (of %d) changed read on unseen, and changed the edges", at, len(data))
				}
			}
			t.Logf("%d of %d damaged copies caught, %d read the same edges, %d other edges (a value of an edge column changed)", n.caught, fileFlips, n.unchanged, n.changed)
			if n.caught < least[name] {
				t.Errorf("%d damaged copies caught, want at least %d", n.caught, least[name])
			}
		})
	}
}

// The schema message a file starts with must be the footer's: a name
// changed in it was read on unseen (arrow's reader reads the footer's).
func TestArrowFileSchemaAtStart(t *testing.T) {
	c := recordCase{key: arrow.PrimitiveTypes.Int64, batches: []int{10}}
	schema, recs := c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	p := filepath.Join(t.TempDir(), "f.arrow")
	edgetest.WriteArrowFile(t, p, schema, recs)
	data := readBytes(t, p)
	first := fileMetadata(t, data)[0]
	at := bytes.Index(data[first.lo:first.hi], []byte("after"))
	if at < 0 {
		t.Fatal("no column name in the schema message")
	}
	data[first.lo+at] = 'A'
	_, err := readMappedBytes(data, edges.Options{})
	edgetest.UserErr(t, err, "in.arrow", "the file is damaged: the schema at its start differs from the one in its footer")
}

// Record batches whose buffers say other than their headers, as Flight's
// DoPut (or any record reader) may hand them over: a validity bitmap that
// marks other rows null than the null count says was read as it marked
// them; a string view that points past its data buffer made Append panic.
func TestAppenderDamagedArrays(t *testing.T) {
	mem := memory.DefaultAllocator
	keys := func(dt arrow.DataType, n int) arrow.Array {
		return randomColumn(mem, rand.New(rand.NewPCG(1, 2)), dt, n, 0, false)
	}
	for _, tc := range []struct {
		name string
		src  func() arrow.Array
		says string
	}{
		{"bitmap", func() arrow.Array {
			good := keys(arrow.PrimitiveTypes.Int64, 16)
			defer good.Release()
			valid := memory.NewBufferBytes([]byte{0xFF, 0xFE}) // row 8 null
			return array.MakeFromData(array.NewData(good.DataType(), 16, []*memory.Buffer{valid, good.Data().Buffers()[1]}, nil, 2, 0))
		}, "the validity bitmap marks 1 values null where the null count says 2"},
		{"no bitmap", func() arrow.Array {
			good := keys(arrow.PrimitiveTypes.Int64, 16)
			defer good.Release()
			return array.MakeFromData(array.NewData(good.DataType(), 16, []*memory.Buffer{nil, good.Data().Buffers()[1]}, nil, 3, 0))
		}, "the null count is 3, but there is no validity bitmap"},
		{"view", func() arrow.Array {
			good := keys(arrow.BinaryTypes.StringView, 40)
			defer good.Release()
			bufs := good.Data().Buffers()
			views := bytes.Clone(bufs[1].Bytes())
			for i := 0; i < len(views); i += arrow.ViewHeaderSizeBytes {
				if binary.LittleEndian.Uint32(views[i:]) > 12 { // not inline: its offset, past the data
					binary.LittleEndian.PutUint32(views[i+12:], 1<<20)
					break
				}
			}
			return array.MakeFromData(array.NewData(good.DataType(), 40, []*memory.Buffer{bufs[0], memory.NewBufferBytes(views), bufs[2]}, nil, 0, 0))
		}, "points to bytes 1048576 to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src()
			defer src.Release()
			dst := keys(src.DataType(), src.Len())
			defer dst.Release()
			schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: src.DataType(), Nullable: true}, {Name: "dst", Type: dst.DataType(), Nullable: true}}, nil)
			rec := array.NewRecordBatch(schema, []arrow.Array{src, dst}, int64(src.Len()))
			defer rec.Release()
			a, err := NewAppender("flight:g", schema, edges.Options{SkipInvalid: true})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Release()
			edgetest.UserErr(t, a.Append(rec), "flight:g", `column "src"`, "the Arrow data is corrupt", tc.says)
		})
	}
}
