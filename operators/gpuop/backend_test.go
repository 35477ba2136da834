package gpuop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// testGPU is a poisoning GPU backend, or a skip where there is no GPU (a
// failure instead with GPIPE_REQUIRE_GPU=1).
func testGPU(t *testing.T) *GPU {
	t.Helper()
	c, err := gpu.Default()
	if err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("GPIPE_REQUIRE_GPU=1 but no GPU is usable: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	b := NewGPU(c)
	b.Poison = true
	t.Cleanup(func() { b.Close() })
	return b
}

// gpuConfigs are the virtual warp-centric settings every GPU test runs.
var gpuConfigs = []operators.Params{
	{},
	{VWarp: 1},
	{VWarp: 2, ChunkSize: 3},
	{VWarp: 8},
	{VWarp: 32},
	{VWarp: 4, Dynamic: true, ChunkSize: 16},
	{VWarp: 4, DeferOutliers: 40},
	{VWarp: 16, DeferOutliers: -1},
	{VWarp: 32, DeferOutliers: 300, Dynamic: true},
}

func runGPU(t *testing.T, b *GPU, op operators.Operator, g *convert.Graph, src uint32, p operators.Params) *operators.Result {
	t.Helper()
	if err := op.Prepare(&p); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	r, err := b.Run(context.Background(), op, operators.Input{Graph: g, Source: src, Params: p})
	if err != nil {
		t.Fatalf("%s on the GPU with %+v: %v", op.Spec().Name, p, err)
	}
	if r.Backend != "gpu" || r.Compute <= 0 {
		t.Fatalf("result header backend=%q compute=%v", r.Backend, r.Compute)
	}
	return r
}

func TestGPUBFSMatchesCPU(t *testing.T) {
	b := testGPU(t)
	for _, s := range optest.GPUShapes(t) {
		for _, directed := range []bool{true, false} {
			g := optest.BuildGraph(t, s, directed, false, edges.KeyInt64)
			for _, src := range optest.SourcesOf(g) {
				want := run(t, operators.BFS{}, g, src, operators.Params{}).Column("depth").Int32
				for _, p := range gpuConfigs {
					name := fmt.Sprintf("%s/directed=%v/src=%d/%+v", s.Name, directed, src, p)
					r := runGPU(t, b, operators.BFS{}, g, src, p)
					depth, parent := r.Column("depth").Int32, r.Column("parent").Vertex
					if err := optest.ValidateBFS(g, src, depth, parent, want); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
			}
			b.Forget(g)
		}
	}
}

func TestGPUPageRankMatchesCPU(t *testing.T) {
	b := testGPU(t)
	for _, s := range optest.GPUShapes(t) {
		for _, directed := range []bool{true, false} {
			g := optest.BuildGraph(t, s, directed, false, edges.KeyInt64)
			want := run(t, operators.PageRank{}, g, 0, operators.Params{})
			for _, p := range gpuConfigs {
				name := fmt.Sprintf("%s/directed=%v/%+v", s.Name, directed, p)
				r := runGPU(t, b, operators.PageRank{}, g, 0, p)
				got := r.Column("rank").Float64
				var l1, sum float64
				for v, x := range got {
					if math.IsNaN(x) {
						t.Fatalf("%s: rank of vertex %d is NaN (unwritten?)", name, v)
					}
					l1 += math.Abs(x - want.Column("rank").Float64[v])
					sum += x
				}
				if l1 > 1e-6 {
					t.Fatalf("%s: L1 distance to the CPU ranks %g > 1e-6", name, l1)
				}
				if g.NumVertices() > 0 && math.Abs(sum-1) > 1e-9 {
					t.Fatalf("%s: ranks sum to %v", name, sum)
				}
				if d := r.Iterations - want.Iterations; d < -1 || d > 1 {
					t.Fatalf("%s: %d iterations on the GPU, %d on the CPU", name, r.Iterations, want.Iterations)
				}
				// Every rank a number: the bitmap says so, and Rows and
				// Unreached read it rather than the ranks.
				if err := optest.AllValidBits(r.Column("rank").Valid, len(got)); g.NumVertices() > 0 && err != nil {
					t.Fatalf("%s: the ranks' validity: %v", name, err)
				}
			}
			b.Forget(g)
		}
	}
}

func TestGPUPageRankNotConverged(t *testing.T) {
	b := testGPU(t)
	g := optest.BuildGraph(t, optest.Shape{Name: "k10", Edges: optest.KroneckerEdges(t, 10, 16, 5)}, true, false, edges.KeyInt64)
	r := runGPU(t, b, operators.PageRank{}, g, 0, operators.Params{MaxIterations: 3})
	if r.Iterations != 3 || len(r.Warnings) != 1 {
		t.Fatalf("iterations %d, warnings %q: want 3 and one warning", r.Iterations, r.Warnings)
	}
}

// cpuOnly is an operator without GPU kernels.
type cpuOnly struct{}

func (cpuOnly) Spec() operators.Spec            { return operators.Spec{Name: "cpu-only"} }
func (cpuOnly) Prepare(*operators.Params) error { return nil }
func (cpuOnly) RunCPU(ctx context.Context, in operators.Input) (*operators.Result, error) {
	return operators.CC{}.RunCPU(ctx, in)
}

func TestGPUOperatorWithoutKernels(t *testing.T) {
	b := testGPU(t)
	g := optest.BuildGraph(t, optest.Shapes(t)[2], true, true, edges.KeyInt64)
	_, err := b.Run(context.Background(), cpuOnly{}, operators.Input{Graph: g, Params: operators.Params{}})
	if usererr.KindOf(err) != usererr.Backend {
		t.Fatalf("an operator without kernels on the GPU: %v, want a Backend error", err)
	}
}

func TestGPUCanceled(t *testing.T) {
	b := testGPU(t)
	g := optest.BuildGraph(t, optest.Shape{Name: "chain", Edges: optest.Shapes(t)[5].Edges}, true, false, edges.KeyInt64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Run(ctx, operators.BFS{}, operators.Input{Graph: g, Params: operators.Params{}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled BFS: %v", err)
	}
}

func TestGPUConcurrentRuns(t *testing.T) {
	b := testGPU(t)
	g := optest.BuildGraph(t, optest.Shape{Name: "k12", Edges: optest.KroneckerEdges(t, 12, 16, 9)}, false, false, edges.KeyInt64)
	want := run(t, operators.BFS{}, g, 0, operators.Params{}).Column("depth").Int32
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			r, err := b.Run(context.Background(), operators.BFS{}, operators.Input{Graph: g, Params: gpuConfigs[i%len(gpuConfigs)]})
			if err == nil {
				err = optest.ValidateBFS(g, 0, r.Column("depth").Int32, r.Column("parent").Vertex, want)
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckGPUParams(t *testing.T) {
	for _, p := range []operators.Params{{VWarp: 3}, {VWarp: 64}, {Strategy: "nope"}, {DeferOutliers: -2}, {ChunkSize: -2},
		{Strategy: "enterprise", VWarp: 8}, {Strategy: "bfs4k", Dynamic: true}} {
		if err := Check(operators.BFS{}, p); usererr.KindOf(err) != usererr.Usage {
			t.Errorf("%+v: %v, want a Usage error", p, err)
		}
	}
	for _, p := range []operators.Params{{}, {VWarp: 16, Strategy: "vwc", Dynamic: true, ChunkSize: 8, DeferOutliers: 100}} {
		if err := Check(operators.PageRank{}, p); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

func TestVWCConfig(t *testing.T) {
	csr := func(n, m int) *convert.CSR {
		return &convert.CSR{Offsets: make([]int64, n+1), Targets: make([]uint32, m)}
	}
	for _, c := range []struct {
		n, m, k int
	}{{10, 0, 1}, {10, 20, 1}, {10, 50, 4}, {10, 100, 8}, {10, 640, 32}, {10, 100000, 32}} {
		if got := vwcConfigFor(operators.Params{}, csr(c.n, c.m)); got.k != c.k || got.chunk != int64(8*c.k) {
			t.Errorf("average degree %d: k=%d chunk=%d, want k=%d", c.m/c.n, got.k, got.chunk, c.k)
		}
	}
	if got := vwcConfigFor(operators.Params{VWarp: 2, ChunkSize: 5}, csr(10, 1000)); got.k != 2 || got.chunk != 5 {
		t.Errorf("explicit parameters not kept: %+v", got)
	}
}

// TestLoadKernels loads every module ahead, as gpipe serve does as it
// starts, and fails on a module that does not exist.
func TestLoadKernels(t *testing.T) {
	b := testGPU(t)
	if err := b.LoadKernels(kernels.GraphBuild); err != nil {
		t.Fatal(err)
	}
	loaded := len(b.LoadedModules())
	if want := len(kernels.Modules()); loaded != want {
		t.Errorf("%d modules loaded, want all %d", loaded, want)
	}
	if err := b.LoadKernels("no_such_module"); err == nil || !strings.Contains(err.Error(), "no_such_module") {
		t.Errorf("LoadKernels of a module that does not exist: %v, want an error naming it", err)
	}
}

// run runs op on the CPU: the result the GPU's is compared with.
func run(t testing.TB, op operators.Operator, g *convert.Graph, src uint32, p operators.Params) *operators.Result {
	t.Helper()
	if err := op.Prepare(&p); err != nil {
		t.Fatalf("%s: prepare: %v", op.Spec().Name, err)
	}
	r, err := operators.CPU{}.Run(context.Background(), op, operators.Input{Graph: g, Source: src, Params: p})
	if err != nil {
		t.Fatalf("%s on the CPU: %v", op.Spec().Name, err)
	}
	return r
}

// ranksOf is a PageRank result as optest.SameRanks takes it.
func ranksOf(r *operators.Result) optest.Ranks {
	c := r.Column("rank")
	return optest.Ranks{Values: c.Float64, Valid: c.Valid, Float32: strings.Contains(r.Strategy, "float32"), Iterations: r.Iterations}
}
