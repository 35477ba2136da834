package serve

import (
	"context"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/vprog"
	"github.com/gpipe/gpipe/operators/vprog/vpgpu"
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

// A vertex program runs where the built-ins run (placement.run): on the
// GPU when there is one and the run fits in its memory, else on the CPU
// (--backend auto) or refused (--backend gpu). On the device, package
// vpgpu compiles and runs it with its own copies of the graph's layouts
// (the graph's resident copies are gpuop's); its memory is
// vpgpu.Need's. Under auto a program always takes the GPU: the cost
// model has no row for a user's code.

// Need is the device memory a run of op on g takes: a program's from
// vpgpu, a built-in's from gpuop.
func (d deviceGPU) Need(op operators.Operator, g *convert.Graph, p operators.Params) (int64, error) {
	if vp, ok := op.(*vprog.Operator); ok {
		return vpgpu.Need(vp.Prog, g, p.Strategy), nil
	}
	return d.GPU.Need(op, g, p)
}

// Run runs op on the GPU: a program through vpgpu, a built-in through
// gpuop.
func (d deviceGPU) Run(ctx context.Context, op operators.Operator, in operators.Input) (*operators.Result, error) {
	if _, ok := op.(*vprog.Operator); ok {
		return vpgpu.Backend{Ctx: d.Context()}.Run(ctx, op, in)
	}
	return d.GPU.Run(ctx, op, in)
}
