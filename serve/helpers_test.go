package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/ingest/arrowipc"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators"
)

// testServer is a server on a loopback port, stopped when the test ends.
type testServer struct {
	*Server
	addr   string
	logs   *syncBuffer
	served chan error
}

// startServer starts a server with cfg on 127.0.0.1. Tests run on the CPU
// backend, so that their results do not depend on the machine.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	return startServerWith(t, cfg, nil)
}

// startServerWith is startServer, calling setup (when not nil) on the
// server before it serves.
func startServerWith(t testing.TB, cfg Config, setup func(*Server)) *testServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if cfg.Backend == "" {
		cfg.Backend = "cpu"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(s)
	}
	ts := &testServer{Server: s, addr: lis.Addr().String(), logs: logs, served: make(chan error, 1)}
	go func() { ts.served <- s.Serve(lis) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop shuts the server down (once) and checks that Serve returned nil.
func (ts *testServer) stop(t testing.TB) {
	if ts.served == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ts.Shutdown(ctx)
	if err := <-ts.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	ts.served = nil
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dial connects a Flight client, closed when the test ends.
func dial(t testing.TB, addr string, opts ...grpc.DialOption) flight.Client {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	c, err := flight.NewClientWithMiddleware(addr, nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// withToken adds a bearer token to the calls made with ctx.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// edgeList is a generated edge table: keys as integers, written as int64
// or as strings "v<key>".
type edgeList struct {
	src, dst []int64
	weight   []float64 // nil: no weight column
}

// randomEdges draws m edges over n vertices with integer weights 1..9
// (integers, so that sums of path weights are exact whatever the order),
// with a few self loops and parallel edges, as inputs have.
func randomEdges(seed uint64, n, m int, weighted bool) edgeList {
	rng := rand.New(rand.NewPCG(seed, 7))
	var e edgeList
	for i := 0; i < m; i++ {
		u, v := rng.Int64N(int64(n)), rng.Int64N(int64(n))
		e.src, e.dst = append(e.src, u), append(e.dst, v)
		if weighted {
			e.weight = append(e.weight, float64(1+rng.IntN(9)))
		}
	}
	return e
}

// records writes the edges as nbatch record batches, keys as stringKeys
// says, in columns src, dst, weight.
func (e edgeList) records(stringKeys bool, nbatch int) []arrow.RecordBatch {
	mem := memory.DefaultAllocator
	kt := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if stringKeys {
		kt = arrow.BinaryTypes.String
	}
	fields := []arrow.Field{{Name: "src", Type: kt}, {Name: "dst", Type: kt}}
	if e.weight != nil {
		fields = append(fields, arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float64})
	}
	schema := arrow.NewSchema(fields, nil)
	var recs []arrow.RecordBatch
	m := len(e.src)
	for b := 0; b < nbatch; b++ {
		lo, hi := b*m/nbatch, (b+1)*m/nbatch
		rb := array.NewRecordBuilder(mem, schema)
		for i := lo; i < hi; i++ {
			for c, key := range []int64{e.src[i], e.dst[i]} {
				if stringKeys {
					rb.Field(c).(*array.StringBuilder).Append(fmt.Sprintf("v%d", key))
				} else {
					rb.Field(c).(*array.Int64Builder).Append(key)
				}
			}
			if e.weight != nil {
				rb.Field(2).(*array.Float64Builder).Append(e.weight[i])
			}
		}
		recs = append(recs, rb.NewRecordBatch())
		rb.Release()
	}
	return recs
}

// key is vertex k's key as a ticket's source.
func key(k int64, stringKeys bool) string {
	if stringKeys {
		return fmt.Sprintf("v%d", k)
	}
	return fmt.Sprint(k)
}

// pathDescriptor is a DoPut descriptor for graph name, with options (nil:
// none) in the command.
func pathDescriptor(name string, opts any) *flight.FlightDescriptor {
	d := &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{name}}
	if opts != nil {
		d.Cmd = mustJSON(opts)
	}
	return d
}

// cmdDescriptor is a descriptor holding opts as its JSON command.
func cmdDescriptor(opts any) *flight.FlightDescriptor {
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: mustJSON(opts)}
}

func mustJSON(v any) []byte {
	if b, ok := v.([]byte); ok {
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// put uploads recs (or only schema when recs is empty) and returns the put
// result's description of the graph.
func put(ctx context.Context, c flight.Client, d *flight.FlightDescriptor, schema *arrow.Schema, recs []arrow.RecordBatch) (graphInfo, error) {
	var info graphInfo
	stream, err := c.DoPut(ctx)
	if err != nil {
		return info, err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
	w.SetFlightDescriptor(d)
	for _, r := range recs {
		// A refused upload shows here as io.EOF; its status comes from Recv.
		if err := w.Write(r); err != nil {
			break
		}
	}
	w.Close()
	if err := stream.CloseSend(); err != nil {
		return info, err
	}
	res, err := stream.Recv()
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(res.AppMetadata, &info); err != nil {
		return info, fmt.Errorf("put result metadata %q: %v", res.AppMetadata, err)
	}
	// Read to the end, so that the call finishes cleanly.
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				return info, nil
			}
			return info, err
		}
	}
}

// result is a query's answer: its batches joined into one record.
type result struct {
	rec     arrow.RecordBatch
	meta    resultMeta
	batches int
}

func (r *result) release() {
	if r != nil && r.rec != nil {
		r.rec.Release()
	}
}

// get runs a DoGet with ticket (marshaled to JSON unless it is []byte).
func get(ctx context.Context, c flight.Client, ticket any) (*result, error) {
	stream, err := c.DoGet(ctx, &flight.Ticket{Ticket: mustJSON(ticket)})
	if err != nil {
		return nil, err
	}
	return readResult(stream)
}

// readResult reads a result stream to its end.
func readResult(stream flight.DataStreamReader) (*result, error) {
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		parts = append(parts, rec)
	}
	if err := rdr.Err(); err != nil {
		return nil, err
	}
	r := &result{batches: len(parts)}
	if v, ok := rdr.Schema().Metadata().GetValue(MetadataKey); ok {
		if err := json.Unmarshal([]byte(v), &r.meta); err != nil {
			return nil, err
		}
	}
	r.rec = concat(rdr.Schema(), parts)
	return r, nil
}

// concat joins records of one schema into one.
func concat(schema *arrow.Schema, parts []arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	for i := range cols {
		var arrs []arrow.Array
		for _, p := range parts {
			arrs = append(arrs, p.Column(i))
		}
		if len(arrs) == 0 {
			b := array.NewBuilder(memory.DefaultAllocator, schema.Field(i).Type)
			cols[i] = b.NewArray()
			b.Release()
			continue
		}
		var err error
		if cols[i], err = array.Concatenate(arrs, memory.DefaultAllocator); err != nil {
			panic(err)
		}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(schema.Fields(), nil), cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// exchange runs a DoExchange: sends recs with the descriptor, then reads
// the result.
func exchange(ctx context.Context, c flight.Client, d *flight.FlightDescriptor, schema *arrow.Schema, recs []arrow.RecordBatch) (*result, error) {
	stream, err := c.DoExchange(ctx)
	if err != nil {
		return nil, err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
	w.SetFlightDescriptor(d)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			break
		}
	}
	w.Close()
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	return readResult(stream)
}

// reference runs op on the edges with the library directly, as `gpipe run`
// does: weights read only when the operator uses them, checked by its
// rule, in-edges built when it reads them.
func reference(t testing.TB, recs []arrow.RecordBatch, eo edgeOptions, op string, p operators.Params) arrow.RecordBatch {
	t.Helper()
	o, err := operators.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	spec := o.Spec()
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	ctx := context.Background()
	tbl, err := arrowipc.ReadRecords(ctx, "reference", rdr, eo.ingestOptions(spec.Weighted))
	if err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Build(ctx, tbl, pipeline.LoadOptions{
		Undirected: eo.Undirected, SkipInvalid: eo.SkipInvalid, Weights: spec.Weights, BuildIn: spec.NeedsIn,
	})
	tbl.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	res, err := g.Run(ctx, op, p, operators.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Record(memory.DefaultAllocator)
}

// sameRecord says how got differs from want: column names, types and
// values (nulls included, floats exactly). Parents may differ where paths
// tie: a parent column is checked by tree (when not nil), which knows the
// graph's edges.
func sameRecord(got, want arrow.RecordBatch, tree ...*edgeIndex) error {
	if !got.Schema().Equal(want.Schema()) {
		return fmt.Errorf("schema %v, want %v", got.Schema(), want.Schema())
	}
	if got.NumRows() != want.NumRows() {
		return fmt.Errorf("%d rows, want %d", got.NumRows(), want.NumRows())
	}
	for i := 0; i < int(got.NumCols()); i++ {
		g, w := got.Column(i), want.Column(i)
		if array.Equal(g, w) {
			continue
		}
		var differ []int
		for r := 0; r < g.Len(); r++ {
			gv, wv := g.GetOneForMarshal(r), w.GetOneForMarshal(r)
			if gv == wv || bothNaN(g, w, r) {
				continue
			}
			if got.ColumnName(i) == "parent" && len(tree) > 0 && tree[0] != nil {
				differ = append(differ, r)
				continue
			}
			return fmt.Errorf("column %q row %d (vertex %v): %v, want %v", got.ColumnName(i), r,
				want.Column(0).GetOneForMarshal(r), gv, wv)
		}
		if len(differ) > 0 {
			if err := tree[0].checkParents(got, differ); err != nil {
				return err
			}
		}
	}
	return nil
}

// edgeIndex is a graph's edges by their keys as text, with the smallest
// weight of parallel edges, for checking the parents of shortest-path
// trees.
type edgeIndex struct {
	weight map[[2]string]float64
}

func newEdgeIndex(e edgeList, str, undirected bool) *edgeIndex {
	x := &edgeIndex{weight: map[[2]string]float64{}}
	add := func(u, v string, w float64) {
		if old, ok := x.weight[[2]string{u, v}]; !ok || w < old {
			x.weight[[2]string{u, v}] = w
		}
	}
	for i := range e.src {
		if e.src[i] == e.dst[i] {
			continue
		}
		w := 1.0
		if e.weight != nil {
			w = e.weight[i]
		}
		u, v := key(e.src[i], str), key(e.dst[i], str)
		add(u, v, w)
		if undirected {
			add(v, u, w)
		}
	}
	return x
}

// checkParents checks the parents of rows in a bfs or sssp result: each an
// edge parent→vertex on a shortest path (depth one less; distance less the
// edge's weight).
func (x *edgeIndex) checkParents(rec arrow.RecordBatch, rows []int) error {
	keyAt := func(row int) string { return fmt.Sprint(rec.Column(0).GetOneForMarshal(row)) }
	rowOf := make(map[string]int, rec.NumRows())
	for i := 0; i < int(rec.NumRows()); i++ {
		rowOf[keyAt(i)] = i
	}
	for _, r := range rows {
		v := keyAt(r)
		p := fmt.Sprint(rec.Column(2).GetOneForMarshal(r))
		prow, found := rowOf[p]
		w, ok := x.weight[[2]string{p, v}]
		if !found || !ok {
			return fmt.Errorf("vertex %s: parent %s is not an in-neighbour", v, p)
		}
		switch c := rec.Column(1).(type) {
		case *array.Int32: // bfs depth
			if c.Value(prow)+1 != c.Value(r) {
				return fmt.Errorf("vertex %s at depth %d: parent %s at depth %d", v, c.Value(r), p, c.Value(prow))
			}
		case *array.Float64: // sssp distance
			if c.Value(prow)+w != c.Value(r) {
				return fmt.Errorf("vertex %s at distance %v: parent %s at %v over an edge of %v", v, c.Value(r), p, c.Value(prow), w)
			}
		}
	}
	return nil
}

func bothNaN(g, w arrow.Array, r int) bool {
	gf, ok1 := g.(*array.Float64)
	wf, ok2 := w.(*array.Float64)
	return ok1 && ok2 && math.IsNaN(gf.Value(r)) && math.IsNaN(wf.Value(r))
}

// wantCode fails the test unless err is a status with code.
func wantCode(t testing.TB, err error, code codes.Code, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	if st, _ := status.FromError(err); st.Code() != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}

// wantMessage fails the test unless err's message holds every part.
func wantMessage(t testing.TB, err error, parts ...string) {
	t.Helper()
	msg := status.Convert(err).Message()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q lacks %q", msg, p)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message %q is more than one line", msg)
	}
}

// waitGoroutines waits (up to 10 s) for the goroutine count to come back
// to at most base, and fails with their stacks when it does not.
func waitGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d (baseline):\n%s", n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond (up to 10 s).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// appendHeader adds a header to the calls made with ctx.
func appendHeader(ctx context.Context, key, value string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, key, value)
}
