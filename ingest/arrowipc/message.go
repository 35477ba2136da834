package arrowipc

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/endian"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Record batches as IPC messages, the way Arrow Flight carries them: a
// FlightData's data_header is the message's flatbuffer metadata and its
// data_body the body. arrow's IPC reader copies every buffer out of a body;
// here a batch's edge columns are placed in the body by its metadata and
// viewed there where they need no conversion, as the batches of a mapped
// file are (appendMapped).

// SetSchemaMessage gives the Appender the stream's schema message (its
// flatbuffer metadata), by which AppendMessage places the columns of record
// batches. It says false when batches of this schema need arrow's reader:
// big-endian ones, or a metadata that is not a schema message.
func (a *Appender) SetSchemaMessage(meta []byte) bool {
	a.msgLayout = nil
	root := flatbuf.Root(meta)
	if !root.OK || !flatbuf.Check(root, messageShape) {
		return false
	}
	if ht, _ := root.Uint8(messageHeaderType, 0); ht != headerSchema {
		return false
	}
	schema, present := root.Table(messageHeader)
	if !present {
		return false
	}
	if e, _ := schema.Int16(schemaEndianness, 0); (e == endianBig) != endian.IsBigEndian {
		return false
	}
	layout, ok := layoutOf(schema)
	if !ok || len(layout.columns) != len(a.schema.Fields()) {
		return false
	}
	a.msgLayout = layout
	return true
}

// AppendMessage adds a record batch message: its flatbuffer metadata and
// its body. It says false, having added nothing, when the message needs
// arrow's reader instead: no schema message was taken, it is not a record
// batch (a dictionary batch), it is compressed, or an edge column is a
// dictionary or string views. A batch whose metadata does not fit its body
// or the schema is an error.
//
// The chunk may point into body, which must not change until the table is
// released; the table then holds the whole body, and Bytes counts it. When
// the edge columns are less than half of the body, they are copied instead,
// so that an upload of many other columns does not hold them all.
func (a *Appender) AppendMessage(meta, body []byte) (bool, error) {
	if a.done {
		return false, usererr.Newf(usererr.Internal, "%s: Appender.AppendMessage after Finish or Release", a.name)
	}
	if a.msgLayout == nil {
		return false, nil
	}
	for role := 0; role < a.cols.ncols(); role++ {
		switch a.cols.types[role].ID() {
		case arrow.DICTIONARY, arrow.STRING_VIEW:
			return false, nil
		}
	}
	root := flatbuf.Root(meta)
	if !root.OK {
		return false, nil
	}
	if ht, _ := root.Uint8(messageHeaderType, 0); ht != headerRecordBatch {
		return false, nil
	}
	if err := a.ctx.Err(); err != nil {
		return false, err
	}
	b, problem := parseBatch(meta, headerRecordBatch)
	if problem == "" && b.compressed {
		return false, nil
	}
	if problem == "" && b.bodyLength != int64(len(body)) {
		problem = fmt.Sprintf("its metadata says %d bytes of body, where %d came", b.bodyLength, len(body))
	}
	if problem == "" {
		b.body = body
		problem = b.check(a.msgLayout)
	}
	if problem != "" {
		return false, usererr.InFile(a.name, fmt.Sprintf("record batch %d is damaged: %s", a.batches, problem),
			"send record batches as an Arrow IPC writer makes them")
	}
	var cols [3]rawCol
	nc := a.cols.ncols()
	fields := a.schema.Fields()
	edgeBytes := 0
	for role := 0; role < nc; role++ {
		fi := a.cols.idx[role]
		start := b.starts[fi]
		c, detail := mappedColumn(fields[fi].Type, &b, start.node, start.buf)
		if detail != "" {
			return false, a.corrupt(role, fmt.Sprintf("record batch %d: %s", a.batches, detail))
		}
		c.role = role
		cols[role] = c
		edgeBytes += len(c.valid) + len(c.buf1) + len(c.buf2)
	}
	a.body, a.bodyHeld, a.copyBody = body, false, 2*edgeBytes < len(body)
	defer func() { a.body = nil }()
	return true, a.appendRaw(cols[:nc], int(b.length))
}

// MessageCheck checks the IPC messages of a stream that arrive one at a
// time, each as its flatbuffer metadata and its body (Arrow Flight's
// FlightData: data_header and data_body), as ReadStream checks a stream's:
// arrow's reader trusts the metadata (a bad offset or length is a panic, or
// an allocation of whatever a length says), so that every message must be
// checked before it sees it. The first message must be the schema, whose
// layout the record and dictionary batches after it are checked against.
type MessageCheck struct {
	name   string
	layout *schemaLayout
	n      int // messages checked
}

// NewMessageCheck checks the messages of the stream name (for errors).
func NewMessageCheck(name string) *MessageCheck { return &MessageCheck{name: name} }

// Check checks the stream's next message; the error is an Input error
// saying what is wrong with it.
func (c *MessageCheck) Check(meta, body []byte) error {
	i := c.n
	c.n++
	root := flatbuf.Root(meta)
	if !root.OK || !flatbuf.Check(root, messageShape) {
		return c.damaged(i, "its metadata is not an Arrow IPC message")
	}
	if bodyLen, _ := root.Int64(messageBodyLength, 0); bodyLen < 0 {
		return c.damaged(i, fmt.Sprintf("it claims a body of %d bytes", bodyLen))
	}
	ht, _ := root.Uint8(messageHeaderType, 0)
	if ht == headerSchema && c.layout != nil {
		return c.damaged(i, "it is a second schema; a stream has one, in its first message")
	}
	if ht != headerSchema && c.layout == nil {
		return c.damaged(i, "it comes before the schema; a stream starts with its schema")
	}
	if problem := checkStreamMessage(&c.layout, meta, body); problem != "" {
		return c.damaged(i, problem)
	}
	return nil
}

func (c *MessageCheck) damaged(i int, problem string) error {
	return usererr.InFile(c.name, fmt.Sprintf("message %d of the stream is damaged: %s", i, problem),
		"send an Arrow schema, then record batches of that schema, as an Arrow IPC writer makes them")
}

// checkStreamMessage checks one message of a stream whose metadata passed
// flatbuf.Check: a schema, whose layout it keeps in *layout, and record
// and dictionary batches against that layout and their bodies. It says
// what is wrong, if anything.
func checkStreamMessage(layout **schemaLayout, meta, body []byte) string {
	root := flatbuf.Root(meta)
	switch ht, _ := root.Uint8(messageHeaderType, 0); ht {
	case headerSchema:
		schema, _ := root.Table(messageHeader)
		l, ok := layoutOf(schema)
		if !ok {
			return "its schema has a field of a type the Arrow format does not have"
		}
		*layout = l
	case headerDictionary, headerRecordBatch:
		b, problem := parseBatch(meta, ht)
		if problem == "" && *layout == nil {
			problem = "it comes before the schema"
		}
		if problem == "" {
			b.body = body
			problem = b.check(*layout)
		}
		if problem != "" && ht == headerDictionary {
			problem = "a dictionary batch: " + problem
		}
		return problem
	}
	return ""
}

// BatchError is what arrow's reader of a stream of messages (Flight's)
// said about record batch i of the stream name, as an Input error in a
// user's words: a panic it recovered from (which it reports as "unknown
// error while reading: runtime error: ...") as buffers that do not match
// the batch's header, never the panic's text.
func BatchError(name string, i int, err error) error {
	return usererr.InFile(name, errBatch("the stream", i, err),
		"send an Arrow schema, then record batches of that schema, as an Arrow IPC writer makes them")
}

// SchemaError is what arrow's reader of a stream of messages (Flight's)
// said about the stream's schema, as an Input error in a user's words.
func SchemaError(name string, err error) error {
	text := cause(err)
	for _, p := range []string{"arrow/flight: ", "could not create flight reader: ", "could not decode schema from message schema: "} {
		text = strings.ReplaceAll(text, p, "")
	}
	problem := "cannot read the stream's schema (" + text + ")"
	switch s := err.Error(); {
	case errors.Is(err, io.EOF) || strings.HasSuffix(s, "EOF"):
		problem = "the stream ended before its schema"
	case errors.Is(err, errArrowFailed) || strings.Contains(s, "runtime error") || strings.Contains(s, "out of range") || strings.Contains(s, "nil pointer"):
		problem = "cannot read the stream's schema (it is damaged)"
	}
	return usererr.InFile(name, problem, "send an Arrow schema, then record batches of that schema, as an Arrow IPC writer makes them")
}
