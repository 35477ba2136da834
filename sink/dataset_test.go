package sink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/ingest/objstore/s3test"
)

var edgeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// edgeRecord is the edges (first+i, first+i+1) for i < n.
func edgeRecord(first, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, edgeSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(first + i)
		b.Field(1).(*array.Int64Builder).Append(first + i + 1)
	}
	return b.NewRecordBatch()
}

// writeEdges writes n edges to path in records of 700 rows.
func writeEdges(t *testing.T, ctx context.Context, path string, n int64, opts Options) error {
	t.Helper()
	w, err := CreateContext(ctx, path, edgeSchema, opts)
	if err != nil {
		return err
	}
	defer w.Abort()
	for off := int64(0); off < n; off += 700 {
		rec := edgeRecord(off, min(700, n-off))
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return w.Close()
}

// readBack reads a dataset or file with gpipe's reader and checks it holds
// the n edges writeEdges writes, in order.
func readBack(t *testing.T, input string, n int64, store objstore.Options) *edges.Table {
	t.Helper()
	tbl, err := ingest.Open(context.Background(), input, nil, edges.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var i int64
	for _, c := range tbl.Chunks {
		for j := range c.Len() {
			if c.Src.Int64[j] != i || c.Dst.Int64[j] != i+1 {
				t.Fatalf("%s: edge %d is %d->%d", input, i, c.Src.Int64[j], c.Dst.Int64[j])
			}
			i++
		}
	}
	if i != n {
		t.Fatalf("%s: %d edges, want %d", input, i, n)
	}
	return tbl
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestDirectoryOutput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out") + "/"
	opts := Options{MaxRowsPerFile: 1000, BatchRows: 300, Checksum: true}
	if err := writeEdges(t, context.Background(), dir, 2500, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"_SUCCESS", "part-00000.parquet", "part-00000.parquet.sha256", "part-00001.parquet", "part-00001.parquet.sha256", "part-00002.parquet", "part-00002.parquet.sha256"}
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("directory holds %v, want %v", got, want)
	}
	tbl := readBack(t, dir, 2500, objstore.Options{})
	if len(tbl.Parts) != 3 || tbl.Parts[2].Rows != 500 {
		t.Errorf("parts %+v", tbl.Parts)
	}
	tbl.Release()
	// Written again with fewer rows, in CSV: every part of the first goes.
	if err := writeEdges(t, context.Background(), dir, 1200, Options{MaxRowsPerFile: 1000, Format: FormatCSV}); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"_SUCCESS", "part-00000.csv", "part-00001.csv"}) {
		t.Fatalf("rewritten directory holds %v", got)
	}
	readBack(t, dir, 1200, objstore.Options{}).Release()
	if err := writeEdges(t, context.Background(), dir, 1200, Options{MaxRowsPerFile: 1000}); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"_SUCCESS", "part-00000.parquet", "part-00001.parquet"}) {
		t.Fatalf("rewritten directory holds %v", got)
	}
	readBack(t, dir, 1200, objstore.Options{}).Release()
}

// A write that fails leaves an earlier output as it was, and none of its
// own parts; while it writes, no part of it is visible.
func TestDirectoryOutputAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out") + "/"
	if err := writeEdges(t, context.Background(), dir, 1500, Options{MaxRowsPerFile: 1000}); err != nil {
		t.Fatal(err)
	}
	before := dirNames(t, dir)
	w, err := Create(dir, edgeSchema, Options{MaxRowsPerFile: 1000})
	if err != nil {
		t.Fatal(err)
	}
	rec := edgeRecord(100, 2500)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	visible := 0
	for _, n := range dirNames(t, dir) {
		if !strings.HasPrefix(n, ".") {
			visible++
		}
	}
	if visible != len(before) {
		t.Errorf("while writing, the directory shows %v", dirNames(t, dir))
	}
	bad := edgeRecord(0, 1)
	// A record of another schema fails the write.
	other := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{bad.Column(0)}, 1)
	if err := w.Write(other); err == nil {
		t.Fatal("a record of another schema was written")
	}
	bad.Release()
	other.Release()
	w.Abort()
	if got := dirNames(t, dir); !slices.Equal(got, before) {
		t.Errorf("after a failed write the directory holds %v, want %v", got, before)
	}
	readBack(t, dir, 1500, objstore.Options{}).Release()
}

// testStore is a store's options for tests: small parts, short waits, soon
// cut stalls (no test measures time: these only keep it short).
func testStore() objstore.Options {
	return objstore.Options{MaxAttempts: 3, MaxBackoff: time.Millisecond, StallTimeout: 300 * time.Millisecond, PartSize: 16 << 10}
}

func TestS3Output(t *testing.T) {
	srv := s3test.Start(t, "lake")
	opts := Options{Store: testStore(), BatchRows: 500, Checksum: true}
	if err := writeEdges(t, context.Background(), "s3://lake/r/edges.parquet", 5000, opts); err != nil {
		t.Fatal(err)
	}
	readBack(t, "s3://lake/r/edges.parquet", 5000, testStore()).Release()
	if sum, ok := srv.Get("lake", "r/edges.parquet.sha256"); !ok || !strings.HasSuffix(string(sum), "  edges.parquet\n") {
		t.Errorf("checksum object %q", sum)
	}
	// A directory of parts on S3.
	opts = Options{Store: testStore(), MaxRowsPerFile: 2000}
	if err := writeEdges(t, context.Background(), "s3://lake/out/", 5000, opts); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Keys("lake", "out/"); !slices.Equal(keys, []string{"out/_SUCCESS", "out/part-00000.parquet", "out/part-00001.parquet", "out/part-00002.parquet"}) {
		t.Errorf("keys %v", keys)
	}
	readBack(t, "s3://lake/out/", 5000, testStore()).Release()
	if ups := srv.Uploads("lake"); len(ups) != 0 {
		t.Errorf("uploads left: %v", ups)
	}
}

// A server that fails an upload for good: a clean error, and no object,
// no parts left behind; one that fails now and then: retried.
func TestS3OutputFailures(t *testing.T) {
	srv := s3test.Start(t, "lake")
	// Parts go up 4 at a time, so that all 4 faults may hit one part:
	// attempts enough for that.
	patient := testStore()
	patient.MaxAttempts = 5
	opts := Options{Store: patient, BatchRows: 500}
	srv.AddFault(&s3test.Fault{Match: s3test.PartUploadOf("r.parquet"), Times: 3, Status: 503, Code: "SlowDown"})
	srv.AddFault(&s3test.Fault{Match: s3test.PartUploadOf("r.parquet"), Times: 1, Stall: true})
	if err := writeEdges(t, context.Background(), "s3://lake/r.parquet", 5000, opts); err != nil {
		t.Fatal(err)
	}
	readBack(t, "s3://lake/r.parquet", 5000, testStore()).Release()

	srv.AddFault(&s3test.Fault{Match: s3test.PartUploadOf("part-00001.parquet"), Times: 1000, Status: 500, Code: "InternalError"})
	err := writeEdges(t, context.Background(), "s3://lake/out/", 5000, Options{Store: testStore(), MaxRowsPerFile: 2000})
	if err == nil || !strings.HasPrefix(err.Error(), "s3://lake/out/part-00001.parquet: cannot write") || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("error %v", err)
	}
	if keys := srv.Keys("lake", "out/"); len(keys) != 0 {
		t.Errorf("a failed output left %v", keys)
	}
	if ups := srv.Uploads("lake"); len(ups) != 0 {
		t.Errorf("a failed output left uploads %v", ups)
	}
	// Canceled halfway: nothing either.
	ctx, cancel := context.WithCancel(context.Background())
	w, err := CreateContext(ctx, "s3://lake/c.parquet", edgeSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := edgeRecord(0, 3000)
	w.Write(rec)
	rec.Release()
	cancel()
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Errorf("Close after cancel: %v", err)
	}
	if _, ok := srv.Get("lake", "c.parquet"); ok || len(srv.Uploads("lake")) != 0 {
		t.Error("a canceled write left an object or an upload")
	}
}
