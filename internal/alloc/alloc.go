// Package alloc makes typed slices from an arrow memory.Allocator, so that
// columns and layouts can live in memory the caller chooses (Go memory, or
// pinned host memory that the GPU copies from without staging).
package alloc

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Slice returns a slice of n zeroed T from a, or from Go memory when a is nil.
// Memory from an allocator must be given back with Free.
func Slice[T any](a memory.Allocator, n int) []T {
	if a == nil || n == 0 {
		return make([]T, n)
	}
	var zero T
	b := a.Allocate(n * int(unsafe.Sizeof(zero)))
	if !zeroes(a) {
		clear(b)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// zeroes says whether a's Allocate returns zeroed memory, so that Slice
// need not clear it again (a second pass over a column of gigabytes):
// arrow's Go allocator does, and allocators that say so
// (gpu.PinnedAllocator).
func zeroes(a memory.Allocator) bool {
	switch z := a.(type) {
	case *memory.GoAllocator:
		return true
	case interface{ AllocatesZeroed() bool }:
		return z.AllocatesZeroed()
	}
	return false
}

// Free gives s back to a; it does nothing for Go memory (a nil).
func Free[T any](a memory.Allocator, s []T) {
	if a == nil || cap(s) == 0 {
		return
	}
	var zero T
	s = s[:cap(s)]
	a.Free(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero))))
}

// Bytes views s as bytes, for copies to a device.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}
