package operators

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestPinnedClass(t *testing.T) {
	for _, c := range []struct{ bytes, class int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {3 << 20, 4 << 20}, {4 << 20, 4 << 20},
	} {
		if got := pinnedClass(c.bytes); got != c.class {
			t.Errorf("pinnedClass(%d) = %d, want %d", c.bytes, got, c.class)
		}
	}
}

// TestCopyParallel copies lengths around the pieces' size, each byte
// checked, into destinations filled with another pattern first.
func TestCopyParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, copyPiece - 1, copyPiece, copyPiece + 1, 7*copyPiece + 12345} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		dst := bytes.Repeat([]byte{0xa5}, n+3)
		copyParallel(dst[:n], src)
		if !bytes.Equal(dst[:n], src) {
			t.Errorf("%d bytes: the copy differs", n)
		}
		if !bytes.Equal(dst[n:], []byte{0xa5, 0xa5, 0xa5}) {
			t.Errorf("%d bytes: written past the end", n)
		}
	}
}

// TestResultRelease: a released result's memory serves the next result of
// the same size, and its columns are gone.
func TestResultRelease(t *testing.T) {
	const n = 12345
	r := &Result{}
	a := resultSlice[int32](r, n)
	r.Columns = []Column{{Name: "depth", Type: Int32Column, Int32: a}}
	a[7] = 42
	r.Release()
	if r.Columns != nil || r.recycle != nil {
		t.Fatalf("released result keeps %d columns, %d buffers", len(r.Columns), len(r.recycle))
	}
	// sync.Pool may drop what it holds at any time; reuse is likely, not
	// certain, so a miss only logs.
	b := resultSlice[int32](&Result{}, n)
	if len(b) != n {
		t.Fatalf("%d elements, want %d", len(b), n)
	}
	if &b[0] != &a[0] {
		t.Logf("the released memory was not reused (the pool was emptied)")
	}
	if got := resultSlice[uint32](&Result{}, 0); got != nil {
		t.Errorf("an empty column has memory")
	}
}
