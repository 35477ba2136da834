package gpuop

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/operators"
)

// TestResultRelease: a released result's memory serves the next result of
// the same size, and its columns are gone.
func TestResultRelease(t *testing.T) {
	const n = 12345
	m := &resultMem{}
	a := resultSlice[int32](m, n)
	r := &operators.Result{Columns: []operators.Column{{Name: "depth", Type: operators.Int32Column, Int32: a}}}
	r.OnRelease(m.release)
	a[7] = 42
	r.Release()
	if r.Columns != nil || m.recycle != nil {
		t.Fatalf("released result keeps %d columns, %d buffers", len(r.Columns), len(m.recycle))
	}
	// sync.Pool may drop what it holds at any time; reuse is likely, not
	// certain, so a miss only logs.
	b := resultSlice[int32](&resultMem{}, n)
	if len(b) != n {
		t.Fatalf("%d elements, want %d", len(b), n)
	}
	if &b[0] != &a[0] {
		t.Logf("the released memory was not reused (the pool was emptied)")
	}
	if got := resultSlice[uint32](&resultMem{}, 0); got != nil {
		t.Errorf("an empty column has memory")
	}
}

func TestResultClass(t *testing.T) {
	for _, c := range []struct{ bytes, class int }{
		{1, 4096}, {5000, 8192}, {1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {39_000_000, 38 << 20}, {64 << 20, 64 << 20},
	} {
		if got := resultClass(c.bytes); got != c.class {
			t.Errorf("resultClass(%d) = %d, want %d", c.bytes, got, c.class)
		}
	}
}

// TestResultLeaseOff: without PinnedResults a run has no lease, and no
// lease lends: results take Go memory.
func TestResultLeaseOff(t *testing.T) {
	if l := leaseFor(context.Background(), &GPU{}); l != nil {
		t.Fatalf("a lease without PinnedResults")
	}
	var l *resultLease
	if l.bytes(100) != nil {
		t.Fatalf("a nil lease lent memory")
	}
	l.release()
	l.abandon()
	m := newResultMem(context.Background(), &GPU{})
	if s := resultSlice[int64](m, 10); len(s) != 10 || len(m.recycle) != 1 || m.lease != nil {
		t.Fatalf("%d elements, %d recycled buffers: want 10 in Go memory", len(s), len(m.recycle))
	}
}

// TestGPUPinnedResults: under PinnedResults every GPU BFS strategy and
// PageRank download into pinned memory lent by the backend's pool (each
// column pinned, the values checked against the CPU's and the Arrow
// columns against the values), the pool lends nothing once the results
// are released, and a released result's memory serves the next run.
func TestGPUPinnedResults(t *testing.T) {
	b := testGPU(t)
	ctx := PinnedResults(context.Background())
	pinned := func(name string, bs ...[]byte) error {
		for i, s := range bs {
			if len(s) > 0 && !gpu.IsPinned(s) {
				return fmt.Errorf("%s: buffer %d of %d bytes not in pinned memory", name, i, len(s))
			}
		}
		return nil
	}
	for _, kt := range []edges.KeyType{edges.KeyInt64, edges.KeyString} {
		for _, s := range optest.GPUShapes(t) {
			g := optest.BuildGraph(t, s, false, false, kt)
			if g.NumVertices() == 0 {
				continue
			}
			src := optest.SourcesOf(g)[0]
			want := run(t, operators.BFS{}, g, src, operators.Params{}).Column("depth").Int32
			var before []byte
			for _, strategy := range []string{"enterprise", "bfs4k", "vwc"} {
				name := fmt.Sprintf("%s keys %v, %s", s.Name, kt, strategy)
				r, err := b.Run(ctx, operators.BFS{}, operators.Input{Graph: g, Source: src, Params: operators.Params{Strategy: strategy}})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				depth, parent := r.Column("depth"), r.Column("parent")
				if err := optest.ValidateBFS(g, src, depth.Int32, parent.Vertex, want); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if err := checkArrowColumns(g, r); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if err := pinned(name, alloc.Bytes(depth.Int32), alloc.Bytes(parent.Vertex), depth.Valid, parent.Valid, parent.Keys); err != nil {
					t.Error(err)
				}
				if b.LentPinnedBytes() == 0 {
					t.Errorf("%s: the pool lent nothing", name)
				}
				cols := [][]byte{alloc.Bytes(depth.Int32), alloc.Bytes(parent.Vertex), depth.Valid, parent.Valid, parent.Keys}
				if before != nil && !slices.ContainsFunc(cols, func(c []byte) bool { return len(c) > 0 && &c[0] == &before[0] }) {
					t.Errorf("%s: the released result's memory was not reused", name)
				}
				before = alloc.Bytes(depth.Int32)
				r.Release()
				if n := b.LentPinnedBytes(); n != 0 {
					t.Fatalf("%s: %d bytes still lent after Release", name, n)
				}
			}
			r, err := b.Run(ctx, operators.PageRank{}, operators.Input{Graph: g, Params: operators.Params{Damping: operators.DefaultDamping, Tolerance: operators.DefaultTolerance, MaxIterations: operators.DefaultMaxIterations}})
			if err != nil {
				t.Fatalf("%s pagerank: %v", s.Name, err)
			}
			ranks := r.Column("rank")
			cpu := run(t, operators.PageRank{}, g, 0, operators.Params{}).Column("rank").Float64
			var l1 float64
			for v, x := range ranks.Float64 {
				l1 += math.Abs(x - cpu[v])
			}
			if !(l1 <= 1e-6) {
				t.Errorf("%s pagerank: L1 distance to the CPU ranks %g > 1e-6", s.Name, l1)
			}
			if err := pinned(s.Name+" pagerank", alloc.Bytes(ranks.Float64), ranks.Valid); err != nil {
				t.Error(err)
			}
			r.Release()
			if n := b.LentPinnedBytes(); n != 0 {
				t.Fatalf("%s pagerank: %d bytes still lent after Release", s.Name, n)
			}
			b.Forget(g)
		}
	}
}

// TestGPUResultLeaseLimit: the pool lends results at most
// pinnedResultsMax, then a result's columns take Go memory; an abandoned
// lease gives its buffers back.
func TestGPUResultLeaseLimit(t *testing.T) {
	b := testGPU(t)
	ctx := PinnedResults(context.Background())
	full := leaseFor(ctx, b)
	if full.bytes(int(pinnedResultsMax)) == nil {
		t.Fatalf("the pool did not lend %d bytes", pinnedResultsMax)
	}
	m := newResultMem(ctx, b)
	if s := resultSlice[int32](m, 1000); gpu.IsPinned(alloc.Bytes(s)) || len(m.recycle) != 1 {
		t.Fatalf("a column past the pool's limit is in pinned memory")
	}
	full.abandon()
	if n := b.LentPinnedBytes(); n != 0 {
		t.Fatalf("%d bytes lent after the lease was abandoned", n)
	}
	if s := resultSlice[int32](m, 1000); !gpu.IsPinned(alloc.Bytes(s)) {
		t.Fatalf("a column under the limit is not in pinned memory")
	}
	m.release()
	if n := b.LentPinnedBytes(); n != 0 {
		t.Fatalf("%d bytes lent after Release", n)
	}
}

// TestGPUPinnedResultsMixed: with the pool lending less than a result
// needs, a GPU BFS's first columns are pinned and the others staged (in
// pieces of a page), and the result is still right.
func TestGPUPinnedResultsMixed(t *testing.T) {
	b := testGPU(t)
	b.tune.stageAll, b.tune.stageMax = true, 4096
	g := optest.BuildGraph(t, optest.Shape{Name: "k14", Edges: optest.KroneckerEdges(t, 14, 16, optest.FreshSeed(t))}, false, false, edges.KeyInt64)
	n := g.NumVertices()
	b.pins.lendMax = int64(resultClass(4 * n)) // the depths', then nothing
	src := optest.SourcesOf(g)[0]
	want := run(t, operators.BFS{}, g, src, operators.Params{}).Column("depth").Int32
	for _, strategy := range []string{"enterprise", "bfs4k", "vwc"} {
		r, err := b.Run(PinnedResults(context.Background()), operators.BFS{}, operators.Input{Graph: g, Source: src, Params: operators.Params{Strategy: strategy}})
		if err != nil {
			t.Fatalf("%s: %v", strategy, err)
		}
		depth, parent := r.Column("depth"), r.Column("parent")
		if !gpu.IsPinned(alloc.Bytes(depth.Int32)) || gpu.IsPinned(alloc.Bytes(parent.Vertex)) || gpu.IsPinned(parent.Keys) {
			t.Errorf("%s: want the depths alone in pinned memory", strategy)
		}
		if err := optest.ValidateBFS(g, src, depth.Int32, parent.Vertex, want); err != nil {
			t.Errorf("%s: %v", strategy, err)
		}
		if err := checkArrowColumns(g, r); err != nil {
			t.Errorf("%s: %v", strategy, err)
		}
		r.Release()
		if l := b.LentPinnedBytes(); l != 0 {
			t.Fatalf("%s: %d bytes lent after Release", strategy, l)
		}
	}
	b.Forget(g)
}

// lendThenFail is a strategy whose run takes pinned memory for its result
// and then fails.
var lendThenFail = &strategy{name: "fail", bytes: func(*GPU, *convert.Graph, operators.Params) int64 { return 0 },
	run: func(e *enactor) error {
		if s := column[int64](e, 1<<20); !gpu.IsPinned(alloc.Bytes(s)) {
			return fmt.Errorf("the run's column is not in pinned memory")
		}
		return errInjected
	}}

var errInjected = fmt.Errorf("injected failure")

// TestGPURunAbandonsLease: a GPU run that fails after its result took
// pinned memory leaves nothing lent.
func TestGPURunAbandonsLease(t *testing.T) {
	b := testGPU(t)
	g := optest.BuildGraph(t, optest.Shapes(t)[2], true, false, edges.KeyInt64)
	pl := b.newPlan("cc", lendThenFail, "a test", g, operators.Params{})
	_, err := pl.Run(PinnedResults(context.Background()), operators.CC{}, operators.Input{Graph: g})
	if err != errInjected {
		t.Fatalf("run: %v, want the injected failure", err)
	}
	if l := b.LentPinnedBytes(); l != 0 {
		t.Fatalf("%d bytes lent after the run failed", l)
	}
}
