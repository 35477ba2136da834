package gpuop

import (
	"math"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/operators"
)

// SSWP on the GPU: the vertex program SSWP32 or SSWP64 (kernels/
// vertex_program.cuh) in one of the engine's layouts (vp.go). Widths
// are order keys of floats (unsigned integers ordered as the floats), so
// that the widest path's max is an integer atomic; every width is some
// edge's weight (or the source's +Inf), so float32 keys lose nothing when
// every weight is exact in float32.

// SSWPProgram is the SSWP instance for g's weights.
func (b *GPU) SSWPProgram(g *convert.Graph) Program {
	switch {
	case !g.Weighted:
		return sswpUnit
	case (b == nil || !b.tune.wideValues) && g.Weights().Float32:
		return sswpK32
	}
	return sswpK64
}

// sswpBucketsGPU is how many near-far steps the default Δ cuts the weight
// range into: few, so that each step's frontier is wide.
const sswpBucketsGPU = 8

// runSSWP runs the program SSWP in the plan's layout.
func runSSWP(e *enactor) error {
	g, p := e.g, e.p
	w := g.Weights()
	delta := p.Delta
	if delta == 0 {
		delta = (w.Max - w.Min) / sswpBucketsGPU
		if !(delta > 0) || math.IsInf(delta, 0) {
			delta = math.Inf(1)
		}
	}
	prog := e.b.SSWPProgram(g)
	seed := uint64(Key32(math.Inf(1)))
	if prog.Wide {
		seed = Key64(math.Inf(1))
	}
	r := vpRun{prog: prog, strategy: e.plan.Strategy, cfg: vwcConfigFor(p, &g.Out), delta: delta, top: w.Max, source: e.in.Source, seed: seed, group: p.VertexGroup}
	if r.strategy == strategyKiTES {
		r.delta = kitesDelta(g, r.delta, p.Delta > 0)
	}
	d, err := e.prepareVP(r)
	if err != nil {
		return err
	}
	if err := e.start(); err != nil {
		return err
	}
	if e.res.Iterations, err = d.run(e.ctx); err != nil {
		return err
	}
	if err := e.stop(); err != nil {
		return err
	}
	// Unreached vertices hold key 0: null.
	width, err := downloadFloats(d, Width64, Width32)
	if err != nil {
		return err
	}
	e.res.Strategy = d.describe() + ", " + prog.DescribeValues()
	e.res.EdgesExamined, e.res.EdgesWalked = int64(d.last.Examined), int64(d.last.Walked)
	e.res.Columns = []operators.Column{{Name: "width", Type: operators.Float64Column, Float64: width}}
	return nil
}

// Width64 and width32 read a width from its order key: unreached vertices
// hold key 0, which reads as NaN (null).
func Width64(k uint64) float64 {
	if k == 0 {
		return math.NaN()
	}
	return fromKey64(k)
}

func Width32(k uint32) float64 {
	if k == 0 {
		return math.NaN()
	}
	return fromKey32(k)
}
