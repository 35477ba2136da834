package convert

import (
	"context"

	"github.com/gpipe/gpipe/internal/par"
)

// defaultPsortBlock is the most elements psort gives one call of sortBlock
// or of merge in a build: the work between two checks for cancellation
// (some 20 ms for integers, more for strings). Tests pass smaller blocks
// (tuning.psortBlock) to cut small inputs into many.
const defaultPsortBlock = 1 << 18

// psort sorts xs on all cores: blocks of at most block elements (at least
// one per worker) sorted by sortBlock, then rounds of pairwise merges, each
// merge cut by co-ranking into pieces of at most block so that every round
// keeps all cores busy. less must be a strict order consistent with
// sortBlock's. It checks ctx before each block and piece; canceled, it
// returns ctx.Err() with xs in no particular order.
func psort[T any](ctx context.Context, xs []T, block int, sortBlock func([]T), less func(a, b T) bool) error {
	n := len(xs)
	w := par.Workers()
	blocks := max(w, (n+block-1)/block)
	if n < 1<<14 || blocks == 1 {
		sortBlock(xs)
		return ctx.Err()
	}
	bounds := make([]int, blocks+1)
	for b := range bounds {
		bounds[b] = n * b / blocks
	}
	par.For(blocks, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			if ctx.Err() != nil {
				return
			}
			sortBlock(xs[bounds[b]:bounds[b+1]])
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	buf := make([]T, n)
	from, to := xs, buf
	for len(bounds) > 2 {
		type piece struct{ a, b, out []T }
		var pieces []piece
		next := []int{0}
		for r := 0; r+1 < len(bounds); r += 2 {
			lo := bounds[r]
			if r+2 >= len(bounds) { // an odd run out: copied as it is
				pieces = append(pieces, piece{a: from[lo:bounds[r+1]], out: to[lo:bounds[r+1]]})
				next = append(next, bounds[r+1])
				continue
			}
			mid, hi := bounds[r+1], bounds[r+2]
			a, b := from[lo:mid], from[mid:hi]
			total := hi - lo
			k := max(1, min(w, total/(1<<13)), (total+block-1)/block)
			prevI, prevJ := 0, 0
			for p := 1; p <= k; p++ {
				pos := total * p / k
				i := coRank(pos, a, b, less)
				j := pos - i
				pieces = append(pieces, piece{a: a[prevI:i], b: b[prevJ:j], out: to[lo+prevI+prevJ : lo+i+j]})
				prevI, prevJ = i, j
			}
			next = append(next, hi)
		}
		par.For(len(pieces), 1, func(lo, hi int) {
			for _, p := range pieces[lo:hi] {
				if ctx.Err() != nil {
					return
				}
				merge(p.out, p.a, p.b, less)
			}
		})
		if err := ctx.Err(); err != nil {
			return err
		}
		bounds = next
		from, to = to, from
	}
	if &from[0] != &xs[0] {
		copy(xs, from)
	}
	return nil
}

// coRank is how many of the first pos elements of merge(a, b) come from a.
func coRank[T any](pos int, a, b []T, less func(x, y T) bool) int {
	lo, hi := max(0, pos-len(b)), min(pos, len(a))
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		j := pos - i
		// More of a is needed while a[i] precedes b[j-1].
		if j > 0 && !less(b[j-1], a[i]) {
			lo = i + 1
		} else {
			hi = i
		}
	}
	return lo
}

// merge writes the merge of sorted a and b (a first among equals) to out.
func merge[T any](out, a, b []T, less func(x, y T) bool) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if less(b[j], a[i]) {
			out[k] = b[j]
			j++
		} else {
			out[k] = a[i]
			i++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}
