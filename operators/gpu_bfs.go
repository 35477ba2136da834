package operators

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/kernels"
)

// BFS on the GPU has three strategies: enterprise (direction-optimizing,
// gpu_bfs_enterprise.go), bfs4k (frontier queues with per-level technique
// choice and a single-block kernel for small frontiers, gpu_bfs_4k.go) and
// vwc (level-synchronous top-down over the status array, virtual warp-
// centric, below). auto chooses from the graph's degree statistics.

func (BFS) gpuStrategies() []string { return []string{"enterprise", "bfs4k", "vwc"} }

func (BFS) gpuBytes(_ *GPU, g *convert.Graph, p Params) int64 {
	name, _ := chooseBFS(g, p, 0)
	if name == "enterprise" || name == "bfs4k" {
		// auto's choice between them may depend on earlier searches.
		return max(bfsBytes(g, p, "enterprise"), bfsBytes(g, p, "bfs4k"))
	}
	return bfsBytes(g, p, name)
}

// bfsBytes is the device memory a search with the named strategy takes,
// its result's columns made on the device included.
func bfsBytes(g *convert.Graph, p Params, strategy string) int64 {
	return searchBytes(g, p, strategy) + bfsColumnsBytes(g)
}

func searchBytes(g *convert.Graph, p Params, strategy string) int64 {
	n := int64(g.NumVertices())
	switch strategy {
	case "enterprise":
		_, hubs := enterpriseHubs(g.Degrees())
		return layoutBytes(g, outOffsets, outTargets, inOffsets, inSources, outClasses, inClasses, hubBits) + entBufferBytes(n, hubs)
	case "bfs4k":
		return layoutBytes(g, outOffsets, outTargets) + 8*n + 2*4*b4kCapacity(n) + b4kSegmentBytes(g) + b4kStatsBytes
	}
	return layoutBytes(g, outOffsets, outTargets) + n*8 + bfsFlagsBytes + outlierQueueBytes(&g.Out, outlierDegree(p))
}

// highDiameterLevels is the depth from which a graph counts as one of high
// diameter: levels beyond the few of a small-world graph (Graph 500
// Kronecker graphs have under 10), each paying a host round trip outside
// bfs4k's single-block kernel.
const highDiameterLevels = 64

// chooseBFS is the strategy p asks for, or auto's choice from the degree
// statistics and seenLevels, the most levels an earlier search on the graph
// ran (0 when none did: the estimate of the diameter), with the reason.
func chooseBFS(g *convert.Graph, p Params, seenLevels int) (name, reason string) {
	switch {
	case p.Strategy != "" && p.Strategy != "auto":
		return p.Strategy, "asked for"
	case vwcOptionsSet(p):
		return "vwc", "virtual warp-centric options given"
	}
	d := g.Degrees()
	switch {
	case int64(g.NumVertices()) > b4kMaxVertices:
		return "enterprise", fmt.Sprintf("%d vertices, more than bfs4k takes", g.NumVertices())
	case seenLevels > highDiameterLevels:
		return "bfs4k", fmt.Sprintf("an earlier search on this graph ran %d levels: a high diameter, and bfs4k runs small levels in one block without returning to the host", seenLevels)
	case d.Average < 8 && d.Max <= 64:
		return "bfs4k", fmt.Sprintf("low degrees (average %.1f, max %d) suggest a high diameter: bfs4k runs small levels in one block without returning to the host", d.Average, d.Max)
	}
	return "enterprise", fmt.Sprintf("degrees average %.1f, max %d: a small-world graph, where direction-optimizing enterprise skips most edges once the frontier explodes", d.Average, d.Max)
}

// checkStrategyOptions refuses the virtual warp-centric options with a BFS
// strategy other than vwc, which alone reads them.
func (BFS) checkStrategyOptions(p Params) error {
	if vwcOptionsSet(p) && p.Strategy != "" && p.Strategy != "auto" && p.Strategy != "vwc" {
		return usererr.New(usererr.Usage, fmt.Sprintf("operator bfs: vwarp, defer-outliers, dynamic and chunk-size tune the vwc strategy, not %s", p.Strategy),
			"leave them out, or use --strategy vwc (they select it when no strategy is given)")
	}
	return nil
}

// The vwc flags buffer: the dynamic work counter (8 bytes), "discovered"
// (4), the outlier queue's length (4).
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
	name, reason := chooseBFS(in.Graph, in.Params, b.seenLevels(in.Graph))
	var r *Result
	var err error
	switch name {
	case "enterprise":
		r, err = runEnterprise(ctx, b, in)
	case "bfs4k":
		r, err = runBFS4K(ctx, b, in)
	default:
		r, err = runBFSVWC(ctx, b, in)
	}
	if r != nil {
		r.StrategyReason = reason
		b.noteLevels(in.Graph, r.Iterations)
	}
	return r, err
}

// runBFSVWC is BFS with the virtual warp-centric kernels of
// kernels/bfs_vwc.cu.
func runBFSVWC(ctx context.Context, b *GPU, in Input) (*Result, error) {
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
	if err := startSearch(s, depthBuf, parentBuf, initSource, depthBuf, parentBuf, in.Source); err != nil {
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

	return bfsResult(ctx, b, s, g, depthBuf, parentBuf, cfg.String(), levels, compute, transfer)
}

// startSearch queues the start of a search on s: every vertex of depth and
// parent (the whole arrays, or a part's own range of them) unvisited and
// without a parent (both all-ones bytes), then the strategy's kernel that
// marks the source, launched with args.
func startSearch(s *gpu.Stream, depth, parent *gpu.DeviceBuffer, init *launchable, args ...any) error {
	for _, buf := range []*gpu.DeviceBuffer{depth, parent} {
		if err := buf.Memset8(s, 0xff); err != nil {
			return err
		}
	}
	return gpu.Launch(init.fn, gpu.Dim(1), gpu.Dim(1), 0, s, args...)
}

// bfsResult downloads a search's depths and parents into a Result, with
// the columns as Arrow lays them out (gpu_columns.go).
func bfsResult(ctx context.Context, b *GPU, s *gpu.Stream, g *convert.Graph, depthBuf, parentBuf *gpu.DeviceBuffer, strategy string, levels int, compute, transfer time.Duration) (*Result, error) {
	n := gpu.Len[int32](depthBuf)
	res := &Result{Op: "bfs", Backend: "gpu", Strategy: strategy, Iterations: levels, Compute: compute, Transfer: transfer, lease: leaseOf(ctx)}
	depth := Column{Name: "depth", Type: Int32Column, Int32: resultSlice[int32](res, n)}
	parent := Column{Name: "parent", Type: VertexColumn, Vertex: resultSlice[uint32](res, n)}
	poisonHost(b, depth.Int32, -7)
	poisonHost(b, parent.Vertex, 0xdeadbeef)
	arrow, err := b.bfsColumns(s, g, depthBuf, parentBuf, res, &depth, &parent)
	if err != nil {
		return nil, err
	}
	defer arrow.free()
	copies := append([]hostCopy{hostCopyOf(depth.Int32, depthBuf), hostCopyOf(parent.Vertex, parentBuf)}, arrow.copies...)
	if err := b.downloadAll(s, copies...); err != nil {
		return nil, err
	}
	res.Transfer += arrow.transfer
	res.Columns = []Column{depth, parent}
	return res, nil
}

// bfsTraceEnv names the environment variable that makes the GPU BFS
// strategies print each level, with the host time since the previous one,
// to stderr: where a search's time goes (docs/gpu.md). Set to "phases", the
// Enterprise searches also wait for the GPUs after each phase of a level
// and print each phase's time: slower, but it says which phase costs. Set
// to "calls", a multi-GPU search also times each part's calls
// (mgpu_bfs_trace.go).
const bfsTraceEnv = "GPIPE_BFS_TRACE"

// levelTrace prints the levels of one search when bfsTraceEnv is set.
type levelTrace struct {
	strategy string
	last     time.Time
	phases   bool
	mark     time.Time
	timed    []string
}

func newLevelTrace(strategy string) *levelTrace {
	mode := os.Getenv(bfsTraceEnv)
	if mode == "" {
		return nil
	}
	now := time.Now()
	return &levelTrace{strategy: strategy, last: now, mark: now, phases: mode == "phases"}
}

// phase notes the end of a level's phase, once streams have finished it,
// when phases are traced: "name issued/done", the host's µs to queue the
// phase's work and until the GPUs had done it.
func (t *levelTrace) phase(name string, streams ...*gpu.Stream) {
	if t == nil || !t.phases {
		return
	}
	issued := time.Now()
	if err := syncAll(streams); err != nil {
		return // the level's own wait reports it
	}
	now := time.Now()
	t.timed = append(t.timed, fmt.Sprintf("%s %.1f/%.1f", name, micros(issued.Sub(t.mark)), micros(now.Sub(t.mark))))
	t.mark = now
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func (t *levelTrace) level(format string, args ...any) {
	if t == nil {
		return
	}
	now := time.Now()
	phases := ""
	if len(t.timed) > 0 {
		phases = " [" + strings.Join(t.timed, ", ") + " µs]"
		t.timed = t.timed[:0]
	}
	fmt.Fprintf(os.Stderr, "%s: %s (%.1f µs)%s\n", t.strategy, fmt.Sprintf(format, args...), float64(now.Sub(t.last).Nanoseconds())/1e3, phases)
	t.last, t.mark = now, now
}
