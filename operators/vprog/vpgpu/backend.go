package vpgpu

import (
	"context"
	"fmt"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/vprog"
)

// Backend runs vertex programs (vprog.Operator) on the GPU of Ctx.
type Backend struct {
	Ctx *gpu.Context
}

// Name is "gpu".
func (Backend) Name() string { return "gpu" }

// Run runs op, a vertex program, on the GPU.
func (b Backend) Run(ctx context.Context, op operators.Operator, in operators.Input) (*operators.Result, error) {
	vp, ok := op.(*vprog.Operator)
	if !ok {
		return nil, usererr.New(usererr.Internal, fmt.Sprintf("the vertex-program backend cannot run operator %s", op.Spec().Name), "")
	}
	if err := in.Graph.Materialize(); err != nil {
		return nil, err
	}
	src := int64(-1)
	if vp.Prog.NeedsSource {
		src = int64(in.Source)
	}
	out, st, err := Run(ctx, b.Ctx, vp.Prog, vprog.Input{Graph: in.Graph, Source: src}, Options{Strategy: in.Params.Strategy, VWarp: in.Params.VWarp})
	if err != nil {
		return nil, err
	}
	res, err := vp.Result(in.Graph, out)
	if err != nil {
		return nil, err
	}
	res.Backend, res.Strategy, res.Compute, res.Transfer = "gpu", st.Strategy, st.Compute, st.Transfer
	res.StrategyReason = st.Reason + "; " + st.Shape()
	return res, nil
}
