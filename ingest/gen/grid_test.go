package gen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
)

// gridEdges is a generated table's edges as (src, dst) pairs, and its
// weights (nil without).
func gridEdges(t *testing.T, tbl *edges.Table) ([][2]int64, []float64) {
	t.Helper()
	var es [][2]int64
	var ws []float64
	for _, c := range tbl.Chunks {
		if c.Src.Int64 == nil || len(c.Dst.Int64) != len(c.Src.Int64) || tbl.HasWeight != (c.Weight != nil) {
			t.Fatalf("chunk of %d int64 src, %d dst, weights %v (HasWeight %v)", len(c.Src.Int64), len(c.Dst.Int64), c.Weight != nil, tbl.HasWeight)
		}
		for i, s := range c.Src.Int64 {
			es = append(es, [2]int64{s, c.Dst.Int64[i]})
		}
		ws = append(ws, c.Weight...)
	}
	return es, ws
}

// The grid has rows·cols vertices, rows·(cols-1) + (rows-1)·cols edges,
// each a right or a down neighbour, once; no vertex has more than 4
// neighbours; and on the undirected grid, vertex r·cols + c is r + c BFS
// levels from vertex 0.
func TestGrid(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {2, 2}, {3, 4}, {17, 23}, {64, 64}, {5, 300}} {
		rows, cols := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			tbl, err := Grid{Rows: rows, Cols: cols}.Generate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			n := rows * cols
			m := rows*(cols-1) + (rows-1)*cols
			es, ws := gridEdges(t, tbl)
			if len(es) != m || tbl.NumEdges() != int64(m) || tbl.RowsRead != int64(m) || ws != nil {
				t.Fatalf("%d edges, NumEdges %d, RowsRead %d, weights %v; want %d edges, no weights", len(es), tbl.NumEdges(), tbl.RowsRead, ws != nil, m)
			}
			if tbl.Name != fmt.Sprintf("grid:%dx%d", rows, cols) || tbl.KeyType != edges.KeyInt64 {
				t.Errorf("name %q, key type %v", tbl.Name, tbl.KeyType)
			}
			adj := make([][]int64, n)
			seen := map[[2]int64]bool{}
			for _, e := range es {
				s, d := e[0], e[1]
				right := d == s+1 && s%int64(cols) != int64(cols-1)
				down := d == s+int64(cols)
				if s < 0 || d >= int64(n) || !right && !down || seen[e] {
					t.Fatalf("edge %d→%d: not a right or down neighbour in the grid, or twice", s, d)
				}
				seen[e] = true
				adj[s] = append(adj[s], d)
				adj[d] = append(adj[d], s)
			}
			vertices := 0
			for v, nb := range adj {
				if len(nb) > 4 {
					t.Fatalf("vertex %d has %d neighbours", v, len(nb))
				}
				if len(nb) > 0 {
					vertices++
				}
			}
			if n > 1 && vertices != n {
				t.Errorf("%d vertices have edges, want all %d", vertices, n)
			}
			depth := make([]int, n)
			for i := range depth {
				depth[i] = -1
			}
			depth[0] = 0
			for queue := []int64{0}; len(queue) > 0; queue = queue[1:] {
				v := queue[0]
				for _, w := range adj[v] {
					if depth[w] < 0 {
						depth[w] = depth[v] + 1
						queue = append(queue, w)
					}
				}
			}
			for v, d := range depth {
				if r, c := v/cols, v%cols; d != r+c {
					t.Fatalf("vertex %d (row %d, column %d): BFS depth %d, want %d", v, r, c, d, r+c)
				}
			}
		})
	}
}

// Weights are integers in [1, 255] drawn from the seed: the same seed gives
// the same weights, another seed others, and the edges are those of the
// unweighted grid.
func TestGridWeights(t *testing.T) {
	ctx := context.Background()
	plain, err := Grid{Rows: 300, Cols: 400}.Generate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := gridEdges(t, plain)
	weights := func(seed uint64) []float64 {
		tbl, err := Grid{Rows: 300, Cols: 400, Seed: seed, Weighted: true}.Generate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		es, ws := gridEdges(t, tbl)
		if !slices.Equal(es, want) || !tbl.HasWeight || len(ws) != len(es) {
			t.Fatalf("seed %d: --weighted changed the edges, or has %d weights for %d edges", seed, len(ws), len(es))
		}
		return ws
	}
	w1 := weights(1)
	distinct := map[float64]bool{}
	for i, w := range w1 {
		if w != math.Trunc(w) || w < 1 || w > 255 {
			t.Fatalf("weight %d is %v, want an integer in [1, 255]", i, w)
		}
		distinct[w] = true
	}
	if len(distinct) != 255 {
		t.Errorf("%d distinct weights in %d edges", len(distinct), len(w1))
	}
	if !slices.Equal(w1, weights(1)) {
		t.Error("the same seed gave other weights")
	}
	if slices.Equal(w1, weights(2)) {
		t.Error("seeds 1 and 2 gave the same weights")
	}
}

// Bad sizes are one-line usage errors, before anything is allocated.
func TestGridErrors(t *testing.T) {
	defer func(f func() int64) { physicalMemory = f }(physicalMemory)
	physicalMemory = func() int64 { return 1 << 30 }
	for _, tc := range []struct {
		rows, cols int
		says       string
	}{
		{0, 5, "grid 0x5: rows and columns must be at least 1"},
		{5, 0, "grid 5x0: rows and columns must be at least 1"},
		{-3, 4, "grid -3x4: rows and columns must be at least 1"},
		{70000, 70000, "grid 70000x70000 has more than 4294967295 vertices"},
		{1 << 40, 1 << 40, "vertex ids are uint32"},
		{65536, 65535, "grid 65536x65535: 8589672449 edges need 128 GiB"},
		{10000, 10000, "more than this machine's 1 GiB of memory; choose fewer rows or columns"},
	} {
		_, err := Grid{Rows: tc.rows, Cols: tc.cols}.Generate(context.Background())
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != usererr.Usage || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%dx%d: error %v, want a one-line usage error saying %q", tc.rows, tc.cols, err, tc.says)
		}
	}
}

// Parse reads what gpipe bench --gen takes.
func TestParse(t *testing.T) {
	for spec, want := range map[string]Generator{
		"kronecker:10":    Kronecker{Scale: 10, EdgeFactor: 16, Seed: 7, Weighted: true},
		"kronecker:10:4":  Kronecker{Scale: 10, EdgeFactor: 4, Seed: 7, Weighted: true},
		"grid:2048x1024":  Grid{Rows: 2048, Cols: 1024, Seed: 7, Weighted: true},
		"grid:0x3":        Grid{Rows: 0, Cols: 3, Seed: 7, Weighted: true}, // refused by Generate
		"kronecker:40:16": Kronecker{Scale: 40, EdgeFactor: 16, Seed: 7, Weighted: true},
	} {
		got, err := Parse(spec, 7, true)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", spec, got, err, want)
		}
	}
	for _, spec := range []string{"", "kronecker", "kronecker:", "kronecker:x", "kronecker:4:y", "kronecker:1:2:3", "grid", "grid:4", "grid:4x", "grid:x4", "grid:4x4:1", "grid:4*4", "erdos:4"} {
		_, err := Parse(spec, 1, false)
		if ue := (*usererr.Error)(nil); !errors.As(err, &ue) || ue.Kind != usererr.Usage || !strings.Contains(err.Error(), fmt.Sprintf("bad generator %q", spec)) {
			t.Errorf("%q: %v", spec, err)
		}
	}
}

// A bad generator spec is shown cut short, as other values are.
func TestParseEchoesShort(t *testing.T) {
	_, err := Parse("kronecker:"+strings.Repeat("9", 1000), 1, false)
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), `bad generator "kronecker:999`) {
		t.Errorf("error %v", err)
	}
}
