package gpuop

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

// Plan is how an operator runs on this GPU, decided once from the graph and
// the request: the strategy (the row of the registry), why it was chosen,
// the layouts it reads and the device memory it takes. Sizing (Fits, Need)
// and the run read the same plan; nothing below re-reads the strategy's
// name. A Plan is an operators.Backend: running it runs its strategy.
type Plan struct {
	// Op is the operator, Strategy the strategy and Reason why: auto's rule
	// for the graph, or that --strategy named it.
	Op, Strategy, Reason string
	// Seed is the paper and section the strategy implements; Layouts the
	// layouts it reads.
	Seed    string
	Layouts []string
	// Bytes is the device memory the run takes: its layouts (those on the
	// GPU already included) and its workspace.
	Bytes int64

	gpu *GPU
	s   *strategy
}

// Name is "gpu".
func (*Plan) Name() string { return "gpu" }

// Run runs the plan's strategy on its GPU. op and in.Params must be those
// the plan was made for.
func (pl *Plan) Run(ctx context.Context, op operators.Operator, in operators.Input) (*operators.Result, error) {
	if op.Spec().Name != pl.Op {
		return nil, fmt.Errorf("gpuop: a plan for %s run for %s (a bug)", pl.Op, op.Spec().Name)
	}
	return pl.gpu.enact(ctx, pl, in)
}

// Plan decides how op runs on g with p on this GPU: the strategy p names,
// or auto's: the first of the operator's order for g (the measured rules'
// order, table.order, ranked by the cost model's estimates) that
// reads every option p gives and fits in the GPU's free memory. It fails
// where op has no GPU strategy, p is not valid for it, or (auto) no
// strategy fits.
func (b *GPU) Plan(op operators.Operator, g *convert.Graph, p operators.Params) (*Plan, error) {
	name := op.Spec().Name
	t := tableOf(name)
	if t == nil {
		return nil, errNoGPUImplementation(name)
	}
	if err := Check(op, p); err != nil {
		return nil, err
	}
	if err := op.Prepare(&p); err != nil {
		return nil, err
	}
	if named(p) {
		return b.newPlan(name, t.lookup(p.Strategy), "named by --strategy", g, p), nil
	}
	order := b.autoOrder(t, name, g, p)
	take, err := candidates(name, order, p)
	if err != nil {
		return nil, err
	}
	var skipped []string
	for _, c := range take {
		if c.s.applies != nil {
			if err = c.s.applies(b, g); err != nil {
				skipped = append(skipped, fmt.Sprintf("%s does not apply (%v)", c.s.name, err))
				continue
			}
		}
		pl := b.newPlan(name, c.s, "auto: "+c.why, g, p)
		if err = b.fitsBytes(g, pl.Bytes); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s needs %d MiB, more than is free", c.s.name, pl.Bytes>>20))
			continue
		}
		if len(take) < len(order) {
			pl.Reason += "; of the strategies that read the options given"
		}
		if len(skipped) > 0 {
			pl.Reason += "; passed over: " + strings.Join(skipped, ", ")
		}
		return pl, nil
	}
	return nil, err
}

func (b *GPU) newPlan(op string, s *strategy, reason string, g *convert.Graph, p operators.Params) *Plan {
	return &Plan{Op: op, Strategy: s.name, Reason: reason, Seed: s.seed, Layouts: s.layouts,
		Bytes: s.bytes(b, g, p), gpu: b, s: s}
}

// Fits says, as a usererr.Backend error naming both sizes, whether the
// plan's run on g fits in its GPU's free memory (counting what is on it
// already).
func (pl *Plan) Fits(g *convert.Graph) error { return pl.gpu.fitsBytes(g, pl.Bytes) }

// Fits says, as a usererr.Backend error naming both sizes, whether a run of
// op on g fits in the GPU's free memory (counting what is on it already).
func (b *GPU) Fits(op operators.Operator, g *convert.Graph, p operators.Params) error {
	pl, err := b.Plan(op, g, p)
	if err != nil {
		return err
	}
	return pl.Fits(g)
}

// Need is the device memory a run of op on g would allocate, with the
// margin Fits keeps: its plan's layouts and workspace, less g's copies on
// the device already.
func (b *GPU) Need(op operators.Operator, g *convert.Graph, p operators.Params) (int64, error) {
	pl, err := b.Plan(op, g, p)
	if err != nil {
		return 0, err
	}
	return b.needBytes(g, pl.Bytes), nil
}

// Run plans op on in's graph and runs the plan, or says why it cannot.
func (b *GPU) Run(ctx context.Context, op operators.Operator, in operators.Input) (*operators.Result, error) {
	pl, err := b.Plan(op, in.Graph, in.Params)
	if err != nil {
		return nil, err
	}
	if err := pl.Fits(in.Graph); err != nil {
		return nil, err
	}
	return pl.Run(ctx, op, in)
}

// errNoGPUImplementation is what the GPU backend says about an operator it
// cannot run yet.
func errNoGPUImplementation(op string) error {
	return usererr.New(usererr.Backend, fmt.Sprintf("operator %s has no GPU implementation yet", op),
		"use --backend cpu (or auto) for it")
}
