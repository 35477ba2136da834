package gpuop

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"structs"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/kernels"
)

// The pull strategies of the vertex-program engine (kernels/warpseg.cuh):
//
//	warpseg  Warp Segmentation (khorasani-dissertation §2.1–2.2): every
//	         vertex pulls its in-edges every iteration, 32 consecutive
//	         vertices a warp, rows found by binary search and reduced as
//	         segments without head flags
//	kites    KiTES (§3.1–3.2, §3.4): the same rounds for the vertices whose
//	         inputs changed, found in an activeness bitmask; Vertex Grouping
//	         of the activation rows; Dynamic Thread Assignment over the
//	         active rows; activations near-far ordered
//
// Both pull along the CSC (the CSR of an undirected graph) with the
// program's weights in CSC order; kites also reads, to activate, the
// out-edges of a directed graph or their grouping (convert.Grouped). Rows
// longer than wsHubDegree go, in segments, to a second launch of the same
// iteration that gives each a block.

// wsHubDegree is the longest row a warp's round takes itself: 32 such rows
// are 512 passes of a warp, about what the lightest hub segment costs a
// block (GPU.HubDegree; tests lower it to reach the hub kernel on small
// graphs).
const wsHubDegree = 512

// isPull says whether strategy is one of the pull strategies.
func isPull(strategy string) bool { return strategy == strategyWarpSeg || strategy == strategyKiTES }

// InWeightsOf is the in-edge (CSC) counterpart of a program's CSR weights.
func InWeightsOf(w Layout) Layout {
	switch w {
	case outWeightsU32:
		return inWeightsU32
	case outWeightsKey32:
		return inWeightsKey32
	case outWeightsKey64:
		return inWeightsKey64
	case outWeights:
		return inWeights
	}
	return w
}

// groupPart is a part of the grouping of ratio 2^logR (groupOffsets or
// groupTargets), along both directions when both.
func groupPart(part Layout, logR uint, both bool) Layout {
	l := part | Layout(logR)<<groupShift
	if both {
		l |= symmetric
	}
	return l
}

// pullLayout is what a run of a pull strategy reads: the pull rows and
// weights, the out-edges CC also pulls on a directed graph, and kites'
// activation rows.
type pullLayout struct {
	pull, out, act, actIn []Layout
	// actW is the activation rows' weights, with which kites sends to hubs
	// (R = 1, weighted programs).
	actW []Layout
	// tree is the CSR with the program's weights, for SSSP's parent pass
	// (csr_parent_*), when the graph is directed (else it is pull).
	tree []Layout
}

func pullLayoutOf(g *convert.Graph, prog Program, strategy string, both bool, logR uint) pullLayout {
	var l pullLayout
	l.pull = []Layout{InOffsets, InSources}
	if prog.Weights != NoWeights {
		l.pull = append(l.pull, InWeightsOf(prog.Weights))
	}
	two := both && g.Directed
	if two {
		l.out = []Layout{OutOffsets, OutTargets}
	}
	if strategy == strategyKiTES {
		if logR == 0 {
			l.act = []Layout{OutOffsets, OutTargets}
			if two {
				l.actIn = []Layout{InOffsets, InSources}
			}
			if prog.Weights != NoWeights {
				l.actW = []Layout{prog.Weights}
			}
		} else {
			l.act = []Layout{groupPart(groupOffsets, logR, two), groupPart(groupTargets, logR, two)}
		}
	}
	if prog.tree() && g.Directed {
		l.tree = []Layout{OutOffsets, OutTargets}
		if prog.Weights != NoWeights {
			l.tree = append(l.tree, prog.Weights)
		}
	}
	return l
}

func (l pullLayout) parts() []Layout {
	var parts []Layout
	for _, p := range [][]Layout{l.pull, l.out, l.act, l.actIn, l.actW, l.tree} {
		parts = append(parts, p...)
	}
	return parts
}

// pullQueueEdges is the edges whose rows can be queued as hubs in an
// iteration: the pull rows, the out-edges CC pulls, the activation rows.
func pullQueueEdges(g *convert.Graph, strategy string, both bool) int64 {
	m := g.NumEdges()
	edges := m
	if both && g.Directed {
		edges += m
	}
	if strategy == strategyKiTES {
		edges += m
		if both && g.Directed {
			edges += m
		}
	}
	return edges
}

// pullMaskWords is the activeness words of one parity: a bit per group of
// 2^logR vertices, over whole chunks of 1024 vertices (a warp's scan).
func pullMaskWords(n int64, logR uint) int64 {
	chunks := (n + 1023) / 1024
	return max(chunks*32>>logR, 1)
}

// pullRounds is the rounds (32 vertices each) of n vertices, plus one: a
// round queue's room.
func pullRounds(n int64) int64 { return n/32 + 1 }

// pullBytes is the device memory of a run of a pull strategy.
func pullBytes(b *GPU, g *convert.Graph, prog Program, strategy string, both bool, logR uint) int64 {
	n := int64(g.NumVertices())
	l := pullLayoutOf(g, prog, strategy, both, logR)
	bytes := layoutBytes(g, l.parts()...) + n*prog.ValueBytes() + vwcQueueCap(pullQueueEdges(g, strategy, both), b.HubDegree())*8 + vpStateBytes
	if strategy == strategyKiTES {
		// The masks by parity, D, the sent marks and round queues by
		// parity, the stamps, the hubs.
		bytes += 2*pullMaskWords(n, logR)*4 + pullMaskWords(n, 0)*4 + 6*pullRounds(n)*4
	}
	return bytes
}

// kitesDenseDegree is the average degree from which kites runs without
// near-far ordering (Δ = +Inf) unless --delta is given: a pulled vertex
// reads its whole in-row, so on a low-diameter skewed graph the extra
// iterations of a threshold (each re-pulling the vertices its phase
// activates) cost more than the ordering saves. Measured on the H100, sssp
// on Kronecker 22 (average degree 53): 13.2 ms with near-far's Δ = 77, 10.9
// with 300, 10.2 without; on the 2048 × 2048 grid (average degree 4)
// near-far's Δ gave 108 ms (BENCHMARKS.md, issue 12).
const kitesDenseDegree = 8

// kitesDelta is kites' near-far step: --delta when given (given), else
// the other strategies' step (rule) on sparse graphs and none on dense ones.
func kitesDelta(g *convert.Graph, rule float64, given bool) float64 {
	if given || float64(g.NumEdges()) < kitesDenseDegree*float64(max(g.NumVertices(), 1)) {
		return rule
	}
	return math.Inf(1)
}

// checkVertexGroup checks --vertex-group: a power of two from 1 to 32.
func checkVertexGroup(group int) error {
	if group == 0 {
		return nil
	}
	if group < 1 || group > 1<<convert.MaxGroupLog || group&(group-1) != 0 {
		return usererr.Newf(usererr.Usage, "vertex-group %d is not 1, 2, 4, 8, 16 or 32", group)
	}
	return nil
}

// groupLog is the grouping ratio's log2 that --vertex-group names (0, the
// vertices themselves, when it is not given).
func groupLog(group int) uint {
	if group <= 1 {
		return 0
	}
	return uint(bits.TrailingZeros(uint(group)))
}

// kitesGroupLog is the grouping a kites run uses: the one --vertex-group
// names, or the smallest that fits the GPU's free memory (KiTES prefers
// small groups: they activate fewer vertices for nothing, §3.5.1). An
// undirected graph pulls and activates along the same CSR, so grouping
// saves it nothing.
func (b *GPU) kitesGroupLog(g *convert.Graph, prog Program, both bool, group int) uint {
	if group != 0 || !g.Directed {
		return groupLog(group)
	}
	for logR := uint(0); logR <= convert.MaxGroupLog; logR++ {
		if b.fitsBytes(g, pullBytes(b, g, prog, strategyKiTES, both, logR)) == nil {
			return logR
		}
	}
	return convert.MaxGroupLog
}

// preparePull uploads what a pull strategy reads and allocates its
// buffers.
func (d *vpDevice) preparePull() error {
	b, g, r := d.b, d.g, d.r
	l := pullLayoutOf(g, r.prog, r.strategy, r.both, r.logR)
	bufs, err := d.e.layouts(l.parts()...)
	if err != nil {
		return err
	}
	take := func(n int) []*gpu.DeviceBuffer {
		got := bufs[:n]
		bufs = bufs[n:]
		return got
	}
	pull := take(len(l.pull))
	d.inOffs, d.inSrcs = pull[0], pull[1]
	if len(pull) > 2 {
		d.inWeights = pull[2]
	}
	if len(l.out) > 0 {
		out := take(2)
		d.offs, d.targets = out[0], out[1]
	}
	if len(l.act) > 0 {
		act := take(2)
		d.actOffs, d.actAdj = act[0], act[1]
	}
	if len(l.actIn) > 0 {
		actIn := take(2)
		d.actInOffs, d.actInAdj = actIn[0], actIn[1]
	}
	if len(l.actW) > 0 {
		d.actWeights = take(1)[0]
	}
	if len(l.tree) > 0 {
		tree := take(len(l.tree))
		d.offs, d.targets = tree[0], tree[1]
		if len(tree) > 2 {
			d.weights = tree[2]
		}
	} else if r.prog.tree() {
		// Undirected: the CSR is the pull's.
		d.offs, d.targets, d.weights = d.inOffs, d.inSrcs, d.inWeights
	}
	prefix := "ws_"
	module := kernels.VPWarpSeg
	if r.strategy == strategyKiTES {
		prefix, module = "kites_", kernels.VPKiTES
	}
	if d.iterate, err = b.Kernel(module, prefix+r.prog.Name); err != nil {
		return err
	}
	if d.outliers, err = b.Kernel(module, prefix+r.prog.Name+"_hubs"); err != nil {
		return err
	}
	d.queueCap = vwcQueueCap(pullQueueEdges(g, r.strategy, r.both), d.b.HubDegree())
	sizes := []int64{d.n * r.prog.ValueBytes(), d.queueCap * 8, vpStateBytes}
	if r.strategy == strategyKiTES {
		d.maskWords = pullMaskWords(d.n, r.logR)
		sizes = append(sizes, 2*d.maskWords*4, pullMaskWords(d.n, 0)*4, 2*pullRounds(d.n)*4, pullRounds(d.n)*4, 2*pullRounds(d.n)*4)
		if r.logR == 0 {
			sizes = append(sizes, pullRounds(d.n)*4)
		}
	}
	work, err := d.e.buffers(sizes...)
	if err != nil {
		return err
	}
	d.values, d.queue, d.state = work[0], work[1], work[2]
	if r.strategy == strategyKiTES {
		d.mask, d.pending, d.rounds, d.stamp, d.sent = work[3], work[4], work[5], work[6], work[7]
	}
	if r.strategy == strategyKiTES && r.logR == 0 {
		return d.findHubs(work[8])
	}
	return nil
}

// findHubs marks the hubs kites sends to in mask, and keeps the mask for
// the run when there are any. The hub queue's first word counts them.
func (d *vpDevice) findHubs(mask *gpu.DeviceBuffer) error {
	k, err := d.b.Kernel(kernels.VPKiTES, "kites_hub_mask")
	if err != nil {
		return err
	}
	count, err := d.queue.Slice(0, 4)
	if err != nil {
		return err
	}
	if err := count.Memset8(d.s, 0); err != nil {
		return err
	}
	if err := k.Launch(d.s, d.inOffs, d.n, d.b.HubDegree(), mask, count); err != nil {
		return err
	}
	hubs := []uint32{0}
	if err := gpu.Download(d.s, hubs, count); err != nil {
		return err
	}
	if hubs[0] > 0 {
		d.hubMask = mask
	}
	return nil
}

// startPull clears what a kites run starts from: no vertex active but the
// source, which is pending (its out-neighbours are activated in the first
// iteration), its round the only one queued; or, for CC, every vertex
// active and every round queued. It sets firstRounds, the rounds queued.
func (d *vpDevice) startPull() error {
	if d.r.strategy != strategyKiTES {
		return nil
	}
	s := d.s
	if err := d.mask.Memset8(s, 0); err != nil {
		return err
	}
	if err := d.pending.Memset8(s, 0); err != nil {
		return err
	}
	if err := d.stamp.Memset8(s, 0xff); err != nil {
		return err
	}
	if err := d.sent.Memset8(s, 0); err != nil {
		return err
	}
	if d.r.labels {
		cur, err := d.mask.Slice(0, d.maskWords*4)
		if err != nil {
			return err
		}
		if err := cur.Memset8(s, 0xff); err != nil {
			return err
		}
		iota, err := d.b.Kernel(kernels.VPCommon, "vp_iota")
		if err != nil {
			return err
		}
		d.firstRounds = (d.n + 31) / 32
		return iota.Launch(s, d.rounds, d.firstRounds)
	}
	word, err := d.pending.Slice(int64(d.r.source/32)*4, 4)
	if err != nil {
		return err
	}
	if err := gpu.Upload(s, word, []uint32{1 << (d.r.source % 32)}); err != nil {
		return err
	}
	d.firstRounds = 1
	return gpu.Upload(s, d.rounds, []uint32{d.r.source / 32})
}

// launchPull queues one iteration of a pull strategy: the rounds, then the
// hubs' segments (whose last block ends the iteration).
func (d *vpDevice) launchPull() error {
	// The out-edges CC also pulls on a directed graph; none otherwise (the
	// kernels then pull only the in-edges).
	var outOffs, outAdj *gpu.DeviceBuffer
	if d.r.both && d.g.Directed {
		outOffs, outAdj = d.offs, d.targets
	}
	a := wsArgs{
		inOffs: d.inOffs.Ptr(), inAdj: d.inSrcs.Ptr(), inWeights: PtrOf(d.inWeights),
		outOffs: PtrOf(outOffs), outAdj: PtrOf(outAdj),
		actOffs: PtrOf(d.actOffs), actAdj: PtrOf(d.actAdj), actInOffs: PtrOf(d.actInOffs), actInAdj: PtrOf(d.actInAdj),
		actWeights: PtrOf(d.actWeights), hubMask: PtrOf(d.hubMask),
		values: d.values.Ptr(), mask: PtrOf(d.mask), pending: PtrOf(d.pending), sent: PtrOf(d.sent),
		rounds: PtrOf(d.rounds), stamp: PtrOf(d.stamp), queue: d.queue.Ptr(), st: d.state.Ptr(),
		n: d.n, maskWords: d.maskWords, hubDegree: d.b.HubDegree(), logR: uint32(d.r.logR),
	}
	if err := d.iterate.Launch(d.s, gpu.Args(&a)); err != nil {
		return err
	}
	return d.outliers.Launch(d.s, gpu.Args(&a))
}

// wsArgs mirrors kernels/warpseg.cuh's WSArgs, field by field (each Rows
// its offsets and adjacency): the argument of the Warp Segmentation and
// KiTES kernels (ws_*, kites_*).
type wsArgs struct {
	_                     structs.HostLayout
	inOffs, inAdj         gpu.DevicePtr
	inWeights             gpu.DevicePtr
	outOffs, outAdj       gpu.DevicePtr
	actOffs, actAdj       gpu.DevicePtr
	actInOffs, actInAdj   gpu.DevicePtr
	actWeights, hubMask   gpu.DevicePtr
	values, mask, pending gpu.DevicePtr
	sent, rounds, stamp   gpu.DevicePtr
	queue, st             gpu.DevicePtr
	n, maskWords          int64
	hubDegree             int64
	logR                  uint32
}

// describePull names what ran, for Result.Strategy.
func (d *vpDevice) describePull() string {
	var sb strings.Builder
	sb.WriteString(d.r.strategy)
	if d.r.strategy == strategyKiTES {
		fmt.Fprintf(&sb, " vertex-group=%d", 1<<d.r.logR)
		if d.r.logR == 0 {
			sb.WriteString(", sends to hubs")
		}
		if d.r.prog.priority && !math.IsInf(d.r.delta, 1) {
			fmt.Fprintf(&sb, ", near-far delta=%.4g", d.r.delta)
		}
	}
	fmt.Fprintf(&sb, ", hubs>%d in blocks", d.b.HubDegree())
	return sb.String()
}
