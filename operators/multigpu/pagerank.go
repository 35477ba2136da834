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

// PageRank over several GPUs, on the partition of mgpu.go. Every GPU
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

func runPageRankMulti(ctx context.Context, m *MultiGPU, in operators.Input, _ float64) (*operators.Result, error) {
	g, p := in.Graph, in.Params
	n := int64(g.NumVertices())
	res := &operators.Result{Op: "pagerank", Backend: "gpu"}
	if n == 0 {
		res.Columns = []operators.Column{{Name: "rank", Type: operators.Float64Column, Float64: []float64{}}}
		return res, nil
	}
	parts, err := m.partitions(g, 0)
	if err != nil {
		return nil, err
	}
	suffix := "f64"
	if gpuop.PRFloat32(p) {
		suffix = "f32"
	}
	hub := ""
	if m.First().PageRankHubOrder() {
		hub = "_hub"
	}
	cb := gpuop.PRContribBytes(p)
	k := len(parts)
	ps := make([]*mgPRPart, k)
	streams := make([]*gpu.Stream, k)
	defer func() {
		for _, x := range ps {
			if x != nil {
				x.Free()
			}
		}
	}()
	type prKernels struct{ init, pull, outliers, finish *gpuop.Kernel }
	ks := make([]prKernels, k)
	for i, part := range parts {
		x, err := newMGPRPart(m.gpus[i], g, part, n, cb)
		if err != nil {
			return nil, err
		}
		ps[i], streams[i] = x, x.s
		res.Transfer += x.transfer
		b := x.b
		if err := b.KernelsOf(kernels.PageRankVWC, map[string]**gpuop.Kernel{
			"pr_init_" + suffix + hub: &ks[i].init, "pr_outliers_" + suffix: &ks[i].outliers, "pr_outliers_finish_" + suffix + hub: &ks[i].finish,
		}); err != nil {
			return nil, err
		}
		if ks[i].pull, err = b.Kernel(kernels.MultiGPU, "mg_pr_ws_"+suffix+hub); err != nil {
			return nil, err
		}
	}
	cuts := make([]int64, k+1)
	for r, part := range parts {
		cuts[r] = cb * int64(part.Lo)
	}
	cuts[k] = cb * n
	dangling := func(x *mgPRPart, q int) *gpu.DeviceBuffer {
		d, _ := x.acc.Slice(gpuop.PRDanglingAt+8*int64(q), 8)
		return d
	}
	l1 := func(x *mgPRPart) *gpu.DeviceBuffer {
		d, _ := x.acc.Slice(gpuop.PRL1At, 8)
		return d
	}
	// Timed from the ranks' initialization, as one GPU's run is.
	if err := gpuop.SyncAll(streams); err != nil {
		return nil, err
	}
	start := time.Now()
	for i, x := range ps {
		if err := x.acc.Memset8(x.s, 0); err != nil {
			return nil, err
		}
		if err := ks[i].init.Launch(x.s, x.outOff, gpuop.PtrOf(x.hubID), x.rank[0], x.invDegree, x.contrib[0], n, dangling(x, 0)); err != nil {
			return nil, err
		}
	}
	cur := 0
	change := math.Inf(1)
	converged := false
	for res.Iterations < p.MaxIterations {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next := 1 - cur
		for i, x := range ps {
			reset, _ := x.acc.Slice(gpuop.PRResetAt, gpuop.PRResetLength)
			if err := reset.Memset8(x.s, 0); err != nil {
				return nil, err
			}
			if err := dangling(x, next).Memset8(x.s, 0); err != nil {
				return nil, err
			}
			lo, hi := int64(x.part.Lo), int64(x.part.Hi)
			if err := ks[i].pull.LaunchFor(x.s, hi-lo, gpuop.BlockSize, x.inOff, x.inSrc, gpuop.PtrOf(x.hubID), x.contrib[cur], x.invDegree, x.rank[cur], x.rank[next],
				x.contrib[next], lo, hi, n, p.Damping, dangling(x, cur), dangling(x, next), l1(x), x.b.HubDegree()); err != nil {
				return nil, err
			}
			if x.outlierCount > 0 {
				if err := ks[i].outliers.Launch(x.s, x.inOff, x.inSrc, x.contrib[cur], x.outliers, x.segments, uint32(x.segmentCount), x.outlierAcc); err != nil {
					return nil, err
				}
				if err := ks[i].finish.Launch(x.s, x.outliers, gpuop.PtrOf(x.hubID), uint32(x.outlierCount), x.outlierAcc, x.invDegree, x.rank[cur],
					x.rank[next], x.contrib[next], n, p.Damping, dangling(x, cur), dangling(x, next), l1(x)); err != nil {
					return nil, err
				}
			}
		}
		// The shares of the change and of the next dangling sum.
		var l1Sum, dangle float64
		err := readParts(streams, func(i int) error { return ps[i].host.Fetch(ps[i].s, ps[i].acc) }, func(i int) error {
			raw, err := ps[i].host.Wait(ps[i].s, ps[i].acc)
			if err != nil {
				return err
			}
			dangle += math.Float64frombits(binary.LittleEndian.Uint64(raw[gpuop.PRDanglingAt+8*next:]))
			l1Sum += math.Float64frombits(binary.LittleEndian.Uint64(raw[gpuop.PRL1At:]))
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, x := range ps {
			if err := gpu.Upload(x.s, dangling(x, next), []float64{dangle}); err != nil {
				return nil, err
			}
		}
		bufs := make([]*gpu.DeviceBuffer, k)
		for i, x := range ps {
			bufs[i] = x.contrib[next]
		}
		if err := gatherRanges(m.link, streams, bufs, cuts); err != nil {
			return nil, err
		}
		res.Iterations++
		cur = next
		change = l1Sum
		if change < p.Tolerance {
			converged = true
			break
		}
	}
	if err := gpuop.SyncAll(streams); err != nil {
		return nil, err
	}
	res.Compute = time.Since(start)
	ranks := make([]float64, n)
	gpuop.PoisonHost(ps[0].b, ranks, math.NaN())
	for _, x := range ps {
		lo, hi := int64(x.part.Lo), int64(x.part.Hi)
		if lo == hi {
			continue
		}
		r, _ := x.rank[cur].Slice(8*lo, 8*(hi-lo))
		if err := gpu.Download(x.s, ranks[lo:hi], r); err != nil {
			return nil, err
		}
	}
	if !converged {
		res.NotConverged = true
		res.Warnings = append(res.Warnings, gpuop.NotConverged(res.Iterations, change, p.Tolerance))
	}
	res.Strategy = fmt.Sprintf("warpseg multi-GPU pull, hubs>%d in blocks, %s contributions", m.First().HubDegree(), map[string]string{"f32": "float32", "f64": "float64"}[suffix])
	if m.First().PageRankHubOrder() {
		res.Strategy += ", sources numbered hubs first within each part"
	}
	res.Strategy += " (" + m.describe(parts) + ")"
	res.StrategyReason = fmt.Sprintf("%d GPUs: each pulls its vertices' in-edges; the contributions are gathered every iteration", k)
	res.Columns = []operators.Column{{Name: "rank", Type: operators.Float64Column, Float64: ranks}}
	return res, nil
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
