package parquet

import (
	"context"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
)

// File is one Parquet file to read: its bytes through R (a file, a
// mapping, an object in a store read by ranges), named Name in messages.
type File struct {
	Name string
	R    io.ReaderAt
	Size int64
}

// footersInFlight bounds the footers read at once: over an object store
// each is a request or two, whose latency the others hide.
const footersInFlight = 16

// ReadFiles reads the edge columns of Parquet files as one table named
// name: one chunk per row group, the row groups of every file decoded in
// parallel into columns that hold all their rows. The rows are numbered
// across the files in order, and with more than one file Table.Parts says
// where each file's rows start. The files must agree on the key type and
// on having weights; the first that does not is the error, naming it and
// the first file. Errors about a file's rows name the file and its row.
func ReadFiles(ctx context.Context, name string, files []File, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	readers, keys, err := openReaders(ctx, files, opts)
	if err != nil {
		return nil, err
	}
	first := readers[0]
	for i, r := range readers[1:] {
		k0, k := keys[0], keys[i+1]
		if err := edges.CheckPartAgrees(first.name, r.name, opts.Columns, k0.src, k.src, len(first.cols) > 2, len(r.cols) > 2); err != nil {
			return nil, err
		}
		dstCols := opts.Columns
		dstCols.Src = dstCols.Dst // the error names the destination column
		if err := edges.CheckPartAgrees(first.name, r.name, dstCols, k0.dst, k.dst, false, false); err != nil {
			return nil, err
		}
	}
	s := &fileSet{name: name, opts: opts, readers: readers, key: keys[0]}
	if len(files) == 1 {
		s.name = first.name
	}
	return s.read(ctx)
}

// openReaders reads the footers of files, footersInFlight at a time, and
// plans their row groups. The error is the first file's that has one.
func openReaders(ctx context.Context, files []File, opts edges.Options) ([]*reader, []keyPair, error) {
	readers := make([]*reader, len(files))
	keys := make([]keyPair, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	slots := make(chan struct{}, footersInFlight)
	for i, f := range files {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			readers[i], keys[i], errs[i] = openReader(ctx, f, opts)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return readers, keys, nil
}

// openReader checks one file's frame and footer, finds its edge columns
// and plans its row groups.
func openReader(ctx context.Context, f File, opts edges.Options) (*reader, keyPair, error) {
	if err := checkFrame(f.Name, f.R, f.Size); err != nil {
		return nil, keyPair{}, err
	}
	if err := checkSchemaTree(f.Name, f.R, f.Size); err != nil {
		return nil, keyPair{}, err
	}
	pf, err := openFile(f.Name, f.R, f.Size)
	if err != nil {
		return nil, keyPair{}, err
	}
	r := &reader{ctx: ctx, name: f.Name, file: f.R, size: f.Size, opts: opts}
	key, err := r.resolve(pf)
	if err != nil {
		return nil, keyPair{}, err
	}
	if r.rows, err = r.planGroups(pf); err != nil {
		return nil, keyPair{}, err
	}
	r.failed.Store(math.MaxInt64)
	return r, key, nil
}

// fileSet is the files of one read.
type fileSet struct {
	name    string
	opts    edges.Options
	readers []*reader
	key     keyPair
	// groups lists every row group of every file, files in order: a task
	// is a (group, column) pair.
	groups []groupRef
}

type groupRef struct {
	r *reader
	g int
}

func (s *fileSet) read(ctx context.Context) (*edges.Table, error) {
	var total int64
	for _, r := range s.readers {
		r.base = total
		total += r.rows
		for g := range r.groups {
			s.groups = append(s.groups, groupRef{r, g})
		}
	}
	first := s.readers[0]
	t := &edges.Table{
		Name:         s.name,
		Columns:      s.opts.Columns,
		KeyType:      s.key.src,
		KeyArrowType: s.key.src.ArrowType(),
		HasWeight:    len(first.cols) > 2,
		WeightUnread: first.weightUnread,
		RowsRead:     total,
		Skipped:      edges.Skips{},
	}
	ok := false
	defer func() {
		if !ok {
			t.Release()
		}
	}()
	s.allocate(t, total)
	s.decode(t)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, r := range s.readers {
		if err := r.firstError(); err != nil {
			return nil, err
		}
	}
	if s.opts.SkipInvalid {
		par.For(len(s.groups), 1, func(lo, hi int) {
			for _, gr := range s.groups[lo:hi] {
				gr.r.compact(&gr.r.groups[gr.g])
			}
		})
	}
	for _, r := range s.readers {
		r.assemble(t)
	}
	if s.key.src != s.key.dst {
		if err := edges.UnifyKeys(t, s.key.src, s.key.dst, s.opts.Alloc); err != nil {
			return nil, err
		}
	}
	if len(s.readers) > 1 {
		for _, r := range s.readers {
			t.Parts = append(t.Parts, edges.Part{Name: r.name, FirstRow: r.base, Rows: r.rows})
		}
	}
	ok = true
	return t, nil
}

// decode decodes every (row group, column) of every file on all cores,
// handing each row group to the stream as soon as it is whole.
func (s *fileSet) decode(t *edges.Table) {
	nc := len(s.readers[0].cols)
	// Without SkipInvalid every row group's rows are in their final
	// places as soon as its columns are decoded: a stream gets them then.
	stream := s.opts.Stream
	if s.opts.SkipInvalid || s.key.src != s.key.dst {
		stream = nil // rows move, or keys are converted, after the decode
	}
	var decoded []atomic.Int32 // columns decoded, by row group
	if stream != nil {
		decoded = make([]atomic.Int32, len(s.groups))
		stream.Begin(t.RowsRead, t.KeyType, t.HasWeight)
	}
	scratch := make([]pageBuffers, par.Workers())
	par.ForWorker(len(s.groups)*nc, 1, func(w, lo, hi int) {
		for task := lo; task < hi; task++ {
			i, c := task/nc, task%nc
			r, g := s.groups[i].r, s.groups[i].g
			err := r.decodeChunk(g, c, &scratch[w])
			r.groups[g].cols[c].err = err
			if c == roleSrc {
				s.opts.CountRows(int64(r.groups[g].rows))
			}
			if err != nil && err != errAborted {
				s.fail(r, g)
			}
			if stream != nil && decoded[i].Add(1) == int32(nc) && r.decodedWhole(g) {
				ch := r.chunk(g)
				stream.Rows(r.base+r.groups[g].first, &ch)
			}
		}
	})
}

// fail records a failed row group g of r: the later row groups of r, and
// every row group of the files after it, stop early (their errors would
// not be reported).
func (s *fileSet) fail(r *reader, g int) {
	r.fail(g)
	for _, later := range s.readers {
		if later.base > r.base {
			later.fail(-1)
		}
	}
}

// allocate makes the destination columns for all the files' rows and gives
// each file its slice of them.
func (s *fileSet) allocate(t *edges.Table, total int64) {
	a, n := s.opts.Alloc, int(total)
	for ci := range s.readers[0].cols {
		c := &s.readers[0].cols[ci]
		var i32 []int32
		var u32 []uint32
		var i64 []int64
		var u64 []uint64
		var f64 []float64
		switch {
		case c.role == roleWeight:
			f64 = alloc.Slice[float64](a, n)
			t.OnRelease(func() { alloc.Free(a, f64) })
		case c.kind == valInt32:
			i32 = alloc.Slice[int32](a, n)
			t.OnRelease(func() { alloc.Free(a, i32) })
		case c.kind == valUint32:
			u32 = alloc.Slice[uint32](a, n)
			t.OnRelease(func() { alloc.Free(a, u32) })
		case c.kind == valInt64:
			i64 = alloc.Slice[int64](a, n)
			t.OnRelease(func() { alloc.Free(a, i64) })
		case c.kind == valUint64:
			u64 = alloc.Slice[uint64](a, n)
			t.OnRelease(func() { alloc.Free(a, u64) })
		}
		for _, r := range s.readers {
			lo, hi := r.base, r.base+r.rows
			rc := &r.cols[ci]
			switch {
			case f64 != nil:
				rc.f64 = f64[lo:hi:hi]
			case i32 != nil:
				rc.i32 = i32[lo:hi:hi]
			case u32 != nil:
				rc.u32 = u32[lo:hi:hi]
			case i64 != nil:
				rc.i64 = i64[lo:hi:hi]
			case u64 != nil:
				rc.u64 = u64[lo:hi:hi]
			}
		}
	}
}
