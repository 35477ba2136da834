package gpuop

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
)

// ColumnUpload copies a table's edge columns to the GPU while a reader
// decodes them: it is the reader's edges.Stream, and a goroutine copies
// each row group through the staging ring as soon as it is decoded, so
// that the copy overlaps the read. The build that follows
// (BuildGraphFrom) starts from the columns on the device, provided every
// row arrived; otherwise it uploads the table itself. Finish must be
// called once the read has returned, and Release once the build has.
type ColumnUpload struct {
	// to is the GPU the columns go to, asked once the rows are known (nil:
	// none); b is its answer, set by the goroutine before any copy.
	to func(rows int64) *GPU
	b  *GPU

	// Set by Begin, before the goroutine starts.
	rows     int64
	keyType  edges.KeyType
	weighted bool
	keySize  int64
	pieces   chan upPiece

	off      atomic.Bool // nothing more is copied: refused, or failed
	finish   sync.Once
	done     chan struct{} // closed when the goroutine has finished
	cols     columns       // the goroutine's, then take's
	copied   int64         // rows copied
	err      error
	finished time.Time // when the last copy completed
}

type upPiece struct {
	first int64
	c     edges.Chunk
}

// NewColumnUpload is an upload to b for the table a reader is about to
// read.
func (b *GPU) NewColumnUpload() *ColumnUpload {
	return NewColumnUploadTo(func(int64) *GPU { return b })
}

// NewColumnUploadTo is an upload for the table a reader is about to read,
// to the GPU to names once the reader knows the table's rows (to may wait
// for the GPU to open: the reader goes on meanwhile); to returning nil
// copies nothing.
func NewColumnUploadTo(to func(rows int64) *GPU) *ColumnUpload {
	return &ColumnUpload{to: to, done: make(chan struct{})}
}

// Begin starts the upload of a table of rows rows (edges.Stream), unless
// the GPU will not build it or its columns do not fit: the pieces queue
// until the GPU is known.
func (u *ColumnUpload) Begin(rows int64, keys edges.KeyType, weighted bool) {
	u.rows, u.keyType, u.weighted = rows, keys, weighted
	_, u.keySize = keyKernel(keys)
	if keys == edges.KeyString || 2*rows > maxDeviceEndpoints {
		u.off.Store(true)
		return
	}
	u.pieces = make(chan upPiece, 4096)
	go u.run()
}

// refused says why the upload's columns do not go to b, or "".
func (u *ColumnUpload) refused(b *GPU) string {
	if b == nil {
		return "no GPU builds the graph"
	}
	cols := 2 * u.rows * u.keySize
	if u.weighted {
		cols += 8 * u.rows
	}
	return b.memoryRefusal(cols)
}

// Rows queues rows [first, first+c.Len()) for the copy (edges.Stream).
func (u *ColumnUpload) Rows(first int64, c *edges.Chunk) {
	if u.off.Load() || u.pieces == nil {
		return
	}
	u.pieces <- upPiece{first, *c}
}

// Finish says that no more rows will come. Safe to call more than once.
func (u *ColumnUpload) Finish() {
	u.finish.Do(func() {
		if u.pieces == nil {
			close(u.done)
			return
		}
		close(u.pieces)
	})
}

// run asks for the GPU, then copies the pieces as they come, holding the
// build lock (the staging ring is the build's) until the last has reached
// the device. Without a GPU it drains them.
func (u *ColumnUpload) run() {
	b := u.to(u.rows)
	if why := u.refused(b); why != "" {
		u.off.Store(true)
		for range u.pieces {
		}
		close(u.done)
		return
	}
	u.b = b
	b.buildMu.Lock()
	defer b.buildMu.Unlock()
	defer close(u.done)
	s, err := b.ctx.NewStream()
	if err != nil {
		u.fail(err)
		return
	}
	defer s.Destroy()
	st, err := b.stager()
	if err == nil {
		u.cols.src, err = b.ctx.Alloc(max(u.rows*u.keySize, 8))
	}
	if err == nil {
		u.cols.dst, err = b.ctx.Alloc(max(u.rows*u.keySize, 8))
	}
	if err == nil && u.weighted {
		u.cols.w, err = b.ctx.Alloc(max(u.rows*8, 8))
	}
	if err != nil {
		u.fail(err)
	}
	for p := range u.pieces {
		if u.off.Load() {
			continue // drained, so that the reader never blocks
		}
		n := int64(p.c.Len())
		err := st.copy(s, u.cols.src, p.first*u.keySize, keyBytes(&p.c.Src))
		if err == nil {
			err = st.copy(s, u.cols.dst, p.first*u.keySize, keyBytes(&p.c.Dst))
		}
		if err == nil && u.weighted {
			err = st.copy(s, u.cols.w, p.first*8, alloc.Bytes(p.c.Weight))
		}
		if err != nil {
			u.fail(err)
			continue
		}
		u.copied += n
	}
	if err := s.Synchronize(); err != nil {
		u.fail(err)
	}
	u.finished = time.Now()
}

// fail stops the copies; the build uploads the table itself.
func (u *ColumnUpload) fail(err error) {
	u.off.Store(true)
	if u.err == nil {
		u.err = err
	}
}

// take waits for the upload and hands its columns over, if they are all
// of t's and on b (with weights when the build needs them); it returns how long it
// waited. Otherwise it frees them and returns false.
func (u *ColumnUpload) take(b *GPU, t *edges.Table, weighted bool) (columns, time.Duration, bool) {
	u.Finish()
	start := time.Now()
	<-u.done
	waited := time.Since(start)
	whole := !u.off.Load() && u.b == b && u.err == nil && u.copied == u.rows && u.rows == t.NumEdges() &&
		u.keyType == t.KeyType && (u.weighted || !weighted)
	if !whole {
		u.Release()
		return columns{}, 0, false
	}
	cols := u.cols
	if !weighted && cols.w != nil {
		cols.w.Free()
		cols.w = nil
	}
	u.cols = columns{}
	return cols, waited, true
}

// Release frees the columns on the device if no build took them. It waits
// for the copies to finish; call Finish first.
func (u *ColumnUpload) Release() {
	u.Finish()
	<-u.done
	for _, buf := range []*gpu.DeviceBuffer{u.cols.src, u.cols.dst, u.cols.w} {
		if buf != nil {
			buf.Free()
		}
	}
	u.cols = columns{}
}
