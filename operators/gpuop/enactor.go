package gpuop

import (
	"context"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators"
)

// enactor is one run of a plan on the GPU, the loop every strategy runs in
// (an enactor in Gunrock's sense): it checks the input, fetches the host
// edges where the strategy builds a layout from them, gives the strategy a
// stream, the graph's layouts on the device (their copy timed as the run's
// transfer), work buffers (poisoned under GPU.Poison, freed with the run),
// kernels, a timer for the computation, and the result it fills; then it
// frees what the run took and gives the result's memory its release. A
// strategy's run (strategy.run) is only its own steps.
type enactor struct {
	ctx  context.Context
	b    *GPU
	plan *Plan
	in   operators.Input
	g    *convert.Graph
	p    operators.Params // in.Params, with the operator's defaults filled in
	res  *operators.Result
	mem  *resultMem
	s    *gpu.Stream // the run's stream (stream), made on first use
	t    *timer
	done Releases
}

// enact runs pl's strategy on in.
func (b *GPU) enact(ctx context.Context, pl *Plan, in operators.Input) (*operators.Result, error) {
	op, err := operators.Lookup(pl.Op)
	if err != nil {
		return nil, err
	}
	p := in.Params
	if err := op.Prepare(&p); err != nil {
		return nil, err
	}
	if op.Spec().NeedsSource {
		if err := operators.CheckSource(pl.Op, in); err != nil {
			return nil, err
		}
	}
	if pl.s.hostEdges {
		if err := in.Graph.Materialize(); err != nil {
			return nil, err
		}
	}
	e := &enactor{ctx: ctx, b: b, plan: pl, in: in, g: in.Graph, p: p, mem: newResultMem(ctx, b),
		res: &operators.Result{Op: pl.Op, Backend: "gpu", Strategy: pl.Strategy, StrategyReason: pl.Reason}}
	err = e.run()
	if err != nil {
		e.mem.abandon()
		return nil, err
	}
	e.res.OnRelease(e.mem.release)
	return e.res, nil
}

// run runs the strategy and frees what it took. A context canceled
// already stops it before any work (persist, one launch, looks at the
// context nowhere else).
func (e *enactor) run() error {
	defer e.done.Free()
	if err := e.ctx.Err(); err != nil {
		return err
	}
	return e.plan.s.run(e)
}

// stream is the run's stream.
func (e *enactor) stream() (*gpu.Stream, error) {
	if e.s == nil {
		s, err := e.b.ctx.NewStream()
		if err != nil {
			return nil, err
		}
		e.s = s
		e.done.Add(func() { s.Destroy() })
	}
	return e.s, nil
}

// adopt makes s the run's stream, where a strategy's search made its own
// (its timer and downloads go on it); the search destroys it.
func (e *enactor) adopt(s *gpu.Stream) {
	if e.s == nil {
		e.s = s
	}
}

// layouts are the graph's parts on the device, copied there on first use
// (the copy's time added to the result's transfer) and kept with the graph
// for later runs.
func (e *enactor) layouts(parts ...Layout) ([]*gpu.DeviceBuffer, error) {
	return e.layoutsOf(e.g, parts...)
}

// layoutsOf are the parts of g, a graph made from the run's (its chains'
// contraction), as layouts gives the run's.
func (e *enactor) layoutsOf(g *convert.Graph, parts ...Layout) ([]*gpu.DeviceBuffer, error) {
	s, err := e.stream()
	if err != nil {
		return nil, err
	}
	bufs, transfer, err := e.b.Layouts(g, s, parts...)
	e.res.Transfer += transfer
	return bufs, err
}

// csrLayouts are g's offsets, targets and prog's weights (nil without),
// as layoutsOf gives them.
func (e *enactor) csrLayouts(g *convert.Graph, prog Program) ([]*gpu.DeviceBuffer, error) {
	bufs, err := e.layoutsOf(g, prog.csrParts()...)
	if err != nil || len(bufs) == 3 {
		return bufs, err
	}
	return append(bufs, nil), nil
}

// buffers are work buffers of the sizes given, poisoned under GPU.Poison
// and freed when the run ends.
func (e *enactor) buffers(sizes ...int64) ([]*gpu.DeviceBuffer, error) {
	s, err := e.stream()
	if err != nil {
		return nil, err
	}
	bufs, free, err := e.b.Buffers(sizes...)
	if err != nil {
		return nil, err
	}
	e.done.Add(free)
	return bufs, e.b.PoisonBuffers(s, bufs...)
}

// kernels are the kernels of module called names.
func (e *enactor) kernels(module string, names ...string) ([]*Kernel, error) {
	ks := make([]*Kernel, len(names))
	for i, name := range names {
		k, err := e.b.Kernel(module, name)
		if err != nil {
			return nil, err
		}
		ks[i] = k
	}
	return ks, nil
}

// start starts the computation's timer on the run's stream.
func (e *enactor) start() error {
	s, err := e.stream()
	if err != nil {
		return err
	}
	t, err := newTimer(e.b.ctx, s)
	if err != nil {
		return err
	}
	e.t = t
	e.done.Add(t.destroy)
	return nil
}

// stop stops the timer: the result's compute time.
func (e *enactor) stop() error {
	d, err := e.t.elapsed(e.s)
	e.res.Compute = d
	return err
}

// column is n elements of T for a result column, in memory the result's
// release gives back (resultMem).
func column[T gpu.Scalar](e *enactor, n int) []T { return resultSlice[T](e.mem, n) }
