package gen

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/internal/usererr"
)

// The road has rows × cols vertices, every one with a street; each street
// joins grid neighbours (so streets cross only at vertices), once, u < v;
// degrees are 2 to 4 (a one-row road is a path); the streets connect every
// vertex; weights are the rounded Euclidean lengths of streets between
// points inside their cells; the same seed makes the same table, another
// seed another.
func TestRoad(t *testing.T) {
	for _, n := range []int{1, 2, 7, 9, 100, 1000, 40000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tbl, err := Road{Vertices: n, Seed: 5, Weighted: true}.Generate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			rows, cols := RoadShape(n)
			if rows*cols < n || rows*cols >= n+rows+1 || tbl.Name != fmt.Sprintf("road:%d", rows*cols) {
				t.Fatalf("%d vertices as %dx%d, table %q", n, rows, cols, tbl.Name)
			}
			es, ws := gridEdges(t, tbl)
			checkRoad(t, rows, cols, es, ws)
			again, err := Road{Vertices: n, Seed: 5, Weighted: true}.Generate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			es2, ws2 := gridEdges(t, again)
			if !slices.Equal(es, es2) || !slices.Equal(ws, ws2) {
				t.Errorf("seed 5 twice: different tables")
			}
			other, err := Road{Vertices: n, Seed: 6}.Generate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			es3, ws3 := gridEdges(t, other)
			if ws3 != nil || n >= 100 && slices.Equal(es, es3) {
				t.Errorf("seed 6: weights %v, edges the same as seed 5's: %v", ws3 != nil, slices.Equal(es, es3))
			}
		})
	}
}

// checkRoad checks a road's edges and weights against the properties
// TestRoad states.
func checkRoad(t *testing.T, rows, cols int, es [][2]int64, ws []float64) {
	t.Helper()
	n := rows * cols
	uf := newUnionFind(n)
	degree := make([]int, n)
	seen := map[[2]int64]bool{}
	for i, e := range es {
		u, v := e[0], e[1]
		right := v == u+1 && u%int64(cols) != int64(cols-1)
		down := v == u+int64(cols)
		if u < 0 || v >= int64(n) || !right && !down || seen[e] {
			t.Fatalf("edge %d→%d: not a right or down neighbour, or twice", u, v)
		}
		seen[e] = true
		degree[u]++
		degree[v]++
		uf.union(uint32(u), uint32(v))
		// The ends lie in the middle 80% of neighbouring cells.
		if w := ws[i]; w != math.Round(w) || w < 0.2*RoadCell || w > math.Hypot(1.8, 0.8)*RoadCell {
			t.Fatalf("edge %d→%d weight %v: not a street's rounded length", u, v, w)
		}
	}
	total := 0
	for v, d := range degree {
		total += d
		low := 2
		if rows == 1 || cols == 1 {
			low = 1
		}
		if n > 1 && (d < low || d > 4) {
			t.Fatalf("vertex %d has %d streets", v, d)
		}
		if uf.find(uint32(v)) != uf.find(0) {
			t.Fatalf("vertex %d is not connected to vertex 0", v)
		}
	}
	if avg := float64(total) / float64(n); n >= 1000 && (avg < 2.3 || avg > 3.2) {
		t.Errorf("average degree %.2f: not road-like", avg)
	}
}

func TestRoadRefusesNoVertices(t *testing.T) {
	for _, n := range []int{0, -3} {
		_, err := Road{Vertices: n}.Generate(context.Background())
		if usererr.KindOf(err) != usererr.Usage {
			t.Errorf("road of %d vertices: %v, want a usage error", n, err)
		}
	}
	g, err := Parse("road:500", 3, true)
	if r, ok := g.(Road); err != nil || !ok || r != (Road{Vertices: 500, Seed: 3, Weighted: true}) {
		t.Errorf("Parse(road:500) = %#v, %v", g, err)
	}
	if _, err := Parse("road:x", 3, true); usererr.KindOf(err) != usererr.Usage {
		t.Errorf("Parse(road:x): %v", err)
	}
}
