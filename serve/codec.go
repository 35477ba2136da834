package serve

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
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
// reader. Here a result's batch is written once, straight into the message
// gRPC sends (encodedMessage), and an upload's header and body are slices
// of the message gRPC received.
//
// Aliasing the received message is safe because gRPC (v1.63) takes each
// message's buffer from the server's RecvBufferPool, alignedBuffers, which
// never gives one out twice.

// flightCodec is protobuf with the two shortcuts above. Its name is
// "proto", the content subtype every Flight client sends. It tells bufs
// where the bodies of the messages it decodes lie.
type flightCodec struct {
	bufs *alignedBuffers
}

func (flightCodec) Name() string { return "proto" }

// encodedMessage is a message already in its wire form.
type encodedMessage []byte

func (flightCodec) Marshal(v any) ([]byte, error) {
	if m, ok := v.(encodedMessage); ok {
		return m, nil
	}
	m := messageOf(v)
	if m == nil {
		return nil, fmt.Errorf("cannot marshal %T: not a protobuf message", v)
	}
	return proto.Marshal(m)
}

func (c flightCodec) Unmarshal(data []byte, v any) error {
	if fd, ok := v.(*flight.FlightData); ok {
		if aliasFlightData(data, fd) {
			if c.bufs != nil {
				c.bufs.note(data, fd.DataBody)
			}
			return nil
		}
	}
	m := messageOf(v)
	if m == nil {
		return fmt.Errorf("cannot unmarshal into %T: not a protobuf message", v)
	}
	return proto.Unmarshal(data, m)
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

// alignedBuffers is the server's receive buffer pool (grpc.RecvBufferPool).
// It never gives a buffer out twice (Put drops it), so that decoded
// messages may point into their buffers, and it places each buffer so that
// a FlightData's body starts on an 8-byte boundary: the Arrow buffers in a
// body are aligned to its start, and an upload views its key columns in
// place only where they are aligned for their type (else it copies them).
// Where a body starts depends on the lengths of the fields before it, the
// same in every batch of an upload but the last; so the guess for a
// message is where the body began in the last message of its size.
type alignedBuffers struct {
	// offsets holds, by message size modulo its length, the last such
	// message's size and the body's offset in it modulo 8: size<<3 | offset.
	offsets [64]atomic.Uint64
}

func (p *alignedBuffers) Get(n int) []byte {
	var off uintptr
	if e := p.offsets[n%len(p.offsets)].Load(); e>>3 == uint64(n) {
		off = uintptr(e & 7)
	}
	b := make([]byte, n+7)
	pad := int((8 - (uintptr(unsafe.Pointer(unsafe.SliceData(b)))+off)%8) % 8)
	return b[pad : pad+n : pad+n]
}

// Put drops the buffer: a decoded message may still point into it.
func (p *alignedBuffers) Put(*[]byte) {}

// note records where body lies in msg, for the next message of its size.
func (p *alignedBuffers) note(msg, body []byte) {
	if len(body) == 0 || len(msg) == 0 {
		return
	}
	off := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(body))) - uintptr(unsafe.Pointer(unsafe.SliceData(msg))))
	p.offsets[len(msg)%len(p.offsets)].Store(uint64(len(msg))<<3 | off&7)
}

var (
	_ encoding.Codec        = flightCodec{}
	_ grpc.SharedBufferPool = (*alignedBuffers)(nil)
)
