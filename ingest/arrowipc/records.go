package arrowipc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// ReadRecords reads an edge table from a record reader. name is the input
// as the user knows it, for messages.
func ReadRecords(ctx context.Context, name string, rdr array.RecordReader, opts edges.Options) (*edges.Table, error) {
	return readRecords(ctx, name, "the Arrow data", rdr, opts)
}

// readRecords is ReadRecords; what names the input in messages ("the Arrow
// IPC stream").
func readRecords(ctx context.Context, name, what string, rdr array.RecordReader, opts edges.Options) (*edges.Table, error) {
	a, err := newAppender(ctx, name, rdr.Schema(), opts)
	if err != nil {
		return nil, err
	}
	if err := appendAll(a, what, rdr); err != nil {
		a.Release()
		return nil, err
	}
	return a.Finish()
}

// appendAll appends every record of rdr.
func appendAll(a *Appender, what string, rdr array.RecordReader) error {
	for rdr.Next() {
		if err := a.Append(rdr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := a.ctx.Err(); err != nil {
		return err
	}
	if err := rdr.Err(); err != nil {
		return usererr.InFile(a.name, errBatch(what, a.batches, err), "the input is damaged or was cut short; re-export it")
	}
	return nil
}

// errBatch says what arrow's reader found wrong with record batch i of
// what ("the Arrow IPC stream"), in a user's words: its panics on damaged
// buffers (which it reports as "unknown error while reading: runtime
// error: slice bounds out of range") as buffers that do not match the
// batch's header, an end of input as a cut, and its other errors without
// the package prefixes.
func errBatch(what string, i int, err error) string {
	problem := fmt.Sprintf("%s is corrupt or truncated at record batch %d", what, i)
	var damaged errDamagedMessage
	if errors.As(err, &damaged) {
		return problem + " (" + damaged.problem + ")"
	}
	s := err.Error()
	for _, p := range []string{"arrow/ipc: ", "unknown error while reading: ", "arrow/array: ", "arrow: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	switch {
	case errors.Is(err, errArrowFailed) || strings.Contains(s, "runtime error") || strings.Contains(s, "out of range") || strings.Contains(s, "nil pointer"):
		return problem + " (its buffers do not match its header)"
	case strings.Contains(s, "EOF"):
		return problem + " (the input ends inside the batch)"
	}
	return problem + " (" + echo.Text(s) + ")"
}
