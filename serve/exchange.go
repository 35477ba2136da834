package serve

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators"
)

// DoExchange is a whole job in one call, for clients that do not want the
// server to keep the graph: the client sends the edges (the descriptor's
// command holds the upload's options, "op" and the operator's parameters)
// and closes its side; the server builds the graph as `gpipe run` would for
// that operator, runs it, streams the result back, and frees the graph.
func (s *service) DoExchange(stream flight.FlightService_DoExchangeServer) error {
	ctx := stream.Context()
	call := logOf(ctx)
	up, err := s.openUpload(stream, "the exchange")
	if err != nil {
		return err
	}
	defer up.release()
	var opts exchangeOptions
	err = readDescriptor(up.desc, "DoExchange", &opts, exchangeFix)
	call.names(opts.Graph, opts.Op)
	if err != nil {
		return err
	}
	if err := opts.check(); err != nil {
		return err
	}
	label := "exchange"
	if opts.Graph != "" {
		if err := checkName(opts.Graph); err != nil {
			return err
		}
		label = "exchange " + opts.Graph
	}
	q := opts.query()
	op, err := q.prepare(s.cfg.MaxIterations)
	if err != nil {
		return err
	}

	// The operator is known before the edges arrive, so the graph is built
	// for it alone, with `gpipe run`'s options: weights read only when it
	// uses them, and checked by its rule.
	spec := operators.SpecFor(op, q.Params)
	if err := pipeline.CheckWeightedParam(spec, q.Params, opts.Unweighted); err != nil {
		return err
	}
	t, held, err := s.receive(ctx, up, label, opts.ingestOptions(spec.Weighted))
	if err != nil {
		return err
	}
	g, err := s.build(ctx, t, held, pipeline.LoadOptions{
		Undirected:  opts.Undirected,
		SkipInvalid: opts.SkipInvalid,
		Weights:     spec.Weights,
		BuildIn:     spec.NeedsIn,
	}, false)
	if err != nil {
		return err
	}
	defer g.free()
	// The build applied the operator's weight rule already.
	res, note, err := s.run(ctx, g.Graph, math.Inf(1), op, q)
	if err != nil {
		return err
	}
	meta := resultMeta{
		Graph: opts.Graph, Vertices: g.NumVertices(), Edges: g.NumEdges(), BackendNote: note,
		InputRows: g.RowsRead, SkippedRows: g.Skipped.Total(), Notes: resultNotes(g.Graph, q, opts.Unweighted),
	}
	defer s.releaseResult(res)
	return s.sendResult(ctx, stream, res, q.BatchRows, meta)
}
