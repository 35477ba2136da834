package sink

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/internal/usererr"
)

// ipcEncoder checks the options and returns the constructor of an Arrow IPC
// file (file true) or stream encoder. Buffers are uncompressed unless
// compression asks for zstd or lz4, so that consumers can memory-map files.
func ipcEncoder(schema *arrow.Schema, file bool, compression string) (func(io.Writer) (encoder, error), error) {
	opts := []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator)}
	switch strings.ToLower(compression) {
	case "", CompressionNone, "uncompressed":
	case CompressionZstd:
		opts = append(opts, ipc.WithZstd())
	case CompressionLZ4, "lz4_frame":
		opts = append(opts, ipc.WithLZ4())
	default:
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("unknown Arrow IPC compression %q", compression), "use none, zstd or lz4")
	}
	if file {
		return func(w io.Writer) (encoder, error) {
			fw, err := ipc.NewFileWriter(&posWriter{w: w}, opts...)
			if err != nil {
				return nil, err
			}
			return &ipcEnc{w: fw}, nil
		}, nil
	}
	return func(w io.Writer) (encoder, error) {
		return &ipcEnc{w: ipc.NewWriter(w, opts...)}, nil
	}, nil
}

// ipcEnc writes each batch as one record batch message.
type ipcEnc struct {
	w interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
}

func (e *ipcEnc) write(rec arrow.RecordBatch) error { return e.w.Write(rec) }

func (e *ipcEnc) close() error { return e.w.Close() }

func (e *ipcEnc) abort() {}

// posWriter gives the IPC file writer the Seek it asks for, which it only
// uses to learn the current offset, so that Arrow IPC files can go to pipes
// and standard output as well as to files. Positions count from the first
// byte written.
type posWriter struct {
	w   io.Writer
	pos int64
}

func (p *posWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.pos += int64(n)
	return n, err
}

func (p *posWriter) Seek(offset int64, whence int) (int64, error) {
	if offset == 0 && whence == io.SeekCurrent {
		return p.pos, nil
	}
	return p.pos, fmt.Errorf("sink: the Arrow IPC file writer cannot seek (offset %d, whence %d)", offset, whence)
}
