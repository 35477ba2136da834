package operators

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
)

func TestPinnedClass(t *testing.T) {
	for _, c := range []struct{ bytes, class int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {3 << 20, 4 << 20}, {4 << 20, 4 << 20},
	} {
		if got := pinnedClass(c.bytes); got != c.class {
			t.Errorf("pinnedClass(%d) = %d, want %d", c.bytes, got, c.class)
		}
	}
}

// TestCopyParallel copies lengths around the pieces' size, each byte
// checked, into destinations filled with another pattern first.
func TestCopyParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, copyPiece - 1, copyPiece, copyPiece + 1, 7*copyPiece + 12345} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		dst := bytes.Repeat([]byte{0xa5}, n+3)
		copyParallel(dst[:n], src)
		if !bytes.Equal(dst[:n], src) {
			t.Errorf("%d bytes: the copy differs", n)
		}
		if !bytes.Equal(dst[n:], []byte{0xa5, 0xa5, 0xa5}) {
			t.Errorf("%d bytes: written past the end", n)
		}
	}
}

// TestResultRelease: a released result's memory serves the next result of
// the same size, and its columns are gone.
func TestResultRelease(t *testing.T) {
	const n = 12345
	r := &Result{}
	a := resultSlice[int32](r, n)
	r.Columns = []Column{{Name: "depth", Type: Int32Column, Int32: a}}
	a[7] = 42
	r.Release()
	if r.Columns != nil || r.recycle != nil {
		t.Fatalf("released result keeps %d columns, %d buffers", len(r.Columns), len(r.recycle))
	}
	// sync.Pool may drop what it holds at any time; reuse is likely, not
	// certain, so a miss only logs.
	b := resultSlice[int32](&Result{}, n)
	if len(b) != n {
		t.Fatalf("%d elements, want %d", len(b), n)
	}
	if &b[0] != &a[0] {
		t.Logf("the released memory was not reused (the pool was emptied)")
	}
	if got := resultSlice[uint32](&Result{}, 0); got != nil {
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
	if leaseOf(PinnedResults(context.Background())) != nil {
		t.Fatalf("a lease outside a GPU run")
	}
	var l *resultLease
	if l.bytes(100) != nil {
		t.Fatalf("a nil lease lent memory")
	}
	l.release()
	l.abandon()
	r := &Result{}
	if s := resultSlice[int64](r, 10); len(s) != 10 || len(r.recycle) != 1 {
		t.Fatalf("%d elements, %d recycled buffers: want 10 in Go memory", len(s), len(r.recycle))
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
		for _, s := range gpuShapes(t) {
			g := buildGraph(t, s, false, false, kt)
			if g.NumVertices() == 0 {
				continue
			}
			src := sourcesOf(g)[0]
			want := run(t, BFS{}, g, src, Params{}).Column("depth").Int32
			var before []byte
			for _, strategy := range []string{"enterprise", "bfs4k", "vwc"} {
				name := fmt.Sprintf("%s keys %v, %s", s.name, kt, strategy)
				r, err := b.Run(ctx, BFS{}, Input{Graph: g, Source: src, Params: Params{Strategy: strategy}})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				depth, parent := r.Column("depth"), r.Column("parent")
				if err := validateBFS(g, src, depth.Int32, parent.Vertex, want); err != nil {
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
				if before != nil && !slices.ContainsFunc(r.lease.bufs, func(h *gpu.HostBuffer) bool { return &h.Bytes()[0] == &before[0] }) {
					t.Errorf("%s: the released result's memory was not reused", name)
				}
				before = alloc.Bytes(depth.Int32)
				r.Release()
				if n := b.LentPinnedBytes(); n != 0 {
					t.Fatalf("%s: %d bytes still lent after Release", name, n)
				}
			}
			r, err := b.Run(ctx, PageRank{}, Input{Graph: g, Params: Params{Damping: DefaultDamping, Tolerance: DefaultTolerance, MaxIterations: DefaultMaxIterations}})
			if err != nil {
				t.Fatalf("%s pagerank: %v", s.name, err)
			}
			ranks := r.Column("rank")
			cpu := run(t, PageRank{}, g, 0, Params{}).Column("rank").Float64
			var l1 float64
			for v, x := range ranks.Float64 {
				l1 += math.Abs(x - cpu[v])
			}
			if !(l1 <= 1e-6) {
				t.Errorf("%s pagerank: L1 distance to the CPU ranks %g > 1e-6", s.name, l1)
			}
			if err := pinned(s.name+" pagerank", alloc.Bytes(ranks.Float64), ranks.Valid); err != nil {
				t.Error(err)
			}
			r.Release()
			if n := b.LentPinnedBytes(); n != 0 {
				t.Fatalf("%s pagerank: %d bytes still lent after Release", s.name, n)
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
	r := &Result{lease: leaseFor(ctx, b)}
	if s := resultSlice[int32](r, 1000); gpu.IsPinned(alloc.Bytes(s)) || len(r.recycle) != 1 {
		t.Fatalf("a column past the pool's limit is in pinned memory")
	}
	full.abandon()
	if n := b.LentPinnedBytes(); n != 0 {
		t.Fatalf("%d bytes lent after the lease was abandoned", n)
	}
	if s := resultSlice[int32](r, 1000); !gpu.IsPinned(alloc.Bytes(s)) {
		t.Fatalf("a column under the limit is not in pinned memory")
	}
	r.Release()
	if n := b.LentPinnedBytes(); n != 0 {
		t.Fatalf("%d bytes lent after Release", n)
	}
}

// BenchmarkGPUHostRead reads a result's 19 MB (Kronecker 22's ranks) a
// message at a time, as a Flight server's encoders do, from pinned memory
// of the pool (PinnedResults) and from Go memory: whether the CPU reads
// pinned memory as fast (it is mapped cached).
func BenchmarkGPUHostRead(b *testing.B) {
	c, err := gpu.Default()
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	const size, msg = 19 << 20, 1 << 20
	h, err := c.AllocHost(size)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Free()
	for _, src := range []struct {
		name string
		mem  []byte
	}{{"pinned", h.Bytes()}, {"go", make([]byte, size)}} {
		b.Run(src.name, func(b *testing.B) {
			for i := range src.mem {
				src.mem[i] = byte(i)
			}
			dst := make([]byte, msg)
			b.SetBytes(size)
			for b.Loop() {
				for off := 0; off < size; off += msg {
					copy(dst, src.mem[off:off+msg])
				}
			}
		})
	}
}

// TestGPUDownloadWaits: downloadAll returns once every destination holds
// its data, pinned ones (written by an asynchronous DMA) and Go memory
// alike, alone and together: 64 MB each, poisoned first and compared as
// soon as it returns.
func TestGPUDownloadWaits(t *testing.T) {
	b := testGPU(t)
	s, err := b.ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const n = 16 << 20 // uint32s: 64 MB
	want := make([]uint32, n)
	for i := range want {
		want[i] = uint32(i)*2654435761 + 1
	}
	src, err := gpu.UploadNew(b.ctx, s, want)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Free()
	h, err := b.ctx.AllocHost(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	pinnedDst := unsafe.Slice((*uint32)(unsafe.Pointer(&h.Bytes()[0])), n)
	goDst := make([]uint32, n)
	for _, c := range []struct {
		name string
		dsts [][]uint32
	}{{"pinned", [][]uint32{pinnedDst}}, {"go", [][]uint32{goDst}}, {"both", [][]uint32{pinnedDst, goDst}}} {
		var copies []hostCopy
		for _, d := range c.dsts {
			for i := range d {
				d[i] = 0xa5a5a5a5
			}
			copies = append(copies, hostCopyOf(d, src))
		}
		if err := b.downloadAll(s, copies...); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for j, d := range c.dsts {
			if i := slices.IndexFunc(d, func(v uint32) bool { return v == 0xa5a5a5a5 }); i >= 0 || !slices.Equal(d, want) {
				t.Fatalf("%s: destination %d differs after downloadAll returned (first poisoned element %d)", c.name, j, i)
			}
		}
	}
}

// TestGPUPinnedResultsMixed: with the pool lending less than a result
// needs, a GPU BFS's first columns are pinned and the others staged (in
// pieces of a page), and the result is still right.
func TestGPUPinnedResultsMixed(t *testing.T) {
	b := testGPU(t)
	defer func(max int64, pinnedMin, stage int) {
		pinnedResultsMax, downloadPinnedMin, downloadStage = max, pinnedMin, stage
	}(pinnedResultsMax, downloadPinnedMin, downloadStage)
	downloadPinnedMin, downloadStage = 0, 4096
	g := buildGraph(t, shape{name: "k14", edges: kroneckerEdges(t, 14, 16, freshSeed(t))}, false, false, edges.KeyInt64)
	n := g.NumVertices()
	pinnedResultsMax = int64(resultClass(4 * n)) // the depths', then nothing
	src := sourcesOf(g)[0]
	want := run(t, BFS{}, g, src, Params{}).Column("depth").Int32
	for _, strategy := range []string{"enterprise", "bfs4k", "vwc"} {
		r, err := b.Run(PinnedResults(context.Background()), BFS{}, Input{Graph: g, Source: src, Params: Params{Strategy: strategy}})
		if err != nil {
			t.Fatalf("%s: %v", strategy, err)
		}
		depth, parent := r.Column("depth"), r.Column("parent")
		if !gpu.IsPinned(alloc.Bytes(depth.Int32)) || gpu.IsPinned(alloc.Bytes(parent.Vertex)) || gpu.IsPinned(parent.Keys) {
			t.Errorf("%s: want the depths alone in pinned memory", strategy)
		}
		if err := validateBFS(g, src, depth.Int32, parent.Vertex, want); err != nil {
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

// lendThenFail is an operator whose GPU run takes pinned memory for its
// result and then fails.
type lendThenFail struct{ cpuOnly }

func (lendThenFail) gpuStrategies() []string                     { return []string{"fail"} }
func (lendThenFail) gpuBytes(*GPU, *convert.Graph, Params) int64 { return 0 }
func (lendThenFail) runGPU(ctx context.Context, _ *GPU, _ Input) (*Result, error) {
	r := &Result{lease: leaseOf(ctx)}
	if s := resultSlice[int64](r, 1<<20); !gpu.IsPinned(alloc.Bytes(s)) {
		return nil, fmt.Errorf("the run's column is not in pinned memory")
	}
	return nil, errInjected
}

var errInjected = fmt.Errorf("injected failure")

// TestGPURunAbandonsLease: a GPU run that fails after its result took
// pinned memory leaves nothing lent.
func TestGPURunAbandonsLease(t *testing.T) {
	b := testGPU(t)
	g := buildGraph(t, shapes(t)[2], true, false, edges.KeyInt64)
	_, err := b.Run(PinnedResults(context.Background()), lendThenFail{}, Input{Graph: g})
	if err != errInjected {
		t.Fatalf("run: %v, want the injected failure", err)
	}
	if l := b.LentPinnedBytes(); l != 0 {
		t.Fatalf("%d bytes lent after the run failed", l)
	}
}

// TestGPUPinnedPoolEvicts: a buffer given back to a full pool stays, and
// buffers of other sizes make room for it.
func TestGPUPinnedPoolEvicts(t *testing.T) {
	b := testGPU(t)
	defer func(keep int64) { pinnedKeepBytes = keep }(pinnedKeepBytes)
	pinnedKeepBytes = 3 << 20
	var bufs []*gpu.HostBuffer
	for _, size := range []int{1 << 20, 1 << 20, 1 << 20, 2 << 20} {
		h, err := b.ctx.AllocHost(size)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, h)
	}
	for _, h := range bufs {
		b.pins.put(h)
	}
	p := &b.pins
	if len(p.free[1<<20]) != 1 || len(p.free[2<<20]) != 1 || p.kept != 3<<20 {
		t.Fatalf("kept %d buffers of 1 MiB and %d of 2 MiB (%d bytes), want one each (3 MiB)", len(p.free[1<<20]), len(p.free[2<<20]), p.kept)
	}
}
