package convert

import (
	"fmt"
	"slices"

	"github.com/gpipe/gpipe/internal/par"
)

// Grouped is KiTES' Vertex Grouping (khorasani-dissertation §3.1.2): the
// vertices in groups of 2^LogR consecutive ids, and an edge from group a to
// group b wherever some vertex of a has an edge to some vertex of b, each
// such pair once. A work-efficient pull keeps it beside the in-edges to
// find, from a changed vertex, the groups to process next: fewer entries
// than the out-edges (at most one per pair of groups), at the price of
// activating a whole group for one of its vertices.
type Grouped struct {
	LogR uint
	// Row a of Offsets/Targets lists the target groups of group a,
	// ascending.
	CSR
}

// MaxGroupLog bounds LogR: a group is at most 32 vertices, so that a warp
// scanning a chunk of 1024 vertices owns the activeness words it reads
// (kernels/warpseg.cuh).
const MaxGroupLog = 5

// Grouped is g's grouping with ratio 2^logR along its out-edges, or, with
// both, along out- and in-edges (CC on a directed graph activates both
// ways). It is built on first use and cached.
func (g *Graph) Grouped(logR uint, both bool) (*Grouped, error) {
	if logR > MaxGroupLog {
		return nil, fmt.Errorf("convert: vertex groups of 2^%d vertices; at most 2^%d", logR, MaxGroupLog)
	}
	if !g.Directed {
		both = false
	}
	i := 0
	if both {
		i = 1
	}
	return g.grouped[i][logR].get(func() (*Grouped, error) {
		var in *CSR
		if both {
			in = g.In()
		}
		return groupRows(&g.Out, in, logR), nil
	})
}

// GroupedBytes bounds the memory of g's grouping with ratio 2^logR without
// building it: every group's offset, and at most one entry per edge.
func GroupedBytes(g *Graph, logR uint, both bool) int64 {
	groups := (int64(g.NumVertices()) + 1<<logR - 1) >> logR
	entries := g.NumEdges()
	if both && g.Directed {
		entries *= 2
	}
	return (groups+1)*8 + min(entries, groups*groups)*4
}

// groupRows groups the rows of out (and of in, when not nil) by 2^logR
// vertices, in parallel over blocks of groups.
func groupRows(out, in *CSR, logR uint) *Grouped {
	n := out.NumVertices()
	R := 1 << logR
	groups := (n + R - 1) / R
	blocks := max(1, min(4*par.Workers(), groups/256))
	type block struct {
		counts  []int64
		targets []uint32
	}
	built := make([]block, blocks)
	span := func(b int) (int, int) { return groups * b / blocks, groups * (b + 1) / blocks }
	par.For(blocks, 1, func(lo, hi int) {
		var scratch []uint32
		for b := lo; b < hi; b++ {
			a0, a1 := span(b)
			bl := block{counts: make([]int64, a1-a0)}
			for a := a0; a < a1; a++ {
				scratch = scratch[:0]
				for v := a * R; v < min((a+1)*R, n); v++ {
					for _, t := range out.Neighbors(uint32(v)) {
						scratch = append(scratch, t>>logR)
					}
					if in != nil {
						for _, t := range in.Neighbors(uint32(v)) {
							scratch = append(scratch, t>>logR)
						}
					}
				}
				slices.Sort(scratch)
				scratch = slices.Compact(scratch)
				bl.counts[a-a0] = int64(len(scratch))
				bl.targets = append(bl.targets, scratch...)
			}
			built[b] = bl
		}
	})
	gr := &Grouped{LogR: logR}
	gr.Offsets = make([]int64, groups+1)
	total := int64(0)
	starts := make([]int64, blocks)
	for b, bl := range built {
		starts[b] = total
		a0, _ := span(b)
		for i, c := range bl.counts {
			gr.Offsets[a0+i] = total
			total += c
		}
	}
	gr.Offsets[groups] = total
	gr.Targets = make([]uint32, total)
	par.For(blocks, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			copy(gr.Targets[starts[b]:], built[b].targets)
		}
	})
	return gr
}
