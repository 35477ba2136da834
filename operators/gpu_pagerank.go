package operators

import (
	"context"
	"fmt"
	"math"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
)

// PageRank on the GPU: pull over the in-edge layout, virtual warp-centric,
// one launch per iteration (kernels/pagerank_vwc.cu).

func (PageRank) gpuStrategies() []string { return []string{"vwc"} }

func (PageRank) gpuBytes(g *convert.Graph, p Params) int64 {
	n := int64(g.NumVertices())
	outliers, segments := prOutliers(g.In(), outlierDegree(p))
	return layoutBytes(g, outOffsets, inOffsets, inSources) + 5*n*8 + prAccBytes +
		int64(len(outliers))*(4+8) + int64(len(segments))*8
}

// The accumulators: two dangling sums (this iteration's and the next's),
// the L1 change, the dynamic work counter.
const (
	prAccBytes    = 32
	prDanglingAt  = 0 // and 8
	prL1At        = 16
	prCounterAt   = 24
	prResetAt     = prL1At // l1 and counter are cleared together
	prResetLength = 16
)

// prOutliers lists the vertices of more than threshold in-edges, and their
// segments of outlierSegment in-edges (outlier index in the low 32 bits,
// segment in the high 32).
func prOutliers(in *convert.CSR, threshold int64) ([]uint32, []uint64) {
	if threshold <= 0 {
		return nil, nil
	}
	var outliers []uint32
	var segments []uint64
	for v := range uint32(in.NumVertices()) {
		d := in.Degree(v)
		if d <= threshold {
			continue
		}
		k := uint64(len(outliers))
		outliers = append(outliers, v)
		for seg := int64(0); seg*outlierSegment < d; seg++ {
			segments = append(segments, k|uint64(seg)<<32)
		}
	}
	return outliers, segments
}

func (PageRank) runGPU(ctx context.Context, b *GPU, in Input) (*Result, error) {
	p := in.Params
	if err := (PageRank{}).Prepare(&p); err != nil {
		return nil, err
	}
	g := in.Graph
	n := g.NumVertices()
	res := &Result{Op: "pagerank", Backend: "gpu"}
	if n == 0 {
		res.Strategy = "vwc"
		res.Columns = []Column{{Name: "rank", Type: Float64Column, Float64: []float64{}}}
		return res, nil
	}
	cfg := vwcConfigFor(p, g.In())
	res.Strategy = cfg.String()
	initRanks, err := b.kernel(kernels.PageRankVWC, "pr_init")
	if err != nil {
		return nil, err
	}
	pull, err := b.kernel(kernels.PageRankVWC, fmt.Sprintf("pr_pull_k%d", cfg.k))
	if err != nil {
		return nil, err
	}
	sumOutliers, err := b.kernel(kernels.PageRankVWC, "pr_outliers")
	if err != nil {
		return nil, err
	}
	finishOutliers, err := b.kernel(kernels.PageRankVWC, "pr_outliers_finish")
	if err != nil {
		return nil, err
	}
	s, err := b.ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	parts, transfer, err := b.layouts(g, s, outOffsets, inOffsets, inSources)
	if err != nil {
		return nil, err
	}
	res.Transfer = transfer
	outOffs, inOffs, inSrcs := parts[0], parts[1], parts[2]

	outliers, segments := prOutliers(g.In(), cfg.outlierDegree)
	vec := int64(n) * 8
	bufs, free, err := b.buffers(vec, vec, vec, vec, vec, prAccBytes,
		int64(len(outliers))*4, int64(len(segments))*8, int64(len(outliers))*8)
	if err != nil {
		return nil, err
	}
	defer free()
	rank := [2]*gpu.DeviceBuffer{bufs[0], bufs[1]}
	contrib := [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}
	invDegree, acc := bufs[4], bufs[5]
	outlierBuf, segmentBuf, outlierAcc := bufs[6], bufs[7], bufs[8]
	if err := b.poison(s, bufs...); err != nil {
		return nil, err
	}
	if len(outliers) > 0 {
		if err := gpu.Upload(s, outlierBuf, outliers); err != nil {
			return nil, err
		}
		if err := gpu.Upload(s, segmentBuf, segments); err != nil {
			return nil, err
		}
		if err := outlierAcc.Memset8(s, 0); err != nil {
			return nil, err
		}
	}
	dangling := [2]*gpu.DeviceBuffer{}
	dangling[0], _ = acc.Slice(prDanglingAt, 8)
	dangling[1], _ = acc.Slice(prDanglingAt+8, 8)
	l1, _ := acc.Slice(prL1At, 8)
	counter, _ := acc.Slice(prCounterAt, 8)
	reset, _ := acc.Slice(prResetAt, prResetLength)
	if !cfg.dynamic {
		counter = nil
	}

	t, err := newTimer(b.ctx, s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	if err := acc.Memset8(s, 0); err != nil {
		return nil, err
	}
	if err := initRanks.launch(s, outOffs, rank[0], invDegree, contrib[0], int64(n), dangling[0]); err != nil {
		return nil, err
	}
	change := []float64{0}
	cur := 0
	converged := false
	for res.Iterations < p.MaxIterations {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next := 1 - cur
		if err := reset.Memset8(s, 0); err != nil {
			return nil, err
		}
		if err := dangling[next].Memset8(s, 0); err != nil {
			return nil, err
		}
		if err := pull.launch(s, inOffs, inSrcs, contrib[cur], invDegree, rank[cur], rank[next], contrib[next],
			int64(n), p.Damping, dangling[cur], dangling[next], l1, devicePtr(counter), cfg.chunk, cfg.outlierDegree); err != nil {
			return nil, err
		}
		if len(outliers) > 0 {
			if err := sumOutliers.launch(s, inOffs, inSrcs, contrib[cur], outlierBuf, segmentBuf, uint32(len(segments)), outlierAcc); err != nil {
				return nil, err
			}
			if err := finishOutliers.launch(s, outlierBuf, uint32(len(outliers)), outlierAcc, invDegree, rank[cur],
				rank[next], contrib[next], int64(n), p.Damping, dangling[cur], dangling[next], l1); err != nil {
				return nil, err
			}
		}
		// A download to Go memory waits for the iteration to finish.
		if err := gpu.Download(s, change, l1); err != nil {
			return nil, err
		}
		res.Iterations++
		cur = next
		if change[0] < p.Tolerance {
			converged = true
			break
		}
	}
	if res.Compute, err = t.elapsed(s); err != nil {
		return nil, err
	}
	ranks := make([]float64, n)
	poisonHost(b, ranks, math.NaN())
	if err := gpu.Download(s, ranks, rank[cur]); err != nil {
		return nil, err
	}
	if !converged {
		res.NotConverged = true
		res.Warnings = append(res.Warnings, notConverged(res.Iterations, change[0], p.Tolerance))
	}
	res.Columns = []Column{{Name: "rank", Type: Float64Column, Float64: ranks}}
	return res, nil
}

// notConverged is the warning for ranks returned before they converged.
func notConverged(iterations int, change, tolerance float64) string {
	return fmt.Sprintf("pagerank did not converge in %d iterations: the last iteration changed the ranks by %g (L1), above the tolerance %g; the ranks are returned as they are (raise the iteration limit or the tolerance)",
		iterations, change, tolerance)
}
