package gpu

import (
	"testing"

	"github.com/gpipe/gpipe/internal/alloc"
)

// Where the pinned read path's time went (issue 13): a column of 1 GiB
// read into pinned memory, against the same in Go memory. On the GPU
// machine:
//
//	gpu.test -test.run XXX -test.bench 'Column1GiB|PinnedAllocColumn|HostAlloc' -test.benchtime 3x
//
// BenchmarkPinnedAllocColumn is the whole of it (cuMemHostAlloc, the
// allocator's clearing, a write of every element on all cores as a
// reader's, the free); BenchmarkHostAlloc1GiB is cuMemHostAlloc and
// cuMemFreeHost alone; BenchmarkGoColumn1GiB is make and the same write.

const columnBytes = 1 << 30

func BenchmarkPinnedAllocColumn(b *testing.B) {
	c := testContext(b)
	a := NewPinnedAllocator(c)
	a.SetCacheLimit(0) // every column pinned afresh, as one read
	defer a.Close()
	benchColumn(b, columnBytes, func(n int) []int64 { return alloc.Slice[int64](a, n) }, func(s []int64) { alloc.Free(a, s) })
}

func BenchmarkHostAlloc1GiB(b *testing.B) {
	c := testContext(b)
	b.SetBytes(columnBytes)
	for i := 0; i < b.N; i++ {
		h, err := c.AllocHost(columnBytes)
		must(b, err)
		must(b, h.Free())
	}
}

func BenchmarkGoColumn1GiB(b *testing.B) {
	benchColumn(b, columnBytes, func(n int) []int64 { return make([]int64, n) }, func([]int64) {})
}
