package operators

import (
	"context"
	"fmt"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
)

// BFS on the GPU: level-synchronous top-down over a status array, virtual
// warp-centric (kernels/bfs_vwc.cu).

func (BFS) gpuStrategies() []string { return []string{"vwc"} }

func (BFS) gpuBytes(g *convert.Graph, p Params) int64 {
	n := int64(g.NumVertices())
	return layoutBytes(g, outOffsets, outTargets) + n*8 + bfsFlagsBytes + outlierQueueBytes(&g.Out, outlierDegree(p))
}

// The flags buffer: the dynamic work counter (8 bytes), "discovered" (4),
// the outlier queue's length (4).
const (
	bfsFlagsBytes     = 16
	bfsCounterAt      = 0
	bfsDiscoveredAt   = 8
	bfsOutlierCountAt = 12
)

// outlierQueueBytes is the room the deferred-outlier queue needs: one entry
// per segment of every vertex of more than threshold edges, at most.
func outlierQueueBytes(c *convert.CSR, threshold int64) int64 {
	if threshold <= 0 {
		return 0
	}
	m := c.NumEdges()
	return (m/threshold + m/outlierSegment + 1) * 8
}

func (BFS) runGPU(ctx context.Context, b *GPU, in Input) (*Result, error) {
	if err := checkSource("bfs", in); err != nil {
		return nil, err
	}
	g := in.Graph
	n := g.NumVertices()
	cfg := vwcConfigFor(in.Params, &g.Out)
	expand, err := b.kernel(kernels.BFSVWC, fmt.Sprintf("bfs_vwc_k%d", cfg.k))
	if err != nil {
		return nil, err
	}
	outliers, err := b.kernel(kernels.BFSVWC, "bfs_vwc_outliers")
	if err != nil {
		return nil, err
	}
	initSource, err := b.kernel(kernels.BFSVWC, "bfs_init_source")
	if err != nil {
		return nil, err
	}
	s, err := b.ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	parts, transfer, err := b.layouts(g, s, outOffsets, outTargets)
	if err != nil {
		return nil, err
	}
	offsets, targets := parts[0], parts[1]
	bufs, free, err := b.buffers(int64(n)*4, int64(n)*4, bfsFlagsBytes, outlierQueueBytes(&g.Out, cfg.outlierDegree))
	if err != nil {
		return nil, err
	}
	defer free()
	depthBuf, parentBuf, flags, queue := bufs[0], bufs[1], bufs[2], bufs[3]
	counter, _ := flags.Slice(bfsCounterAt, 8)
	discovered, _ := flags.Slice(bfsDiscoveredAt, 4)
	queueLen, _ := flags.Slice(bfsOutlierCountAt, 4)
	if !cfg.dynamic {
		counter = nil
	}
	if err := b.poison(s, depthBuf, parentBuf, flags, queue); err != nil {
		return nil, err
	}

	t, err := newTimer(b.ctx, s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	// Unvisited and NoVertex are both all-ones.
	if err := depthBuf.Memset8(s, 0xff); err != nil {
		return nil, err
	}
	if err := parentBuf.Memset8(s, 0xff); err != nil {
		return nil, err
	}
	if err := gpu.Launch(initSource.fn, gpu.Dim(1), gpu.Dim(1), 0, s, depthBuf, parentBuf, in.Source); err != nil {
		return nil, err
	}
	found := []int32{0}
	levels := 0
	for level := int32(0); ; level++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := flags.Memset8(s, 0); err != nil {
			return nil, err
		}
		if err := expand.launch(s, offsets, targets, depthBuf, parentBuf, int64(n), level,
			devicePtr(counter), cfg.chunk, cfg.outlierDegree, devicePtr(queue), queueLen, discovered); err != nil {
			return nil, err
		}
		if cfg.outlierDegree > 0 {
			if err := outliers.launch(s, offsets, targets, depthBuf, parentBuf, level, queue, queueLen, discovered); err != nil {
				return nil, err
			}
		}
		// A download to Go memory waits for the level to finish.
		if err := gpu.Download(s, found, discovered); err != nil {
			return nil, err
		}
		levels++
		if found[0] == 0 {
			break
		}
	}
	compute, err := t.elapsed(s)
	if err != nil {
		return nil, err
	}

	depth := make([]int32, n)
	parent := make([]uint32, n)
	poisonHost(b, depth, -7)
	poisonHost(b, parent, 0xdeadbeef)
	if err := gpu.Download(s, depth, depthBuf); err != nil {
		return nil, err
	}
	if err := gpu.Download(s, parent, parentBuf); err != nil {
		return nil, err
	}
	return &Result{
		Op: "bfs", Backend: "gpu", Strategy: cfg.String(),
		Iterations: levels, Compute: compute, Transfer: transfer,
		Columns: []Column{
			{Name: "depth", Type: Int32Column, Int32: depth},
			{Name: "parent", Type: VertexColumn, Vertex: parent},
		},
	}, nil
}
