package multigpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// PageRank over several GPUs, on the partition of multigpu.go. Every GPU
// starts from the whole graph's out-degrees (so its inverse degrees,
// first contributions and dangling sum are the whole graph's), then each
// iteration pulls its own vertices' in-edges (mg_pr_ws_*: Warp
// Segmentation's rounds over the owned range, the longest rows in blocks as
// on one GPU), adds its share of the L1 change and of the next dangling
// sum, and the GPUs gather each other's new contributions. As on one GPU
// the contributions are numbered hubs first (prHubOrder), here within each
// part's range (convert.HubOrder of a part), so that the exchange stays a
// gather of ranges while the most-read contributions share cache lines.
// The shares are
// summed on the host, which reads the change anyway to decide convergence.
// Vertex Refinement's online filter would send nothing less here: every
// rank changes in every iteration.

// mgPRPart is one part's run.
type mgPRPart struct {
	b                  *gpuop.GPU
	s                  *gpu.Stream
	part               convert.Partition
	inOff, inSrc       *gpu.DeviceBuffer // inSrc numbered hubs first with prHubOrder
	hubID              *gpu.DeviceBuffer // the part's numbering (nil without prHubOrder)
	outOff             *gpu.DeviceBuffer // the whole graph's
	rank, contrib      [2]*gpu.DeviceBuffer
	invDegree, acc     *gpu.DeviceBuffer
	outliers, segments *gpu.DeviceBuffer
	outlierAcc         *gpu.DeviceBuffer
	outlierCount       int
	transfer           time.Duration
	segmentCount       int
	host               *gpuop.Counters
	gpuop.Releases
}

// mgPRRun is one PageRank over the parts.
type mgPRRun struct {
	m       *MultiGPU
	p       operators.Params
	n, cb   int64 // vertices, a contribution's bytes
	suffix  string
	parts   []convert.Partition
	ps      []*mgPRPart
	ks      []prKernels
	streams []*gpu.Stream
	cuts    []int64 // the contributions by owner, in bytes
	res     *operators.Result
}

// prKernels are a part's kernels.
type prKernels struct{ init, pull, outliers, finish *gpuop.Kernel }

func runPageRankMulti(ctx context.Context, m *MultiGPU, in operators.Input, _ float64) (*operators.Result, error) {
	g, p := in.Graph, in.Params
	r := &mgPRRun{m: m, p: p, n: int64(g.NumVertices()), cb: gpuop.PRContribBytes(p), suffix: "f64",
		res: &operators.Result{Op: "pagerank", Backend: "gpu"}}
	if r.n == 0 {
		r.res.Columns = []operators.Column{{Name: "rank", Type: operators.Float64Column, Float64: []float64{}}}
		return r.res, nil
	}
	if gpuop.PRFloat32(p) {
		r.suffix = "f32"
	}
	defer r.free()
	if err := r.setUp(g); err != nil {
		return nil, err
	}
	// Timed from the ranks' initialization, as one GPU's run is.
	start := time.Now()
	cur, _, err := r.iterate(ctx)
	if err != nil {
		return nil, err
	}
	if err := gpuop.SyncAll(r.streams); err != nil {
		return nil, err
	}
	r.res.Compute = time.Since(start)
	return r.result(cur)
}

// setUp makes the parts, their kernels and the cuts of the contributions,
// and waits for the copies.
func (r *mgPRRun) setUp(g *convert.Graph) error {
	parts, err := r.m.partitions(g, 0)
	if err != nil {
		return err
	}
	k := len(parts)
	r.parts, r.ps, r.ks, r.streams = parts, make([]*mgPRPart, k), make([]prKernels, k), make([]*gpu.Stream, k)
	hub := ""
	if r.m.First().PageRankHubOrder() {
		hub = "_hub"
	}
	for i, part := range parts {
		x, err := newMGPRPart(r.m.gpus[i], g, part, r.n, r.cb)
		if err != nil {
			return err
		}
		r.ps[i], r.streams[i] = x, x.s
		r.res.Transfer += x.transfer
		ks, suffix := &r.ks[i], r.suffix
		if err := x.b.KernelsOf(kernels.PageRankVWC, map[string]**gpuop.Kernel{
			"pr_init_" + suffix + hub: &ks.init, "pr_outliers_" + suffix: &ks.outliers, "pr_outliers_finish_" + suffix + hub: &ks.finish,
		}); err != nil {
			return err
		}
		if ks.pull, err = x.b.Kernel(kernels.MultiGPU, "mg_pr_ws_"+suffix+hub); err != nil {
			return err
		}
	}
	r.cuts = make([]int64, k+1)
	for i, part := range parts {
		r.cuts[i] = r.cb * int64(part.Lo)
	}
	r.cuts[k] = r.cb * r.n
	return gpuop.SyncAll(r.streams)
}

// dangling is part x's dangling sum q, l1 its share of the L1 change.
func dangling(x *mgPRPart, q int) *gpu.DeviceBuffer {
	d, _ := x.acc.Slice(gpuop.PRDanglingAt+8*int64(q), 8)
	return d
}

func l1(x *mgPRPart) *gpu.DeviceBuffer {
	d, _ := x.acc.Slice(gpuop.PRL1At, 8)
	return d
}

// iterate initializes the ranks and iterates until the L1 change is below
// the tolerance or the iterations run out; it returns the final ranks'
// parity and the last change.
func (r *mgPRRun) iterate(ctx context.Context) (cur int, change float64, err error) {
	for i, x := range r.ps {
		if err := x.acc.Memset8(x.s, 0); err != nil {
			return 0, 0, err
		}
		if err := r.ks[i].init.Launch(x.s, x.outOff, gpuop.PtrOf(x.hubID), x.rank[0], x.invDegree, x.contrib[0], r.n, dangling(x, 0)); err != nil {
			return 0, 0, err
		}
	}
	change = math.Inf(1)
	report := operators.ProgressOf(ctx, "pagerank")
	for r.res.Iterations < r.p.MaxIterations {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		next := 1 - cur
		if err := r.pull(cur); err != nil {
			return 0, 0, err
		}
		if change, err = r.exchange(next); err != nil {
			return 0, 0, err
		}
		r.res.Iterations++
		cur = next
		report(operators.Progress{Iteration: r.res.Iterations, Change: change, Active: -1})
		if change < r.p.Tolerance {
			return cur, change, nil
		}
	}
	r.res.NotConverged = true
	r.res.Warnings = append(r.res.Warnings, gpuop.NotConverged(r.res.Iterations, change, r.p.Tolerance))
	return cur, change, nil
}

// pull queues every part's pull of its vertices' in-edges from the ranks
// and contributions cur.
func (r *mgPRRun) pull(cur int) error {
	next, p, n := 1-cur, r.p, r.n
	for i, x := range r.ps {
		reset, _ := x.acc.Slice(gpuop.PRResetAt, gpuop.PRResetLength)
		if err := reset.Memset8(x.s, 0); err != nil {
			return err
		}
		if err := dangling(x, next).Memset8(x.s, 0); err != nil {
			return err
		}
		lo, hi := int64(x.part.Lo), int64(x.part.Hi)
		a := gpuop.PRPullArgs{
			InOffsets: x.inOff.Ptr(), InSources: x.inSrc.Ptr(), HubID: gpuop.PtrOf(x.hubID), Contrib: x.contrib[cur].Ptr(),
			InvDegree: x.invDegree.Ptr(), Rank: x.rank[cur].Ptr(), NextRank: x.rank[next].Ptr(), NextContrib: x.contrib[next].Ptr(),
			Dangling: gpuop.PtrOf(dangling(x, cur)), NextDangling: gpuop.PtrOf(dangling(x, next)), L1: gpuop.PtrOf(l1(x)),
			Lo: lo, Hi: hi, N: n, Damping: p.Damping, OutlierDegree: x.b.HubDegree(), Stream: 1,
		}
		if err := r.ks[i].pull.LaunchFor(x.s, hi-lo, gpuop.BlockSize, gpu.Args(&a)); err != nil {
			return err
		}
		if x.outlierCount == 0 {
			continue
		}
		if err := r.ks[i].outliers.Launch(x.s, x.inOff, x.inSrc, x.contrib[cur], x.outliers, x.segments, uint32(x.segmentCount), x.outlierAcc); err != nil {
			return err
		}
		f := gpuop.PRFinishArgs{
			Outliers: x.outliers.Ptr(), HubID: gpuop.PtrOf(x.hubID), Acc: x.outlierAcc.Ptr(), InvDegree: x.invDegree.Ptr(),
			Rank: x.rank[cur].Ptr(), NextRank: x.rank[next].Ptr(), NextContrib: x.contrib[next].Ptr(),
			Dangling: gpuop.PtrOf(dangling(x, cur)), NextDangling: gpuop.PtrOf(dangling(x, next)), L1: gpuop.PtrOf(l1(x)),
			N: n, Damping: p.Damping, Count: uint32(x.outlierCount),
		}
		if err := r.ks[i].finish.Launch(x.s, gpu.Args(&f)); err != nil {
			return err
		}
	}
	return nil
}

// exchange sums the parts' shares of the change and of the next dangling
// sum, gives every part the sum, and gathers the new contributions
// (next); it returns the change.
func (r *mgPRRun) exchange(next int) (float64, error) {
	var l1Sum, dangle float64
	ps := r.ps
	err := readParts(r.streams, func(i int) error { return ps[i].host.Fetch(ps[i].s, ps[i].acc) }, func(i int) error {
		raw, err := ps[i].host.Wait(ps[i].s, ps[i].acc)
		if err != nil {
			return err
		}
		dangle += math.Float64frombits(binary.LittleEndian.Uint64(raw[gpuop.PRDanglingAt+8*next:]))
		l1Sum += math.Float64frombits(binary.LittleEndian.Uint64(raw[gpuop.PRL1At:]))
		return nil
	})
	if err != nil {
		return 0, err
	}
	bufs := make([]*gpu.DeviceBuffer, len(ps))
	for i, x := range ps {
		if err := gpu.Upload(x.s, dangling(x, next), []float64{dangle}); err != nil {
			return 0, err
		}
		bufs[i] = x.contrib[next]
	}
	return l1Sum, gatherRanges(r.m.link, r.streams, bufs, r.cuts)
}

// result reads each part's own ranks (parity cur).
func (r *mgPRRun) result(cur int) (*operators.Result, error) {
	res, n := r.res, r.n
	ranks := make([]float64, n)
	gpuop.PoisonHost(r.ps[0].b, ranks, math.NaN())
	for _, x := range r.ps {
		lo, hi := int64(x.part.Lo), int64(x.part.Hi)
		if lo == hi {
			continue
		}
		part, _ := x.rank[cur].Slice(8*lo, 8*(hi-lo))
		if err := gpu.Download(x.s, ranks[lo:hi], part); err != nil {
			return nil, err
		}
	}
	first := r.m.First()
	res.Strategy = fmt.Sprintf("warpseg multi-GPU pull, hubs>%d in blocks, %s contributions", first.HubDegree(), map[string]string{"f32": "float32", "f64": "float64"}[r.suffix])
	if first.PageRankHubOrder() {
		res.Strategy += ", sources numbered hubs first within each part"
	}
	res.Strategy += " (" + r.m.describe(r.parts) + ")"
	res.StrategyReason = fmt.Sprintf("%d GPUs: each pulls its vertices' in-edges; the contributions are gathered every iteration", len(r.ps))
	res.Columns = []operators.Column{{Name: "rank", Type: operators.Float64Column, Float64: ranks}}
	return res, nil
}

// free frees the parts.
func (r *mgPRRun) free() {
	for _, x := range r.ps {
		if x != nil {
			x.Free()
		}
	}
}

// newMGPRPart copies part's in-edges and g's out-offsets to b and
// allocates the run's full-length vectors there.
func newMGPRPart(b *gpuop.GPU, g *convert.Graph, part convert.Partition, n, cb int64) (x *mgPRPart, err error) {
	x = &mgPRPart{b: b, part: part}
	defer func() {
		if err != nil {
			x.Free()
		}
	}()
	if x.s, err = b.Context().NewStream(); err != nil {
		return nil, err
	}
	x.Add(func() { x.s.Destroy() })
	want := []gpuop.Layout{gpuop.InOffsets, gpuop.InSources}
	if b.PageRankHubOrder() {
		want = []gpuop.Layout{gpuop.InOffsets, gpuop.InSourcesHub, gpuop.HubIDs}
	}
	in, t1, err := b.Layouts(part.Graph, x.s, want...)
	if err != nil {
		return nil, err
	}
	if b.PageRankHubOrder() {
		x.hubID = in[2]
	}
	out, t2, err := b.Layouts(g, x.s, gpuop.OutOffsets)
	if err != nil {
		return nil, err
	}
	x.transfer = t1 + t2
	x.inOff, x.inSrc, x.outOff = in[0], in[1], out[0]
	outliers, segments := b.InOutliers(part.Graph, b.HubDegree())
	x.outlierCount, x.segmentCount = len(outliers), len(segments)
	vec, cvec := n*8, n*cb
	bufs, free, err := b.Buffers(vec, vec, cvec, cvec, vec, gpuop.PRAccBytes, int64(len(outliers))*4, int64(len(segments))*8, int64(len(outliers))*8)
	if err != nil {
		return nil, err
	}
	x.Add(free)
	x.rank = [2]*gpu.DeviceBuffer{bufs[0], bufs[1]}
	x.contrib = [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}
	x.invDegree, x.acc = bufs[4], bufs[5]
	x.outliers, x.segments, x.outlierAcc = bufs[6], bufs[7], bufs[8]
	if err := b.PoisonBuffers(x.s, bufs...); err != nil {
		return nil, err
	}
	if len(outliers) > 0 {
		if err := gpu.Upload(x.s, x.outliers, outliers); err != nil {
			return nil, err
		}
		if err := gpu.Upload(x.s, x.segments, segments); err != nil {
			return nil, err
		}
		if err := x.outlierAcc.Memset8(x.s, 0); err != nil {
			return nil, err
		}
	}
	if x.host, err = gpuop.NewCounters(b, gpuop.PRAccBytes); err != nil {
		return nil, err
	}
	x.Add(x.host.Free)
	return x, nil
}
