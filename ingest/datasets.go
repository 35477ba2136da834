package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/gpipe/gpipe/ingest/arrowipc"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/dataset"
	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/ingest/parquet"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Inputs beyond one local file: a dataset (a directory, a glob, an S3
// prefix of part files) read as one table, and a single object in an S3
// store or on an HTTP(S) server, read by ranged GETs.

// openMany reads path when it is a dataset or a remote object (ok true);
// otherwise Open reads it as a file.
func openMany(ctx context.Context, path string, opts edges.Options) (t *edges.Table, err error, ok bool) {
	if objstore.IsRemote(path) {
		t, err = openRemote(ctx, path, opts)
		return t, err, true
	}
	st, statErr := os.Stat(path)
	switch {
	case statErr == nil && st.IsDir():
	case errors.Is(statErr, fs.ErrNotExist) && dataset.IsPattern(path):
	default:
		return nil, nil, false
	}
	ds, err := dataset.Local(path)
	if err != nil {
		return nil, err, true
	}
	t, err = readDataset(ctx, ds, nil, opts)
	return t, err, true
}

// openRemote reads an s3:// or http(s):// input. An s3:// key that names
// no object but a "directory" of them (or a glob, or a key ending in "/")
// is a dataset.
func openRemote(ctx context.Context, path string, opts edges.Options) (*edges.Table, error) {
	loc, err := objstore.Parse(path)
	if err != nil {
		return nil, err
	}
	if loc.Scheme != "s3" {
		obj, err := objstore.NewHTTP(opts.Store).Open(ctx, loc)
		if err != nil {
			return nil, err
		}
		return readObject(ctx, obj, urlPath(path), opts)
	}
	st, err := objstore.NewS3(ctx, opts.Store)
	if err != nil {
		return nil, err
	}
	if loc.Key == "" || strings.HasSuffix(loc.Key, "/") || dataset.IsPattern(loc.Key) {
		return readRemoteDataset(ctx, st, loc, opts)
	}
	obj, err := st.Open(ctx, loc)
	if errors.Is(err, objstore.ErrNotFound) {
		// Maybe a prefix: s3://bucket/table means s3://bucket/table/.
		if t, dsErr := readRemoteDataset(ctx, st, loc, opts); !errors.Is(dsErr, fs.ErrNotExist) {
			return t, dsErr
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return readObject(ctx, obj, loc.Key, opts)
}

func readRemoteDataset(ctx context.Context, st *objstore.S3, loc objstore.Location, opts edges.Options) (*edges.Table, error) {
	ds, err := dataset.Remote(ctx, st, loc)
	if err != nil {
		return nil, err
	}
	return readDataset(ctx, ds, st, opts)
}

// urlPath is the path of a URL, which tells its format by its extension
// (not its query).
func urlPath(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Path
	}
	return raw
}

// readObject reads one remote object, its format from the extension of
// key (or opts.Format): Parquet by ranges (the footer, then the edge
// columns' chunks, in parallel), an Arrow IPC file fetched whole into
// memory (in parallel ranges), the other formats as a stream.
func readObject(ctx context.Context, obj *objstore.Object, key string, opts edges.Options) (*edges.Table, error) {
	format, err := partFormat(obj.Name(), key, opts.Format)
	if err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	switch format {
	case FormatParquet:
		return parquet.ReadFiles(ctx, obj.Name(), []parquet.File{{Name: obj.Name(), R: obj, Size: obj.Size()}}, opts)
	case FormatArrowFile:
		data, err := obj.ReadAll()
		if err != nil {
			return nil, err
		}
		return arrowipc.ReadBytes(ctx, obj.Name(), data, nil, opts)
	}
	r := obj.RangeReader(0, obj.Size())
	defer r.Close()
	return readFrom(ctx, obj.Name(), r, format, opts)
}

// partFormat is the format of a file named name (key: its path, for the
// extension): opts' format where named, else its extension's.
func partFormat(name, key, named string) (string, error) {
	if named != "" {
		return named, nil
	}
	format, err := FormatOf(key)
	if err != nil {
		var ue *usererr.Error
		if errors.As(err, &ue) {
			ue.File = name
		}
		return "", err
	}
	return format, nil
}

// datasetFormat is the one format of a dataset's parts: the named one, or
// their extensions', which must agree.
func datasetFormat(ds *dataset.Dataset, named string) (string, error) {
	var format string
	for i, p := range ds.Parts {
		f, err := partFormat(p.Name, p.Rel, named)
		if err != nil {
			return "", err
		}
		if i == 0 {
			format = f
		} else if f != format {
			return "", &usererr.Error{Kind: usererr.Input, File: ds.Name, Row: -1,
				Problem: fmt.Sprintf("the dataset mixes formats: %s is %s and %s is %s", echo.Quote(ds.Parts[0].Rel), formatNames[format], echo.Quote(p.Rel), formatNames[f]),
				Fix:     "keep one format in the directory, or name the files of one with a glob (DIR/*.parquet)"}
		}
	}
	if format == FormatMTX {
		return "", usererr.InFile(ds.Name, "a dataset of Matrix Market files: each is a whole matrix", "read the files one at a time")
	}
	return format, nil
}

// readDataset reads the parts of ds as one table (st: the store they are
// in, nil for local files). Parquet parts are read together, their row
// groups decoded in parallel; parts of the other formats are read a few
// at a time and joined.
func readDataset(ctx context.Context, ds *dataset.Dataset, st *objstore.S3, opts edges.Options) (*edges.Table, error) {
	format, err := datasetFormat(ds, opts.Format)
	if err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	var t *edges.Table
	if format == FormatParquet {
		t, err = readParquetParts(ctx, ds, st, opts)
	} else {
		t, err = readParts(ctx, ds, st, format, opts)
	}
	return t, explainPartition(err, ds)
}

// readParquetParts reads the Parquet files of a dataset as one table.
func readParquetParts(ctx context.Context, ds *dataset.Dataset, st *objstore.S3, opts edges.Options) (*edges.Table, error) {
	files := make([]parquet.File, len(ds.Parts))
	var sums []*checksum
	defer func() {
		for _, f := range files {
			if c, ok := f.R.(*os.File); ok {
				c.Close()
			}
		}
	}()
	for i, p := range ds.Parts {
		if st != nil {
			obj := st.Object(ctx, p.Info)
			files[i] = parquet.File{Name: p.Name, R: obj, Size: obj.Size()}
			continue
		}
		f, err := os.Open(p.Name)
		if err != nil {
			return nil, errOpen(p.Name, err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, errOpen(p.Name, err)
		}
		files[i] = parquet.File{Name: p.Name, R: f, Size: fi.Size()}
		sum, err := startChecksum(ctx, p.Name)
		if err != nil {
			return nil, err
		}
		if sum != nil {
			sums = append(sums, sum)
		}
	}
	t, err := parquet.ReadFiles(ctx, ds.Name, files, opts)
	for _, sum := range sums {
		t, err = sum.finish(t, err)
	}
	return t, err
}

// readParts reads the parts of a dataset of a format other than Parquet,
// GOMAXPROCS at a time (each reader decodes on one core, or on all for
// text), and joins them.
func readParts(ctx context.Context, ds *dataset.Dataset, st *objstore.S3, format string, opts edges.Options) (*edges.Table, error) {
	tables := make([]*edges.Table, len(ds.Parts))
	errs := make([]error, len(ds.Parts))
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range ds.Parts {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if st != nil {
				tables[i], errs[i] = readObject(ctx, st.Object(ctx, p.Info), p.Rel, withFormat(opts, format))
			} else {
				tables[i], errs[i] = openLocalPart(ctx, p.Name, format, opts)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		for _, t := range tables {
			if t != nil {
				t.Release()
			}
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, errs[i]
	}
	return edges.Concat(ds.Name, tables)
}

func withFormat(opts edges.Options, format string) edges.Options {
	opts.Format = format
	return opts
}

// openLocalPart reads one local file of a dataset as Open reads a file:
// checked against a checksum file beside it.
func openLocalPart(ctx context.Context, name, format string, opts edges.Options) (*edges.Table, error) {
	sum, err := startChecksum(ctx, name)
	if err != nil {
		return nil, err
	}
	if sum != nil {
		return sum.finish(openPath(ctx, name, format, opts))
	}
	return openPath(ctx, name, format, opts)
}

// explainPartition adds to an error about a missing edge column that the
// column is one of the dataset's Hive partition keys, whose values live in
// directory names, not in the files.
func explainPartition(err error, ds *dataset.Dataset) error {
	var ue *usererr.Error
	if err == nil || !errors.As(err, &ue) || !strings.HasPrefix(ue.Problem, "no ") {
		return err
	}
	for _, key := range ds.Keys() {
		if strings.Contains(ue.Problem, " column "+echo.Quote(key)+" ") {
			ue.Problem += fmt.Sprintf("; %s is a partition key of the dataset (directories %s=...), and gpipe reads edge columns from the files only", echo.Quote(key), key)
			ue.Fix = "write the column into the files (Spark drops partition columns from them), or name another column"
			return err
		}
	}
	return err
}
