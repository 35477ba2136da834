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
	"github.com/gpipe/gpipe/operators/cost"
)

// SSSP is single-source shortest paths over non-negative edge weights
// (weight 1 where the input has none): each vertex's distance from the
// source and its parent in a shortest-path tree.
type SSSP struct{}

// Spec describes sssp.
func (SSSP) Spec() Spec {
	return Spec{
		Name:        "sssp",
		GPU:         true,
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
			"pass a bucket width > 0, or 0 to let gpipe choose one from the weights and the degrees")
	}
	return nil
}

// SampleWeights estimates the mean, smallest and largest weight of c from a
// fixed sample of its edges (all 1 without weights), so that choosing Δ
// costs no pass over the weights.
func SampleWeights(c *convert.CSR) (mean, lo, hi float64) {
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

// ssspDeltaFactor scales the default Δ on small-world graphs: Δ = factor ·
// mean weight / average degree. Measured on Kronecker graphs with GAP's
// weights (1..255), where it gives Δ ≈ 1.2 .. 1.33 (gpipe's graphs leave out
// isolated vertices, so the average degree is 48 to 56), which the integer
// rule of defaultSSSPDelta raises to 2.
const ssspDeltaFactor = 0.5

// roadDeltaFactor is ssspDeltaFactor for graphs of road-like degrees
// (cost.Shape.HighDiameter): Δ = 16 · mean weight / average degree, 4 to
// 8 mean weights on roads and grids (average degree 2 to 4). See
// defaultSSSPDelta.
const roadDeltaFactor = 16

// defaultSSSPDelta chooses Δ from the weights and the degree: on a
// small-world graph half the mean weight divided by the average degree
// (Meyer and Sanders' Θ(1/d) for random weights, scaled to the weights),
// so that a bucket holds about one edge's worth of distance per
// neighbour; without weights 1 there: one BFS level per bucket. On a graph
// of road-like degrees 16 mean weights over the degree, weighted or not
// (below).
//
// Where every weight is an integer, at least min, Δ is at least min + 1: no
// bucket then holds both a distance x and x + min + 1, so a vertex relaxed
// at x in a bucket cannot be lowered within it (a lower distance comes
// through an edge from a vertex at least min lower, in an earlier bucket,
// already relaxed), and with the frontier's repeats dropped (gather) each
// vertex is relaxed once. A wider bucket than the degree rule gives costs
// no work then, and saves phases: on Kronecker 20 with GAP's weights (1..255) the rule gives Δ =
// 1.33 and 340 phases, Δ = 2 relaxes the same 31.4 M edges (each reached
// vertex once, at 1, 2 and 16 workers) in 238, where Δ = 3 relaxes 2–3%
// more and Δ = 4 3–9%. Each phase is two or three parallel loops, whose
// fixed costs and last stragglers 16 cores pay on every one.
//
// That tuning holds where a few hops reach everything. On a graph of
// road-like degrees (cost.Shape.HighDiameter: average under 8, none over
// 64: roads, meshes, grids) the distances span thousands of mean weights,
// and Δ = 0.5 · mean/degree (16 to 31 for weights 1..255) made thousands
// of buckets, each a phase or a few over a thin wavefront: 14,000 phases on a
// 4 M vertex road (gpipe gen road), 5,000 on the 1024² grid, where 16
// cores were 5.6 to 7.5 times slower than GAP's sssp at -d 1024. There a
// wider bucket costs little extra work, since the few paths into a vertex
// within one bucket seldom undercut each other: at Δ = 16 · mean/degree
// (roadDeltaFactor: 514 on the grid, 602 on the road, 963 on
// luxembourg_osm with weights 1..255) the grid took 668 phases and 1.74
// distance updates a vertex (1.33 at Δ = 16; 765 and 2.08 at 1,024), the
// road about 2,000 and 1.17 (1.08 at 21), luxembourg_osm 154 and 1.04;
// unweighted, luxembourg_osm's 1,188 BFS levels took 151 phases at Δ =
// 7.7 and no extra update. So the literature: in Meyer and Sanders'
// analysis the phases grow with the distances' span over Δ and the work
// with the paths lighter than Δ, so long spans reached by few paths, a
// road's, want the larger Δ; GAP's benchmark
// runs its road graph at -d 50000 and its Kronecker, uniform, Twitter and
// web graphs (weights 1..255) at -d 2; near-far (Davidson et al., IPDPS'14)
// takes 32 · mean/degree, as gpipe's GPU does, where a step must fill a
// warp's 32 lanes, which a CPU's phase need not (half of it here: fewer
// extra updates at about the same phases).
func defaultSSSPDelta(g *convert.Graph) float64 {
	c := &g.Out
	mean, _, _ := SampleWeights(c)
	n := c.NumVertices()
	if n == 0 || c.NumEdges() == 0 || mean <= 0 {
		return 1
	}
	factor := ssspDeltaFactor
	switch {
	case cost.ShapeOf(g.Degrees(), 0).HighDiameter():
		factor = roadDeltaFactor
	case c.Weights == nil:
		return 1
	}
	avgDeg := float64(c.NumEdges()) / float64(n)
	delta := max(factor*mean/max(avgDeg, 1), math.SmallestNonzeroFloat64)
	if w := g.Weights(); w.Integers {
		delta = max(delta, w.Min+1)
	}
	return delta
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

// RunCPU runs Δ-stepping, recording parents as it goes (see ssspRelaxer),
// on uint32 distances where the weights allow (see intDistances).
func (SSSP) RunCPU(ctx context.Context, in Input) (*Result, error) {
	if err := CheckSource("sssp", in); err != nil {
		return nil, err
	}
	if err := checkDelta("sssp", in.Params.Delta); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := in.Graph
	tune := in.tuning()
	ints := !tune.wideDists && intDistances(g) // the weights' statistics are cached on the graph
	var w32 []uint32
	if ints {
		w32 = g.Weights32() // cached on the graph too, as the in-edge layout is
	}
	start := time.Now()
	delta := in.Params.Delta
	if delta == 0 {
		delta = defaultSSSPDelta(g)
	}
	var (
		dist   []float64
		parent []uint32
		phases int
		err    error
	)
	if ints {
		dist, parent, phases, err = deltaStepSSSP32(ctx, &g.Out, w32, in.Source, delta, tune)
	} else {
		dist, parent, phases, err = deltaStepSSSP(ctx, &g.Out, in.Source, delta, tune)
	}
	if err != nil {
		return nil, err
	}
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

// intDistances says whether g's distances can be uint32, as GAP keeps
// them (convert.Graph.IntegerDistances, from the weights' statistics,
// computed on first use and cached on the graph; a vertex never accepts a
// longer value than a simple path's). Integer sums below 2^53 are exact in
// float64 too, so both paths give the same distances. Half the bytes per
// distance keeps more of the randomly read distances in cache, and the log
// of relaxations shrinks by a quarter.
func intDistances(g *convert.Graph) bool {
	return g.IntegerDistances()
}

// unreached32 is the uint32 distance of a vertex not (yet) reached.
const unreached32 = math.MaxUint32

// ssspRelaxer relaxes out-edges: dist holds the float64 distances' bits,
// whose order as uint64 is that of the distances since they are >= 0.
//
// Parents: every successful relaxation appends (v, u, new distance) to its
// worker's log, a sequential write, staged in a small buffer that stays in
// L1 (relaxLog) so that the compare-and-swap that follows does not wait for
// the log's cache misses. Distances only ever decrease, so exactly
// one logged relaxation set each vertex's final distance; afterwards that
// one's u becomes v's parent (logParents). That parent is tight for the
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
	logs    []*relaxLog[uint64] // per worker
	inv     float64             // 1/Δ
}

func (r *ssspRelaxer) bucket(v uint32) uint64 {
	return bucketOf(math.Float64frombits(atomic.LoadUint64(&r.dist[v])), r.inv)
}

func (r *ssspRelaxer) relax(d *deltaStepper, w int, us []uint32, cur uint64) {
	for _, u := range us {
		r.relaxEdges(d, w, u, r.offs[u], r.offs[u+1], cur)
	}
}

func (r *ssspRelaxer) relaxEdges(d *deltaStepper, w int, u uint32, lo, hi int64, cur uint64) {
	du := math.Float64frombits(atomic.LoadUint64(&r.dist[u]))
	if bucketOf(du, r.inv) < cur {
		return // stale: u moved to an earlier bucket and was relaxed there
	}
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
			r.logs[w].add(relaxation[uint64]{v: v, u: u, d: nb})
			d.push(w, bucketOf(nd, r.inv), cur, v)
			return
		}
	}
}

// ssspRelaxer32 is ssspRelaxer on uint32 distances (see intDistances),
// unreached32 for unreached vertices, and uint32 weights
// (convert.Graph.Weights32): 8 bytes an edge to read, GAP's. A vertex's
// bucket is computed from its distance as a float64, exactly as on the
// float64 path, so the two run the same phases.
type ssspRelaxer32 struct {
	offs    []int64
	targets []uint32
	weights []uint32
	dist    []uint32
	logs    []*relaxLog[uint32] // per worker
	inv     float64             // 1/Δ
}

func (r *ssspRelaxer32) bucket(v uint32) uint64 {
	return bucketOf(float64(atomic.LoadUint32(&r.dist[v])), r.inv)
}

func (r *ssspRelaxer32) relax(d *deltaStepper, w int, us []uint32, cur uint64) {
	for _, u := range us {
		r.relaxEdges(d, w, u, r.offs[u], r.offs[u+1], cur)
	}
}

func (r *ssspRelaxer32) relaxEdges(d *deltaStepper, w int, u uint32, lo, hi int64, cur uint64) {
	du := atomic.LoadUint32(&r.dist[u])
	if bucketOf(float64(du), r.inv) < cur {
		return // stale: u moved to an earlier bucket and was relaxed there
	}
	ts := r.targets[lo:hi]
	dist := r.dist
	if r.weights == nil {
		nd := du + 1
		for _, v := range ts {
			if nd < atomic.LoadUint32(&dist[v]) {
				r.lower(d, w, u, v, nd, cur)
			}
		}
		return
	}
	ws := r.weights[lo:hi]
	ws = ws[:len(ts)]
	for i, v := range ts {
		if nd := du + ws[i]; nd < atomic.LoadUint32(&dist[v]) {
			r.lower(d, w, u, v, nd, cur)
		}
	}
}

// lower sets dist[v] to nd if that is lower, logging the relaxation.
func (r *ssspRelaxer32) lower(d *deltaStepper, w int, u, v uint32, nd uint32, cur uint64) {
	p := &r.dist[v]
	for old := atomic.LoadUint32(p); nd < old; old = atomic.LoadUint32(p) {
		if atomic.CompareAndSwapUint32(p, old, nd) {
			r.logs[w].add(relaxation[uint32]{v: v, u: u, d: nd})
			d.push(w, bucketOf(float64(nd), r.inv), cur, v)
			return
		}
	}
}

// relaxation records that u lowered v's distance to d (a uint32 distance,
// or a float64 distance's bits).
type relaxation[D uint32 | uint64] struct {
	v, u uint32
	d    D
}

// relaxLog is one worker's relaxation log: entries are staged in buf and
// copied to chunks a block at a time. A locked compare-and-swap waits for
// every earlier store to reach the cache; appending straight to a log that
// grows by megabytes would make each one wait for a store miss. The log is
// a list of fixed chunks, so it grows without copying.
type relaxLog[D uint32 | uint64] struct {
	buf    [256]relaxation[D]
	n      int
	chunks [][]relaxation[D] // full chunks, then the one being filled
	used   int               // chunks in use this run
	chunk  int               // entries a chunk holds (tuning.relaxChunk: 2^15, 512 KiB of float64 entries)
	_      [64]byte          // keeps two workers' logs off one cache line
}

func (l *relaxLog[D]) add(x relaxation[D]) {
	if l.n == len(l.buf) {
		l.spill()
	}
	l.buf[l.n] = x
	l.n++
}

// spill moves the staged entries to the chunks.
func (l *relaxLog[D]) spill() {
	staged := l.buf[:l.n]
	for len(staged) > 0 {
		if l.used == 0 || len(l.chunks[l.used-1]) == l.chunk {
			if l.used == len(l.chunks) {
				l.chunks = append(l.chunks, make([]relaxation[D], 0, l.chunk))
			}
			l.chunks[l.used] = l.chunks[l.used][:0]
			l.used++
		}
		c := l.chunks[l.used-1]
		k := min(len(staged), l.chunk-len(c))
		l.chunks[l.used-1] = append(c, staged[:k]...)
		staged = staged[k:]
	}
	l.n = 0
}

// reset empties the log, keeping its chunks.
func (l *relaxLog[D]) reset() { l.n, l.used = 0, 0 }

// relaxLogs64 and relaxLogs32 keep the workers' relaxation logs between
// runs.
var relaxLogs64, relaxLogs32 sync.Pool // *[]*relaxLog[D]

// getRelaxLogs is one empty log per worker, from pool where it has a set.
func getRelaxLogs[D uint32 | uint64](pool *sync.Pool, chunk int) *[]*relaxLog[D] {
	logs, ok := pool.Get().(*[]*relaxLog[D])
	if !ok || len(*logs) != par.Workers() {
		l := make([]*relaxLog[D], par.Workers())
		for w := range l {
			l[w] = new(relaxLog[D])
		}
		logs = &l
	}
	for _, l := range *logs {
		l.reset()
		l.chunk = chunk
	}
	return logs
}

// deltaStepSSSP computes the distances from src (NaN where unreachable)
// and the shortest-path tree's parents.
func deltaStepSSSP(ctx context.Context, c *convert.CSR, src uint32, delta float64, t tuning) (dist []float64, parent []uint32, phases int, err error) {
	n := c.NumVertices()
	dist = make([]float64, n)
	bitsView := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(dist))), n)
	fillU64(bitsView, math.Float64bits(math.Inf(1)))
	dist[src] = 0
	logs := getRelaxLogs[uint64](&relaxLogs64, t.relaxChunk)
	defer relaxLogs64.Put(logs)
	r := &ssspRelaxer{offs: c.Offsets, targets: c.Targets, weights: c.Weights, dist: bitsView, logs: *logs, inv: 1 / delta}
	if phases, err = deltaStep(ctx, r, c, src, delta, t); err != nil {
		return nil, nil, 0, err
	}
	if parent, err = logParents(ctx, r.logs, bitsView, src); err != nil {
		return nil, nil, 0, err
	}
	par.For(n, 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if math.IsInf(dist[i], 1) {
				dist[i] = math.NaN()
			}
		}
	})
	return dist, parent, phases, nil
}

// deltaStepSSSP32 is deltaStepSSSP on uint32 distances (see intDistances),
// with c's weights as w32 (nil without weights).
func deltaStepSSSP32(ctx context.Context, c *convert.CSR, w32 []uint32, src uint32, delta float64, t tuning) (dist []float64, parent []uint32, phases int, err error) {
	n := c.NumVertices()
	d32 := getScratch[uint32](&scratchU32, n)
	defer putScratch(&scratchU32, d32)
	fillU32(d32, unreached32)
	d32[src] = 0
	logs := getRelaxLogs[uint32](&relaxLogs32, t.relaxChunk)
	defer relaxLogs32.Put(logs)
	r := &ssspRelaxer32{offs: c.Offsets, targets: c.Targets, weights: w32, dist: d32, logs: *logs, inv: 1 / delta}
	if phases, err = deltaStep(ctx, r, c, src, delta, t); err != nil {
		return nil, nil, 0, err
	}
	if parent, err = logParents(ctx, r.logs, d32, src); err != nil {
		return nil, nil, 0, err
	}
	dist = make([]float64, n)
	par.For(n, 1<<16, func(lo, hi int) {
		for i, x := range d32[lo:hi] {
			if x == unreached32 {
				dist[lo+i] = math.NaN()
			} else {
				dist[lo+i] = float64(x)
			}
		}
	})
	return dist, parent, phases, nil
}

// deltaStep runs the Δ-stepping driver with r from src and returns the
// number of phases.
func deltaStep(ctx context.Context, r relaxer, c *convert.CSR, src uint32, delta float64, t tuning) (int, error) {
	_, _, maxW := SampleWeights(c)
	d := getDeltaStepper(ringSpan(maxW, delta), t)
	phases, err := d.run(ctx, "sssp", r, src, c.Offsets)
	if err != nil {
		return 0, err
	}
	d.release()
	return phases, nil
}

// logParents gives each vertex reached the u of the logged relaxation that
// set its final distance in dist (see ssspRelaxer), and the source itself.
func logParents[D uint32 | uint64](ctx context.Context, logs []*relaxLog[D], dist []D, src uint32) ([]uint32, error) {
	parent := make([]uint32, len(dist))
	fillU32(parent, convert.NoVertex)
	parent[src] = src
	var chunks [][]relaxation[D]
	for _, l := range logs {
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
				if dist[x.v] == x.d {
					parent[x.v] = x.u
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return parent, nil
}
