package ingest

import (
	"bytes"
	"context"
	"io"
	"os"

	"github.com/gpipe/gpipe/ingest/internal/input"
)

// sniffStdin tells the format of standard input from its first bytes,
// where no format is named: a Parquet file (PAR1) or an Arrow IPC file
// (ARROW1), else an Arrow IPC stream, the default, whose reader says what
// else the input looks like (CSV, an edge list) and the flag that reads it.
// Text formats are not guessed: CSV and an edge list can look alike. It
// returns the reader to read: stdin itself where it is a regular file
// (looked at by offset), else one that gives the bytes looked at first.
func sniffStdin(ctx context.Context, stdin io.Reader) (string, io.Reader, error) {
	head := make([]byte, len(arrowFileMagic))
	if f, ok := stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			off, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				off = 0
			}
			n, _ := f.ReadAt(head, off)
			return stdinFormat(head[:n]), f, nil
		}
	}
	n, err := io.ReadFull(input.NewReader(ctx, stdin), head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		// The stream's reader meets the error again and reports it.
	}
	return stdinFormat(head[:n]), input.Prefix(head[:n], stdin), nil
}

// arrowFileMagic starts an Arrow IPC file, padded to 8 bytes.
var arrowFileMagic = []byte("ARROW1\x00\x00")

// stdinFormat is the format an input starting with head has: Parquet, an
// Arrow IPC file, else an Arrow IPC stream.
func stdinFormat(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return FormatParquet
	case bytes.HasPrefix(head, arrowFileMagic[:6]):
		return FormatArrowFile
	}
	return FormatArrowStream
}
