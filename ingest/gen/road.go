package gen

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Road describes a road-like graph: planar, connected, of degree 2 to 4 and
// high diameter, with Euclidean weights, the shape of a road network
// (DIMACS, OSM) at any size. Its vertices are points jittered in the cells
// of a near-square grid of RoadCell-metre cells, one a cell, row by row
// (vertex r·cols + c in cell (r, c)); its streets join cells' neighbours: a
// random spanning tree of the grid's 4-neighbour edges (Kruskal's over the
// edges in a seeded random order), so that every vertex is reached, plus
// each other neighbour edge with probability RoadExtra, and every edge at a
// vertex the tree left with one street: no dead ends, blocks of irregular
// size and long detours (a road of one row or column is a path, whose two
// ends keep one street). A point stays inside its cell, so streets cross
// only at vertices: the graph is planar. Each edge is once, (u, v) with u <
// v, in the seeded order: the road graph is the table read with
// --undirected.
type Road struct {
	// Vertices is how many vertices to make, rounded to rows × cols with
	// rows = ⌊√Vertices⌋ and cols = ⌈Vertices / rows⌉ (at least 1 each).
	Vertices int
	// Seed draws the points and the streets.
	Seed uint64
	// Weighted adds a "weight" column: each street's length in metres,
	// the distance between its ends rounded, at least 1.
	Weighted bool
	// Progress, when set, counts the edges made so far.
	Progress *atomic.Int64
}

const (
	// RoadCell is the side of a cell, in metres: streets of about 100 m.
	RoadCell = 100
	// RoadExtra is the chance of a neighbour edge outside the tree.
	RoadExtra = 0.15
)

// roadSeed sets the road's streams apart from the other generators'.
const roadSeed = 0x726f616473 // "roads"

// RoadShape is the grid of cells a road of n vertices fills.
func RoadShape(n int) (rows, cols int) {
	rows = max(1, int(math.Sqrt(float64(n))))
	cols = max(1, (n+rows-1)/rows)
	return rows, cols
}

// Generate makes the road as an edge table with int64 keys.
func (g Road) Generate(ctx context.Context) (*edges.Table, error) {
	if g.Vertices < 1 || int64(g.Vertices) > maxGridVertices {
		return nil, usererr.Newf(usererr.Usage, "road of %d vertices: choose between 1 and %d (vertex ids are uint32)", g.Vertices, int64(maxGridVertices))
	}
	rows, cols := RoadShape(g.Vertices)
	n := int64(rows) * int64(cols)
	// The candidate streets (8 bytes each), the union-find (4 a vertex),
	// the points (16) and at most every candidate in the table (24).
	cand := int64(rows)*int64(cols-1) + int64(rows-1)*int64(cols)
	if total := physicalMemory(); total > 0 && cand*32+n*20 > total {
		return nil, usererr.Newf(usererr.Usage, "road of %d vertices needs about %s, more than this machine's %s of memory; choose fewer vertices",
			g.Vertices, bytesize.Format(cand*32+n*20), bytesize.Format(total))
	}
	rng := rand.New(rand.NewPCG(g.Seed^roadSeed, 1))
	xs, ys := roadPoints(rng, rows, cols)
	keep, err := roadStreets(ctx, rng, rows, cols)
	if err != nil {
		return nil, err
	}
	src, dst := make([]int64, 0, len(keep)), make([]int64, 0, len(keep))
	var weight []float64
	if g.Weighted {
		weight = make([]float64, 0, len(keep))
	}
	for i, e := range keep {
		u, v := roadEnds(e, cols)
		src, dst = append(src, u), append(dst, v)
		if weight != nil {
			weight = append(weight, math.Max(1, math.Round(math.Hypot(xs[u]-xs[v], ys[u]-ys[v]))))
		}
		if g.Progress != nil && i%(1<<16) == 0 {
			g.Progress.Add(int64(min(1<<16, len(keep)-i)))
		}
	}
	return newTable(fmt.Sprintf("road:%d", n), src, dst, weight), nil
}

// roadPoints are the vertices' coordinates in metres: vertex r·cols + c
// uniform in the middle 80% of cell (r, c), so that no street is shorter
// than a fifth of a cell.
func roadPoints(rng *rand.Rand, rows, cols int) (xs, ys []float64) {
	n := rows * cols
	xs, ys = make([]float64, n), make([]float64, n)
	for v := range n {
		r, c := v/cols, v%cols
		xs[v] = (float64(c) + 0.1 + 0.8*rng.Float64()) * RoadCell
		ys[v] = (float64(r) + 0.1 + 0.8*rng.Float64()) * RoadCell
	}
	return xs, ys
}

// A candidate street is a neighbour edge of the grid: 2v for (v, v+1)
// (right), 2v+1 for (v, v+cols) (down).
func roadEnds(e uint64, cols int) (int64, int64) {
	v := int64(e >> 1)
	if e&1 == 0 {
		return v, v + 1
	}
	return v, v + int64(cols)
}

// roadStreets are the streets kept, in the order of a seeded random
// permutation of the candidates: the spanning tree Kruskal's algorithm
// takes from that order, then the rest with probability RoadExtra or where
// an end has one street only.
func roadStreets(ctx context.Context, rng *rand.Rand, rows, cols int) ([]uint64, error) {
	var cand []uint64
	for v := range rows * cols {
		if (v+1)%cols != 0 {
			cand = append(cand, uint64(2*v))
		}
		if v+cols < rows*cols {
			cand = append(cand, uint64(2*v+1))
		}
	}
	rng.Shuffle(len(cand), func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
	uf := newUnionFind(rows * cols)
	degree := make([]uint8, rows*cols)
	keep, rest := make([]uint64, 0, len(cand)*5/8), make([]uint64, 0, len(cand)/2)
	for i, e := range cand {
		if i%(1<<20) == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		u, v := roadEnds(e, cols)
		if uf.union(uint32(u), uint32(v)) {
			keep = append(keep, e)
			degree[u]++
			degree[v]++
		} else {
			rest = append(rest, e)
		}
	}
	for _, e := range rest {
		u, v := roadEnds(e, cols)
		if degree[u] == 1 || degree[v] == 1 || rng.Float64() < RoadExtra {
			keep = append(keep, e)
			degree[u]++
			degree[v]++
		}
	}
	return keep, nil
}

// unionFind is a disjoint-set forest with path halving and union by size.
type unionFind struct {
	parent []uint32
	size   []uint32
}

func newUnionFind(n int) *unionFind {
	uf := &unionFind{parent: make([]uint32, n), size: make([]uint32, n)}
	for i := range uf.parent {
		uf.parent[i], uf.size[i] = uint32(i), 1
	}
	return uf
}

func (uf *unionFind) find(x uint32) uint32 {
	for uf.parent[x] != x {
		uf.parent[x] = uf.parent[uf.parent[x]]
		x = uf.parent[x]
	}
	return x
}

// union joins the sets of a and b, and says whether they were apart.
func (uf *unionFind) union(a, b uint32) bool {
	a, b = uf.find(a), uf.find(b)
	if a == b {
		return false
	}
	if uf.size[a] < uf.size[b] {
		a, b = b, a
	}
	uf.parent[b] = a
	uf.size[a] += uf.size[b]
	return true
}
