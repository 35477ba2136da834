// Package bench is the benchmark harness behind `gpipe bench`: it reads or
// generates a graph and builds it once, then times an operator over several
// trials, as Graph 500 and the GAP benchmark suite do, and reports the
// trials' times, GTEPS and memory.
package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/rusage"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/vprog"
)

// Config is one `gpipe bench`: load and build once, then run an operator
// Trials times (for each GPU strategy Params.Strategy lists).
type Config struct {
	// Input is an edge table path; Gen a generator spec
	// ("kronecker:SCALE[:EDGEFACTOR]" or "grid:ROWSxCOLS", as gen.Parse
	// reads it). Exactly one is set.
	Input, Gen string
	Load       pipeline.LoadOptions
	// Unweighted reads no weight column (pipeline.Job's).
	Unweighted bool
	Op         string
	// Operator, when set, is the operator in place of Op's (a vertex
	// program, which no name looks up); prepare sets it to Op's otherwise.
	Operator operators.Operator
	// Params are the operator's parameters. Params.Strategy may list
	// several GPU strategies, separated by commas, to compare them side by
	// side on the same graph.
	Params  operators.Params
	Backend string // "cpu" or "gpu" ("auto" is allowed but says less)
	// GPUs is how many GPUs a run may spread over (0: every usable GPU,
	// for large graphs; 1: one).
	GPUs   int
	Trials int
	// Sources is how many distinct random sources the trials cycle through
	// (bfs, sssp, sswp); 0 means one per trial.
	Sources int
	Seed    uint64
	// Stage, when set, is told about each trial as it starts.
	Stage func(string)
	// CPUProfile, when set, receives a CPU profile (pprof) of the timed
	// trials, the warm-up, loading and building left out.
	CPUProfile io.Writer
}

// Report is what `gpipe bench --json` prints, one for each strategy.
type Report struct {
	Op       string `json:"op"`
	Backend  string `json:"backend"`
	Strategy string `json:"strategy"`
	// GPUs is how many GPUs the trials ran on (0 on the CPU).
	GPUs int `json:"gpus"`
	// StrategyReason says why the GPU strategy was chosen.
	StrategyReason string  `json:"strategy_reason,omitempty"`
	Input          string  `json:"input"`
	Vertices       int     `json:"vertices"`
	Edges          int64   `json:"edges"`
	InputEdges     int64   `json:"input_edges"`
	ReadS          float64 `json:"read_s"`
	BuildS         float64 `json:"build_s"`
	// UploadS is the part of BuildS that copied the edge columns to the
	// GPU, when the GPU built the graph; BuildDevice says where it was
	// built ("gpu" or "cpu") and BuildReason why the host built it.
	UploadS     float64   `json:"upload_s,omitempty"`
	BuildDevice string    `json:"build_device"`
	BuildReason string    `json:"build_reason,omitempty"`
	TrialsS     []float64 `json:"trials_s"`
	MedianS     float64   `json:"median_s"`
	MinS        float64   `json:"min_s"`
	Sources     []string  `json:"sources,omitempty"`
	// TransferS is the first run's copy of the graph's layouts to the GPU
	// (the warm-up's; the trials find them there).
	TransferS float64 `json:"transfer_s,omitempty"`
	// GTEPS is the harmonic mean over trials of input edges / trial time
	// (the Graph 500 convention), for bfs.
	GTEPS float64 `json:"gteps,omitempty"`
	// Iterations is the median trial's iterations (PageRank's, a vertex
	// program's on the GPU; BFS's levels are not counted here), and
	// SPerIteration PageRank's time an iteration.
	Iterations    int     `json:"iterations,omitempty"`
	SPerIteration float64 `json:"s_per_iteration,omitempty"`
	// EdgesExamined and EdgesWalked are the median trial's edges pulled and
	// walked to activate vertices, by the strategies that count them
	// (warpseg, kites), and EdgesPerIteration the pulled ones an iteration.
	EdgesExamined     int64   `json:"edges_examined,omitempty"`
	EdgesWalked       int64   `json:"edges_walked,omitempty"`
	EdgesPerIteration float64 `json:"edges_per_iteration,omitempty"`
	// BackendReason says why the backend was chosen, for auto.
	BackendReason string `json:"backend_reason,omitempty"`
	// Memory of reading and building: the edge table's columns, the built
	// layout (CSR, CSC where it is a separate array, vertex keys), and the
	// process's peak resident set once the graph is built (Linux VmHWM; 0
	// elsewhere), also per input edge.
	InputBytes   int64   `json:"input_bytes"`
	LayoutBytes  int64   `json:"layout_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitempty"`
	BytesPerEdge float64 `json:"bytes_per_edge,omitempty"`
	// PeakHostBytes is the process's peak resident set at the end of the
	// strategy's trials (getrusage's ru_maxrss), as gpipe run reports it.
	PeakHostBytes int64 `json:"peak_host_bytes,omitempty"`
	// Notes are as in pipeline.Report.
	Notes []string `json:"notes,omitempty"`
}

// Run runs a benchmark: a report for each strategy Params.Strategy lists
// (one when it names one or none). Trial times are the operators' own
// compute times (CUDA events on the GPU), so loading, building and copying
// the graph to the device stay out of them; the first run of each strategy
// is a warm-up and is not counted.
func Run(ctx context.Context, cfg Config) ([]*Report, error) {
	op, strategies, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	backend, err := openBackend(&cfg, op)
	if err != nil {
		return nil, err
	}
	g, name, inputBytes, err := benchGraph(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b := benchedGraph{g: g, name: name, inputBytes: inputBytes, peak: peakRSS()}
	defer g.Release()
	defer backend.Release(g.Graph)
	spec := operators.SpecFor(op, cfg.Params)
	if spec.NeedsSource {
		if b.sources, err = randomSources(g, cfg); err != nil {
			return nil, err
		}
	}
	var reps []*Report
	for _, s := range strategies {
		p := cfg.Params
		p.Strategy = strings.TrimSpace(s)
		runner, reason, err := backend.For(g.Graph, op, p)
		if err != nil {
			return nil, err
		}
		rep := b.report(cfg, spec, runner.Name(), reason)
		if err := benchTrials(ctx, cfg, g, runner, p, b.sources, rep); err != nil {
			return nil, err
		}
		rep.PeakHostBytes = rusage.PeakRSS()
		reps = append(reps, rep)
		cfg.CPUProfile = nil // a profile of the first strategy's trials only
	}
	return reps, nil
}

// prepare checks cfg, prepares its parameters for the operator and sets
// what the operator needs loaded. It returns the operator and the
// strategies to run.
func prepare(cfg *Config) (operators.Operator, []string, error) {
	if (cfg.Input == "") == (cfg.Gen == "") {
		return nil, nil, usererr.New(usererr.Usage, "give exactly one of --input and --gen", "see 'gpipe bench --help'")
	}
	if err := checkCounts(*cfg); err != nil {
		return nil, nil, err
	}
	op := cfg.Operator
	if op == nil {
		var err error
		if op, err = operators.Lookup(cfg.Op); err != nil {
			return nil, nil, err
		}
		cfg.Operator = op
	}
	// A program checks its strategy in Prepare: each of the list's below.
	_, program := op.(*vprog.Operator)
	list := cfg.Params.Strategy
	if program {
		cfg.Params.Strategy = ""
	}
	if err := op.Prepare(&cfg.Params); err != nil {
		return nil, nil, err
	}
	cfg.Params.Strategy = list
	strategies := strings.Split(list, ",")
	for _, s := range strategies {
		p := cfg.Params
		p.Strategy = strings.TrimSpace(s)
		check := gpuop.Check
		if program {
			check = func(op operators.Operator, p operators.Params) error { return op.Prepare(&p) }
		}
		if err := check(op, p); err != nil {
			return nil, nil, err
		}
	}
	spec := operators.SpecFor(op, cfg.Params)
	if err := pipeline.CheckWeightedParam(spec, cfg.Params, cfg.Unweighted); err != nil {
		return nil, nil, err
	}
	cfg.Load.Columns.ReadWeight = spec.Weighted && !cfg.Unweighted
	cfg.Load.Weights = spec.Weights
	cfg.Load.BuildIn = cfg.Load.BuildIn || spec.NeedsIn
	return op, strategies, nil
}

// openBackend opens the backend cfg asks for, checks that it runs op, and
// has the graph loaded into its memory and built on its device unless cfg
// says otherwise.
func openBackend(cfg *Config, op operators.Operator) (*pipeline.Backend, error) {
	backend, err := pipeline.OpenBackendGPUs(cfg.Backend, cfg.GPUs)
	if err != nil {
		return nil, err
	}
	if err := backend.Check(op); err != nil {
		return nil, err
	}
	if cfg.Load.Alloc == nil {
		cfg.Load.Alloc = backend.Alloc()
	}
	if cfg.Load.Device == nil {
		cfg.Load.Device = backend.BuildDevice(op)
	}
	return backend, nil
}

// benchedGraph is the graph a benchmark runs on and what its reports say
// of it.
type benchedGraph struct {
	g                *pipeline.Graph
	name             string
	inputBytes, peak int64 // the edge table's columns; the peak RSS once built
	sources          []string
}

// report is a strategy's report before its trials: the graph, how it was
// read and built, and the backend (with the reason it was chosen).
func (b *benchedGraph) report(cfg Config, spec operators.Spec, backend, reason string) *Report {
	g := b.g
	rep := &Report{
		Op: cfg.Operator.Spec().Name, Backend: backend, Input: b.name, BackendReason: reason, Sources: b.sources,
		Vertices: g.NumVertices(), Edges: g.NumEdges(), InputEdges: g.Stats.InputEdges,
		ReadS: g.ReadTime.Seconds(), BuildS: g.BuildTime.Seconds(),
		UploadS: g.Built.Upload.Seconds(), BuildDevice: g.Built.Device, BuildReason: g.Built.Reason,
		InputBytes: b.inputBytes, LayoutBytes: g.Bytes(), PeakRSSBytes: b.peak,
		Notes: benchNotes(spec, g, cfg),
	}
	if b.peak > 0 && g.Stats.InputEdges > 0 {
		rep.BytesPerEdge = float64(b.peak) / float64(g.Stats.InputEdges)
	}
	return rep
}

// benchNotes are a benchmark's notes, as pipeline.Report's.
func benchNotes(spec operators.Spec, g *pipeline.Graph, cfg Config) []string {
	return slices.Concat(pipeline.WeightColumnNotes(spec, cfg.Load.Columns, g.WeightUnread && !cfg.Unweighted), g.Notes,
		pipeline.MissingWeightNotes(spec, g.Weighted, cfg.Unweighted, cfg.Load.Columns))
}

// MaxTrials is the most trials (and distinct sources) a benchmark runs:
// each trial's time, iterations and source are kept for the report (tens
// of bytes a trial, the sources drawn before the first), so that a count
// such as 9999999999 would fill memory before anything ran. A million
// trials of the smallest graph take seconds; no measurement needs more.
const MaxTrials = 1_000_000

// checkCounts refuses a trial or source count outside [1, MaxTrials]
// (Sources 0 means one a trial).
func checkCounts(cfg Config) error {
	switch {
	case cfg.Trials < 1:
		return usererr.Newf(usererr.Usage, "--trials must be at least 1, not %d", cfg.Trials)
	case cfg.Trials > MaxTrials:
		return usererr.New(usererr.Usage, fmt.Sprintf("--trials %d is more than %d, the most gpipe bench runs", cfg.Trials, MaxTrials),
			fmt.Sprintf("give at most %d (run gpipe bench again for more)", MaxTrials))
	case cfg.Sources < 0:
		return usererr.Newf(usererr.Usage, "--sources %d must be at least 1", cfg.Sources)
	case cfg.Sources > MaxTrials:
		return usererr.New(usererr.Usage, fmt.Sprintf("--sources %d is more than %d, the most gpipe bench draws", cfg.Sources, MaxTrials),
			fmt.Sprintf("give at most %d", MaxTrials))
	}
	return nil
}

// benchTrials runs the warm-up and the trials of one strategy into rep.
func benchTrials(ctx context.Context, cfg Config, g *pipeline.Graph, runner operators.Backend, params operators.Params, sources []string, rep *Report) error {
	var iterations []int
	var examined [][2]int64
	profiling := false
	defer func() {
		if profiling {
			pprof.StopCPUProfile()
		}
	}()
	for trial := -1; trial < cfg.Trials; trial++ { // trial -1 is the warm-up
		if err := ctx.Err(); err != nil {
			return err
		}
		p := params
		if sources != nil {
			p.Source = sources[max(trial, 0)%len(sources)]
		}
		if cfg.Stage != nil {
			cfg.Stage(fmt.Sprintf("trial %d of %d", trial+1, cfg.Trials))
		}
		runtime.GC()
		res, err := g.RunOp(ctx, cfg.Operator, p, runner)
		if err != nil {
			return err
		}
		rep.Strategy, rep.StrategyReason = res.Strategy, res.StrategyReason
		rep.GPUs = pipeline.GPUsUsed(res)
		if trial < 0 {
			rep.TransferS = res.Transfer.Seconds()
			if cfg.CPUProfile != nil {
				if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
					return fmt.Errorf("starting the CPU profile: %w", err)
				}
				profiling = true
			}
			continue
		}
		rep.TrialsS = append(rep.TrialsS, res.Compute.Seconds())
		iterations = append(iterations, res.Iterations)
		examined = append(examined, [2]int64{res.EdgesExamined, res.EdgesWalked})
	}
	sorted := slices.Clone(rep.TrialsS)
	slices.Sort(sorted)
	rep.MedianS = median(sorted)
	rep.MinS = sorted[0]
	switch cfg.Op {
	case "bfs":
		var inv float64
		for _, s := range rep.TrialsS {
			inv += s / float64(rep.InputEdges)
		}
		rep.GTEPS = float64(len(rep.TrialsS)) / inv / 1e9
	default:
		mid := max(slices.Index(rep.TrialsS, rep.MedianS), 0)
		rep.Iterations = iterations[mid]
		if rep.Iterations > 0 && cfg.Op == "pagerank" {
			rep.SPerIteration = rep.MedianS / float64(rep.Iterations)
		}
		rep.EdgesExamined, rep.EdgesWalked = examined[mid][0], examined[mid][1]
		if rep.Iterations > 0 && rep.EdgesExamined > 0 {
			rep.EdgesPerIteration = float64(rep.EdgesExamined) / float64(rep.Iterations)
		}
	}
	return nil
}

// median of a sorted slice: the middle value, or the lower of the two middle
// ones, so that it is always one trial's time.
func median(sorted []float64) float64 {
	return sorted[(len(sorted)-1)/2]
}

// benchGraph loads or generates the graph, as Load does, and also returns
// the size of the edge table's columns.
func benchGraph(ctx context.Context, cfg Config) (*pipeline.Graph, string, int64, error) {
	var t *edges.Table
	var err error
	start := time.Now()
	name := cfg.Input
	if cfg.Input != "" {
		if cfg.Load.Stage != nil {
			cfg.Load.Stage("read")
		}
		t, err = ingest.Open(ctx, cfg.Input, cfg.Load.Stdin, edges.Options{
			Columns: cfg.Load.Columns, Format: cfg.Load.Format, SkipInvalid: cfg.Load.SkipInvalid, Alloc: cfg.Load.ReadAlloc(),
			Header: cfg.Load.Header, Delimiter: cfg.Load.Delimiter, Progress: cfg.Load.Progress,
			Store: cfg.Load.Store,
		})
	} else {
		var g gen.Generator
		if g, err = gen.Parse(cfg.Gen, cfg.Seed, cfg.Load.Columns.ReadWeight); err != nil {
			return nil, "", 0, err
		}
		t, err = g.Generate(ctx)
		if err == nil {
			name = t.Name
		}
	}
	if err != nil {
		return nil, "", 0, err
	}
	defer t.Release()
	readTime := time.Since(start)
	g, err := pipeline.Build(ctx, t, cfg.Load)
	if err != nil {
		return nil, "", 0, err
	}
	g.ReadTime = readTime
	return g, name, tableBytes(t), nil
}

// tableBytes is the size of an edge table's columns.
func tableBytes(t *edges.Table) int64 {
	keys := func(k *edges.Keys) int64 {
		b := int64(len(k.Int32))*4 + int64(len(k.Int64))*8 + int64(len(k.Uint32))*4 + int64(len(k.Uint64))*8
		if k.Str != nil {
			b += int64(len(k.Str.Offsets))*8 + int64(len(k.Str.Data))
		}
		return b
	}
	var b int64
	for i := range t.Chunks {
		c := &t.Chunks[i]
		b += keys(&c.Src) + keys(&c.Dst) + int64(len(c.Weight))*8 + int64(len(c.Rows))*8
	}
	return b
}

// peakRSS is the process's peak resident set size in bytes (VmHWM), or 0
// where /proc does not say.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// randomSources draws the trials' sources: random vertices with at least
// one out-edge, seeded, as Graph 500 and GAP pick them.
func randomSources(g *pipeline.Graph, cfg Config) ([]string, error) {
	n := g.NumVertices()
	count := cfg.Sources
	if count <= 0 {
		count = cfg.Trials
	}
	if n == 0 || g.NumEdges() == 0 {
		return nil, usererr.InFile(g.Name, "the graph has no edges, so there is no source to start from", "")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	sources := make([]string, 0, count)
	for len(sources) < count {
		v := uint32(rng.IntN(n))
		if g.Out.Degree(v) > 0 {
			sources = append(sources, g.Keys.Format(v))
		}
	}
	return sources, nil
}
