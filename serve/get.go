package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// DoGet runs the ticket's query on a stored graph and streams the result:
// the columns of `gpipe run` (vertex, then the operator's), one row per
// vertex in ascending key order, in batches of at most BatchRows rows.
// The query runs to its end before the first batch is sent, so that every
// error is a status rather than a stream cut short.
func (s *service) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	ctx := stream.Context()
	return s.query(ctx, tkt.GetTicket(), func(q query, sg *storedGraph, res *pipeline.Result, note string) error {
		meta := resultMeta{Graph: q.Graph, Vertices: sg.info.Vertices, Edges: sg.info.Edges, BackendNote: note,
			Notes: resultNotes(sg.g, q, sg.unweighted)}
		return s.sendResult(ctx, stream, res, q.BatchRows, meta)
	})
}

// query runs a DoGet ticket's query on its stored graph and hands the
// result to send, the graph held until send returns and the result
// released then.
func (s *service) query(ctx context.Context, ticket []byte, send func(q query, sg *storedGraph, res *pipeline.Result, note string) error) error {
	q, err := parseTicket(ticket)
	logOf(ctx).names(q.Graph, q.Op)
	if err != nil {
		return err
	}
	op, err := q.prepare(s.cfg.MaxIterations)
	if err != nil {
		return err
	}
	sg, err := s.graphs.acquire(q.Graph)
	if err != nil {
		return err
	}
	defer s.graphs.release(sg)
	res, note, err := s.run(ctx, sg.g, sg.minWeight, op, q)
	if err != nil {
		return err
	}
	defer s.releaseResult(res)
	return send(q, sg, res, note)
}

// releaseResult gives a sent result's memory to later runs. sendResult
// returns once its encoders have stopped and its messages are copies:
// nothing holds the columns then, whether the client read them all, went
// away or stalled past --result-idle-timeout.
func (s *service) releaseResult(res *pipeline.Result) {
	res.Release()
	if s.released != nil {
		s.released()
	}
}

// run runs a prepared query on g in a job slot, where the placement says;
// note says why there, when that was chosen.
func (s *service) run(ctx context.Context, g *pipeline.Graph, minWeight float64, op operators.Operator, q query) (res *pipeline.Result, note string, err error) {
	spec := operators.SpecFor(op, q.Params)
	if spec.Weighted && spec.Weights == convert.NonNegativeWeights && minWeight < 0 {
		name, fix := spec.Name, `put the graph again without them (or with "unweighted": true), or use sswp`
		if spec.WeightedParam {
			name, fix = "weighted "+spec.Name, `run it without "weighted", or put the graph again without negative weights`
		}
		return nil, "", usererr.New(usererr.Usage,
			fmt.Sprintf("graph %q has negative edge weights (the smallest is %v) and %s needs weights >= 0", q.Graph, minWeight, name), fix)
	}
	release, err := s.jobs.acquire(ctx, g.NumEdges() <= s.cfg.smallJobEdges)
	if err != nil {
		return nil, "", err
	}
	defer release()
	qctx := ctx
	if d := s.cfg.MaxQueryTime; d > 0 {
		var cancel context.CancelFunc
		qctx, cancel = context.WithTimeoutCause(ctx, d, errQueryTime)
		defer cancel()
	}
	// Every caller releases the result once sent (DoGet, DoExchange), so
	// a GPU run may download into pinned memory, lent until then.
	res, note, err = s.place.run(gpuop.PinnedResults(qctx), g, op, q.Params)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(qctx), errQueryTime) {
		return nil, "", status.Errorf(codes.DeadlineExceeded,
			"%s ran longer than the server's limit of %v (--max-query-time) and was stopped: ask for less work (for pagerank a larger tolerance or fewer max_iterations), or ask for a longer limit",
			op.Spec().Name, s.cfg.MaxQueryTime)
	}
	return res, note, err
}

// errQueryTime is the cause of a query's context ending at --max-query-time.
var errQueryTime = errors.New("the query ran past --max-query-time")

// resultMeta is the JSON in a result's schema metadata, under the key
// "gpipe": what ran, where, and what it says about the result.
type resultMeta struct {
	Graph   string `json:"graph,omitempty"`
	Op      string `json:"op"`
	Backend string `json:"backend"`
	// BackendNote says why the query ran where it did, when that was
	// chosen (--backend auto): no usable GPU, or no room on it.
	BackendNote string   `json:"backend_note,omitempty"`
	Strategy    string   `json:"strategy"`
	Iterations  int      `json:"iterations"`
	Compute     float64  `json:"compute_s"`
	Transfer    float64  `json:"transfer_s,omitempty"`
	Vertices    int      `json:"vertices"`
	Edges       int64    `json:"edges"`
	Unreached   int      `json:"unreached"`
	Warnings    []string `json:"warnings,omitempty"`
	// Notes say what the graph's upload and the query did that a reader
	// of the result might not expect, as `gpipe run --json`'s do: weights
	// taken as 1 by an operator that uses them, decimal weights rounded.
	Notes []string `json:"notes,omitempty"`
	// An exchange's upload: rows read and skipped.
	InputRows   int64 `json:"input_rows,omitempty"`
	SkippedRows int64 `json:"skipped_rows"`
}

// resultNotes are the notes of q's result on g: the upload's;
// pipeline.MissingWeightNotes where the operator uses weights g has none
// of and the upload did not say it meant that (unweighted); and
// pipeline.WeightColumnNotes where unweighted pagerank ran on a graph with
// weights (stored with them, or an exchange's column left unread). Flags
// become the fields a client sets.
func resultNotes(g *pipeline.Graph, q query, unweighted bool) []string {
	notes := slices.Clone(g.Notes)
	if o, err := operators.Lookup(q.Op); err == nil {
		spec := operators.SpecFor(o, q.Params)
		unread := (g.Weighted || g.WeightUnread) && !unweighted
		notes = slices.Concat(pipeline.WeightColumnNotes(spec, edges.Columns{}, unread), notes,
			pipeline.MissingWeightNotes(spec, g.Weighted, unweighted, edges.Columns{}))
	}
	for i, n := range notes {
		notes[i] = wireHints.Replace(n)
	}
	return notes
}

// MetadataKey is the result schema's metadata key whose value is a JSON
// object saying what ran (op, backend, strategy, iterations, compute_s,
// warnings, ...).
const MetadataKey = "gpipe"

// resultSchema is the schema of op's result on g, without running it: what
// GetFlightInfo and GetSchema answer for a query.
func resultSchema(g *pipeline.Graph, op operators.Operator) *arrow.Schema {
	var cols []operators.Column
	for _, c := range op.Spec().Columns {
		cols = append(cols, operators.Column{Name: c.Name, Type: c.Type})
	}
	return (&pipeline.Result{Result: &operators.Result{Columns: cols}, Graph: g}).Schema()
}
