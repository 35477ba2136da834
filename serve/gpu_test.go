package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
)

// TestGPUBackend serves queries from the GPU: a graph uploaded into pinned
// memory, BFS and PageRank from several clients at once on its device
// copy, sssp and cc on the vertex-program engine under auto and under gpu.
// It skips without a usable GPU, and fails instead with GPIPE_REQUIRE_GPU=1.
func TestGPUBackend(t *testing.T) {
	if _, err := pipeline.SharedGPU(); err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("no usable GPU: %v", err)
		}
		t.Skipf("no usable GPU: %v", err)
	}
	// The cost model would run this small graph's queries on the CPU; a
	// skewed one sends them to the GPU (TestGPUCostModelPerQuery: the
	// other way).
	ts := startServer(t, Config{Backend: "auto", model: cost.Skewed(runtime.GOMAXPROCS(0), "", 0, 1e6, 1e-6)})
	c := dial(t, ts.addr)
	ctx := context.Background()
	edges := randomEdges(51, 20000, 200000, true)
	recs := edges.records(false, 4)
	info, err := put(ctx, c, pathDescriptor("g", map[string]any{"undirected": true}), recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if info.Backend != "gpu" {
		t.Fatalf("put: backend %q (%s), want gpu", info.Backend, info.BackendNote)
	}
	if info.BuildDevice != "gpu" {
		t.Fatalf("put: built on %q (%s), want the gpu", info.BuildDevice, info.BuildReason)
	}
	tree := newEdgeIndex(edges, false, true)
	source := key(edges.src[0], false)
	bfs := reference(t, recs, edgeOptions{Undirected: true}, "bfs", operators.Params{Source: source})
	defer bfs.Release()
	pr := reference(t, recs, edgeOptions{Undirected: true}, "pagerank", operators.Params{})
	defer pr.Release()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if err := gpuQuery(ctx, c, (i+j)%2 == 0, source, bfs, pr, tree); err != nil {
					errs <- fmt.Errorf("client %d query %d: %v", i, j, err)
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
	// A query's GPU result is downloaded into pinned memory lent to it
	// (gpuop.PinnedResults, which service.run asks for), and each
	// DoGet and DoExchange gave it back once sent.
	gpuBackend, _ := pipeline.SharedGPU()
	if n := gpuBackend.LentPinnedBytes(); n != 0 {
		t.Errorf("%d bytes of pinned memory still lent to results after every DoGet", n)
	}
	if err := pinnedRun(ctx, ts.svc, source); err != nil {
		t.Error(err)
	}
	ex, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "bfs", "source": source, "undirected": true}), recs[0].Schema(), recs)
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if ex.meta.Backend != "gpu" {
		t.Errorf("exchange ran on %q, want the gpu", ex.meta.Backend)
	}
	if err := sameRecord(ex.rec, bfs, tree); err != nil {
		t.Errorf("exchange: %v", err)
	}
	ex.release()
	if n := gpuBackend.LentPinnedBytes(); n != 0 {
		t.Errorf("%d bytes of pinned memory still lent after a DoExchange", n)
	}

	// The graph was built on the GPU and its edges copied to the host:
	// with its device copies freed (as placement frees them to make room),
	// queries copy it there again and agree.
	sg, err := ts.svc.graphs.acquire("g")
	if err != nil {
		t.Fatal(err)
	}
	ts.svc.place.forget(sg.g.Graph)
	ts.svc.graphs.release(sg)
	for _, doBFS := range []bool{true, false} {
		if err := gpuQuery(ctx, c, doBFS, source, bfs, pr, tree); err != nil {
			t.Errorf("after the device copies were freed: %v", err)
		}
	}

	// sssp and cc run on the GPU's vertex-program engine, under auto and
	// under gpu, equal to the CPU (sssp's parents may differ where paths
	// tie, and must then be tight edges).
	sssp := reference(t, recs, edgeOptions{Undirected: true}, "sssp", operators.Params{Source: source})
	defer sssp.Release()
	cc := reference(t, recs, edgeOptions{Undirected: true}, "cc", operators.Params{})
	defer cc.Release()
	engineQueries := func(c flight.Client, backend string) {
		for _, q := range []struct {
			ticket map[string]any
			want   arrow.RecordBatch
		}{
			{map[string]any{"graph": "g", "op": "sssp", "source": source}, sssp},
			{map[string]any{"graph": "g", "op": "cc"}, cc},
		} {
			res, err := get(ctx, c, q.ticket)
			if err != nil {
				t.Errorf("%v under --backend %s: %v", q.ticket, backend, err)
				continue
			}
			if res.meta.Backend != "gpu" {
				t.Errorf("%v under --backend %s ran on %q, want the gpu", q.ticket, backend, res.meta.Backend)
			}
			if err := sameRecord(res.rec, q.want, tree); err != nil {
				t.Errorf("%v under --backend %s: %v", q.ticket, backend, err)
			}
			res.release()
		}
	}
	engineQueries(c, "auto")
	doAction(t, c, "drop", "g")

	only := startServer(t, Config{Backend: "gpu"})
	oc := dial(t, only.addr)
	if _, err := put(ctx, oc, pathDescriptor("g", map[string]any{"undirected": true}), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	engineQueries(oc, "gpu")

	// Each server loaded the GPU's kernels before it took calls
	// (placement.warm).
	for _, srv := range []*testServer{ts, only} {
		if logs := srv.logs.String(); !strings.Contains(logs, "GPU kernels loaded") {
			t.Errorf("the server did not log its kernels loaded; its log:\n%s", logs)
		}
	}
}

// TestGPUCostModelPerQuery: under auto the server asks the cost model per
// query, its GPU open: a model that finds the CPU cheaper runs the query
// there, saying so in backend_note, with the CPU's result.
func TestGPUCostModelPerQuery(t *testing.T) {
	if _, err := pipeline.SharedGPU(); err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("no usable GPU: %v", err)
		}
		t.Skipf("no usable GPU: %v", err)
	}
	ts := startServer(t, Config{Backend: "auto", model: cost.Skewed(runtime.GOMAXPROCS(0), "", 0, 1e-6, 1e6)})
	c := dial(t, ts.addr)
	ctx := context.Background()
	edges := randomEdges(52, 2000, 20000, true)
	recs := edges.records(false, 2)
	if _, err := put(ctx, c, pathDescriptor("g", map[string]any{"undirected": true}), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	tree := newEdgeIndex(edges, false, true)
	source := key(edges.src[0], false)
	want := reference(t, recs, edgeOptions{Undirected: true}, "bfs", operators.Params{Source: source})
	defer want.Release()
	res, err := get(ctx, c, map[string]any{"graph": "g", "op": "bfs", "source": source})
	if err != nil {
		t.Fatal(err)
	}
	defer res.release()
	if res.meta.Backend != "cpu" || !strings.Contains(res.meta.BackendNote, "cost model") {
		t.Errorf("ran on %q (%s), want the cpu by the cost model", res.meta.Backend, res.meta.BackendNote)
	}
	if err := sameRecord(res.rec, want, tree); err != nil {
		t.Error(err)
	}
}

// gpuQuery runs BFS (or PageRank) and checks that it ran on the GPU and
// agrees with the CPU: depths equal and parents valid; ranks within 1e-6
// in L1.
func gpuQuery(ctx context.Context, c flight.Client, doBFS bool, source string, bfs, pr arrow.RecordBatch, tree *edgeIndex) error {
	ticket := map[string]any{"graph": "g", "op": "pagerank"}
	if doBFS {
		ticket = map[string]any{"graph": "g", "op": "bfs", "source": source}
	}
	res, err := get(ctx, c, ticket)
	if err != nil {
		return err
	}
	defer res.release()
	if res.meta.Backend != "gpu" {
		return fmt.Errorf("%v ran on %q", ticket, res.meta.Backend)
	}
	if doBFS {
		return sameRecord(res.rec, bfs, tree)
	}
	if !res.rec.Schema().Equal(pr.Schema()) || !array.Equal(res.rec.Column(0), pr.Column(0)) {
		return fmt.Errorf("pagerank: schema or vertices differ")
	}
	got, want := res.rec.Column(1).(*array.Float64), pr.Column(1).(*array.Float64)
	var l1 float64
	for i := 0; i < got.Len(); i++ {
		l1 += math.Abs(got.Value(i) - want.Value(i))
	}
	if l1 > 1e-6 {
		return fmt.Errorf("pagerank: L1 distance %g from the CPU's ranks", l1)
	}
	return nil
}

// pinnedRun runs a bfs query on graph "g" as DoGet does (service.query)
// and checks that its columns are in pinned memory until it is released.
func pinnedRun(ctx context.Context, svc *service, source string) error {
	tkt, err := json.Marshal(map[string]any{"graph": "g", "op": "bfs", "source": source})
	if err != nil {
		return err
	}
	return svc.query(ctx, tkt, func(_ query, _ *storedGraph, res *pipeline.Result, _ string) error {
		depth, parent := res.Column("depth"), res.Column("parent")
		if !gpu.IsPinned(alloc.Bytes(depth.Int32)) || !gpu.IsPinned(depth.Valid) || !gpu.IsPinned(parent.Keys) {
			return fmt.Errorf("a GPU bfs run as DoGet runs it has columns outside pinned memory")
		}
		return nil
	})
}
