package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/pollctx"
)

// endlessLimit is where the endless inputs of these tests stop giving
// bytes: a reader that reads on where it should have stopped fails there.
const endlessLimit = 64 << 20

// An endless standard input (/dev/zero, `yes`) is refused once it shows it
// is not what it is read as, or its line runs past input.MaxLine, having
// read little; Parquet and Arrow IPC files, which are read whole from a
// pipe, used to be read to the end, which there is none of.
func TestStdinEndless(t *testing.T) {
	edgetest.ShortLines(t, 1<<20)
	for format, says := range map[string]string{
		FormatParquet:     "not a Parquet file",
		FormatArrowFile:   "not an Arrow IPC file",
		FormatArrowStream: "not an Arrow IPC stream",
		FormatCSV:         "line 1: the CSV record that starts on this line is longer than 1 MiB",
		FormatText:        "line 1: the line is longer than 1 MiB",
		FormatMTX:         "line 1: the line is longer than 1 MiB",
	} {
		in := &edgetest.Endless{Pattern: []byte{0}, Limit: endlessLimit}
		_, err := Open(context.Background(), "-", in, edges.Options{Format: format})
		edgetest.UserErr(t, err, "-", says)
		if n := in.ReadBytes(); n > 4<<20 {
			t.Errorf("%s: read %d bytes of an endless input", format, n)
		}
	}
}

// A canceled read of a Parquet or Arrow IPC file that comes through a pipe
// stops while it reads the file into memory: it used to read on to the
// end (of an endless one, never).
func TestStdinCanceledWhileReading(t *testing.T) {
	for format, magic := range map[string]string{FormatParquet: "PAR1", FormatArrowFile: "ARROW1\x00\x00"} {
		in := &edgetest.Endless{Prefix: []byte(magic), Pattern: []byte{0}, Limit: endlessLimit}
		if _, err := Open(pollctx.New(10), "-", in, edges.Options{Format: format}); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want the cancellation", format, err)
		}
		if n := in.ReadBytes(); n > 16<<20 {
			t.Errorf("%s: read %d bytes before it saw the cancellation", format, n)
		}
	}
}

// Every reader looks at its context while it reads, and a read canceled at
// any of those looks ends with the cancellation: of files in every format,
// of a few hundred thousand edges in several row groups, batches or blocks.
func TestCanceledWhileReading(t *testing.T) {
	const n = 200_000
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 9))
	src, dst := make([]int64, n), make([]int64, n)
	var text, csv, mtx bytes.Buffer
	csv.WriteString("src,dst\n")
	fmt.Fprintf(&mtx, "%%%%MatrixMarket matrix coordinate pattern general\n1000 1000 %d\n", n)
	for i := range src {
		src[i], dst[i] = 1+rng.Int64N(1000), 1+rng.Int64N(1000)
		fmt.Fprintf(&text, "%d %d\n", src[i], dst[i])
		fmt.Fprintf(&csv, "%d,%d\n", src[i], dst[i])
		fmt.Fprintf(&mtx, "%d %d\n", src[i], dst[i])
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var recs []arrow.RecordBatch
	for lo := 0; lo < n; lo += n / 8 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		b.Field(0).(*array.Int64Builder).AppendValues(src[lo:lo+n/8], nil)
		b.Field(1).(*array.Int64Builder).AppendValues(dst[lo:lo+n/8], nil)
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	paths := map[string]string{}
	write := func(name string, data []byte) {
		paths[name] = filepath.Join(dir, name)
		if err := os.WriteFile(paths[name], data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("e.txt", text.Bytes())
	write("e.csv", csv.Bytes())
	write("e.mtx", mtx.Bytes())
	write("e.arrows", edgetest.ArrowStream(t, schema, recs))
	paths["e.arrow"] = filepath.Join(dir, "e.arrow")
	edgetest.WriteArrowFile(t, paths["e.arrow"], schema, recs)
	tbl := array.NewTableFromRecords(schema, recs)
	paths["e.parquet"] = edgetest.WriteParquet(t, dir, "e.parquet", tbl, edgetest.ParquetWrite{RowGroupRows: n / 8, PageSize: 64 << 10})
	tbl.Release()
	for _, r := range recs {
		r.Release()
	}

	for name, path := range paths {
		count := pollctx.New(0)
		tbl, err := Open(count, path, nil, edges.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tbl.Release()
		polls := count.Polls()
		if polls < 4 {
			t.Fatalf("%s: the read asked its context %d times: not while it read", name, polls)
		}
		for at := int64(1); at <= polls; at += max(1, polls/7) {
			if tbl, err := Open(pollctx.New(at), path, nil, edges.Options{}); !errors.Is(err, context.Canceled) || tbl != nil {
				t.Fatalf("%s: canceled at check %d of %d: table %v, error %v", name, at, polls, tbl != nil, err)
			}
		}
	}
}
