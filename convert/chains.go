package convert

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/gpipe/gpipe/internal/par"
)

// Chains is an undirected graph's chains contracted: a chain is a maximal
// path of interior vertices, each with exactly two neighbors, between two
// junctions (every other vertex). On a road network most vertices are
// interior (85% of luxembourg_osm's), and a search that walks each chain
// one level at a time spends its levels there: luxembourg_osm is 1,035
// levels deep, its 16,905 junctions joined by their chains 109. A search
// on Graph, the junctions joined by an edge for each chain (its length,
// in hops or in weight) and for each edge between two junctions, followed
// by one pass that gives every interior vertex the nearer of its ends'
// distances plus its way from there, finds the same distances.
type Chains struct {
	// Graph is the contraction: junction j is the j-th junction of the
	// graph by vertex number. Parallel chains keep their shortest (as a
	// build merges parallel edges), a chain from a junction back to itself
	// makes no edge. Its weights are integers below 2^32.
	Graph *Graph
	// Role is, for each vertex, its junction number, or InteriorBit and its
	// chain's number.
	Role []uint32
	// Fwd and Bwd are, for an interior vertex, the length of its chain
	// from the chain's first end to it and from its last end (0 for a
	// junction).
	Fwd, Bwd []uint32
	// Ends are the chains' first and last ends, junction numbers: chain
	// c's at 2c and 2c + 1. A chain that closes on itself has equal ends;
	// a cycle of interior vertices alone has its lowest vertex made a
	// junction.
	Ends []uint32
	// Interior is the number of interior vertices.
	Interior int
}

// InteriorBit marks a Role that is a chain's number.
const InteriorBit = 1 << 31

// ErrNoChains is Chains' answer for a graph it does not contract: a
// directed one, or one of 2^31 vertices or more.
var ErrNoChains = errors.New("convert: chains are contracted on undirected graphs of under 2^31 vertices")

// Chains is g's contraction, built on first use and cached: by weight
// where weighted is set (g's weights must be integers whose distances fit
// a uint32: IntegerDistances), else by hops.
func (g *Graph) Chains(weighted bool) (*Chains, error) {
	i := 0
	if weighted {
		i = 1
	}
	return g.chains[i].get(func() (*Chains, error) {
		if g.Directed || g.NumVertices() >= InteriorBit {
			return nil, ErrNoChains
		}
		if err := g.Materialize(); err != nil {
			return nil, err
		}
		if weighted && (g.Out.Weights == nil || !g.IntegerDistances()) {
			return nil, errors.New("convert: chains by weight need integer weights whose distances fit a uint32")
		}
		return contractChains(&g.Out, weighted), nil
	})
}

// BuiltChains are the contractions Chains has built for g.
func (g *Graph) BuiltChains() []*Chains {
	var out []*Chains
	for i := range g.chains {
		if c, ok := g.chains[i].peek(); ok && c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Bytes is the memory the contraction holds.
func (c *Chains) Bytes() int64 {
	return 4*int64(len(c.Role)+len(c.Fwd)+len(c.Bwd)+len(c.Ends)) + c.Graph.Bytes()
}

// DegreeTwo is the number of g's vertices of out-degree 2, the most that
// can be inside chains: counted from the offsets (there for a graph built
// off the host too) on first use, and cached.
func (g *Graph) DegreeTwo() int64 {
	k, _ := g.degreeTwo.get(func() (int64, error) {
		off := g.Out.Offsets
		counts := make([]int64, par.NumBlocks(g.NumVertices()))
		par.Blocks(g.NumVertices(), func(b, lo, hi int) {
			for v := lo; v < hi; v++ {
				if off[v+1]-off[v] == 2 {
					counts[b]++
				}
			}
		})
		var k int64
		for _, c := range counts {
			k += c
		}
		return k, nil
	})
	return k
}

// contractChains contracts out's chains (out holds every edge both ways,
// with equal weights).
func contractChains(out *CSR, weighted bool) *Chains {
	n := out.NumVertices()
	c := &Chains{Role: make([]uint32, n), Fwd: make([]uint32, n), Bwd: make([]uint32, n)}
	w := func(e int64) uint32 {
		if !weighted {
			return 1
		}
		return uint32(out.Weights[e])
	}
	interior := make([]bool, n)
	for v := range n {
		t := out.Neighbors(uint32(v))
		interior[v] = len(t) == 2 && t[0] != t[1] && int(t[0]) != v && int(t[1]) != v
	}
	const unassigned = math.MaxUint32
	for v := range c.Role {
		c.Role[v] = unassigned
	}
	var ends []uint32 // vertex numbers until the junctions are numbered
	walk := &chainWalk{out: out, c: c, interior: interior, w: w}
	for v := range n {
		if !interior[v] {
			ends = walk.fromJunction(uint32(v), ends)
		}
	}
	for v := range n { // cycles of interior vertices alone
		if interior[v] && c.Role[v] == unassigned {
			interior[v] = false
			ends = walk.fromJunction(uint32(v), ends)
		}
	}
	junctions := uint32(0)
	for v := range n {
		if interior[v] {
			c.Interior++
		} else {
			c.Role[v] = junctions
			junctions++
		}
	}
	for i, v := range ends {
		ends[i] = c.Role[v]
	}
	c.Ends = ends
	c.Graph = walk.contracted(int(junctions))
	return c
}

// chainWalk finds the chains from each junction, numbering them in the
// order found.
type chainWalk struct {
	out      *CSR
	c        *Chains
	interior []bool
	w        func(e int64) uint32
	lengths  []uint32 // each chain's, end to end
	path     []uint32 // the chain being walked
}

// fromJunction walks each chain that leaves junction v and is not walked
// yet, appending its ends to ends.
func (k *chainWalk) fromJunction(v uint32, ends []uint32) []uint32 {
	out, c := k.out, k.c
	for e := out.Offsets[v]; e < out.Offsets[v+1]; e++ {
		x := out.Targets[e]
		if !k.interior[x] || c.Role[x] != math.MaxUint32 {
			continue
		}
		chain := uint32(len(k.lengths)) | InteriorBit
		k.path = k.path[:0]
		prev, cur, at := v, x, k.w(e)
		for k.interior[cur] {
			c.Role[cur], c.Fwd[cur] = chain, at
			k.path = append(k.path, cur)
			lo := out.Offsets[cur]
			next := lo
			if out.Targets[lo] == prev {
				next++
			}
			prev, cur, at = cur, out.Targets[next], at+k.w(next)
		}
		for _, u := range k.path {
			c.Bwd[u] = at - c.Fwd[u]
		}
		k.lengths = append(k.lengths, at)
		ends = append(ends, v, cur)
	}
	return ends
}

// contracted is the junctions joined by the chains walked and by the
// edges between junctions, each pair once at its shortest.
func (k *chainWalk) contracted(junctions int) *Graph {
	type arc struct{ to, w uint32 }
	out, c, interior := k.out, k.c, k.interior
	most := out.NumEdges() - 2*int64(c.Interior) // the junctions' edges
	g := &Graph{Weighted: true, Out: CSR{Offsets: make([]int64, junctions+1),
		Targets: make([]uint32, 0, most), Weights: make([]float64, 0, most)}}
	var row []arc
	for v := range out.NumVertices() {
		if interior[v] {
			continue
		}
		j := c.Role[v]
		row = row[:0]
		for e := out.Offsets[v]; e < out.Offsets[v+1]; e++ {
			x := out.Targets[e]
			if !interior[x] {
				row = append(row, arc{c.Role[x], k.w(e)})
				continue
			}
			ch := c.Role[x] &^ InteriorBit
			a, b := c.Ends[2*ch], c.Ends[2*ch+1]
			if a == b {
				continue // back to v: no shorter way anywhere
			}
			other := a
			if other == j {
				other = b
			}
			row = append(row, arc{other, k.lengths[ch]})
		}
		slices.SortFunc(row, func(p, q arc) int { return cmp.Or(cmp.Compare(p.to, q.to), cmp.Compare(p.w, q.w)) })
		row = slices.CompactFunc(row, func(p, q arc) bool { return p.to == q.to })
		for _, r := range row {
			g.Out.Targets = append(g.Out.Targets, r.to)
			g.Out.Weights = append(g.Out.Weights, float64(r.w))
		}
		g.Out.Offsets[j+1] = int64(len(g.Out.Targets))
	}
	return g
}
