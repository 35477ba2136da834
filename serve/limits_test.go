package serve

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
)

// The limits that keep one client from taking the server: memory by
// default, the time of an upload and of a query, the iterations a query
// may ask for, and job slots kept for small jobs.

// TestDefaultLimits checks the limits a server takes without any set: the
// memory ones from the machine's memory (here a made-up one), the others
// fixed; and that a negative one is none.
func TestDefaultLimits(t *testing.T) {
	cfg := Config{MachineMemory: 8 << 30}
	if err := cfg.withDefaults(); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxMemoryBytes != 4<<30 || cfg.MaxUploadBytes != 1<<30 {
		t.Errorf("memory %d, upload %d; want half and an eighth of 8 GiB", cfg.MaxMemoryBytes, cfg.MaxUploadBytes)
	}
	if cfg.MaxQueryTime != DefaultMaxQueryTime || cfg.MaxUploadTime != DefaultMaxUploadTime || cfg.MaxIterations != DefaultMaxIterations {
		t.Errorf("query time %v, upload time %v, iterations %d", cfg.MaxQueryTime, cfg.MaxUploadTime, cfg.MaxIterations)
	}
	if room := cfg.messageRoom(); room != 80<<20 {
		t.Errorf("room for messages in flight %d, want 80 MiB", room)
	}
	set := Config{MachineMemory: 8 << 30, MaxMemoryBytes: 2 << 30}
	if err := set.withDefaults(); err != nil || set.MaxUploadBytes != 512<<20 {
		t.Errorf("with --max-memory-bytes 2GiB, the upload limit is %d, want a quarter", set.MaxUploadBytes)
	}
	none := Config{MachineMemory: 8 << 30, MaxMemoryBytes: -1, MaxQueryTime: -1}
	if err := none.withDefaults(); err != nil || none.MaxMemoryBytes >= 0 || none.MaxUploadBytes != 1<<30 || none.MaxQueryTime >= 0 {
		t.Errorf("with no memory limit: memory %d, upload %d, query time %v", none.MaxMemoryBytes, none.MaxUploadBytes, none.MaxQueryTime)
	}
}

// edgeBatches is n record batches of rows edges each, int64 keys: 16 bytes
// an edge.
func edgeBatches(n, rows int) []arrow.RecordBatch {
	var e edgeList
	for i := int64(0); i < int64(rows); i++ {
		e.src, e.dst = append(e.src, i), append(e.dst, (i*7+1)%int64(rows))
	}
	rec := e.records(false, 1)[0]
	recs := make([]arrow.RecordBatch, n)
	for i := range recs {
		recs[i] = rec
	}
	return recs
}

// uploadStream is a DoPut or DoExchange client stream: next reads its
// next answer.
type uploadStream struct {
	flight.DataStreamWriter
	closeSend func() error
	next      func() error
}

func putStream(s flight.FlightService_DoPutClient) uploadStream {
	return uploadStream{s, s.CloseSend, func() error { _, err := s.Recv(); return err }}
}

func exchangeStream(s flight.FlightService_DoExchangeClient) uploadStream {
	return uploadStream{s, s.CloseSend, func() error { _, err := s.Recv(); return err }}
}

// sendUntilRefused sends recs on stream (schema with descriptor d first),
// pausing pause between batches, until the server ends the call, and
// returns its status; nil when it took every batch and answered.
func sendUntilRefused(t *testing.T, stream uploadStream, d *flight.FlightDescriptor, recs []arrow.RecordBatch, pause time.Duration) error {
	t.Helper()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(recs[0].Schema()))
	w.SetFlightDescriptor(d)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			break // the server has ended the call
		}
		time.Sleep(pause)
	}
	w.Close()
	stream.closeSend()
	for {
		if err := stream.next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// TestEndlessExchange sends a DoExchange edges without end on a server
// whose limits are the defaults for a machine of 256 MiB: it is refused at
// the upload limit (32 MiB), with the server's memory in use back to none.
func TestEndlessExchange(t *testing.T) {
	ts := startServer(t, Config{MachineMemory: 256 << 20})
	c := dial(t, ts.addr)
	ctx := context.Background()
	ex, err := c.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 64 batches of 1 MiB: twice the limit, as good as endless.
	err = sendUntilRefused(t, exchangeStream(ex), cmdDescriptor(map[string]any{"op": "cc"}), edgeBatches(64, 1<<16), 0)
	wantCode(t, err, codes.ResourceExhausted, "an endless exchange")
	wantMessage(t, err, "--max-upload-bytes", "32 MiB", "nothing was stored")
	waitFor(t, "the exchange's memory to be freed", func() bool { return ts.svc.mem.inUse() == 0 })
}

// TestMessagesInFlight checks that uploads under way hold room for their
// messages in flight: with room for three, a fourth upload is refused
// before gRPC reads its batches, and fits once one ends.
func TestMessagesInFlight(t *testing.T) {
	cfg := Config{MaxMessageBytes: 1 << 20, MaxUploadBytes: -1, MaxGraphs: -1}
	room := cfg.messageRoom()
	cfg.MaxMemoryBytes = 3*room + room/2
	ts := startServer(t, cfg)
	c := dial(t, ts.addr)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	recs := randomEdges(5, 100, 1000, false).records(false, 1)
	for i := range 3 {
		stream, err := c.DoPut(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stall(t, stream, pathDescriptor(fmt.Sprint("stalled", i), nil), recs[0])
	}
	waitFor(t, "three uploads to start", func() bool { return ts.pending() == 3 })
	if used := ts.svc.mem.inUse(); used < 3*room {
		t.Errorf("memory in use %d with three uploads under way, want at least %d", used, 3*room)
	}
	_, err := put(context.Background(), c, pathDescriptor("fourth", nil), recs[0].Schema(), recs)
	wantCode(t, err, codes.ResourceExhausted, "a fourth upload")
	wantMessage(t, err, "--max-memory-bytes", "messages in flight", "--max-message-bytes 1 MiB")
	stop()
	waitFor(t, "the stalled uploads to end", func() bool { return ts.pending() == 0 })
	if _, err := put(context.Background(), c, pathDescriptor("fourth", nil), recs[0].Schema(), recs); err != nil {
		t.Errorf("an upload after the others ended: %v", err)
	}
}

// TestDripUpload checks --max-upload-time: a client that sends a one-row
// batch now and then, never pausing as long as the idle timeout, is let go
// when the upload's time is up.
func TestDripUpload(t *testing.T) {
	ts := startServer(t, Config{MaxUploadTime: 50 * time.Millisecond})
	c := dial(t, ts.addr)
	ctx := context.Background()
	stream, err := c.DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	drip := edgeBatches(2000, 1) // 10 s at 5 ms a batch: the upload's time is up long before
	err = sendUntilRefused(t, putStream(stream), pathDescriptor("drip", nil), drip, 5*time.Millisecond)
	wantCode(t, err, codes.DeadlineExceeded, "a drip upload")
	wantMessage(t, err, "did not end within 50ms", "--max-upload-time", "nothing was stored")
	waitFor(t, "the upload to end", func() bool { return ts.pending() == 0 && ts.svc.mem.inUse() == 0 })
}

// TestQueryTime checks --max-query-time: a query that runs past it is
// stopped with DeadlineExceeded saying so, and gives its slot back.
func TestQueryTime(t *testing.T) {
	ts := startServer(t, Config{MaxQueryTime: time.Millisecond, MaxIterations: -1})
	c := dial(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs := slowGraph().records(false, 1)
	if _, err := put(ctx, c, pathDescriptor("g", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	_, err := get(ctx, c, slowPageRank("g"))
	wantCode(t, err, codes.DeadlineExceeded, "a query past --max-query-time")
	wantMessage(t, err, "pagerank ran longer than the server's limit of 1ms (--max-query-time)", "tolerance")
	if n := ts.svc.jobs.running(); n != 0 {
		t.Errorf("%d job slots taken after the query ended", n)
	}
	if logs := ts.logs.String(); !strings.Contains(logs, "method=DoGet graph=g op=pagerank rows=0") || !strings.Contains(logs, "status=DeadlineExceeded") {
		t.Errorf("the log lacks the query's DeadlineExceeded:\n%s", logs)
	}
}

// TestIterationCeiling checks --max-iterations: a query asking for more is
// refused before it runs (on DoGet, DoExchange and GetFlightInfo), one
// asking for no more runs, and the operator's default is lowered to the
// ceiling where that is lower.
func TestIterationCeiling(t *testing.T) {
	ts := startServer(t, Config{MaxIterations: 20})
	c := dial(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // only a bound on a failing test
	defer cancel()
	recs := randomEdges(3, 100, 400, false).records(false, 1)
	if _, err := put(ctx, c, pathDescriptor("g", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	huge := map[string]any{"graph": "g", "op": "pagerank", "tolerance": 1e-300, "max_iterations": int64(9223372036854775807)}
	_, err := get(ctx, c, huge)
	wantCode(t, err, codes.ResourceExhausted, "DoGet over the ceiling")
	wantMessage(t, err, "max_iterations 9223372036854775807 is more than the server allows (--max-iterations 20)", "at most 20")
	_, err = c.GetFlightInfo(ctx, cmdDescriptor(huge))
	wantCode(t, err, codes.ResourceExhausted, "GetFlightInfo over the ceiling")
	_, err = exchange(ctx, c, cmdDescriptor(map[string]any{"op": "pagerank", "max_iterations": 21}), recs[0].Schema(), recs)
	wantCode(t, err, codes.ResourceExhausted, "DoExchange over the ceiling")

	for _, q := range []map[string]any{
		{"graph": "g", "op": "pagerank", "tolerance": 1e-300, "max_iterations": 20},
		{"graph": "g", "op": "pagerank", "tolerance": 1e-300}, // the default, 1000, lowered to 20
	} {
		res, err := get(ctx, c, q)
		if err != nil {
			t.Fatalf("%v: %v", q, err)
		}
		if res.meta.Iterations != 20 {
			t.Errorf("%v ran %d iterations, want 20", q, res.meta.Iterations)
		}
		res.release()
	}
}

// TestSmallQueryWhileLongRun checks the slots kept for small jobs: while
// four unbounded PageRank queries on a large graph hold every job slot, a
// cc on a small graph is answered, and the four are still running then.
func TestSmallQueryWhileLongRun(t *testing.T) {
	// slowGraph has 20,001 edges: large here.
	ts := startServer(t, Config{MaxConcurrentJobs: 4, MaxIterations: -1, smallJobEdges: 1000})
	c := dial(t, ts.addr)
	ctx := context.Background()
	big := slowGraph().records(false, 1)
	small := randomEdges(2, 100, 400, false).records(false, 1)
	if _, err := put(ctx, c, pathDescriptor("big", nil), big[0].Schema(), big); err != nil {
		t.Fatal(err)
	}
	if _, err := put(ctx, c, pathDescriptor("small", nil), small[0].Schema(), small); err != nil {
		t.Fatal(err)
	}
	long, stop := context.WithCancel(ctx)
	errc := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := get(long, c, slowPageRank("big"))
			errc <- err
		}()
	}
	waitFor(t, "the four long queries to start", func() bool { return ts.svc.jobs.running() == 4 })

	qctx, cancel := context.WithTimeout(ctx, 20*time.Second) // only a bound on a failing test
	defer cancel()
	res, err := get(qctx, c, map[string]any{"graph": "small", "op": "cc"})
	if err != nil {
		t.Fatalf("a small query while four long ones run: %v", err)
	}
	res.release()
	if n := len(ts.svc.jobs.all); n != 4 {
		t.Errorf("%d long queries running after the small one was answered, want 4", n)
	}
	stop()
	for range 4 {
		wantCode(t, <-errc, codes.Canceled, "a long query")
	}
	waitFor(t, "the long queries to stop", func() bool { return ts.svc.jobs.running() == 0 })
}

// TestBuildCounted checks that a graph being built counts in the memory
// limit: an upload whose table fits, but not its table and its graph, is
// refused before the build runs, saying so.
func TestBuildCounted(t *testing.T) {
	cfg := Config{MaxMessageBytes: 32 << 10, MaxUploadBytes: -1}
	recs := randomEdges(4, 1000, 20000, false).records(false, 20) // 20 batches of 16 KB
	cfg.MaxMemoryBytes = cfg.messageRoom() + 330<<10              // the table (313 KiB) fits, not twice it
	ts := startServer(t, cfg)
	c := dial(t, ts.addr)
	_, err := put(context.Background(), c, pathDescriptor("g", nil), recs[0].Schema(), recs)
	wantCode(t, err, codes.ResourceExhausted, "a put whose build does not fit")
	wantMessage(t, err, "--max-memory-bytes", "for the graph being built")
	if strings.Contains(ts.logs.String(), "build_s=") {
		t.Errorf("the build ran:\n%s", ts.logs.String())
	}
	if used := ts.svc.mem.inUse(); used != 0 {
		t.Errorf("memory in use %d after the refusal", used)
	}
}
