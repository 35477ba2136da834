package convert

import (
	"context"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/gpipe/gpipe/internal/par"
)

// Rows are sorted by length class: short rows by insertion sort, rows of a
// few dozen entries by a bucket sort over the row's own value range, longer
// rows by an LSD radix sort over the bits a vertex id needs, and unweighted
// rows that are long next to the number of vertices through a bitmap of the
// vertices (which sorts and dedupes in one pass). Comparison sorts lose to
// all of these on the random targets of a row: their branches mispredict.
// Rows of bigRow entries or more are done afterwards, one at a time, by all
// cores.

const (
	insertionMax = 16  // the longest row sorted by insertion
	radixMin     = 128 // the shortest row sorted by radix sort
)

// markLimit is the largest vertex count for which every worker keeps a
// bitmap of the vertices (n/8 bytes each).
const markLimit = 1 << 25

// rowSorter is one worker's scratch for sorting rows of ids below n.
type rowSorter struct {
	n      int
	idBits int
	hist   []uint32 // radix digit counts
	bhist  []uint32 // bucket counts
	t      []uint32
	w      []float64
	mark   []uint64 // n bits, all clear between rows
	marks  bool     // whether mark may be used
}

func newRowSorter(n int, marks bool) *rowSorter {
	return &rowSorter{n: n, idBits: max(bits.Len(uint(n-1)), 1), marks: marks}
}

// useMarks says whether a row of length l is best sorted through the bitmap.
func (s *rowSorter) useMarks(l int) bool { return s.marks && l >= s.n/32 }

// clean sorts row t (with weights w, or nil) and, with dedupe, merges its
// duplicate targets to the front (keeping the minimum weight); it returns the
// row's new length.
func (s *rowSorter) clean(t []uint32, w []float64, dedupe bool) int64 {
	l := len(t)
	switch {
	case l < 2:
		return int64(l)
	case w == nil && s.useMarks(l):
		// Rows without duplicates (dedupe false) keep their length.
		return s.markSort(t)
	case l <= insertionMax:
		if w == nil {
			insertion32(t)
		} else {
			insertionTW(t, w)
		}
	case l < radixMin:
		s.bucket(t, w)
	default:
		s.radix(t, w)
	}
	if !dedupe {
		return int64(l)
	}
	if w == nil {
		return dedupe32(t)
	}
	return dedupeMin(t, w)
}

func insertion32(t []uint32) {
	for i := 1; i < len(t); i++ {
		x := t[i]
		j := i
		for ; j > 0 && t[j-1] > x; j-- {
			t[j] = t[j-1]
		}
		t[j] = x
	}
}

func insertionTW(t []uint32, w []float64) {
	w = w[:len(t)]
	for i := 1; i < len(t); i++ {
		x, y := t[i], w[i]
		j := i
		for ; j > 0 && t[j-1] > x; j-- {
			t[j], w[j] = t[j-1], w[j-1]
		}
		t[j], w[j] = x, y
	}
}

// scratch is the sorter's buffers for a row of length l.
func (s *rowSorter) scratch(l int, weighted bool) ([]uint32, []float64) {
	if cap(s.t) < l {
		s.t = make([]uint32, l+l/4)
	}
	if weighted && cap(s.w) < l {
		s.w = make([]float64, l+l/4)
	}
	if weighted {
		return s.t[:l], s.w[:l]
	}
	return s.t[:l], nil
}

// bucket sorts t (and w) by distributing it into about len(t)/2 buckets of
// equal width over [min, max] of the row, then insertion sort over the whole
// (nearly sorted) row; a bucket that catches many entries (clustered values)
// is sorted first on its own.
func (s *rowSorter) bucket(t []uint32, w []float64) {
	l := len(t)
	lo, hi := t[0], t[0]
	for _, v := range t {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		return
	}
	nb := 1 << max(bits.Len(uint(l))-1, 1)
	mult := uint64(nb) << 32 / (uint64(hi-lo) + 1) // (v-lo)*mult>>32 < nb
	if cap(s.bhist) < nb+1 {
		s.bhist = make([]uint32, nb+1)
	}
	h := s.bhist[:nb+1]
	clear(h)
	for _, v := range t {
		h[uint64(v-lo)*mult>>32+1]++
	}
	for d := 1; d <= nb; d++ {
		h[d] += h[d-1]
	}
	bt, bw := s.scratch(l, w != nil)
	if w == nil {
		for _, v := range t {
			d := uint64(v-lo) * mult >> 32
			bt[h[d]] = v
			h[d]++
		}
	} else {
		for i, v := range t {
			d := uint64(v-lo) * mult >> 32
			bt[h[d]], bw[h[d]] = v, w[i]
			h[d]++
		}
	}
	// h[d] is now the end of bucket d.
	// t (and w) serve as the scratch of those sorts: bt is copied back.
	var start uint32
	for d := 0; d < nb; d++ {
		end := h[d]
		if end-start > 2*insertionMax {
			if w == nil {
				s.radixFrom(bt[start:end], nil, t[start:end], nil)
			} else {
				s.radixFrom(bt[start:end], bw[start:end], t[start:end], w[start:end])
			}
		}
		start = end
	}
	copy(t, bt)
	if w == nil {
		insertion32(t)
	} else {
		copy(w, bw)
		insertionTW(t, w)
	}
}

// radix sorts t (and w) by LSD radix sort: two passes of up to 11 bits for
// long rows, digits of up to 7 bits for shorter ones; digits that all
// entries share are skipped.
func (s *rowSorter) radix(t []uint32, w []float64) {
	bt, bw := s.scratch(len(t), w != nil)
	s.radixFrom(t, w, bt, bw)
}

// radixFrom sorts t (and w) in place by LSD radix sort, with bt (and bw) of
// the same length as scratch.
func (s *rowSorter) radixFrom(t []uint32, w []float64, bt []uint32, bw []float64) {
	l := len(t)
	maxWidth := 7
	if l >= 1024 {
		maxWidth = 11
	}
	passes := (s.idBits + maxWidth - 1) / maxWidth
	shift := uint((s.idBits + passes - 1) / passes)
	size := 1 << shift
	if cap(s.hist) < size {
		s.hist = make([]uint32, size)
	}
	hist := s.hist[:size]
	mask := uint32(size - 1)
	from, to := t, bt
	wfrom, wto := w, bw
	for p := 0; p < passes; p++ {
		sh := uint(p) * shift
		clear(hist)
		for _, v := range from {
			hist[v>>sh&mask]++
		}
		if int(hist[from[0]>>sh&mask]) == l {
			continue // one digit value: nothing to move
		}
		var sum uint32
		for d, c := range hist {
			hist[d] = sum
			sum += c
		}
		if w == nil {
			for _, v := range from {
				d := v >> sh & mask
				to[hist[d]] = v
				hist[d]++
			}
		} else {
			for i, v := range from {
				d := v >> sh & mask
				to[hist[d]], wto[hist[d]] = v, wfrom[i]
				hist[d]++
			}
			wfrom, wto = wto, wfrom
		}
		from, to = to, from
	}
	if &from[0] != &t[0] {
		copy(t, from)
		if w != nil {
			copy(w, wfrom)
		}
	}
}

// markSort sorts and dedupes t through the vertex bitmap.
func (s *rowSorter) markSort(t []uint32) int64 {
	if s.mark == nil {
		s.mark = make([]uint64, (s.n+63)/64)
	}
	mark := s.mark
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, v := range t {
		mark[v>>6] |= 1 << (v & 63)
		lo, hi = min(lo, v), max(hi, v)
	}
	k := 0
	for wi := lo >> 6; wi <= hi>>6; wi++ {
		x := mark[wi]
		if x == 0 {
			continue
		}
		mark[wi] = 0
		for ; x != 0; x &= x - 1 {
			t[k] = wi<<6 | uint32(bits.TrailingZeros64(x))
			k++
		}
	}
	return int64(k)
}

// bigRow is the length from which a row is sorted by all cores together:
// tune.bigRow where set (tests, to reach that path on small graphs).
func bigRow(total int, tune tuning) int64 {
	if tune.bigRow > 0 {
		return tune.bigRow
	}
	return int64(max(1<<16, total/(4*par.Workers())))
}

// cleanRows sorts every row [bounds(u)) of t (with its weights w, if any) by
// target. With deg set, it also merges each row's duplicate targets (keeping
// the minimum weight) to the front of the row, stores the row's new length in
// deg[u] and returns the number of targets merged away and the largest new
// length. tune is the build's (tuning.go).
func cleanRows(ctx context.Context, n int, bounds func(u int) (int64, int64), t []uint32, w []float64, deg []int64, tune tuning) (merged, maxDeg int64) {
	workers := par.Workers()
	accs := make([]rowAcc, workers)
	big := bigRow(len(t), tune)
	var bigMu sync.Mutex
	var bigRows []int
	done := ctx.Done()
	par.ForWorker(n, rowGrain, func(wk, lo, hi int) {
		if canceled(done) {
			return
		}
		a := &accs[wk]
		if a.sorter == nil {
			a.sorter = newRowSorter(n, n <= markLimit)
		}
		for u := lo; u < hi; u++ {
			rlo, rhi := bounds(u)
			if rhi-rlo >= big {
				bigMu.Lock()
				bigRows = append(bigRows, u)
				bigMu.Unlock()
				continue
			}
			var rw []float64
			if w != nil {
				rw = w[rlo:rhi]
			}
			a.finish(deg, u, rhi-rlo, a.sorter.clean(t[rlo:rhi], rw, deg != nil))
		}
	})
	if len(bigRows) > 0 {
		s := newRowSorter(n, true)
		for _, u := range bigRows {
			if ctx.Err() != nil {
				break
			}
			rlo, rhi := bounds(u)
			var rw []float64
			if w != nil {
				rw = w[rlo:rhi]
			}
			k, err := cleanBigRow(ctx, s, t[rlo:rhi], rw, deg != nil, tune.sortBlock())
			if err != nil {
				break
			}
			accs[0].finish(deg, u, rhi-rlo, k)
		}
	}
	for _, x := range accs {
		merged += x.merged
		maxDeg = max(maxDeg, x.maxDeg)
	}
	return merged, maxDeg
}

// rowAcc is a cleanRows worker's sorter and its sums over the rows it
// cleaned, on its own cache line.
type rowAcc struct {
	merged, maxDeg int64
	sorter         *rowSorter
	_              [40]byte
}

// finish records that row u, l long, is k long once cleaned: in deg[u],
// where deg is set, and in a's sums.
func (a *rowAcc) finish(deg []int64, u int, l, k int64) {
	if deg != nil {
		deg[u] = k
		a.merged += l - k
		a.maxDeg = max(a.maxDeg, k)
	}
}

// cleanBigRow is rowSorter.clean for a row of bigRow entries or more, on all
// cores, sorting blocks of block entries at a time (see psort); canceled, it
// returns ctx.Err().
func cleanBigRow(ctx context.Context, s *rowSorter, row []uint32, w []float64, dedupe bool, block int) (int64, error) {
	switch {
	case w == nil && s.useMarks(len(row)):
		return s.markSort(row), nil
	case w == nil:
		if err := psort(ctx, row, block, slices.Sort[[]uint32], func(a, b uint32) bool { return a < b }); err != nil {
			return 0, err
		}
		if dedupe {
			return dedupe32(row), nil
		}
	default:
		if err := sortBigTW(ctx, row, w, block); err != nil {
			return 0, err
		}
		if dedupe {
			return dedupeMin(row, w), nil
		}
	}
	return int64(len(row)), nil
}

// tw is a target with its weight, for sorting long weighted rows.
type tw struct {
	t uint32
	w float64
}

// sortBigTW sorts a long weighted row on all cores, through a copy, in
// blocks of block entries (see psort); canceled, it returns ctx.Err() with
// the row as it was.
func sortBigTW(ctx context.Context, t []uint32, w []float64, block int) error {
	tmp := make([]tw, len(t))
	par.For(len(t), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			tmp[i] = tw{t[i], w[i]}
		}
	})
	err := psort(ctx, tmp, block, func(xs []tw) {
		slices.SortFunc(xs, func(a, b tw) int { return int(int64(a.t) - int64(b.t)) })
	}, func(a, b tw) bool { return a.t < b.t })
	if err != nil {
		return err
	}
	par.For(len(t), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t[i], w[i] = tmp[i].t, tmp[i].w
		}
	})
	return nil
}

// dedupe32 moves the distinct targets of a sorted row to its front and
// returns their number.
func dedupe32(t []uint32) int64 {
	if len(t) == 0 {
		return 0
	}
	k := 1
	for _, v := range t[1:] {
		if v != t[k-1] {
			t[k] = v
			k++
		}
	}
	return int64(k)
}

// dedupeMin is dedupe32 for a weighted row, keeping each target's minimum
// weight (-0 before +0, so that the result does not depend on the order).
func dedupeMin(t []uint32, w []float64) int64 {
	k := 0
	w = w[:len(t)]
	for i := 0; i < len(t); {
		v, best := t[i], w[i]
		for i++; i < len(t) && t[i] == v; i++ {
			if x := w[i]; x < best || (x == best && math.Signbit(x)) {
				best = x
			}
		}
		t[k], w[k] = v, best
		k++
	}
	return int64(k)
}
