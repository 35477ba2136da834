package ingest

// Readers still being written. Each is removed from this file by the change
// that implements it; the file goes when it is empty.

import (
	"context"
	"errors"
	"io"
	"os"
)

var errPending = errors.New("reader not implemented yet")

func readParquet(ctx context.Context, name string, f *os.File, opts Options) (*EdgeTable, error) {
	return nil, errPending
}

func readArrowFile(ctx context.Context, path string, opts Options) (*EdgeTable, error) {
	return nil, errPending
}

// ReadArrowStream reads an Arrow IPC stream.
func ReadArrowStream(ctx context.Context, name string, r io.Reader, opts Options) (*EdgeTable, error) {
	return nil, errPending
}

func readCSV(ctx context.Context, name string, r io.Reader, opts Options) (*EdgeTable, error) {
	return nil, errPending
}

func readText(ctx context.Context, name string, r io.Reader, opts Options) (*EdgeTable, error) {
	return nil, errPending
}

func readMatrixMarket(ctx context.Context, name string, r io.Reader, opts Options) (*EdgeTable, error) {
	return nil, errPending
}
