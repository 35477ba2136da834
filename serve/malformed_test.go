package serve

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Requests a client got wrong: protobuf the server cannot decode, and
// FlightData whose Arrow metadata is damaged. Both are the client's fault,
// so InvalidArgument, in words that show nothing of a panic or of arrow's
// insides.

// bytesCodec sends and receives messages as the bytes given: what a client
// that writes protobuf by hand (or badly) sends.
type bytesCodec struct{}

func (bytesCodec) Name() string { return "proto" }

func (bytesCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch v := v.(type) {
	case []byte:
		return mem.BufferSlice{mem.SliceBuffer(v)}, nil
	case proto.Message:
		b, err := proto.Marshal(v)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	return nil, fmt.Errorf("bytesCodec cannot marshal %T", v)
}

func (bytesCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if b, ok := v.(*[]byte); ok {
		*b = data.Materialize()
		return nil
	}
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

// bytesConn dials the server with bytesCodec.
func bytesConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(bytesCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// rawCall sends msgs on method (a streaming call when stream is set) and
// returns the call's status.
func rawCall(ctx context.Context, cc *grpc.ClientConn, method string, stream bool, msgs ...any) error {
	method = "/arrow.flight.protocol.FlightService/" + method
	if !stream {
		var out []byte
		return cc.Invoke(ctx, method, msgs[0], &out)
	}
	s, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := s.SendMsg(m); err != nil {
			break // the server answered already: its status follows
		}
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		var out []byte
		if err := s.RecvMsg(&out); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// internalWords are what an answer to a client's mistake must not show:
// a recovered panic, or arrow's and gRPC's insides.
var internalWords = []string{"runtime error", "index out of range", "slice bounds", "nil pointer", "panic", "goroutine", "arrow/", "grpc:"}

// wantClientFault fails the test unless err is InvalidArgument in a
// user's words.
func wantClientFault(t *testing.T, err error, what string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.InvalidArgument {
		t.Errorf("%s: %v, want InvalidArgument", what, err)
		return
	}
	for _, w := range internalWords {
		if strings.Contains(st.Message(), w) {
			t.Errorf("%s: the message shows %q: %s", what, w, st.Message())
		}
	}
}

// TestMalformedProtobuf sends every call a request that is not its
// protobuf message: truncated fields, a wire type that does not exist,
// invalid UTF-8 in a string field.
func TestMalformedProtobuf(t *testing.T) {
	ts := startServer(t, Config{})
	cc := bytesConn(t, ts.addr)
	ctx := context.Background()
	// Every method's request is decoded by the server but Handshake's
	// (the service has no handshake) and ListActions' (Empty).
	all := []string{"GetFlightInfo", "GetSchema", "PollFlightInfo", "DoGet", "DoAction", "ListFlights", "DoPut", "DoExchange"}
	cases := []struct {
		name    string
		msg     []byte
		methods []string
	}{
		{"a truncated field", []byte{0x12, 0x7f, 'a'}, all},
		{"wire type 7", []byte{0x0f, 0x01}, all},
		{"a truncated varint", []byte{0x08, 0xff}, all},
		// Fields 1 and 3: Action.type, FlightDescriptor.path and
		// FlightData.flight_descriptor (whose one byte is no field).
		{"invalid UTF-8 in a string", []byte{0x0a, 0x01, 0xff, 0x1a, 0x01, 0xff},
			[]string{"GetFlightInfo", "GetSchema", "PollFlightInfo", "DoAction", "DoPut", "DoExchange"}},
	}
	for _, c := range cases {
		for _, method := range c.methods {
			unary := strings.HasPrefix(method, "Get") || strings.HasPrefix(method, "Poll")
			err := rawCall(ctx, cc, method, !unary, c.msg)
			wantClientFault(t, err, method+" with "+c.name)
			if !strings.Contains(status.Convert(err).Message(), "the request is not a valid") {
				t.Errorf("%s with %s: %v", method, c.name, err)
			}
		}
	}
	// The server still serves, and logged the calls it saw as the client's
	// fault (the unary ones too).
	if _, err := put(ctx, dial(t, ts.addr), pathDescriptor("g", nil), table(map[string][]any{"src": {int64(1)}, "dst": {int64(2)}}, "src", "dst").Schema(),
		[]arrow.RecordBatch{table(map[string][]any{"src": {int64(1)}, "dst": {int64(2)}}, "src", "dst")}); err != nil {
		t.Fatal(err)
	}
	logs := ts.logs.String()
	if strings.Contains(logs, "level=ERROR") {
		t.Errorf("a client's malformed request was logged as a server fault:\n%s", logs)
	}
	if !strings.Contains(logs, "method=GetFlightInfo") || !strings.Contains(logs, "status=InvalidArgument") {
		t.Errorf("no log line for the malformed GetFlightInfo:\n%s", logs)
	}
}

// flightMessages is an upload's FlightData messages as a Flight writer
// makes them: the schema (with descriptor d), then the batches.
type flightMessages []*flight.FlightData

func (m *flightMessages) Send(fd *flight.FlightData) error {
	*m = append(*m, proto.Clone(fd).(*flight.FlightData))
	return nil
}

func uploadMessages(t *testing.T, d *flight.FlightDescriptor, recs []arrow.RecordBatch, opts ...ipc.Option) flightMessages {
	t.Helper()
	var m flightMessages
	w := flight.NewRecordWriter(&m, append([]ipc.Option{ipc.WithSchema(recs[0].Schema())}, opts...)...)
	w.SetFlightDescriptor(d)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return m
}

// dictionaryKeys is a batch whose keys are a dictionary of strings: arrow's
// reader reads it (its dictionary batch first), not AppendMessage.
func dictionaryKeys(t *testing.T) []arrow.RecordBatch {
	t.Helper()
	mem := memory.DefaultAllocator
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	var cols []arrow.Array
	for _, keys := range [][]string{{"a", "b", "c", "a"}, {"b", "c", "a", "c"}} {
		b := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
		for _, k := range keys {
			if err := b.AppendString(k); err != nil {
				t.Fatal(err)
			}
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: dt}, {Name: "dst", Type: dt}}, nil)
	return []arrow.RecordBatch{array.NewRecordBatch(schema, cols, 4)}
}

// TestDamagedFlightData sends uploads whose messages' Arrow metadata is
// damaged (bytes flipped, cut short, or replaced): each is refused with
// InvalidArgument in a user's words, or, where the damage leaves a valid
// batch, accepted. Never a server fault, never a panic's text.
func TestDamagedFlightData(t *testing.T) {
	ts := startServer(t, Config{})
	cc := bytesConn(t, ts.addr)
	ctx := context.Background()
	ints := randomEdges(9, 50, 200, true).records(false, 2)
	uploads := map[string]flightMessages{
		"int64 keys":      uploadMessages(t, cmdDescriptor(map[string]any{"op": "cc"}), ints),
		"dictionary keys": uploadMessages(t, cmdDescriptor(map[string]any{"op": "cc"}), dictionaryKeys(t)),
		"compressed":      uploadMessages(t, cmdDescriptor(map[string]any{"op": "cc"}), ints, ipc.WithZstd()),
	}
	send := func(msgs flightMessages) error {
		var out []any
		for _, m := range msgs {
			out = append(out, m)
		}
		return rawCall(ctx, cc, "DoExchange", true, out...)
	}
	rng := rand.New(rand.NewPCG(34, 7))
	for name, msgs := range uploads {
		if err := send(msgs); err != nil {
			t.Fatalf("%s, undamaged: %v", name, err)
		}
		for i := range msgs {
			header := msgs[i].DataHeader
			damaged := func(h []byte) flightMessages {
				out := make(flightMessages, len(msgs))
				copy(out, msgs)
				fd := proto.Clone(msgs[i]).(*flight.FlightData)
				fd.DataHeader = h
				out[i] = fd
				return out
			}
			what := fmt.Sprintf("%s, message %d", name, i)
			// The re-test's case: a header of four 0xFF bytes.
			wantClientFault(t, send(damaged([]byte{0xff, 0xff, 0xff, 0xff})), what+" as 0xFFFFFFFF")
			wantClientFault(t, send(damaged(header[:len(header)/2])), what+" cut in half")
			if i > 0 {
				wantClientFault(t, send(damaged(msgs[0].DataHeader)), what+" replaced by the schema")
			}
			for range 40 {
				h := append([]byte(nil), header...)
				at := rng.IntN(len(h))
				h[at] ^= byte(1 + rng.IntN(255))
				if err := send(damaged(h)); err != nil {
					wantClientFault(t, err, fmt.Sprintf("%s, byte %d flipped", what, at))
				}
			}
		}
	}
	if logs := ts.logs.String(); strings.Contains(logs, "level=ERROR") {
		t.Errorf("a damaged upload was logged as a server fault:\n%s", logs)
	}
}
