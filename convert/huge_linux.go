//go:build linux

package convert

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms gpipe
// runs on.
const hugePage = 2 << 20

// adviseHuge asks Linux to back the whole 2 MiB pages inside s with
// transparent huge pages (honoured where THP is "always" or "madvise").
// The builder's scatters write all over arrays of hundreds of megabytes: with
// 4 KiB pages nearly every write misses the TLB (dearly so under
// virtualization), and first touches take a page fault each 4 KiB. Call it
// before the memory is first written; failures are ignored.
func adviseHuge[T any](s []T) {
	if len(s) == 0 {
		return
	}
	size := uintptr(len(s)) * unsafe.Sizeof(s[0])
	if size < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + size) &^ (hugePage - 1)
	if hi > lo {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), size)
		_ = syscall.Madvise(b[lo-p:hi-p], syscall.MADV_HUGEPAGE)
	}
}
