package gpuop

import (
	"math/bits"
	"sync"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
)

// Pinned host memory kept between runs. cuMemHostAlloc faults in, zeroes
// and pins every page on one thread: a search's 64 bytes of counters cost
// about 1.6 ms that way on the GPU machine (as much as a BFS of Kronecker
// 22), and pinning a result's 19 MB more than copying it. So a run takes
// its pinned buffers from the backend's pool and gives them back.

// pinnedKeepBytes is the most pinned memory the pool keeps (pinnedPool.keep)
// while no run uses it: room for the staging buffers of four downloads at once (a
// server's default job slots; a Kronecker 22 BFS result's 39 MB stage in a
// 64 MB class) besides the small buffers, and for the results' columns
// that pinnedResultsMax allows. At 256 MB, a Flight server under 16
// clients pinned and unpinned a 64 MB buffer every few queries (0.37 s of
// CPU in a 2.6 s run). Each GPU's backend keeps its own pool; more job
// slots than four bring the churn back (each is still correct). A
// pool's field, as the results' limit, so that tests can lower it.
const pinnedKeepBytes = 320<<20 + pinnedResultsMax

// pinnedMinClass is the smallest buffer the pool hands out (a page).
const pinnedMinClass = 4 << 10

// pinnedPool keeps free pinned buffers by size class (powers of two).
type pinnedPool struct {
	mu     sync.Mutex
	free   map[int][]*gpu.HostBuffer
	kept   int64
	lent   int64 // bytes of the buffers results hold (resultLease)
	closed bool  // the backend closed: buffers given back are freed
	// keep is the most the pool keeps (pinnedKeepBytes), lendMax the most
	// it lends results (pinnedResultsMax).
	keep, lendMax int64
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
	if p.closed || int64(h.Size()) > p.keep {
		h.Free()
		return
	}
	for size, list := range p.free {
		if p.kept+int64(h.Size()) <= p.keep {
			break
		}
		if size == h.Size() {
			continue
		}
		for len(list) > 0 && p.kept+int64(h.Size()) > p.keep {
			list[len(list)-1].Free()
			list = list[:len(list)-1]
			p.kept -= int64(size)
		}
		p.free[size] = list
	}
	if p.kept+int64(h.Size()) > p.keep {
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

// HostCopy is one device buffer's way to Go memory: all of src into dst.
type HostCopy struct {
	dst []byte
	src *gpu.DeviceBuffer
}

func HostCopyOf[T gpu.Scalar](dst []T, src *gpu.DeviceBuffer) HostCopy {
	return HostCopy{dst: alloc.Bytes(dst), src: src}
}

// DownloadAll copies a run's results to host memory. Into pinned memory
// (a result's columns under PinnedResults) the DMA writes the columns
// themselves; the others go through a pinned buffer from the pool: the
// DMA at the bus's speed (a pageable copy runs at a fraction of it), then
// copies by several cores into dst, in pieces of at most downloadStage
// bytes (results of billions of vertices are not pinned whole). It returns
// when every dst holds its data. Where no pinned memory can be had it
// copies pageable, as before.
func (b *GPU) DownloadAll(s *gpu.Stream, ds ...HostCopy) error {
	var staged []HostCopy
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
func (b *GPU) downloadStaged(s *gpu.Stream, ds []HostCopy) error {
	total := 0
	for _, d := range ds {
		total += len(d.dst)
	}
	stage := downloadStage
	if b.tune.stageMax > 0 {
		stage = b.tune.stageMax
	}
	if total < downloadPinnedMin && !b.tune.stageAll {
		return downloadPageable(s, ds)
	}
	h, release, err := b.pinned(min(total, stage))
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
func downloadPageable(s *gpu.Stream, ds []HostCopy) error {
	for _, d := range ds {
		if err := d.src.CopyToHost(s, d.dst); err != nil {
			return err
		}
	}
	return s.Synchronize()
}

// downloadPinnedMin is the size below which a pageable copy is as fast;
// downloadStage the most pinned memory one download stages through
// (tuning's stageAll and stageMax stage small graphs' results in many
// pieces).
const (
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
