package gpuop

import (
	"fmt"
	"math"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// CC on the GPU: Afforest with lock-free path halving (kernels/
// cc_afforest.cu), or label propagation to the smallest id as a vertex
// program (CCLabel) in the engine's layouts: the CSR push along out- and
// in-edges, or the symmetric shards. Every strategy labels a component with
// its smallest vertex id, as the CPU does.

func afforestParts(g *convert.Graph) []Layout {
	parts := []Layout{OutOffsets, OutTargets}
	if g.Directed {
		parts = append(parts, InOffsets, InSources)
	}
	return parts
}

func afforestBytes(g *convert.Graph, _ operators.Params) int64 {
	return layoutBytes(g, afforestParts(g)...) + int64(g.NumVertices())*4 + 8
}

// runCCLabels runs CCLabel, label propagation to the smallest id, in the
// engine's layout the plan names.
func runCCLabels(e *enactor) error {
	g, p := e.g, e.p
	if g.NumVertices() == 0 {
		e.res.Columns = []operators.Column{{Name: "component", Type: operators.VertexColumn, Vertex: []uint32{}}}
		return nil
	}
	r := vpRun{prog: CCLabels, strategy: e.plan.Strategy, cfg: vwcConfigFor(p, &g.Out), delta: math.Inf(1), labels: true, both: true, group: p.VertexGroup}
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
	e.res.Strategy = d.describe() + ", label propagation"
	e.res.EdgesExamined, e.res.EdgesWalked = int64(d.last.Examined), int64(d.last.Walked)
	comp, err := download[uint32](d)
	if err != nil {
		return err
	}
	e.res.Columns = []operators.Column{{Name: "component", Type: operators.VertexColumn, Vertex: comp}}
	return nil
}

// runAfforest runs kernels/cc_afforest.cu: afforestRounds (cc.go)
// sampling rounds, each a link and a compress, the most frequent label
// found on the device, the remaining edges of the other vertices, and a
// last compress.
func runAfforest(e *enactor) error {
	g := e.g
	n := int64(g.NumVertices())
	if n == 0 {
		e.res.Columns = []operators.Column{{Name: "component", Type: operators.VertexColumn, Vertex: []uint32{}}}
		return nil
	}
	cfg := vwcConfigFor(e.p, &g.Out)
	parts, err := e.layouts(afforestParts(g)...)
	if err != nil {
		return err
	}
	k, err := e.kernels(kernels.CCAfforest, "cc_init", "cc_link_round", "cc_compress", "cc_sample", fmt.Sprintf("cc_link_rest_k%d", cfg.k))
	if err != nil {
		return err
	}
	bufs, err := e.buffers(n*4, 8)
	if err != nil {
		return err
	}
	comp, skip := bufs[0], bufs[1]
	if err := e.start(); err != nil {
		return err
	}
	if err := afforestPhases(e, parts, k, comp, skip); err != nil {
		return err
	}
	if err := e.stop(); err != nil {
		return err
	}
	e.res.Strategy = fmt.Sprintf("afforest k=%d", cfg.k)
	out := make([]uint32, n)
	PoisonHost(e.b, out, 0xdeadbeef)
	if err := e.b.DownloadAll(e.s, HostCopyOf(out, comp)); err != nil {
		return err
	}
	e.res.Columns = []operators.Column{{Name: "component", Type: operators.VertexColumn, Vertex: out}}
	return nil
}

// afforestPhases queues Afforest's phases: k are its kernels (init, link
// round, compress, sample, link rest), parts the layouts afforestParts
// names.
func afforestPhases(e *enactor, parts []*gpu.DeviceBuffer, k []*Kernel, comp, skip *gpu.DeviceBuffer) error {
	s, n := e.s, int64(e.g.NumVertices())
	initComp, linkRound, compress, sample, linkRest := k[0], k[1], k[2], k[3], k[4]
	offs, targets := parts[0], parts[1]
	var inOffs, inSrcs *gpu.DeviceBuffer
	if e.g.Directed {
		inOffs, inSrcs = parts[2], parts[3]
	}
	if err := initComp.Launch(s, comp, n); err != nil {
		return err
	}
	for r := int64(0); r < operators.AfforestRounds; r++ {
		if err := linkRound.Launch(s, offs, targets, comp, n, r); err != nil {
			return err
		}
		if err := compress.Launch(s, comp, n); err != nil {
			return err
		}
	}
	if err := e.ctx.Err(); err != nil {
		return err
	}
	if err := gpu.Launch(sample.Fn, gpu.Dim(1), gpu.Dim(1024), 0, s, comp, n, skip); err != nil {
		return err
	}
	if err := linkRest.Launch(s, offs, targets, PtrOf(inOffs), PtrOf(inSrcs), comp, n, int64(operators.AfforestRounds), skip); err != nil {
		return err
	}
	return compress.Launch(s, comp, n)
}
