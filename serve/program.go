package serve

import (
	"context"

	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/vprog"
)

// programName is what errors call a query's program: it has no file.
const programName = "the query's program"

// operator is the query's operator: its program's (checked here: a bad
// one is an InvalidArgument naming the line and column), or its op's.
func (q *query) operator() (operators.Operator, error) {
	if q.Program == "" {
		return operators.Lookup(q.Op)
	}
	if q.Op != "" {
		return nil, usererr.New(usererr.Usage, `the query names an "op" and a "program"`, "the program is the operator: leave \"op\" out")
	}
	prog, err := vprog.Parse(programName, q.Program)
	if err != nil {
		return nil, err
	}
	return &vprog.Operator{Prog: prog}, nil
}

// runProgram runs a vertex program on g: on the CPU; a GPU run goes
// through pipeline.ProgramBackend where the placement has a device.
func (pl *placement) runProgram(ctx context.Context, g *pipeline.Graph, op *vprog.Operator, p operators.Params) (*pipeline.Result, string, error) {
	res, err := g.RunOp(ctx, op, p, operators.CPU{})
	return res, "vertex programs run on the CPU in the server", err
}
