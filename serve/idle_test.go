package serve

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// testIdle is the idle timeout of these tests: short, so that they are
// quick. They wait for what the server frees, never for a time.
const testIdle = 200 * time.Millisecond

// stall sends the schema with descriptor d and one record batch on stream,
// then nothing: a client that stays connected and goes quiet.
func stall(t *testing.T, stream flight.DataStreamWriter, d *flight.FlightDescriptor, rec arrow.RecordBatch) {
	t.Helper()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
	w.SetFlightDescriptor(d)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
}

// pending is the number of uploads under way (names reserved).
func (ts *testServer) pending() int {
	r := ts.svc.graphs
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// TestStalledUploads checks --upload-idle-timeout: uploads whose clients
// send one batch and then nothing, staying connected, are abandoned. Each
// client gets DeadlineExceeded saying why, and the slots and memory they
// held come back, so that new uploads fit.
func TestStalledUploads(t *testing.T) {
	ts := startServer(t, Config{MaxGraphs: 4, UploadIdleTimeout: testIdle})
	c := dial(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs := randomEdges(5, 100, 1000, false).records(false, 2)
	stored, err := put(ctx, c, pathDescriptor("stored", nil), recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}

	// Each stalled call's next answer.
	var answers []func() error
	for i := 0; i < 3; i++ {
		stream, err := c.DoPut(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stall(t, stream, pathDescriptor(fmt.Sprint("stalled", i), nil), recs[0])
		answers = append(answers, func() error { _, err := stream.Recv(); return err })
	}
	ex, err := c.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stall(t, ex, cmdDescriptor(map[string]any{"op": "cc"}), recs[0])
	answers = append(answers, func() error { _, err := ex.Recv(); return err })

	for i, answer := range answers {
		err := answer()
		what := fmt.Sprint("stalled upload ", i)
		wantCode(t, err, codes.DeadlineExceeded, what)
		wantMessage(t, err, "the client sent nothing for 200ms", "--upload-idle-timeout", "nothing was stored")
	}
	// The calls have ended, and with them the uploads: nothing is held
	// but the stored graph.
	if n := ts.pending(); n != 0 {
		t.Errorf("%d uploads still hold a graph slot", n)
	}
	if used := ts.svc.mem.inUse(); used != stored.MemoryBytes {
		t.Errorf("memory in use %d, want the stored graph's %d", used, stored.MemoryBytes)
	}
	for i := 0; i < 3; i++ {
		if _, err := put(ctx, c, pathDescriptor(fmt.Sprint("new", i), nil), recs[0].Schema(), recs); err != nil {
			t.Errorf("an upload after the stalled ones: %v", err)
		}
	}
	if logs := ts.logs.String(); strings.Count(logs, "status=DeadlineExceeded") != 4 {
		t.Errorf("want 4 log lines with status=DeadlineExceeded:\n%s", logs)
	}
}

// TestGraphSlotsMessage checks that a put refused by --max-graphs counts the
// stored graphs and the uploads in progress apart, with a fix that fits.
func TestGraphSlotsMessage(t *testing.T) {
	ts := startServer(t, Config{MaxGraphs: 4, UploadIdleTimeout: -1})
	c := dial(t, ts.addr)
	ctx := context.Background()
	recs := randomEdges(5, 100, 1000, false).records(false, 1)
	if _, err := put(ctx, c, pathDescriptor("stored", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	stallCtx, stop := context.WithCancel(ctx)
	defer stop()
	for i := 0; i < 3; i++ {
		stream, err := c.DoPut(stallCtx)
		if err != nil {
			t.Fatal(err)
		}
		stall(t, stream, pathDescriptor(fmt.Sprint("stalled", i), nil), recs[0])
	}
	waitFor(t, "the three uploads to start", func() bool { return ts.pending() == 3 })
	_, err := put(ctx, c, pathDescriptor("fifth", nil), recs[0].Schema(), recs)
	wantCode(t, err, codes.ResourceExhausted, "a put with every slot taken")
	wantMessage(t, err, "4 of 4 graph slots taken (--max-graphs): 1 stored graph, 3 uploads in progress", "drop a graph, or wait for an upload to end")

	// The clients go away: their slots come back.
	stop()
	waitFor(t, "the canceled uploads to end", func() bool { return ts.pending() == 0 })
	if _, err := put(ctx, c, pathDescriptor("fifth", nil), recs[0].Schema(), recs); err != nil {
		t.Errorf("a put after the uploads ended: %v", err)
	}
}

// TestGraphSlotsFix checks the fix the --max-graphs message gives when only
// stored graphs, or only uploads, take the slots.
func TestGraphSlotsFix(t *testing.T) {
	r := newRegistry(2)
	for _, name := range []string{"a", "b"} {
		if err := r.reserve(name, false); err != nil {
			t.Fatal(err)
		}
	}
	err := toStatus(context.Background(), r.reserve("c", false))
	wantCode(t, err, codes.ResourceExhausted, "2 uploads")
	wantMessage(t, err, "2 of 2 graph slots taken (--max-graphs): 2 uploads in progress; wait for an upload to end")
	for _, name := range []string{"a", "b"} {
		if err := r.commit(&storedGraph{name: name, free: func() {}}); err != nil {
			t.Fatal(err)
		}
	}
	err = toStatus(context.Background(), r.reserve("c", false))
	wantCode(t, err, codes.ResourceExhausted, "2 graphs")
	wantMessage(t, err, "2 of 2 graph slots taken (--max-graphs): 2 stored graphs; drop a graph")
}

// stalledReaderClient dials a client whose flow-control windows stay at 64
// KiB, so that the server's Send waits as soon as about 128 KiB of a result
// is unread (by default gRPC grows the windows up to 16 MiB as it measures
// the connection).
func stalledReaderClient(t *testing.T, addr string) flight.Client {
	return dial(t, addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
}

// chain is a path of n vertices: its cc result (1.6 MB for 100,000) is
// much larger than the windows.
func chain(n int) []arrow.RecordBatch {
	var e edgeList
	for i := int64(0); i < int64(n)-1; i++ {
		e.src, e.dst = append(e.src, i), append(e.dst, i+1)
	}
	return e.records(false, 1)
}

// TestStalledResultReaders checks --result-idle-timeout: a DoGet or
// DoExchange whose client reads the first message and then stops is
// canceled, releasing its graph (a dropped graph's memory is freed) and its
// result while the client stays connected (so no message gRPC still holds
// for it may reference the result's memory), and the client, reading
// again, gets what was sent and then DeadlineExceeded.
func TestStalledResultReaders(t *testing.T) {
	ts := startServer(t, Config{ResultIdleTimeout: testIdle})
	var released atomic.Int64
	ts.svc.released = func() { released.Add(1) }
	c := stalledReaderClient(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs := chain(100000)
	if _, err := put(ctx, c, pathDescriptor("big", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}

	get, err := c.DoGet(ctx, &flight.Ticket{Ticket: mustJSON(map[string]any{"graph": "big", "op": "cc", "batch_rows": 1000})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get.Recv(); err != nil { // the schema: the query ran
		t.Fatal(err)
	}
	// Dropped, the graph lives on while the stalled query holds it.
	if out := doAction(t, c, "drop", "big"); out["queries_running"] != 1.0 {
		t.Fatalf("drop: %v, want 1 query running", out)
	}
	waitFor(t, "the stalled DoGet to release its graph", func() bool { return ts.svc.mem.inUse() == 0 })
	waitFor(t, "the stalled DoGet to release its result", func() bool { return released.Load() == 1 })
	wantStatusAfterDrain(t, get, "--result-idle-timeout")

	ex, err := c.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := flight.NewRecordWriter(ex, ipc.WithSchema(recs[0].Schema()))
	w.SetFlightDescriptor(cmdDescriptor(map[string]any{"op": "cc", "batch_rows": 1000}))
	if err := w.Write(recs[0]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := ex.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Recv(); err != nil { // the schema: the graph is built
		t.Fatal(err)
	}
	waitFor(t, "the stalled DoExchange to free its graph", func() bool { return ts.svc.mem.inUse() == 0 })
	waitFor(t, "the stalled DoExchange to release its result", func() bool { return released.Load() == 2 })
	wantStatusAfterDrain(t, ex, "--result-idle-timeout")

	// A bfs whose batches carry the result's own depths in 80 KB, as
	// large as a message could reference rather than copy.
	if _, err := put(ctx, c, pathDescriptor("path", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	bfs, err := c.DoGet(ctx, &flight.Ticket{Ticket: mustJSON(map[string]any{"graph": "path", "op": "bfs", "source": "0", "batch_rows": 20000})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bfs.Recv(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stalled bfs DoGet to release its result", func() bool { return released.Load() == 3 })
	wantStatusAfterDrain(t, bfs, "--result-idle-timeout")

	if logs := ts.logs.String(); strings.Count(logs, "status=DeadlineExceeded") != 3 {
		t.Errorf("want 3 log lines with status=DeadlineExceeded:\n%s", logs)
	}
}

// wantStatusAfterDrain reads a result stream to its end and checks that it
// ends with DeadlineExceeded saying parts, not with the whole result.
func wantStatusAfterDrain(t *testing.T, stream interface {
	Recv() (*flight.FlightData, error)
}, parts ...string) {
	t.Helper()
	for {
		_, err := stream.Recv()
		if err == io.EOF {
			t.Fatal("the whole result came: the server did not give up on the stalled reader")
		}
		if err != nil {
			wantCode(t, err, codes.DeadlineExceeded, "a stalled reader")
			wantMessage(t, err, parts...)
			return
		}
	}
}
