package operators

import (
	"context"
	"fmt"
	"math"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
)

// CC on the GPU: Afforest with lock-free path halving (kernels/
// cc_afforest.cu), or label propagation to the smallest id as a vertex
// program (CCLabel) in the engine's layouts: the CSR push along out- and
// in-edges, or the symmetric shards. Every strategy labels a component with
// its smallest vertex id, as the CPU does.

func (o CC) gpuPlans(*convert.Graph) []gpuPlan {
	plan := func(name, why string) gpuPlan {
		return gpuPlan{name: name, why: why, vwarp: name == strategyVWC, vwc: name == strategyVWC, group: name == strategyKiTES,
			bytes: func(g *convert.Graph, p Params) int64 { return vpBytes(g, ccLabels, name, true, p) }}
	}
	return []gpuPlan{
		// Afforest's last phase is virtual warp-centric: it reads --vwarp.
		{name: strategyAfforest, bytes: afforestBytes, vwarp: true,
			why: "Afforest links two neighbours a vertex, then only the edges of vertices outside the largest component: a few passes over the vertices where label propagation sweeps the edges once a diameter step; measured fastest for cc on every graph (BENCHMARKS.md)"},
		plan(strategyVWC, "label propagation, CSR push"),
		plan(strategyGShards, "label propagation, G-Shards"),
		plan(strategyCW, "label propagation, Concatenated Windows"),
		plan(strategyKiTES, "label propagation, KiTES"),
		plan(strategyWarpSeg, "label propagation, Warp Segmentation"),
	}
}

func (o CC) gpuStrategies() []string { return planNames(o.gpuPlans(nil)) }

func (o CC) gpuBytes(_ *GPU, g *convert.Graph, p Params) int64 {
	return planBytes("cc", o.gpuPlans(g), g, p)
}

func afforestParts(g *convert.Graph) []layout {
	parts := []layout{outOffsets, outTargets}
	if g.Directed {
		parts = append(parts, inOffsets, inSources)
	}
	return parts
}

func afforestBytes(g *convert.Graph, _ Params) int64 {
	return layoutBytes(g, afforestParts(g)...) + int64(g.NumVertices())*4 + 8
}

func (o CC) runGPU(ctx context.Context, b *GPU, in Input) (*Result, error) {
	g, p := in.Graph, in.Params
	n := g.NumVertices()
	plan, reason, err := b.choosePlan("cc", o.gpuPlans(g), g, p)
	if err != nil {
		return nil, err
	}
	res := &Result{Op: "cc", Backend: "gpu", Strategy: plan.name, StrategyReason: reason}
	if n == 0 {
		res.Columns = []Column{{Name: "component", Type: VertexColumn, Vertex: []uint32{}}}
		return res, nil
	}
	s, err := b.ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	var comp []uint32
	if plan.name == strategyAfforest {
		comp, err = b.afforest(ctx, s, g, vwcConfigFor(p, &g.Out), res)
	} else {
		comp, err = b.ccLabelPropagation(ctx, s, g, plan.name, p, res)
	}
	if err != nil {
		return nil, err
	}
	res.Columns = []Column{{Name: "component", Type: VertexColumn, Vertex: comp}}
	return res, nil
}

// ccLabelPropagation runs CCLabel in a layout of the engine.
func (b *GPU) ccLabelPropagation(ctx context.Context, s *gpu.Stream, g *convert.Graph, strategy string, p Params, res *Result) ([]uint32, error) {
	r := vpRun{prog: ccLabels, strategy: strategy, cfg: vwcConfigFor(p, &g.Out), delta: math.Inf(1), labels: true, both: true, group: p.VertexGroup}
	d, err := b.prepareVP(s, g, r)
	if err != nil {
		return nil, err
	}
	defer d.free()
	res.Transfer = d.transfer
	t, err := newTimer(b.ctx, s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	if res.Iterations, err = d.run(ctx); err != nil {
		return nil, err
	}
	if res.Compute, err = t.elapsed(s); err != nil {
		return nil, err
	}
	res.Strategy = d.describe() + ", label propagation"
	res.EdgesExamined, res.EdgesWalked = int64(d.last.Examined), int64(d.last.Walked)
	return download[uint32](d)
}

// afforest runs kernels/cc_afforest.cu: afforestRounds (cc.go) sampling
// rounds, each a link and a compress, the most frequent label found on the
// device, the remaining edges of the other vertices, and a last compress.
func (b *GPU) afforest(ctx context.Context, s *gpu.Stream, g *convert.Graph, cfg vwcConfig, res *Result) ([]uint32, error) {
	n := int64(g.NumVertices())
	parts, transfer, err := b.layouts(g, s, afforestParts(g)...)
	if err != nil {
		return nil, err
	}
	res.Transfer = transfer
	offs, targets := parts[0], parts[1]
	var inOffs, inSrcs *gpu.DeviceBuffer
	if g.Directed {
		inOffs, inSrcs = parts[2], parts[3]
	}
	names := []string{"cc_init", "cc_link_round", "cc_compress", "cc_sample", fmt.Sprintf("cc_link_rest_k%d", cfg.k)}
	k := make([]*launchable, len(names))
	for i, name := range names {
		if k[i], err = b.kernel(kernels.CCAfforest, name); err != nil {
			return nil, err
		}
	}
	initComp, linkRound, compress, sample, linkRest := k[0], k[1], k[2], k[3], k[4]
	bufs, free, err := b.buffers(n*4, 8)
	if err != nil {
		return nil, err
	}
	defer free()
	comp, skip := bufs[0], bufs[1]
	if err := b.poison(s, bufs...); err != nil {
		return nil, err
	}
	t, err := newTimer(b.ctx, s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	if err := initComp.launch(s, comp, n); err != nil {
		return nil, err
	}
	for r := int64(0); r < afforestRounds; r++ {
		if err := linkRound.launch(s, offs, targets, comp, n, r); err != nil {
			return nil, err
		}
		if err := compress.launch(s, comp, n); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := gpu.Launch(sample.fn, gpu.Dim(1), gpu.Dim(1024), 0, s, comp, n, skip); err != nil {
		return nil, err
	}
	if err := linkRest.launch(s, offs, targets, devicePtr(inOffs), devicePtr(inSrcs), comp, n, int64(afforestRounds), skip); err != nil {
		return nil, err
	}
	if err := compress.launch(s, comp, n); err != nil {
		return nil, err
	}
	if res.Compute, err = t.elapsed(s); err != nil {
		return nil, err
	}
	res.Strategy = fmt.Sprintf("afforest k=%d", cfg.k)
	out := make([]uint32, n)
	poisonHost(b, out, 0xdeadbeef)
	if err := b.downloadAll(s, hostCopyOf(out, comp)); err != nil {
		return nil, err
	}
	return out, nil
}
