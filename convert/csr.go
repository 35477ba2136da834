package convert

import (
	"context"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
)

// rowGrain is the number of rows a worker takes at a time.
const rowGrain = 256

// padded is a per-worker counter on its own cache line.
type padded struct {
	n int64
	_ [56]byte
}

// blockedCounts says whether a counting sort of m entries into n rows may
// use one uint32 counter per block and row (blocks·n·4 bytes, no atomics,
// stable) rather than shared atomic counters: the entries must fit uint32
// cursors and the counters must be small next to the edges. Tests turn the
// atomic counters on (tune.atomicCounts), since only many cores and
// vertices reach them.
func blockedCounts(blocks, n int, m int64, tune tuning) bool {
	if tune.atomicCounts {
		return false
	}
	return m < 1<<32-1 && int64(blocks)*int64(n)*4 <= max(2*m, 1<<24)
}

// buildCSR builds the out-edge layout of the edges src[i] -> dst[i] (both
// directions when undirected), skipping dropped edges (src NoVertex): a
// counting sort by source, then every row sorted, cleared of duplicates (the
// minimum weight kept) and copied, by a second prefix sum, into layouts from
// opts.Alloc.
//
// The counting sort gives each worker a block of edges and its own counter
// per row, so that it counts and scatters without atomics; where those
// counters would take too much memory (many cores, many vertices) it uses
// one atomic counter per row, as GAP does.
func buildCSR(ctx context.Context, n int, ids edgeIDs, spans []span, opts BuildOptions, st *Stats) (CSR, error) {
	a := opts.Alloc
	if n == 0 { // no vertices, so every edge was dropped
		c := CSR{Offsets: layoutSlice[int64](a, 1), Targets: layoutSlice[uint32](a, 0)}
		if opts.Weighted {
			c.Weights = layoutSlice[float64](a, 0)
		}
		return c, nil
	}
	sc, err := scatter(ctx, n, ids, spans, opts)
	if err != nil {
		return CSR{}, err
	}
	st.SelfLoops = sc.self
	ids = nil // stored ids are garbage from here on
	phase("scatter")

	// Sort, clean and measure every row.
	c := CSR{Offsets: layoutSlice[int64](a, n+1)}
	start := sc.start
	bounds := func(u int) (int64, int64) { return start[u], start[u+1] }
	merged, maxDeg := cleanRows(ctx, n, bounds, sc.tgt, sc.wt, c.Offsets, opts.tune)
	if err := ctx.Err(); err != nil {
		c.free(a)
		return CSR{}, err
	}
	st.Merged, st.MaxDegree = merged, maxDeg
	phase("rows")

	kept := par.PrefixSum(c.Offsets)
	if a == nil && kept >= int64(len(sc.tgt))-int64(len(sc.tgt))/8 {
		// Go memory and little to drop: the scatter arrays become the layout.
		compactRows(ctx, n, sc.start, c.Offsets, sc.tgt, sc.wt)
		if err := ctx.Err(); err != nil {
			return CSR{}, err
		}
		c.Targets = sc.tgt[:kept:kept]
		if opts.Weighted {
			c.Weights = sc.wt[:kept:kept]
		}
		phase("compact")
		return c, nil
	}

	// Copy the rows into the final layout.
	c.Targets = layoutSlice[uint32](a, int(kept))
	if opts.Weighted {
		c.Weights = layoutSlice[float64](a, int(kept))
	}
	copyRows(ctx, &sc, &c)
	if err := ctx.Err(); err != nil {
		c.free(a)
		return CSR{}, err
	}
	phase("copy")
	return c, nil
}

// scattered is the edges counting-sorted by source: row u is [start[u],
// start[u+1]) of tgt (and wt, for a weighted graph); self is the number of
// self loops dropped.
type scattered struct {
	start []int64
	tgt   []uint32
	wt    []float64
	self  int64
}

// scatter is the counting sort by source of buildCSR: with a counter per
// block and row where they fit, else with one atomic counter per row.
func scatter(ctx context.Context, n int, ids edgeIDs, spans []span, opts BuildOptions) (scattered, error) {
	entries := int64(0)
	if len(spans) > 0 {
		entries = int64(spans[len(spans)-1].base + spans[len(spans)-1].hi)
	}
	if opts.Undirected {
		entries *= 2
	}
	if blocks := min(par.Workers(), len(spans)); blockedCounts(blocks, n, entries, opts.tune) {
		return scatterBlocked(ctx, n, blocks, ids, spans, opts.Weighted, opts.Undirected)
	}
	return scatterAtomic(ctx, n, ids, spans, opts.Weighted, opts.Undirected)
}

// copyRows copies the cleaned rows of sc into c's layout (its offsets set,
// its targets and weights allocated). Canceled, it stops part done.
func copyRows(ctx context.Context, sc *scattered, c *CSR) {
	start, tgt, wt := sc.start, sc.tgt, sc.wt
	weighted := c.Weights != nil
	done := ctx.Done()
	par.For(len(c.Offsets)-1, rowGrain*4, func(lo, hi int) {
		if canceled(done) {
			return
		}
		for u := lo; u < hi; u++ {
			from := start[u]
			o, e := c.Offsets[u], c.Offsets[u+1]
			copy(c.Targets[o:e], tgt[from:])
			if weighted {
				copy(c.Weights[o:e], wt[from:])
			}
		}
	})
}

// compactRows moves row u of t (and w) from start[u] to off[u], its length
// being off[u+1]-off[u] (rows only shrink, so off[u] <= start[u]): first each
// block of rows to the front of its own range, in parallel, then the blocks
// into place, in order. Canceled, it stops part done.
func compactRows(ctx context.Context, n int, start, off []int64, t []uint32, w []float64) {
	blocks := min(par.Workers(), n)
	first := func(b int) int { return n * b / blocks }
	par.For(blocks, 1, func(blo, bhi int) {
		for b := blo; b < bhi; b++ {
			to := start[first(b)]
			for u := first(b); u < first(b+1); u++ {
				if u%(16*rowGrain) == 0 && ctx.Err() != nil {
					return
				}
				l := off[u+1] - off[u]
				if from := start[u]; from != to {
					copy(t[to:to+l], t[from:from+l])
					if w != nil {
						copy(w[to:to+l], w[from:from+l])
					}
				}
				to += l
			}
		}
	})
	// A block moves towards the front, so piece by piece from its start.
	const piece = 1 << 20
	for b := 0; b < blocks; b++ {
		lo, hi := first(b), first(b+1)
		from, to, l := start[lo], off[lo], off[hi]-off[lo]
		for k := int64(0); from != to && k < l; k += piece {
			if ctx.Err() != nil {
				return
			}
			e := min(k+piece, l)
			copy(t[to+k:to+e], t[from+k:from+e])
			if w != nil {
				copy(w[to+k:to+e], w[from+k:from+e])
			}
		}
	}
}

// spanGroups cuts spans into blocks contiguous groups of about equal edges:
// group b is spans[g[b]:g[b+1]].
func spanGroups(spans []span, blocks int) []int {
	total := 0
	if len(spans) > 0 {
		last := &spans[len(spans)-1]
		total = last.base + last.hi
	}
	g := make([]int, blocks+1)
	for b := 1; b < blocks; b++ {
		want := total * b / blocks
		g[b] = sort.Search(len(spans), func(i int) bool { return spans[i].base+spans[i].lo >= want })
	}
	g[blocks] = len(spans)
	return g
}

// scatterBlocked is the counting sort by source with a counter per block and
// row: each block of spans counts its edges into its own counters, then
// scatters them, in span order, through its own cursors.
func scatterBlocked(ctx context.Context, n, blocks int, ids edgeIDs, spans []span, weighted, undirected bool) (scattered, error) {
	s := &blockScatter{
		n: n, ids: ids, spans: spans, groups: spanGroups(spans, blocks),
		cnt: bigSlice[uint32](blocks * n), bufs: make([]idBuf, blocks),
		weighted: weighted, undirected: undirected,
	}
	loops := make([]padded, blocks)
	done := ctx.Done()
	par.For(blocks, 1, func(blo, bhi int) {
		for b := blo; b < bhi; b++ {
			self, ok := s.count(done, b)
			if !ok {
				return
			}
			loops[b].n = self
		}
	})
	if err := ctx.Err(); err != nil {
		return scattered{}, err
	}
	sc := scattered{start: bigSlice[int64](n + 1)}
	for _, l := range loops {
		sc.self += l.n
	}
	total := blockCursors(s.cnt, n, blocks, sc.start)
	phase("count")

	sc.tgt = bigSlice[uint32](int(total))
	if weighted {
		sc.wt = bigSlice[float64](int(total))
	}
	par.For(blocks, 1, func(blo, bhi int) {
		for b := blo; b < bhi; b++ {
			if !s.fill(done, b, sc.tgt, sc.wt) {
				return
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return scattered{}, err
	}
	return sc, nil
}

// blockScatter is the state of scatterBlocked: block b takes the spans
// spans[groups[b]:groups[b+1]] and counts into cnt[b*n:(b+1)*n], which
// blockCursors then turns into its cursors.
type blockScatter struct {
	n          int
	ids        edgeIDs
	spans      []span
	groups     []int
	cnt        []uint32
	bufs       []idBuf // each block's
	weighted   bool
	undirected bool
}

// count counts block b's edges by source (and by target, undirected) and
// returns its self loops; false if done closed first.
func (bs *blockScatter) count(done <-chan struct{}, b int) (int64, bool) {
	n, ids, spans, undirected := bs.n, bs.ids, bs.spans, bs.undirected
	c := bs.cnt[b*n : (b+1)*n]
	buf := &bs.bufs[b]
	var self int64
	for k := bs.groups[b]; k < bs.groups[b+1]; k++ {
		if canceled(done) {
			return 0, false
		}
		s := &spans[k]
		ss, ds := ids.ids(s, buf)
		ds = ds[:len(ss)]
		for j, u := range ss {
			v := ds[j]
			if u == NoVertex {
				continue
			}
			if u == v {
				self++
				continue
			}
			c[u]++
			if undirected {
				c[v]++
			}
		}
	}
	return self, true
}

// fill scatters block b's edges into tgt (and their weights into wt, when
// weighted) through the block's cursors; false if done closed first.
func (bs *blockScatter) fill(done <-chan struct{}, b int, tgt []uint32, wt []float64) bool {
	n, ids, spans, weighted, undirected := bs.n, bs.ids, bs.spans, bs.weighted, bs.undirected
	c := bs.cnt[b*n : (b+1)*n]
	buf := &bs.bufs[b]
	for k := bs.groups[b]; k < bs.groups[b+1]; k++ {
		if canceled(done) {
			return false
		}
		s := &spans[k]
		ss, ds := ids.ids(s, buf)
		ds = ds[:len(ss)]
		if !weighted {
			for j, u := range ss {
				v := ds[j]
				if u == NoVertex || u == v {
					continue
				}
				p := c[u]
				c[u] = p + 1
				tgt[p] = v
				if undirected {
					p := c[v]
					c[v] = p + 1
					tgt[p] = u
				}
			}
			continue
		}
		ws := s.c.Weight[s.lo:s.hi]
		ws = ws[:len(ss)]
		for j, u := range ss {
			v := ds[j]
			if u == NoVertex || u == v {
				continue
			}
			p := c[u]
			c[u] = p + 1
			tgt[p], wt[p] = v, ws[j]
			if undirected {
				p := c[v]
				c[v] = p + 1
				tgt[p], wt[p] = u, ws[j]
			}
		}
	}
	return true
}

// scatterAtomic is the counting sort by source with one atomic counter per
// row, shared by all workers.
func scatterAtomic(ctx context.Context, n int, ids edgeIDs, spans []span, weighted, undirected bool) (scattered, error) {
	off := bigSlice[int64](n + 1)
	loops := make([]padded, par.Workers())
	bufs := make([]idBuf, par.Workers())
	forSpans(ctx, spans, func(w int, s *span) {
		ss, ds := ids.ids(s, &bufs[w])
		ds = ds[:len(ss)]
		var self int64
		for j, u := range ss {
			v := ds[j]
			if u == NoVertex {
				continue
			}
			if u == v {
				self++
				continue
			}
			atomic.AddInt64(&off[u], 1)
			if undirected {
				atomic.AddInt64(&off[v], 1)
			}
		}
		loops[w].n += self
	})
	if err := ctx.Err(); err != nil {
		return scattered{}, err
	}
	var self int64
	for _, l := range loops {
		self += l.n
	}
	total := par.PrefixSum(off) // off[u] is the start of row u, off[n] the total
	phase("count")

	tgt := bigSlice[uint32](int(total))
	var wt []float64
	if weighted {
		wt = bigSlice[float64](int(total))
	}
	forSpans(ctx, spans, func(w int, s *span) {
		ss, ds := ids.ids(s, &bufs[w])
		ds = ds[:len(ss)]
		var ws []float64
		if weighted {
			ws = s.c.Weight[s.lo:s.hi]
			ws = ws[:len(ss)]
		}
		for j, u := range ss {
			v := ds[j]
			if u == NoVertex || u == v {
				continue
			}
			p := atomic.AddInt64(&off[u], 1) - 1
			tgt[p] = v
			if weighted {
				wt[p] = ws[j]
			}
			if undirected {
				p := atomic.AddInt64(&off[v], 1) - 1
				tgt[p] = u
				if weighted {
					wt[p] = ws[j]
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return scattered{}, err
	}
	copy(off[1:n+1], off[:n]) // off[u] was the end of row u
	off[0] = 0
	return scattered{start: off, tgt: tgt, wt: wt, self: self}, nil
}

// transpose is the layout of the reversed edges, from a (nil: Go memory):
// a counting sort by target. With a counter per block of sources and row it
// is stable, so the rows come out sorted; with shared atomic counters (too
// many cores and vertices for those) the rows are sorted afterwards. tune
// is the build's (tuning.go).
func transpose(ctx context.Context, c *CSR, a memory.Allocator, tune tuning) (CSR, error) {
	n, m := c.NumVertices(), len(c.Targets)
	r := CSR{Offsets: layoutSlice[int64](a, n+1), Targets: layoutSlice[uint32](a, m)}
	if c.Weights != nil {
		r.Weights = layoutSlice[float64](a, m)
	}
	if n == 0 {
		return r, nil
	}
	var err error
	if blocks := par.Workers(); blockedCounts(blocks, n, int64(m), tune) {
		err = transposeBlocked(ctx, c, &r, blocks)
	} else {
		err = transposeAtomic(ctx, c, &r, tune)
	}
	if err != nil {
		r.free(a)
		return CSR{}, err
	}
	return r, nil
}

func transposeBlocked(ctx context.Context, c, r *CSR, blocks int) error {
	n, m := c.NumVertices(), len(c.Targets)
	// Block b holds the sources [first[b], first[b+1]), about m/blocks edges.
	first := make([]int, blocks+1)
	for b := 1; b < blocks; b++ {
		want := int64(m) * int64(b) / int64(blocks)
		first[b] = sort.Search(n, func(u int) bool { return c.Offsets[u] >= want })
	}
	first[blocks] = n
	cnt := bigSlice[uint32](blocks * n)
	done := ctx.Done()
	par.For(blocks, 1, func(blo, bhi int) {
		for b := blo; b < bhi; b++ {
			cb := cnt[b*n : (b+1)*n]
			lo, hi := c.Offsets[first[b]], c.Offsets[first[b+1]]
			for e := lo; e < hi; e += spanLen {
				if canceled(done) {
					return
				}
				for _, v := range c.Targets[e:min(e+spanLen, hi)] {
					cb[v]++
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	blockCursors(cnt, n, blocks, r.Offsets) // the total is m
	par.For(blocks, 1, func(blo, bhi int) {
		for b := blo; b < bhi; b++ {
			cb := cnt[b*n : (b+1)*n]
			for u := first[b]; u < first[b+1]; u++ {
				if u%4096 == 0 && canceled(done) {
					return
				}
				lo, hi := c.Offsets[u], c.Offsets[u+1]
				if r.Weights == nil {
					for _, v := range c.Targets[lo:hi] {
						p := cb[v]
						cb[v] = p + 1
						r.Targets[p] = uint32(u)
					}
					continue
				}
				ws := c.Weights[lo:hi]
				for k, v := range c.Targets[lo:hi] {
					p := cb[v]
					cb[v] = p + 1
					r.Targets[p], r.Weights[p] = uint32(u), ws[k]
				}
			}
		}
	})
	return ctx.Err()
}

// blockCursors turns cnt, the edges of each of n rows that each of blocks
// blocks holds (cnt[b*n+u]: the blocks split the input, each counting into
// its own slice), into each block's first slot in row u of a layout of the
// rows end to end, so that the blocks then fill the rows at once and in
// block order. off (n+1 long, off[n] zero) gets the rows' offsets; the
// total is returned.
func blockCursors(cnt []uint32, n, blocks int, off []int64) int64 {
	par.For(n, 1<<14, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			var r uint32
			for b := 0; b < blocks; b++ {
				x := cnt[b*n+u]
				cnt[b*n+u] = r
				r += x
			}
			off[u] = int64(r)
		}
	})
	total := par.PrefixSum(off) // off[n] was 0 and is now the total
	par.For(n, 1<<14, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			s := uint32(off[u])
			for b := 0; b < blocks; b++ {
				cnt[b*n+u] += s
			}
		}
	})
	return total
}

func transposeAtomic(ctx context.Context, c, r *CSR, tune tuning) error {
	n, m := c.NumVertices(), len(c.Targets)
	done := ctx.Done()
	off := r.Offsets
	par.For(m, spanLen, func(lo, hi int) {
		if canceled(done) {
			return
		}
		for _, v := range c.Targets[lo:hi] {
			atomic.AddInt64(&off[v], 1)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	par.PrefixSum(off) // off[n] was 0 and is now m
	par.For(n, rowGrain*4, func(lo, hi int) {
		if canceled(done) {
			return
		}
		for u := lo; u < hi; u++ {
			for e := c.Offsets[u]; e < c.Offsets[u+1]; e++ {
				p := atomic.AddInt64(&off[c.Targets[e]], 1) - 1
				r.Targets[p] = uint32(u)
				if r.Weights != nil {
					r.Weights[p] = c.Weights[e]
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	copy(off[1:n+1], off[:n]) // off[v] was the end of row v
	off[0] = 0
	cleanRows(ctx, n, func(u int) (int64, int64) { return off[u], off[u+1] }, r.Targets, r.Weights, nil, tune)
	return ctx.Err()
}

// free gives the layout's memory back to a (nothing to do for Go memory)
// and empties it.
func (c *CSR) free(a memory.Allocator) {
	alloc.Free(a, c.Offsets)
	alloc.Free(a, c.Targets)
	alloc.Free(a, c.Weights)
	*c = CSR{}
}

// Release gives the layouts' memory back to the allocator they came from
// (BuildOptions.Alloc; nothing to do for Go memory). The graph must not be
// used afterwards, nor Release called while another goroutine uses it.
func (g *Graph) Release() {
	g.Out.free(g.alloc)
	g.in.free(g.alloc)
	if w, ok := g.weights32.peek(); ok && g.split == nil { // a part's is Go memory
		alloc.Free(g.alloc, w)
		g.weights32 = onceValue[[]uint32]{} // a second Release frees nothing twice
	}
}
