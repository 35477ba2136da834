package serve

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if len(msg.bytes()) == 0 {
			t.Fatalf("batch %d: an empty message", i)
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
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	if _, err := put(ctx, c, pathDescriptor("long", map[string]any{"undirected": true}), schema, []arrow.RecordBatch{rec}); err != nil {
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

// TestCodec checks the server's codec: a FlightData, in the frame buffers
// gRPC hands over, decodes with its header, metadata and body pointing into
// one buffer of its own, the body on an 8-byte boundary, as proto would
// decode it; forms it does not take (an unknown field) go to proto; an
// encoded message passes as it is, its buffer handed back to the pool when
// gRPC frees it.
func TestCodec(t *testing.T) {
	fd := &flight.FlightData{
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"g"}},
		DataHeader:       []byte("header"), AppMetadata: []byte("meta"), DataBody: bytes.Repeat([]byte{7}, 40000),
	}
	wire, err := proto.Marshal(fd)
	if err != nil {
		t.Fatal(err)
	}
	codec := flightCodec{}
	// Frames cut at every place, so that the fields before the body span
	// buffers too.
	for _, skip := range []int{0, 1, 5, 16<<10 - 3, 16<<10 - 20} {
		data := frames(wire, skip)
		got := &flight.FlightData{}
		if err := codec.Unmarshal(data, got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, fd) {
			t.Fatalf("frames from %d: decoded %v, want %v", skip, got, fd)
		}
		if uintptr(unsafe.Pointer(&got.DataBody[0]))%8 != 0 {
			t.Errorf("frames from %d: body at %p, not on an 8-byte boundary", skip, &got.DataBody[0])
		}
		if &got.DataHeader[0] == &wire[bytes.Index(wire, []byte("header"))] {
			t.Errorf("frames from %d: the header points into gRPC's buffer, which gRPC reuses", skip)
		}
		if off := uintptr(unsafe.Pointer(&got.DataBody[0])) - uintptr(unsafe.Pointer(&got.DataHeader[0])); off != uintptr(bytes.Index(wire, fd.DataBody)-bytes.Index(wire, []byte("header"))) {
			t.Errorf("frames from %d: the header and the body are not in one buffer", skip)
		}
	}

	// An unknown field: proto's decoding, which keeps it.
	odd := protowire.AppendTag(bytes.Clone(wire), 17, protowire.BytesType)
	odd = protowire.AppendBytes(odd, []byte("x"))
	got := &flight.FlightData{}
	if err := codec.Unmarshal(frames(odd, 0), got); err != nil || !bytes.Equal(got.DataBody, fd.DataBody) || len(got.ProtoReflect().GetUnknown()) == 0 {
		t.Errorf("a message with an unknown field: %v, %v", got, err)
	}

	// Marshal: an encoded message as it is, anything else as proto.
	buf := serverBuffers.Get(len(wire))
	copy(*buf, wire)
	b, err := codec.Marshal(encodedMessage{buf})
	if err != nil || len(b) != 1 || &b[0].ReadOnlyData()[0] != &(*buf)[0] {
		t.Errorf("an encoded message was not passed through: %v", err)
	}
	b.Free()
	if again := serverBuffers.Get(len(wire)); cap(*again) != cap(*buf) {
		t.Errorf("a buffer of %d bytes came from the pool for %d", cap(*again), len(wire))
	}
	if b, err := codec.Marshal(fd); err != nil || !bytes.Equal(b.Materialize(), wire) {
		t.Errorf("Marshal of a FlightData: %v", err)
	}
}

// TestBufferClasses checks the server's buffer pool: a buffer of the asked
// length, of a power-of-two capacity of at least 1 KiB up to 64 MiB, and
// exactly sized past that (not pooled).
func TestBufferClasses(t *testing.T) {
	p := &bufferClasses{}
	for _, n := range []int{1, 100, 1 << 10, 16 << 10, 64 << 10, 64<<10 + 1, 1 << 20, 3 << 20, 64 << 20, 64<<20 + 1} {
		b := p.Get(n)
		want := max(1<<10, 1<<bits.Len(uint(n-1)))
		if n > 64<<20 {
			want = n
		}
		if len(*b) != n || cap(*b) != want {
			t.Errorf("Get(%d): len %d cap %d, want cap %d", n, len(*b), cap(*b), want)
		}
		p.Put(b)
	}
}

// TestRecyclerRows checks that a result's batches made in a recycler whose
// buffers hold garbage (as reused ones do: they are not cleared) equal the
// batches made in fresh Go memory, nulls included.
func TestRecyclerRows(t *testing.T) {
	res := bfsResult(10_000)
	r := &recycler{}
	poisoned := func() {
		for i := 0; i < recyclerKeeps; i++ {
			b := alignedBytes(64 << 10)
			for j := range b {
				b[j] = 0xa5
			}
			r.Free(b)
		}
	}
	for lo := 0; lo < 10_000; lo += 3000 {
		hi := min(lo+3000, 10_000)
		poisoned()
		got := res.Rows(r, lo, hi)
		want := res.Rows(memory.DefaultAllocator, lo, hi)
		if !array.RecordEqual(got, want) {
			t.Fatalf("rows [%d, %d) from a poisoned recycler differ from fresh memory", lo, hi)
		}
		if got.Column(2).NullN() == 0 {
			t.Fatalf("rows [%d, %d): no null parents; the test needs some", lo, hi)
		}
		got.Release()
		want.Release()
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(r.Allocate(100))))%64 != 0 {
		t.Error("a recycler's buffer is not 64-byte aligned")
	}
}
