package serve

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler is the memory.Allocator of one result encoder's batches: the
// columns gpipe.Result.Rows makes (keys mapped from ids, validity
// bitmaps) live only until their batch is encoded, so their buffers are
// kept for the next batch rather than left to the garbage collector. A
// batch's buffers are then already faulted in and in cache, and not zeroed
// again: Result.Rows writes every byte of the buffers it asks for. It is
// meant for that use only (rowsAllocator): arrow's builders expect zeroed
// memory.
type recycler struct {
	mu   sync.Mutex // Free may come from wherever the last reference goes
	free [][]byte
}

// recyclerKeeps is the most free buffers a recycler keeps: a batch has a
// key column and a few bitmaps.
const recyclerKeeps = 8

func (r *recycler) Allocate(size int) []byte {
	r.mu.Lock()
	best := -1
	for i, b := range r.free {
		if cap(b) >= size && (best < 0 || cap(b) < cap(r.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := r.free[best]
		r.free[best] = r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		r.mu.Unlock()
		return b[:size]
	}
	r.mu.Unlock()
	return alignedBytes(size)
}

func (r *recycler) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.free) < recyclerKeeps {
		r.free = append(r.free, b[:0])
		return
	}
	// Keep the largest: a batch's sizes repeat, but for the last.
	small := 0
	for i, f := range r.free {
		if cap(f) < cap(r.free[small]) {
			small = i
		}
	}
	if cap(b) > cap(r.free[small]) {
		r.free[small] = b[:0]
	}
}

// alignedBytes is size bytes on a 64-byte boundary, as arrow's allocators
// give them.
func alignedBytes(size int) []byte {
	const align = 64
	b := make([]byte, size+align)
	off := int((align - uintptr(unsafe.Pointer(unsafe.SliceData(b)))%align) % align)
	return b[off : off+size : off+size]
}

var _ memory.Allocator = (*recycler)(nil)
