package serve

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/flight"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gpipe/gpipe/operators"
)

// TestBatchQueueBounded checks that a result's encoders build at most
// sendAhead batches each ahead of the sender, and one more for each batch
// the sender takes: a client that reads slowly holds a few batches, never
// the whole result.
func TestBatchQueueBounded(t *testing.T) {
	res := bfsResult(50_000)
	schema := res.Schema()
	const rows = 1000
	q := newBatchQueue(context.Background(), res, 50, rows, schema)
	defer q.stop()
	built := func() int {
		n := 0
		for _, d := range q.done {
			n += len(d)
		}
		return n
	}
	ahead := cap(q.tokens)
	waitFor(t, "the encoders to fill their window", func() bool { return built() == ahead })
	for i := 0; i < 5; i++ {
		msg, err := q.next(i)
		if err != nil || len(msg) == 0 {
			t.Fatalf("batch %d: %d bytes, %v", i, len(msg), err)
		}
		waitFor(t, "the encoders to build one more", func() bool { return built() == ahead })
	}
	if n := int(q.taken.Load()); n > 5+ahead+sendEncoders {
		t.Errorf("%d batches taken by the encoders with 5 sent, want at most %d", n, 5+ahead+sendEncoders)
	}
}

// TestResultBatchBytes checks that a result of long string keys comes in
// batches that a client with gRPC's default 4 MiB message limit takes.
func TestResultBatchBytes(t *testing.T) {
	ts := startServer(t, Config{})
	c, err := flight.NewClientWithMiddleware(ts.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// 20,000 vertices of 400-byte keys: 16 MB of vertex and parent keys.
	long := strings.Repeat("k", 396)
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.BinaryTypes.String}, {Name: "dst", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := 0; i < 20000; i++ {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("%s%04d", long, i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s%04d", long, (i+1)%20000))
	}
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	if _, err := put(ctx, c, pathDescriptor("long", map[string]any{"undirected": true}), schema, []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	res, err := get(ctx, c, map[string]any{"graph": "long", "op": "bfs", "source": long + "0000"})
	if err != nil {
		t.Fatal(err)
	}
	defer res.release()
	if res.rec.NumRows() != 20000 || res.batches < 4 {
		t.Errorf("%d rows in %d batches, want 20000 in at least 4", res.rec.NumRows(), res.batches)
	}
}

// TestIdenticalUnderConcurrency has 16 clients ask for the same BFS at
// once, each result streamed in many batches: every answer has the
// reference's vertices and depths, and parents on shortest paths.
func TestIdenticalUnderConcurrency(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	e := randomEdges(71, 5000, 40000, false)
	recs := e.records(false, 3)
	c := dial(t, ts.addr)
	if _, err := put(ctx, c, pathDescriptor("g", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	source := key(e.src[0], false)
	want := reference(t, recs, edgeOptions{}, "bfs", operators.Params{Source: source})
	defer want.Release()
	tree := newEdgeIndex(e, false, false)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := dial(t, ts.addr)
			for j := 0; j < 8; j++ {
				res, err := get(ctx, c, map[string]any{"graph": "g", "op": "bfs", "source": source, "batch_rows": 97 + i})
				if err != nil {
					errs <- err
					return
				}
				err = sameRecord(res.rec, want, tree)
				res.release()
				if err != nil {
					errs <- fmt.Errorf("client %d, query %d: %v", i, j, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCodec checks the server's codec: a FlightData decodes with its
// header, metadata and body pointing into the message, as proto would
// decode it; forms it does not take (an unknown field) go to proto; an
// encoded message passes as it is; and the receive buffers place a body
// on an 8-byte boundary once a message of the size has been seen.
func TestCodec(t *testing.T) {
	fd := &flight.FlightData{
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"g"}},
		DataHeader:       []byte("header"), AppMetadata: []byte("meta"), DataBody: bytes.Repeat([]byte{7}, 1000),
	}
	wire, err := proto.Marshal(fd)
	if err != nil {
		t.Fatal(err)
	}
	bufs := &alignedBuffers{}
	codec := flightCodec{bufs: bufs}
	got := &flight.FlightData{}
	if err := codec.Unmarshal(wire, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, fd) {
		t.Errorf("decoded %v, want %v", got, fd)
	}
	base := uintptr(unsafe.Pointer(&wire[0]))
	if p := uintptr(unsafe.Pointer(&got.DataBody[0])); p < base || p >= base+uintptr(len(wire)) {
		t.Error("the body was copied")
	}

	// An unknown field: proto's decoding, which keeps it.
	odd := protowire.AppendTag(bytes.Clone(wire), 17, protowire.BytesType)
	odd = protowire.AppendBytes(odd, []byte("x"))
	got = &flight.FlightData{}
	if err := codec.Unmarshal(odd, got); err != nil || !bytes.Equal(got.DataBody, fd.DataBody) || len(got.ProtoReflect().GetUnknown()) == 0 {
		t.Errorf("a message with an unknown field: %v, %v", got, err)
	}

	// Marshal: an encoded message as it is, anything else as proto.
	if b, err := codec.Marshal(encodedMessage(wire)); err != nil || &b[0] != &wire[0] {
		t.Errorf("an encoded message was not passed through: %v", err)
	}
	if b, err := codec.Marshal(fd); err != nil || !bytes.Equal(b, wire) {
		t.Errorf("Marshal of a FlightData: %v", err)
	}

	// The body of the next message of this size lands aligned.
	for i := 0; i < 3; i++ {
		buf := bufs.Get(len(wire))
		copy(buf, wire)
		got = &flight.FlightData{}
		if err := codec.Unmarshal(buf, got); err != nil {
			t.Fatal(err)
		}
		if uintptr(unsafe.Pointer(&got.DataBody[0]))%8 != 0 {
			t.Errorf("message %d: body at %p, not on an 8-byte boundary", i, &got.DataBody[0])
		}
	}
}
