package arrowipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/input"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/usererr"
)

// allocator is the allocator arrow's readers use.
func allocator(opts edges.Options) memory.Allocator {
	if opts.Alloc != nil {
		return opts.Alloc
	}
	return memory.DefaultAllocator
}

// ReadStream reads an Arrow IPC stream, one chunk per record batch (or
// more for batches over a few million rows).
func ReadStream(ctx context.Context, name string, r io.Reader, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Reads check ctx: a batch's body is read as it arrives, in steps of up
	// to 64 MiB, and a signal must not wait for them.
	br := bufio.NewReaderSize(input.NewReader(ctx, r), 256<<10)
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
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, usererr.InFile(name, "cannot read the Arrow IPC stream's schema ("+cause(err)+")",
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
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, usererr.InFile(name, "not an Arrow IPC stream ("+cause(err)+")",
			"check that the producer wrote an Arrow IPC stream, or name the input's format with --input-format")
	}
	defer rdr.Release()
	return readRecords(ctx, name, "the Arrow IPC stream", rdr, opts)
}

// newStreamReader opens arrow's reader over the stream's messages, which
// streamMessages checks before arrow reads them (see openFileReader).
func newStreamReader(r io.Reader, opts edges.Options) (rdr *ipc.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			rdr, err = nil, recovered(p)
		}
	}()
	mem := allocator(opts)
	return ipc.NewReaderFromMessageReader(&streamMessages{r: r, mem: mem, refs: 1}, ipc.WithAllocator(mem))
}

// maxMeta is the largest message metadata a stream may have (a schema
// or batch header; they take kilobytes).
const maxMeta = 64 << 20

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
	// layout is the schema's (its first message), which each batch is
	// checked against before arrow's reader sees it (as a file's are,
	// checkFile).
	layout *schemaLayout
}

// errDamagedMessage is a stream message the checks found damaged.
type errDamagedMessage struct{ problem string }

func (e errDamagedMessage) Error() string { return e.problem }

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
	if n > maxMeta {
		return nil, fmt.Errorf("a message claims %d bytes of metadata", n)
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(s.r, meta); err != nil {
		return nil, fmt.Errorf("could not read message metadata: %w", unexpected(err))
	}
	root := flatbuf.Root(meta)
	if !root.OK || !flatbuf.Check(root, messageShape) {
		return nil, fmt.Errorf("a message's metadata is not an Arrow message")
	}
	bodyLen, _ := root.Int64(messageBodyLength, 0)
	if bodyLen < 0 {
		return nil, errDamagedMessage{fmt.Sprintf("a message claims a body of %d bytes", bodyLen)}
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
	if err := s.check(meta, body.Bytes()); err != nil {
		return nil, err
	}
	if s.msg != nil {
		s.msg.Release()
	}
	mb := memory.NewBufferBytes(meta)
	s.msg = ipc.NewMessage(mb, body)
	mb.Release()
	return s.msg, nil
}

// check checks a message of the stream: the schema, whose layout it keeps,
// and record and dictionary batches against it and their bodies.
func (s *streamMessages) check(meta, body []byte) error {
	if problem := checkStreamMessage(&s.layout, meta, body); problem != "" {
		// A record batch's reading reports it: a dictionary batch is
		// read as the batch after it needs it.
		problem = strings.Replace(problem, "a dictionary batch: ", "a dictionary batch before it: ", 1)
		return errDamagedMessage{problem}
	}
	return nil
}

// unexpected turns the end of the input inside a message into an error that
// is not io.EOF (which arrow's reader takes for the end of the stream).
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
