package serve

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/gpipe/gpipe"
	"github.com/gpipe/gpipe/operators"
)

// TestGPUBackend serves queries from the GPU: a graph uploaded into pinned
// memory, BFS and PageRank from several clients at once on its device
// copy, an operator without GPU kernels falling back to the CPU under
// auto and refused under gpu. It skips without a usable GPU, and fails
// instead with GPIPE_REQUIRE_GPU=1.
func TestGPUBackend(t *testing.T) {
	if _, err := gpipe.SharedGPU(); err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("no usable GPU: %v", err)
		}
		t.Skipf("no usable GPU: %v", err)
	}
	ts := startServer(t, Config{Backend: "auto"})
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

	res, err := get(ctx, c, map[string]any{"graph": "g", "op": "sssp", "source": source})
	if err != nil {
		t.Fatal(err)
	}
	if res.meta.Backend != "cpu" {
		t.Errorf("sssp under auto ran on %q, want the cpu", res.meta.Backend)
	}
	res.release()
	doAction(t, c, "drop", "g")

	only := startServer(t, Config{Backend: "gpu"})
	oc := dial(t, only.addr)
	if _, err := put(ctx, oc, pathDescriptor("g", nil), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	_, err = get(ctx, oc, map[string]any{"graph": "g", "op": "sssp", "source": source})
	wantCode(t, err, codes.FailedPrecondition, "sssp under --backend gpu")
	wantMessage(t, err, "no GPU implementation", "--backend cpu")
}

// gpuQuery runs BFS (or PageRank) and checks that it ran on the GPU and
// agrees with the CPU: depths equal and parents valid; ranks within 1e-6
// in L1.
func gpuQuery(ctx context.Context, c flight.Client, doBFS bool, source string, bfs, pr arrow.Record, tree *edgeIndex) error {
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
