package gpipe

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/sink"
)

// Result is an operator's output: one row per vertex of its graph, in
// ascending key order, as Arrow records. Its records hold their own
// references to the memory they use, and stay valid after the graph's
// Release.
type Result struct {
	// Op is the operator that ran; Backend where ("cpu" or "gpu"), and
	// BackendReason why, where the backend was automatic.
	Op, Backend, BackendReason string
	// Strategy is the algorithm or GPU strategy that ran, and
	// StrategyReason why it was chosen.
	Strategy, StrategyReason string
	// GPUs is how many GPUs the run used (0 on the CPU).
	GPUs int
	// Iterations is PageRank's iteration count, BFS's levels.
	Iterations int
	// Unreached counts the vertices whose first column is null: for bfs,
	// sssp and sswp, those the source does not reach.
	Unreached int
	// Compute is the computation's time, as the backend measured it (CUDA
	// events on the GPU).
	Compute time.Duration
	// Warnings are what a caller should know of a result still returned
	// (PageRank stopped at MaxIterations before converging).
	Warnings []string

	res *pipeline.Result
}

// Run runs the operator op (BFS, SSSP, SSWP, PageRank, CC) on the graph
// with parameters p, on the backend LoadOptions chose.
func (g *Graph) Run(ctx context.Context, op string, p Params) (*Result, error) {
	if g.g == nil {
		return nil, usererr.New(usererr.Usage, "Graph.Run after Release", "keep the graph until its last run")
	}
	o, params, err := prepare(op, p)
	if err != nil {
		return nil, libraryError(err)
	}
	if err := g.checkWeights(o, params); err != nil {
		return nil, err
	}
	runner, reason, err := g.backend.For(g.g.Graph, o, params)
	if err != nil {
		return nil, libraryError(err)
	}
	res, err := g.g.Run(ctx, op, params, runner)
	if err != nil {
		return nil, libraryError(err)
	}
	return &Result{
		Op: res.Op, Backend: res.Backend, BackendReason: reason,
		Strategy: res.Strategy, StrategyReason: res.StrategyReason, GPUs: pipeline.GPUsUsed(res),
		Iterations: res.Iterations, Unreached: res.Unreached(), Compute: res.Compute, Warnings: res.Warnings,
		res: res,
	}, nil
}

// prepare looks op up and checks p against it: every parameter set is one
// op takes; the defaults filled in.
func prepare(op string, p Params) (operators.Operator, operators.Params, error) {
	o, err := operators.Lookup(op)
	if err != nil {
		return nil, operators.Params{}, err
	}
	params, set := p.engine()
	if err := operators.CheckSet(o, params, set, fieldName); err != nil {
		return nil, operators.Params{}, err
	}
	if err := o.Prepare(&params); err != nil {
		return nil, operators.Params{}, err
	}
	if err := gpuop.Check(o, params); err != nil {
		return nil, operators.Params{}, err
	}
	return o, params, nil
}

// checkWeights refuses an operator that needs weights >= 0 on a graph with
// a negative one: the graph was loaded for every operator, with finite
// weights.
func (g *Graph) checkWeights(o operators.Operator, p operators.Params) error {
	spec := operators.SpecFor(o, p)
	if !spec.Weighted || spec.Weights != convert.NonNegativeWeights || !g.g.Weighted {
		return nil
	}
	if least := g.g.Weights().Min; least < 0 {
		name, fix := spec.Name, "load it with LoadOptions.Unweighted, or run sswp"
		if spec.WeightedParam {
			name, fix = "weighted "+spec.Name, "run it without Params.Weighted, or load the graph without negative weights"
		}
		return usererr.InFile(g.g.Name, fmt.Sprintf("the graph has negative edge weights (the smallest is %v) and %s needs weights >= 0", least, name), fix)
	}
	return nil
}

// fieldName is a parameter's name as Params writes it: max_iterations is
// Params.MaxIterations.
func fieldName(param string) string {
	var b strings.Builder
	b.WriteString("Params.")
	for _, word := range strings.Split(param, "_") {
		if word == "vwarp" {
			word = "vWarp"
		}
		b.WriteString(strings.ToUpper(word[:1]) + word[1:])
	}
	return b.String()
}

// libraryHints rewrites the command line's flags in the engine's messages
// into the library's options.
var libraryHints = strings.NewReplacer(
	`pass --source KEY (in a Flight ticket: "source")`, "set Params.Source",
	"--skip-invalid", "LoadOptions.SkipInvalid",
	"--input-format", "LoadOptions.Format",
	"--src-col", "LoadOptions.Src",
	"--dst-col", "LoadOptions.Dst",
	"--weight-col", "LoadOptions.Weight",
	"pass --unweighted", "set LoadOptions.Unweighted",
	"pass --weighted", "set Params.Weighted",
	"leave --weighted out", "leave Params.Weighted unset",
	"--weighted with --unweighted", "Params.Weighted with LoadOptions.Unweighted",
	"pass --header yes", `set LoadOptions.Header to "yes"`,
	"pass --header no", `set LoadOptions.Header to "no"`,
	"--header yes", `LoadOptions.Header "yes"`,
	"--header no", `LoadOptions.Header "no"`,
	"pass --delimiter tab", `set LoadOptions.Delimiter to '\t'`,
	"pass --delimiter", "set LoadOptions.Delimiter to",
	"--delimiter tab", `LoadOptions.Delimiter '\t'`,
	"--delimiter", "LoadOptions.Delimiter",
	"--backend", "LoadOptions.Backend",
	"--gpus", "LoadOptions.GPUs",
	"--strategy", "Params.Strategy",
	"--vertex-group", "Params.VertexGroup",
	"--delta", "Params.Delta",
	"(--s3-endpoint, AWS_ENDPOINT_URL)", "(AWS_ENDPOINT_URL)",
)

// libraryError is err with the fix written for a program: an Error's
// flags named as the library's options. Other errors pass unchanged.
func libraryError(err error) error {
	e, ok := err.(*usererr.Error)
	if !ok {
		return err
	}
	c := *e
	c.Problem, c.Fix = libraryHints.Replace(c.Problem), libraryHints.Replace(c.Fix)
	return &c
}

// Schema is the result's Arrow schema: the vertex key ("vertex", of the
// input's key type), then the operator's columns, nullable.
func (r *Result) Schema() *arrow.Schema { return r.res.Schema() }

// NumRows is the number of rows: the graph's vertices.
func (r *Result) NumRows() int { return r.res.Graph.NumVertices() }

// Record is the whole result as one record (columns vertex, then the
// operator's: bfs depth and parent, sssp distance and parent, sswp width,
// pagerank rank, cc component). Numeric columns and integer keys are not
// copied. The caller releases it.
func (r *Result) Record() arrow.RecordBatch { return r.res.Record(memory.DefaultAllocator) }

// DefaultBatchRows is the rows of a record RecordReader yields by default.
const DefaultBatchRows = 1 << 16

// RecordReader yields the result as records of at most batchRows rows
// (DefaultBatchRows where batchRows <= 0), each made as it is asked for:
// what a program hands to its next stage without a file. The caller
// releases it.
func (r *Result) RecordReader(batchRows int) array.RecordReader {
	if batchRows <= 0 {
		batchRows = DefaultBatchRows
	}
	rd := &resultReader{res: r.res, schema: r.Schema(), batch: batchRows}
	rd.refs.Store(1)
	return rd
}

// Write writes the result to output, as its extension (or opts.Format)
// says: .parquet, .arrow/.feather (Arrow IPC file), .arrows (IPC stream),
// .csv; "-" is an Arrow IPC stream on opts.Stdout. The file appears whole
// or not at all.
func (r *Result) Write(ctx context.Context, output string, opts WriteOptions) error {
	return libraryError(pipeline.WriteResult(ctx, r.res, output, opts, memory.DefaultAllocator))
}

// WriteOptions say how a result or records are written: the format where
// the extension does not say, the compression, the rows of a Parquet row
// group or an Arrow record batch, and where "-" goes.
type WriteOptions = sink.Options

// WriteRecords writes the records rr yields to output, as Result.Write
// does (any schema: a result, or records a program made). It reads rr to
// its end; the caller still releases it. On error, or when ctx ends,
// nothing is left at output (an existing file stays as it was).
func WriteRecords(ctx context.Context, output string, rr array.RecordReader, opts WriteOptions) error {
	w, err := sink.Create(output, rr.Schema(), opts)
	if err != nil {
		return libraryError(err)
	}
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			w.Abort()
			return err
		}
		if err := w.Write(rr.RecordBatch()); err != nil {
			w.Abort()
			return libraryError(err)
		}
	}
	if err := rr.Err(); err != nil {
		w.Abort()
		return err
	}
	return libraryError(w.Close())
}

// resultReader is Result.RecordReader.
type resultReader struct {
	res    *pipeline.Result
	schema *arrow.Schema
	batch  int
	next   int
	cur    arrow.RecordBatch
	refs   atomic.Int64
}

func (rd *resultReader) Schema() *arrow.Schema { return rd.schema }
func (rd *resultReader) Err() error            { return nil }
func (rd *resultReader) Retain()               { rd.refs.Add(1) }

// RecordBatch is the current record, valid until the next Next.
func (rd *resultReader) RecordBatch() arrow.RecordBatch { return rd.cur }

// Record is RecordBatch under the name arrow-go deprecated, which its
// RecordReader interface still lists.
func (rd *resultReader) Record() arrow.RecordBatch { return rd.cur }

func (rd *resultReader) Next() bool {
	rd.drop()
	n := rd.res.Graph.NumVertices()
	if rd.next >= n {
		return false
	}
	hi := min(rd.next+rd.batch, n)
	rd.cur = rd.res.Rows(memory.DefaultAllocator, rd.next, hi)
	rd.next = hi
	return true
}

func (rd *resultReader) Release() {
	if rd.refs.Add(-1) == 0 {
		rd.drop()
	}
}

func (rd *resultReader) drop() {
	if rd.cur != nil {
		rd.cur.Release()
		rd.cur = nil
	}
}
