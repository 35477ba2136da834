package arrowipc

import (
	"fmt"

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
