package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpipe/gpipe/internal/usererr"
)

// source is a store objects are read from by ranges: S3 or an HTTP server.
type source interface {
	// getRange starts a read of n bytes at off of the object, its own
	// retries (of the request, until the body starts) done; the error is a
	// user error already.
	getRange(ctx context.Context, info Info, off, n int64) (io.ReadCloser, error)
	// where names the store for fixes ("the store at http://...", "S3").
	where() string
}

// Sizes of the ends of an object kept in memory after their first read:
// a Parquet reader reads the magic at the head and the footer at the tail
// in several small reads, each of which would otherwise be a request.
const (
	headCache = 64 << 10
	tailCache = 1 << 20
	// readAllPiece is the range one request of ReadAll fetches.
	readAllPiece = 8 << 20
)

// Object is an object opened for reading: an io.ReaderAt whose reads are
// ranged GETs, safe for concurrent use.
type Object struct {
	ctx  context.Context
	src  source
	info Info
	opts Options
	head cached
	tail cached
}

// cached is one end of the object, read once.
type cached struct {
	once sync.Once
	off  int64
	data []byte
	err  error
}

// Size is the object's size in bytes.
func (o *Object) Size() int64 { return o.info.Size }

// Name is the object's address.
func (o *Object) Name() string { return o.info.Loc.URL }

// ReadAt reads len(p) bytes at off: from the cached ends where they hold
// them, else by one ranged GET (resumed where it breaks off).
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("objstore: negative offset")
	}
	if off >= o.info.Size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), o.info.Size-off)
	if data, ok, err := o.fromCache(off, n); ok || err != nil {
		if err != nil {
			return 0, err
		}
		copy(p, data)
	} else {
		r := o.RangeReader(off, n)
		_, err := io.ReadFull(r, p[:n])
		r.Close()
		if err != nil {
			return 0, err
		}
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// fromCache serves [off, off+n) from the head or tail cache when it lies
// in one, loading that end on first use.
func (o *Object) fromCache(off, n int64) ([]byte, bool, error) {
	size := o.info.Size
	tailStart := max(0, size-tailCache)
	var c *cached
	var start, end int64
	switch {
	case off >= tailStart:
		c, start, end = &o.tail, tailStart, size
	case off+n <= min(headCache, tailStart):
		c, start, end = &o.head, 0, min(headCache, tailStart)
	default:
		return nil, false, nil
	}
	c.once.Do(func() {
		c.off = start
		c.data = make([]byte, end-c.off)
		r := o.RangeReader(c.off, end-c.off)
		_, c.err = io.ReadFull(r, c.data)
		r.Close()
	})
	if c.err != nil {
		return nil, true, c.err
	}
	return c.data[off-c.off : off-c.off+n], true, nil
}

// RangeReader streams n bytes at off: one GET, which a failure of its body
// (a cut connection, a stall) resumes from the byte it reached.
func (o *Object) RangeReader(off, n int64) io.ReadCloser {
	return &rangeReader{o: o, off: off, end: off + n}
}

// ReadAll reads the whole object into memory, in ranges of 8 MiB fetched
// Options.Concurrency at a time.
func (o *Object) ReadAll() ([]byte, error) {
	size := o.info.Size
	data := make([]byte, size)
	pieces := int((size + readAllPiece - 1) / readAllPiece)
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, pieces)
	var wg sync.WaitGroup
	for range min(pieces, o.opts.Concurrency) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= pieces {
					return
				}
				lo := int64(i) * readAllPiece
				hi := min(lo+readAllPiece, size)
				r := o.RangeReader(lo, hi-lo)
				_, err := io.ReadFull(r, data[lo:hi])
				r.Close()
				if err != nil {
					errs[i] = err
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// rangeReader is RangeReader's stream.
type rangeReader struct {
	o        *Object
	off, end int64 // the next byte, the range's end
	body     io.ReadCloser
	fails    int // attempts that failed since the last byte came
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	if int64(len(p)) > r.end-r.off {
		p = p[:r.end-r.off]
	}
	for {
		if err := r.o.ctx.Err(); err != nil {
			return 0, err
		}
		if r.body == nil {
			body, err := r.o.src.getRange(r.o.ctx, r.o.info, r.off, r.end-r.off)
			if err != nil {
				return 0, err
			}
			r.body = body
		}
		n, err := r.body.Read(p)
		r.off += int64(n)
		if n > 0 {
			r.fails = 0
		}
		switch {
		case r.off >= r.end:
			r.closeBody()
			return n, nil
		case err == nil:
			return n, nil
		}
		// The body ended early or broke: start again where it stopped.
		r.closeBody()
		if ctxErr := r.o.ctx.Err(); ctxErr != nil {
			return n, ctxErr
		}
		if r.fails++; r.fails >= r.o.opts.MaxAttempts {
			return n, r.bodyError(err)
		}
		if n > 0 {
			return n, nil
		}
		if err := sleep(r.o.ctx, backoff(r.fails, r.o.opts.MaxBackoff)); err != nil {
			return 0, err
		}
	}
}

func (r *rangeReader) closeBody() {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
}

func (r *rangeReader) Close() error {
	r.closeBody()
	return nil
}

// bodyError is the error of a read whose body broke off MaxAttempts times
// without a byte in between.
func (r *rangeReader) bodyError(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &usererr.Error{Kind: usererr.Internal, File: r.o.Name(), Row: -1,
		Problem: fmt.Sprintf("cannot read bytes %d to %d: the transfer broke off %d times in a row (%v)", r.off, r.end, r.fails, err),
		Fix:     "check that " + r.o.src.where() + " is reachable and working, then run the job again", Err: err}
}

// backoff is the wait before attempt n+1: exponential from 50 ms with full
// jitter, at most max.
func backoff(n int, maxWait time.Duration) time.Duration {
	d := 50 * time.Millisecond << min(n, 16)
	d = min(d, maxWait)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
