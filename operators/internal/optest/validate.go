package optest

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpipe/gpipe/convert"
)

// EdgeIndex is the position of edge u→v in g.Out, or -1.
func EdgeIndex(c *convert.CSR, u, v uint32) int64 {
	row := c.Neighbors(u)
	i, ok := slices.BinarySearch(row, v)
	if !ok {
		return -1
	}
	return c.Offsets[u] + int64(i)
}

// ValidateBFS checks a BFS result with the Graph 500 rules: depths equal
// the reference's exactly (so the reached set is the same), the source is
// the tree's root, each vertex's parent is an in-neighbour one level up,
// and every edge's endpoints are at most one level apart (undirected) or
// depth[v] <= depth[u]+1 for u→v (directed).
func ValidateBFS(g *convert.Graph, src uint32, depth []int32, parent []uint32, ref []int32) error {
	n := g.NumVertices()
	if len(depth) != n || len(parent) != n {
		return fmt.Errorf("columns have %d and %d rows, want %d", len(depth), len(parent), n)
	}
	if depth[src] != 0 || parent[src] != src {
		return fmt.Errorf("source %d has depth %d, parent %d", src, depth[src], parent[src])
	}
	for v := 0; v < n; v++ {
		if depth[v] != ref[v] {
			return fmt.Errorf("vertex %d: depth %d, reference %d", v, depth[v], ref[v])
		}
		if depth[v] < 0 {
			if depth[v] != -1 || parent[v] != convert.NoVertex {
				return fmt.Errorf("unreached vertex %d: depth %d, parent %d, want -1 and null", v, depth[v], parent[v])
			}
			continue
		}
		if uint32(v) == src {
			continue
		}
		p := parent[v]
		if p == convert.NoVertex || int(p) >= n {
			return fmt.Errorf("reached vertex %d has parent %d", v, p)
		}
		if depth[p] != depth[v]-1 {
			return fmt.Errorf("vertex %d at depth %d has parent %d at depth %d", v, depth[v], p, depth[p])
		}
		if EdgeIndex(&g.Out, p, uint32(v)) < 0 {
			return fmt.Errorf("vertex %d has parent %d, which has no edge to it", v, p)
		}
	}
	for u := 0; u < n; u++ {
		for _, v := range g.Out.Neighbors(uint32(u)) {
			du, dv := depth[u], depth[v]
			if du >= 0 && dv < 0 {
				return fmt.Errorf("edge %d→%d leaves the reached set", u, v)
			}
			if du < 0 || dv < 0 {
				continue
			}
			if g.Directed {
				if dv > du+1 {
					return fmt.Errorf("edge %d→%d: depth %d after %d", u, v, dv, du)
				}
			} else if dv-du > 1 || du-dv > 1 {
				return fmt.Errorf("edge %d-%d spans depths %d and %d", u, v, du, dv)
			}
		}
	}
	return nil
}

// ValidateSSSP checks distances against the reference (within 1e-9
// relative; NaN where unreachable) and that parents form a shortest-path
// tree: each parent edge exists and is tight, and following parents from
// any reached vertex reaches the source without a cycle.
func ValidateSSSP(g *convert.Graph, src uint32, dist []float64, parent []uint32, ref []float64) error {
	n := g.NumVertices()
	if len(dist) != n || len(parent) != n {
		return fmt.Errorf("columns have %d and %d rows, want %d", len(dist), len(parent), n)
	}
	if dist[src] != 0 || parent[src] != src {
		return fmt.Errorf("source %d has distance %v, parent %d", src, dist[src], parent[src])
	}
	for v := 0; v < n; v++ {
		if math.IsInf(ref[v], 1) {
			if !math.IsNaN(dist[v]) || parent[v] != convert.NoVertex {
				return fmt.Errorf("unreachable vertex %d: distance %v, parent %d", v, dist[v], parent[v])
			}
			continue
		}
		if math.IsNaN(dist[v]) || math.Abs(dist[v]-ref[v]) > 1e-9*math.Max(1, math.Abs(ref[v])) {
			return fmt.Errorf("vertex %d: distance %v, reference %v", v, dist[v], ref[v])
		}
		if uint32(v) == src {
			continue
		}
		p := parent[v]
		if p == convert.NoVertex || int(p) >= n {
			return fmt.Errorf("reached vertex %d has parent %d", v, p)
		}
		e := EdgeIndex(&g.Out, p, uint32(v))
		if e < 0 {
			return fmt.Errorf("vertex %d has parent %d, which has no edge to it", v, p)
		}
		if dist[p]+WeightAt(&g.Out, e) != dist[v] {
			return fmt.Errorf("parent edge %d→%d is not tight: %v + %v != %v", p, v, dist[p], WeightAt(&g.Out, e), dist[v])
		}
	}
	// Every parent chain ends at the source: 0 unknown, 1 on the current
	// path, 2 known to reach the source.
	state := make([]uint8, n)
	state[src] = 2
	var path []uint32
	for v := 0; v < n; v++ {
		if parent[v] == convert.NoVertex {
			continue
		}
		path = path[:0]
		x := uint32(v)
		for state[x] == 0 {
			state[x] = 1
			path = append(path, x)
			x = parent[x]
		}
		if state[x] == 1 {
			return fmt.Errorf("parents of vertex %d form a cycle through %d", v, x)
		}
		for _, y := range path {
			state[y] = 2
		}
	}
	return nil
}
