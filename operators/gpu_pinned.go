package operators

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
)

// Pinned host memory kept between runs. cuMemHostAlloc faults in, zeroes
// and pins every page on one thread: a search's 64 bytes of counters cost
// about 1.6 ms that way on the GPU machine (as much as a BFS of Kronecker
// 22), and pinning a result's 19 MB more than copying it. So a run takes
// its pinned buffers from the backend's pool and gives them back.

// pinnedKeepBytes is the most pinned memory the pool keeps while no run
// uses it: room for the staging buffers of four downloads at once (a
// server's default job slots; a Kronecker 22 BFS result's 39 MB stage in a
// 64 MB class) besides the small buffers, and for the results' columns
// that pinnedResultsMax allows. At 256 MB, a Flight server under 16
// clients pinned and unpinned a 64 MB buffer every few queries (0.37 s of
// CPU in a 2.6 s run). Each GPU's backend keeps its own pool; more job
// slots than four bring the churn back (each is still correct). A
// variable, as pinnedResultsMax, so that tests can lower it.
var pinnedKeepBytes = 320<<20 + pinnedResultsMax

// pinnedMinClass is the smallest buffer the pool hands out (a page).
const pinnedMinClass = 4 << 10

// pinnedPool keeps free pinned buffers by size class (powers of two).
type pinnedPool struct {
	mu     sync.Mutex
	free   map[int][]*gpu.HostBuffer
	kept   int64
	lent   int64 // bytes of the buffers results hold (resultLease)
	closed bool  // the backend closed: buffers given back are freed
}

// pinnedClass is the size of the buffer that holds bytes.
func pinnedClass(bytes int) int {
	if bytes <= pinnedMinClass {
		return pinnedMinClass
	}
	return 1 << bits.Len(uint(bytes-1))
}

// pinned is a pinned buffer of at least bytes, and the call that gives it
// back (once, after every copy into or out of it has finished).
func (b *GPU) pinned(bytes int) (*gpu.HostBuffer, func(), error) {
	class := pinnedClass(bytes)
	p := &b.pins
	p.mu.Lock()
	h := p.take(class)
	p.mu.Unlock()
	if h == nil {
		var err error
		if h, err = b.ctx.AllocHost(class); err != nil {
			return nil, nil, err
		}
	}
	return h, func() { p.put(h) }, nil
}

// take is a kept buffer of size bytes, or nil; p.mu is held.
func (p *pinnedPool) take(size int) *gpu.HostBuffer {
	list := p.free[size]
	if len(list) == 0 {
		return nil
	}
	h := list[len(list)-1]
	p.free[size] = list[:len(list)-1]
	p.kept -= int64(size)
	return h
}

// put keeps h for a later run, making room by freeing kept buffers of other
// sizes (those a server's earlier graphs' results took) where the pool
// would hold more than pinnedKeepBytes: the sizes in use stay, rather than
// every buffer of them being pinned afresh.
func (p *pinnedPool) put(h *gpu.HostBuffer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || int64(h.Size()) > pinnedKeepBytes {
		h.Free()
		return
	}
	for size, list := range p.free {
		if p.kept+int64(h.Size()) <= pinnedKeepBytes {
			break
		}
		if size == h.Size() {
			continue
		}
		for len(list) > 0 && p.kept+int64(h.Size()) > pinnedKeepBytes {
			list[len(list)-1].Free()
			list = list[:len(list)-1]
			p.kept -= int64(size)
		}
		p.free[size] = list
	}
	if p.kept+int64(h.Size()) > pinnedKeepBytes {
		h.Free()
		return
	}
	if p.free == nil {
		p.free = map[int][]*gpu.HostBuffer{}
	}
	p.free[h.Size()] = append(p.free[h.Size()], h)
	p.kept += int64(h.Size())
}

// close frees the kept buffers.
func (p *pinnedPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for class, list := range p.free {
		for _, h := range list {
			h.Free()
		}
		delete(p.free, class)
	}
	p.kept = 0
	p.closed = true
}

// hostCopy is one device buffer's way to Go memory: all of src into dst.
type hostCopy struct {
	dst []byte
	src *gpu.DeviceBuffer
}

func hostCopyOf[T gpu.Scalar](dst []T, src *gpu.DeviceBuffer) hostCopy {
	return hostCopy{dst: alloc.Bytes(dst), src: src}
}

// downloadAll copies a run's results to host memory. Into pinned memory
// (a result's columns under PinnedResults) the DMA writes the columns
// themselves; the others go through a pinned buffer from the pool: the
// DMA at the bus's speed (a pageable copy runs at a fraction of it), then
// copies by several cores into dst, in pieces of at most downloadStage
// bytes (results of billions of vertices are not pinned whole). It returns
// when every dst holds its data. Where no pinned memory can be had it
// copies pageable, as before.
func (b *GPU) downloadAll(s *gpu.Stream, ds ...hostCopy) error {
	var staged []hostCopy
	for _, d := range ds {
		if !gpu.IsPinned(d.dst) {
			staged = append(staged, d)
			continue
		}
		if err := d.src.CopyToHost(s, d.dst); err != nil {
			return err
		}
	}
	if len(staged) == 0 {
		return s.Synchronize() // the copies into pinned memory are asynchronous
	}
	return b.downloadStaged(s, staged)
}

// downloadStaged is downloadAll's copies into Go memory, after any queued
// on s: it returns once s has finished them all (every path synchronizes
// s).
func (b *GPU) downloadStaged(s *gpu.Stream, ds []hostCopy) error {
	total := 0
	for _, d := range ds {
		total += len(d.dst)
	}
	if total < downloadPinnedMin {
		return downloadPageable(s, ds)
	}
	h, release, err := b.pinned(min(total, downloadStage))
	if err != nil {
		return downloadPageable(s, ds)
	}
	staged := h.Bytes()
	// Copies into the staging buffer run asynchronously: it goes back to
	// the pool only once the stream has finished with it.
	queued := false
	defer func() {
		if queued && s.Synchronize() != nil {
			return // the DMA's state is unknown: never reuse the buffer
		}
		release()
	}()
	// The pieces: (download, offset, length), filled up to the stage size.
	type piece struct{ d, off, n int }
	var batch []piece
	at := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		queued = false
		at = 0
		for _, p := range batch {
			copyParallel(ds[p.d].dst[p.off:p.off+p.n], staged[at:at+p.n])
			at += p.n
		}
		batch, at = batch[:0], 0
		return nil
	}
	for i, d := range ds {
		for off := 0; off < len(d.dst); {
			if at == len(staged) {
				if err := flush(); err != nil {
					return err
				}
			}
			n := min(len(d.dst)-off, len(staged)-at)
			src, err := d.src.Slice(int64(off), int64(n))
			if err != nil {
				return err
			}
			queued = true
			if err := src.CopyToHost(s, staged[at:at+n]); err != nil {
				return err
			}
			batch = append(batch, piece{i, off, n})
			at += n
			off += n
		}
	}
	return flush()
}

// downloadPageable copies each download to Go memory with the driver's
// own staging, and waits for s.
func downloadPageable(s *gpu.Stream, ds []hostCopy) error {
	for _, d := range ds {
		if err := d.src.CopyToHost(s, d.dst); err != nil {
			return err
		}
	}
	return s.Synchronize()
}

// downloadPinnedMin is the size below which a pageable copy is as fast;
// downloadStage the most pinned memory one download stages through.
// Variables so that tests can stage small graphs' results in many pieces.
var (
	downloadPinnedMin = 1 << 20
	downloadStage     = 64 << 20
)

// copyPiece is what one goroutine of copyParallel copies at a time.
const copyPiece = 2 << 20

// copyParallel copies src to dst on a few goroutines of its own
// (par.Goroutines): the first touch of fresh Go memory faults its pages in
// one by one, which several cores do faster than one.
func copyParallel(dst, src []byte) {
	pieces := (len(src) + copyPiece - 1) / copyPiece
	workers := min(pieces, par.Workers(), 8)
	if workers <= 1 {
		copy(dst, src)
		return
	}
	par.Goroutines(workers, func(w int) {
		for i := w; i < pieces; i += workers {
			lo, hi := i*copyPiece, min((i+1)*copyPiece, len(src))
			copy(dst[lo:hi], src[lo:hi])
		}
	})
}

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

// resultSlice is n elements of T for a result's column: pinned memory
// where the run is under PinnedResults and the pool lends it, else
// released results' Go memory where there is some, not zeroed either
// way; the caller writes every element. The memory goes back with
// r.Release.
func resultSlice[T gpu.Scalar](r *Result, n int) []T {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if size == 0 {
		return nil
	}
	b := r.lease.bytes(size)
	if b == nil {
		if p, ok := resultMemory.Load(size); ok {
			if got, _ := p.(*sync.Pool).Get().(*[]byte); got != nil {
				b = *got
			}
		}
		if b == nil {
			b = make([]byte, size)
		}
		r.recycle = append(r.recycle, b)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// Release gives the memory of the result's columns to later GPU runs. Only
// for a caller that holds nothing of the columns any more (no slice of
// them, no Arrow array over them): the memory is overwritten by the next
// run. The columns are emptied. A result never released is collected as
// usual, but for its pinned memory (PinnedResults), which stays lent.
func (r *Result) Release() {
	for _, b := range r.recycle {
		p, ok := resultMemory.Load(len(b))
		if !ok {
			if resultSizes.Add(1) > maxResultSizes {
				continue // many sizes: a server of many graphs keeps none
			}
			p, _ = resultMemory.LoadOrStore(len(b), &sync.Pool{})
		}
		p.(*sync.Pool).Put(&b)
	}
	r.recycle = nil
	r.lease.release()
	r.lease = nil
	r.Columns = nil
}

// PinnedResults marks ctx so that the GPU runs under it put their results'
// columns in pinned host memory lent by the backend's pool, which the
// download writes straight into: a Kronecker 22 BFS result's 39 MB were
// otherwise copied out of a pinned staging buffer on 8 cores before a
// Flight result's first byte (its schema 2-2.7 ms later on the H100
// machine, BENCHMARKS.md). The CPU reads the pinned memory as fast as Go
// memory (BenchmarkGPUHostRead). Result.Release gives the memory
// back; so only for callers that release every result they get (gpipe
// serve): a result never released keeps its pinned memory lent, and the
// pool lends at most pinnedResultsMax, then Go memory again.
func PinnedResults(ctx context.Context) context.Context {
	return context.WithValue(ctx, pinnedResultsKey{}, true)
}

type pinnedResultsKey struct{}

// pinnedResultsMax is the most pinned memory the pool lends to results at
// once: four Kronecker 22 BFS results (39 MB each), about a Flight
// server's results in flight under its default four job slots.
var pinnedResultsMax int64 = 192 << 20

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

// leaseKey carries a run's lease to where its result is made.
type leaseKey struct{}

// leaseOf is the lease of the run under ctx (GPU.Run), or nil.
func leaseOf(ctx context.Context) *resultLease {
	l, _ := ctx.Value(leaseKey{}).(*resultLease)
	return l
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
	if p.closed || p.lent+int64(class) > pinnedResultsMax {
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
