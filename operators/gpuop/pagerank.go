package gpuop

import (
	"fmt"
	"math"
	"structs"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// PageRank on the GPU, the engine's sum program in three layouts:
//
//	vwc      pull over the in-edges (CSC), virtual warp-centric, one launch
//	         an iteration (kernels/pagerank_vwc.cu); the sources numbered
//	         hubs first (convert.HubOrder) so the gathered contributions stay
//	         in cache
//	gshards  G-Shards: per shard, the entries' SrcValue summed into shared
//	         memory, then a second launch writes the new contributions back
//	         into the windows (kernels/shards.cuh)
//	cw       the same with the Concatenated Windows write-back
//
// Every layout iterates synchronously, as the CPU does, so iteration counts
// and the L1 change are networkx's. Contributions are float32 where the
// tolerance allows it, by the CPU's rule (operators.Float32Tolerance).
//
// Weighted PageRank (operators.Params.Weighted on a graph with weights)
// runs on the pulls alone (warpseg, vwc: their _w kernels, which read the
// in-edges' weights beside their sources and the out-edges' for W(u));
// G-Shards and CW refuse it (prWeightedStrategies), and auto passes them
// over.

// PRContribBytes is the width of a contribution at p's tolerance.
func PRContribBytes(p operators.Params) int64 {
	if PRFloat32(p) {
		return 4
	}
	return 8
}

// PRFloat32 says whether contributions are float32 (the CPU's rule; a
// tolerance of 0 is the default, 1e-9).
func PRFloat32(p operators.Params) bool { return p.Tolerance >= operators.Float32Tolerance }

// prVWCParts are the pulls' layouts: the out-offsets, the CSC (its sources
// numbered hubs first, with the numbering, where b says so), and weighted
// the in-edges' and the out-edges' weights (for an undirected graph the
// same layout).
func prVWCParts(b *GPU, weighted bool) []Layout {
	parts := []Layout{OutOffsets, InOffsets, InSources}
	if b.PageRankHubOrder() {
		parts = []Layout{OutOffsets, InOffsets, InSourcesHub, HubIDs}
	}
	if weighted {
		parts = append(parts, inWeights, outWeights)
	}
	return parts
}

// PRWeighted says whether PageRank with p on g weighs its edges: asked
// for, and g has weights (without them every weight is 1, which is the
// unweighted pull).
func PRWeighted(g *convert.Graph, p operators.Params) bool { return p.Weighted && g.Weighted }

// prWeightedStrategies names the strategies that run weighted PageRank,
// for the error the others give.
const prWeightedStrategies = "warpseg and vwc"

func prVWCBytes(b *GPU, g *convert.Graph, p operators.Params) int64 {
	return prPullBytes(b, g, p, outlierDegree(p))
}

// prWarpSegBytes is the memory of the warpseg pull, whose outliers are the
// rows longer than wsHubDegree.
func prWarpSegBytes(b *GPU, g *convert.Graph, p operators.Params) int64 {
	return prPullBytes(b, g, p, b.HubDegree())
}

func prPullBytes(b *GPU, g *convert.Graph, p operators.Params, outlierDegree int64) int64 {
	n := int64(g.NumVertices())
	outliers, segments := b.InOutliers(g, outlierDegree)
	return layoutBytes(g, prVWCParts(b, PRWeighted(g, p))...) + 3*n*8 + 2*n*PRContribBytes(p) + PRAccBytes +
		int64(len(outliers))*(4+8) + int64(len(segments))*8
}

func prShardParts(strategy string) []Layout {
	if strategy == strategyGShards {
		return []Layout{OutOffsets, shardStart, shardDest, shardWindows, shardSrc}
	}
	return []Layout{OutOffsets, shardStart, shardDest, cwStart, cwSrc, cwMapper}
}

func prShardBytes(strategy string) func(*GPU, *convert.Graph, operators.Params) int64 {
	return func(_ *GPU, g *convert.Graph, p operators.Params) int64 {
		n := int64(g.NumVertices())
		return layoutBytes(g, prShardParts(strategy)...) + g.NumEdges()*PRContribBytes(p) + 3*n*8 + n*PRContribBytes(p) + PRAccBytes
	}
}

// The accumulators: two dangling sums (this iteration's and the next's),
// the L1 change, the dynamic work counter.
const (
	PRAccBytes    = 32
	PRDanglingAt  = 0 // and 8
	PRL1At        = 16
	prCounterAt   = 24
	PRResetAt     = PRL1At // l1 and counter are cleared together
	PRResetLength = 16
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

// prOutlierLists are prOutliers' lists for one threshold.
type prOutlierLists struct {
	vertices []uint32
	segments []uint64
}

// InOutliers is prOutliers of g's in-edges, kept with g's copies on b
// (deviceGraph) and gone with them (Forget, Close): they depend on the
// graph alone, and each query reads them several times (the plans' bytes
// in Need, Fits and choosePlan, and the pull's upload), where scanning
// every vertex's degree took about 4 ms a time on Kronecker 22 (2.4 M
// vertices; issue 17). The callers do not modify the lists. b nil, or a
// graph whose in-edge layout is not on the host whole: computed afresh.
func (b *GPU) InOutliers(g *convert.Graph, threshold int64) ([]uint32, []uint64) {
	in := g.In()
	if b == nil || threshold <= 0 || len(in.Offsets) != g.NumVertices()+1 {
		return prOutliers(in, threshold)
	}
	dg := b.deviceGraph(g)
	dg.outMu.Lock()
	defer dg.outMu.Unlock()
	l, ok := dg.outliers[threshold]
	if !ok {
		l.vertices, l.segments = prOutliers(in, threshold)
		if dg.outliers == nil {
			dg.outliers = map[int64]prOutlierLists{}
		}
		dg.outliers[threshold] = l
	}
	return l.vertices, l.segments
}

// runPageRankPull runs the pull over the CSC (vwc, warpseg).
func runPageRankPull(e *enactor) error {
	return runPageRank(e, (*prRun).pull)
}

// runPageRankShards runs PageRank over G-Shards or Concatenated Windows.
func runPageRankShards(e *enactor) error {
	return runPageRank(e, (*prRun).shards)
}

// runPageRank runs one of PageRank's layouts, layout, for the enactor.
func runPageRank(e *enactor, layout func(pr *prRun) ([]float64, error)) error {
	if e.g.NumVertices() == 0 {
		e.res.Columns = []operators.Column{{Name: "rank", Type: operators.Float64Column, Float64: []float64{}}}
		return nil
	}
	s, err := e.stream()
	if err != nil {
		return err
	}
	pr := &prRun{e: e, b: e.b, s: s, g: e.g, p: e.p, n: int64(e.g.NumVertices()), res: e.res, suffix: "f64", weighted: PRWeighted(e.g, e.p)}
	if PRFloat32(e.p) {
		pr.suffix = "f32"
	}
	if pr.weighted {
		if err := operators.CheckRankWeights(e.g); err != nil {
			return err
		}
	}
	ranks, err := layout(pr)
	if err != nil {
		return err
	}
	e.res.Columns = []operators.Column{{Name: "rank", Type: operators.Float64Column, Float64: ranks, Valid: pr.valid}}
	return nil
}

// prRun is one PageRank run on the GPU, in its enactor.
type prRun struct {
	e      *enactor
	b      *GPU
	s      *gpu.Stream
	g      *convert.Graph
	p      operators.Params
	n      int64
	res    *operators.Result
	suffix string // the contributions' type in kernel names: f64 or f32
	valid  []byte // the ranks' validity bitmap, where iterate knows it
	// weighted says the pull weighs the in-edges (PRWeighted): its
	// kernels are the _w ones.
	weighted bool
}

// prIteration is the per-iteration state every layout shares: the ranks
// and dangling sums by parity, the L1 change.
type prIteration struct {
	rank               [2]*gpu.DeviceBuffer
	dangling           [2]*gpu.DeviceBuffer
	l1, counter, reset *gpu.DeviceBuffer
	acc                *gpu.DeviceBuffer
}

func newPRIteration(rank0, rank1, acc *gpu.DeviceBuffer) *prIteration {
	it := &prIteration{rank: [2]*gpu.DeviceBuffer{rank0, rank1}, acc: acc}
	it.dangling[0], _ = acc.Slice(PRDanglingAt, 8)
	it.dangling[1], _ = acc.Slice(PRDanglingAt+8, 8)
	it.l1, _ = acc.Slice(PRL1At, 8)
	it.counter, _ = acc.Slice(prCounterAt, 8)
	it.reset, _ = acc.Slice(PRResetAt, PRResetLength)
	return it
}

// iterate runs step(cur, next) until the L1 change is below the
// tolerance or the iterations run out, and returns the final ranks, in
// memory that res.Release gives back, and their bitmap in pr.valid where
// it can tell that none is null.
func (pr *prRun) iterate(it *prIteration, step func(cur, next int) error) ([]float64, error) {
	ctx, s, p, res := pr.e.ctx, pr.s, pr.p, pr.res
	report := operators.ProgressOf(ctx, "pagerank")
	change := []float64{0}
	cur := 0
	converged := false
	for res.Iterations < p.MaxIterations {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next := 1 - cur
		if err := it.reset.Memset8(s, 0); err != nil {
			return nil, err
		}
		if err := it.dangling[next].Memset8(s, 0); err != nil {
			return nil, err
		}
		if err := step(cur, next); err != nil {
			return nil, err
		}
		// A download to Go memory waits for the iteration to finish.
		if err := gpu.Download(s, change, it.l1); err != nil {
			return nil, err
		}
		res.Iterations++
		cur = next
		report(operators.Progress{Iteration: res.Iterations, Change: change[0], Active: -1})
		if change[0] < p.Tolerance {
			converged = true
			break
		}
	}
	ranks := column[float64](pr.e, int(pr.n))
	PoisonHost(pr.b, ranks, math.NaN())
	if err := pr.b.DownloadAll(s, HostCopyOf(ranks, it.rank[cur])); err != nil {
		return nil, err
	}
	if !converged {
		res.NotConverged = true
		res.Warnings = append(res.Warnings, NotConverged(res.Iterations, change[0], p.Tolerance))
	}
	// The L1 change sums |x'[v] - x[v]| over every vertex (RankUpdate in
	// kernels/vertex_program.cuh), so a NaN or infinite rank would make it
	// NaN or infinite: where it is a number, no rank is null, and the
	// bitmap says so without the host testing 2.4 M ranks a query for NaN
	// (Rows, Unreached; issue 17). The initial ranks are 1/n.
	if !math.IsNaN(change[0]) && !math.IsInf(change[0], 0) {
		pr.valid = allValid(pr.e.mem, pr.n)
	}
	return ranks, nil
}

// pull is the pull over the CSC: virtual warps (vwc), or Warp
// Segmentation's rounds (warpseg), whose outliers are the rows longer than
// wsHubDegree; both leave the outliers to whole blocks.
func (pr *prRun) pull() ([]float64, error) {
	x := &prPull{}
	if err := pr.pullKernels(x); err != nil {
		return nil, err
	}
	if err := pr.pullBuffers(x); err != nil {
		return nil, err
	}
	s, it := pr.s, x.it
	if err := pr.e.start(); err != nil {
		return nil, err
	}
	if err := it.acc.Memset8(s, 0); err != nil {
		return nil, err
	}
	if err := x.init.Launch(s, pr.weightedArgs([]any{x.outOffs}, x.outWeights, PtrOf(x.hubID), it.rank[0], x.invDegree, x.contrib[0], pr.n, it.dangling[0])...); err != nil {
		return nil, err
	}
	ranks, err := pr.iterate(it, func(cur, next int) error { return pr.pullStep(x, cur, next) })
	if err != nil {
		return nil, err
	}
	return ranks, pr.e.stop()
}

// prPull is the pull's kernels, layouts and buffers.
type prPull struct {
	cfg                                     vwcConfig
	pull, init, sumOutliers, finishOutliers *Kernel
	outOffs, inOffs, inSrcs, hubID          *gpu.DeviceBuffer
	inWeights, outWeights                   *gpu.DeviceBuffer // weighted only
	contrib                                 [2]*gpu.DeviceBuffer
	invDegree, counter                      *gpu.DeviceBuffer
	outlierBuf, segmentBuf, outlierAcc      *gpu.DeviceBuffer
	outliers, segments                      int
	it                                      *prIteration
}

// pullKernels chooses the pull's kernels: virtual warps of K lanes, or Warp
// Segmentation's rounds with its own outlier threshold; and says so in the
// result's strategy.
func (pr *prRun) pullKernels(x *prPull) error {
	b := pr.b
	x.cfg = vwcConfigFor(pr.p, pr.g.In())
	suffix := pr.suffix
	if b.PageRankHubOrder() {
		suffix += "_hub"
	}
	module, pullName, describe := kernels.PageRankVWC, fmt.Sprintf("pr_pull_k%d_%s", x.cfg.k, suffix), x.cfg.String()
	if pr.e.plan.Strategy == strategyWarpSeg {
		module, pullName = kernels.VPWarpSeg, "pr_ws_"+suffix
		x.cfg = vwcConfig{outlierDegree: b.HubDegree()}
		describe = fmt.Sprintf("warpseg, hubs>%d in blocks", b.HubDegree())
	}
	// The weighted kernels' names end in _w; the finish is the same.
	w := ""
	if pr.weighted {
		w = "_w"
	}
	var err error
	if x.pull, err = b.Kernel(module, pullName+w); err != nil {
		return err
	}
	k, err := pr.e.kernels(kernels.PageRankVWC, "pr_init_"+suffix+w, "pr_outliers_"+pr.suffix+w, "pr_outliers_finish_"+suffix)
	if err != nil {
		return err
	}
	x.init, x.sumOutliers, x.finishOutliers = k[0], k[1], k[2]
	pr.res.Strategy = describe + ", pull, " + pr.describe()
	if pr.weighted {
		pr.res.Strategy += ", weighted"
	}
	if b.PageRankHubOrder() {
		pr.res.Strategy += ", sources numbered hubs first"
	}
	return nil
}

// pullBuffers copies the layouts and the outliers' lists to the GPU and
// allocates the ranks, the contributions and the accumulators.
func (pr *prRun) pullBuffers(x *prPull) error {
	b, s, n := pr.b, pr.s, pr.n
	parts, err := pr.e.layouts(prVWCParts(b, pr.weighted)...)
	if err != nil {
		return err
	}
	x.outOffs, x.inOffs, x.inSrcs = parts[0], parts[1], parts[2]
	if b.PageRankHubOrder() {
		x.hubID = parts[3]
	}
	if pr.weighted {
		x.inWeights, x.outWeights = parts[len(parts)-2], parts[len(parts)-1]
	}
	outliers, segments := b.InOutliers(pr.g, x.cfg.outlierDegree)
	x.outliers, x.segments = len(outliers), len(segments)
	vec, cvec := n*8, n*PRContribBytes(pr.p)
	bufs, err := pr.e.buffers(vec, vec, cvec, cvec, vec, PRAccBytes,
		int64(len(outliers))*4, int64(len(segments))*8, int64(len(outliers))*8)
	if err != nil {
		return err
	}
	x.contrib = [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}
	x.invDegree = bufs[4]
	x.outlierBuf, x.segmentBuf, x.outlierAcc = bufs[6], bufs[7], bufs[8]
	x.it = newPRIteration(bufs[0], bufs[1], bufs[5])
	if x.cfg.dynamic {
		x.counter = x.it.counter
	}
	if len(outliers) == 0 {
		return nil
	}
	if err := gpu.Upload(s, x.outlierBuf, outliers); err != nil {
		return err
	}
	if err := gpu.Upload(s, x.segmentBuf, segments); err != nil {
		return err
	}
	return x.outlierAcc.Memset8(s, 0)
}

// pullStep is an iteration of the pull: from the ranks and contributions
// cur into next, the outliers by whole blocks.
func (pr *prRun) pullStep(x *prPull, cur, next int) error {
	s, p, n, it := pr.s, pr.p, pr.n, x.it
	a := PRPullArgs{
		InOffsets: x.inOffs.Ptr(), InSources: x.inSrcs.Ptr(), InWeights: PtrOf(x.inWeights), HubID: PtrOf(x.hubID),
		Contrib: x.contrib[cur].Ptr(), InvDegree: x.invDegree.Ptr(), Rank: it.rank[cur].Ptr(), NextRank: it.rank[next].Ptr(),
		NextContrib: x.contrib[next].Ptr(), Dangling: it.dangling[cur].Ptr(), NextDangling: it.dangling[next].Ptr(),
		L1: it.l1.Ptr(), Counter: PtrOf(x.counter), Lo: 0, Hi: n, N: n, Damping: p.Damping,
		Chunk: x.cfg.chunk, OutlierDegree: x.cfg.outlierDegree, Stream: Flag(!pr.b.tune.noStreamHint),
	}
	if err := x.pull.Launch(s, gpu.Args(&a)); err != nil {
		return err
	}
	if x.outliers == 0 {
		return nil
	}
	if err := x.sumOutliers.Launch(s, pr.weightedArgs([]any{x.inOffs, x.inSrcs}, x.inWeights, x.contrib[cur], x.outlierBuf, x.segmentBuf, uint32(x.segments), x.outlierAcc)...); err != nil {
		return err
	}
	f := PRFinishArgs{
		Outliers: x.outlierBuf.Ptr(), HubID: PtrOf(x.hubID), Acc: x.outlierAcc.Ptr(), InvDegree: x.invDegree.Ptr(),
		Rank: it.rank[cur].Ptr(), NextRank: it.rank[next].Ptr(), NextContrib: x.contrib[next].Ptr(),
		Dangling: it.dangling[cur].Ptr(), NextDangling: it.dangling[next].Ptr(), L1: it.l1.Ptr(),
		N: n, Damping: p.Damping, Count: uint32(x.outliers),
	}
	return x.finishOutliers.Launch(s, gpu.Args(&f))
}

// shardRankArgs mirrors kernels/shards.cuh's ShardRankArgs: PageRank's
// sums and ranks over G-Shards or Concatenated Windows (*_pr_compute_*).
type shardRankArgs struct {
	_                                structs.HostLayout
	start, dest, srcValue, invDegree gpu.DevicePtr
	rank, nextRank, nextContrib      gpu.DevicePtr
	dangling, nextDangling, l1       gpu.DevicePtr
	damping                          float64
	n, N, S                          uint32
}

// PRPullArgs mirrors kernels/vertex_program.cuh's PRPullArgs, field by
// field: the arguments of every PageRank pull (pr_pull_k*, pr_ws_*, and
// the multi-GPU mg_pr_ws_*).
type PRPullArgs struct {
	_                                       structs.HostLayout
	InOffsets, InSources, InWeights, HubID  gpu.DevicePtr
	Contrib, InvDegree, Rank, NextRank      gpu.DevicePtr
	NextContrib, Dangling, NextDangling, L1 gpu.DevicePtr
	Counter                                 gpu.DevicePtr
	Lo, Hi, N                               int64
	Damping                                 float64
	Chunk, OutlierDegree                    int64
	Stream                                  int32
}

// PRFinishArgs mirrors kernels/vertex_program.cuh's PRFinishArgs: the
// outliers' sums turned into ranks (pr_outliers_finish_*).
type PRFinishArgs struct {
	_                               structs.HostLayout
	Outliers, HubID, Acc, InvDegree gpu.DevicePtr
	Rank, NextRank, NextContrib     gpu.DevicePtr
	Dangling, NextDangling, L1      gpu.DevicePtr
	N                               int64
	Damping                         float64
	Count                           uint32
}

// weightedArgs are a pull kernel's arguments: lead, then the weights where
// the pull is weighted (the _w kernels take them there), then rest.
func (pr *prRun) weightedArgs(lead []any, weights *gpu.DeviceBuffer, rest ...any) []any {
	if pr.weighted {
		lead = append(lead, weights)
	}
	return append(lead, rest...)
}

// describe says how contributions are kept.
func (pr *prRun) describe() string {
	if pr.suffix == "f32" {
		return "float32 contributions"
	}
	return "float64 contributions"
}

// shards runs PageRank over G-Shards or Concatenated Windows: a launch for
// the sums and ranks (steps 1-3), one for the write-back (step 4).
func (pr *prRun) shards() ([]float64, error) {
	b, s, g, p, n, strategy := pr.b, pr.s, pr.g, pr.p, pr.n, pr.e.plan.Strategy
	module, prefix := kernels.VPGShards, "gs_"
	if strategy == strategyCW {
		module, prefix = kernels.VPCW, "cw_"
	}
	initRanks, err := b.Kernel(kernels.PageRankVWC, "pr_init_"+pr.suffix)
	if err != nil {
		return nil, err
	}
	compute, err := b.Kernel(module, prefix+"pr_compute_"+pr.suffix)
	if err != nil {
		return nil, err
	}
	writeBack, err := b.Kernel(module, prefix+"pr_write_back_"+pr.suffix)
	if err != nil {
		return nil, err
	}
	parts, err := pr.e.layouts(prShardParts(strategy)...)
	if err != nil {
		return nil, err
	}
	sh, err := g.Shards(false)
	if err != nil {
		return nil, err
	}
	N, S := uint32(sh.N), uint32(sh.Count)
	cb := PRContribBytes(p)
	bufs, err := pr.e.buffers(int64(len(sh.SrcIndex))*cb, n*8, n*8, n*cb, n*8, PRAccBytes)
	if err != nil {
		return nil, err
	}
	srcValue, contrib, invDegree := bufs[0], bufs[3], bufs[4]
	it := newPRIteration(bufs[1], bufs[2], bufs[5])
	outOffs, start, dest := parts[0], parts[1], parts[2]
	grid, block := gpu.Dim(S), gpu.Dim(BlockSize)
	writeBackArgs := func() []any {
		if strategy == strategyGShards {
			return []any{parts[3], parts[4], srcValue, contrib, uint32(n), N, S}
		}
		return []any{parts[3], parts[4], parts[5], srcValue, contrib, uint32(n), N, S}
	}()
	pr.res.Strategy = fmt.Sprintf("%s N=%d shards=%d, %s", strategy, N, S, pr.describe())

	if err := pr.e.start(); err != nil {
		return nil, err
	}
	if err := it.acc.Memset8(s, 0); err != nil {
		return nil, err
	}
	if err := initRanks.Launch(s, outOffs, gpu.DevicePtr(0), it.rank[0], invDegree, contrib, n, it.dangling[0]); err != nil {
		return nil, err
	}
	if err := gpu.Launch(writeBack.Fn, grid, block, uint32(int64(N)*cb), s, writeBackArgs...); err != nil {
		return nil, err
	}
	ranks, err := pr.iterate(it, func(cur, next int) error {
		a := shardRankArgs{
			start: start.Ptr(), dest: dest.Ptr(), srcValue: srcValue.Ptr(), invDegree: invDegree.Ptr(),
			rank: it.rank[cur].Ptr(), nextRank: it.rank[next].Ptr(), nextContrib: contrib.Ptr(),
			dangling: it.dangling[cur].Ptr(), nextDangling: it.dangling[next].Ptr(), l1: it.l1.Ptr(),
			damping: p.Damping, n: uint32(n), N: N, S: S,
		}
		if err := gpu.Launch(compute.Fn, grid, block, N*8, s, gpu.Args(&a)); err != nil {
			return err
		}
		return gpu.Launch(writeBack.Fn, grid, block, uint32(int64(N)*cb), s, writeBackArgs...)
	})
	if err != nil {
		return nil, err
	}
	return ranks, pr.e.stop()
}

// NotConverged is the warning for ranks returned before they converged.
func NotConverged(iterations int, change, tolerance float64) string {
	return fmt.Sprintf("pagerank did not converge in %d iterations: the last iteration changed the ranks by %g (L1), above the tolerance %g; the ranks are returned as they are (raise the iteration limit or the tolerance)",
		iterations, change, tolerance)
}
