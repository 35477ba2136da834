package sink

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// A directory output (DIR/, an existing directory, s3://bucket/prefix/) is
// a dataset of part files, part-00000.parquet, part-00001.parquet, ..., of
// at most Options.MaxRowsPerFile rows each, as Spark and DuckDB write them
// and as gpipe (and pyarrow, DuckDB, Spark) read them back as one table.
//
// Each part is written under a temporary name (an unfinished multipart
// upload on S3) and stays there until the whole output is written; Close
// then removes the old _SUCCESS, renames (completes) every part into
// place, removes the parts of an earlier output beyond the new ones, and
// writes _SUCCESS last, as Spark's committer does. A failed or interrupted
// write removes its parts and leaves an earlier output as it was. A
// directory may hold only what gpipe writes there (parts, their checksum
// files, _SUCCESS, temporary files): any other file is refused, so that a
// typo cannot mix the result into other data.

// DefaultPartBytes is what Options.MaxRowsPerFile's default aims a part at,
// in uncompressed column bytes: compressed, files of 128 to 512 MiB, which
// object stores and the engines that read them handle best.
const DefaultPartBytes = 512 << 20

// successMarker is the empty file written once every part is in place.
const successMarker = "_SUCCESS"

// IsDirectory says whether an output path is a directory of part files: it
// ends in "/", or is an existing local directory.
func IsDirectory(path string) bool {
	if path == "-" || path == "" {
		return false
	}
	if strings.HasSuffix(path, "/") || (objstore.IsS3(path) && !strings.Contains(path[len("s3://"):], "/")) {
		return true
	}
	if objstore.IsRemote(path) {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// dirFormat is the format of a directory output: its name's extension
// (Spark names them edges.parquet/), else Parquet.
func dirFormat(path string) string {
	if f, err := FormatOf(strings.TrimRight(path, "/")); err == nil && f != FormatArrowStream {
		return f
	}
	return FormatParquet
}

// formatExt is the extension a part of a format gets.
var formatExt = map[string]string{FormatParquet: ".parquet", FormatArrowFile: ".arrow", FormatArrowStream: ".arrows", FormatCSV: ".csv"}

// partRows is the most rows of a part: opts' MaxRowsPerFile, or what makes
// about DefaultPartBytes of the schema's columns (a whole number of row
// groups for Parquet).
func partRows(schema *arrow.Schema, opts Options, batch int64) int64 {
	if opts.MaxRowsPerFile > 0 {
		return opts.MaxRowsPerFile
	}
	width := int64(0)
	for _, f := range schema.Fields() {
		switch dt := f.Type.(type) {
		case arrow.FixedWidthDataType:
			width += int64(max(dt.BitWidth()/8, 1))
		default:
			width += 16 // strings, binaries: a guess
		}
	}
	rows := DefaultPartBytes / max(width, 1)
	return max(batch, rows/batch*batch)
}

// partStore is the directory or prefix parts go to.
type partStore interface {
	// names lists what is in the directory now (paths under it, slashes).
	names() ([]string, error)
	// create starts the part called name.
	create(name string, checksum bool) (target, error)
	// drop removes the file called name, if it is there.
	drop(name string) error
	// mark writes the empty file called name.
	mark(name string) error
	// display is the path or URL of name, for messages.
	display(name string) string
}

// localParts is a local directory.
type localParts struct{ dir string }

func (l localParts) names() ([]string, error) {
	var names []string
	err := filepath.WalkDir(l.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == l.dir {
			return err
		}
		rel, _ := filepath.Rel(l.dir, path)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	return names, err
}

func (l localParts) create(name string, checksum bool) (target, error) {
	o, err := openOutput(filepath.Join(l.dir, name), checksum)
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (l localParts) drop(name string) error {
	err := os.Remove(filepath.Join(l.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (l localParts) mark(name string) error {
	f, err := CreateFile(filepath.Join(l.dir, name), false)
	if err != nil {
		return err
	}
	return f.Close()
}

func (l localParts) display(name string) string { return filepath.Join(l.dir, name) }

// s3Parts is a prefix in an S3 store.
type s3Parts struct {
	ctx context.Context
	st  *objstore.S3
	loc objstore.Location // the prefix, ending in "/" (or empty)
}

func (s s3Parts) names() ([]string, error) {
	infos, err := s.st.List(s.ctx, s.loc)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(infos))
	for _, in := range infos {
		names = append(names, strings.TrimPrefix(in.Loc.Key, s.loc.Key))
	}
	return names, nil
}

func (s s3Parts) create(name string, checksum bool) (target, error) {
	return openS3(s.ctx, s.st, s.display(name), checksum)
}

func (s s3Parts) drop(name string) error { return s.st.Delete(s.ctx, s.loc.Child(s.loc.Key+name)) }

func (s s3Parts) mark(name string) error { return s.st.Put(s.ctx, s.loc.Child(s.loc.Key+name), nil) }

func (s s3Parts) display(name string) string { return s.loc.Child(s.loc.Key + name).URL }

// openParts opens the directory or prefix of a directory output, made
// where it is not there yet.
func openParts(ctx context.Context, path string, store objstore.Options) (partStore, error) {
	if !objstore.IsRemote(path) {
		if err := os.MkdirAll(path, 0o777); err != nil {
			return nil, &usererr.Error{Kind: usererr.Usage, File: path, Row: -1,
				Problem: "cannot create the output directory: " + causeText(err), Fix: "check the path and its permissions", Err: err}
		}
		return localParts{dir: path}, nil
	}
	if !objstore.IsS3(path) {
		return nil, usererr.New(usererr.Usage, "cannot write to an http(s) URL", "write to a directory or an s3:// prefix")
	}
	loc, err := objstore.Parse(path)
	if err != nil {
		return nil, err
	}
	if loc.Key != "" && !strings.HasSuffix(loc.Key, "/") {
		loc = loc.Child(loc.Key + "/")
	}
	st, err := objstore.NewS3(ctx, store)
	if err != nil {
		return nil, err
	}
	return s3Parts{ctx: ctx, st: st, loc: loc}, nil
}

// ownedName matches what a directory output may hold: its parts, their
// checksum files, _SUCCESS and the temporary files of its writers.
var ownedName = regexp.MustCompile(`^(part-[0-9]{5,}\.(parquet|arrow|arrows|csv)(\.sha256)?|_SUCCESS|\.(part-[0-9]{5,}\.[a-z]+(\.sha256)?|_SUCCESS)\.tmp-[0-9]+-[0-9a-z]+)$`)

// checkOwned refuses a directory that holds anything a directory output
// does not write; it returns the parts of an earlier output.
func checkOwned(ps partStore, given string) ([]string, error) {
	names, err := ps.names()
	if err != nil {
		var ue *usererr.Error
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, &usererr.Error{Kind: usererr.Usage, File: given, Row: -1,
			Problem: "cannot list the output directory: " + causeText(err), Fix: "check the path and its permissions", Err: err}
	}
	var old []string
	for _, n := range names {
		if !ownedName.MatchString(n) {
			return nil, &usererr.Error{Kind: usererr.Usage, File: given, Row: -1,
				Problem: fmt.Sprintf("the output directory holds %s, which gpipe did not write: a directory output may replace only an earlier one (part-NNNNN files and _SUCCESS)", echo.Quote(n)),
				Fix:     "name a new or empty directory, or remove what is in it"}
		}
		if strings.HasPrefix(n, "part-") {
			old = append(old, n)
		}
	}
	return old, nil
}

// datasetWriter is the Writer of a directory output.
type datasetWriter struct {
	ctx     context.Context
	given   string
	ps      partStore
	schema  *arrow.Schema
	opts    Options
	ext     string
	maxRows int64
	batch   int64
	old     []string // parts of an earlier output

	cur     *writer // the part being written
	curRows int64
	done    []target // parts written, not yet published
	err     error
	closed  bool
}

// createDataset starts a directory output at path.
func createDataset(ctx context.Context, path string, schema *arrow.Schema, opts Options, format string, batch int64) (Writer, error) {
	ps, err := openParts(ctx, path, opts.Store)
	if err != nil {
		return nil, err
	}
	old, err := checkOwned(ps, path)
	if err != nil {
		return nil, err
	}
	opts.Format = format
	return &datasetWriter{ctx: ctx, given: path, ps: ps, schema: schema, opts: opts, ext: formatExt[format],
		maxRows: partRows(schema, opts, batch), batch: batch, old: old}, nil
}

// batchRows is the most rows the parts put in a batch or row group.
func (d *datasetWriter) batchRows() int64 { return d.batch }

// partName is the name of part i.
func (d *datasetWriter) partName(i int) string { return fmt.Sprintf("part-%05d%s", i, d.ext) }

// next starts the next part.
func (d *datasetWriter) next() error {
	name := d.partName(len(d.done))
	out, err := d.ps.create(name, d.opts.Checksum)
	if err != nil {
		return (&writer{display: d.ps.display(name)}).openError(err)
	}
	w, err := newWriter(d.ps.display(name), d.ps.display(name), d.schema, d.opts, out)
	if err != nil {
		return err
	}
	w.unpublished = true
	d.cur, d.curRows = w, 0
	return nil
}

// closePart finishes the part being written.
func (d *datasetWriter) closePart() error {
	if err := d.cur.Close(); err != nil {
		return err
	}
	d.done = append(d.done, d.cur.out)
	d.cur = nil
	return nil
}

// Write implements Writer: rec's rows go to the current part until it
// holds MaxRowsPerFile, then to the next.
func (d *datasetWriter) Write(rec arrow.RecordBatch) error {
	if d.err != nil {
		return d.err
	}
	if d.closed {
		return usererr.New(usererr.Internal, "sink: Write after Close", "")
	}
	for off, n := int64(0), rec.NumRows(); off < n || n == 0; {
		if d.cur == nil {
			if err := d.next(); err != nil {
				return d.fail(err)
			}
		}
		take := min(n-off, d.maxRows-d.curRows)
		piece := rec.NewSlice(off, off+take)
		err := d.cur.Write(piece)
		piece.Release()
		if err != nil {
			return d.fail(err)
		}
		off, d.curRows = off+take, d.curRows+take
		if d.curRows == d.maxRows {
			if err := d.closePart(); err != nil {
				return d.fail(err)
			}
		}
		if n == 0 {
			break
		}
	}
	return nil
}

// Close implements Writer: the last part is finished and every part put
// in place (see the top of this file).
func (d *datasetWriter) Close() error {
	if d.closed {
		return d.err
	}
	if d.err != nil {
		d.closed = true
		return d.err
	}
	if d.cur == nil && len(d.done) == 0 {
		// No rows: one part with the schema, which readers need.
		if err := d.next(); err != nil {
			return d.fail(err)
		}
	}
	if d.cur != nil {
		if err := d.closePart(); err != nil {
			return d.fail(err)
		}
	}
	if err := d.publish(); err != nil {
		return d.fail(err)
	}
	d.closed = true
	return nil
}

// publish puts the finished parts in place, removes an earlier output's
// parts beyond them, and writes _SUCCESS.
func (d *datasetWriter) publish() error {
	if err := d.ps.drop(successMarker); err != nil {
		return d.ioError(successMarker, err)
	}
	for i, t := range d.done {
		if err := t.publish(); err != nil {
			return d.ioError(d.partName(i), err)
		}
		d.done[i] = nil
	}
	keep := make(map[string]bool, 2*len(d.done))
	for i := range d.done {
		keep[d.partName(i)] = true
		if d.opts.Checksum {
			keep[d.partName(i)+ChecksumSuffix] = true
		}
	}
	for _, name := range d.old {
		if !keep[name] {
			if err := d.ps.drop(name); err != nil {
				return d.ioError(name, err)
			}
		}
	}
	if err := d.ps.mark(successMarker); err != nil {
		return d.ioError(successMarker, err)
	}
	return nil
}

// ioError is the error of a failed rename, removal or upload of name.
func (d *datasetWriter) ioError(name string, err error) error {
	if ue := (*usererr.Error)(nil); errors.As(err, &ue) {
		return err
	}
	return &usererr.Error{Kind: usererr.Internal, File: d.ps.display(name), Row: -1,
		Problem: "cannot write: " + causeText(err), Fix: "check that the directory exists and is writable and that the disk has space", Err: err}
}

// fail records the first error and removes the parts not yet published.
func (d *datasetWriter) fail(err error) error {
	if d.err == nil {
		d.err = err
	}
	d.cleanup()
	return d.err
}

func (d *datasetWriter) cleanup() {
	if d.cur != nil {
		d.cur.Abort()
		d.cur = nil
	}
	for _, t := range d.done {
		if t != nil {
			t.remove()
		}
	}
	d.done = nil
}

// Abort implements Writer.
func (d *datasetWriter) Abort() {
	if d.closed {
		return
	}
	d.closed = true
	if d.err == nil {
		d.err = usererr.New(usererr.Internal, "sink: output aborted", "")
	}
	d.cleanup()
}
