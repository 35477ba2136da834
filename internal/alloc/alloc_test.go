package alloc

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// dirtyAllocator hands out memory full of garbage unless it says it zeroes.
type dirtyAllocator struct {
	memory.Allocator
	says bool
}

func (d dirtyAllocator) Allocate(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xA5
	}
	return b
}

func (d dirtyAllocator) AllocatesZeroed() bool { return d.says }

func TestSliceIsZeroed(t *testing.T) {
	for _, a := range []memory.Allocator{nil, memory.NewGoAllocator(), dirtyAllocator{memory.DefaultAllocator, false}} {
		s := Slice[int64](a, 1000)
		for i, x := range s {
			if x != 0 {
				t.Fatalf("%T: element %d is %#x", a, i, x)
			}
		}
	}
}

// An allocator that says it zeroes is trusted: Slice does not clear its
// memory a second time.
func TestSliceTrustsZeroingAllocator(t *testing.T) {
	s := Slice[byte](dirtyAllocator{memory.DefaultAllocator, true}, 100)
	if s[0] != 0xA5 {
		t.Fatal("Slice cleared memory its allocator said was zeroed")
	}
}
