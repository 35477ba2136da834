package convert

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
)

// randomCSR is a CSR over n vertices with skewed degrees (some rows empty),
// rows sorted and without duplicates, weights numbering the edges.
func randomCSR(r *rand.Rand, n, m int) *CSR {
	rows := make([][]uint32, n)
	for i := 0; i < m; i++ {
		u := int(float64(n) * r.Float64() * r.Float64())
		rows[u] = append(rows[u], uint32(r.IntN(n)))
	}
	c := &CSR{Offsets: make([]int64, n+1)}
	for u, row := range rows {
		slices.Sort(row)
		row = slices.Compact(row)
		c.Targets = append(c.Targets, row...)
		c.Offsets[u+1] = int64(len(c.Targets))
	}
	for e := range c.Targets {
		c.Weights = append(c.Weights, float64(e))
	}
	return c
}

type shardEdge struct {
	u, v uint32
	w    float64
}

// checkShards checks the layout's invariants against the edges it should
// hold: each edge once, in its destination's shard, shards sorted by
// source, windows where the sources change shard, and the Concatenated
// Windows mapping every entry back to its shard entry.
func checkShards(t *testing.T, sh *Shards, n int, want []shardEdge, weighted bool) {
	t.Helper()
	S, N := sh.Count, sh.N
	if S != (n+N-1)/N || len(sh.Start) != S+1 || int(sh.Start[S]) != len(want) {
		t.Fatalf("%d shards of %d for %d vertices, %d entries (Start %v)", S, N, n, len(want), sh.Start[S:])
	}
	var got []shardEdge
	for j := 0; j < S; j++ {
		for e := sh.Start[j]; e < sh.Start[j+1]; e++ {
			v := uint32(j*N) + uint32(sh.DestIndex[e])
			if int(v) >= n || int(sh.DestIndex[e]) >= N {
				t.Fatalf("shard %d entry %d: destination %d", j, e, v)
			}
			if e > sh.Start[j] && sh.SrcIndex[e] < sh.SrcIndex[e-1] {
				t.Fatalf("shard %d is not sorted by source at entry %d", j, e)
			}
			x := shardEdge{u: sh.SrcIndex[e], v: v}
			if weighted {
				x.w = sh.Weights[e]
			}
			got = append(got, x)
		}
		for i := 0; i < S; i++ {
			lo, hi := sh.Window(i, j)
			for e := lo; e < hi; e++ {
				if int(sh.SrcIndex[e])/N != i {
					t.Fatalf("window W_%d,%d holds source %d", i, j, sh.SrcIndex[e])
				}
			}
			if i == 0 && lo != sh.Start[j] || i == S-1 && hi != sh.Start[j+1] {
				t.Fatalf("windows of shard %d do not cover it", j)
			}
		}
	}
	cmp := func(a, b shardEdge) int {
		if a.u != b.u {
			return int(a.u) - int(b.u)
		}
		if a.v != b.v {
			return int(a.v) - int(b.v)
		}
		return 0
	}
	slices.SortFunc(got, cmp)
	want = slices.Clone(want)
	slices.SortFunc(want, cmp)
	if !slices.Equal(got, want) {
		t.Fatalf("the shards hold %d edges, not the %d of the graph (or other ones)", len(got), len(want))
	}

	cw := sh.CW()
	seen := make([]bool, len(sh.SrcIndex))
	for i := 0; i < S; i++ {
		for k := cw.Start[i]; k < cw.Start[i+1]; k++ {
			p := cw.Mapper[k]
			if seen[p] {
				t.Fatalf("entry %d is mapped twice", p)
			}
			seen[p] = true
			if uint32(i*N)+uint32(cw.SrcIndex[k]) != sh.SrcIndex[p] {
				t.Fatalf("CW_%d entry %d: source %d, its shard entry %d has %d", i, k, uint32(i*N)+uint32(cw.SrcIndex[k]), p, sh.SrcIndex[p])
			}
		}
	}
	if int(cw.Start[S]) != len(seen) || slices.Contains(seen, false) {
		t.Fatalf("the concatenated windows do not map every entry once")
	}
}

func TestShardsOfRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ n, m, N int }{
		{1, 0, 1}, {5, 10, 1}, {5, 10, 2}, {100, 400, 7}, {1000, 20000, 64}, {3000, 9000, 3000}, {2500, 30000, 100},
	} {
		t.Run(fmt.Sprintf("n=%d/m=%d/N=%d", c.n, c.m, c.N), func(t *testing.T) {
			csr := randomCSR(r, c.n, c.m)
			var want []shardEdge
			for u := 0; u < c.n; u++ {
				for e := csr.Offsets[u]; e < csr.Offsets[u+1]; e++ {
					want = append(want, shardEdge{uint32(u), csr.Targets[e], csr.Weights[e]})
				}
			}
			checkShards(t, buildShards(c.n, []*CSR{csr}, csr.Weights, c.N), c.n, want, true)
		})
	}
}

func TestSymmetricShards(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	e := randomEdges(r, 300, 2000)
	for _, directed := range []bool{true, false} {
		g, err := Build(context.Background(), tableOf(r, e, edges.KeyInt64, denseKeys, 2), BuildOptions{Undirected: !directed, Weighted: true})
		if err != nil {
			t.Fatal(err)
		}
		n := g.NumVertices()
		var plain, sym []shardEdge
		for u := 0; u < n; u++ {
			for i, v := range g.Out.Neighbors(uint32(u)) {
				plain = append(plain, shardEdge{uint32(u), v, g.Out.Weights[g.Out.Offsets[u]+int64(i)]})
				sym = append(sym, shardEdge{u: uint32(u), v: v})
				if directed {
					sym = append(sym, shardEdge{u: v, v: uint32(u)})
				}
			}
		}
		sh, err := g.Shards(false)
		if err != nil {
			t.Fatal(err)
		}
		if sh.N != ShardVertices(n, g.NumEdges()) {
			t.Errorf("N = %d, want CuSha's %d", sh.N, ShardVertices(n, g.NumEdges()))
		}
		checkShards(t, sh, n, plain, true)
		ss, err := g.Shards(true)
		if err != nil {
			t.Fatal(err)
		}
		if !directed && ss != sh {
			t.Errorf("an undirected graph's symmetric shards are not its shards")
		}
		checkShards(t, ss, n, sym, false)
	}
}

func TestShardVertices(t *testing.T) {
	for _, c := range []struct {
		n    int
		m    int64
		want int
	}{
		{0, 0, 1}, {10, 0, 10}, {100000, 0, MaxShardVertices}, {10, 20, 10}, {2_400_000, 128_000_000, 1200},
		{1 << 24, 521_000_000, 4096}, {100, 1 << 40, 1},
	} {
		if got := ShardVertices(c.n, c.m); got != c.want {
			t.Errorf("ShardVertices(%d, %d) = %d, want %d", c.n, c.m, got, c.want)
		}
	}
}

func TestWeightStats(t *testing.T) {
	for _, c := range []struct {
		w    []float64
		want WeightStats
	}{
		{nil, WeightStats{true, true, 1, 1}},
		{[]float64{}, WeightStats{true, true, 1, 1}},
		{[]float64{3, 0, 255}, WeightStats{true, true, 0, 255}},
		{[]float64{1.5, 2}, WeightStats{false, true, 1.5, 2}},
		{[]float64{0.1}, WeightStats{false, false, 0.1, 0.1}},
		{[]float64{-2, 4}, WeightStats{false, true, -2, 4}},
		{[]float64{1 << 32}, WeightStats{false, true, 1 << 32, 1 << 32}},
		{[]float64{1<<24 + 1}, WeightStats{true, false, 1<<24 + 1, 1<<24 + 1}},
	} {
		if got := weightStats(c.w); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.w, got, c.want)
		}
	}
}

func TestHubOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	out := randomCSR(r, 20000, 200000)
	in, err := transpose(context.Background(), out, nil, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	n := out.NumVertices()
	// The whole graph, and the ranges of a partition (each numbered within
	// itself).
	for _, bounds := range [][]uint32{{0, uint32(n)}, {0, 4096, 4096, 10000, uint32(n)}} {
		h := hubOrder(out, &in, bounds)
		at := make([]int, n)
		for v := range at {
			at[v] = -1
		}
		for v, id := range h.ID {
			if at[id] >= 0 {
				t.Fatalf("%v: vertices %d and %d both numbered %d", bounds, at[id], v, id)
			}
			at[id] = v
		}
		for i := 0; i+1 < len(bounds); i++ {
			for id := int(bounds[i]); id < int(bounds[i+1]); id++ {
				if v := at[id]; v < int(bounds[i]) || v >= int(bounds[i+1]) {
					t.Fatalf("%v: number %d is vertex %d, outside its range", bounds, id, v)
				}
				if id == int(bounds[i]) {
					continue
				}
				a, b := uint32(at[id-1]), uint32(at[id])
				ca, cb := bits.Len64(uint64(out.Degree(a))), bits.Len64(uint64(out.Degree(b)))
				if cb > ca || (cb == ca && b < a) {
					t.Fatalf("%v: number %d is vertex %d of out-degree %d, number %d vertex %d of out-degree %d", bounds, id-1, a, out.Degree(a), id, b, out.Degree(b))
				}
			}
		}
		for e, u := range in.Targets {
			if h.InSources[e] != h.ID[u] {
				t.Fatalf("%v: in-edge %d: source %d renumbered %d, want %d", bounds, e, u, h.InSources[e], h.ID[u])
			}
		}
	}
}
