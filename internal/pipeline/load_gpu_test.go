package pipeline

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// The GPU build through the whole load: a Parquet file of many row groups,
// its columns copied to the GPU while it is read, the graph built there,
// against the host's build of the same file. The test skips without a GPU
// and fails under GPIPE_REQUIRE_GPU=1.

func loadTestGPU(t *testing.T) *gpuop.GPU {
	t.Helper()
	g, err := SharedGPU()
	if err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("GPIPE_REQUIRE_GPU=1 but no GPU is usable: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return g
}

// gpuTestSeed is a new seed each run, logged (GPIPE_TEST_SEED repeats one).
func gpuTestSeed(t *testing.T) uint64 {
	if s := os.Getenv("GPIPE_TEST_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return seed
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("GPIPE_TEST_SEED=%d", seed)
	return seed
}

// writeRowGroups writes m random edges (int64 keys, skewed, with repeats
// and self loops, float64 weights) as a Parquet file of groups row groups.
func writeRowGroups(t *testing.T, path string, rng *rand.Rand, m, groups int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64},
		{Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var recs []arrow.RecordBatch
	key := func() int64 { return int64(float64(m/4)*math.Pow(rng.Float64(), 2)) * 7919 }
	for g := 0; g < groups; g++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := g * m / groups; i < (g+1)*m/groups; i++ {
			u, v := key(), key()
			if i%17 == 0 {
				v = u
			}
			b.Field(0).(*array.Int64Builder).Append(u)
			b.Field(1).(*array.Int64Builder).Append(v)
			b.Field(2).(*array.Float64Builder).Append(float64(rng.IntN(9)) - 2)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	writeParquet(t, path, recs)
	for _, r := range recs {
		r.Release()
	}
}

func TestLoadBuildsOnGPU(t *testing.T) {
	gb := loadTestGPU(t)
	rng := rand.New(rand.NewPCG(gpuTestSeed(t), 3))
	path := filepath.Join(t.TempDir(), "edges.parquet")
	writeRowGroups(t, path, rng, 40000, 9)
	backend, err := OpenBackend("gpu")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, opts := range []LoadOptions{
		{Undirected: true},
		{BuildIn: true, Columns: edges.Columns{ReadWeight: true}},
		{Undirected: true, Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}, // no stream: the build uploads
	} {
		want, err := Load(ctx, path, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Device, opts.Alloc = gb, backend.Alloc()
		got, err := Load(ctx, path, opts)
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		name := "undirected"
		if !opts.Undirected {
			name = "directed"
		}
		if got.Built.Device != "gpu" || got.Built.DuringRead == opts.SkipInvalid {
			t.Errorf("%s skip=%v: built on %q (%s), upload during the read %v", name, opts.SkipInvalid, got.Built.Device, got.Built.Reason, got.Built.DuringRead)
		}
		if !slices.Equal(got.Keys.Int64, want.Keys.Int64) || !slices.Equal(got.Out.Offsets, want.Out.Offsets) {
			t.Errorf("%s: keys or offsets differ from the host build's", name)
		}
		if err := got.Materialize(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Out.Targets, want.Out.Targets) || !slices.Equal(got.Out.Weights, want.Out.Weights) {
			t.Errorf("%s: targets or weights differ from the host build's", name)
		}
		if got.Stats.SelfLoops != want.Stats.SelfLoops || got.Stats.Merged != want.Stats.Merged {
			t.Errorf("%s: stats %+v, want %+v", name, got.Stats, want.Stats)
		}
		gb.Forget(got.Graph)
		got.Release()
		want.Release()
	}
}

// TestRunJobBuildsOnGPU runs BFS as `gpipe run --backend gpu` does and
// compares the depths with the CPU's.
func TestRunJobBuildsOnGPU(t *testing.T) {
	loadTestGPU(t)
	rng := rand.New(rand.NewPCG(gpuTestSeed(t), 5))
	path := filepath.Join(t.TempDir(), "edges.parquet")
	writeRowGroups(t, path, rng, 30000, 5)
	ctx := context.Background()
	reps := map[string]*Report{}
	for _, backend := range []string{"gpu", "cpu"} {
		rep, err := RunJob(ctx, Job{Input: path, Op: "bfs", Backend: backend, Params: operators.Params{Source: "0"},
			Load: LoadOptions{Undirected: true}})
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		defer rep.Release()
		reps[backend] = rep
	}
	g, c := reps["gpu"], reps["cpu"]
	if g.BuildDevice != "gpu" || !g.UploadDuringRead || c.BuildDevice != "cpu" {
		t.Errorf("built on %q (during the read %v) and %q; want gpu (true) and cpu", g.BuildDevice, g.UploadDuringRead, c.BuildDevice)
	}
	if g.Timings.Transfer != 0 {
		t.Errorf("the GPU job copied layouts to the GPU (%v s) that it built there", g.Timings.Transfer)
	}
	if g.PeakHostBytes <= 0 {
		t.Errorf("peak_host_bytes %d", g.PeakHostBytes)
	}
	if !slices.Equal(g.Result.Column("depth").Int32, c.Result.Column("depth").Int32) {
		t.Error("BFS depths of the GPU job differ from the CPU's")
	}
}
