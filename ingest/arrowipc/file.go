// Package arrowipc reads edge tables from Arrow data: Arrow IPC files and
// streams, any array.RecordReader, and record batches as they arrive
// (Appender, which the Flight service's DoPut uses).
//
// An IPC file is memory-mapped and not copied: its footer and each record
// batch's metadata are read here (metadata.go), and for an uncompressed,
// little-endian batch the edge columns' buffers are sliced out of the
// mapping, so that an int64 key column becomes a chunk's []int64 over the
// mapped bytes. arrow's ipc.FileReader parses the schema, and reads (copies,
// decompresses, decodes dictionaries of) the batches the mapping cannot
// serve: compressed bodies, dictionary-encoded or string-view key columns,
// big-endian files. The mapping lives until edges.Table.Release.
package arrowipc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/mmap"
	"github.com/gpipe/gpipe/internal/usererr"
)

const fixIncomplete = "the file is not a complete Arrow IPC file; re-export it (or copy it again)"

var magic = []byte("ARROW1")

// sniffFile says what an input that is not an Arrow IPC file looks like
// instead, and what to do, or "" when it starts like one.
func sniffFile(head []byte) (what, fix string) {
	switch {
	case bytes.HasPrefix(head, magic):
		return "", ""
	case len(head) >= 4 && binary.LittleEndian.Uint32(head) == 0xFFFFFFFF:
		return "an Arrow IPC stream, not an Arrow IPC file", "name it .arrows or pass --input-format arrows"
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "a Parquet file, not an Arrow IPC file", "name it .parquet or pass --input-format parquet"
	}
	return "not an Arrow IPC file (it does not start with the magic bytes ARROW1)", "check the path, or name the input's format with --input-format"
}

// ReadFile reads the Arrow IPC file at path, mapped into memory.
func ReadFile(ctx context.Context, path string, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, usererr.InFile(path, "cannot open: "+strings.TrimPrefix(err.Error(), "open "+path+": "), "check the path").Because(err)
	}
	m, err := mmap.Map(path, f)
	f.Close()
	if err != nil {
		return nil, err
	}
	t, err := ReadBytes(ctx, path, m.Data, m.Close, opts)
	if err != nil {
		m.Close()
		return nil, err
	}
	return t, nil
}

// ReadBytes reads an Arrow IPC file held in memory: a mapping of the file,
// or its bytes read already. Uncompressed little-endian batches are used in
// place, so data must stay unchanged while the table lives. On success the
// table owns data: release (nil: nothing to do) is called once the table
// and its chunks are released; on error the caller keeps it. path names
// the input in messages.
func ReadBytes(ctx context.Context, path string, data []byte, release func(), opts edges.Options) (*edges.Table, error) {
	if len(data) == 0 {
		return nil, usererr.InFile(path, "the file is empty, not an Arrow IPC file", "check the path, or re-export the file")
	}
	if what, fix := sniffFile(data[:min(len(data), 8)]); what != "" {
		if len(data) < len(magic) && bytes.HasPrefix(magic, data) {
			return nil, usererr.InFile(path, fmt.Sprintf("the file is truncated: %d bytes, too short for an Arrow IPC file", len(data)), fixIncomplete)
		}
		if err := sniff.ErrLooksLike(path, "an Arrow IPC file", data[:min(len(data), 1024)]); err != nil {
			return nil, err
		}
		return nil, usererr.InFile(path, "the file is "+what, fix)
	}
	if len(data) < 2*8+4 || !bytes.HasSuffix(data, magic) {
		return nil, usererr.InFile(path, "the file is truncated: it does not end with an Arrow IPC footer", fixIncomplete)
	}
	footer, problem := checkFile(data)
	if problem != "" {
		return nil, usererr.InFile(path, "the file is damaged: "+problem, fixIncomplete)
	}
	fr, err := openFileReader(data)
	if err != nil {
		return nil, usererr.InFile(path, "the Arrow IPC footer is corrupt ("+cause(err)+")", fixIncomplete)
	}
	defer fr.Close()
	if len(footer.batches) != fr.NumRecords() {
		return nil, usererr.InFile(path, "the Arrow IPC footer is corrupt", fixIncomplete)
	}
	bodies := data[:len(data)-10-int(binary.LittleEndian.Uint32(data[len(data)-10:]))]
	if problem := sameSchema(bodies, fr.Schema()); problem != "" {
		return nil, usererr.InFile(path, "the file is damaged: "+problem, fixIncomplete)
	}
	a, err := newAppender(ctx, path, fr.Schema(), opts)
	if err != nil {
		return nil, err
	}
	// arrow's reader works in Go memory (see openFileReader); what it reads
	// is copied into Options.Alloc's.
	a.copyRecords = opts.Alloc != nil
	// Registered first, so that it runs after every release of the chunks;
	// called at most once, here or there.
	if release == nil {
		release = func() {}
	}
	release = sync.OnceFunc(release)
	a.t.OnRelease(release)
	done := false
	defer func() {
		if !done {
			a.Release()
		}
	}()
	native := !footer.bigEndian && !endian.IsBigEndian
	for i, blk := range footer.batches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, problem := checkMessage(bodies, blk, headerRecordBatch, footer.layout)
		if problem != "" {
			return nil, usererr.InFile(path, fmt.Sprintf("record batch %d is damaged: %s", i, problem), fixIncomplete)
		}
		mapped := false
		if native && !b.compressed {
			if mapped, err = a.appendMapped(&b, i); err != nil {
				return nil, err
			}
		}
		if mapped {
			continue
		}
		rec, err := recordAt(fr, i)
		if err != nil {
			return nil, usererr.InFile(path, errBatch("the Arrow IPC file", i, err), fixIncomplete)
		}
		err = a.Append(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	t, err := a.Finish()
	if err != nil {
		return nil, err
	}
	done = true
	if !a.mapAliased {
		release() // nothing points into data: give it back now
	}
	return t, nil
}

// openFileReader opens arrow's reader over the mapping (it copies what it
// reads, and decodes the dictionaries). checkFile has checked every read of
// the metadata it makes, so that it does not panic on a damaged file; it
// still panics where the data is (a compressed buffer that does not
// decompress), with an error that is the cause. It allocates from Go memory:
// in arrow v17, NewFileReader never frees the messages and dictionaries it
// reads at open (nor does Close), which only the garbage collector reclaims.
func openFileReader(data []byte) (fr *ipc.FileReader, err error) {
	defer func() {
		if p := recover(); p != nil {
			fr, err = nil, recovered(p)
		}
	}()
	return ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
}

// recordAt reads record batch i with arrow's reader (see openFileReader).
func recordAt(fr *ipc.FileReader, i int) (rec arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, recovered(p)
		}
	}()
	return fr.RecordBatchAt(i)
}

// sameSchema checks that the schema message the file starts with (after
// its magic: the file holds a stream, whose first message is the schema)
// is the footer's schema: arrow's reader uses the footer's, and a reader
// of the stream the other; a difference is damage (in either) that would
// go unseen. It returns what is wrong, or "".
func sameSchema(bodies []byte, footer *arrow.Schema) string {
	if len(bodies) < 8 {
		return "it has no schema message after its magic bytes"
	}
	rdr, err := newStreamReader(bytes.NewReader(bodies[8:]), edges.Options{})
	if err != nil {
		return "the schema at its start is damaged (" + cause(err) + ")"
	}
	defer rdr.Release()
	if s := rdr.Schema(); !s.Equal(footer) || !s.Metadata().Equal(footer.Metadata()) {
		return "the schema at its start differs from the one in its footer"
	}
	return ""
}

// errArrowFailed stands for a panic of arrow's reader that is not an error
// of the input's: a bug (arrow's, or a check here that missed what it
// trips on). The tests make sure no damaged input they try leads to it.
var errArrowFailed = errors.New("arrow's reader failed on it")

// recovered is the error a panic of arrow's reader stands for: the error it
// panicked with, where that is an error of reading the input (a codec's, a
// read's), else errArrowFailed.
func recovered(p any) error {
	if err, ok := p.(error); ok {
		if _, isRuntime := err.(runtime.Error); !isRuntime {
			return err
		}
	}
	return errArrowFailed
}

// cause is an error of arrow's as the middle of a message: without the
// package prefixes and the steps of the schema's decoding, and a type it does
// not know (a damaged type tag) in words.
func cause(err error) string {
	s := err.Error()
	for _, p := range []string{"arrow/ipc: ", "could not decode footer: ", "could not decode schema: ", "could not read schema: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	s = fieldPrefix.ReplaceAllString(s, "field $1's type: ")
	return strings.ReplaceAll(s, "type  not implemented", "a field has a type tag gpipe does not know")
}

// fieldPrefix is how arrow's schema decoding names the field whose type it
// could not read.
var fieldPrefix = regexp.MustCompile(`could not convert field (\d+) from flatbuf: could not convert field type: `)

// appendMapped adds record batch i, an uncompressed batch of the mapped
// file, straight from the mapping. It returns false, having added nothing,
// when the batch needs arrow's reader.
func (a *Appender) appendMapped(b *batchMeta, i int) (bool, error) {
	for role := 0; role < a.cols.ncols(); role++ {
		switch a.cols.types[role].ID() {
		case arrow.DICTIONARY, arrow.STRING_VIEW:
			return false, nil
		}
	}
	var cols [3]rawCol
	nc := a.cols.ncols()
	fields := a.schema.Fields()
	for role := 0; role < nc; role++ {
		fi := a.cols.idx[role]
		start := b.starts[fi]
		c, detail := mappedColumn(fields[fi].Type, b, start.node, start.buf)
		if detail != "" {
			return false, a.corrupt(role, fmt.Sprintf("record batch %d: %s", i, detail))
		}
		c.role = role
		cols[role] = c
	}
	return true, a.appendRaw(cols[:nc], int(b.length))
}

// mappedColumn is the column whose node and first buffer are at the given
// indexes, over the batch body: a primitive or a (large) utf8 column.
func mappedColumn(dt arrow.DataType, b *batchMeta, node, buf int) (rawCol, string) {
	body := b.body
	if node >= b.nodes.N {
		return rawCol{}, "its field nodes end early"
	}
	n, nulls := b.nodes.I64(node, 0), b.nodes.I64(node, 8)
	if n != b.length || nulls < 0 || nulls > n {
		return rawCol{}, fmt.Sprintf("the column has %d values (%d null) in a batch of %d rows", n, nulls, b.length)
	}
	nbuf := 2
	if id := dt.ID(); id == arrow.STRING || id == arrow.LARGE_STRING {
		nbuf = 3
	}
	if buf+nbuf > b.buffers.N {
		return rawCol{}, "its buffers end early"
	}
	var bufs [3][]byte
	for k := 0; k < nbuf; k++ {
		off, length := b.buffers.I64(buf+k, 0), b.buffers.I64(buf+k, 8)
		if off < 0 || length < 0 || off > int64(len(body)) || length > int64(len(body))-off {
			return rawCol{}, fmt.Sprintf("buffer %d lies at bytes %d to %d of a body of %d", buf+k, off, off+length, len(body))
		}
		bufs[k] = body[off : off+length : off+length]
	}
	c := rawCol{typ: dt, n: int(n), nulls: int(nulls), buf1: bufs[1], buf2: bufs[2]}
	if nulls > 0 {
		c.valid = bufs[0]
		if len(c.valid)*8 < int(n) {
			return rawCol{}, "the validity bitmap is shorter than the column"
		}
	}
	return c, ""
}
