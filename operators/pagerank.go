package operators

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// PageRank is networkx.pagerank: start at 1/n,
//
//	x'[v] = d·(Σ_{u→v} x[u]·w(u,v)/W(u) + dangling/n) + (1−d)/n
//
// where W(u) is u's out-weight Σ_v w(u,v) and dangling is the rank held by
// vertices of out-weight 0, until the L1 change Σ|x'−x| drops below the
// tolerance or the iterations run out. Unweighted (the default, networkx's
// weight=None) every w is 1 and W(u) is u's out-degree; with
// Params.Weighted the edges' weights (networkx's default, weight="weight";
// 1 on a graph without weights), which must be >= 0. For an undirected
// graph every edge counts in both directions, with its weight.
type PageRank struct{}

// PageRank's defaults.
const (
	DefaultDamping       = 0.85
	DefaultTolerance     = 1e-9
	DefaultMaxIterations = 1000
)

// Spec describes pagerank.
func (PageRank) Spec() Spec {
	return Spec{
		Name:    "pagerank",
		GPU:     true,
		Summary: "PageRank (networkx definition: dangling rank spread evenly), pulled over the in-edges",
		NeedsIn: true,
		// --weighted: networkx.pagerank(G)'s default weights (SpecFor).
		WeightedParam: true,
		Params:        []string{ParamTolerance, ParamMaxIterations, ParamDamping, ParamWeighted},
		Columns: []ColumnSpec{
			{Name: "rank", Type: Float64Column, Doc: "the vertex's PageRank; the ranks sum to 1"},
		},
	}
}

// Prepare fills in damping 0.85, tolerance 1e-9 and 1000 iterations where
// they are 0, and checks them.
func (PageRank) Prepare(p *Params) error {
	if p.Damping == 0 {
		p.Damping = DefaultDamping
	}
	if p.Tolerance == 0 {
		p.Tolerance = DefaultTolerance
	}
	if p.MaxIterations == 0 {
		p.MaxIterations = DefaultMaxIterations
	}
	if !(p.Damping > 0 && p.Damping < 1) {
		return usererr.New(usererr.Usage, fmt.Sprintf("operator pagerank: damping %v must be between 0 and 1 (exclusive)", p.Damping),
			"pass a damping factor such as 0.85")
	}
	if !(p.Tolerance > 0) || math.IsInf(p.Tolerance, 1) {
		return usererr.New(usererr.Usage, fmt.Sprintf("operator pagerank: tolerance %v must be a positive finite number", p.Tolerance),
			"pass a tolerance such as 1e-9")
	}
	if p.MaxIterations < 1 {
		return usererr.New(usererr.Usage, fmt.Sprintf("operator pagerank: max iterations %d must be at least 1", p.MaxIterations),
			"pass a positive iteration count such as 1000")
	}
	return nil
}

// prGrain is the vertices a worker takes at a time; partial sums are kept
// per chunk and added in chunk order, so results do not depend on timing
// nor on the number of workers. Small enough that the chunks a run ends
// on are short: a chunk's in-edges vary with the degrees of its vertices,
// and the workers wait for the last. Scheduled greedily in chunk order on
// 16 workers, the chunks' in-edges on Kronecker 20 (GAP's file) finish at
// 1.055 times the even share with 8,192 vertices a chunk, 1.024 with 2,048,
// 1.011 with 1,024 (2 workers: 1.010 and 1.000); a chunk costs an atomic
// add and two stores.
const prGrain = 1024

// Float32Tolerance is the tightest tolerance at which contributions are
// kept as float32. The ranks and every sum stay float64; a float32
// contribution is off by at most 2^-24 of itself, so an iteration's ranks
// are off by about 6e-8 of their sum (1) in L1, far below a tolerance of
// 1e-6 or more. Halving the vector that every in-edge reads at random (n
// float32 instead of float64) keeps more of it in cache: on Kronecker 20
// the gather over all in-edges takes 15 ms instead of 18.6, a whole run of
// 8 iterations 150 ms instead of 163.
const Float32Tolerance = 1e-6

// The pull reads the contributions in hubs-first order (convert.HubOrder)
// on graphs of at least tuning.hubMin (2^18) vertices whose largest out-degree is
// at least hubSkew (16) times the mean: the in-edges' sources renumbered so
// that the vertices of largest out-degree, whose contributions most edges
// read, share cache lines at the front of the vector. In vertex order every
// hub's value sits on a line of its own among values rarely read, so the
// values most edges read spread over the whole vector; hubs first, on
// Kronecker 22 the first 2^18 contributions (1 MiB as float32, half a
// core's L2 on the 16-core machine) are those of 85% of the edges. Below
// about a core's L2 of contributions the order makes no difference, and
// without hubs there is nothing to gather together (a road network or a
// grid keeps its numbering, whose neighbours are often near). The layout
// costs 4 bytes an in-edge and a vertex, once per graph (the GPU's pull
// reads the same). The thresholds are tuning.hubMin and hubSkew.
func prHubFirst(g *convert.Graph, t tuning) bool {
	if g.NumVertices() < t.hubMin {
		return false
	}
	d := g.Degrees()
	return float64(d.Max) >= t.hubSkew*d.Average
}

// RunCPU runs pull-based power iteration: one pass over the in-edges per
// iteration, each vertex summing its in-neighbours' contributions
// (rank/out-degree, or rank/out-weight times the edge's weight) from the
// previous iteration and writing its own new rank and contribution, with
// no atomics.
func (PageRank) RunCPU(ctx context.Context, in Input) (*Result, error) {
	p := in.Params
	if err := (PageRank{}).Prepare(&p); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := in.Graph
	weighted := p.Weighted && g.Weighted
	if weighted {
		if err := CheckRankWeights(g); err != nil {
			return nil, err
		}
	}
	n := g.NumVertices()
	// Layouts of the graph, built before the clock starts and cached on it.
	l := prLayoutOf(g, weighted, in.tuning())
	var notes []string
	if weighted {
		notes = append(notes, "weighted")
	}
	if l.ids != nil {
		notes = append(notes, "hubs first")
	}
	start := time.Now()
	res := &Result{Op: "pagerank", Backend: "cpu", Strategy: "pull"}
	if n == 0 {
		res.Columns = []Column{{Name: "rank", Type: Float64Column, Float64: []float64{}}}
		res.Compute = time.Since(start)
		return res, nil
	}
	var (
		x         []float64
		converged bool
		change    float64
		err       error
	)
	if p.Tolerance >= Float32Tolerance {
		notes = append([]string{"float32 contributions"}, notes...)
		c, nc := getScratch[float32](&scratchF32, n), getScratch[float32](&scratchF32, n)
		defer putScratch(&scratchF32, c)
		defer putScratch(&scratchF32, nc)
		x, res.Iterations, converged, change, err = pageRankPull(ctx, l, p, c, nc)
	} else {
		c, nc := getScratch[float64](&scratchF64, n), getScratch[float64](&scratchF64, n)
		defer putScratch(&scratchF64, c)
		defer putScratch(&scratchF64, nc)
		x, res.Iterations, converged, change, err = pageRankPull(ctx, l, p, c, nc)
	}
	if err != nil {
		return nil, err
	}
	res.Compute = time.Since(start)
	res.Strategy = "pull"
	if len(notes) > 0 {
		res.Strategy += " (" + strings.Join(notes, ", ") + ")"
	}
	if !converged {
		res.NotConverged = true
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"pagerank did not converge in %d iterations: the last iteration changed the ranks by %g (L1), above the tolerance %g; the ranks are returned as they are (raise the iteration limit or the tolerance)",
			res.Iterations, change, p.Tolerance))
	}
	res.Columns = []Column{{Name: "rank", Type: Float64Column, Float64: x}}
	return res, nil
}

// CheckRankWeights refuses a graph with a negative weight for weighted
// PageRank: a vertex's out-edges share its rank in proportion to their
// weights, which a negative one would turn into a negative share. (NaN
// and infinite weights never reach a graph: the build refuses them.) A
// graph read for pagerank --weighted has its weights checked row by row
// as they are read; this is for a graph loaded for every operator.
func CheckRankWeights(g *convert.Graph) error {
	if !g.Weighted {
		return nil
	}
	if least := g.Weights().Min; least < 0 {
		return usererr.New(usererr.Input, fmt.Sprintf("weighted pagerank needs edge weights >= 0, and the graph's smallest is %v", least),
			"drop or fix the negative weights, or run pagerank without weights")
	}
	return nil
}

// prLayout is what the pull reads of a graph: the out-edges' offsets (and
// weights, for W(u)), the in-edges' offsets, sources and weights (nil:
// unweighted), and ids, the sources' numbering (nil: vertex order), where
// vertex v's contribution is kept.
type prLayout struct {
	outOffs, inOffs       []int64
	outWeights, inWeights []float64
	sources, ids          []uint32
}

// prLayoutOf is g's layout for the pull, weighted or not, with the
// contributions in hubs-first order where prHubFirst says so.
func prLayoutOf(g *convert.Graph, weighted bool, t tuning) prLayout {
	rev := g.In()
	l := prLayout{outOffs: g.Out.Offsets, inOffs: rev.Offsets, sources: rev.Targets}
	if weighted {
		l.outWeights, l.inWeights = g.Out.Weights, rev.Weights
	}
	if prHubFirst(g, t) {
		// The rows keep their order: only the sources are renumbered, so
		// the in-edges' weights stay where they are.
		h := g.HubOrder()
		l.sources, l.ids = h.InSources, h.ID
	}
	return l
}

// invOutWeight is 1/W(v), v's out-weight (its out-degree unweighted), and
// 0 for a vertex of out-weight 0: dangling, as networkx takes a vertex
// whose out-edges all weigh 0.
func (l *prLayout) invOutWeight(v int) float64 {
	lo, hi := l.outOffs[v], l.outOffs[v+1]
	w := float64(hi - lo)
	if l.outWeights != nil {
		w = 0
		for _, x := range l.outWeights[lo:hi] {
			w += x
		}
	}
	if w == 0 {
		return 0
	}
	return 1 / w
}

// pageRankPull iterates over the in-edges of l with the contributions
// x[u]/W(u) kept as C in contrib and nextContrib (scratch of n elements
// each, overwritten), vertex v's at index ids[v] (at v when ids is nil),
// the numbering of the sources. It returns the ranks, the iterations run,
// whether they converged and the last L1 change, and tells ctx's progress
// hook (WithProgress) after each iteration. The numbering changes where a
// contribution is kept, not what is summed nor in which order: the ranks
// are the same to the bit.
func pageRankPull[C float32 | float64](ctx context.Context, l prLayout, p Params, contrib, nextContrib []C) (x []float64, iterations int, converged bool, change float64, err error) {
	n := len(l.inOffs) - 1
	x = make([]float64, n)
	invDeg := getScratch[float64](&scratchF64, n)
	defer putScratch(&scratchF64, invDeg)
	chunks := (n + prGrain - 1) / prGrain
	errs := make([]float64, chunks)
	dangles := make([]float64, chunks)
	prInit(ctx, &l, x, invDeg, contrib, dangles)
	report := ProgressOf(ctx, "pagerank")
	d := p.Damping
	nf := float64(n)
	for iterations < p.MaxIterations {
		if err := ctx.Err(); err != nil {
			return nil, iterations, false, change, err
		}
		var dangling float64
		for _, s := range dangles {
			dangling += s
		}
		base := d*dangling/nf + (1-d)/nf
		c, next, x := contrib, nextContrib, x // copies, so that the closure holds the slices themselves
		par.For(n, prGrain, func(lo, hi int) {
			if ctx.Err() != nil {
				return
			}
			var errSum, dangle float64
			for v := lo; v < hi; v++ {
				nx := base + d*prGather(&l, c, v)
				errSum += math.Abs(nx - x[v])
				x[v] = nx
				inv := invDeg[v]
				if l.ids != nil {
					next[l.ids[v]] = C(nx * inv)
				} else {
					next[v] = C(nx * inv)
				}
				if inv == 0 {
					dangle += nx
				}
			}
			errs[lo/prGrain] = errSum
			dangles[lo/prGrain] = dangle
		})
		// A pass cut short leaves stale sums that could read as converged.
		if err := ctx.Err(); err != nil {
			return nil, iterations, false, change, err
		}
		contrib, nextContrib = nextContrib, contrib
		iterations++
		change = 0
		for _, e := range errs {
			change += e
		}
		report(Progress{Iteration: iterations, Change: change, Active: -1})
		if change < p.Tolerance {
			return x, iterations, true, change, nil
		}
	}
	return x, iterations, false, change, nil
}

// prInit starts the iteration: x = 1/n, invDeg = 1/W (0 for a dangling
// vertex), the contributions x/W, and each chunk's dangling rank.
func prInit[C float32 | float64](ctx context.Context, l *prLayout, x, invDeg []float64, contrib []C, dangles []float64) {
	x0 := 1 / float64(len(x))
	par.For(len(x), prGrain, func(lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		var dangle float64
		for v := lo; v < hi; v++ {
			x[v] = x0
			i := v
			if l.ids != nil {
				i = int(l.ids[v])
			}
			invDeg[v] = l.invOutWeight(v)
			contrib[i] = C(x0 * invDeg[v])
			if invDeg[v] == 0 {
				dangle += x0
			}
		}
		dangles[lo/prGrain] = dangle
	})
}

// prGather is Σ c[u] over v's in-edges u→v, times the edge's weight where
// the pull is weighted: four sums in flight, so that the loads of the
// contributions (at random) overlap.
func prGather[C float32 | float64](l *prLayout, c []C, v int) float64 {
	lo, hi := l.inOffs[v], l.inOffs[v+1]
	ts := l.sources[lo:hi]
	var s0, s1, s2, s3 float64
	if l.inWeights != nil {
		ws := l.inWeights[lo:hi]
		for len(ts) >= 4 {
			q, w := ts[:4:4], ws[:4:4]
			s0 += w[0] * float64(c[q[0]])
			s1 += w[1] * float64(c[q[1]])
			s2 += w[2] * float64(c[q[2]])
			s3 += w[3] * float64(c[q[3]])
			ts, ws = ts[4:], ws[4:]
		}
		for i, u := range ts {
			s0 += ws[i] * float64(c[u])
		}
		return (s0 + s1) + (s2 + s3)
	}
	for len(ts) >= 4 {
		q := ts[:4:4]
		s0 += float64(c[q[0]])
		s1 += float64(c[q[1]])
		s2 += float64(c[q[2]])
		s3 += float64(c[q[3]])
		ts = ts[4:]
	}
	for _, u := range ts {
		s0 += float64(c[u])
	}
	return (s0 + s1) + (s2 + s3)
}
