package convert

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
)

// TestPartitions checks every part against the whole graph: the ranges
// aligned and covering [0, n), each part's out-edges exactly g's edges into
// its range, its in-edge rows g's for the owned vertices and empty
// elsewhere, every edge in exactly one part, and the boundary counts.
func TestPartitions(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	for _, c := range []struct {
		nv, m      int
		undirected bool
		k          int
	}{
		{3000, 20000, false, 2}, {3000, 20000, true, 3}, {700, 5000, false, 4},
		{100, 300, true, 4}, // fewer aligned sections than parts: empty parts
		{5000, 60000, true, 1},
	} {
		name := fmt.Sprintf("nv=%d m=%d undirected=%v k=%d", c.nv, c.m, c.undirected, c.k)
		tab := tableOf(r, randomEdges(r, c.nv, c.m), edges.KeyInt64, denseKeys, 2)
		g, err := Build(context.Background(), tab, BuildOptions{Undirected: c.undirected, Weighted: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, extra := range []float64{0, 0.3} {
			parts, err := g.Partitions(c.k, extra)
			if err != nil {
				t.Fatal(err)
			}
			checkPartitions(t, fmt.Sprintf("%s/extra=%v", name, extra), g, parts, extra)
		}
	}
}

func checkPartitions(t *testing.T, name string, g *Graph, parts []Partition, extra float64) {
	t.Helper()
	n := g.NumVertices()
	var edgeSum int64
	for p, part := range parts {
		lo, hi := part.Lo, part.Hi
		if p == 0 && lo != 0 || p == len(parts)-1 && int(hi) != n || p > 0 && lo != parts[p-1].Hi || lo > hi {
			t.Fatalf("%s: part %d is [%d, %d)", name, p, lo, hi)
		}
		if lo%PartitionAlign != 0 && int(lo) != n {
			t.Fatalf("%s: part %d starts at %d, not aligned", name, p, lo)
		}
		holdLo, holdHi := part.HoldLo, part.HoldHi
		if holdLo > lo || holdHi < hi || holdLo%PartitionAlign != 0 && int(holdLo) != n || extra == 0 && (holdLo != lo || holdHi != hi) {
			t.Fatalf("%s: part %d owns [%d, %d) and holds [%d, %d)", name, p, lo, hi, holdLo, holdHi)
		}
		// Others hold [0, left) and [right, n).
		left, right := uint32(0), uint32(n)
		for q := range parts {
			if q < p {
				left = max(left, parts[q].HoldHi)
			}
			if q > p {
				right = min(right, parts[q].HoldLo)
			}
		}
		pg := part.Graph
		if pg.NumVertices() != n || !pg.Directed || pg.Keys != g.Keys {
			t.Fatalf("%s: part %d has %d vertices, directed %v", name, p, pg.NumVertices(), pg.Directed)
		}
		edgeSum += pg.NumEdges()
		var boundary int64
		for v := range n {
			row, wts := g.Out.Neighbors(uint32(v)), g.Out.Weights[g.Out.Offsets[v]:g.Out.Offsets[v+1]]
			var want []uint32
			var wantW []float64
			for i, u := range row {
				if u >= holdLo && u < holdHi {
					want = append(want, u)
					wantW = append(wantW, wts[i])
				}
			}
			got := pg.Out.Neighbors(uint32(v))
			gotW := pg.Out.Weights[pg.Out.Offsets[v]:pg.Out.Offsets[v+1]]
			if !slices.Equal(got, want) || !slices.Equal(gotW, wantW) {
				t.Fatalf("%s: part %d, out-row %d is %v %v, want %v %v", name, p, v, got, gotW, want, wantW)
			}
			in, pin := g.In(), pg.In()
			gotIn := pin.Neighbors(uint32(v))
			var wantIn []uint32
			var wantInW, gotInW []float64
			gotInW = pin.Weights[pin.Offsets[v]:pin.Offsets[v+1]]
			if uint32(v) >= holdLo && uint32(v) < holdHi {
				wantIn = in.Neighbors(uint32(v))
				wantInW = in.Weights[in.Offsets[v]:in.Offsets[v+1]]
				crosses := uint32(v) < left || uint32(v) >= right || slices.ContainsFunc(row, func(u uint32) bool { return u < left || u >= right })
				if crosses {
					boundary++
				}
				if bit := part.BoundaryBits[v/32]>>(v%32)&1 == 1; bit != crosses {
					t.Fatalf("%s: part %d, boundary bit of %d is %v, want %v", name, p, v, bit, crosses)
				}
			}
			if !slices.Equal(gotIn, wantIn) || !slices.Equal(gotInW, wantInW) {
				t.Fatalf("%s: part %d, in-row %d is %v, want %v", name, p, v, gotIn, wantIn)
			}
		}
		if part.Boundary != boundary {
			t.Fatalf("%s: part %d has %d boundary vertices, want %d", name, p, part.Boundary, boundary)
		}
	}
	// The parts' hubs-first numbering keeps each vertex in its part's range.
	for _, part := range parts {
		h, in := part.Graph.HubOrder(), part.Graph.In()
		for v, id := range h.ID {
			owner := 0
			for owner+1 < len(parts) && uint32(v) >= parts[owner].Hi {
				owner++
			}
			if id < parts[owner].Lo || id >= parts[owner].Hi {
				t.Fatalf("%s: vertex %d of part %d numbered %d", name, v, owner, id)
			}
		}
		for e, u := range in.Targets {
			if h.InSources[e] != h.ID[u] {
				t.Fatalf("%s: in-edge %d renumbered %d, want %d", name, e, h.InSources[e], h.ID[u])
			}
		}
	}
	if extra == 0 && edgeSum != g.NumEdges() || extra > 0 && edgeSum < g.NumEdges() {
		t.Fatalf("%s: the parts hold %d edges, the graph %d", name, edgeSum, g.NumEdges())
	}
}

// TestPartitionBounds checks the balance: on a graph whose in-edges all go
// to its first vertices, the first part owns few vertices.
func TestPartitionBounds(t *testing.T) {
	n := 4096
	off := make([]int64, n+1)
	for v := 1; v <= n; v++ {
		off[v] = off[v-1] + 1
		if v <= 256 {
			off[v] += 100
		}
	}
	b := partitionBounds(off, 2)
	if b[0] != 0 || b[2] != uint32(n) || b[1] == 0 || b[1] > 512 || b[1]%PartitionAlign != 0 {
		t.Fatalf("bounds %v: the first part should own the 256 heavy vertices and little more", b)
	}
}
