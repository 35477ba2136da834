package convert

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestGroupRowsMatchesReference: every pair of groups joined by an edge of
// out (or of in) appears once in the source group's row, ascending, and no
// other; at every ratio, at several core counts, on random graphs whose
// sizes are and are not multiples of the ratio.
func TestGroupRowsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ n, m int }{{1, 0}, {3, 5}, {33, 100}, {1000, 5000}, {70001, 300000}} {
		out := randomCSR(r, c.n, c.m)
		in := randomCSR(r, c.n, c.m)
		for logR := uint(0); logR <= MaxGroupLog; logR++ {
			for _, both := range []bool{false, true} {
				var second *CSR
				if both {
					second = in
				}
				want := refGroupRows(out, second, logR)
				for _, procs := range []int{1, 3} {
					old := runtime.GOMAXPROCS(procs)
					got := groupRows(out, second, logR)
					runtime.GOMAXPROCS(old)
					name := fmt.Sprintf("n=%d m=%d R=%d both=%v procs=%d", c.n, c.m, 1<<logR, both, procs)
					if got.LogR != logR || !slices.Equal(got.Offsets, want.Offsets) || !slices.Equal(got.Targets, want.Targets) {
						t.Fatalf("%s: grouping differs from the reference", name)
					}
				}
			}
		}
	}
}

// refGroupRows is the grouping by sets.
func refGroupRows(out, in *CSR, logR uint) *Grouped {
	n := out.NumVertices()
	groups := (n + 1<<logR - 1) >> logR
	sets := make([]map[uint32]bool, groups)
	for i := range sets {
		sets[i] = map[uint32]bool{}
	}
	for _, c := range []*CSR{out, in} {
		if c == nil {
			continue
		}
		for v := 0; v < n; v++ {
			for _, t := range c.Neighbors(uint32(v)) {
				sets[v>>logR][t>>logR] = true
			}
		}
	}
	gr := &Grouped{LogR: logR}
	gr.Offsets = []int64{0}
	for _, s := range sets {
		var row []uint32
		for g := range s {
			row = append(row, g)
		}
		slices.Sort(row)
		gr.Targets = append(gr.Targets, row...)
		gr.Offsets = append(gr.Offsets, int64(len(gr.Targets)))
	}
	return gr
}

// TestGroupedCachesAndBounds: Graph.Grouped caches, refuses ratios over 32,
// ignores both on an undirected graph, and GroupedBytes bounds the result.
func TestGroupedCachesAndBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	out := randomCSR(r, 500, 4000)
	g := &Graph{Out: *out, Directed: true}
	a, err := g.Grouped(2, true)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := g.Grouped(2, true); b != a {
		t.Error("Grouped built twice")
	}
	if _, err := g.Grouped(MaxGroupLog+1, false); err == nil {
		t.Error("a ratio of 64 was accepted")
	}
	if got := int64(len(a.Offsets))*8 + int64(len(a.Targets))*4; got > GroupedBytes(g, 2, true) {
		t.Errorf("grouping takes %d bytes, over the bound %d", got, GroupedBytes(g, 2, true))
	}
	u := &Graph{Out: *out}
	one, _ := u.Grouped(3, true)
	two, _ := u.Grouped(3, false)
	if one != two {
		t.Error("an undirected graph's groupings along both directions and along out-edges differ")
	}
}
