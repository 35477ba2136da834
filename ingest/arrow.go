package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/endian"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/mmap"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Reading Arrow IPC files and streams.
//
// An IPC file is memory-mapped and not copied: its footer and each record
// batch's metadata are read here (arrow_fb.go), and for an uncompressed,
// little-endian batch the edge columns' buffers are sliced out of the
// mapping, so that an int64 key column becomes a chunk's []int64 over the
// mapped bytes. arrow's ipc.FileReader parses the schema, and reads (copies,
// decompresses, decodes dictionaries of) the batches the mapping cannot
// serve: compressed bodies, dictionary-encoded or string-view key columns,
// big-endian files. The mapping lives until edges.Table.Release.

const fixArrowIncomplete = "the file is not a complete Arrow IPC file; re-export it (or copy it again)"

var arrowMagic = []byte("ARROW1")

// arrowAlloc is the allocator arrow's readers use.
func arrowAlloc(opts edges.Options) memory.Allocator {
	if opts.Alloc != nil {
		return opts.Alloc
	}
	return memory.DefaultAllocator
}

// sniffFormat says what an input that is not an Arrow IPC file looks like
// instead, and what to do, or "" when it starts like one.
func sniffFormat(head []byte) (what, fix string) {
	switch {
	case bytes.HasPrefix(head, arrowMagic):
		return "", ""
	case len(head) >= 4 && binary.LittleEndian.Uint32(head) == 0xFFFFFFFF:
		return "an Arrow IPC stream, not an Arrow IPC file", "name it .arrows or pass --input-format arrows"
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "a Parquet file, not an Arrow IPC file", "name it .parquet or pass --input-format parquet"
	}
	return "not an Arrow IPC file (it does not start with the magic bytes ARROW1)", "check the path, or name the input's format with --input-format"
}

func readArrowFile(ctx context.Context, path string, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, usererr.InFile(path, "cannot open: "+strings.TrimPrefix(err.Error(), "open "+path+": "), "check the path")
	}
	m, err := mmap.Map(path, f)
	f.Close()
	if err != nil {
		return nil, err
	}
	t, err := readMappedArrow(ctx, path, m, opts)
	if err != nil {
		m.Close()
		return nil, err
	}
	return t, nil
}

// readMappedArrow reads an IPC file from its mapping. On success the table
// owns the mapping.
func readMappedArrow(ctx context.Context, path string, m *mmap.File, opts edges.Options) (*edges.Table, error) {
	data := m.Data
	if len(data) == 0 {
		return nil, usererr.InFile(path, "the file is empty, not an Arrow IPC file", "check the path, or re-export the file")
	}
	if what, fix := sniffFormat(data[:min(len(data), 8)]); what != "" {
		if len(data) < len(arrowMagic) && bytes.HasPrefix(arrowMagic, data) {
			return nil, usererr.InFile(path, fmt.Sprintf("the file is truncated: %d bytes, too short for an Arrow IPC file", len(data)), fixArrowIncomplete)
		}
		if err := sniff.ErrLooksLike(path, "an Arrow IPC file", data[:min(len(data), 1024)]); err != nil {
			return nil, err
		}
		return nil, usererr.InFile(path, "the file is "+what, fix)
	}
	if len(data) < 2*8+4 || !bytes.HasSuffix(data, arrowMagic) {
		return nil, usererr.InFile(path, "the file is truncated: it does not end with an Arrow IPC footer", fixArrowIncomplete)
	}
	footer, problem := checkIPCFile(data)
	if problem != "" {
		return nil, usererr.InFile(path, "the file is damaged: "+problem, fixArrowIncomplete)
	}
	fr, err := openArrowFile(data)
	if err != nil {
		return nil, usererr.InFile(path, "the Arrow IPC footer is corrupt ("+arrowCause(err)+")", fixArrowIncomplete)
	}
	defer fr.Close()
	if len(footer.batches) != fr.NumRecords() {
		return nil, usererr.InFile(path, "the Arrow IPC footer is corrupt", fixArrowIncomplete)
	}
	a, err := newAppender(ctx, path, fr.Schema(), opts)
	if err != nil {
		return nil, err
	}
	// arrow's reader works in Go memory (see openArrowFile); what it reads
	// is copied into Options.Alloc's.
	a.copyRecords = opts.Alloc != nil
	// Registered first, so that it runs after every release of the chunks.
	a.t.OnRelease(m.Close)
	done := false
	defer func() {
		if !done {
			a.Release()
		}
	}()
	native := !footer.bigEndian && !endian.IsBigEndian
	bodies := data[:len(data)-10-int(binary.LittleEndian.Uint32(data[len(data)-10:]))]
	for i, blk := range footer.batches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, problem := checkIPCMessage(bodies, blk, fbHeaderRecordBatch)
		if problem != "" {
			return nil, usererr.InFile(path, fmt.Sprintf("record batch %d is damaged: %s", i, problem), fixArrowIncomplete)
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
		rec, err := arrowRecordAt(fr, i)
		if err != nil {
			return nil, usererr.InFile(path, errBatch("the Arrow IPC file", i, err), fixArrowIncomplete)
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
		m.Close() // nothing points into the mapping: give it back now
	}
	return t, nil
}

// openArrowFile opens arrow's reader over the mapping (it copies what it
// reads), turning its panics into errors. It allocates from Go memory: in
// arrow v17, NewFileReader never frees the messages and dictionaries it
// reads at open (nor does Close), which only the garbage collector reclaims.
func openArrowFile(data []byte) (fr *ipc.FileReader, err error) {
	defer func() {
		if p := recover(); p != nil {
			fr, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
}

// arrowRecordAt reads record batch i with arrow's reader.
func arrowRecordAt(fr *ipc.FileReader, i int) (rec arrow.Record, err error) {
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return fr.RecordAt(i)
}

// arrowCause is an error of arrow's as the middle of a message.
func arrowCause(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "arrow/ipc: could not decode footer: ")
	return strings.ReplaceAll(s, "arrow/ipc: ", "")
}

// appendMapped adds record batch i, an uncompressed batch of the mapped
// file, straight from the mapping. It returns false, having added nothing,
// when the batch needs arrow's reader.
func (a *Appender) appendMapped(b *ipcBatch, i int) (bool, error) {
	for role := 0; role < a.cols.ncols(); role++ {
		switch a.cols.types[role].ID() {
		case arrow.DICTIONARY, arrow.STRING_VIEW:
			return false, nil
		}
	}
	cur := ipcCursor{v5: b.version >= fbMetadataV5, variadicCounts: b.variadic}
	var cols [3]rawCol
	nc := a.cols.ncols()
	fields := a.schema.Fields()
	last := max(a.cols.idx[recSrc], a.cols.idx[recDst], a.cols.idx[recWeight])
	for fi := 0; fi <= last; fi++ {
		node, buf := cur.node, cur.buf
		if !cur.skip(fields[fi].Type, 0) {
			return false, nil
		}
		for role := 0; role < nc; role++ {
			if a.cols.idx[role] != fi {
				continue
			}
			c, detail := mappedColumn(fields[fi].Type, b, node, buf)
			if detail != "" {
				return false, a.corrupt(role, fmt.Sprintf("record batch %d: %s", i, detail))
			}
			c.role = role
			cols[role] = c
		}
	}
	return true, a.appendRaw(cols[:nc], int(b.length))
}

// mappedColumn is the column whose node and first buffer are at the given
// indexes, over the batch body: a primitive or a (large) utf8 column.
func mappedColumn(dt arrow.DataType, b *ipcBatch, node, buf int) (rawCol, string) {
	body := b.body
	if node >= b.nodes.n {
		return rawCol{}, "its field nodes end early"
	}
	n, nulls := b.nodes.i64(node, 0), b.nodes.i64(node, 8)
	if n != b.length || nulls < 0 || nulls > n {
		return rawCol{}, fmt.Sprintf("the column has %d values (%d null) in a batch of %d rows", n, nulls, b.length)
	}
	nbuf := 2
	if id := dt.ID(); id == arrow.STRING || id == arrow.LARGE_STRING {
		nbuf = 3
	}
	if buf+nbuf > b.buffers.n {
		return rawCol{}, "its buffers end early"
	}
	var bufs [3][]byte
	for k := 0; k < nbuf; k++ {
		off, length := b.buffers.i64(buf+k, 0), b.buffers.i64(buf+k, 8)
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

// ReadArrowStream reads an Arrow IPC stream, one chunk per record batch (or
// more for batches over a few million rows).
func ReadArrowStream(ctx context.Context, name string, r io.Reader, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 256<<10)
	head, _ := br.Peek(8)
	// What the first read brought besides, to tell what the input is when
	// it is not a stream, without waiting for more.
	head, _ = br.Peek(max(len(head), min(br.Buffered(), 1024)))
	if len(head) == 0 {
		return nil, usererr.InFile(name, "the input is empty, not an Arrow IPC stream", "check that the producer wrote an Arrow IPC stream")
	}
	if bytes.HasPrefix(head, []byte{0xFF, 0xFF, 0xFF, 0xFF}) {
		// A stream (since Arrow 0.15): its schema message follows.
		rdr, err := newStreamReader(br, opts)
		if err != nil {
			return nil, usererr.InFile(name, "cannot read the Arrow IPC stream's schema ("+arrowCause(err)+")",
				"the stream is damaged or was cut short; check its producer")
		}
		defer rdr.Release()
		return readRecords(ctx, name, "the Arrow IPC stream", rdr, opts)
	}
	if what, format := sniff.Guess(head); what != "" {
		fix := "pass --input-format " + format
		switch {
		case format == "":
			fix = "check that the producer wrote an Arrow IPC stream"
		case name != "-":
			fix = fmt.Sprintf("name it %s or pass --input-format %s", sniff.Ext[format], format)
		}
		if kind, f := sniff.Binary(head); kind != "" && format == "" {
			fix = f
		}
		return nil, usererr.InFile(name, "the input is not an Arrow IPC stream: it looks like "+what, fix)
	}
	rdr, err := newStreamReader(br, opts)
	if err != nil {
		return nil, usererr.InFile(name, "not an Arrow IPC stream ("+arrowCause(err)+")",
			"check that the producer wrote an Arrow IPC stream, or name the input's format with --input-format")
	}
	defer rdr.Release()
	return readRecords(ctx, name, "the Arrow IPC stream", rdr, opts)
}

func newStreamReader(r io.Reader, opts edges.Options) (rdr *ipc.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			rdr, err = nil, fmt.Errorf("%v", p)
		}
	}()
	mem := arrowAlloc(opts)
	return ipc.NewReaderFromMessageReader(&streamMessages{r: r, mem: mem, refs: 1}, ipc.WithAllocator(mem))
}

// streamMaxMeta is the largest message metadata a stream may have (a schema
// or batch header; they take kilobytes).
const streamMaxMeta = 64 << 20

// streamMessages reads the messages of an IPC stream, as arrow's reader
// does, but does not believe the lengths it reads: metadata over
// streamMaxMeta is an error, and a body is read in steps as it arrives, so
// that a damaged (or not-Arrow) input fails at its end instead of
// allocating gigabytes first.
type streamMessages struct {
	r    io.Reader
	mem  memory.Allocator
	msg  *ipc.Message
	refs int64
}

func (s *streamMessages) Retain() { s.refs++ }

func (s *streamMessages) Release() {
	if s.refs--; s.refs == 0 && s.msg != nil {
		s.msg.Release()
		s.msg = nil
	}
}

func (s *streamMessages) Message() (*ipc.Message, error) {
	var word [4]byte
	if _, err := io.ReadFull(s.r, word[:]); err != nil {
		return nil, fmt.Errorf("could not read continuation indicator: %w", err)
	}
	n := binary.LittleEndian.Uint32(word[:])
	switch n {
	case 0:
		return nil, io.EOF // end of stream
	case 0xFFFFFFFF:
		if _, err := io.ReadFull(s.r, word[:]); err != nil {
			return nil, fmt.Errorf("could not read message length: %w", err)
		}
		if n = binary.LittleEndian.Uint32(word[:]); n == 0 {
			return nil, io.EOF
		}
	}
	// Otherwise n is the length of a message written before Arrow 0.15.
	if n > streamMaxMeta {
		return nil, fmt.Errorf("a message claims %d bytes of metadata", n)
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(s.r, meta); err != nil {
		return nil, fmt.Errorf("could not read message metadata: %w", unexpected(err))
	}
	root := fbRoot(meta)
	bodyLen, ok := root.int64(fbMessageBodyLength, 0)
	if !root.ok || !ok || bodyLen < 0 {
		return nil, fmt.Errorf("a message's metadata is not an Arrow message")
	}
	body := memory.NewResizableBuffer(s.mem)
	defer body.Release()
	for have := int64(0); have < bodyLen; {
		step := min(bodyLen-have, max(have, 64<<20))
		body.Resize(int(have + step))
		if _, err := io.ReadFull(s.r, body.Bytes()[have:have+step]); err != nil {
			return nil, fmt.Errorf("could not read message body: %w", unexpected(err))
		}
		have += step
	}
	if s.msg != nil {
		s.msg.Release()
	}
	mb := memory.NewBufferBytes(meta)
	s.msg = ipc.NewMessage(mb, body)
	mb.Release()
	return s.msg, nil
}

// unexpected turns the end of the input inside a message into an error that
// is not io.EOF (which arrow's reader takes for the end of the stream).
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
