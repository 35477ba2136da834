package gpuop

import (
	"context"
	"fmt"
	"math"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// SSSP on the GPU: the vertex program SSSP32 or SSSP64 (kernels/
// vertex_program.cuh) in one of the engine's layouts (vp.go), then the
// shortest-path tree from the final distances.
//
// The tree: the last relaxation that lowered a vertex v to its final
// distance D came along an edge u→v from a value x of u that was at least
// u's final distance d, with fl(x + w) = D. If x > d, then fl(d + w) = D too
// (rounding is monotone and D is final) and d < D; so v has a tight in-edge
// from a strictly closer vertex, unless x = d, when u reached its final
// distance before v did. Pass 0 gives every vertex with a tight edge from a
// strictly closer one such a parent; pass r gives the others a tight edge
// from a vertex whose parent came in an earlier pass. By induction on
// (distance, time of the final relaxation) every reached vertex gets a
// parent; parents closer to the source, or from earlier passes, cannot close
// a cycle. Integer weights without zeros need pass 0 only.

// SSSPProgram is the SSSP instance for g's weights: uint32 distances when
// the weights are integers and no distance can reach 2^32 − 1, else doubles.
func (b *GPU) SSSPProgram(g *convert.Graph) Program {
	if !g.Weighted {
		return ssspUnit
	}
	if b != nil && b.tune.wideValues {
		return ssspF64
	}
	if g.IntegerDistances() {
		return ssspU32
	}
	return ssspF64
}

// smallGraphEdges is where auto's choice for sssp and sswp turns: below it
// Concatenated Windows measured fastest (BENCHMARKS.md: the real graphs,
// 9 thousand to 870 thousand edges), at and above it the CSR push (ego-
// Twitter's 2.7 million edges, the 2048² grid, Kronecker 22).
const smallGraphEdges = 1 << 20

// monotoneOrder is auto's order of t, the table of sssp or sswp, for g.
func monotoneOrder(t *table, g *convert.Graph, kitesOnSparse bool) []choice {
	const (
		vwc = "the frontier push over the CSR, near-far ordered, relaxes most edges about once where G-Shards and CW sweep whole shards each iteration: measured fastest on graphs of a million edges or more (BENCHMARKS.md)"
		gs  = "G-Shards"
		cw  = "on graphs under a million edges Concatenated Windows measured fastest (BENCHMARKS.md): few shards, few launches, and values travel several edges within a launch"
		kt  = "KiTES: the pull of the vertices whose inputs changed, found in an activeness bitmask"
		ws  = "Warp Segmentation: the pull of every vertex"
	)
	switch {
	case g == nil: // a large graph of average degree
	case g.NumEdges() < smallGraphEdges:
		return orderOf(t, strategyCW, cw, strategyVWC, vwc, strategyGShards, gs, strategyKiTES, kt, strategyWarpSeg, ws)
	case kitesOnSparse && g.NumEdges() < kitesDenseDegree*int64(g.NumVertices()):
		sparse := "on a large sparse graph (average degree under 8: a road network or a mesh, of high diameter) KiTES measured fastest for sssp (BENCHMARKS.md: 111 ms on the 2048 x 2048 grid, vwc 158): an iteration visits only the rounds its activations opened, where the push scans the frontier's flags"
		return orderOf(t, strategyKiTES, sparse, strategyVWC, vwc, strategyGShards, gs, strategyCW, cw, strategyWarpSeg, ws)
	}
	return orderOf(t, strategyVWC, vwc, strategyGShards, gs, strategyCW, cw, strategyKiTES, kt, strategyWarpSeg, ws)
}

// parentBytes is the parent pass's memory: parents, passes, a counter.
func parentBytes(g *convert.Graph) int64 { return int64(g.NumVertices())*8 + 8 }

// gpuSSSPDelta is the near-far step: --delta, or near-far's rule (Davidson
// et al., IPDPS'14): a warp's width of edges, 32 · mean weight / average
// degree, so that a step's frontier keeps the GPU's lanes busy.
func gpuSSSPDelta(g *convert.Graph, p operators.Params) float64 {
	if p.Delta > 0 {
		return p.Delta
	}
	mean, _, _ := operators.SampleWeights(&g.Out)
	avg := float64(g.NumEdges()) / float64(max(g.NumVertices(), 1))
	d := 32 * mean / max(avg, 1)
	if !g.Weighted || g.Weights().Integers {
		d = math.Ceil(d)
	}
	if !(d > 0) || math.IsInf(d, 0) {
		return math.Inf(1)
	}
	return d
}

// runSSSP runs the program SSSP in the plan's layout, then the parent
// passes.
func runSSSP(e *enactor) error {
	g, p := e.g, e.p
	r := vpRun{
		prog: e.b.SSSPProgram(g), strategy: e.plan.Strategy, cfg: vwcConfigFor(p, &g.Out),
		delta: gpuSSSPDelta(g, p), source: e.in.Source, seed: 0, group: p.VertexGroup,
	}
	if r.strategy == strategyKiTES {
		r.delta = kitesDelta(g, r.delta, p.Delta > 0)
	}
	d, err := e.prepareVP(r)
	if err != nil {
		return err
	}
	pp, err := d.prepareParents()
	if err != nil {
		return err
	}
	if err := e.start(); err != nil {
		return err
	}
	if e.res.Iterations, err = d.run(e.ctx); err != nil {
		return err
	}
	if err := d.resolveParents(e.ctx, pp); err != nil {
		return err
	}
	if err := e.stop(); err != nil {
		return err
	}
	parent, err := d.downloadParents(pp)
	if err != nil {
		return err
	}
	// Unreached vertices hold all ones (or, wide, +Inf): null.
	dist, err := downloadFloats(d, Distance64, Distance32)
	if err != nil {
		return err
	}
	e.res.Strategy = d.describe() + ", " + r.prog.DescribeValues()
	e.res.EdgesExamined, e.res.EdgesWalked = int64(d.last.Examined), int64(d.last.Walked)
	e.res.Columns = []operators.Column{
		{Name: "distance", Type: operators.Float64Column, Float64: dist},
		{Name: "parent", Type: operators.VertexColumn, Vertex: parent},
	}
	return nil
}

// DescribeValues says how the program keeps its values.
func (p Program) DescribeValues() string {
	switch p {
	case ssspUnit:
		return "uint32 distances, weight 1"
	case ssspU32:
		return "uint32 distances"
	case ssspF64:
		return "float64 distances"
	case sswpUnit:
		return "float32 widths, weight 1"
	case sswpK32:
		return "float32 widths (every weight is exact in float32)"
	case sswpK64:
		return "float64 widths"
	}
	return "uint32 labels"
}

// parentPass holds the parent pass's buffers and kernels.
type parentPass struct {
	parent, round, count *gpu.DeviceBuffer
	pass                 *Kernel
	init, unresolved     *Kernel
}

func (d *vpDevice) prepareParents() (*parentPass, error) {
	b := d.b
	bufs, err := d.e.buffers(d.n*4, d.n*4, 8)
	if err != nil {
		return nil, err
	}
	pp := &parentPass{parent: bufs[0], round: bufs[1], count: bufs[2]}
	module, prefix := kernels.VPVWC, "csr_parent_"
	switch d.r.strategy {
	case strategyGShards:
		module, prefix = kernels.VPGShards, "gs_parent_"
	case strategyCW:
		module, prefix = kernels.VPCW, "cw_parent_"
	}
	if pp.pass, err = b.Kernel(module, prefix+d.r.prog.Name); err == nil {
		if pp.init, err = b.Kernel(kernels.VPCommon, "vp_parent_init"); err == nil {
			name := "vp_unresolved32"
			if d.r.prog.Wide {
				name = "vp_unresolved64"
			}
			pp.unresolved, err = b.Kernel(kernels.VPCommon, name)
		}
	}
	if err != nil {
		return nil, err
	}
	return pp, nil
}

// downloadParents is the parents resolveParents found, in the result's
// memory. The runs download them after their timer stops, as BFS does its
// columns: the time of a search is the device's, not the copy's.
func (d *vpDevice) downloadParents(pp *parentPass) ([]uint32, error) {
	parent := column[uint32](d.e, int(d.n))
	PoisonHost(d.b, parent, 0xdeadbeef)
	if err := d.b.DownloadAll(d.s, HostCopyOf(parent, pp.parent)); err != nil {
		return nil, err
	}
	return parent, nil
}

// resolveParents runs the passes until every reached vertex has a parent
// in pp.parent.
func (d *vpDevice) resolveParents(ctx context.Context, pp *parentPass) error {
	s := d.s
	if err := pp.parent.Memset8(s, 0xff); err != nil {
		return err
	}
	if err := pp.round.Memset8(s, 0xff); err != nil {
		return err
	}
	if err := gpu.Launch(pp.init.Fn, gpu.Dim(1), gpu.Dim(1), 0, s, pp.parent, pp.round, d.r.source); err != nil {
		return err
	}
	left := []uint32{0}
	for r := uint32(0); ; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch d.r.strategy {
		case strategyVWC, strategyWarpSeg, strategyKiTES, strategyPersist:
			err = pp.pass.Launch(s, d.offs, d.targets, PtrOf(d.weights), d.n, d.values, pp.parent, pp.round, r, d.r.source)
		default: // G-Shards, Concatenated Windows
			a := d.shardArgs()
			a.parent, a.round, a.r = pp.parent.Ptr(), pp.round.Ptr(), r
			err = gpu.Launch(pp.pass.Fn, gpu.Dim(uint32(d.S)), gpu.Dim(BlockSize), 0, s, gpu.Args(&a))
		}
		if err != nil {
			return err
		}
		if err := pp.count.Memset8(s, 0); err != nil {
			return err
		}
		if err := pp.unresolved.Launch(s, d.values, pp.round, d.n, pp.count); err != nil {
			return err
		}
		before := left[0]
		if err := gpu.Download(s, left, pp.count); err != nil {
			return err
		}
		if left[0] == 0 {
			break
		}
		if r > 0 && left[0] == before {
			return fmt.Errorf("operators: sssp on the GPU: %d reached vertices found no parent in pass %d (a bug; use --backend cpu)", left[0], r)
		}
	}
	return nil
}

// Distance64 and distance32 read a distance as the programs keep it:
// unreached vertices hold all ones (or, wide, +Inf), which read as NaN
// (null).
func Distance64(x uint64) float64 {
	if f := math.Float64frombits(x); x != ^uint64(0) && !math.IsInf(f, 0) {
		return f
	}
	return math.NaN()
}

func Distance32(x uint32) float64 {
	if x == math.MaxUint32 {
		return math.NaN()
	}
	return float64(x)
}
