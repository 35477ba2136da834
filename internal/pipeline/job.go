package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/rusage"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/sink"
)

// Job is one `gpipe run`: read, build, compute, write.
type Job struct {
	Input string
	// Output is where the vertex table goes ("-" for an Arrow IPC stream on
	// Sink.Stdout); empty means nowhere (the caller looks at Report.Result).
	Output string
	Op     string
	// Operator, where set, runs in place of Op's operator: a vertex
	// program (operators/vprog), which Op does not name.
	Operator operators.Operator
	Params   operators.Params
	Load     LoadOptions
	Backend  string // "auto" (default), "cpu" or "gpu"
	// GPUs is how many GPUs a run may spread over (0: every usable GPU,
	// for large graphs; 1: one).
	GPUs int
	// Model is the cost model --backend auto decides by (nil: this
	// machine's, operators/cost).
	Model *cost.Model
	// Unweighted reads no weight column: every weight is 1, as the caller
	// means (without it, an operator that uses weights run on a table
	// without a weight column gets a note that says so).
	Unweighted bool
	Sink       sink.Options
}

// Report says what a job did and what each stage cost.
type Report struct {
	Input    string `json:"input"`
	Output   string `json:"output,omitempty"`
	Op       string `json:"op"`
	Backend  string `json:"backend"`
	Strategy string `json:"strategy"`
	// GPUs is how many GPUs the run used (0 on the CPU).
	GPUs int `json:"gpus"`
	// StrategyReason says why the GPU strategy was chosen: auto's rule, or
	// that --strategy named it.
	StrategyReason string `json:"strategy_reason,omitempty"`
	// BackendReason says why --backend auto chose the backend it did.
	BackendReason string  `json:"backend_reason,omitempty"`
	Timings       Timings `json:"timings"`
	RowsRead      int64   `json:"rows_read"`
	RowsSkipped   int64   `json:"rows_skipped"`
	// Skipped counts skipped rows by reason.
	Skipped     map[string]int64 `json:"skipped,omitempty"`
	Vertices    int              `json:"vertices"`
	Edges       int64            `json:"edges"`
	InputEdges  int64            `json:"input_edges"`
	SelfLoops   int64            `json:"self_loops_dropped"`
	MergedEdges int64            `json:"parallel_edges_merged"`
	// BuildDevice says where the graph was built: "gpu" or "cpu".
	// BuildReason says why the host built it for a job a GPU may run.
	BuildDevice string `json:"build_device"`
	BuildReason string `json:"build_reason,omitempty"`
	// UploadDuringRead says the edge columns were copied to the GPU while
	// they were read (Parquet), so that upload_s is only the build's wait
	// for the last copies.
	UploadDuringRead bool `json:"upload_during_read,omitempty"`
	// PeakHostBytes is the most host memory the process held, as its peak
	// resident set (getrusage's ru_maxrss) at the end of the job: the edge
	// columns, the layouts on the host, pinned buffers and the Go heap's
	// slack; 0 where the platform does not say.
	PeakHostBytes int64    `json:"peak_host_bytes,omitempty"`
	Iterations    int      `json:"iterations"`
	Unreached     int      `json:"unreached,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
	// Notes say what the job did with what it was given that a reader of
	// the report might not expect: a weight column it ignored, weights it
	// took as 1 for an operator that uses them (MissingWeightNotes),
	// decimal weights rounded to float64. gpipe run prints them on stderr.
	Notes []string `json:"notes,omitempty"`
	// Result is the operator's output, for callers that print a summary.
	// It and its graph stay valid until Release.
	Result  *Result `json:"-"`
	release func()
}

// Release frees the graph the result refers to. Safe to call more than once.
func (r *Report) Release() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// Timings are stage wall times in seconds.
type Timings struct {
	Read    float64 `json:"read_s"`
	Build   float64 `json:"build_s"`
	Compute float64 `json:"compute_s"`
	// Transfer is the time copying the graph to the GPU took (0 on the CPU,
	// and for layouts the GPU built itself).
	Transfer float64 `json:"transfer_s"`
	// Upload is the part of Build that copied the edge columns to the GPU,
	// when the GPU built the graph.
	Upload float64 `json:"upload_s,omitempty"`
	// GPUInit is the GPU's set-up for the job (the driver, the context,
	// the build's staging ring and kernels: 0 where the job set up no GPU
	// or found it set up), begun with the job; GPUInitHidden the part of
	// it the job did not wait for, done while the input was read.
	GPUInit       float64 `json:"gpu_init_s"`
	GPUInitHidden float64 `json:"gpu_init_hidden_s"`
	Write         float64 `json:"write_s"`
	Total         float64 `json:"total_s"`
}

// RunJob runs a whole job. Parameters, the operator and the output format are
// checked before any input is read, so a typo fails at once.
func RunJob(ctx context.Context, job Job) (*Report, error) {
	start := time.Now()
	op, err := job.operator()
	if err != nil {
		return nil, err
	}
	if err := op.Prepare(&job.Params); err != nil {
		return nil, err
	}
	if err := checkSource(op, job.Params); err != nil {
		return nil, err
	}
	if err := gpuop.Check(op, job.Params); err != nil {
		return nil, err
	}
	if job.Output != "" {
		if err := sink.Check(job.Output, job.Sink); err != nil {
			return nil, err
		}
		if err := checkNotInput(job); err != nil {
			return nil, err
		}
	}
	spec := operators.SpecFor(op, job.Params)
	if err := CheckWeightedParam(spec, job.Params, job.Unweighted); err != nil {
		return nil, err
	}
	job.Load.Columns.ReadWeight = spec.Weighted && !job.Unweighted
	job.Load.Weights = spec.Weights
	job.Load.BuildIn = job.Load.BuildIn || spec.NeedsIn

	backend, err := OpenBackendWith(job.Backend, BackendOptions{GPUs: job.GPUs, Model: job.Model})
	if err != nil {
		return nil, err
	}
	if err := backend.Check(op); err != nil {
		return nil, err
	}
	// The GPU's set-up runs while the input is read; the build's place
	// is decided once the rows are known.
	rows, later := InputRows(job.Input, job.Load.Format)
	backend.Start(op, rows, later, job.Load.Undirected)
	if job.Load.Device == nil && job.Load.Place == nil {
		job.Load.Place = backend.Placer(op, job.Load.Undirected)
	}
	g, err := Load(ctx, job.Input, job.Load)
	if err != nil {
		return nil, err
	}
	release := func() {
		backend.Release(g.Graph)
		g.Release()
	}
	kept := false
	defer func() {
		if !kept {
			release()
		}
	}()
	runner, reason, err := backend.For(g.Graph, op, job.Params)
	if err != nil {
		return nil, err
	}

	stage(job.Load, "compute")
	computeStart := time.Now()
	res, err := g.RunOp(ctx, op, job.Params, runner)
	if err != nil {
		return nil, err
	}
	// The stage's wall time: the operator's own time, plus on the GPU the
	// copies of the graph and of the result.
	compute := time.Since(computeStart)

	rep := &Report{
		Input: job.Input, Output: job.Output, Op: spec.Name,
		Backend: res.Backend, Strategy: res.Strategy, StrategyReason: res.StrategyReason, BackendReason: reason,
		RowsRead: g.RowsRead, RowsSkipped: g.Skipped.Total(), Skipped: g.Skipped,
		Vertices: g.NumVertices(), Edges: g.NumEdges(), InputEdges: g.Stats.InputEdges,
		SelfLoops: g.Stats.SelfLoops, MergedEdges: g.Stats.Merged,
		BuildDevice: g.Built.Device, BuildReason: g.Built.Reason, UploadDuringRead: g.Built.DuringRead,
		Iterations: res.Iterations, Unreached: res.Unreached(), Warnings: res.Warnings,
		Result: res, GPUs: GPUsUsed(res),
	}
	rep.Notes = slices.Concat(WeightColumnNotes(spec, job.Load.Columns, g.WeightUnread && !job.Unweighted), g.Notes,
		MissingWeightNotes(spec, g.Weighted, job.Unweighted, job.Load.Columns))
	rep.Timings.Read = g.ReadTime.Seconds()
	rep.Timings.Build = g.BuildTime.Seconds()
	rep.Timings.Compute = compute.Seconds()
	rep.Timings.Transfer = res.Transfer.Seconds()
	rep.Timings.Upload = g.Built.Upload.Seconds()
	setup := backend.Setup()
	rep.Timings.GPUInit, rep.Timings.GPUInitHidden = setup.Took.Seconds(), setup.Hidden.Seconds()

	if job.Output != "" {
		stage(job.Load, "write")
		writeStart := time.Now()
		if err := WriteResult(ctx, res, job.Output, job.Sink, memory.DefaultAllocator); err != nil {
			return nil, err
		}
		rep.Timings.Write = time.Since(writeStart).Seconds()
	}
	rep.Timings.Total = time.Since(start).Seconds()
	rep.PeakHostBytes = rusage.PeakRSS()
	rep.release, kept = release, true
	return rep, nil
}

// operator is the job's operator: Operator, or Op's.
func (job Job) operator() (operators.Operator, error) {
	if job.Operator != nil {
		return job.Operator, nil
	}
	return operators.Lookup(job.Op)
}

// WriteResult writes res to output a batch at a time, each batch's columns
// built from mem as it is written.
func WriteResult(ctx context.Context, res *Result, output string, opts sink.Options, mem memory.Allocator) error {
	return sink.WriteRows(ctx, output, res.Schema(), int64(res.Graph.NumVertices()), func(lo, hi int64) arrow.RecordBatch {
		return res.Rows(mem, int(lo), int(hi))
	}, opts)
}

// WeightColumnNotes notes a weight column an operator ran without, for
// Report.Notes (and bench.Report's and a Flight result's): one named for
// an operator that uses no weights (the column names are the table's,
// named once for every operator of a pipeline, so that is not an error;
// the column is not read at all, and the readers check that it is there);
// and for an operator that uses weights when asked (unweighted pagerank),
// a weight column the table has (unread, the graph's WeightUnread), with
// how to use it. spec is the run's (operators.SpecFor).
func WeightColumnNotes(spec operators.Spec, cols edges.Columns, unread bool) []string {
	name := echo.Quote(cols.WithDefaults().Weight)
	switch {
	case spec.Weighted:
		return nil
	case spec.WeightedParam && (cols.WeightExplicit || unread):
		return []string{fmt.Sprintf("%s ignored weight column %s: unweighted %s (networkx.pagerank(G, weight=None)) counts every out-edge of a vertex the same; pass --weighted to weigh them by the column, as networkx.pagerank(G) does by default",
			spec.Name, name, spec.Name)}
	case !cols.WeightExplicit:
		return nil
	}
	return []string{fmt.Sprintf("weight column %s ignored by %s, which uses no edge weights (the column was not read)", name, spec.Name)}
}

// CheckWeightedParam refuses Params.Weighted with Job.Unweighted: one
// weighs the edges by the weight column, the other reads none.
func CheckWeightedParam(spec operators.Spec, p operators.Params, unweighted bool) error {
	if !spec.WeightedParam || !p.Weighted || !unweighted {
		return nil
	}
	return usererr.New(usererr.Usage, fmt.Sprintf("%s --weighted with --unweighted: one weighs the edges by the weight column, the other reads none", spec.Name),
		"leave one of them out")
}

// MissingWeightNotes notes an operator that uses weights run on a graph
// without any (weighted false): the table has no weight column of the
// default name, so every weight was 1 (sssp's distances count edges),
// which the caller did not say it meant (unweighted). It is a note, not an
// error: a table without weights is a graph whose edges weigh the same.
func MissingWeightNotes(spec operators.Spec, weighted, unweighted bool, cols edges.Columns) []string {
	if !spec.Weighted || weighted || unweighted {
		return nil
	}
	effect, fix := "every edge weighs the same", "pass --unweighted to say weight 1 is meant"
	switch {
	case spec.Name == "sssp":
		effect = "its distances count edges"
	case spec.Name == "sswp":
		effect = "every width is 1"
	case spec.WeightedParam:
		effect, fix = "the ranks are unweighted PageRank's", "leave --weighted out to say that is meant"
	}
	return []string{fmt.Sprintf("%s used weight 1 for every edge, as the input has no weight column %s: %s; name the weight column with --weight-col, or %s",
		spec.Name, echo.Quote(cols.WithDefaults().Weight), effect, fix)}
}

// checkNotInput refuses an output that is the input file itself (by any
// path or link): the result would replace the edges it was computed from.
// Standard input and output are compared too when they are regular files
// (< edges.parquet, 1<> edges.arrows): their descriptors name the files the
// shell opened.
func checkNotInput(job Job) error {
	in, err := inputInfo(job.Input, job.Load.Stdin)
	if err != nil || in == nil {
		return nil // reading the input reports it
	}
	out, err := outputInfo(job.Output, job.Sink.Stdout)
	if err != nil || out == nil || !os.SameFile(in, out) {
		return nil
	}
	what, name := "the input file", "--output "+job.Output
	if job.Input == "-" {
		what = "the file on standard input"
	}
	if job.Output == "-" {
		name = "standard output"
	}
	return usererr.New(usererr.Usage, fmt.Sprintf("%s is %s; writing it would replace the edges", name, what),
		"write the result to another file")
}

// inputInfo is the file a job reads: the input path's, or for "-" standard
// input's (os.Stdin when stdin is nil, as ingest.Open reads it) when that is
// a regular file; nil for a pipe, a terminal or a reader that is no file.
func inputInfo(input string, stdin io.Reader) (os.FileInfo, error) {
	if input != "-" {
		return os.Stat(input)
	}
	if stdin == nil {
		stdin = os.Stdin
	}
	return regularFile(stdin)
}

// outputInfo is the existing file a job would write: the output path's, or
// for "-" standard output's (os.Stdout when stdout is nil, as the sink
// writes it) when that is a regular file.
func outputInfo(output string, stdout io.Writer) (os.FileInfo, error) {
	if output != "-" {
		return os.Stat(output)
	}
	if stdout == nil {
		stdout = os.Stdout
	}
	return regularFile(stdout)
}

// regularFile is the FileInfo of v when it is an *os.File open on a regular
// file, and nil otherwise.
func regularFile(v any) (os.FileInfo, error) {
	f, ok := v.(*os.File)
	if !ok {
		return nil, nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, err
	}
	return st, nil
}

// GPUsUsed is how many GPUs res ran on (0 on the CPU).
func GPUsUsed(res *Result) int {
	switch {
	case res.Backend != "gpu":
		return 0
	case res.GPUs > 0:
		return res.GPUs
	}
	return 1
}
