package operators

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/par"
)

// CC is weakly connected components: vertices joined by edges in either
// direction share a component, named by its smallest vertex (the vertex
// with the smallest key).
type CC struct{}

// Spec describes cc.
func (CC) Spec() Spec {
	return Spec{
		Name:    "cc",
		GPU:     true,
		Summary: "weakly connected components (Afforest), each named by its smallest vertex key",
		// Directed graphs also link over the in-edges (Afforest's final phase).
		NeedsIn: true,
		Columns: []ColumnSpec{
			{Name: "component", Type: VertexColumn, Doc: "the smallest vertex key of the vertex's weakly connected component"},
		},
	}
}

// Prepare has nothing to fill in: cc takes no parameters.
func (CC) Prepare(*Params) error { return nil }

// AfforestRounds is the neighbours a vertex links in Afforest's sampling
// phase, as in GAP's cc.cc (the GPU's Afforest takes as many).
const AfforestRounds = 2

// Afforest's other parameters, as in GAP's cc.cc.
const (
	afforestSamples = 1024 // samples to find the largest intermediate component
	ccGrain         = 16384
)

// RunCPU runs Afforest (Sutton, Ben-Nun, Barak; GAP's cc.cc): link each
// vertex with its first two neighbours, compress, find the largest
// component by sampling, then link the remaining edges of the vertices
// outside it, and compress. Links always hang the larger root under the
// smaller, so every tree's root is its smallest vertex and the labels need
// no relabelling.
func (CC) RunCPU(ctx context.Context, in Input) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := in.Graph
	var rev *convert.CSR
	if g.Directed {
		rev = g.In() // part of the graph, built before the clock starts
	}
	start := time.Now()
	comp, err := afforest(ctx, &g.Out, rev)
	if err != nil {
		return nil, err
	}
	return &Result{
		Op: "cc", Backend: "cpu", Strategy: "afforest",
		Compute: time.Since(start),
		Columns: []Column{{Name: "component", Type: VertexColumn, Vertex: comp}},
	}, nil
}

// afforest labels the components of out (plus rev, the in-edges of a
// directed graph; nil when undirected). Every pass checks ctx between its
// chunks of vertices.
func afforest(ctx context.Context, out, rev *convert.CSR) ([]uint32, error) {
	n := out.NumVertices()
	comp := make([]uint32, n)
	par.For(n, 1<<16, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			comp[v] = uint32(v)
		}
	})
	offs, targets := out.Offsets, out.Targets
	for r := int64(0); r < AfforestRounds; r++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		par.For(n, ccGrain, func(lo, hi int) {
			if ctx.Err() != nil {
				return
			}
			linkRound(lo, hi, r, offs, targets, comp)
		})
		compress(ctx, comp)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := frequentLabel(comp)
	par.For(n, ccGrain, func(lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		for u := lo; u < hi; u++ {
			if atomic.LoadUint32(&comp[u]) == c {
				continue
			}
			uu := uint32(u)
			if e := offs[u] + AfforestRounds; e < offs[u+1] {
				for _, v := range targets[e:offs[u+1]] {
					link(uu, v, comp)
				}
			}
			if rev != nil {
				for _, v := range rev.Targets[rev.Offsets[u]:rev.Offsets[u+1]] {
					link(uu, v, comp)
				}
			}
		}
	})
	compress(ctx, comp)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return comp, nil
}

// linkAhead is how many vertices a sampling round reads ahead. Linking
// one vertex is a chain of dependent reads at random places (its
// neighbour's id, that neighbour's label, its root), so a core going vertex
// by vertex has one or two cache misses in flight. Reading a batch's
// neighbour ids, then their labels, reads that do not depend on each
// other, puts the batch's misses in flight at once, and the links then
// mostly hit the cache. Kronecker 22: cc in 86 ms instead of 103 on 2
// cores with batches of 64 to 256 (113 with 8), 18-21 ms instead of 20-22
// on the GPU machine's 16 cores. The same read-ahead in compress gained
// nothing.
const linkAhead = 128

// linkRound links each vertex of [lo, hi) with its neighbour at offset r
// of its edges, where it has one (Afforest's sampling rounds).
func linkRound(lo, hi int, r int64, offs []int64, targets, comp []uint32) {
	var ahead [linkAhead]uint32
	for u0 := lo; u0 < hi; u0 += linkAhead {
		nbrs := ahead[:min(linkAhead, hi-u0)]
		for i := range nbrs {
			u := u0 + i
			nbrs[i] = uint32(u) // no neighbour there: u itself, which the links skip
			if e := offs[u] + r; e < offs[u+1] {
				nbrs[i] = targets[e]
			}
		}
		for _, v := range nbrs {
			atomic.LoadUint32(&comp[v]) // only to start the line's load
		}
		for i, v := range nbrs {
			if u := uint32(u0 + i); v != u {
				link(u, v, comp)
			}
		}
	}
}

// link joins the trees of u and v, hanging the larger root under the
// smaller one.
func link(u, v uint32, comp []uint32) {
	p1 := atomic.LoadUint32(&comp[u])
	p2 := atomic.LoadUint32(&comp[v])
	for p1 != p2 {
		high, low := max(p1, p2), min(p1, p2)
		pHigh := atomic.LoadUint32(&comp[high])
		if pHigh == low || (pHigh == high && atomic.CompareAndSwapUint32(&comp[high], high, low)) {
			return
		}
		p1 = atomic.LoadUint32(&comp[atomic.LoadUint32(&comp[high])])
		p2 = atomic.LoadUint32(&comp[low])
	}
}

// compress points every vertex straight at its tree's root, or some of them
// once ctx is canceled.
func compress(ctx context.Context, comp []uint32) {
	par.For(len(comp), ccGrain, func(lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		for v := lo; v < hi; v++ {
			p := atomic.LoadUint32(&comp[v])
			for {
				pp := atomic.LoadUint32(&comp[p])
				if pp == p {
					break
				}
				p = pp
			}
			atomic.StoreUint32(&comp[v], p)
		}
	})
}

// frequentLabel estimates the most common label from a fixed sample.
func frequentLabel(comp []uint32) uint32 {
	if len(comp) == 0 {
		return convert.NoVertex
	}
	rng := rand.New(rand.NewPCG(0xaff0, 0x4e57))
	counts := make(map[uint32]int, 32)
	best, bestCount := comp[0], 0
	for i := 0; i < afforestSamples; i++ {
		l := comp[rng.IntN(len(comp))]
		counts[l]++
		if k := counts[l]; k > bestCount || (k == bestCount && l < best) {
			best, bestCount = l, k
		}
	}
	return best
}
