//go:build unix

package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// mkfifo makes a FIFO in dir.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A FIFO named as the input (mkfifo, or bash's <(producer)) is read as
// standard input is, in every format: Parquet and Arrow IPC files whole
// into memory first. They used to be read as regular files: a FIFO's size
// is 0, and it cannot be mapped.
func TestFIFOFormats(t *testing.T) {
	dir := t.TempDir()
	want := []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2)}, {Row: 1, Src: int64(2), Dst: int64(3)}}
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{2, 3}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	arrowPath := filepath.Join(dir, "e.arrow")
	edgetest.WriteArrowFile(t, arrowPath, schema, []arrow.RecordBatch{rec})
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	pqPath := edgetest.WriteParquet(t, dir, "e.parquet", tbl, edgetest.DefaultParquetWrite)
	tbl.Release()
	read := func(path string) []byte {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for name, data := range map[string][]byte{
		"f.parquet": read(pqPath),
		"f.arrow":   read(arrowPath),
		"f.arrows":  edgetest.ArrowStream(t, schema, []arrow.RecordBatch{rec}),
		"f.csv":     []byte("src,dst\n1,2\n2,3\n"),
		"f.txt":     []byte("1 2\n2 3\n"),
	} {
		path := mkfifo(t, dir, name)
		go func() {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return // the read below fails the test
			}
			_, _ = f.Write(data)
			f.Close()
		}()
		tbl, err := Open(context.Background(), path, nil, edges.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tbl.Name != path {
			t.Errorf("%s: named %q", name, tbl.Name)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), want)
		tbl.Release()
	}
}

// A FIFO that no producer opens for writing is not waited for once the
// context is canceled: opening it used to wait in the kernel, where a
// signal could not end it. (The test waits a generous bound for Open to
// return, then opens the FIFO itself to let a stuck Open go; it measures no
// speed.)
func TestFIFOWithoutWriterCanceled(t *testing.T) {
	path := mkfifo(t, t.TempDir(), "e.csv")
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		_, err := Open(ctx, path, nil, edges.Options{})
		returned <- err
	}()
	cancel()
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled while waiting for a writer: %v, want the cancellation", err)
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-returned
		t.Fatal("Open waited for a FIFO's writer after its context was canceled")
	}
}
