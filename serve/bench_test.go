package serve

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators"
)

// The server's own cost of a result and of an upload, without the network:
// what a DoGet of BFS on Kronecker 22 sends (2,395,814 rows of int64
// vertex, int32 depth, int64 parent), and what a DoPut of 8 M edges in
// batches of 1 M rows receives, as gRPC hands the messages over. The
// numbers, before and after issue 17, are in BENCHMARKS.md:
//
//	go test ./serve -run XXX -bench 'SendResult|Receive' -count 6

// bfsResult is a result shaped as BFS's on Kronecker 22: random int64 keys,
// depths 0..8 with 1% unreached, random parents.
func bfsResult(n int) *pipeline.Result {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = rng.Int64N(1 << 40)
	}
	slices.Sort(keys)
	depth := make([]int32, n)
	parent := make([]uint32, n)
	for i := range depth {
		depth[i], parent[i] = int32(rng.IntN(9)), uint32(rng.IntN(n))
		if rng.IntN(100) == 0 {
			depth[i], parent[i] = -1, convert.NoVertex
		}
	}
	g := &convert.Graph{
		Out:  convert.CSR{Offsets: make([]int64, n+1)},
		Keys: &convert.VertexKeys{Type: edges.KeyInt64, ArrowType: arrow.PrimitiveTypes.Int64, Int64: keys},
	}
	return &pipeline.Result{Graph: &pipeline.Graph{Graph: g}, Result: &operators.Result{
		Op: "bfs", Backend: "cpu",
		Columns: []operators.Column{
			{Name: "depth", Type: operators.Int32Column, Int32: depth},
			{Name: "parent", Type: operators.VertexColumn, Vertex: parent},
		},
	}}
}

// discard is a call's stream that marshals each message as gRPC would,
// and drops it.
type discard struct{ bytes int64 }

func (d *discard) SendMsg(m any) error {
	b, err := flightCodec{}.Marshal(m)
	d.bytes += int64(b.Len())
	b.Free()
	return err
}

// bfsK22 is bfsResult(2395814), made once.
var bfsK22 = sync.OnceValue(func() *pipeline.Result { return bfsResult(2395814) })

// bfsK22Device is bfsK22 with the columns a GPU run makes in Arrow's layout
// (operators.Column's Keys and Valid: parents mapped, validity bitmaps).
var bfsK22Device = sync.OnceValue(func() *pipeline.Result {
	res := bfsK22()
	depth, parent := res.Columns[0], res.Columns[1]
	keys := res.Graph.Keys.Int64
	n := len(depth.Int32)
	depth.Valid, parent.Valid = make([]byte, 4*((n+31)/32)), make([]byte, 4*((n+31)/32))
	parent.Keys = make([]byte, 8*n)
	for i := 0; i < n; i++ {
		if depth.Int32[i] >= 0 {
			depth.Valid[i/8] |= 1 << (i % 8)
		}
		if id := parent.Vertex[i]; id != convert.NoVertex {
			parent.Valid[i/8] |= 1 << (i % 8)
			binary.LittleEndian.PutUint64(parent.Keys[8*i:], uint64(keys[id]))
		}
	}
	out := *res.Result
	out.Columns = []operators.Column{depth, parent}
	return &pipeline.Result{Graph: res.Graph, Result: &out}
})

// prK22 is a result shaped as PageRank's on Kronecker 22 (bfsK22's keys,
// a float64 rank a vertex), its validity bitmap made from the ranks on the
// host (valid false) or the run's (valid true: a GPU run's whose ranks are
// all numbers).
func prK22(valid bool) *pipeline.Result {
	res := bfsK22()
	n := res.Graph.NumVertices()
	rng := rand.New(rand.NewPCG(3, 4))
	rank := operators.Column{Name: "rank", Type: operators.Float64Column, Float64: make([]float64, n)}
	for i := range rank.Float64 {
		rank.Float64[i] = rng.Float64() / float64(n)
	}
	if valid {
		rank.Valid = make([]byte, 4*((n+31)/32))
		for i := 0; i < n; i++ {
			rank.Valid[i/8] |= 1 << (i % 8)
		}
	}
	return &pipeline.Result{Graph: res.Graph, Result: &operators.Result{Op: "pagerank", Backend: "gpu", Columns: []operators.Column{rank}}}
}

func BenchmarkSendResult(b *testing.B) {
	b.Run("host", func(b *testing.B) { benchSendResult(b, bfsK22()) })
	b.Run("device", func(b *testing.B) { benchSendResult(b, bfsK22Device()) })
	b.Run("pagerank-host", func(b *testing.B) { benchSendResult(b, prK22(false)) })
	b.Run("pagerank-device", func(b *testing.B) { benchSendResult(b, prK22(true)) })
}

func benchSendResult(b *testing.B, res *pipeline.Result) {
	s := &service{cfg: Config{BatchRows: DefaultBatchRows, ResultIdleTimeout: -1}}
	d := &discard{}
	if err := s.sendResult(context.Background(), d, res, 0, resultMeta{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(d.bytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.sendResult(context.Background(), &discard{}, res, 0, resultMeta{}); err != nil {
			b.Fatal(err)
		}
	}
}

// wireMessages is an upload as gRPC receives it: the FlightData messages of
// m random int64 edges in batches of batchRows rows, marshaled.
func wireMessages(m, batchRows int) [][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var out [][]byte
	send := sendFunc(func(fd *flight.FlightData) error {
		b, err := proto.Marshal(fd)
		out = append(out, b)
		return err
	})
	w := flight.NewRecordWriter(send, ipc.WithSchema(schema))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"g"}})
	for lo := 0; lo < m; lo += batchRows {
		n := min(batchRows, m-lo)
		src, dst := make([]int64, n), make([]int64, n)
		for i := range src {
			src[i], dst[i] = rng.Int64N(1<<22), rng.Int64N(1<<22)
		}
		sa, da := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
		sa.AppendValues(src, nil)
		da.AppendValues(dst, nil)
		cols := []arrow.Array{sa.NewArray(), da.NewArray()}
		rec := array.NewRecordBatch(schema, cols, int64(n))
		if err := w.Write(rec); err != nil {
			panic(err)
		}
		rec.Release()
	}
	w.Close()
	return out
}

type sendFunc func(*flight.FlightData) error

func (f sendFunc) Send(fd *flight.FlightData) error { return f(fd) }

// wireStream delivers marshaled messages as gRPC does: each in the 16 KiB
// buffers of the HTTP/2 frames it came in, decoded by the codec.
type wireStream struct {
	msgs [][]byte
}

func (w *wireStream) Recv() (*flight.FlightData, error) {
	if len(w.msgs) == 0 {
		return nil, io.EOF
	}
	data := frames(w.msgs[0], 5) // after gRPC's 5-byte message prefix
	w.msgs = w.msgs[1:]
	fd := &flight.FlightData{}
	return fd, flightCodec{}.Unmarshal(data, fd)
}

// frames cuts a message into the pieces gRPC hands a codec: 16 KiB frames,
// the first cut short by the skip bytes before the message.
func frames(msg []byte, skip int) mem.BufferSlice {
	var out mem.BufferSlice
	for n := 16<<10 - skip; len(msg) > 0; n = 16 << 10 {
		n = min(n, len(msg))
		out = append(out, mem.SliceBuffer(msg[:n]))
		msg = msg[n:]
	}
	return out
}

// upload8M is wireMessages(8 M edges, batches of 1 M), made once.
var upload8M = sync.OnceValue(func() [][]byte { return wireMessages(8<<20, 1<<20) })

func BenchmarkReceive(b *testing.B) {
	msgs := upload8M()
	var size int64
	for _, m := range msgs {
		size += int64(len(m))
	}
	s := &service{cfg: Config{UploadIdleTimeout: -1}, mem: &budget{}}
	s.backend, _ = pipeline.OpenBackend("cpu")
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		up, err := s.openUpload(&wireStream{msgs: msgs}, "the upload")
		if err != nil {
			b.Fatal(err)
		}
		t, held, err := s.receive(context.Background(), up, "graph g", edges.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if t.RowsRead != 8<<20 {
			b.Fatalf("%d rows", t.RowsRead)
		}
		t.Release()
		s.mem.release(held)
		up.release()
	}
}

// BenchmarkFlightLoopback is a DoPut of 2 M edges and a DoGet of BFS on the
// graph (200,000 rows of vertex, depth and parent) between a Go client and
// the server on loopback, everything in this process: client and server
// together, as instructions (callgrind) or time.
func BenchmarkFlightLoopback(b *testing.B) {
	e := randomEdges(81, 200_000, 2_000_000, false)
	recs := e.records(false, 4)
	ts := startServer(b, Config{})
	c := dial(b, ts.addr)
	ctx := context.Background()
	b.Run("DoPut", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := put(ctx, c, pathDescriptor("up", map[string]any{"replace": true}), recs[0].Schema(), recs); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := put(ctx, c, pathDescriptor("g", nil), recs[0].Schema(), recs); err != nil {
		b.Fatal(err)
	}
	ticket := map[string]any{"graph": "g", "op": "bfs", "source": key(e.src[0], false)}
	b.Run("DoGet", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := get(ctx, c, ticket)
			if err != nil {
				b.Fatal(err)
			}
			res.release()
		}
	})
}
