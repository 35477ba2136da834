// Package sink writes Arrow records (vertex tables, and the edge tables that
// `gpipe gen` makes) as Parquet, Arrow IPC file, Arrow IPC stream or CSV.
//
// Writers stream: records of any size go out in batches of at most
// Options.BatchRows rows as they come, and Close finishes the file. A file
// output is written to a temporary file in the same directory and renamed to
// its name only when Close succeeds, so a failed or interrupted job never
// leaves a half-written file that looks complete. The path "-" is standard
// output (an Arrow IPC stream unless Options.Format says otherwise).
package sink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Formats an output can have, by the names Options.Format and FormatOf use;
// they mirror the input formats of package ingest.
const (
	FormatParquet     = "parquet"
	FormatArrowFile   = "arrow"  // Arrow IPC file (.arrow, .feather, .ipc)
	FormatArrowStream = "arrows" // Arrow IPC stream (.arrows, and "-")
	FormatCSV         = "csv"    // CSV with a header row
)

// Default batch sizes, used when Options.BatchRows is zero.
const (
	// DefaultParquetRowGroup is the number of rows in a Parquet row group.
	DefaultParquetRowGroup = 1 << 20
	// DefaultIPCBatch is the number of rows in an Arrow IPC record batch.
	DefaultIPCBatch = 64 << 10
	// defaultCSVBatch bounds the rows a CSV writer formats per step; CSV has
	// no batches of its own.
	defaultCSVBatch = 64 << 10
)

// Compression names for Options.Compression.
const (
	CompressionZstd   = "zstd"   // Parquet default; also for Arrow IPC
	CompressionSnappy = "snappy" // Parquet only
	CompressionGzip   = "gzip"   // Parquet only
	CompressionLZ4    = "lz4"    // Arrow IPC only (LZ4 frame)
	CompressionNone   = "none"   // Arrow IPC and CSV default
)

// extensions is the help text that lists the extensions FormatOf knows.
const extensions = `use .parquet/.pq (Parquet), .arrow/.feather/.ipc (Arrow IPC file), .arrows (Arrow IPC stream), .csv, or "-" for an Arrow IPC stream on standard output; or name the format (--output-format parquet, arrow, arrows or csv)`

// FormatOf is the format a path's extension implies (case-insensitively):
// .parquet and .pq are Parquet, .arrow, .feather and .ipc an Arrow IPC file,
// .arrows an Arrow IPC stream, .csv CSV, and "-" an Arrow IPC stream on
// standard output. Any other extension is a usage error that lists these.
func FormatOf(path string) (string, error) {
	if path == "-" {
		return FormatArrowStream, nil
	}
	if path == "" {
		return "", usererr.New(usererr.Usage, "no output path given", `name an output file, or "-" for standard output`)
	}
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".parquet", ".pq":
		return FormatParquet, nil
	case ".arrow", ".feather", ".ipc":
		return FormatArrowFile, nil
	case ".arrows":
		return FormatArrowStream, nil
	case ".csv":
		return FormatCSV, nil
	}
	problem := fmt.Sprintf("cannot tell the output format from the extension %q", ext)
	if ext == "" {
		problem = "cannot tell the output format: the path has no extension"
	}
	return "", &usererr.Error{Kind: usererr.Usage, File: path, Row: -1, Problem: problem, Fix: extensions}
}

// normalFormat checks a format name given in Options.Format; it accepts the
// extensions without their dot as well ("pq", "feather", "ipc").
func normalFormat(format string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(format)); f {
	case FormatParquet, "pq":
		return FormatParquet, nil
	case FormatArrowFile, "feather", "ipc":
		return FormatArrowFile, nil
	case FormatArrowStream:
		return FormatArrowStream, nil
	case FormatCSV:
		return FormatCSV, nil
	}
	return "", usererr.New(usererr.Usage, fmt.Sprintf("unknown output format %q", format), "use parquet, arrow, arrows or csv")
}

// Options says how to write. The zero value picks the format by extension
// and uses the defaults below.
type Options struct {
	// Format overrides the format the extension implies: FormatParquet,
	// FormatArrowFile, FormatArrowStream or FormatCSV. With the path "-" it
	// chooses what goes to standard output (an Arrow IPC stream by default).
	Format string
	// BatchRows is the most rows in one Arrow IPC record batch (default
	// DefaultIPCBatch) or one Parquet row group (default
	// DefaultParquetRowGroup). Larger records are split into zero-copy
	// slices; row groups collect rows across records. Zero means the default.
	BatchRows int
	// Compression is the codec: for Parquet "zstd" (default), "snappy",
	// "gzip" or "none"; for Arrow IPC "none" (default, so that consumers can
	// memory-map the file), "zstd" or "lz4"; CSV is never compressed. Empty
	// means the format's default.
	Compression string
	// Stdout receives the output for the path "-"; it is flushed after every
	// Write and never closed. Nil means os.Stdout.
	Stdout io.Writer
	// Checksum writes the SHA-256 of a file output beside it, in
	// NAME.sha256 (ChecksumSuffix), as `sha256sum -c` reads it; ingest
	// verifies it when it reads NAME. Only a file can have one: with "-" or
	// a device or pipe it is a usage error.
	Checksum bool
	// MaxRowsPerFile is the most rows in one part file of a directory
	// output (DIR/, s3://bucket/prefix/); 0 sizes parts at about
	// DefaultPartBytes of column data (compressed, 128 to 512 MiB files).
	MaxRowsPerFile int64
	// Store says how s3:// outputs are reached: an S3-compatible endpoint,
	// retries, the parts of uploads. The zero value takes the AWS SDK's
	// configuration (AWS_ENDPOINT_URL, credentials) and objstore's
	// defaults.
	Store objstore.Options
}

// Writer writes records with the schema it was created for. It is not safe
// for concurrent use.
type Writer interface {
	// Write writes rec (of any size, in batches of at most
	// Options.BatchRows rows). A Parquet writer keeps rec (retained, not
	// copied) until the row groups that hold its rows are encoded, so that
	// encoding overlaps the caller's making of the next record: Arrow
	// records are immutable, and the caller must not change rec's buffers
	// before Close or Abort returns. Other formats are done with rec when
	// Write returns. After an error the writer is spent: later calls return
	// the same error and the output has been removed.
	Write(rec arrow.RecordBatch) error
	// Close finishes the output (the footer of a file, the end of a stream),
	// flushes it and, for a file, renames it into place. On error the output
	// is removed. Calling Close again returns the first call's result.
	Close() error
	// Abort gives up: it removes the temporary file and writes nothing more.
	// It does nothing after Close, so `defer w.Abort()` is a safe way to
	// clean up on every early return.
	Abort()
}

// encoder turns batches into one format's bytes on a buffered writer, on
// the caller's goroutine (the Parquet encoder encodes on others, but writes
// only within write and close).
type encoder interface {
	// write takes a batch; an encoder may keep it (retained) until close.
	write(rec arrow.RecordBatch) error
	close() error
	// abort stops the encoder's work and releases what it holds; it
	// writes nothing more. It does nothing after close.
	abort()
}

// WriteRecord writes one record to path: Create, Write in batches (checking
// ctx between them) and Close. On error, including a canceled ctx (returned
// as ctx.Err()), nothing is left at path.
func WriteRecord(ctx context.Context, path string, rec arrow.RecordBatch, opts Options) error {
	if rec == nil {
		return usererr.New(usererr.Internal, "sink: no record to write", "")
	}
	return WriteRows(ctx, path, rec.Schema(), rec.NumRows(), func(lo, hi int64) arrow.RecordBatch {
		return rec.NewSlice(lo, hi)
	}, opts)
}

// WriteRows writes a table of the given schema and number of rows to path,
// making each batch with rows(lo, hi) (the rows [lo, hi), released once
// written) only when it is written, so that a large table is never built
// whole and a canceled ctx stops the write between batches. Otherwise it is
// WriteRecord.
func WriteRows(ctx context.Context, path string, schema *arrow.Schema, n int64, rows func(lo, hi int64) arrow.RecordBatch, opts Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w, err := CreateContext(ctx, path, schema, opts)
	if err != nil {
		return err
	}
	defer w.Abort()
	batch := w.(interface{ batchRows() int64 }).batchRows()
	write := func(lo, hi int64) error {
		rec := rows(lo, hi)
		defer rec.Release()
		return w.Write(rec)
	}
	if n == 0 {
		if err := write(0, 0); err != nil {
			return err
		}
	}
	for off := int64(0); off < n; off += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := write(off, min(off+batch, n)); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.Close()
}

// Check checks path and opts as Create does, before a schema is known and
// without creating anything: the format (named, or implied by the
// extension), BatchRows and the compression. Jobs call it before they read
// their input, so that a typo in an output option fails at once.
func Check(path string, opts Options) error {
	_, _, _, err := prepare(path, arrow.NewSchema(nil, nil), opts)
	return err
}

// prepare checks everything Create checks that needs no file: it returns
// the format, the batch size and the encoder's constructor.
func prepare(path string, schema *arrow.Schema, opts Options) (format string, batch int64, newEnc func(io.Writer) (encoder, error), err error) {
	format = opts.Format
	switch {
	case format == "" && IsDirectory(path):
		format = dirFormat(path)
	case format == "":
		format, err = FormatOf(path)
	default:
		format, err = normalFormat(format)
	}
	if err != nil {
		return "", 0, nil, err
	}
	if path == "" {
		return "", 0, nil, usererr.New(usererr.Usage, "no output path given", `name an output file, or "-" for standard output`)
	}
	if opts.Checksum {
		if err := CheckChecksum(path); err != nil {
			return "", 0, nil, err
		}
	}
	if opts.MaxRowsPerFile < 0 {
		return "", 0, nil, usererr.New(usererr.Usage, fmt.Sprintf("the most rows of a part file must be positive, not %d", opts.MaxRowsPerFile), "")
	}
	if opts.BatchRows < 0 {
		return "", 0, nil, usererr.New(usererr.Usage, fmt.Sprintf("batch rows must be positive, not %d", opts.BatchRows), "")
	}
	batch = int64(opts.BatchRows)
	if batch == 0 {
		switch format {
		case FormatParquet:
			batch = DefaultParquetRowGroup
		case FormatCSV:
			batch = defaultCSVBatch
		default:
			batch = DefaultIPCBatch
		}
	}
	switch format {
	case FormatParquet:
		newEnc, err = parquetEncoder(schema, batch, opts.Compression)
	case FormatArrowFile, FormatArrowStream:
		newEnc, err = ipcEncoder(schema, format == FormatArrowFile, opts.Compression)
	case FormatCSV:
		newEnc, err = csvEncoder(schema, opts.Compression)
	}
	if err != nil {
		if ue := (*usererr.Error)(nil); errors.As(err, &ue) && ue.File == "" {
			ue.File = path
		}
		return "", 0, nil, err
	}
	return format, batch, newEnc, nil
}

// Create opens a writer for records of the given schema at path ("-" for
// opts.Stdout). Options, the format and the column types are checked before
// anything is created. A file is written to a temporary file beside path
// (".NAME.tmp-PID-XXXX") that Close renames to path, and the temporary files
// of writers of path that were killed are removed (output.go); a path that
// names an existing device or pipe (such as /dev/stdout) is written in place.
// An s3:// path is an object written by a multipart upload (s3.go); a
// directory (DIR/, an existing directory, s3://bucket/prefix/) gets part
// files (dataset.go).
func Create(path string, schema *arrow.Schema, opts Options) (Writer, error) {
	return CreateContext(context.Background(), path, schema, opts)
}

// CreateContext is Create whose uploads to an object store end when ctx
// does.
func CreateContext(ctx context.Context, path string, schema *arrow.Schema, opts Options) (Writer, error) {
	if schema == nil {
		return nil, usererr.New(usererr.Internal, "sink: no schema", "")
	}
	// Check everything that needs no file before making one.
	format, batch, _, err := prepare(path, schema, opts)
	if err != nil {
		return nil, err
	}
	if IsDirectory(path) {
		return createDataset(ctx, path, schema, opts, format, batch)
	}
	if path == "-" {
		return newWriter(path, "standard output", schema, opts, nil)
	}
	out, err := openTarget(ctx, path, opts.Checksum, opts.Store)
	if err != nil {
		return nil, (&writer{display: path}).openError(err)
	}
	return newWriter(path, path, schema, opts, out)
}

// newWriter starts the encoder of a writer whose bytes go to out (nil:
// opts.Stdout).
func newWriter(path, display string, schema *arrow.Schema, opts Options, out target) (*writer, error) {
	format, batch, newEnc, err := prepare(path, schema, opts)
	if err != nil {
		if out != nil {
			out.remove()
		}
		return nil, err
	}
	w := &writer{path: path, display: display, format: format, schema: schema, batch: batch}
	var dst io.Writer
	if out == nil {
		w.flushEach = true
		dst = opts.Stdout
		if dst == nil {
			dst = os.Stdout
		}
	} else {
		w.out = out
		dst = out
	}
	w.track = &trackWriter{w: dst}
	w.bw = newBufWriter(w.track)
	if w.enc, err = newEnc(w.bw); err != nil {
		err = w.fail(err, "cannot start the output")
		w.cleanup()
		return nil, err
	}
	if w.track.err != nil {
		err = w.fail(w.track.err, "")
		w.cleanup()
		return nil, err
	}
	return w, nil
}

// writer is the Writer of every format: batching, buffering, the temporary
// file and errors; enc does the format.
type writer struct {
	path, display string // path as given; the name errors use
	format        string
	schema        *arrow.Schema
	batch         int64

	out target // nil for standard output
	// unpublished leaves a finished output unpublished at Close, for the
	// caller to publish (a part of a dataset: dataset.go).
	unpublished bool

	track     *trackWriter
	bw        *bufio.Writer
	enc       encoder
	flushEach bool // flush after every Write (standard output)

	err      error // first error; the writer is spent once set
	closed   bool
	closeErr error
}

// openError is the error for an output that openTarget cannot open.
func (w *writer) openError(err error) error {
	var ce *createErr
	var ue *usererr.Error
	switch {
	case errors.As(err, &ue):
		return err
	case errors.Is(err, errNotFile):
		return errChecksumNotFile(w.display)
	case errors.Is(err, errIsDir):
		return w.createError(err, "name a file, not a directory")
	case errors.As(err, &ce):
		return w.createError(ce.err, ce.fix)
	}
	return w.createError(err, "check the directory")
}

// CheckChecksum checks that path can have a checksum file beside it (as
// Options.Checksum writes): it is not standard output ("-") or an existing
// device or pipe.
func CheckChecksum(path string) error {
	if path == "-" {
		return errChecksumNotFile("standard output")
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return errChecksumNotFile(path)
	}
	return nil
}

// errChecksumNotFile refuses a checksum for an output that is not a file.
func errChecksumNotFile(display string) error {
	return &usererr.Error{Kind: usererr.Usage, File: display, Row: -1,
		Problem: "cannot write a checksum beside it: it is not a file (the checksum goes in a file beside the output)",
		Fix:     "write to a file, or leave out --checksum (and run sha256sum on the other end)"}
}

// createError is the usage error for an output that cannot be created.
func (w *writer) createError(err error, fix string) error {
	return &usererr.Error{Kind: usererr.Usage, File: w.display, Row: -1,
		Problem: "cannot create the output: " + causeText(err), Fix: fix, Err: err}
}

// ioError is the error for a failed write, flush, sync or rename.
func (w *writer) ioError(err error) error {
	if ue := (*usererr.Error)(nil); errors.As(err, &ue) {
		return err // an object store's, naming the object
	}
	fix := "check that the directory exists and is writable and that the disk has space"
	switch {
	case errors.Is(err, syscall.ENOSPC): // a file, or standard output redirected to one
		fix = "free some space on the disk, or write elsewhere"
	case w.out == nil || errors.Is(err, syscall.EPIPE):
		fix = "check that the program reading the output is still running"
	}
	return &usererr.Error{Kind: usererr.Internal, File: w.display, Row: -1,
		Problem: "cannot write: " + causeText(err), Fix: fix, Err: err}
}

// causeText is an error's text without the (temporary) path an
// *os.PathError or *os.LinkError carries.
func causeText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// fail records the writer's first error, preferring the I/O error under a
// format error, removes the output and returns the error.
func (w *writer) fail(err error, what string) error {
	if w.err != nil {
		return w.err
	}
	var ue *usererr.Error
	switch {
	case w.track != nil && w.track.err != nil:
		err = w.ioError(w.track.err)
	case errors.As(err, &ue):
		if ue.File == "" {
			ue.File = w.display
		}
	default:
		if what != "" {
			what += ": "
		}
		err = &usererr.Error{Kind: usererr.Internal, File: w.display, Row: -1,
			Problem: what + err.Error(), Err: err}
	}
	w.err = err
	w.cleanup()
	return err
}

// cleanup stops the encoder, closes the file and removes the temporary
// one; it can run twice.
func (w *writer) cleanup() {
	if w.enc != nil {
		w.enc.abort()
	}
	if w.out != nil {
		w.out.remove()
	}
}

// batchRows is the most rows the writer puts in a batch or row group.
func (w *writer) batchRows() int64 { return w.batch }

// Write implements Writer.
func (w *writer) Write(rec arrow.RecordBatch) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return usererr.New(usererr.Internal, "sink: Write after Close", "")
	}
	if rec == nil {
		return w.fail(errors.New("sink: nil record"), "")
	}
	if !rec.Schema().Equal(w.schema) {
		return w.fail(fmt.Errorf("record schema %s does not match the output's %s", rec.Schema(), w.schema), "")
	}
	n := rec.NumRows()
	if n <= w.batch {
		if err := w.enc.write(rec); err != nil {
			return w.fail(err, "cannot encode "+w.format)
		}
	} else {
		for off := int64(0); off < n; off += w.batch {
			s := rec.NewSlice(off, min(off+w.batch, n))
			err := w.enc.write(s)
			s.Release()
			if err != nil {
				return w.fail(err, "cannot encode "+w.format)
			}
		}
	}
	if w.flushEach {
		if err := w.bw.Flush(); err != nil {
			return w.fail(err, "")
		}
	}
	if w.track.err != nil {
		return w.fail(w.track.err, "")
	}
	return nil
}

// Close implements Writer.
func (w *writer) Close() error {
	if w.closed {
		return w.closeErr
	}
	w.closed = true
	w.closeErr = w.finish()
	return w.closeErr
}

func (w *writer) finish() error {
	if w.err != nil {
		return w.err
	}
	if err := w.enc.close(); err != nil {
		return w.fail(err, "cannot finish "+w.format)
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(err, "")
	}
	if w.out == nil {
		return nil
	}
	if err := w.out.finish(); err != nil {
		return w.fail(w.ioError(err), "")
	}
	if w.unpublished {
		return nil
	}
	if err := w.out.publish(); err != nil {
		return w.fail(w.ioError(err), "")
	}
	return nil
}

// Abort implements Writer.
func (w *writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	if w.err == nil {
		w.err = usererr.New(usererr.Internal, "sink: output aborted", "")
	}
	w.closeErr = w.err
	w.cleanup()
}

// newBufWriter is the buffer between the encoders and the output.
func newBufWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 256<<10) }

// trackWriter keeps the first error of the writer under it, so that an I/O
// error (disk full) is reported as such even where an encoder wraps it into
// a message of its own.
type trackWriter struct {
	w   io.Writer
	err error
}

func (t *trackWriter) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.w.Write(p)
	if err != nil {
		t.err = err
	}
	return n, err
}
