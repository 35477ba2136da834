package operators

import (
	"context"
	"math"

	"github.com/gpipe/gpipe/convert"
)

// SSWP on the GPU: the vertex program SSWP32 or SSWP64 (kernels/
// vertex_program.cuh) in one of the engine's layouts (gpu_vp.go). Widths
// are order keys of floats (unsigned integers ordered as the floats), so
// that the widest path's max is an integer atomic; every width is some
// edge's weight (or the source's +Inf), so float32 keys lose nothing when
// every weight is exact in float32.

// sswpProgram is the SSWP instance for g's weights.
func sswpProgram(g *convert.Graph) vprogram {
	switch {
	case !g.Weighted:
		return sswpUnit
	case !gpuWideValues && g.Weights().Float32:
		return sswpK32
	}
	return sswpK64
}

func (o SSWP) gpuPlans(g *convert.Graph) []gpuPlan {
	// kites measured slower than vwc for sswp on the grid (273 against 233
	// ms, BENCHMARKS.md): widths settle in fewer, wider waves.
	return monotonePlans(g, false, func(g *convert.Graph, name string, p Params) int64 {
		return vpBytes(g, sswpProgram(g), name, false, p)
	})
}

func (o SSWP) gpuStrategies() []string { return planNames(o.gpuPlans(nil)) }

func (o SSWP) gpuBytes(_ *GPU, g *convert.Graph, p Params) int64 {
	return planBytes("sswp", o.gpuPlans(g), g, p)
}

// sswpBucketsGPU is how many near-far steps the default Δ cuts the weight
// range into: few, so that each step's frontier is wide.
const sswpBucketsGPU = 8

func (o SSWP) runGPU(ctx context.Context, b *GPU, in Input) (*Result, error) {
	if err := checkSource("sswp", in); err != nil {
		return nil, err
	}
	if err := checkDelta("sswp", in.Params.Delta); err != nil {
		return nil, err
	}
	g, p := in.Graph, in.Params
	plan, reason, err := b.choosePlan("sswp", o.gpuPlans(g), g, p)
	if err != nil {
		return nil, err
	}
	w := g.Weights()
	delta := p.Delta
	if delta == 0 {
		delta = (w.Max - w.Min) / sswpBucketsGPU
		if !(delta > 0) || math.IsInf(delta, 0) {
			delta = math.Inf(1)
		}
	}
	prog := sswpProgram(g)
	seed := uint64(key32(math.Inf(1)))
	if prog.wide {
		seed = key64(math.Inf(1))
	}
	r := vpRun{prog: prog, strategy: plan.name, cfg: vwcConfigFor(p, &g.Out), delta: delta, top: w.Max, source: in.Source, seed: seed, group: p.VertexGroup}
	if plan.name == strategyKiTES {
		r.delta = kitesDelta(g, r.delta, p.Delta > 0)
	}
	s, err := b.ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	d, err := b.prepareVP(s, g, r)
	if err != nil {
		return nil, err
	}
	defer d.free()
	t, err := newTimer(b.ctx, s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	iterations, err := d.run(ctx)
	if err != nil {
		return nil, err
	}
	compute, err := t.elapsed(s)
	if err != nil {
		return nil, err
	}
	// Unreached vertices hold key 0: null.
	width, err := downloadFloats(d, width64, width32)
	if err != nil {
		return nil, err
	}
	return &Result{
		Op: "sswp", Backend: "gpu", Strategy: d.describe() + ", " + prog.describeValues(),
		StrategyReason: reason, Iterations: iterations, Compute: compute, Transfer: d.transfer,
		EdgesExamined: int64(d.last.Examined), EdgesWalked: int64(d.last.Walked),
		Columns: []Column{{Name: "width", Type: Float64Column, Float64: width}},
	}, nil
}

// width64 and width32 read a width from its order key: unreached vertices
// hold key 0, which reads as NaN (null).
func width64(k uint64) float64 {
	if k == 0 {
		return math.NaN()
	}
	return fromKey64(k)
}

func width32(k uint32) float64 {
	if k == 0 {
		return math.NaN()
	}
	return fromKey32(k)
}
