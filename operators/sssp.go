package operators

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// SSSP is single-source shortest paths over non-negative edge weights
// (weight 1 where the input has none): each vertex's distance from the
// source and its parent in a shortest-path tree.
type SSSP struct{}

// Spec describes sssp.
func (SSSP) Spec() Spec {
	return Spec{
		Name:        "sssp",
		Summary:     "single-source shortest paths (delta-stepping): distance and shortest-path-tree parent of every vertex reachable from the source",
		NeedsSource: true,
		Weighted:    true,
		Weights:     convert.NonNegativeWeights,
		Params:      []string{ParamSource, ParamDelta},
		Columns: []ColumnSpec{
			{Name: "distance", Type: Float64Column, Doc: "sum of the weights on a shortest path from the source (0 for the source); null when unreachable"},
			{Name: "parent", Type: VertexColumn, Doc: "the vertex before this one on a shortest path (the source for itself); null when unreachable"},
		},
	}
}

// Prepare checks Delta: 0 (choose from the weights) or a positive number.
func (SSSP) Prepare(p *Params) error { return checkDelta("sssp", p.Delta) }

func checkDelta(op string, delta float64) error {
	if math.IsNaN(delta) || math.IsInf(delta, 0) || delta < 0 {
		return usererr.New(usererr.Usage, fmt.Sprintf("operator %s: delta %v must be a positive number", op, delta),
			"pass a bucket width > 0, or 0 to let gpipe choose one from the weights")
	}
	return nil
}

// sampleWeights estimates the mean, smallest and largest weight of c from a
// fixed sample of its edges (all 1 without weights), so that choosing Δ
// costs no pass over the weights.
func sampleWeights(c *convert.CSR) (mean, lo, hi float64) {
	m := c.NumEdges()
	if m == 0 || c.Weights == nil {
		return 1, 1, 1
	}
	const samples = 1024
	rng := rand.New(rand.NewPCG(0x5eed, 0x6a9))
	lo, hi = math.Inf(1), math.Inf(-1)
	var sum float64
	for i := 0; i < samples; i++ {
		x := c.Weights[rng.Int64N(m)]
		sum += x
		lo, hi = min(lo, x), max(hi, x)
	}
	return sum / samples, lo, hi
}

// ssspDeltaFactor scales the default Δ: Δ = factor · mean weight / average
// degree. Measured on Kronecker graphs with GAP's weights (1..255, average
// degree ~30), where it gives Δ ≈ 2 .. 4 as GAP's benchmark uses.
var ssspDeltaFactor = 0.5

// defaultSSSPDelta chooses Δ from the weights and the degree: the mean
// weight divided by the average degree (Meyer and Sanders' Θ(1/d) for
// random weights, scaled to the weights), so that a bucket holds about one
// edge's worth of distance per neighbour. Without weights it is 1: one BFS
// level per bucket.
func defaultSSSPDelta(c *convert.CSR) float64 {
	mean, _, _ := sampleWeights(c)
	n := c.NumVertices()
	if n == 0 || c.NumEdges() == 0 || mean <= 0 {
		return 1
	}
	if c.Weights == nil {
		return 1
	}
	avgDeg := float64(c.NumEdges()) / float64(n)
	return max(ssspDeltaFactor*mean/max(avgDeg, 1), math.SmallestNonzeroFloat64)
}

// ringSpan is the ring length for a Δ: twice the sampled largest weight in
// buckets, at least 64 and at most 2^16 buckets (farther ones wait in the
// far lists).
func ringSpan(maxW, delta float64) uint64 {
	x := 2*maxW/delta + 2
	if !(x < 1<<16) {
		return 1 << 16
	}
	return uint64(x)
}

// RunCPU runs Δ-stepping, recording parents as it goes (see ssspRelaxer).
func (SSSP) RunCPU(ctx context.Context, in Input) (*Result, error) {
	if err := checkSource("sssp", in); err != nil {
		return nil, err
	}
	if err := checkDelta("sssp", in.Params.Delta); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := in.Graph
	start := time.Now()
	delta := in.Params.Delta
	if delta == 0 {
		delta = defaultSSSPDelta(&g.Out)
	}
	dist, parent, phases, err := deltaStepSSSP(ctx, &g.Out, in.Source, delta)
	if err != nil {
		return nil, err
	}
	par.For(len(dist), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if math.IsInf(dist[i], 1) {
				dist[i] = math.NaN()
			}
		}
	})
	return &Result{
		Op: "sssp", Backend: "cpu", Strategy: fmt.Sprintf("delta-stepping (delta=%.4g)", delta),
		Iterations: phases,
		Compute:    time.Since(start),
		Columns: []Column{
			{Name: "distance", Type: Float64Column, Float64: dist},
			{Name: "parent", Type: VertexColumn, Vertex: parent},
		},
	}, nil
}

// ssspRelaxer relaxes out-edges: dist holds the float64 distances' bits,
// whose order as uint64 is that of the distances since they are >= 0.
//
// Parents: every successful relaxation appends (v, u, new distance) to its
// worker's log, a sequential write, staged in a small buffer that stays in
// L1 (relaxLog) so that the compare-and-swap that follows does not wait for
// the log's cache misses. Distances only ever decrease, so exactly
// one logged relaxation set each vertex's final distance; afterwards that
// one's u becomes v's parent (setParents). That parent is tight for the
// final distances: had u's distance dropped later, u would have been
// relaxed again with its final value and would have lowered v below it, or,
// where rounding absorbs the difference, the edge is still tight. And the
// parents form a tree rooted at the source, zero weights and ties included:
// along a parent edge either the distance strictly increases or u's final
// relaxation came before v's, so no cycle can close.
type ssspRelaxer struct {
	offs    []int64
	targets []uint32
	weights []float64
	dist    []uint64
	logs    []*relaxLog // per worker
	inv     float64     // 1/Δ
}

// relaxation records that u lowered v's distance to the float64 with bits d.
type relaxation struct {
	v, u uint32
	d    uint64
}

func (r *ssspRelaxer) bucket(v uint32) uint64 {
	return bucketOf(math.Float64frombits(atomic.LoadUint64(&r.dist[v])), r.inv)
}

func (r *ssspRelaxer) relax(d *deltaStepper, w int, us []uint32, cur uint64) {
	for _, u := range us {
		r.relaxOne(d, w, u, cur)
	}
}

func (r *ssspRelaxer) relaxOne(d *deltaStepper, w int, u uint32, cur uint64) {
	du := math.Float64frombits(atomic.LoadUint64(&r.dist[u]))
	if bucketOf(du, r.inv) < cur {
		return // stale: u moved to an earlier bucket and was relaxed there
	}
	lo, hi := r.offs[u], r.offs[u+1]
	ts := r.targets[lo:hi]
	dist := r.dist
	if r.weights == nil {
		nd := du + 1
		nb := math.Float64bits(nd)
		for _, v := range ts {
			if nb < atomic.LoadUint64(&dist[v]) {
				r.lower(d, w, u, v, nd, cur)
			}
		}
		return
	}
	ws := r.weights[lo:hi]
	ws = ws[:len(ts)]
	for i, v := range ts {
		nd := du + ws[i]
		if nb := math.Float64bits(nd); nb < atomic.LoadUint64(&dist[v]) {
			r.lower(d, w, u, v, nd, cur)
		}
	}
}

// lower sets dist[v] to nd if that is lower, logging the relaxation.
func (r *ssspRelaxer) lower(d *deltaStepper, w int, u, v uint32, nd float64, cur uint64) {
	nb := math.Float64bits(nd)
	p := &r.dist[v]
	for old := atomic.LoadUint64(p); nb < old; old = atomic.LoadUint64(p) {
		if atomic.CompareAndSwapUint64(p, old, nb) {
			r.logs[w].add(relaxation{v: v, u: u, d: nb})
			d.push(w, bucketOf(nd, r.inv), cur, v)
			return
		}
	}
}

// relaxLog is one worker's relaxation log: entries are staged in buf and
// copied to chunks a block at a time. A locked compare-and-swap waits for
// every earlier store to reach the cache; appending straight to a log that
// grows by megabytes would make each one wait for a store miss. The log is
// a list of fixed chunks, so it grows without copying.
type relaxLog struct {
	buf    [256]relaxation
	n      int
	chunks [][]relaxation // full chunks, then the one being filled
	used   int            // chunks in use this run
	_      [64]byte       // keeps two workers' logs off one cache line
}

// relaxChunk is the entries in one chunk of a relaxLog (512 KiB); a
// variable so that tests can cross chunk boundaries on small graphs.
var relaxChunk = 1 << 15

func (l *relaxLog) add(x relaxation) {
	if l.n == len(l.buf) {
		l.spill()
	}
	l.buf[l.n] = x
	l.n++
}

// spill moves the staged entries to the chunks.
func (l *relaxLog) spill() {
	staged := l.buf[:l.n]
	for len(staged) > 0 {
		if l.used == 0 || len(l.chunks[l.used-1]) == relaxChunk {
			if l.used == len(l.chunks) {
				l.chunks = append(l.chunks, make([]relaxation, 0, relaxChunk))
			}
			l.chunks[l.used] = l.chunks[l.used][:0]
			l.used++
		}
		c := l.chunks[l.used-1]
		k := min(len(staged), relaxChunk-len(c))
		l.chunks[l.used-1] = append(c, staged[:k]...)
		staged = staged[k:]
	}
	l.n = 0
}

// reset empties the log, keeping its chunks.
func (l *relaxLog) reset() { l.n, l.used = 0, 0 }

// relaxLogs keeps the workers' relaxation logs between runs.
var relaxLogs sync.Pool // *[]*relaxLog

// deltaStepSSSP computes the distances from src (+Inf where unreachable)
// and the shortest-path tree's parents.
func deltaStepSSSP(ctx context.Context, c *convert.CSR, src uint32, delta float64) (dist []float64, parent []uint32, phases int, err error) {
	n := c.NumVertices()
	dist = make([]float64, n)
	bitsView := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(dist))), n)
	fillU64(bitsView, math.Float64bits(math.Inf(1)))
	dist[src] = 0
	_, _, maxW := sampleWeights(c)
	logs, ok := relaxLogs.Get().(*[]*relaxLog)
	if !ok || len(*logs) != par.Workers() {
		l := make([]*relaxLog, par.Workers())
		for w := range l {
			l[w] = new(relaxLog)
		}
		logs = &l
	}
	for _, l := range *logs {
		l.reset()
	}
	defer relaxLogs.Put(logs)
	r := &ssspRelaxer{offs: c.Offsets, targets: c.Targets, weights: c.Weights, dist: bitsView, logs: *logs, inv: 1 / delta}
	d := getDeltaStepper(ringSpan(maxW, delta))
	if phases, err = d.run(ctx, r, src, n); err != nil {
		return nil, nil, 0, err
	}
	d.release()
	parent = make([]uint32, n)
	fillU32(parent, convert.NoVertex)
	parent[src] = src
	var chunks [][]relaxation
	for _, l := range r.logs {
		l.spill()
		chunks = append(chunks, l.chunks[:l.used]...)
	}
	// Exactly one entry per reached vertex matches its final distance, so
	// no two chunks write the same parent.
	par.For(len(chunks), 1, func(lo, hi int) {
		for _, c := range chunks[lo:hi] {
			if ctx.Err() != nil {
				return
			}
			for _, x := range c {
				if bitsView[x.v] == x.d {
					parent[x.v] = x.u
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	return dist, parent, phases, nil
}
