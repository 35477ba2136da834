package serve

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// The server's gRPC codec: protobuf, as gRPC's own, except for Flight's
// record batch messages (FlightData), whose Arrow buffers are most of what
// a result or an upload moves. gRPC's codec copies each of them twice more
// than needed: a result's batch is serialized into a buffer by arrow's IPC
// writer, then copied by proto.Marshal; an upload's body is copied out of
// the received message by proto.Unmarshal, then again by arrow's IPC
// reader. Here a result's batch is written once, straight into a pooled
// buffer that gRPC sends and hands back when it is written
// (encodedMessage), and an upload's message is gathered once out of the
// frames gRPC received into a buffer of its own, placed so that the body
// is 8-byte aligned, its header and body decoded as slices of it.

// flightCodec is protobuf with the two shortcuts above, as a gRPC CodecV2
// (gRPC hands over and takes back buffers rather than byte slices it
// copies). Its name is "proto", the content subtype every Flight client
// sends.
type flightCodec struct{}

func (flightCodec) Name() string { return "proto" }

// encodedMessage is a message already in its wire form, in a buffer of
// serverBuffers. Marshal gives the buffer to gRPC, which puts it back in the
// pool once it has written the message, so a message is sent once (a second
// Marshal would put the buffer back twice); a message never sent is left to
// the garbage collector.
type encodedMessage struct{ buf *[]byte }

// bytes is the message's wire form.
func (m encodedMessage) bytes() []byte { return *m.buf }

func (flightCodec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(encodedMessage); ok {
		return mem.BufferSlice{mem.NewBuffer(m.buf, serverBuffers)}, nil
	}
	m := messageOf(v)
	if m == nil {
		return nil, fmt.Errorf("cannot marshal %T: not a protobuf message", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (flightCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*request); ok {
		if r.err = unmarshal(data, r.msg); r.err != nil {
			r.err = malformed(r.msg, r.err)
		}
		return nil
	}
	return unmarshal(data, v)
}

// unmarshal decodes a received message into v.
func unmarshal(data mem.BufferSlice, v any) error {
	if fd, ok := v.(*flight.FlightData); ok {
		msg := gatherAligned(data)
		if aliasFlightData(msg, fd) {
			return nil
		}
		return proto.Unmarshal(msg, fd)
	}
	m := messageOf(v)
	if m == nil {
		return fmt.Errorf("cannot unmarshal into %T: not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// request is a request message that the server decodes itself
// (callStream.RecvMsg, decodeRequests): Unmarshal decodes into msg and
// keeps what is wrong with it in err, rather than return an error that
// gRPC would answer with Internal, a fault of the server's.
type request struct {
	msg any
	err error // InvalidArgument
}

// malformed is the status of a request message that cannot be decoded:
// the client's fault.
func malformed(msg any, err error) error {
	name := "protobuf"
	if m := messageOf(msg); m != nil {
		name = string(m.ProtoReflect().Descriptor().Name())
	}
	return status.Errorf(codes.InvalidArgument, "the request is not a valid %s message (%s); send the message Flight.proto defines",
		name, strings.TrimPrefix(oneLine(err.Error()), "proto: "))
}

func messageOf(v any) proto.Message {
	switch v := v.(type) {
	case protoadapt.MessageV2:
		return v
	case protoadapt.MessageV1:
		return protoadapt.MessageV2Of(v)
	}
	return nil
}

// FlightData's field numbers (Flight.proto).
const (
	fieldDescriptor  protowire.Number = 1
	fieldDataHeader  protowire.Number = 2
	fieldAppMetadata protowire.Number = 3
	fieldDataBody    protowire.Number = 1000
)

// aliasFlightData decodes a FlightData message into fd with its byte fields
// pointing into data. It says false, having left fd as it was, for anything
// but the plain form every Flight client writes (each field at most once,
// with its wire type, no unknown fields): proto.Unmarshal reads that.
func aliasFlightData(data []byte, fd *flight.FlightData) bool {
	var header, meta, body, desc []byte
	var seen [4]bool
	for b := data; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var i int
		switch num {
		case fieldDescriptor:
			i, desc = 0, v
		case fieldDataHeader:
			i, header = 1, v
		case fieldAppMetadata:
			i, meta = 2, v
		case fieldDataBody:
			i, body = 3, v
		default:
			return false
		}
		if seen[i] {
			return false
		}
		seen[i] = true
	}
	var d *flight.FlightDescriptor
	if seen[0] {
		d = &flight.FlightDescriptor{}
		if proto.Unmarshal(desc, d) != nil {
			return false
		}
	}
	proto.Reset(fd)
	fd.FlightDescriptor, fd.DataHeader, fd.AppMetadata, fd.DataBody = d, header, meta, body
	return true
}

// gatherAligned copies a received message out of gRPC's frame buffers into
// a buffer of its own (the decoded FlightData points into it, and gRPC
// reuses its buffers once Unmarshal returns), placed so that a FlightData
// body starts on an 8-byte boundary: the Arrow buffers in a body are
// aligned to its start, and an upload views its key columns in place only
// where they are aligned for their type (else it copies them).
func gatherAligned(data mem.BufferSlice) []byte {
	n := data.Len()
	if n == 0 {
		return nil
	}
	off := uintptr(bodyOffsetIn(data))
	b := make([]byte, n+7)
	pad := int((8 - (uintptr(unsafe.Pointer(unsafe.SliceData(b)))+off)%8) % 8)
	msg := b[pad : pad+n : pad+n]
	data.CopyTo(msg)
	return msg
}

// bodyOffsetIn is where a FlightData's body starts in the message data,
// 0 when it has none or the fields before it cannot be read.
func bodyOffsetIn(data mem.BufferSlice) int {
	if off, ok := bodyOffset(data[0].ReadOnlyData()); ok {
		return off
	}
	if len(data) > 1 { // the fields before the body span frames (rare: they are small)
		head := make([]byte, min(data.Len(), 64<<10))
		data.CopyTo(head)
		if off, ok := bodyOffset(head); ok {
			return off
		}
	}
	return 0
}

// bodyOffset is where the body's bytes start in a FlightData message whose
// first bytes are head; false when head ends (or stops being FlightData's
// plain form) before.
func bodyOffset(head []byte) (int, bool) {
	for b := head; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return 0, false
		}
		b = b[n:]
		if num == fieldDataBody {
			_, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, false
			}
			return len(head) - len(b) + n, true
		}
		_, n = protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
	}
	return 0, false
}

// flightDataSize is the size of a FlightData message holding an IPC
// message's metadata (header) and a body of bodyLen bytes.
func flightDataSize(header []byte, bodyLen int) int {
	n := protowire.SizeTag(fieldDataHeader) + protowire.SizeBytes(len(header))
	if bodyLen > 0 {
		n += protowire.SizeTag(fieldDataBody) + protowire.SizeBytes(bodyLen)
	}
	return n
}

// appendFlightData starts a FlightData message in dst: the header field,
// then the body field's tag and length. The caller appends the bodyLen
// bytes of the body.
func appendFlightData(dst, header []byte, bodyLen int) []byte {
	dst = protowire.AppendTag(dst, fieldDataHeader, protowire.BytesType)
	dst = protowire.AppendBytes(dst, header)
	if bodyLen > 0 {
		dst = protowire.AppendTag(dst, fieldDataBody, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(bodyLen))
	}
	return dst
}

// serverBuffers holds the buffers of result messages that gRPC has written,
// for the next ones, and the buffers gRPC reads HTTP/2 frames into (the
// server's gRPC buffer pool): a result of 48 MB would otherwise take 48 MB
// of new memory, which the kernel faults in (or Go zeroes) before the
// encoders write it, and gRPC's own pool clears every frame's buffer
// before reading the frame over it. Buffers come in powers of two from
// 1 KiB to 64 MiB (a result's batches are of one size, but the last; a
// frame is at most 16 KiB). They are not cleared when reused: the encoders
// write every byte of a message, and gRPC reads whole frames into its
// buffers and exposes only what it has read.
var serverBuffers = &bufferClasses{}

const (
	minBufferShift = 10
	maxBufferShift = 26
)

// bufferClasses is a mem.BufferPool of buffers by power-of-two capacity,
// not cleared when reused.
type bufferClasses struct {
	classes [maxBufferShift - minBufferShift + 1]sync.Pool
}

// class is the index of the class of buffers of at least n bytes, and
// whether there is one.
func (p *bufferClasses) class(n int) (int, bool) {
	shift := max(minBufferShift, bits.Len(uint(n-1)))
	return shift - minBufferShift, n > 0 && shift <= maxBufferShift
}

// Get is a buffer of length n, not cleared.
func (p *bufferClasses) Get(n int) *[]byte {
	c, ok := p.class(n)
	if !ok {
		b := make([]byte, n)
		return &b
	}
	if b, _ := p.classes[c].Get().(*[]byte); b != nil {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(c+minBufferShift))
	return &b
}

// Put keeps b for a later Get (a buffer of another capacity is dropped).
func (p *bufferClasses) Put(b *[]byte) {
	if c, ok := p.class(cap(*b)); ok && cap(*b) == 1<<(c+minBufferShift) {
		p.classes[c].Put(b)
	}
}

var (
	_ encoding.CodecV2 = flightCodec{}
	_ mem.BufferPool   = (*bufferClasses)(nil)
)
