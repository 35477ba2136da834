package pipeline

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
)

// Models that make auto choose each side: every estimate of the other
// side a million times its own.
func toCPU() *cost.Model { return cost.Skewed(runtime.GOMAXPROCS(0), "", 0, 1e-6, 1e6) }
func toGPU() *cost.Model { return cost.Skewed(runtime.GOMAXPROCS(0), "", 0, 1e6, 1e-6) }

// autoOps are every operator with a source where it needs one.
var autoOps = []struct {
	op string
	p  operators.Params
}{
	{"bfs", operators.Params{Source: "0"}}, {"sssp", operators.Params{Source: "0"}}, {"sswp", operators.Params{Source: "0"}},
	{"pagerank", operators.Params{}}, {"cc", operators.Params{}},
}

// TestAutoBothWays runs every operator through --backend auto with cost
// models that send it to the CPU and to the GPU, on a Parquet file of a
// skewed graph (the GPU built there, its columns copied during the read)
// and on a grid as a text file (the host reads and builds it), and
// compares both with --backend cpu: the result is the same whichever side
// auto picks. It needs a GPU (skips without one, fails under
// GPIPE_REQUIRE_GPU=1).
func TestAutoBothWays(t *testing.T) {
	loadTestGPU(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(gpuTestSeed(t), 9))
	inputs := []string{filepath.Join(dir, "skewed.parquet"), filepath.Join(dir, "grid.txt")}
	writeSkewed(t, inputs[0], rng, 60000)
	writeGridText(t, inputs[1], 120)
	ctx := context.Background()
	for _, in := range inputs {
		for _, o := range autoOps {
			job := Job{Input: in, Op: o.op, Params: o.p, Backend: "cpu", Load: LoadOptions{Undirected: true}}
			want := runJob(t, ctx, job)
			for side, model := range map[string]*cost.Model{"cpu": toCPU(), "gpu": toGPU()} {
				job.Backend, job.Model = "auto", model
				got := runJob(t, ctx, job)
				if got.Backend != side || !ByCostModel(got.BackendReason) || !strings.Contains(got.BackendReason, "against gpu") {
					t.Errorf("%s %s: ran on %s (%s), want %s by the cost model", filepath.Base(in), o.op, got.Backend, got.BackendReason, side)
				}
				sameResult(t, filepath.Base(in)+" "+o.op+" on "+side, got.Result, want.Result)
			}
		}
	}
}

// runJob runs job, failing the test on an error; the report is released
// when the test ends.
func runJob(t *testing.T, ctx context.Context, job Job) *Report {
	t.Helper()
	rep, err := RunJob(ctx, job)
	if err != nil {
		t.Fatalf("%s on %s, backend %s: %v", job.Op, job.Input, job.Backend, err)
	}
	t.Cleanup(rep.Release)
	return rep
}

// sameResult compares two results' columns: equal, but parents (any
// valid tree: left to the operators' tests) and ranks (within 1e-6 in L1).
func sameResult(t *testing.T, what string, got, want *Result) {
	t.Helper()
	for i, w := range want.Columns {
		g := got.Columns[i]
		switch {
		case w.Name == "parent":
		case w.Name == "rank":
			l1 := 0.0
			for v := range w.Float64 {
				l1 += math.Abs(g.Float64[v] - w.Float64[v])
			}
			if l1 > 1e-6 {
				t.Errorf("%s: ranks differ by %g in L1", what, l1)
			}
		case !slices.Equal(g.Int32, w.Int32) || !slices.Equal(g.Vertex, w.Vertex) || !equalFloats(g.Float64, w.Float64):
			t.Errorf("%s: column %s differs from the CPU's", what, w.Name)
		}
	}
}

// equalFloats compares with NaN equal to NaN (unreached).
func equalFloats(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}

// writeSkewed writes m edges of skewed int64 keys (vertex 0 a hub) with
// integer weights 1 to 9 as a Parquet file of 4 row groups.
func writeSkewed(t *testing.T, path string, rng *rand.Rand, m int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64},
		{Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var recs []arrow.RecordBatch
	key := func() int64 { return int64(float64(m/8) * math.Pow(rng.Float64(), 3)) }
	for g := 0; g < 4; g++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := 0; i < m/4; i++ {
			b.Field(0).(*array.Int64Builder).Append(key())
			b.Field(1).(*array.Int64Builder).Append(key())
			b.Field(2).(*array.Float64Builder).Append(float64(1 + rng.IntN(9)))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	writeParquet(t, path, recs)
	for _, r := range recs {
		r.Release()
	}
}

// writeGridText writes a k × k grid as a text edge list, weights 1 to 3.
func writeGridText(t *testing.T, path string, k int) {
	t.Helper()
	var sb strings.Builder
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			v := r*k + c
			if c+1 < k {
				sb.WriteString(itoa(v) + " " + itoa(v+1) + " " + itoa(1+v%3) + "\n")
			}
			if r+1 < k {
				sb.WriteString(itoa(v) + " " + itoa(v+k) + " " + itoa(1+(v+1)%3) + "\n")
			}
		}
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(v int) string { return strconv.Itoa(v) }

// A table too small for the GPU to pay off, its set-up counted, never
// begins the GPU's set-up; a large one does (the decision alone: no GPU
// needed); a Parquet input leaves it to its reader's row count.
func TestStartSmallInputOpensNoGPU(t *testing.T) {
	if _, elapsed := gpuOpening(); elapsed >= 0 {
		// The estimates count the set-up a fresh process has before it;
		// in a run where an earlier test opened the GPU there is none.
		t.Skip("the process's GPU was opened by an earlier test: the estimates are a fresh process's (run this test alone)")
	}
	op, _ := operators.Lookup("bfs")
	b, err := OpenBackendWith("auto", BackendOptions{GPUs: 1, Model: cost.Default(16, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	m := b.model()
	cases := []struct {
		rows       int64
		undirected bool
		gpu        bool
	}{{8870, false, false}, {3_800_000, true, false}, {8_400_000, true, false}, {67_000_000, true, true}}
	for _, c := range cases {
		cpu, gpu := b.jobEstimates(m, op, c.rows, c.undirected, m.Read(c.rows))
		if (gpu < cpu) != c.gpu {
			t.Errorf("%d rows: cpu %v, gpu %v; want the gpu %v", c.rows, cpu, gpu, c.gpu)
		}
	}
	b.Start(op, 8870, false, false)
	b.Start(op, -1, true, true) // Parquet: its reader tells
	select {
	case <-b.ready:
		t.Error("a small input began the GPU's set-up")
	default:
	}
	if b.Setup() != (Setup{}) {
		t.Errorf("set-up %+v for a job that began none", b.Setup())
	}
}

// Under auto the placement builds on the host where the cost model says
// so, saying why; no GPU is asked for.
func TestPlacementHostByModel(t *testing.T) {
	b, err := OpenBackendWith("auto", BackendOptions{GPUs: 1, Model: toCPU()})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := operators.Lookup("pagerank")
	pl := b.Placer(op, true)
	dev, why := pl.BuildOn(&edges.Table{})
	if dev != nil || !ByCostModel(why) || !strings.Contains(why, "on the host") {
		t.Errorf("placed on %v: %q", dev, why)
	}
	if cpu, _ := OpenBackendWith("cpu", BackendOptions{GPUs: 1}); cpu.Placer(op, true) != nil {
		t.Error("the cpu choice places builds")
	}
}

// The set-up clock: what the job waited for is not hidden; a set-up still
// under way counts until now.
func TestSetupClock(t *testing.T) {
	var c setupClock
	if c.report() != (Setup{}) {
		t.Error("a clock that never began reports a set-up")
	}
	t0 := time.Now().Add(-300 * time.Millisecond)
	c.begin(t0)
	c.waited = 100 * time.Millisecond
	c.end(t0.Add(250 * time.Millisecond))
	if r := c.report(); r.Took != 250*time.Millisecond || r.Hidden != 150*time.Millisecond {
		t.Errorf("report %+v, want 250 ms, 150 hidden", r)
	}
	var d setupClock
	d.begin(t0)
	if r := d.report(); r.Took < 300*time.Millisecond || r.Hidden != r.Took {
		t.Errorf("a set-up under way: %+v", r)
	}
}

func TestInputRows(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "e.txt")
	if err := os.WriteFile(txt, make([]byte, 400), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, later := InputRows(txt, ""); got != 100 || later {
		t.Errorf("400 bytes of text: %d rows at most (later %v), want 100", got, later)
	}
	if got, _ := InputRows(txt, "arrow"); got != 50 {
		t.Errorf("as an Arrow file: %d, want 50", got)
	}
	if got, later := InputRows(txt, "parquet"); got != -1 || !later {
		t.Errorf("as Parquet: %d, later %v; want its reader to tell", got, later)
	}
	for _, in := range []string{"-", filepath.Join(dir, "none.txt")} {
		if got, later := InputRows(in, ""); got != -1 || later {
			t.Errorf("%s: %d, want -1 (unknown)", in, got)
		}
	}
}
