package convert

import (
	"fmt"
	"sort"

	"github.com/gpipe/gpipe/internal/par"
)

// The 1-D partitions of several GPUs (Enterprise §4.4; Vertex Refinement,
// khorasani-dissertation §2.3.2): part p owns the vertex range [Lo, Hi) and
// holds the edges whose target it owns, so that a GPU computes only its own
// vertices' values and never writes another's. Its Graph keeps the whole
// graph's vertex ids (no GPU renumbers anything and the vertex-value arrays
// are full length, as the dissertation's VertexValues), with:
//
//	Out  every vertex's out-edges into [Lo, Hi): the edges a top-down BFS
//	     level expands from the whole frontier, and those along which a
//	     remote vertex's update reaches the part's vertices
//	In   the in-edges of the owned vertices (rows outside [Lo, Hi) empty):
//	     what a pull or a bottom-up level reads
//
// Ranges start at multiples of PartitionAlign vertices, so that a part's
// bits of a frontier bitmap are whole 32-bit words (the ballot-compressed
// status exchanged between GPUs) and the dissertation's 128-vertex sections
// of Permissive Partitioning never straddle two parts.
//
// Permissive Partitioning (§3.3, the offline phase): with extra > 0 a part
// also holds the edges into vertices beyond its own range, [HoldLo, HoldHi),
// about extra times its own edges on each side, so that the vertices it
// computes can slide within that range from one iteration to the next (the
// online phase, operators/multigpu/vp.go). Its Graph then has the edges into the
// whole held range, and its boundary vertices are those a part that holds
// them may compute and another part reads: a held vertex that another part
// holds too, or one with an out-edge into another part's held range.

// PartitionAlign is the granularity of part boundaries, in vertices.
const PartitionAlign = 128

// Partition is one part of a graph's 1-D partition.
type Partition struct {
	Lo, Hi         uint32 // the owned vertices
	HoldLo, HoldHi uint32 // the held vertices: [Lo, Hi), and more where permissive
	Graph          *Graph // the edges into [HoldLo, HoldHi), with the whole graph's ids
	// Boundary counts the held vertices whose updates another part reads:
	// with an out-edge into another part's held range, or held by another
	// part too (offline Vertex Refinement). BoundaryBits marks them, bit
	// v%32 of word v/32, over the whole graph's ids.
	Boundary     int64
	BoundaryBits []uint32
}

// Owned is the number of vertices the part owns.
func (p Partition) Owned() int64 { return int64(p.Hi) - int64(p.Lo) }

// Edges is the number of edges the part holds.
func (p Partition) Edges() int64 { return p.Graph.NumEdges() }

// Partitions splits g into k parts by vertex range, balancing the parts'
// edges plus vertices (each part pulls or checks its vertices' in-edges and
// sweeps its vertices' status), with boundaries aligned to PartitionAlign. A
// part may own no vertex when g has fewer than k aligned sections. Each part
// holds extra times its own edges more on each side (0: its own range
// only). The parts alias g's in-edge arrays and copy only the out-edges
// they filter; a graph built on a GPU is copied back to the host first.
func (g *Graph) Partitions(k int, extra float64) ([]Partition, error) {
	if k < 1 || !(extra >= 0) {
		return nil, fmt.Errorf("convert: %d partitions, %v extra", k, extra)
	}
	if err := g.Materialize(); err != nil {
		return nil, err
	}
	bounds := partitionBounds(g.In().Offsets, k)
	set := &partitionSet{whole: g, bounds: bounds}
	parts := make([]Partition, k)
	in := g.In().Offsets
	for p := range parts {
		lo, hi := bounds[p], bounds[p+1]
		holdLo, holdHi := holdRange(in, lo, hi, extra)
		parts[p] = Partition{Lo: lo, Hi: hi, HoldLo: holdLo, HoldHi: holdHi, Graph: g.partitionGraph(holdLo, holdHi)}
		parts[p].Graph.split = set
	}
	for p := range parts {
		// Others hold [0, left) and [right, n).
		left, right := uint32(0), uint32(g.NumVertices())
		for q := range parts {
			if q < p {
				left = max(left, parts[q].HoldHi)
			}
			if q > p {
				right = min(right, parts[q].HoldLo)
			}
		}
		parts[p].BoundaryBits, parts[p].Boundary = boundaryBits(&g.Out, parts[p].HoldLo, parts[p].HoldHi, left, right)
	}
	return parts, nil
}

// holdRange is [lo, hi) widened on each side by about extra times its
// in-edges plus vertices (partitionBounds' cost), aligned.
func holdRange(inOffsets []int64, lo, hi uint32, extra float64) (uint32, uint32) {
	if extra == 0 || lo == hi {
		return lo, hi
	}
	n := len(inOffsets) - 1
	cost := func(v int) int64 { return inOffsets[v] + int64(v) }
	grow := int64(extra * float64(cost(int(hi))-cost(int(lo))))
	a := sort.Search(int(lo), func(v int) bool { return cost(v) >= cost(int(lo))-grow })
	b := int(hi) + sort.Search(n-int(hi), func(i int) bool { return cost(int(hi)+i) >= cost(int(hi))+grow })
	a = a / PartitionAlign * PartitionAlign
	b = min((b+PartitionAlign-1)/PartitionAlign*PartitionAlign, n)
	return uint32(a), uint32(b)
}

// partitionSet is what the parts of one partition share: the whole graph
// and the cuts, and the hubs-first numbering within each part's range (by
// the whole graph's out-degrees), made once for all parts.
type partitionSet struct {
	whole  *Graph
	bounds []uint32
	ids    onceValue[[]uint32]
}

// hubOrder is a part's HubOrder: the partition's numbering, and the part's
// in-edges' sources renumbered by it.
func (s *partitionSet) hubOrder(in *CSR) *HubOrder {
	ids, _ := s.ids.get(func() ([]uint32, error) {
		return hubOrder(&s.whole.Out, &CSR{}, s.bounds).ID, nil
	})
	return &HubOrder{ID: ids, InSources: renumbered(in.Targets, ids)}
}

// partitionBounds are k+1 aligned vertex ids from 0 to n: the cut after
// which the running sum of in-edges plus vertices passes each p/k of the
// total.
func partitionBounds(inOffsets []int64, k int) []uint32 {
	n := max(len(inOffsets)-1, 0)
	bounds := make([]uint32, k+1)
	bounds[k] = uint32(n)
	total := inOffsets[n] + int64(n)
	cost := func(v int) int64 { return inOffsets[v] + int64(v) }
	for p := 1; p < k; p++ {
		want := total * int64(p) / int64(k)
		v := sort.Search(n, func(v int) bool { return cost(v) >= want })
		v = (v + PartitionAlign/2) / PartitionAlign * PartitionAlign
		v = min(max(v, int(bounds[p-1])), n)
		bounds[p] = uint32(v)
	}
	return bounds
}

// partitionGraph is the part of g that owns [lo, hi).
func (g *Graph) partitionGraph(lo, hi uint32) *Graph {
	n := g.NumVertices()
	pg := &Graph{Directed: true, Weighted: g.Weighted, Keys: g.Keys, Stats: g.Stats, alloc: g.alloc}
	pg.Out = filterTargets(&g.Out, lo, hi)
	in := g.In()
	rows := CSR{Offsets: make([]int64, n+1)}
	first, last := in.Offsets[lo], in.Offsets[hi]
	par.For(n+1, 1<<16, func(a, b int) {
		for v := a; v < b; v++ {
			switch {
			case v <= int(lo):
				rows.Offsets[v] = 0
			case v >= int(hi):
				rows.Offsets[v] = last - first
			default:
				rows.Offsets[v] = in.Offsets[v] - first
			}
		}
	})
	rows.Targets = in.Targets[first:last:last]
	if in.Weights != nil {
		rows.Weights = in.Weights[first:last:last]
	}
	pg.inOnce.Do(func() {
		pg.in = rows
		pg.inBuilt.Store(true)
	})
	return pg
}

// filterTargets is c with only the edges whose target is in [lo, hi): each
// row's targets are ascending, so they are one run found by binary search.
func filterTargets(c *CSR, lo, hi uint32) CSR {
	n := c.NumVertices()
	run := func(v int) (int64, int64) {
		row := c.Targets[c.Offsets[v]:c.Offsets[v+1]]
		a := sort.Search(len(row), func(i int) bool { return row[i] >= lo })
		b := a + sort.Search(len(row)-a, func(i int) bool { return row[a+i] >= hi })
		return c.Offsets[v] + int64(a), c.Offsets[v] + int64(b)
	}
	r := CSR{Offsets: make([]int64, n+1)}
	par.For(n, 1<<14, func(a, b int) {
		for v := a; v < b; v++ {
			x, y := run(v)
			r.Offsets[v] = y - x
		}
	})
	m := par.PrefixSum(r.Offsets[:n])
	r.Offsets[n] = m
	r.Targets = make([]uint32, m)
	if c.Weights != nil {
		r.Weights = make([]float64, m)
	}
	par.For(n, 1<<14, func(a, b int) {
		for v := a; v < b; v++ {
			x, y := run(v)
			copy(r.Targets[r.Offsets[v]:], c.Targets[x:y])
			if c.Weights != nil {
				copy(r.Weights[r.Offsets[v]:], c.Weights[x:y])
			}
		}
	})
	return r
}

// boundaryBits marks the vertices of [lo, hi) that lie in [0, left) or
// [right, n), where other parts hold vertices, or have an out-edge into
// them (rows are ascending: the first and last target tell), and counts
// them. lo is a multiple of 32, so each word has one writer.
func boundaryBits(out *CSR, lo, hi, left, right uint32) ([]uint32, int64) {
	n := out.NumVertices()
	bits := make([]uint32, (n+31)/32)
	words := (int(hi) - int(lo) + 31) / 32
	sums := make([]int64, par.NumBlocks(words))
	par.Blocks(words, func(w, a, b int) {
		for i := a; i < b; i++ {
			var word uint32
			for v := int(lo) + 32*i; v < min(int(lo)+32*i+32, int(hi)); v++ {
				row := out.Targets[out.Offsets[v]:out.Offsets[v+1]]
				if uint32(v) < left || uint32(v) >= right || len(row) > 0 && (row[0] < left || row[len(row)-1] >= right) {
					word |= 1 << (v & 31)
					sums[w]++
				}
			}
			bits[int(lo)/32+i] = word
		}
	})
	var total int64
	for _, c := range sums {
		total += c
	}
	return bits, total
}
