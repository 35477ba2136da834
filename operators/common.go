package operators

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Helpers shared by the CPU implementations. Hot loops use plain slices and
// sync/atomic on uint32/uint64; fan-out goes through internal/par.

// CheckSource checks that in.Source is a vertex of in.Graph (the CPU and
// the GPU backends check it before they run).
func CheckSource(op string, in Input) error {
	n := in.Graph.NumVertices()
	if int64(in.Source) >= int64(n) {
		return usererr.Newf(usererr.Usage, "operator %s: source vertex id %d is out of range (the graph has %d vertices)", op, in.Source, n)
	}
	return nil
}

// onWorkers runs fn(w) once for each worker index w in [0, par.Workers()),
// in parallel where the runtime allows. Two indices may run one after the
// other on the same goroutine, so fn must not wait for another worker.
func onWorkers(fn func(w int)) {
	par.ForWorker(par.Workers(), 1, func(_, lo, _ int) { fn(lo) })
}

// fillU32 sets every element of s to v, in parallel.
func fillU32(s []uint32, v uint32) {
	par.For(len(s), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s[i] = v
		}
	})
}

// fillI32 sets every element of s to v, in parallel.
func fillI32(s []int32, v int32) {
	par.For(len(s), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s[i] = v
		}
	})
}

// fillU64 sets every element of s to v, in parallel.
func fillU64(s []uint64, v uint64) {
	par.For(len(s), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s[i] = v
		}
	})
}

// bitmap is a set of vertex ids, 64 to a word.
type bitmap []uint64

// setAtomic sets bit i where other goroutines set bits of the same word.
func (b bitmap) setAtomic(i uint32) {
	p := &b[i>>6]
	bit := uint64(1) << (i & 63)
	for {
		old := atomic.LoadUint64(p)
		if old&bit != 0 || atomic.CompareAndSwapUint64(p, old, old|bit) {
			return
		}
	}
}

func (b bitmap) clear() {
	par.For(len(b), 1<<14, func(lo, hi int) { clear(b[lo:hi]) })
}

// bins are one worker's Δ-stepping buckets: a ring of vertex lists indexed
// by bucket number modulo its length, with a bitmap of the non-empty ones so
// that finding the next bucket costs a word per 64 buckets. Every bucket that
// holds vertices lies within one ring length of the current one.
type bins struct {
	lists    [][]uint32
	nonEmpty []uint64
	mask     uint64
	spare    []uint32 // a drained list kept for reuse by take
}

// ringLength is span rounded up to a power of two, at least 64.
func ringLength(span uint64) uint64 {
	size := uint64(64)
	for size < span {
		size <<= 1
	}
	return size
}

// newBins makes a ring of at least span buckets (rounded up to a power of two,
// at least 64).
func newBins(span uint64) *bins {
	size := ringLength(span)
	return &bins{lists: make([][]uint32, size), nonEmpty: make([]uint64, size/64), mask: size - 1}
}

// push adds v to bucket b.
func (bs *bins) push(b uint64, v uint32) {
	i := b & bs.mask
	bs.lists[i] = append(bs.lists[i], v)
	bs.nonEmpty[i>>6] |= 1 << (i & 63)
}

// size is the length of bucket b.
func (bs *bins) size(b uint64) int { return len(bs.lists[b&bs.mask]) }

// peek is bucket b's vertices, left in it.
func (bs *bins) peek(b uint64) []uint32 { return bs.lists[b&bs.mask] }

// take empties bucket b and returns what it held; the slice stays valid
// until the next take.
func (bs *bins) take(b uint64) []uint32 {
	i := b & bs.mask
	l := bs.lists[i]
	bs.lists[i] = bs.spare[:0]
	bs.spare = l
	bs.nonEmpty[i>>6] &^= 1 << (i & 63)
	return l
}

// swap empties bucket b, which keeps buf's storage, and returns what b
// held; the slice belongs to the caller.
func (bs *bins) swap(b uint64, buf []uint32) []uint32 {
	i := b & bs.mask
	l := bs.lists[i]
	bs.lists[i] = buf[:0]
	bs.nonEmpty[i>>6] &^= 1 << (i & 63)
	return l
}

// next is the first non-empty bucket at or after cur, scanning one ring
// length; ok is false when all are empty.
func (bs *bins) next(cur uint64) (b uint64, ok bool) {
	size := bs.mask + 1
	words := uint64(len(bs.nonEmpty))
	start := cur & bs.mask
	w := start >> 6
	// The first word, masked to the positions at or after start.
	m := bs.nonEmpty[w] &^ (1<<(start&63) - 1)
	for k := uint64(0); k <= words; k++ {
		if m != 0 {
			pos := w<<6 + uint64(bits.TrailingZeros64(m))
			return cur + (pos-start+size)&bs.mask, true
		}
		w = (w + 1) % words
		m = bs.nonEmpty[w]
		if k+1 == words {
			// Back at the first word: only the positions before start.
			m &= 1<<(start&63) - 1
		}
	}
	return 0, false
}

// Scratch buffers that a run needs only while it runs (queues, bitmaps,
// PageRank's contribution vectors) come from pools, so that repeated runs
// on one graph reuse memory instead of faulting in fresh pages each time.
// Their contents are whatever the last user left: callers initialise them.
var (
	scratchU32 sync.Pool // *[]uint32
	scratchU64 sync.Pool // *[]uint64
	scratchF32 sync.Pool // *[]float32
	scratchF64 sync.Pool // *[]float64
)

func getScratch[T any](p *sync.Pool, n int) []T {
	if s, ok := p.Get().(*[]T); ok && cap(*s) >= n {
		return (*s)[:n]
	}
	return make([]T, n)
}

func putScratch[T any](p *sync.Pool, s []T) {
	if cap(s) > 0 {
		p.Put(&s)
	}
}
