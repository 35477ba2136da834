package convert

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Build renumbers the table's keys, cleans its edges and builds the graph.
// The table is not modified and may be released once Build returns.
//
// It runs on all cores in the steps of the GAP Benchmark Suite's builder,
// with no per-edge allocation:
//
//   - renumbering: integer keys of a small range go through a presence bitmap
//     with a rank per 64 keys, and each edge's ids are looked up from it when
//     needed; other keys go through a lock-free hash table sized by a
//     HyperLogLog estimate, their distinct keys are sorted in parallel and
//     each edge's ids are stored (8 bytes an edge);
//   - a counting sort of the edges by source (each edge both ways when
//     undirected; self loops dropped), with a counter per worker and row
//     where that takes little memory, shared atomic counters otherwise;
//   - every row sorted (insertion, bucket or radix sort by length, a vertex
//     bitmap for very long rows) and its duplicates merged, keeping the
//     minimum weight;
//   - the rows compacted: in place when the layouts are Go memory and at most
//     an eighth of the entries went, else copied into arrays from opts.Alloc.
//
// Rows dropped by the weight rule are dropped before renumbering: keys seen
// only in them are not vertices. The result does not depend on the number of
// cores. ctx is checked between the steps and inside their loops.
func Build(ctx context.Context, t *edges.Table, opts BuildOptions) (*Graph, error) {
	if opts.Weighted && !t.HasWeight {
		return nil, usererr.InFile(t.Name, "the graph must be weighted but the input has no weight column",
			"name the weight column with --weight-col")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	spans := edgeSpans(t)
	g := &Graph{Directed: !opts.Undirected, Weighted: opts.Weighted, alloc: opts.Alloc, tune: opts.tune}
	g.Stats.Skipped = edges.Skips{}

	var drop []uint64
	var dropped int64
	if opts.Weighted {
		var err error
		drop, dropped, err = applyWeightRule(ctx, t, spans, opts, g.Stats.Skipped)
		if err != nil {
			return nil, err
		}
	}
	g.Stats.InputEdges = t.NumEdges() - dropped
	phase("weights")

	keys, ids, err := renumber(ctx, t, spans, drop, opts.tune)
	if err != nil {
		return nil, err
	}
	g.Keys = keys
	phase("renumber")
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	g.Out, err = buildCSR(ctx, keys.Len(), ids, spans, opts, &g.Stats)
	if err != nil {
		return nil, err
	}
	if opts.BuildIn && g.Directed {
		g.inOnce.Do(func() {
			g.in, err = transpose(ctx, &g.Out, g.alloc, g.tune)
			g.inBuilt.Store(err == nil)
		})
		if err != nil {
			g.Release()
			return nil, err
		}
	}
	return g, nil
}

// tracePhase, when set (by benchmarks), is told as each phase of a build ends.
var tracePhase func(name string)

func phase(name string) {
	if tracePhase != nil {
		tracePhase(name)
	}
}

// weightProblem is why w breaks the rule, or "" when it does not.
func weightProblem(w float64, rule WeightRule) string {
	switch {
	case math.IsNaN(w):
		return "weight is NaN"
	case math.IsInf(w, 0):
		return fmt.Sprintf("weight is %v (weights must be finite)", w)
	case rule == NonNegativeWeights && w < 0:
		return fmt.Sprintf("negative weight %v (shortest paths and weighted pagerank need weights >= 0)", w)
	}
	return ""
}

// keyArrowType is the output vertex column's type for the table's keys.
func keyArrowType(t *edges.Table) arrow.DataType {
	if dt := t.KeyArrowType; dt != nil {
		if d, ok := dt.(*arrow.DictionaryType); ok {
			dt = d.ValueType
		}
		return dt
	}
	return t.KeyType.ArrowType()
}

// spanLen is the most edges in a span: the unit of work of the loops over
// edges, and (for string keys) the position field of a key reference.
const spanLen = 1 << 16

// span is a run of at most spanLen edges of one chunk: positions [lo, hi)
// of chunk c, whose position j is edge base+j of the table.
type span struct {
	c      *edges.Chunk
	lo, hi int
	base   int
	idx    int // the span's index in the list
}

// edgeSpans cuts the table's chunks into spans, in edge order.
func edgeSpans(t *edges.Table) []span {
	var spans []span
	base := 0
	for ci := range t.Chunks {
		c := &t.Chunks[ci]
		n := c.Len()
		for lo := 0; lo < n; lo += spanLen {
			spans = append(spans, span{c: c, lo: lo, hi: min(lo+spanLen, n), base: base, idx: len(spans)})
		}
		base += n
	}
	return spans
}

// canceled reports, without blocking, whether done is closed: the check the
// parallel loops make before each piece of work.
func canceled(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// forSpans calls fn on every span from all cores, stopping early when ctx is
// canceled (the caller checks ctx.Err afterwards).
func forSpans(ctx context.Context, spans []span, fn func(worker int, s *span)) {
	done := ctx.Done()
	par.ForWorker(len(spans), 1, func(w, lo, hi int) {
		for i := lo; i < hi; i++ {
			if canceled(done) {
				return
			}
			fn(w, &spans[i])
		}
	})
}

// isDropped says whether edge i is marked in the drop bitmap.
func isDropped(drop []uint64, i int) bool {
	return drop[i>>6]&(1<<(uint(i)&63)) != 0
}

// applyWeightRule checks every weight against opts.Weights. Without
// SkipInvalid the first offending row (in input order) is an error naming
// its file, column and row. With it the offending edges are marked in the
// returned bitmap (nil when there are none) and counted in skipped.
func applyWeightRule(ctx context.Context, t *edges.Table, spans []span, opts BuildOptions, skipped edges.Skips) ([]uint64, int64, error) {
	if !opts.SkipInvalid {
		i, err := firstBadWeight(ctx, spans, opts.Weights == NonNegativeWeights)
		if err != nil || i == math.MaxInt64 {
			return nil, 0, err
		}
		return nil, 0, weightError(t, spans, i, opts.Weights)
	}
	drop, per, err := markBadWeights(ctx, spans, opts.Weights == NonNegativeWeights, t.NumEdges())
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for _, c := range per {
		total += c.addTo(skipped, t, opts.Weights)
	}
	if total == 0 {
		return nil, 0, nil
	}
	return drop, total, nil
}

// badWeight says whether w breaks the weight rule: NaN and ±Inf always,
// negative weights where nonNeg.
func badWeight(w float64, nonNeg bool) bool {
	return !(w-w == 0) || (nonNeg && w < 0) // w-w is NaN for NaN and ±Inf
}

// firstBadWeight is the first edge (in input order) whose weight is bad,
// math.MaxInt64 if none is.
func firstBadWeight(ctx context.Context, spans []span, nonNeg bool) (int64, error) {
	first := atomic.Int64{}
	first.Store(math.MaxInt64)
	forSpans(ctx, spans, func(_ int, s *span) {
		if int64(s.base+s.lo) > first.Load() {
			return
		}
		ws := s.c.Weight[s.lo:s.hi]
		for j, w := range ws {
			if badWeight(w, nonNeg) {
				i := int64(s.base + s.lo + j)
				for cur := first.Load(); i < cur && !first.CompareAndSwap(cur, i); cur = first.Load() {
				}
				return
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return first.Load(), nil
}

// weightError is the error for edge i's weight, which breaks rule: its
// file, column and row (and line), and the edge it mirrors where the input
// did not write it.
func weightError(t *edges.Table, spans []span, i int64, rule WeightRule) error {
	for k := range spans {
		s := &spans[k]
		if j := int(i) - s.base; j >= s.lo && j < s.hi {
			w := s.c.Weight[j]
			e := usererr.AtRow(t.Name, t.Columns.Weight, s.c.Row(j), weightProblem(w, rule),
				"fix the weight or pass --skip-invalid to drop such rows")
			e.Line = t.LineOf(e.Row)
			if note, fix := t.MirrorOf(s.c, j); note != "" {
				// An edge the input did not write, but implied.
				e.Problem, e.Fix = e.Problem+" for "+note, fix
			}
			return e
		}
	}
	return nil
}

// badCounts is a worker's counts of the bad weights it found (NaN apart,
// since NaN is not a usable map key): a few map updates per bad row, no
// allocation.
type badCounts struct {
	nan int64
	bad map[float64]int64
}

// addTo adds the counts to skipped, each with its reason, and returns
// their sum.
func (c *badCounts) addTo(skipped edges.Skips, t *edges.Table, rule WeightRule) int64 {
	var total int64
	if c.nan > 0 {
		skipped.Add(fmt.Sprintf("%s in column %q", weightProblem(math.NaN(), rule), t.Columns.Weight), c.nan)
		total += c.nan
	}
	for w, n := range c.bad {
		skipped.Add(fmt.Sprintf("%s in column %q", weightProblem(w, rule), t.Columns.Weight), n)
		total += n
	}
	return total
}

// markBadWeights marks the edges with bad weights in a bitmap of m bits and
// counts their weights, per worker.
func markBadWeights(ctx context.Context, spans []span, nonNeg bool, m int64) ([]uint64, []badCounts, error) {
	per := make([]badCounts, par.Workers())
	drop := make([]uint64, (m+63)/64)
	forSpans(ctx, spans, func(wk int, s *span) {
		ws := s.c.Weight[s.lo:s.hi]
		for j, w := range ws {
			if !badWeight(w, nonNeg) {
				continue
			}
			i := s.base + s.lo + j
			atomic.OrUint64(&drop[i>>6], 1<<(uint(i)&63)) // spans can share a word
			if w != w {
				per[wk].nan++
				continue
			}
			if per[wk].bad == nil {
				per[wk].bad = map[float64]int64{}
			}
			per[wk].bad[w]++
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return drop, per, nil
}

// bigSlice is make([]T, n) for the builder's large scratch arrays, backed by
// huge pages where the platform allows.
func bigSlice[T any](n int) []T {
	s := make([]T, n)
	adviseHuge(s)
	return s
}

// layoutSlice is a layout array of n zeroed T from a, or from Go memory
// (backed by huge pages where the platform allows) when a is nil.
func layoutSlice[T any](a memory.Allocator, n int) []T {
	if a == nil {
		return bigSlice[T](n)
	}
	return alloc.Slice[T](a, n)
}
