// Package pqwrite writes Arrow records as a Parquet file, encoding column
// chunks on all cores.
//
// Rows collect into row groups of Options.RowGroupRows rows. A full row
// group's column chunks are encoded at once, each by one of the writer's
// worker goroutines, while the caller goes on (making the next rows); the
// encoded row groups are written out in order, by the caller's goroutine,
// as they finish. At most a few row groups are in flight (see
// maxInFlight): their record slices, retained and never copied, and their
// encoded chunks.
//
// A chunk is encoded as Arrow's writers encode it, so that every reader
// reads it: a dictionary (PLAIN dictionary page, RLE_DICTIONARY data pages)
// where the chunk's distinct values fit in 1 MiB, else PLAIN; data pages
// v1 of about 1 MiB of values, definition levels in the RLE / bit-packed
// hybrid, every page with the CRC-32 of its bytes as stored (which gpipe's
// reader, parquet-go, pyarrow and parquet-java verify); statistics (min,
// max, null count) for each chunk; the Parquet
// schema annotated as Arrow annotates it, and the Arrow schema itself
// under ARROW:schema. parquet-go provides the thrift structures, the
// codecs and the encoder of dictionary indexes.
package pqwrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/gzip"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// createdBy names the writer in the footer, in the format's "NAME version
// VERSION" form: parquet-java ignores the byte array statistics of a file
// whose created_by does not parse, and readers that work around old
// writers' bugs (Arrow's, parquet-java's) match only their own names.
// gpipe has no release yet; its command prints "dev" for its version too.
const createdBy = "gpipe version dev"

const magic = "PAR1"

// Options says how to write.
type Options struct {
	// RowGroupRows is the number of rows in a row group (the last may
	// have fewer); it must be positive.
	RowGroupRows int64
	// Codec compresses the pages: format.Zstd (the fastest level, as
	// Arrow's default level 1), format.Snappy, format.Gzip or
	// format.Uncompressed.
	Codec format.CompressionCodec
	// Workers is the number of goroutines encoding column chunks; zero
	// means GOMAXPROCS.
	Workers int
}

// codecs are the codecs, nil for uncompressed pages: one of each for the
// process, since each keeps a pool of compressors (a zstd encoder holds
// megabytes of history buffers).
var codecs = map[format.CompressionCodec]compress.Codec{
	format.Uncompressed: nil,
	format.Zstd:         &zstd.Codec{Level: zstd.SpeedFastest},
	format.Snappy:       &snappy.Codec{},
	format.Gzip:         &gzip.Codec{Level: gzip.DefaultCompression},
}

// Writer writes one Parquet file. It is not safe for concurrent use.
type Writer struct {
	out    io.Writer
	pos    int64 // bytes written to out
	schema *arrow.Schema
	cols   []column
	opts   Options
	codec  compress.Codec

	cur       rowGroup    // the row group being filled
	flight    []*rowGroup // submitted, in file order
	maxFlight int         // most row groups submitted and not yet written
	tasks     chan task   // column chunks to encode
	workers   sync.WaitGroup
	started   bool
	stop      atomic.Bool // abort: workers skip what is left

	groups []format.RowGroup // written, for the footer
	rows   int64
	err    error // first error; the writer is spent once set
	closed bool
}

// rowGroup is one row group's record slices and, once done is closed, its
// encoded chunks.
type rowGroup struct {
	recs    []arrow.RecordBatch
	rows    int64
	chunks  []chunk
	errs    []error
	pending atomic.Int32 // chunks not yet encoded
	done    chan struct{}
}

// task is one column chunk of a row group.
type task struct {
	g   *rowGroup
	col int
}

// NewWriter starts a Parquet file of records of schema on out, or returns
// an error for a schema with a column that Supported refuses.
func NewWriter(out io.Writer, schema *arrow.Schema, opts Options) (*Writer, error) {
	if opts.RowGroupRows <= 0 {
		return nil, fmt.Errorf("pqwrite: row groups of %d rows", opts.RowGroupRows)
	}
	cols, err := columnsOf(schema)
	if err != nil {
		return nil, err
	}
	codec, ok := codecs[opts.Codec]
	if !ok {
		return nil, fmt.Errorf("pqwrite: codec %s is not supported", opts.Codec)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	w := &Writer{out: out, schema: schema, cols: cols, opts: opts, codec: codec, maxFlight: maxInFlight(opts.Workers, len(cols))}
	if err := w.write([]byte(magic)); err != nil {
		return nil, err
	}
	return w, nil
}

// maxInFlight is the most row groups submitted and not yet written: enough
// that every worker has a chunk to encode (a row group has one per column),
// and one more, written out while the others are encoded.
func maxInFlight(workers, cols int) int {
	return (workers+cols-1)/max(cols, 1) + 1
}

// Write adds rec's rows. The writer keeps rec (retained, not copied) until
// the row groups that hold its rows are written, at the latest until Close
// or Abort: Arrow records are immutable, so the caller must not change its
// buffers until then.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("pqwrite: Write after Close")
	}
	n := rec.NumRows()
	for off := int64(0); off < n; {
		k := min(n-off, w.opts.RowGroupRows-w.cur.rows)
		var s arrow.RecordBatch
		if k == n {
			rec.Retain()
			s = rec
		} else {
			s = rec.NewSlice(off, off+k)
		}
		w.cur.recs = append(w.cur.recs, s)
		w.cur.rows += k
		off += k
		if w.cur.rows == w.opts.RowGroupRows {
			if err := w.submit(); err != nil {
				return err
			}
		}
	}
	return w.writeDone()
}

// submit hands the row group being filled to the workers, first writing
// out row groups until fewer than maxFlight are in flight.
func (w *Writer) submit() error {
	g := &rowGroup{recs: w.cur.recs, rows: w.cur.rows, done: make(chan struct{})}
	w.cur = rowGroup{}
	for len(w.flight) >= w.maxFlight {
		if err := w.writeHead(); err != nil {
			g.release()
			return err
		}
	}
	g.chunks = make([]chunk, len(w.cols))
	g.errs = make([]error, len(w.cols))
	w.flight = append(w.flight, g)
	if len(w.cols) == 0 {
		close(g.done)
		return nil
	}
	w.start()
	g.pending.Store(int32(len(w.cols)))
	for col := range w.cols {
		w.tasks <- task{g, col}
	}
	return nil
}

// start starts the workers, on the first row group.
func (w *Writer) start() {
	if w.started {
		return
	}
	w.started = true
	// Never full: at most maxFlight row groups' tasks are queued.
	w.tasks = make(chan task, w.maxFlight*len(w.cols))
	w.workers.Add(w.opts.Workers)
	for range w.opts.Workers {
		go w.work()
	}
}

// work encodes column chunks until the writer closes.
func (w *Writer) work() {
	defer w.workers.Done()
	e := getEncoder(w.codec, &w.stop)
	defer putEncoder(e)
	for t := range w.tasks {
		g := t.g
		if !w.stop.Load() {
			g.chunks[t.col], g.errs[t.col] = w.encode(e, t)
		} else {
			g.errs[t.col] = errStopped
		}
		if g.pending.Add(-1) == 0 {
			close(g.done)
		}
	}
}

// encode encodes one column chunk; a panic becomes its error, since no
// caller could recover it on a worker's goroutine.
func (w *Writer) encode(e *encoder, t task) (ch chunk, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pqwrite: encoding column %q: %v", w.cols[t.col].name, r)
		}
	}()
	c := &w.cols[t.col]
	parts, err := partsOf(t.g.recs, t.col, c)
	defer func() {
		for i := range parts {
			parts[i].release()
		}
	}()
	if err != nil {
		return chunk{}, err
	}
	return e.encode(c, parts, int(t.g.rows))
}

// writeDone writes the row groups at the head of the queue that are
// encoded, without waiting for the others.
func (w *Writer) writeDone() error {
	for len(w.flight) > 0 {
		select {
		case <-w.flight[0].done:
			if err := w.writeHead(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// writeHead waits for the first row group in flight, writes its chunks and
// records them for the footer.
func (w *Writer) writeHead() error {
	g := w.flight[0]
	w.flight = w.flight[1:]
	<-g.done
	defer g.release()
	if w.err != nil {
		return w.err
	}
	for _, err := range g.errs {
		if err != nil {
			return w.fail(err)
		}
	}
	rg := format.RowGroup{NumRows: g.rows, FileOffset: w.pos, Ordinal: int16(min(len(w.groups), math.MaxInt16))}
	for i, ch := range g.chunks {
		c := &w.cols[i]
		start := w.pos
		if err := w.write(ch.buf); err != nil {
			return err
		}
		putBuffer(ch.buf)
		md := format.ColumnMetaData{
			Type:                  c.kind.physical(),
			Encoding:              ch.encodings,
			PathInSchema:          []string{c.name},
			Codec:                 w.opts.Codec,
			NumValues:             ch.values,
			TotalUncompressedSize: ch.uncompressed,
			TotalCompressedSize:   int64(len(ch.buf)),
			DataPageOffset:        start + ch.dictLen,
			Statistics:            ch.stats,
			EncodingStats:         ch.pages,
		}
		if ch.dictLen > 0 {
			md.DictionaryPageOffset = start
		}
		rg.Columns = append(rg.Columns, format.ColumnChunk{FileOffset: start, MetaData: md})
		rg.TotalByteSize += ch.uncompressed
		rg.TotalCompressedSize += int64(len(ch.buf))
	}
	w.groups = append(w.groups, rg)
	w.rows += g.rows
	return nil
}

// write writes b to the output.
func (w *Writer) write(b []byte) error {
	n, err := w.out.Write(b)
	w.pos += int64(n)
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// fail records the writer's first error and stops the workers' work.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
		w.stop.Store(true)
	}
	return w.err
}

// Close writes the last row group and the footer. The writer is done
// after it, whatever it returns.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	defer w.shutdown()
	if w.err == nil && w.cur.rows > 0 {
		if err := w.submit(); err != nil {
			return err
		}
	}
	for len(w.flight) > 0 && w.err == nil {
		if err := w.writeHead(); err != nil {
			return err
		}
	}
	if w.err != nil {
		return w.err
	}
	return w.footer()
}

// Abort gives up: the workers stop, the records are released, nothing
// more is written. It does nothing after Close.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.fail(errStopped)
	w.shutdown()
}

// shutdown stops the workers and releases every record still held.
func (w *Writer) shutdown() {
	w.closed = true
	if w.started {
		close(w.tasks)
		w.workers.Wait()
		w.started = false
	}
	for _, g := range w.flight {
		<-g.done
		g.release()
	}
	w.flight = nil
	w.cur.release()
}

// release lets go of the row group's records and encoded chunks.
func (g *rowGroup) release() {
	for _, r := range g.recs {
		r.Release()
	}
	g.recs, g.chunks = nil, nil
}

// footer writes the file metadata, its length and the closing magic.
func (w *Writer) footer() error {
	kvs, err := keyValues(w.schema)
	if err != nil {
		return w.fail(err)
	}
	orders := make([]format.ColumnOrder, len(w.cols))
	for i := range orders {
		orders[i] = format.ColumnOrder{Value: &format.TypeDefinedOrder{}}
	}
	md := format.FileMetaData{
		Version:          2,
		Schema:           schemaElements(w.cols),
		NumRows:          w.rows,
		RowGroups:        w.groups,
		KeyValueMetadata: kvs,
		CreatedBy:        createdBy,
		ColumnOrders:     orders,
	}
	b, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		return w.fail(fmt.Errorf("pqwrite: cannot encode the footer: %w", err))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(b)))
	b = append(b, magic...)
	return w.write(b)
}
