package convert

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Shards is the G-Shards layout of a graph's edges (CuSha, HPDC'14 §3.1):
// the vertices are cut into ranges of N, and shard j holds every edge whose
// destination is in [j·N, (j+1)·N), sorted by source. Entry e of shard j
// (Start[j] <= e < Start[j+1]) is the edge SrcIndex[e] → j·N + DestIndex[e],
// of weight Weights[e]. The entries of shard j whose sources lie in shard
// i's range are contiguous: the window W_ij, [Windows[j·(S+1)+i],
// Windows[j·(S+1)+i+1]), S = Count. A GPU block processes a shard with its
// N vertex values in shared memory and writes improved values back into
// the windows W_ij of every shard j (operators/gpuop/vp.go, kernels/shards.cuh).
//
// Entries are numbered by uint32, so a graph with shards has fewer than
// 2^32 edges (MaxShardEdges).
type Shards struct {
	N     int // vertices a shard, CuSha's |N|
	Count int // shards, S
	Start []uint32
	// Windows holds Count+1 entries per shard: where each window starts,
	// then the shard's end.
	Windows   []uint32
	SrcIndex  []uint32
	DestIndex []uint16  // the destination less j·N
	Weights   []float64 // nil for an unweighted graph and for symmetric shards

	cwOnce onceValue[*ConcatWindows]
}

// ConcatWindows is the Concatenated Windows layout (CuSha §3.2) over a
// graph's shards: for each shard i, the windows W_ij of all shards j, one
// after the other, as CW_i = [Start[i], Start[i+1]). Entry k of CW_i is the
// edge from i·N + SrcIndex[k], stored as entry Mapper[k] of its shard
// (whose SrcValue a block updates through the Mapper).
type ConcatWindows struct {
	Start    []uint32
	SrcIndex []uint16 // the source less i·N
	Mapper   []uint32
}

// MaxShardVertices caps N so that a shard's vertex values (8 bytes each at
// most) and a change flag each fit a block's 48 KiB of shared memory.
const MaxShardVertices = 4096

// MaxShardEdges is the most edges a graph's shards can hold.
const MaxShardEdges = math.MaxUint32

// ShardVertices is the N that CuSha chooses (§4, "Selecting shard size"):
// windows of 32 entries on average, E·N²/V² = 32, so N = V·√(32/E); at
// least 1 and at most MaxShardVertices.
func ShardVertices(n int, entries int64) int {
	if n == 0 {
		return 1
	}
	if entries == 0 {
		return min(n, MaxShardVertices)
	}
	N := int(math.Round(float64(n) * math.Sqrt(32/float64(entries))))
	return max(1, min(N, MaxShardVertices, n))
}

// ShardEntries is the number of entries g's shards hold: its stored edges,
// twice over for the symmetric shards of a directed graph.
func ShardEntries(g *Graph, symmetric bool) int64 {
	if symmetric && g.Directed {
		return 2 * g.NumEdges()
	}
	return g.NumEdges()
}

// Shards is the G-Shards layout of g, built on first use and cached. The
// plain shards hold g's edges (with their weights); the symmetric ones hold
// every edge in both directions (for weak connectivity), unweighted, and
// are the plain ones for an undirected graph.
func (g *Graph) Shards(symmetric bool) (*Shards, error) {
	if !g.Directed {
		symmetric = false
	}
	i := 0
	if symmetric {
		i = 1
	}
	return g.shards[i].get(func() (*Shards, error) { return g.buildShards(symmetric) })
}

func (g *Graph) buildShards(symmetric bool) (*Shards, error) {
	if err := g.Materialize(); err != nil {
		return nil, err
	}
	entries := ShardEntries(g, symmetric)
	if entries > MaxShardEdges {
		return nil, usererr.New(usererr.Backend, fmt.Sprintf("the graph has %d edges; G-Shards and Concatenated Windows hold at most %d", entries, int64(MaxShardEdges)),
			"use --strategy vwc (or auto)")
	}
	rows := []*CSR{&g.Out}
	if symmetric {
		rows = append(rows, g.In())
	}
	var weights []float64
	if !symmetric && g.Weighted {
		weights = g.Out.Weights
	}
	return buildShards(g.NumVertices(), rows, weights, ShardVertices(g.NumVertices(), entries)), nil
}

// buildShards makes the shards of the edges u → v for v in rows[r]'s row u,
// r in order (weights, when given, run parallel to rows[0]'s targets), N
// vertices a shard: a counting sort by shard in which blocks of sources
// count and scatter on their own, in source order, so each shard comes out
// sorted by source with no sorting.
func buildShards(n int, rows []*CSR, weights []float64, N int) *Shards {
	sh := newShards(n, rows, weights != nil, N)
	if n == 0 {
		return sh
	}
	first := sourceBlocks(n, rows, int64(len(sh.SrcIndex)))
	cnt := countShards(rows, first, N, sh.Count)
	sh.cursors(cnt, len(first)-1)
	sh.fill(rows, weights, first, cnt)
	sh.setWindows()
	return sh
}

// newShards is the empty shards of n vertices, N a shard, sized for the
// edges of rows.
func newShards(n int, rows []*CSR, weighted bool, N int) *Shards {
	S := (n + N - 1) / N
	sh := &Shards{N: N, Count: S, Start: make([]uint32, S+1), Windows: make([]uint32, S*(S+1))}
	var m int64
	for _, c := range rows {
		m += c.NumEdges()
	}
	sh.SrcIndex = make([]uint32, m)
	sh.DestIndex = make([]uint16, m)
	if weighted {
		sh.Weights = make([]float64, m)
	}
	return sh
}

// sourceBlocks cuts the n sources into blocks of about equal edge counts (m
// edges in all): block b is the sources [first[b], first[b+1]).
func sourceBlocks(n int, rows []*CSR, m int64) (first []int) {
	blocks := min(4*par.Workers(), n)
	first = make([]int, blocks+1)
	if len(rows) == 1 {
		for b := 1; b < blocks; b++ {
			want := m * int64(b) / int64(blocks)
			first[b] = sort.Search(n, func(u int) bool { return rows[0].Offsets[u] >= want })
		}
	} else {
		for b := 1; b < blocks; b++ {
			first[b] = n * b / blocks
		}
	}
	first[blocks] = n
	return first
}

// countShards counts each block's edges into each of the S shards of N
// vertices: cnt[b*S+j] is block b's edges into shard j.
func countShards(rows []*CSR, first []int, N, S int) []uint32 {
	blocks := len(first) - 1
	cnt := make([]uint32, blocks*S)
	par.For(blocks, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			cb := cnt[b*S : (b+1)*S]
			for u := first[b]; u < first[b+1]; u++ {
				for _, c := range rows {
					for _, v := range c.Targets[c.Offsets[u]:c.Offsets[u+1]] {
						cb[int(v)/N]++
					}
				}
			}
		}
	})
	return cnt
}

// cursors sets the shards' starts and turns the blocks' counts into their
// cursors, by shard-major prefix sums: block b's entries of shard j follow
// those of blocks before it.
func (sh *Shards) cursors(cnt []uint32, blocks int) {
	S := sh.Count
	var pos uint32
	for j := 0; j < S; j++ {
		sh.Start[j] = pos
		for b := 0; b < blocks; b++ {
			c := cnt[b*S+j]
			cnt[b*S+j] = pos
			pos += c
		}
	}
	sh.Start[S] = pos
}

// fill puts each block's edges into the shards through the block's
// cursors, in source order.
func (sh *Shards) fill(rows []*CSR, weights []float64, first []int, cnt []uint32) {
	N, S := sh.N, sh.Count
	par.For(len(first)-1, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			cb := cnt[b*S : (b+1)*S]
			for u := first[b]; u < first[b+1]; u++ {
				for r, c := range rows {
					lo, hi := c.Offsets[u], c.Offsets[u+1]
					for e := lo; e < hi; e++ {
						v := int(c.Targets[e])
						j := v / N
						p := cb[j]
						cb[j]++
						sh.SrcIndex[p] = uint32(u)
						sh.DestIndex[p] = uint16(v - j*N)
						if r == 0 && weights != nil {
							sh.Weights[p] = weights[e]
						}
					}
				}
			}
		}
	})
}

// setWindows finds the windows: each shard is sorted by source, so one
// merge per shard.
func (sh *Shards) setWindows() {
	S, N := sh.Count, sh.N
	par.For(S, 1, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			w := sh.Windows[j*(S+1) : (j+1)*(S+1)]
			p, end := sh.Start[j], sh.Start[j+1]
			for i := 0; i < S; i++ {
				bound := uint32(i * N)
				for p < end && sh.SrcIndex[p] < bound {
					p++
				}
				w[i] = p
			}
			w[S] = end
		}
	})
}

// Window is W_ij: the entries of shard j whose sources are in shard i.
func (s *Shards) Window(i, j int) (lo, hi uint32) {
	w := s.Windows[j*(s.Count+1):]
	return w[i], w[i+1]
}

// CW is the Concatenated Windows layout over s, built on first use and
// cached.
func (s *Shards) CW() *ConcatWindows {
	cw, _ := s.cwOnce.get(func() (*ConcatWindows, error) { return s.buildCW(), nil })
	return cw
}

func (s *Shards) buildCW() *ConcatWindows {
	S, N := s.Count, s.N
	cw := &ConcatWindows{Start: make([]uint32, S+1), SrcIndex: make([]uint16, len(s.SrcIndex)), Mapper: make([]uint32, len(s.SrcIndex))}
	size := make([]uint32, S)
	par.For(S, 16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var k uint32
			for j := 0; j < S; j++ {
				a, b := s.Window(i, j)
				k += b - a
			}
			size[i] = k
		}
	})
	var pos uint32
	for i, k := range size {
		cw.Start[i] = pos
		pos += k
	}
	cw.Start[S] = pos
	par.For(S, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k := cw.Start[i]
			base := uint32(i * N)
			for j := 0; j < S; j++ {
				a, b := s.Window(i, j)
				for p := a; p < b; p++ {
					cw.SrcIndex[k] = uint16(s.SrcIndex[p] - base)
					cw.Mapper[k] = p
					k++
				}
			}
		}
	})
	return cw
}
