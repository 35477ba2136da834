package gen

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/internal/pollctx"
)

// The vertex permutation, a sequential shuffle of 2^scale vertices (seconds
// at scale 27 or 28), looks at its context between pieces, and a
// cancellation at any of those looks ends it: it used to run to its end
// first. The permutation is what it was: the graphs stay the same.
func TestPermutationCanceled(t *testing.T) {
	k := Kronecker{Scale: 22, EdgeFactor: 1, Seed: 3}
	n := int64(1) << k.Scale
	count := pollctx.New(0)
	perm, err := k.permutation(count, n)
	if err != nil {
		t.Fatal(err)
	}
	if polls := count.Polls(); polls < 6 {
		t.Fatalf("the permutation of %d vertices asked its context %d times: not while it shuffled", n, polls)
	}
	for at := int64(1); at <= count.Polls(); at++ {
		if p, err := k.permutation(pollctx.New(at), n); !errors.Is(err, context.Canceled) || p != nil {
			t.Fatalf("canceled at check %d of %d: %v", at, count.Polls(), err)
		}
	}
	sorted := slices.Clone(perm)
	slices.Sort(sorted)
	for i, v := range sorted {
		if v != int64(i) {
			t.Fatalf("not a permutation: %d at %d", v, i)
		}
	}
	h := fnv.New64a()
	for _, v := range perm[:1000] {
		h.Write([]byte{byte(v), byte(v >> 8), byte(v >> 16)})
	}
	if got := h.Sum64(); got != permutationHash {
		t.Errorf("the permutation changed: hash %#x, want %#x", got, permutationHash)
	}
}

// permutationHash is the hash of the first 1000 entries of the permutation
// of 2^22 vertices, seed 3, as the shuffle has always drawn it.
const permutationHash uint64 = 0x926e4d8d0f9096c3
