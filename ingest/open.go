// Package ingest reads an edge table from a path or a stream, in whichever
// format it is: Open tells the format from the path's extension (FormatOf)
// or Options.Format, and hands the input to that format's package: parquet,
// arrowipc (Arrow IPC files and streams), csv, or text (edge lists and
// Matrix Market). Standard input is read as it arrives where the format
// allows. What every reader gives back is an edges.Table; gen generates
// synthetic ones.
package ingest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpipe/gpipe/ingest/arrowipc"
	"github.com/gpipe/gpipe/ingest/csv"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/input"
	"github.com/gpipe/gpipe/ingest/parquet"
	"github.com/gpipe/gpipe/ingest/text"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/mmap"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Formats an input can have, by the name Options.Format and FormatOf use.
// The readers' messages name them too (sniff.Parquet, ...), which the tests
// check against these.
const (
	FormatParquet     = "parquet"
	FormatArrowFile   = "arrow"  // Arrow IPC file (.arrow, .feather)
	FormatArrowStream = "arrows" // Arrow IPC stream (.arrows, and "-")
	FormatCSV         = "csv"    // CSV, with a header row or without (Options.Header)
	FormatTSV         = "tsv"    // CSV separated by tabs (.tsv)
	FormatText        = "text"   // whitespace-separated edge list (.txt, .el, .wel, .edges)
	FormatMTX         = "mtx"    // Matrix Market coordinate format
)

// FormatOf is the format a path's extension implies; "-" is an Arrow IPC
// stream on standard input (Open tells a Parquet or Arrow IPC file there
// from its first bytes).
func FormatOf(path string) (string, error) {
	if path == "-" {
		return FormatArrowStream, nil
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
	case ".tsv":
		return FormatTSV, nil
	case ".txt", ".el", ".wel", ".edges", ".snap":
		return FormatText, nil
	case ".mtx":
		return FormatMTX, nil
	}
	// An unknown extension is a usage error (exit 2), as for outputs.
	return "", &usererr.Error{Kind: usererr.Usage, File: path, Row: -1,
		Problem: fmt.Sprintf("cannot tell the input format from the extension %s", echo.Quote(ext)),
		Fix: "use .parquet, .arrow/.feather (Arrow IPC file), .arrows (Arrow IPC stream), .csv, .tsv, .txt/.el/.wel (edge list) or .mtx (Matrix Market); " +
			"or name the format (--input-format parquet, arrow, arrows, csv, tsv, text or mtx)"}
}

// Open reads the edge table at path in the format its extension (or
// opts.Format) names. For "-" it reads stdin (os.Stdin when nil): an Arrow
// IPC stream, or the format opts.Format names. A file with a checksum file
// beside it (NAME.sha256) is verified as it is read (checksum.go). A
// directory, a glob or an s3:// prefix is a dataset of part files read as
// one table, and s3:// and https:// objects are read by ranged GETs
// (datasets.go).
func Open(ctx context.Context, path string, stdin io.Reader, opts edges.Options) (*edges.Table, error) {
	if path != "-" {
		// A directory, a glob, an s3:// or https:// address (datasets.go).
		if t, err, ok := openMany(ctx, path, opts); ok {
			return t, err
		}
	}
	format := opts.Format
	if format == "" {
		var err error
		if format, err = FormatOf(path); err != nil {
			return nil, err
		}
	}
	opts.Columns = opts.Columns.WithDefaults()
	if path == "-" {
		if stdin == nil {
			stdin = os.Stdin
		}
		if opts.Format == "" {
			var err error
			if format, stdin, err = sniffStdin(ctx, stdin); err != nil {
				return nil, err
			}
		}
		return openStream(ctx, "-", stdin, format, opts)
	}
	if st, err := os.Stat(path); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
		// A FIFO, or a pipe named by <(producer): read as standard input is.
		f, err := openFIFO(ctx, path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return openStream(ctx, path, f, format, opts)
	}
	sum, err := startChecksum(ctx, path)
	if err != nil {
		return nil, err
	}
	if sum != nil {
		return sum.finish(openPath(ctx, path, format, opts))
	}
	return openPath(ctx, path, format, opts)
}

// openPath reads the file at path in the given format.
func openPath(ctx context.Context, path, format string, opts edges.Options) (*edges.Table, error) {
	if format == FormatArrowFile {
		return arrowipc.ReadFile(ctx, path, opts)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errOpen(path, err)
	}
	defer f.Close()
	if format == FormatParquet {
		return parquet.Read(ctx, path, f, opts)
	}
	return readFrom(ctx, path, f, format, opts)
}

// readFrom reads r with the reader of a format that needs only an
// io.Reader (it takes a file, and stdin, as it comes).
func readFrom(ctx context.Context, name string, r io.Reader, format string, opts edges.Options) (*edges.Table, error) {
	switch format {
	case FormatArrowStream:
		return arrowipc.ReadStream(ctx, name, r, opts)
	case FormatCSV:
		return csv.Read(ctx, name, r, opts)
	case FormatTSV:
		if opts.Delimiter == 0 {
			opts.Delimiter = '\t'
		}
		return csv.Read(ctx, name, r, opts)
	case FormatText:
		return text.Read(ctx, name, r, opts)
	case FormatMTX:
		return text.ReadMatrixMarket(ctx, name, r, opts)
	}
	return nil, usererr.New(usererr.Usage, fmt.Sprintf("unknown input format %s", echo.Quote(format)),
		"use parquet, arrow, arrows, csv, tsv, text or mtx")
}

// errOpen reports a path that cannot be opened.
func errOpen(path string, err error) error {
	return usererr.InFile(path, "cannot open: "+strings.TrimPrefix(err.Error(), "open "+path+": "), "check the path").Because(err)
}

// openFIFO opens the FIFO at path, which waits in the kernel until a
// producer opens it for writing; a canceled ctx ends the wait (the open
// goes on in the background, and what it opens is closed).
func openFIFO(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, errOpen(path, o.err)
		}
		return o.f, nil
	case <-ctx.Done():
		go func() {
			if o := <-done; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// openStream reads standard input, or a FIFO, named name in messages, in
// the given format. An Arrow IPC stream and CSV are read as they arrive;
// the other formats need the whole input (Parquet and Arrow IPC files are
// read from their ends, edge lists in parallel blocks), which is read into
// memory first, unless stdin is a regular file (< file), which is read as a
// file is.
func openStream(ctx context.Context, name string, stdin io.Reader, format string, opts edges.Options) (*edges.Table, error) {
	if format != FormatParquet && format != FormatArrowFile {
		return readFrom(ctx, name, stdin, format, opts)
	}
	if f, ok := stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if format == FormatParquet {
				return parquet.ReadAt(ctx, name, f, st.Size(), opts)
			}
			m, err := mmap.Map(name, f)
			if err != nil {
				return nil, err
			}
			t, err := arrowipc.ReadBytes(ctx, name, m.Data, m.Close, opts)
			if err != nil {
				m.Close()
				return nil, err
			}
			return t, nil
		}
	}
	data, err := readWhole(ctx, stdin, format)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		what := "cannot read: "
		if name == "-" {
			what = "cannot read standard input: "
		}
		return nil, usererr.InFile(name, what+err.Error(), "").Because(err)
	}
	if format == FormatParquet {
		return parquet.ReadAt(ctx, name, bytes.NewReader(data), int64(len(data)), opts)
	}
	return arrowipc.ReadBytes(ctx, name, data, nil, opts)
}

// readWhole reads all of r, a Parquet or Arrow IPC file, checking ctx
// between reads. An input that does not start as the format does is read no
// further than its start, which is enough for the reader's message (an
// endless one, /dev/zero, would fill memory first).
func readWhole(ctx context.Context, r io.Reader, format string) ([]byte, error) {
	br := bufio.NewReaderSize(input.NewReader(ctx, r), 64<<10)
	head, err := br.Peek(1024)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, err
	}
	magics := [][]byte{[]byte("ARROW1")}
	if format == FormatParquet {
		magics = [][]byte{[]byte("PAR1"), []byte("PARE")}
	}
	for _, m := range magics {
		if bytes.HasPrefix(head, m) || bytes.HasPrefix(m, head) {
			return io.ReadAll(br)
		}
	}
	return bytes.Clone(head), nil
}

// formatNames are the formats as messages name them.
var formatNames = map[string]string{
	FormatParquet:     "a Parquet file",
	FormatArrowFile:   "an Arrow IPC file",
	FormatArrowStream: "an Arrow IPC stream",
	FormatCSV:         "a CSV file",
	FormatTSV:         "a TSV file",
	FormatText:        "an edge list",
	FormatMTX:         "a Matrix Market file",
}
