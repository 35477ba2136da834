package convert

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// tooManyVertices is the error for a table with more than limit (the
// build's tune.vertexLimit) distinct keys, n of them.
func tooManyVertices(t *edges.Table, n string, limit int64) error {
	return usererr.InFile(t.Name, fmt.Sprintf("the edges have %s distinct vertex keys, more than the %d vertices a graph can have", n, limit),
		"split the graph, or drop edges (filter the input) before loading it")
}

// renumber maps every key to its rank among the distinct keys of the edges
// not marked in drop. It returns the keys in rank order and the endpoints'
// ids (NoVertex sources for dropped edges). tune is the build's (tuning.go).
func renumber(ctx context.Context, t *edges.Table, spans []span, drop []uint64, tune tuning) (*VertexKeys, edgeIDs, error) {
	k := &VertexKeys{Type: t.KeyType, ArrowType: keyArrowType(t)}
	var ids edgeIDs
	var err error
	switch t.KeyType {
	case edges.KeyInt32:
		k.Int32, ids, err = renumberInts[int32](ctx, t, spans, drop, tune)
	case edges.KeyInt64:
		k.Int64, ids, err = renumberInts[int64](ctx, t, spans, drop, tune)
	case edges.KeyUint32:
		k.Uint32, ids, err = renumberInts[uint32](ctx, t, spans, drop, tune)
	case edges.KeyUint64:
		k.Uint64, ids, err = renumberInts[uint64](ctx, t, spans, drop, tune)
	case edges.KeyString:
		st := newStoredIDs(t)
		k.Str, err = renumberStrings(ctx, newHashedEdges(t, spans, drop, st, tune))
		ids = st
	default:
		return nil, nil, usererr.InFile(t.Name, fmt.Sprintf("unsupported key type %v", t.KeyType), "")
	}
	if err != nil {
		return nil, nil, err
	}
	return k, ids, nil
}

// edgeIDs gives the ids of the endpoints of a span's edges, with NoVertex
// as the source of a dropped edge.
type edgeIDs interface {
	// ids returns the span's source and destination ids; they may live in
	// buf, which each worker keeps for itself.
	ids(s *span, buf *idBuf) (src, dst []uint32)
}

// idBuf is a worker's room for one span's ids.
type idBuf struct{ src, dst []uint32 }

func (b *idBuf) get(n int) ([]uint32, []uint32) {
	if cap(b.src) < n {
		b.src, b.dst = make([]uint32, spanLen), make([]uint32, spanLen)
	}
	return b.src[:n], b.dst[:n]
}

// storedIDs are ids worked out once and kept for every edge (8 bytes an
// edge), where finding an id costs a hash lookup.
type storedIDs struct{ src, dst []uint32 }

func newStoredIDs(t *edges.Table) *storedIDs {
	m := int(t.NumEdges())
	ids := bigSlice[uint32](2 * m)
	return &storedIDs{src: ids[:m:m], dst: ids[m:]}
}

func (e *storedIDs) ids(s *span, _ *idBuf) ([]uint32, []uint32) {
	i0, i1 := s.base+s.lo, s.base+s.hi
	return e.src[i0:i1], e.dst[i0:i1]
}

// rankedIDs are ids worked out from the keys each time they are needed, by a
// lookup in the rank bitmap of renumberDirect (cheap: the bitmap is small).
type rankedIDs[T intKey] struct {
	words []rankWord
	lo    uint64
	drop  []uint64
}

func (e *rankedIDs[T]) ids(s *span, buf *idBuf) ([]uint32, []uint32) {
	sk, dk := column[T](&s.c.Src)[s.lo:s.hi], column[T](&s.c.Dst)[s.lo:s.hi]
	ss, ds := buf.get(len(sk))
	if e.drop == nil {
		rankKeys(sk, e.lo, e.words, ss)
		rankKeys(dk, e.lo, e.words, ds)
		return ss, ds
	}
	i0 := s.base + s.lo
	for j := range sk {
		if isDropped(e.drop, i0+j) {
			ss[j], ds[j] = NoVertex, NoVertex
			continue
		}
		rankKeys(sk[j:j+1], e.lo, e.words, ss[j:j+1])
		rankKeys(dk[j:j+1], e.lo, e.words, ds[j:j+1])
	}
	return ss, ds
}

type intKey interface {
	int32 | int64 | uint32 | uint64
}

// column is the chunk keys' slice of type T.
func column[T intKey](k *edges.Keys) []T {
	var z T
	switch any(z).(type) {
	case int32:
		return any(k.Int32).([]T)
	case int64:
		return any(k.Int64).([]T)
	case uint32:
		return any(k.Uint32).([]T)
	default:
		return any(k.Uint64).([]T)
	}
}

// ord maps a key to a uint64 of the same order: the sign bit of a signed key
// (sign-extended) is flipped.
func ord[T intKey](v T) uint64 {
	u := uint64(int64(v))
	if ^T(0) < 0 {
		u ^= 1 << 63
	}
	return u
}

// unord is the inverse of ord.
func unord[T intKey](u uint64) T {
	if ^T(0) < 0 {
		u ^= 1 << 63
	}
	return T(int64(u))
}

// directLimit is the widest key range that renumberInts maps through a
// bitmap (with a rank per word: 12 bytes per 64 keys of range) rather than a
// hash table.
func directLimit(endpoints int) uint64 { return max(1<<26, 8*uint64(endpoints)) }

func renumberInts[T intKey](ctx context.Context, t *edges.Table, spans []span, drop []uint64, tune tuning) ([]T, edgeIDs, error) {
	// The range of the keys.
	workers := par.Workers()
	type minMax struct {
		lo, hi uint64
		_      [48]byte // no false sharing
	}
	mm := make([]minMax, workers)
	for w := range mm {
		mm[w].lo, mm[w].hi = math.MaxUint64, 0
	}
	forSpans(ctx, spans, func(w int, s *span) {
		sk, dk := column[T](&s.c.Src)[s.lo:s.hi], column[T](&s.c.Dst)[s.lo:s.hi]
		dk = dk[:len(sk)]
		lo, hi := mm[w].lo, mm[w].hi
		for j := range sk {
			if drop != nil && isDropped(drop, s.base+s.lo+j) {
				continue
			}
			a, b := ord(sk[j]), ord(dk[j])
			lo, hi = min(lo, a, b), max(hi, a, b)
		}
		mm[w].lo, mm[w].hi = lo, hi
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, x := range mm {
		lo, hi = min(lo, x.lo), max(hi, x.hi)
	}
	if lo > hi { // no edges
		return nil, &storedIDs{}, nil
	}
	if hi-lo < directLimit(2*int(t.NumEdges())) {
		return renumberDirect[T](ctx, t, spans, drop, lo, hi-lo+1, tune.vertexLimit())
	}
	ids := newStoredIDs(t)
	keys, err := renumberHashed[T](ctx, newHashedEdges(t, spans, drop, ids, tune))
	return keys, ids, err
}

// renumberDirect renumbers keys whose ordinals lie in [lo, lo+r): a bitmap
// marks the keys present, per-word ranks turn it into ids. More than limit
// keys are an error.
func renumberDirect[T intKey](ctx context.Context, t *edges.Table, spans []span, drop []uint64, lo, r uint64, limit int64) ([]T, edgeIDs, error) {
	words := make([]rankWord, int((r+63)/64))
	if err := markDirect[T](ctx, t, spans, drop, lo, words); err != nil {
		return nil, nil, err
	}
	counts := wordCounts(words)
	if n := counts[len(counts)-1]; n > limit {
		return nil, nil, tooManyVertices(t, fmt.Sprint(n), limit)
	}
	keys := rankWords[T](words, counts, lo)
	return keys, &rankedIDs[T]{words: words, lo: lo, drop: drop}, nil
}

// markDirect sets the presence bits of the keys (ordinals less lo) of the
// edges not dropped in words.
func markDirect[T intKey](ctx context.Context, t *edges.Table, spans []span, drop []uint64, lo uint64, words []rankWord) error {
	nw := len(words)
	// Each worker marks its own bitmap where they fit in little memory:
	// shared words would bounce between the cores' caches on every new key.
	workers := par.Workers()
	var private [][]uint64
	if workers > 1 && int64(workers)*int64(nw)*8 <= max(1<<24, 2*t.NumEdges()) {
		private = make([][]uint64, workers)
	}
	forSpans(ctx, spans, func(wk int, s *span) {
		sk, dk := column[T](&s.c.Src)[s.lo:s.hi], column[T](&s.c.Dst)[s.lo:s.hi]
		if private != nil {
			if private[wk] == nil {
				private[wk] = make([]uint64, nw)
			}
			bm := private[wk]
			for j := range sk {
				if drop == nil || !isDropped(drop, s.base+s.lo+j) {
					a, b := ord(sk[j])-lo, ord(dk[j])-lo
					bm[a>>6] |= 1 << (a & 63)
					bm[b>>6] |= 1 << (b & 63)
				}
			}
			return
		}
		if drop == nil {
			markKeys(sk, lo, words)
			markKeys(dk, lo, words)
			return
		}
		for j := range sk {
			if !isDropped(drop, s.base+s.lo+j) {
				markKeys(sk[j:j+1], lo, words)
				markKeys(dk[j:j+1], lo, words)
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if private != nil {
		orBitmaps(words, private)
	}
	return nil
}

// orBitmaps ORs the workers' bitmaps (nil for a worker that had no span)
// into the presence bits of words.
func orBitmaps(words []rankWord, private [][]uint64) {
	par.For(len(words), 1<<12, func(lo, hi int) {
		for _, bm := range private {
			if bm == nil {
				continue
			}
			for i, x := range bm[lo:hi] {
				words[lo+i].bits |= x
			}
		}
	})
}

// wordCounts is the number of keys before each block of words (par.Blocks),
// then the number of keys in all.
func wordCounts(words []rankWord) []int64 {
	nw := len(words)
	counts := make([]int64, par.NumBlocks(nw)+1)
	par.Blocks(nw, func(b, blo, bhi int) {
		var c int
		for _, x := range words[blo:bhi] {
			c += bits.OnesCount64(x.bits)
		}
		counts[b+1] = int64(c)
	})
	for b := 1; b < len(counts); b++ {
		counts[b] += counts[b-1]
	}
	return counts
}

// rankWords sets the rank of each word, the number of keys before it, from
// its block's count, and returns the keys (ordinals less lo) in rank order.
func rankWords[T intKey](words []rankWord, counts []int64, lo uint64) []T {
	keys := make([]T, counts[len(counts)-1])
	par.Blocks(len(words), func(b, blo, bhi int) {
		c := uint32(counts[b])
		for w := blo; w < bhi; w++ {
			words[w].rank = c
			for x := words[w].bits; x != 0; x &= x - 1 {
				keys[c] = unord[T](lo + uint64(w)<<6 + uint64(bits.TrailingZeros64(x)))
				c++
			}
		}
	})
	return keys
}

// rankWord is 64 keys' presence bits and the number of keys before them, side
// by side so that a lookup touches one cache line.
type rankWord struct {
	bits uint64
	rank uint32
}

// markKeys sets the presence bits of keys (ordinals less lo).
func markKeys[T intKey](keys []T, lo uint64, words []rankWord) {
	for _, k := range keys {
		o := ord(k) - lo
		p := &words[o>>6].bits
		if b := uint64(1) << (o & 63); atomic.LoadUint64(p)&b == 0 {
			atomic.OrUint64(p, b)
		}
	}
}

// rankKeys writes the ids of keys to ids.
func rankKeys[T intKey](keys []T, lo uint64, words []rankWord, ids []uint32) {
	ids = ids[:len(keys)]
	for j, k := range keys {
		o := ord(k) - lo
		w := &words[o>>6]
		ids[j] = w.rank + uint32(bits.OnesCount64(w.bits&(1<<(o&63)-1)))
	}
}

// renumberHashed renumbers keys of a wide range: the distinct keys go into a
// hash table (each endpoint's slot noted in e.src/e.dst), are sorted, and
// the slots are then replaced by the ranks.
func renumberHashed[T intKey](ctx context.Context, e *hashedEdges) ([]T, error) {
	size, err := sketchInts[T](ctx, e)
	if err != nil {
		return nil, err
	}
	tab, err := hashInts[T](ctx, e, size)
	if err != nil {
		return nil, err
	}
	distinct, err := sortedKeys(ctx, e, tab)
	if err != nil {
		return nil, err
	}
	keys, rankOf := rankInts[T](ctx, tab, distinct)
	relabel(ctx, e.spans, e.src, e.dst, rankOf)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return keys, nil
}

// hashedEdges is the edges of a renumbering through a hash table: the table
// and its spans, the edges dropped (nil: none), src and dst, which note
// each endpoint's slot (NoVertex for a dropped edge's source) and then its
// id, and the build's tuning (the tables' size, the limit on vertices, the
// sort's blocks).
type hashedEdges struct {
	t        *edges.Table
	spans    []span
	drop     []uint64
	src, dst []uint32
	tune     tuning
}

// newHashedEdges is the edges of t to renumber through a hash table, their
// slots and then their ids noted in ids.
func newHashedEdges(t *edges.Table, spans []span, drop []uint64, ids *storedIDs, tune tuning) *hashedEdges {
	return &hashedEdges{t: t, spans: spans, drop: drop, src: ids.src, dst: ids.dst, tune: tune}
}

// sketchInts is the number of slots for the distinct keys of the edges, as
// a HyperLogLog sketch of them estimates it.
func sketchInts[T intKey](ctx context.Context, e *hashedEdges) (int64, error) {
	drop := e.drop
	sketches := make([]hll, par.Workers())
	forSpans(ctx, e.spans, func(w int, s *span) {
		sk, dk := column[T](&s.c.Src)[s.lo:s.hi], column[T](&s.c.Dst)[s.lo:s.hi]
		dk = dk[:len(sk)]
		h := &sketches[w]
		for j := range sk {
			if drop != nil && isDropped(drop, s.base+s.lo+j) {
				continue
			}
			h.add(mix64(ord(sk[j])))
			h.add(mix64(ord(dk[j])))
		}
	})
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return sketchSlots(sketches, e.tune), nil
}

// sketchSlots merges the workers' sketches and returns the number of slots
// for the distinct keys they estimate.
func sketchSlots(sketches []hll, tune tuning) int64 {
	for w := 1; w < len(sketches); w++ {
		sketches[0].merge(&sketches[w])
	}
	return tableSlots(sketches[0].estimate(), len(sketches), tune)
}

// hashInts inserts every key into a table of size slots, rebuilt twice as
// large while it fills, and notes each endpoint's slot.
func hashInts[T intKey](ctx context.Context, e *hashedEdges, size int64) (*intTable, error) {
	for {
		tab := newIntTable(size)
		insertInts[T](ctx, e, tab)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !tab.full.Load() {
			return tab, nil
		}
		if size == maxSlots {
			return nil, tooManyVertices(e.t, fmt.Sprintf("more than %d", tab.limit), e.tune.vertexLimit())
		}
		size = min(2*size, maxSlots)
	}
}

// insertInts is one pass of hashInts: it stops early once tab is full.
func insertInts[T intKey](ctx context.Context, e *hashedEdges, tab *intTable) {
	drop, src, dst := e.drop, e.src, e.dst
	forSpans(ctx, e.spans, func(_ int, s *span) {
		if tab.full.Load() {
			return
		}
		sk, dk := column[T](&s.c.Src)[s.lo:s.hi], column[T](&s.c.Dst)[s.lo:s.hi]
		i0 := s.base + s.lo
		ss, ds := src[i0:i0+len(sk)], dst[i0:i0+len(sk)]
		dk = dk[:len(sk)]
		var fresh int64
		for j := range sk {
			if drop != nil && isDropped(drop, i0+j) {
				ss[j] = NoVertex
				continue
			}
			var n1, n2 bool
			ss[j], n1 = tab.insert(ord(sk[j]))
			ds[j], n2 = tab.insert(ord(dk[j]))
			if n1 {
				fresh++
			}
			if n2 {
				fresh++
			}
			if fresh >= flushEvery {
				if !tab.addCount(fresh) {
					return
				}
				fresh = 0
			}
		}
		tab.addCount(fresh)
	})
}

// sortedKeys is the distinct keys (ordinals) of e in tab, sorted.
func sortedKeys(ctx context.Context, e *hashedEdges, tab *intTable) ([]uint64, error) {
	distinct, err := occupied(ctx, tab.slots)
	if err != nil {
		return nil, err
	}
	if tab.zero.Load() {
		distinct = append(distinct, 0)
	}
	if limit := e.tune.vertexLimit(); int64(len(distinct)) > limit {
		return nil, tooManyVertices(e.t, fmt.Sprint(len(distinct)), limit)
	}
	if err := psort(ctx, distinct, e.tune.sortBlock(), slices.Sort[[]uint64], func(a, b uint64) bool { return a < b }); err != nil {
		return nil, err
	}
	return distinct, nil
}

// rankInts is the keys of the sorted distinct ordinals and, for each slot
// of tab, the id of its key (rankOf[slot]). Canceled, it stops part done.
func rankInts[T intKey](ctx context.Context, tab *intTable, distinct []uint64) ([]T, []uint32) {
	rankOf := make([]uint32, len(tab.slots)+1)
	keys := make([]T, len(distinct))
	par.For(len(distinct), 1<<14, func(lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		for i := lo; i < hi; i++ {
			rankOf[tab.find(distinct[i])] = uint32(i)
			keys[i] = unord[T](distinct[i])
		}
	})
	return keys, rankOf
}

// occupied is the non-zero values of slots, gathered in parallel.
func occupied(ctx context.Context, slots []uint64) ([]uint64, error) {
	nb := par.NumBlocks(len(slots))
	counts := make([]int, nb+1)
	par.Blocks(len(slots), func(b, lo, hi int) {
		c := 0
		for _, x := range slots[lo:hi] {
			if x != 0 {
				c++
			}
		}
		counts[b+1] = c
	})
	for b := 1; b <= nb; b++ {
		counts[b] += counts[b-1]
	}
	out := make([]uint64, counts[nb], counts[nb]+1)
	par.Blocks(len(slots), func(b, lo, hi int) {
		c := counts[b]
		for _, x := range slots[lo:hi] {
			if x != 0 {
				out[c] = x
				c++
			}
		}
	})
	return out, ctx.Err()
}

// relabel replaces the slot numbers in src and dst by their ranks, leaving
// dropped edges (src NoVertex) alone.
func relabel(ctx context.Context, spans []span, src, dst []uint32, rankOf []uint32) {
	forSpans(ctx, spans, func(_ int, s *span) {
		i0, i1 := s.base+s.lo, s.base+s.hi
		ss, ds := src[i0:i1], dst[i0:i1]
		ds = ds[:len(ss)]
		for j, a := range ss {
			if a == NoVertex {
				continue
			}
			ss[j], ds[j] = rankOf[a], rankOf[ds[j]]
		}
	})
}

// renumberStrings renumbers string keys, in bytewise order, through a hash
// table of references into the key columns.
func renumberStrings(ctx context.Context, e *hashedEdges) (*edges.Strings, error) {
	size, err := sketchStrings(ctx, e)
	if err != nil {
		return nil, err
	}
	tab, err := hashStrings(ctx, e, size)
	if err != nil {
		return nil, err
	}
	order, err := sortedSlots(ctx, e, tab)
	if err != nil {
		return nil, err
	}
	keys, rankOf, err := stringKeys(ctx, tab, order)
	if err != nil {
		return nil, err
	}
	relabel(ctx, e.spans, e.src, e.dst, rankOf)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return keys, nil
}

// sketchStrings is sketchInts for string keys.
func sketchStrings(ctx context.Context, e *hashedEdges) (int64, error) {
	drop := e.drop
	sketches := make([]hll, par.Workers())
	forSpans(ctx, e.spans, func(w int, s *span) {
		ks, kd := s.c.Src.Str, s.c.Dst.Str
		h := &sketches[w]
		for j := s.lo; j < s.hi; j++ {
			if drop != nil && isDropped(drop, s.base+j) {
				continue
			}
			h.add(hashBytes(ks.At(j)))
			h.add(hashBytes(kd.At(j)))
		}
	})
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return sketchSlots(sketches, e.tune), nil
}

// hashStrings is hashInts for string keys.
func hashStrings(ctx context.Context, e *hashedEdges, size int64) (*strTable, error) {
	for {
		tab := newStrTable(size, e.spans)
		insertStrings(ctx, e, tab)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !tab.full.Load() {
			return tab, nil
		}
		if size == maxSlots {
			return nil, tooManyVertices(e.t, fmt.Sprintf("more than %d", tab.limit), e.tune.vertexLimit())
		}
		size = min(2*size, maxSlots)
	}
}

// insertStrings is one pass of hashStrings: it stops early once tab is
// full.
func insertStrings(ctx context.Context, e *hashedEdges, tab *strTable) {
	drop, src, dst := e.drop, e.src, e.dst
	forSpans(ctx, e.spans, func(_ int, s *span) {
		if tab.full.Load() {
			return
		}
		ks, kd := s.c.Src.Str, s.c.Dst.Str
		var fresh int64
		for j := s.lo; j < s.hi; j++ {
			i := s.base + j
			if drop != nil && isDropped(drop, i) {
				src[i] = NoVertex
				continue
			}
			a, b := ks.At(j), kd.At(j)
			var n1, n2 bool
			src[i], n1 = tab.insert(a, hashBytes(a), strRef(s.idx, j, 0, s))
			dst[i], n2 = tab.insert(b, hashBytes(b), strRef(s.idx, j, 1, s))
			if n1 {
				fresh++
			}
			if n2 {
				fresh++
			}
			if fresh >= flushEvery {
				if !tab.addCount(fresh) {
					return
				}
				fresh = 0
			}
		}
		tab.addCount(fresh)
	})
}

// sortedSlots is the occupied slots of tab, e's distinct keys, sorted by
// their strings.
func sortedSlots(ctx context.Context, e *hashedEdges, tab *strTable) ([]uint32, error) {
	nb := par.NumBlocks(len(tab.slots))
	counts := make([]int, nb+1)
	par.Blocks(len(tab.slots), func(b, lo, hi int) {
		c := 0
		for i := range tab.slots[lo:hi] {
			if tab.slots[lo+i].state.Load() != 0 {
				c++
			}
		}
		counts[b+1] = c
	})
	for b := 1; b <= nb; b++ {
		counts[b] += counts[b-1]
	}
	n := counts[nb]
	if limit := e.tune.vertexLimit(); int64(n) > limit {
		return nil, tooManyVertices(e.t, fmt.Sprint(n), limit)
	}
	order := make([]uint32, n)
	par.Blocks(len(tab.slots), func(b, lo, hi int) {
		c := counts[b]
		for i := lo; i < hi; i++ {
			if tab.slots[i].state.Load() != 0 {
				order[c] = uint32(i)
				c++
			}
		}
	})
	err := psort(ctx, order, e.tune.sortBlock(), func(xs []uint32) { slices.SortFunc(xs, tab.compare) },
		func(a, b uint32) bool { return tab.compare(a, b) < 0 })
	if err != nil {
		return nil, err
	}
	return order, nil
}

// stringKeys is the keys of the slots in order, in id order, and for each
// slot of tab the id of its key (rankOf[slot]). Canceled while it copies
// the keys, it stops part done (the caller checks ctx.Err).
func stringKeys(ctx context.Context, tab *strTable, order []uint32) (*edges.Strings, []uint32, error) {
	n := len(order)
	keys := &edges.Strings{Offsets: make([]int64, n+1)}
	rankOf := make([]uint32, len(tab.slots))
	par.For(n, 1<<14, func(lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		for i := lo; i < hi; i++ {
			keys.Offsets[i] = int64(tab.length(order[i]))
			rankOf[order[i]] = uint32(i)
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	size64 := par.PrefixSum(keys.Offsets)
	keys.Data = make([]byte, size64)
	par.For(n, 1<<14, func(lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		for i := lo; i < hi; i++ {
			sl := &tab.slots[order[i]]
			to := keys.Data[keys.Offsets[i]:keys.Offsets[i+1]]
			if len(to) <= 16 {
				var buf [16]byte
				binary.BigEndian.PutUint64(buf[:8], sl.pre[0])
				binary.BigEndian.PutUint64(buf[8:], sl.pre[1])
				copy(to, buf[:])
			} else {
				copy(to, tab.key(order[i]))
			}
		}
	})
	return keys, rankOf, nil
}
