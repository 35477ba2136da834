package gpu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/par"
)

// Size classes of the small-allocation pool: powers of two from 64 B to
// 64 KiB, carved from 1 MiB pinned slabs. Larger allocations get their own
// pinned block (rounded up to 4 KiB), and freed ones are kept in a cache
// for reuse up to the cache limit.
const (
	minClassShift = 6
	maxClassShift = 16
	numClasses    = maxClassShift - minClassShift + 1
	slabSize      = 1 << 20
	largeGranule  = 4 << 10
	alignment     = 64 // what arrow expects of buffer addresses

	// DefaultPinnedCache is the pinned memory of freed large blocks a
	// PinnedAllocator keeps for reuse.
	DefaultPinnedCache = 256 << 20
)

// block kinds beyond the size classes.
const (
	classLarge    = -1
	classFallback = -2 // ordinary Go memory: pinning failed
)

// hostMemory is where a PinnedAllocator gets its memory: cuMemHostAlloc,
// or ordinary memory in the tests of the pool logic.
type hostMemory interface {
	alloc(n int) (unsafe.Pointer, error)
	free(p unsafe.Pointer) error
}

// contextHostMemory pins memory with cuMemHostAlloc in a context.
type contextHostMemory struct{ c *Context }

func (m contextHostMemory) alloc(n int) (unsafe.Pointer, error) { return m.c.hostAlloc(n) }
func (m contextHostMemory) free(p unsafe.Pointer) error         { return m.c.hostFree(p) }

// PinnedAllocator is an arrow memory.Allocator over pinned host memory, so
// that readers decode columns and builders lay out graphs directly where
// the GPU copies from at full speed and asynchronously (see DeviceBuffer).
// Buffers are 64-byte aligned and zeroed, like arrow's Go allocator. Small
// buffers come from a pool of pinned slabs. It is safe for concurrent use.
//
// memory.Allocator has no error results, so the allocator never fails
// where Go memory would not: when the driver cannot pin more memory it
// hands out ordinary Go memory (copies from it are then synchronous and
// slower) and says so in Stats().Fallback and Err. Freeing a slice it did
// not hand out, or one already freed, frees nothing and is recorded in Err.
type PinnedAllocator struct {
	mem        hostMemory
	cacheLimit int64

	mu    sync.Mutex
	live  map[uintptr]*pinnedBlock // by address of the slice handed out
	free  [numClasses][]unsafe.Pointer
	slabs []unsafe.Pointer
	cache []*pinnedBlock // freed large blocks
	stats PinnedStats
	err   error
}

type pinnedBlock struct {
	p     unsafe.Pointer
	cap   int // bytes available at p
	size  int // bytes handed out
	class int // size class, classLarge or classFallback
	goMem []byte
}

// PinnedStats counts a PinnedAllocator's memory.
type PinnedStats struct {
	InUse     int64 // bytes handed out and not yet freed, as asked for
	PeakInUse int64
	Pinned    int64 // pinned bytes held from the driver: slabs, large blocks and the cache
	Cached    int64 // pinned bytes of freed large blocks kept for reuse
	Fallback  int64 // bytes handed out of ordinary Go memory, because pinning failed
	Allocs    int64
	Frees     int64
}

var _ memory.Allocator = (*PinnedAllocator)(nil)

// NewPinnedAllocator returns an allocator of pinned memory in c (usable by
// every context: the memory is portable).
func NewPinnedAllocator(c *Context) *PinnedAllocator {
	return newPinnedAllocator(contextHostMemory{c})
}

func newPinnedAllocator(mem hostMemory) *PinnedAllocator {
	return &PinnedAllocator{mem: mem, cacheLimit: DefaultPinnedCache, live: map[uintptr]*pinnedBlock{}}
}

// SetCacheLimit sets how many bytes of freed large blocks are kept pinned
// for reuse (DefaultPinnedCache to begin with); 0 keeps none.
func (a *PinnedAllocator) SetCacheLimit(bytes int64) {
	a.mu.Lock()
	a.cacheLimit = bytes
	drop := a.trimCache()
	a.mu.Unlock()
	a.release(drop)
}

// Stats are the allocator's counts now.
func (a *PinnedAllocator) Stats() PinnedStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// Allocated is the number of bytes handed out and not yet freed.
func (a *PinnedAllocator) Allocated() int64 { return a.Stats().InUse }

// Err is the first misuse (a Free or Reallocate of memory the allocator
// does not hold) or pinning failure seen, or nil.
func (a *PinnedAllocator) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *PinnedAllocator) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

func classOf(size int) int {
	c := 0
	for 1<<(c+minClassShift) < size {
		c++
	}
	return c
}

// Allocate returns size zeroed bytes, 64-byte aligned.
func (a *PinnedAllocator) Allocate(size int) []byte {
	if size <= 0 {
		return []byte{}
	}
	b := a.get(size)
	s := unsafe.Slice((*byte)(b.p), b.cap)[:size:size]
	zero(s)
	return s
}

// AllocatesZeroed says that Allocate's memory is zeroed, so that
// alloc.Slice need not clear it again.
func (a *PinnedAllocator) AllocatesZeroed() bool { return true }

// zero clears s, on all cores where it is large: a column of a few GiB
// cleared on one thread took longer than reading it.
func zero(s []byte) {
	const piece = 4 << 20
	if len(s) < 2*piece {
		clear(s)
		return
	}
	par.For(len(s), piece, func(lo, hi int) { clear(s[lo:hi]) })
}

// get finds or makes a block for size bytes and records it as live.
func (a *PinnedAllocator) get(size int) *pinnedBlock {
	if size <= 1<<maxClassShift {
		c := classOf(size)
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.free[c]) == 0 {
			slab, err := a.mem.alloc(slabSize)
			if err != nil {
				a.fail(err)
				return a.record(fallbackBlock(size))
			}
			a.slabs = append(a.slabs, slab)
			a.stats.Pinned += slabSize
			bs := 1 << (c + minClassShift)
			for off := slabSize - bs; off >= 0; off -= bs {
				a.free[c] = append(a.free[c], unsafe.Add(slab, off))
			}
		}
		n := len(a.free[c]) - 1
		p := a.free[c][n]
		a.free[c] = a.free[c][:n]
		return a.record(&pinnedBlock{p: p, cap: 1 << (c + minClassShift), size: size, class: c})
	}
	a.mu.Lock()
	best := -1
	for i, b := range a.cache {
		if b.cap >= size && b.cap <= 2*size && (best < 0 || b.cap < a.cache[best].cap) {
			best = i
		}
	}
	if best >= 0 {
		b := a.cache[best]
		a.cache = append(a.cache[:best], a.cache[best+1:]...)
		a.stats.Cached -= int64(b.cap)
		b.size = size
		defer a.mu.Unlock()
		return a.record(b)
	}
	a.mu.Unlock()
	// Pinning a large block takes a while; do it unlocked.
	n := (size + largeGranule - 1) / largeGranule * largeGranule
	p, err := a.mem.alloc(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.fail(err)
		return a.record(fallbackBlock(size))
	}
	a.stats.Pinned += int64(n)
	return a.record(&pinnedBlock{p: p, cap: n, size: size, class: classLarge})
}

// fallbackBlock is size bytes of Go memory, 64-byte aligned.
func fallbackBlock(size int) *pinnedBlock {
	buf := make([]byte, size+alignment)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&buf[0])) % alignment); r != 0 {
		off = alignment - r
	}
	return &pinnedBlock{p: unsafe.Pointer(&buf[off]), cap: size, size: size, class: classFallback, goMem: buf}
}

// record makes b live; a.mu is held.
func (a *PinnedAllocator) record(b *pinnedBlock) *pinnedBlock {
	a.live[uintptr(b.p)] = b
	a.stats.Allocs++
	a.stats.InUse += int64(b.size)
	if a.stats.InUse > a.stats.PeakInUse {
		a.stats.PeakInUse = a.stats.InUse
	}
	if b.class == classFallback {
		a.stats.Fallback += int64(b.size)
	}
	return b
}

// take removes the live block at the start of b; a.mu is held.
func (a *PinnedAllocator) take(b []byte, op string) *pinnedBlock {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	blk := a.live[p]
	if blk == nil {
		a.fail(fmt.Errorf("gpu: PinnedAllocator.%s of %d bytes at %#x that it did not allocate, or freed already", op, len(b), p))
		return nil
	}
	delete(a.live, p)
	a.stats.Frees++
	a.stats.InUse -= int64(blk.size)
	if blk.class == classFallback {
		a.stats.Fallback -= int64(blk.size)
	}
	return blk
}

// Free gives b back. b must be a slice that Allocate or Reallocate
// returned (its length may differ; its start may not).
func (a *PinnedAllocator) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	a.mu.Lock()
	blk := a.take(b, "Free")
	var drop []*pinnedBlock
	if blk != nil {
		drop = a.put(blk)
	}
	a.mu.Unlock()
	a.release(drop)
}

// put returns a block taken from live to the pool or cache and says which
// large blocks to give back to the driver; a.mu is held.
func (a *PinnedAllocator) put(blk *pinnedBlock) []*pinnedBlock {
	switch blk.class {
	case classFallback:
		return nil
	case classLarge:
		a.cache = append(a.cache, blk)
		a.stats.Cached += int64(blk.cap)
		return a.trimCache()
	default:
		a.free[blk.class] = append(a.free[blk.class], blk.p)
		return nil
	}
}

// trimCache removes the oldest cached blocks beyond the cache limit and
// returns them for release; a.mu is held.
func (a *PinnedAllocator) trimCache() []*pinnedBlock {
	var drop []*pinnedBlock
	for len(a.cache) > 0 && a.stats.Cached > a.cacheLimit {
		b := a.cache[0]
		a.cache = a.cache[1:]
		a.stats.Cached -= int64(b.cap)
		a.stats.Pinned -= int64(b.cap)
		drop = append(drop, b)
	}
	return drop
}

// release gives large blocks back to the driver, unlocked.
func (a *PinnedAllocator) release(drop []*pinnedBlock) {
	for _, b := range drop {
		if err := a.mem.free(b.p); err != nil {
			a.mu.Lock()
			a.fail(err)
			a.mu.Unlock()
		}
	}
}

// Reallocate resizes b to size bytes, keeping its contents up to the
// smaller of the two sizes; bytes beyond are zero. It grows in place when
// the block has room.
func (a *PinnedAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) == 0 {
		return a.Allocate(size)
	}
	if size <= 0 {
		a.Free(b)
		return []byte{}
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	a.mu.Lock()
	blk := a.live[p]
	if blk == nil {
		a.fail(fmt.Errorf("gpu: PinnedAllocator.Reallocate of %d bytes at %#x that it did not allocate, or freed already", len(b), p))
		a.mu.Unlock()
		out := a.Allocate(size)
		copy(out, b)
		return out
	}
	old := blk.size
	if size <= blk.cap {
		blk.size = size
		a.stats.InUse += int64(size - old)
		if a.stats.InUse > a.stats.PeakInUse {
			a.stats.PeakInUse = a.stats.InUse
		}
		if blk.class == classFallback {
			a.stats.Fallback += int64(size - old)
		}
		a.mu.Unlock()
		s := unsafe.Slice((*byte)(blk.p), blk.cap)[:size:size]
		if size > old {
			zero(s[old:])
		}
		return s
	}
	a.mu.Unlock()
	out := a.Allocate(size)
	copy(out, unsafe.Slice((*byte)(blk.p), old))
	a.Free(b)
	return out
}

// Close gives all pinned memory back to the driver. It fails, and frees
// only the cache, while buffers are still in use.
func (a *PinnedAllocator) Close() error {
	a.mu.Lock()
	drop := a.cache
	for _, b := range drop {
		a.stats.Cached -= int64(b.cap)
		a.stats.Pinned -= int64(b.cap)
	}
	a.cache = nil
	if len(a.live) > 0 {
		n, bytes := len(a.live), a.stats.InUse
		a.mu.Unlock()
		a.release(drop)
		return fmt.Errorf("gpu: PinnedAllocator closed with %d buffers (%s) in use", n, bytesize.Format(bytes))
	}
	slabs := a.slabs
	a.slabs = nil
	a.free = [numClasses][]unsafe.Pointer{}
	a.stats.Pinned -= int64(len(slabs)) * slabSize
	a.mu.Unlock()
	a.release(drop)
	var first error
	for _, s := range slabs {
		if err := a.mem.free(s); err != nil && first == nil {
			first = err
		}
	}
	return first
}
