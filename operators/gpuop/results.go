package gpuop

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gpipe/gpipe/gpu"
)

// The host memory of GPU runs' results: Go memory reused from released
// results, or pinned memory lent by the backend's pool (PinnedResults).

// Go memory for the results of GPU runs, reused once a result is released
// (Result.Release): a new slice of tens of megabytes is zeroed by the
// allocating goroutine alone and then faulted in page by page, 4 ms of a
// Flight server's BFS of Kronecker 22 before its first byte, for memory the
// download overwrites whole. Pools by exact size: a graph's results repeat
// their sizes, and sync.Pool lets the collector drop what stays unused.
var resultMemory sync.Map // size in bytes → *sync.Pool of *[]byte

// resultSizes counts the sizes resultMemory was asked to keep, at most
// maxResultSizes (a pool each, empty once unused, but never removed).
var resultSizes atomic.Int64

const maxResultSizes = 256

// resultMem is the host memory of one run's result columns: released
// results' Go memory, or pinned memory lent by b's pool where the run is
// under PinnedResults. The enactor gives it to the result's release.
type resultMem struct {
	lease   *resultLease
	recycle [][]byte
}

func newResultMem(ctx context.Context, b *GPU) *resultMem {
	return &resultMem{lease: leaseFor(ctx, b)}
}

// resultSlice is n elements of T for a result's column: pinned memory
// where the run is under PinnedResults and the pool lends it, else
// released results' Go memory where there is some, not zeroed either
// way; the caller writes every element. The memory goes back with the
// result's Release.
func resultSlice[T gpu.Scalar](m *resultMem, n int) []T {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if size == 0 {
		return nil
	}
	b := m.lease.bytes(size)
	if b == nil {
		if p, ok := resultMemory.Load(size); ok {
			if got, _ := p.(*sync.Pool).Get().(*[]byte); got != nil {
				b = *got
			}
		}
		if b == nil {
			b = make([]byte, size)
		}
		m.recycle = append(m.recycle, b)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// release gives the columns' memory to later runs (operators.Result's
// Release calls it): Go memory to the pools by size, pinned memory to the
// backend's pool.
func (m *resultMem) release() {
	for _, b := range m.recycle {
		p, ok := resultMemory.Load(len(b))
		if !ok {
			if resultSizes.Add(1) > maxResultSizes {
				continue // many sizes: a server of many graphs keeps none
			}
			p, _ = resultMemory.LoadOrStore(len(b), &sync.Pool{})
		}
		p.(*sync.Pool).Put(&b)
	}
	m.recycle = nil
	m.lease.release()
	m.lease = nil
}

// abandon gives back the lease of a run that failed, once the GPU is done
// with it.
func (m *resultMem) abandon() { m.lease.abandon() }

// PinnedResults marks ctx so that the GPU runs under it put their results'
// columns in pinned host memory lent by the backend's pool, which the
// download writes straight into: a Kronecker 22 BFS result's 39 MB were
// otherwise copied out of a pinned staging buffer on 8 cores before a
// Flight result's first byte (its schema 1.8-2.7 ms later on the H100
// machine, BENCHMARKS.md). The CPU reads the pinned memory as fast as Go
// memory (BenchmarkGPUHostRead). Result.Release gives the memory back; so
// only for callers that release every result they get (gpipe serve): a
// result never released keeps its pinned memory lent, and the pool lends
// at most pinnedResultsMax, then Go memory again.
func PinnedResults(ctx context.Context) context.Context {
	return context.WithValue(ctx, pinnedResultsKey{}, true)
}

type pinnedResultsKey struct{}

// pinnedResultsMax is the most pinned memory the pool lends to results at
// once (pinnedPool.lendMax): four Kronecker 22 BFS results (39 MB each),
// about a Flight server's results in flight under its default four job
// slots.
const pinnedResultsMax = 192 << 20

// resultLease is the pinned memory a run's result holds: lent by b's pool
// (resultSlice), given back by Result.Release, or by abandon where the run
// fails. A nil lease lends nothing.
type resultLease struct {
	b    *GPU
	mu   sync.Mutex
	bufs []*gpu.HostBuffer
}

// LentPinnedBytes is the pinned host memory that results of b's runs
// under PinnedResults hold until released.
func (b *GPU) LentPinnedBytes() int64 {
	b.pins.mu.Lock()
	defer b.pins.mu.Unlock()
	return b.pins.lent
}

// leaseFor is a lease for a run of b under ctx, nil unless ctx asks for
// pinned results.
func leaseFor(ctx context.Context, b *GPU) *resultLease {
	if ctx.Value(pinnedResultsKey{}) == nil {
		return nil
	}
	return &resultLease{b: b}
}

// resultClass is the size of the pinned buffer that holds a column of
// bytes: a power of two up to 1 MiB, then whole MiBs, so that a result's
// columns (whose sizes repeat from query to query on a graph) do not
// waste up to half their memory.
func resultClass(bytes int) int {
	if bytes <= 1<<20 {
		return pinnedClass(bytes)
	}
	return (bytes + 1<<20 - 1) &^ (1<<20 - 1)
}

// bytes is size bytes of pinned memory, or nil where the lease is nil or
// the pool has lent its most.
func (l *resultLease) bytes(size int) []byte {
	if l == nil {
		return nil
	}
	class := resultClass(size)
	p := &l.b.pins
	p.mu.Lock()
	if p.closed || p.lent+int64(class) > p.lendMax {
		p.mu.Unlock()
		return nil
	}
	h := p.take(class)
	p.lent += int64(class)
	p.mu.Unlock()
	if h == nil {
		var err error
		if h, err = l.b.ctx.AllocHost(class); err != nil {
			p.mu.Lock()
			p.lent -= int64(class)
			p.mu.Unlock()
			return nil
		}
	}
	l.mu.Lock()
	l.bufs = append(l.bufs, h)
	l.mu.Unlock()
	return h.Bytes()[:size]
}

// release gives the lease's buffers back to the pool.
func (l *resultLease) release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	bufs := l.bufs
	l.bufs = nil
	l.mu.Unlock()
	p := &l.b.pins
	for _, h := range bufs {
		p.mu.Lock()
		p.lent -= int64(h.Size())
		p.mu.Unlock()
		p.put(h)
	}
}

// abandon gives the buffers of a failed run's lease back once the GPU has
// finished every copy into them; where that cannot be known (the context
// failed), they stay lent rather than be written by a late copy.
func (l *resultLease) abandon() {
	if l == nil {
		return
	}
	l.mu.Lock()
	none := len(l.bufs) == 0
	l.mu.Unlock()
	if none || l.b.ctx.Synchronize() == nil {
		l.release()
	}
}
