package convert

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/gpipe/gpipe/internal/par"
)

// Layouts and statistics for the GPU strategies, built from a graph on
// first use and cached on it, like the in-edge layout: shards.go's G-Shards
// and Concatenated Windows, and here the hubs-first numbering and the
// weights' statistics; and the CPU's sssp's uint32 weights.

// onceValue computes a value once; later calls return the first result.
type onceValue[T any] struct {
	once  sync.Once
	built atomic.Bool // v and err are set
	v     T
	err   error
}

func (o *onceValue[T]) get(build func() (T, error)) (T, error) {
	o.once.Do(func() {
		o.v, o.err = build()
		o.built.Store(true)
	})
	return o.v, o.err
}

// peek is the value if it has been computed, without computing it.
func (o *onceValue[T]) peek() (T, bool) {
	if !o.built.Load() {
		var zero T
		return zero, false
	}
	return o.v, true
}

// WeightStats says what a graph's weights are, so that the GPU can keep
// values in narrower types where that loses nothing.
type WeightStats struct {
	// Integers says every weight is an integer in [0, 2^32).
	Integers bool
	// Float32 says every weight is exactly a float32.
	Float32  bool
	Min, Max float64
}

// Weights is the statistics of g's weights (all 1 without weights),
// computed on first use and cached.
func (g *Graph) Weights() WeightStats {
	s, _ := g.weightStats.get(func() (WeightStats, error) {
		g.hostEdges()
		return weightStats(g.Out.Weights), nil
	})
	return s
}

// IntegerDistances says whether every shortest distance fits a uint32 below
// 2^32 − 1 (the mark of an unreached vertex): every weight an integer and n ·
// the largest weight below it, since a tentative distance is the length of
// a simple path, at most (n − 1) · the largest weight, and a sum made from
// one at most n · it. True without weights (all 1).
func (g *Graph) IntegerDistances() bool {
	w := g.Weights()
	return w.Integers && float64(g.NumVertices())*w.Max < math.MaxUint32
}

// Weights32 is Out's weights as uint32, in Out's edge order, where the
// distances are uint32 (IntegerDistances), else nil (and nil without
// weights). Built on first use and cached: the
// CPU's sssp reads 8 bytes an edge with it (target and weight, as GAP's
// graphs hold them) where the float64 weights make 12, which on 16 cores
// is the memory traffic of its relaxations. A part's graph (Partitions)
// gets Go memory: nothing releases a part.
func (g *Graph) Weights32() []uint32 {
	w, _ := g.weights32.get(func() ([]uint32, error) {
		g.hostEdges()
		ws := g.Out.Weights
		if ws == nil || !g.IntegerDistances() {
			return nil, nil
		}
		a := g.alloc
		if g.split != nil {
			a = nil
		}
		out := layoutSlice[uint32](a, len(ws))
		par.For(len(ws), 1<<16, func(lo, hi int) {
			for i, x := range ws[lo:hi] {
				out[lo+i] = uint32(x)
			}
		})
		return out, nil
	})
	return w
}

func weightStats(w []float64) WeightStats {
	if w == nil {
		return WeightStats{Integers: true, Float32: true, Min: 1, Max: 1}
	}
	const grain = 1 << 16
	chunks := (len(w) + grain - 1) / grain
	part := make([]WeightStats, chunks)
	par.For(len(w), grain, func(lo, hi int) {
		s := WeightStats{Integers: true, Float32: true, Min: math.Inf(1), Max: math.Inf(-1)}
		for _, x := range w[lo:hi] {
			if s.Integers && !(x >= 0 && x < 1<<32 && x == math.Trunc(x)) {
				s.Integers = false
			}
			if s.Float32 && float64(float32(x)) != x {
				s.Float32 = false
			}
			s.Min, s.Max = min(s.Min, x), max(s.Max, x)
		}
		part[lo/grain] = s
	})
	s := WeightStats{Integers: true, Float32: true, Min: math.Inf(1), Max: math.Inf(-1)}
	for _, p := range part {
		s.Integers = s.Integers && p.Integers
		s.Float32 = s.Float32 && p.Float32
		s.Min, s.Max = min(s.Min, p.Min), max(s.Max, p.Max)
	}
	if len(w) == 0 {
		s.Min, s.Max = 1, 1
	}
	return s
}

// HubOrder numbers the vertices hubs first, for the GPU's pull over the
// in-edges: a gather reads each source's value once per out-edge, so with
// the most-read values numbered together they share cache lines and stay
// in cache while the rest stream. Vertices are ordered by the bit length of
// their out-degree, largest first, then by id.
type HubOrder struct {
	// ID is each vertex's number in the hubs-first order.
	ID []uint32
	// InSources is the in-edge layout's Targets (In().Targets), each source
	// renumbered by ID; the rows stay in vertex order.
	InSources []uint32
}

// HubOrder is g's hubs-first numbering, built on first use and cached. A
// part of a partition (Partitions) numbers within each part's range, by the
// whole graph's out-degrees, so that every part's contributions keep their
// range: the GPUs exchange them by ranges.
func (g *Graph) HubOrder() *HubOrder {
	h, _ := g.hubOrder.get(func() (*HubOrder, error) {
		g.hostEdges()
		if g.split != nil {
			return g.split.hubOrder(g.In()), nil
		}
		return hubOrder(&g.Out, g.In(), []uint32{0, uint32(g.NumVertices())}), nil
	})
	return h
}

// hubOrder numbers the vertices hubs first within each range [bounds[i],
// bounds[i+1]) (ordered by the bit length of their out-degree in out,
// largest first, then by id) and renumbers in's sources.
func hubOrder(out, in *CSR, bounds []uint32) *HubOrder {
	h := &HubOrder{ID: make([]uint32, out.NumVertices())}
	for i := 0; i+1 < len(bounds); i++ {
		numberHubsFirst(out, int(bounds[i]), int(bounds[i+1]), h.ID)
	}
	h.InSources = renumbered(in.Targets, h.ID)
	return h
}

// numberHubsFirst writes into id the numbers from lo of the vertices
// [lo, hi), hubs first.
func numberHubsFirst(out *CSR, lo, hi int, id []uint32) {
	n := hi - lo
	class := func(v int) int { return 64 - bits.Len64(uint64(out.Offsets[v+1]-out.Offsets[v])) } // 0 for the largest degrees
	// A counting sort by class, stable in id: per block counts, then offsets.
	blocks := max(1, min(par.Workers(), n/4096))
	cnt := make([][65]int, blocks)
	span := func(b int) (int, int) { return lo + n*b/blocks, lo + n*(b+1)/blocks }
	par.For(blocks, 1, func(a, z int) {
		for b := a; b < z; b++ {
			x, y := span(b)
			for v := x; v < y; v++ {
				cnt[b][class(v)]++
			}
		}
	})
	pos := lo
	for c := 0; c < 65; c++ {
		for b := 0; b < blocks; b++ {
			k := cnt[b][c]
			cnt[b][c] = pos
			pos += k
		}
	}
	par.For(blocks, 1, func(a, z int) {
		for b := a; b < z; b++ {
			x, y := span(b)
			for v := x; v < y; v++ {
				c := class(v)
				id[v] = uint32(cnt[b][c])
				cnt[b][c]++
			}
		}
	})
}

// renumbered is targets with each vertex replaced by its id.
func renumbered(targets, id []uint32) []uint32 {
	r := make([]uint32, len(targets))
	par.For(len(targets), 1<<16, func(lo, hi int) {
		for e := lo; e < hi; e++ {
			r[e] = id[targets[e]]
		}
	})
	return r
}
