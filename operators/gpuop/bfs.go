package gpuop

import (
	"fmt"
	"os"
	"strings"
	"structs"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// BFS on the GPU has three strategies (bfsTable): enterprise
// (direction-optimizing, enterprise.go), bfs4k (frontier queues with
// per-level technique choice and a single-block kernel for small
// frontiers, bfs4k.go) and vwc (level-synchronous top-down over the status
// array, virtual warp-centric, below). auto chooses from the graph's
// degree statistics and the depth of earlier searches (bfsOrder).

// bfsStrategyBytes is the bytes of a table row: bfsBytes of strategy.
func bfsStrategyBytes(strategy string) func(*GPU, *convert.Graph, operators.Params) int64 {
	return func(_ *GPU, g *convert.Graph, p operators.Params) int64 { return bfsBytes(g, p, strategy) }
}

// bfsBytes is the device memory a search with the named strategy takes,
// its result's columns made on the device included.
func bfsBytes(g *convert.Graph, p operators.Params, strategy string) int64 {
	return searchBytes(g, p, strategy) + bfsColumnsBytes(g)
}

func searchBytes(g *convert.Graph, p operators.Params, strategy string) int64 {
	n := int64(g.NumVertices())
	switch strategy {
	case "enterprise":
		_, hubs := EnterpriseHubs(g.Degrees())
		return layoutBytes(g, OutOffsets, OutTargets, InOffsets, InSources, OutClasses, InClasses, HubBits) + EntBufferBytes(n, hubs)
	case "bfs4k":
		return layoutBytes(g, OutOffsets, OutTargets) + 8*n + 2*4*b4kCapacity(n) + b4kSegmentBytes(g) + b4kStatsBytes
	}
	return layoutBytes(g, OutOffsets, OutTargets) + n*8 + bfsFlagsBytes + outlierQueueBytes(&g.Out, outlierDegree(p))
}

// highDiameterLevels is the depth from which a graph counts as one of high
// diameter: levels beyond the few of a small-world graph (Graph 500
// Kronecker graphs have under 10), each paying a host round trip outside
// bfs4k's single-block kernel.
const highDiameterLevels = 64

// bfsOrder is auto's order for a search on g: from its degree statistics
// and the most levels an earlier search on g ran (b.seenLevels; 0 when
// none did: the estimate of the diameter), enterprise or bfs4k first, vwc
// last (the strategy of the virtual warp-centric options).
func bfsOrder(t *table, b *GPU, g *convert.Graph, _ operators.Params) []choice {
	const vwc = "virtual warp-centric top-down over the status array (the strategy its options tune)"
	d, seen := g.Degrees(), b.seenLevels(g)
	switch {
	case int64(g.NumVertices()) > b4kMaxVertices:
		return orderOf(t, "enterprise", fmt.Sprintf("%d vertices, more than bfs4k takes", g.NumVertices()), strategyVWC, vwc)
	case seen > highDiameterLevels:
		return orderOf(t, "bfs4k", fmt.Sprintf("an earlier search on this graph ran %d levels: a high diameter, and bfs4k runs small levels in one block without returning to the host", seen),
			"enterprise", "direction-optimizing Enterprise", strategyVWC, vwc)
	case d.Average < 8 && d.Max <= 64:
		return orderOf(t, "bfs4k", fmt.Sprintf("low degrees (average %.1f, max %d) suggest a high diameter: bfs4k runs small levels in one block without returning to the host", d.Average, d.Max),
			"enterprise", "direction-optimizing Enterprise", strategyVWC, vwc)
	}
	return orderOf(t, "enterprise", fmt.Sprintf("degrees average %.1f, max %d: a small-world graph, where direction-optimizing enterprise skips most edges once the frontier explodes", d.Average, d.Max),
		"bfs4k", "BFS-4K", strategyVWC, vwc)
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

// runBFSVWC is BFS with the virtual warp-centric kernels of
// kernels/bfs_vwc.cu.
func runBFSVWC(e *enactor) error {
	g := e.g
	n := g.NumVertices()
	cfg := vwcConfigFor(e.p, &g.Out)
	k, err := e.kernels(kernels.BFSVWC, fmt.Sprintf("bfs_vwc_k%d", cfg.k), "bfs_vwc_outliers", "bfs_init_source")
	if err != nil {
		return err
	}
	parts, err := e.layouts(OutOffsets, OutTargets)
	if err != nil {
		return err
	}
	bufs, err := e.buffers(int64(n)*4, int64(n)*4, bfsFlagsBytes, outlierQueueBytes(&g.Out, cfg.outlierDegree))
	if err != nil {
		return err
	}
	depthBuf, parentBuf := bufs[0], bufs[1]
	if err := e.start(); err != nil {
		return err
	}
	if err := startSearch(e.s, depthBuf, parentBuf, k[2], depthBuf, parentBuf, e.in.Source); err != nil {
		return err
	}
	levels, err := vwcLevels(e, cfg, k[0], k[1], parts, bufs)
	if err != nil {
		return err
	}
	if err := e.stop(); err != nil {
		return err
	}
	return bfsResult(e, depthBuf, parentBuf, cfg.String(), levels)
}

// vwcLevels runs the levels of a vwc search with its kernels expand and
// outliers over its layouts (offsets, targets) and buffers (depth,
// parent, flags, the outlier queue), and returns how many there were.
func vwcLevels(e *enactor, cfg vwcConfig, expand, outliers *Kernel, parts, bufs []*gpu.DeviceBuffer) (int, error) {
	s, n := e.s, int64(e.g.NumVertices())
	offsets, targets := parts[0], parts[1]
	depthBuf, parentBuf, flags, queue := bufs[0], bufs[1], bufs[2], bufs[3]
	counter, _ := flags.Slice(bfsCounterAt, 8)
	discovered, _ := flags.Slice(bfsDiscoveredAt, 4)
	queueLen, _ := flags.Slice(bfsOutlierCountAt, 4)
	if !cfg.dynamic {
		counter = nil
	}
	found := []int32{0}
	for level := int32(0); ; level++ {
		if err := e.ctx.Err(); err != nil {
			return 0, err
		}
		if err := flags.Memset8(s, 0); err != nil {
			return 0, err
		}
		a := vwcLevelArgs{
			offsets: offsets.Ptr(), targets: targets.Ptr(), depth: depthBuf.Ptr(), parent: parentBuf.Ptr(),
			counter: PtrOf(counter), outliers: PtrOf(queue), outlierCount: queueLen.Ptr(), discovered: discovered.Ptr(),
			n: n, chunk: cfg.chunk, outlierDegree: cfg.outlierDegree, level: level,
		}
		if err := expand.Launch(s, gpu.Args(&a)); err != nil {
			return 0, err
		}
		if cfg.outlierDegree > 0 {
			if err := outliers.Launch(s, offsets, targets, depthBuf, parentBuf, level, queue, queueLen, discovered); err != nil {
				return 0, err
			}
		}
		// A download to Go memory waits for the level to finish.
		if err := gpu.Download(s, found, discovered); err != nil {
			return 0, err
		}
		if found[0] == 0 {
			return int(level) + 1, nil
		}
	}
}

// vwcLevelArgs mirrors kernels/bfs_vwc.cu's VWCLevelArgs, field by field:
// the arguments of a level (bfs_vwc_k*).
type vwcLevelArgs struct {
	_                         structs.HostLayout
	offsets, targets, depth   gpu.DevicePtr
	parent, counter, outliers gpu.DevicePtr
	outlierCount, discovered  gpu.DevicePtr
	n, chunk, outlierDegree   int64
	level                     int32
}

// startSearch queues the start of a search on s: every vertex of depth and
// parent (the whole arrays, or a part's own range of them) unvisited and
// without a parent (both all-ones bytes), then the strategy's kernel that
// marks the source, launched with args.
func startSearch(s *gpu.Stream, depth, parent *gpu.DeviceBuffer, init *Kernel, args ...any) error {
	for _, buf := range []*gpu.DeviceBuffer{depth, parent} {
		if err := buf.Memset8(s, 0xff); err != nil {
			return err
		}
	}
	return gpu.Launch(init.Fn, gpu.Dim(1), gpu.Dim(1), 0, s, args...)
}

// bfsResult downloads a search's depths and parents into the enactor's
// result, with the columns as Arrow lays them out (columns.go), and notes
// the search's levels for auto's next choice on the graph (bfsOrder).
func bfsResult(e *enactor, depthBuf, parentBuf *gpu.DeviceBuffer, strategy string, levels int) error {
	n := gpu.Len[int32](depthBuf)
	res := e.res
	res.Strategy, res.Iterations = strategy, levels
	depth := operators.Column{Name: "depth", Type: operators.Int32Column, Int32: column[int32](e, n)}
	parent := operators.Column{Name: "parent", Type: operators.VertexColumn, Vertex: column[uint32](e, n)}
	PoisonHost(e.b, depth.Int32, -7)
	PoisonHost(e.b, parent.Vertex, 0xdeadbeef)
	arrow, err := e.b.bfsColumns(e.s, e.g, depthBuf, parentBuf, e.mem, &depth, &parent)
	if err != nil {
		return err
	}
	defer arrow.free()
	copies := append([]HostCopy{HostCopyOf(depth.Int32, depthBuf), HostCopyOf(parent.Vertex, parentBuf)}, arrow.copies...)
	if err := e.b.DownloadAll(e.s, copies...); err != nil {
		return err
	}
	res.Transfer += arrow.transfer
	res.Columns = []operators.Column{depth, parent}
	e.b.noteLevels(e.g, levels)
	return nil
}

// TraceEnv names the environment variable that makes the GPU BFS
// strategies print each level, with the host time since the previous one,
// to stderr: where a search's time goes (docs/gpu.md). Set to "phases", the
// Enterprise searches also wait for the GPUs after each phase of a level
// and print each phase's time: slower, but it says which phase costs. Set
// to "calls", a multi-GPU search also times each part's calls
// (multigpu/bfs_trace.go).
const TraceEnv = "GPIPE_BFS_TRACE"

// LevelTrace prints the levels of one search when bfsTraceEnv is set.
type LevelTrace struct {
	strategy string
	last     time.Time
	phases   bool
	mark     time.Time
	timed    []string
}

func NewLevelTrace(strategy string) *LevelTrace {
	mode := os.Getenv(TraceEnv)
	if mode == "" {
		return nil
	}
	now := time.Now()
	return &LevelTrace{strategy: strategy, last: now, mark: now, phases: mode == "phases"}
}

// Phase notes the end of a level's Phase, once streams have finished it,
// when phases are traced: "name issued/done", the host's µs to queue the
// Phase's work and until the GPUs had done it.
func (t *LevelTrace) Phase(name string, streams ...*gpu.Stream) {
	if t == nil || !t.phases {
		return
	}
	issued := time.Now()
	if err := SyncAll(streams); err != nil {
		return // the level's own wait reports it
	}
	now := time.Now()
	t.timed = append(t.timed, fmt.Sprintf("%s %.1f/%.1f", name, Micros(issued.Sub(t.mark)), Micros(now.Sub(t.mark))))
	t.mark = now
}

func Micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func (t *LevelTrace) Level(format string, args ...any) {
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
