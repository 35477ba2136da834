package convert

import (
	"math/bits"
	"sync/atomic"

	"github.com/gpipe/gpipe/internal/par"
)

// DegreeStats summarizes a graph's out-degrees, for the GPU strategies that
// choose kernels, virtual-warp widths and hub lists by degree skew.
type DegreeStats struct {
	Vertices int
	Edges    int64   // stored directed edges (both directions of an undirected edge)
	Average  float64 // mean out-degree, Edges/Vertices (0 without vertices)
	Max      int64   // largest out-degree
	// Isolated counts the vertices without any edge, in or out.
	Isolated int64
	// Log2[k] counts the vertices whose out-degree d has 2^k <= d < 2^(k+1);
	// vertices without out-edges are in no bucket. The last bucket is Max's.
	Log2 []int64
}

// Degrees is the graph's degree statistics, computed on first use (one pass
// over the rows, and for a directed graph without its in-edge layout one
// pass over the targets) and cached.
func (g *Graph) Degrees() DegreeStats {
	g.degOnce.Do(func() { g.deg = g.degreeStats() })
	d := g.deg
	d.Log2 = append([]int64(nil), d.Log2...)
	return d
}

func (g *Graph) degreeStats() DegreeStats {
	n := g.NumVertices()
	d := DegreeStats{Vertices: n, Edges: g.NumEdges()}
	if n == 0 {
		return d
	}
	d.Average = float64(d.Edges) / float64(n)

	// For a directed graph, which vertices have in-edges.
	var hasIn func(v int) bool
	switch {
	case !g.Directed:
		hasIn = func(int) bool { return false } // out-degree 0 means no edge
	case g.inBuilt.Load():
		in := g.in.Offsets
		hasIn = func(v int) bool { return in[v+1] > in[v] }
	default:
		marks := make([]uint64, (n+63)/64)
		t := g.Out.Targets
		par.For(len(t), 1<<16, func(lo, hi int) {
			for _, v := range t[lo:hi] {
				p, b := &marks[v>>6], uint64(1)<<(v&63)
				if atomic.LoadUint64(p)&b == 0 {
					atomic.OrUint64(p, b)
				}
			}
		})
		hasIn = func(v int) bool { return marks[v>>6]&(1<<(uint(v)&63)) != 0 }
	}

	type part struct {
		hist     [64]int64
		max      int64
		isolated int64
	}
	parts := make([]part, par.NumBlocks(n))
	off := g.Out.Offsets
	par.Blocks(n, func(b, lo, hi int) {
		p := &parts[b]
		for v := lo; v < hi; v++ {
			deg := off[v+1] - off[v]
			if deg == 0 {
				if !hasIn(v) {
					p.isolated++
				}
				continue
			}
			p.hist[bits.Len64(uint64(deg))-1]++
			p.max = max(p.max, deg)
		}
	})
	var hist [64]int64
	for _, p := range parts {
		for k, c := range p.hist {
			hist[k] += c
		}
		d.Max = max(d.Max, p.max)
		d.Isolated += p.isolated
	}
	if d.Max > 0 {
		d.Log2 = append([]int64(nil), hist[:bits.Len64(uint64(d.Max))]...)
	}
	return d
}
