package serve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// loadGraph is a graph of the load test with the answers to its queries.
type loadGraph struct {
	name    string
	recs    []arrow.RecordBatch
	opts    edgeOptions
	str     bool
	tree    *edgeIndex
	queries []map[string]any
	answers []arrow.RecordBatch
}

// newLoadGraph puts together a graph and its expected answers: every
// operator from a few sources, computed with the library.
func newLoadGraph(t *testing.T, name string, seed uint64, n, m int, str, undirected bool) *loadGraph {
	edges := randomEdges(seed, n, m, true)
	lg := &loadGraph{name: name, recs: edges.records(str, 4), opts: edgeOptions{Undirected: undirected}, str: str,
		tree: newEdgeIndex(edges, str, undirected)}
	for _, src := range []int64{edges.src[0], edges.src[1], edges.dst[2]} {
		for _, q := range queries(key(src, str)) {
			if (q["op"] == "pagerank" || q["op"] == "cc") && src != edges.src[0] {
				continue // no source: once is enough
			}
			lg.queries = append(lg.queries, q)
			lg.answers = append(lg.answers, reference(t, lg.recs, lg.opts, q["op"].(string), paramsOf(t, q)))
		}
	}
	return lg
}

// ask runs query i on the graph and checks the answer.
func (lg *loadGraph) ask(ctx context.Context, c flight.Client, i int) error {
	ticket := map[string]any{"graph": lg.name}
	for k, v := range lg.queries[i] {
		ticket[k] = v
	}
	res, err := get(ctx, c, ticket)
	if err != nil {
		return err
	}
	defer res.release()
	if err := sameRecord(res.rec, lg.answers[i], lg.tree); err != nil {
		return fmt.Errorf("%v: %v", ticket, err)
	}
	return nil
}

func (lg *loadGraph) put(ctx context.Context, c flight.Client) (graphInfo, error) {
	return put(ctx, c, pathDescriptor(lg.name, lg.opts), lg.recs[0].Schema(), lg.recs)
}

// TestLoad runs 16 clients of 50 mixed queries each against two graphs
// while a third is put, queried and dropped over and over; checks every
// answer; and checks that afterwards no goroutine, reference, memory or
// job slot is left.
func TestLoad(t *testing.T) {
	started := time.Now()
	graphs := []*loadGraph{
		newLoadGraph(t, "ints", 11, 20000, 100000, false, false),
		newLoadGraph(t, "strings", 12, 10000, 50000, true, true),
	}
	churn := newLoadGraph(t, "churn", 13, 2000, 10000, false, true)
	setupTime := time.Since(started)

	ts := startServer(t, Config{MaxConcurrentJobs: 4})
	base := runtime.NumGoroutine()
	ctx := context.Background()
	setup := dial(t, ts.addr)
	var held int64
	for _, lg := range graphs {
		info, err := lg.put(ctx, setup)
		if err != nil {
			t.Fatal(err)
		}
		held += info.MemoryBytes
	}

	const clients, perClient = 16, 50
	var (
		wg          sync.WaitGroup
		answered    atomic.Int64
		churnMissed atomic.Int64
		cycles      atomic.Int64
		errs        = make(chan error, clients+1)
		conns       []flight.Client
	)
	for i := 0; i < clients; i++ {
		conns = append(conns, dial(t, ts.addr))
	}
	done := make(chan struct{})

	// The churn: put, query, drop, as long as the clients run.
	churnConn := dial(t, ts.addr)
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := churn.put(ctx, churnConn); err != nil {
				errs <- fmt.Errorf("churn put: %v", err)
				return
			}
			if err := churn.ask(ctx, churnConn, int(cycles.Load())%len(churn.queries)); err != nil {
				errs <- fmt.Errorf("churn query: %v", err)
				return
			}
			if _, err := action(ctx, churnConn, "drop", churn.name); err != nil {
				errs <- fmt.Errorf("churn drop: %v", err)
				return
			}
			cycles.Add(1)
		}
	}()

	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int, c flight.Client) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			for j := 0; j < perClient; j++ {
				var err error
				switch k := rng.IntN(20); {
				case k == 0: // the catalog
					_, err = c.GetFlightInfo(ctx, pathDescriptor(graphs[j%2].name, nil))
				case k <= 3: // the graph that comes and goes
					err = churn.ask(ctx, c, rng.IntN(len(churn.queries)))
					if status.Code(err) == codes.NotFound && strings.Contains(err.Error(), `graph "churn" does not exist`) {
						churnMissed.Add(1)
						err = nil
					}
				default:
					lg := graphs[rng.IntN(2)]
					err = lg.ask(ctx, c, rng.IntN(len(lg.queries)))
				}
				if err != nil {
					errs <- fmt.Errorf("client %d query %d: %v", i, j, err)
					return
				}
				answered.Add(1)
			}
		}(i, conns[i])
	}
	wg.Wait()
	close(done)
	<-churnDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if answered.Load() != clients*perClient || cycles.Load() == 0 {
		t.Fatalf("%d answers, %d churn cycles", answered.Load(), cycles.Load())
	}

	// Every client gone: nothing may be left of them.
	for _, c := range append(conns, churnConn, setup) {
		c.Close()
	}
	waitGoroutines(t, base)
	for _, lg := range graphs {
		if refs := ts.svc.graphs.refsOf(lg.name); refs != 1 {
			t.Errorf("graph %s has %d references, want 1", lg.name, refs)
		}
	}
	if used := ts.svc.mem.inUse(); used != held {
		t.Errorf("memory in use %d, want the two graphs' %d", used, held)
	}
	if n := ts.svc.jobs.running(); n != 0 {
		t.Errorf("%d job slots still taken", n)
	}
	t.Logf("%d queries from %d clients and %d churn cycles (%d queries found churn dropped) in %v, after %v of setup",
		answered.Load(), clients, cycles.Load(), churnMissed.Load(), time.Since(started)-setupTime, setupTime)
}

// slowGraph is a directed cycle of 20,000 vertices with one chord: the
// ranks are not uniform, yet PageRank's power iteration mixes over the
// cycle so slowly that, with damping close to 1, it runs for minutes
// (a random graph would converge in milliseconds).
func slowGraph() edgeList {
	const n = 20000
	var e edgeList
	for i := int64(0); i < n; i++ {
		e.src, e.dst = append(e.src, i), append(e.dst, (i+1)%n)
	}
	e.src, e.dst = append(e.src, 0), append(e.dst, n/2)
	return e
}

// slowPageRank is a query on slowGraph that runs until it is canceled (on
// a server without --max-iterations).
func slowPageRank(graph string) map[string]any {
	return map[string]any{"graph": graph, "op": "pagerank", "damping": 0.999999, "tolerance": 1e-300, "max_iterations": 1 << 30}
}

// TestCancelStopsWork checks that a client that goes away mid-call stops
// the work and leaves nothing behind: a DoGet canceled while the operator
// runs and while the result streams, a DoPut canceled mid-upload.
func TestCancelStopsWork(t *testing.T) {
	ts := startServer(t, Config{MaxConcurrentJobs: 1, MaxIterations: -1})
	base := runtime.NumGoroutine()
	c := dial(t, ts.addr)
	ctx := context.Background()
	recs := slowGraph().records(false, 2)
	info, err := put(ctx, c, pathDescriptor("g", nil), recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	used := info.MemoryBytes

	// While the operator runs.
	qctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := get(qctx, c, slowPageRank("g"))
		errc <- err
	}()
	waitFor(t, "the query to start", func() bool { return ts.svc.jobs.running() == 1 })
	time.Sleep(50 * time.Millisecond)
	cancel()
	wantCode(t, <-errc, codes.Canceled, "the canceled query")
	waitFor(t, "the computation to stop", func() bool { return ts.svc.jobs.running() == 0 && ts.svc.graphs.refsOf("g") == 1 })
	waitFor(t, "the call's log line", func() bool {
		return strings.Contains(ts.logs.String(), "method=DoGet graph=g op=pagerank rows=0")
	})
	if logs := ts.logs.String(); !strings.Contains(logs, "status=Canceled") {
		t.Errorf("no Canceled status in the log:\n%s", logs)
	}

	// While the result streams: 20,000 rows in batches of 1 row; the client
	// reads one and goes away.
	qctx, cancel = context.WithCancel(ctx)
	stream, err := c.DoGet(qctx, &flight.Ticket{Ticket: mustJSON(map[string]any{"graph": "g", "op": "cc", "batch_rows": 1})})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	cancel()
	for rdr.Next() {
	}
	rdr.Release()
	waitFor(t, "the stream to end", func() bool { return ts.svc.graphs.refsOf("g") == 1 })

	// Mid-upload: the client sends a batch and goes away; nothing is
	// stored, the memory and the name are free again.
	qctx, cancel = context.WithCancel(ctx)
	up, err := c.DoPut(qctx)
	if err != nil {
		t.Fatal(err)
	}
	w := flight.NewRecordWriter(up, ipc.WithSchema(recs[0].Schema()))
	w.SetFlightDescriptor(pathDescriptor("half", nil))
	if err := w.Write(recs[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the upload to start", func() bool { return ts.svc.mem.inUse() > used })
	cancel()
	waitFor(t, "the upload to be dropped", func() bool {
		ts.svc.graphs.mu.Lock()
		defer ts.svc.graphs.mu.Unlock()
		return len(ts.svc.graphs.pending) == 0 && ts.svc.mem.inUse() == used
	})
	if _, err := put(ctx, c, pathDescriptor("half", nil), recs[0].Schema(), recs[:1]); err != nil {
		t.Errorf("put under the name of a canceled upload: %v", err)
	}
	doAction(t, c, "drop", "half")

	// The server still answers, and nothing is left of the canceled calls.
	if r, err := get(ctx, c, map[string]any{"graph": "g", "op": "cc"}); err != nil {
		t.Fatal(err)
	} else {
		r.release()
	}
	c.Close()
	waitGoroutines(t, base)
}

// TestDropWhileQueried drops a graph that a query holds: the graph leaves
// the list at once, the query still gets its whole answer, and the memory
// is freed when the query ends.
func TestDropWhileQueried(t *testing.T) {
	ts := startServer(t, Config{MaxConcurrentJobs: 1, smallJobEdges: -1})
	c := dial(t, ts.addr)
	ctx := context.Background()
	edges := randomEdges(31, 300, 1200, true)
	recs := edges.records(true, 1)
	info, err := put(ctx, c, pathDescriptor("g", nil), recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	lg := &loadGraph{name: "g", recs: recs, str: true, tree: newEdgeIndex(edges, true, false),
		queries: []map[string]any{{"op": "sssp", "source": key(edges.src[0], true)}}}
	lg.answers = append(lg.answers, reference(t, recs, edgeOptions{}, "sssp", paramsOf(t, lg.queries[0])))

	// Hold the one job slot, so that the query waits holding the graph.
	release, err := ts.svc.jobs.acquire(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- lg.ask(ctx, c, 0) }()
	waitFor(t, "the query to take the graph", func() bool { return ts.svc.graphs.refsOf("g") == 2 })

	out := doAction(t, c, "drop", "g")
	if out["queries_running"] != 1.0 {
		t.Errorf("drop: %v, want 1 query running", out)
	}
	if got := listGraphs(t, c, ""); len(got) != 0 {
		t.Errorf("listed after the drop: %+v", got)
	}
	_, err = get(ctx, c, map[string]any{"graph": "g", "op": "cc"})
	wantCode(t, err, codes.NotFound, "a new query on the dropped graph")
	if used := ts.svc.mem.inUse(); used != info.MemoryBytes {
		t.Errorf("memory in use %d while the query runs, want the graph's %d", used, info.MemoryBytes)
	}

	release()
	if err := <-errc; err != nil {
		t.Fatalf("the query on the dropped graph: %v", err)
	}
	if used := ts.svc.mem.inUse(); used != 0 {
		t.Errorf("memory in use %d after the query, want 0", used)
	}
	// The name is free again.
	if _, err := lg.put(ctx, c); err != nil {
		t.Errorf("put after the drop: %v", err)
	}
}

// TestShutdown checks graceful shutdown: idle, it finishes at once; with a
// query that outlasts the deadline, the query is canceled, Serve returns
// nil, the graphs are freed and no goroutine is left.
func TestShutdown(t *testing.T) {
	base := runtime.NumGoroutine()
	ts := startServer(t, Config{MaxIterations: -1})
	c := dial(t, ts.addr)
	ctx := context.Background()
	recs := slowGraph().records(false, 1)
	if _, err := put(ctx, c, pathDescriptor("g", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := get(ctx, c, slowPageRank("g"))
		errc <- err
	}()
	waitFor(t, "the query to start", func() bool { return ts.svc.jobs.running() == 1 })

	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if forced := ts.Shutdown(sctx); !forced {
		t.Error("Shutdown with a running query was not forced")
	}
	if err := <-ts.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	ts.served = nil
	if err := <-errc; err == nil {
		t.Error("the query outlived the shutdown")
	}
	if used := ts.svc.mem.inUse(); used != 0 {
		t.Errorf("memory in use %d after shutdown", used)
	}
	c.Close()
	waitGoroutines(t, base)

	// Idle: nothing to wait for.
	idle := startServer(t, Config{})
	if forced := idle.Shutdown(ctx); forced {
		t.Error("Shutdown of an idle server was forced")
	}
	if err := <-idle.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	idle.served = nil
}
