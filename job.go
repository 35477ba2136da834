package gpipe

import (
	"context"

	"github.com/gpipe/gpipe/internal/pipeline"
)

// Job is one whole run, as `gpipe run` does it: read Input, build its
// graph for Op, run Op, write the result to Output.
type Job struct {
	// Input is the edge table, as Load takes it ("-": Load.Stdin).
	Input string
	// Output is where the result goes, as Result.Write takes it; empty
	// writes nothing (Report.Result holds the result).
	Output string
	// Op is the operator (BFS, SSSP, SSWP, PageRank, CC) and Params its
	// parameters.
	Op     string
	Params Params
	// Load says how the input is read and where the job runs (Name is
	// not used).
	Load LoadOptions
	// Write says how the output is written.
	Write WriteOptions
}

// RunJob runs a whole job. The operator, its parameters and the output are
// checked before any input is read, so that a mistake fails at once; an
// output that is the input file is refused. Only what the operator needs
// is read: no weights for bfs, pagerank and cc (a weight column named in
// Load must still exist), weights checked to be >= 0 for sssp.
func RunJob(ctx context.Context, job Job) (*Report, error) {
	if _, _, err := prepare(job.Op, job.Params); err != nil {
		return nil, libraryError(err)
	}
	cols, err := job.Load.columns()
	if err != nil {
		return nil, err
	}
	header, delim, err := job.Load.text(job.Input)
	if err != nil {
		return nil, err
	}
	params, _ := job.Params.engine()
	rep, err := pipeline.RunJob(ctx, pipeline.Job{
		Input: job.Input, Output: job.Output, Op: job.Op, Params: params,
		Load: pipeline.LoadOptions{
			Columns: cols, Format: job.Load.Format, Undirected: job.Load.Undirected,
			SkipInvalid: job.Load.SkipInvalid, Stdin: job.Load.Stdin, Header: header, Delimiter: delim,
		},
		Backend: job.Load.Backend, GPUs: job.Load.GPUs, Model: job.Load.model, Unweighted: job.Load.Unweighted, Sink: job.Write,
	})
	if err != nil {
		return nil, libraryError(err)
	}
	return newReport(rep), nil
}

// Report says what a job did and what each stage cost; its JSON is
// `gpipe run --json`'s.
type Report struct {
	Input    string `json:"input"`
	Output   string `json:"output,omitempty"`
	Op       string `json:"op"`
	Backend  string `json:"backend"`
	Strategy string `json:"strategy"`
	GPUs     int    `json:"gpus"`
	// StrategyReason and BackendReason say why the strategy and the
	// backend were chosen.
	StrategyReason string  `json:"strategy_reason,omitempty"`
	BackendReason  string  `json:"backend_reason,omitempty"`
	Timings        Timings `json:"timings"`
	// RowsRead counts the input's rows; RowsSkipped those SkipInvalid
	// dropped, which Skipped counts by reason.
	RowsRead    int64            `json:"rows_read"`
	RowsSkipped int64            `json:"rows_skipped"`
	Skipped     map[string]int64 `json:"skipped,omitempty"`
	Vertices    int              `json:"vertices"`
	// Edges is the stored directed edges after cleaning; InputEdges the
	// rows that entered the build, SelfLoops and MergedEdges what
	// cleaning dropped and merged.
	Edges       int64 `json:"edges"`
	InputEdges  int64 `json:"input_edges"`
	SelfLoops   int64 `json:"self_loops_dropped"`
	MergedEdges int64 `json:"parallel_edges_merged"`
	// BuildDevice is where the graph was built ("gpu" or "cpu"), and
	// BuildReason why the host built it for a job a GPU may run.
	BuildDevice string `json:"build_device"`
	BuildReason string `json:"build_reason,omitempty"`
	// PeakHostBytes is the process's peak resident set at the job's end.
	PeakHostBytes int64 `json:"peak_host_bytes,omitempty"`
	Iterations    int   `json:"iterations"`
	Unreached     int   `json:"unreached,omitempty"`
	// Warnings are printed by the command line; Notes say what the job did
	// with what it was given that a reader might not expect.
	Warnings []string `json:"warnings,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// Result is the operator's output.
	Result *Result `json:"-"`

	rep *pipeline.Report
}

// Timings are stage wall times in seconds.
type Timings struct {
	Read    float64 `json:"read_s"`
	Build   float64 `json:"build_s"`
	Compute float64 `json:"compute_s"`
	// Transfer is the copy of the graph to the GPU; Upload the part of
	// Build that copied the edge columns to it, where it built the graph.
	Transfer float64 `json:"transfer_s"`
	Upload   float64 `json:"upload_s,omitempty"`
	// GPUInit is the GPU's set-up for the job (the driver, the context,
	// the build's staging ring and kernels; 0 where none was needed or it
	// was done before), GPUInitHidden the part of it done while the input
	// was read.
	GPUInit       float64 `json:"gpu_init_s"`
	GPUInitHidden float64 `json:"gpu_init_hidden_s"`
	Write         float64 `json:"write_s"`
	Total         float64 `json:"total_s"`
}

// Release frees the job's graph. Records of Result stay valid.
func (r *Report) Release() { r.rep.Release() }

func newReport(rep *pipeline.Report) *Report {
	t := rep.Timings
	res := rep.Result
	return &Report{
		Input: rep.Input, Output: rep.Output, Op: rep.Op, Backend: rep.Backend, Strategy: rep.Strategy, GPUs: rep.GPUs,
		StrategyReason: rep.StrategyReason, BackendReason: rep.BackendReason,
		Timings: Timings{Read: t.Read, Build: t.Build, Compute: t.Compute, Transfer: t.Transfer, Upload: t.Upload,
			GPUInit: t.GPUInit, GPUInitHidden: t.GPUInitHidden, Write: t.Write, Total: t.Total},
		RowsRead: rep.RowsRead, RowsSkipped: rep.RowsSkipped, Skipped: rep.Skipped, Vertices: rep.Vertices,
		Edges: rep.Edges, InputEdges: rep.InputEdges, SelfLoops: rep.SelfLoops, MergedEdges: rep.MergedEdges,
		BuildDevice: rep.BuildDevice, BuildReason: rep.BuildReason, PeakHostBytes: rep.PeakHostBytes,
		Iterations: rep.Iterations, Unreached: rep.Unreached, Warnings: rep.Warnings, Notes: libraryNotes(rep.Notes),
		Result: &Result{
			Op: res.Op, Backend: res.Backend, BackendReason: rep.BackendReason, Strategy: res.Strategy,
			StrategyReason: res.StrategyReason, GPUs: rep.GPUs, Iterations: res.Iterations, Unreached: rep.Unreached,
			Compute: res.Compute, Warnings: res.Warnings, res: res,
		},
		rep: rep,
	}
}

// libraryNotes are a report's notes with the command line's flags named as
// the library's options.
func libraryNotes(notes []string) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = libraryHints.Replace(n)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
