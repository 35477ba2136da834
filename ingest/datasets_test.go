package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/ingest/objstore/s3test"
	"github.com/gpipe/gpipe/internal/usererr"
)

// partTable is the edges (first+i, first+i+1, weight i) for i < n, as an
// Arrow table with keys of type key, a weight column when weighted, and a
// string column "pad" of padBytes a row that no edge column reads.
func partTable(first, n int64, key arrow.DataType, weighted bool, padBytes int) arrow.Table {
	fields := []arrow.Field{{Name: "src", Type: key}, {Name: "dst", Type: key}}
	if weighted {
		fields = append(fields, arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float64})
	}
	fields = append(fields, arrow.Field{Name: "pad", Type: arrow.BinaryTypes.String})
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		for c := range 2 {
			switch kb := b.Field(c).(type) {
			case *array.Int64Builder:
				kb.Append(first + i + int64(c))
			case *array.Int32Builder:
				kb.Append(int32(first + i + int64(c)))
			}
		}
		if weighted {
			b.Field(2).(*array.Float64Builder).Append(float64(i))
		}
		b.Field(len(fields) - 1).(*array.StringBuilder).Append(noise(first+i, padBytes))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
}

// noise is n bytes that no codec or dictionary makes smaller, the same
// for the same seed.
func noise(seed int64, n int) string {
	var b strings.Builder
	for k := 0; b.Len() < n; k++ {
		fmt.Fprintf(&b, "%x", sha256.Sum256(fmt.Appendf(nil, "%d/%d", seed, k)))
	}
	return b.String()[:n]
}

func writePart(t *testing.T, dir, rel string, first, n int64, key arrow.DataType, weighted bool) string {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tbl := partTable(first, n, key, weighted, 0)
	defer tbl.Release()
	return edgetest.WriteParquet(t, filepath.Dir(path), filepath.Base(path), tbl, edgetest.DefaultParquetWrite.With(300))
}

// wantEdges are the edges of parts of n rows each, in order.
func wantEdges(parts int, n int64, weighted bool) []edgetest.Edge {
	var out []edgetest.Edge
	for p := range int64(parts) {
		for i := range n {
			e := edgetest.Edge{Row: p*n + i, Src: p*1000 + i, Dst: p*1000 + i + 1}
			if weighted {
				e.W = float64(i)
			}
			out = append(out, e)
		}
	}
	return out
}

// hiveDir writes a Hive-partitioned dataset of three Parquet parts of 1000
// rows each, with what Spark leaves beside them (_SUCCESS, _metadata, .crc
// files, a _temporary directory) and a checksum file of a part.
func hiveDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "edges")
	writePart(t, dir, "date=2024-01-01/part-00000.parquet", 0, 1000, arrow.PrimitiveTypes.Int64, true)
	writePart(t, dir, "date=2024-01-01/part-00001.parquet", 1000, 1000, arrow.PrimitiveTypes.Int64, true)
	p := writePart(t, dir, "date=2024-01-02/part-00000.parquet", 2000, 1000, arrow.PrimitiveTypes.Int64, true)
	data, _ := os.ReadFile(p)
	sum := sha256.Sum256(data)
	edgetest.WriteFile(t, p+".sha256", fmt.Appendf(nil, "%x  part-00000.parquet\n", sum))
	for _, junk := range []string{"_SUCCESS", "_metadata", "date=2024-01-01/.part-00000.parquet.crc", "_temporary/0/part-9.parquet"} {
		path := filepath.Join(dir, filepath.FromSlash(junk))
		os.MkdirAll(filepath.Dir(path), 0o755)
		edgetest.WriteFile(t, path, []byte("not a part"))
	}
	return dir
}

func TestDatasetDirectory(t *testing.T) {
	dir := hiveDir(t)
	for _, input := range []string{dir, dir + "/", filepath.Join(dir, "date=*"), filepath.Join(dir, "*", "part-*.parquet"), filepath.Join(dir, "**", "*.parquet")} {
		tbl, err := Open(context.Background(), input, nil, edges.Options{Columns: edges.Columns{ReadWeight: true}})
		if err != nil {
			t.Fatalf("%s: %v", input, err)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), wantEdges(3, 1000, true))
		if len(tbl.Parts) != 3 || tbl.Name != input || tbl.RowsRead != 3000 {
			t.Errorf("%s: %d parts, name %q, %d rows", input, len(tbl.Parts), tbl.Name, tbl.RowsRead)
		}
		// A later stage's error about row 2500 names the third file, row 500.
		err = tbl.Locate(usererr.AtRow(tbl.Name, "weight", 2500, "negative weight", ""))
		edgetest.UserErr(t, err, filepath.Join(dir, "date=2024-01-02", "part-00000.parquet"), "row 500")
		tbl.Release()
	}
}

func TestDatasetChecksOnePart(t *testing.T) {
	dir := hiveDir(t)
	part := filepath.Join(dir, "date=2024-01-02", "part-00000.parquet")
	data, _ := os.ReadFile(part)
	data[len(data)/2] ^= 1 // a flipped bit the pages' CRCs may not cover
	edgetest.WriteFile(t, part, data)
	_, err := Open(context.Background(), dir, nil, edges.Options{})
	edgetest.UserErr(t, err, part, "does not match its checksum")
}

func TestDatasetSchemaMismatch(t *testing.T) {
	dir := t.TempDir()
	first := writePart(t, dir, "a.parquet", 0, 10, arrow.PrimitiveTypes.Int64, true)
	odd := writePart(t, dir, "b.parquet", 0, 10, arrow.PrimitiveTypes.Int32, true)
	_, err := Open(context.Background(), dir, nil, edges.Options{})
	edgetest.UserErr(t, err, odd, "int32 here but int64 in "+first, "one schema")
	// Weights in one file only, when they are read.
	os.Remove(odd)
	odd = writePart(t, dir, "b.parquet", 0, 10, arrow.PrimitiveTypes.Int64, false)
	_, err = Open(context.Background(), dir, nil, edges.Options{Columns: edges.Columns{ReadWeight: true}})
	edgetest.UserErr(t, err, odd, first+` has a weight column "weight" and `+odd+" has none")
	// Unread, they do not matter.
	tbl, err := Open(context.Background(), dir, nil, edges.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl.Release()
}

func TestDatasetLayout(t *testing.T) {
	dir := t.TempDir()
	writePart(t, dir, "src=1/a.parquet", 0, 10, arrow.PrimitiveTypes.Int64, false)
	writePart(t, dir, "b.parquet", 0, 10, arrow.PrimitiveTypes.Int64, false)
	_, err := Open(context.Background(), dir, nil, edges.Options{})
	edgetest.UserErr(t, err, dir, `"b.parquet" under no key=value directory, "src=1/a.parquet" under src=...`)
	// A partition key named as an edge column: its values are not read.
	os.Remove(filepath.Join(dir, "b.parquet"))
	_, err = Open(context.Background(), dir, nil, edges.Options{Columns: edges.Columns{Src: "date"}})
	edgetest.UserErr(t, err, "", `no source column "date"`)
	writePart(t, dir, "src=2/a.parquet", 0, 10, arrow.PrimitiveTypes.Int64, false)
	_, err = Open(context.Background(), filepath.Join(dir, "src=*"), nil, edges.Options{Columns: edges.Columns{Src: "src2"}})
	edgetest.UserErr(t, err, "", `no source column "src2"`)
	// Mixed formats, and nothing at all.
	edgetest.WriteFile(t, filepath.Join(dir, "src=1", "c.csv"), []byte("src,dst\n1,2\n"))
	_, err = Open(context.Background(), dir, nil, edges.Options{})
	edgetest.UserErr(t, err, dir, "mixes formats", "a Parquet file", "a CSV file")
	_, err = Open(context.Background(), filepath.Join(dir, "*.arrow"), nil, edges.Options{})
	if !errors.Is(err, usererr.ErrNotFound) {
		t.Errorf("a glob that matches nothing: %v", err)
	}
}

func TestDatasetPartitionKeyColumn(t *testing.T) {
	dir := t.TempDir()
	tbl := array.NewTableFromRecords(arrow.NewSchema([]arrow.Field{{Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil), nil)
	defer tbl.Release()
	os.MkdirAll(filepath.Join(dir, "src=1"), 0o755)
	edgetest.WriteParquet(t, filepath.Join(dir, "src=1"), "a.parquet", tbl, edgetest.DefaultParquetWrite)
	_, err := Open(context.Background(), dir, nil, edges.Options{})
	edgetest.UserErr(t, err, "", `no source column "src"`, "partition key of the dataset", "src=...")
}

func TestDatasetCSVAndArrow(t *testing.T) {
	dir := t.TempDir()
	edgetest.WriteFile(t, filepath.Join(dir, "p0.csv"), []byte("src,dst,weight\n1,2,0.5\n2,3,1\n"))
	edgetest.WriteFile(t, filepath.Join(dir, "p1.csv"), []byte("src,dst,weight\n\n3,4,-2\n"))
	tbl, err := Open(context.Background(), dir, nil, edges.Options{Columns: edges.Columns{ReadWeight: true}})
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: int64(1), Dst: int64(2), W: 0.5}, {Row: 1, Src: int64(2), Dst: int64(3), W: 1}, {Row: 2, Src: int64(3), Dst: int64(4), W: -2}})
	// The third row is line 3 of p1.csv (after a blank line).
	err = tbl.Locate(usererr.AtRow(tbl.Name, "weight", 2, "negative weight", ""))
	ue := edgetest.UserErr(t, err, filepath.Join(dir, "p1.csv"), "line 3")
	if ue.Row != 0 {
		t.Errorf("row %d, want 0", ue.Row)
	}
	tbl.Release()

	adir := t.TempDir()
	for i := range 3 {
		at := partTable(int64(i)*1000, 1000, arrow.PrimitiveTypes.Int64, false, 0)
		rdr := array.NewTableReader(at, 300)
		var recs []arrow.RecordBatch
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		edgetest.WriteArrowFile(t, filepath.Join(adir, fmt.Sprintf("part-%d.arrow", i)), at.Schema(), recs)
		rdr.Release()
		at.Release()
	}
	tbl, err = Open(context.Background(), adir, nil, edges.Options{})
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), wantEdges(3, 1000, false))
	tbl.Release()
}

// quickStore is a store's options for tests: short waits, soon cut
// stalls (no test measures time: these only keep it short).
func quickStore() objstore.Options {
	return objstore.Options{MaxAttempts: 4, MaxBackoff: time.Millisecond, StallTimeout: 300 * time.Millisecond}
}

// upload copies the files under dir into the bucket under prefix.
func upload(t *testing.T, srv *s3test.Server, dir, bucket, prefix string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		srv.Put(bucket, prefix+filepath.ToSlash(rel), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDatasetS3(t *testing.T) {
	srv := s3test.Start(t, "lake")
	upload(t, srv, hiveDir(t), "lake", "tables/edges/")
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, Store: quickStore()}
	for _, input := range []string{"s3://lake/tables/edges/", "s3://lake/tables/edges", "s3://lake/tables/edges/date=*/*.parquet"} {
		tbl, err := Open(context.Background(), input, nil, opts)
		if err != nil {
			t.Fatalf("%s: %v", input, err)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), wantEdges(3, 1000, true))
		if len(tbl.Parts) != 3 || tbl.Parts[2].Name != "s3://lake/tables/edges/date=2024-01-02/part-00000.parquet" {
			t.Errorf("%s: parts %+v", input, tbl.Parts)
		}
		tbl.Release()
	}
	// A server that fails now and then: retried, resumed, the same table.
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf(".parquet"), Times: 3, Status: 503, Code: "SlowDown"})
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf(".parquet"), Times: 3, CutAfter: 100})
	tbl, err := Open(context.Background(), "s3://lake/tables/edges/", nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), wantEdges(3, 1000, true))
	tbl.Release()
	// One that fails for good: one line naming the object and the fix.
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf("date=2024-01-02/part-00000.parquet"), Times: 1000, Status: 500, Code: "InternalError"})
	_, err = Open(context.Background(), "s3://lake/tables/edges/", nil, opts)
	edgetest.UserErr(t, err, "s3://lake/tables/edges/date=2024-01-02/part-00000.parquet", "HTTP 500", "after 4 attempts", "run the job again")
	// Nothing there.
	_, err = Open(context.Background(), "s3://lake/tables/nodes", nil, opts)
	if !errors.Is(err, usererr.ErrNotFound) || !strings.Contains(err.Error(), "s3://lake/tables/nodes") {
		t.Errorf("a missing prefix: %v", err)
	}
}

// A Parquet object is read by ranges: its footer and its edge columns'
// chunks, not the whole object (here mostly a column no edge needs).
func TestParquetObjectByRanges(t *testing.T) {
	srv := s3test.Start(t, "lake")
	dir := t.TempDir()
	tbl := partTable(0, 20000, arrow.PrimitiveTypes.Int64, false, 500)
	path := edgetest.WriteParquet(t, dir, "big.parquet", tbl, edgetest.DefaultParquetWrite.With(5000))
	tbl.Release()
	data, _ := os.ReadFile(path)
	srv.Put("lake", "big.parquet", data)
	srv.ResetLog()
	got, err := Open(context.Background(), "s3://lake/big.parquet", nil, edges.Options{Store: quickStore()})
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, got), wantEdges(1, 20000, false))
	got.Release()
	var fetched int64
	gets := 0
	for _, r := range srv.Requests() {
		var lo, hi int64
		if _, err := fmt.Sscanf(r.Range, "bytes=%d-%d", &lo, &hi); err == nil {
			fetched += hi - lo + 1
			gets++
		}
	}
	// 4 row groups × 2 columns, the head and the tail.
	if gets != 10 || fetched > int64(len(data))/4 {
		t.Errorf("%d ranged GETs fetched %d bytes of a %d-byte object; want 10 GETs, a small part of it", gets, fetched, len(data))
	}
}

func TestObjectFormats(t *testing.T) {
	srv := s3test.Start(t, "lake")
	srv.Put("lake", "e.csv", []byte("src,dst\na,b\nb,c\n"))
	at := partTable(0, 500, arrow.PrimitiveTypes.Int64, false, 0)
	defer at.Release()
	rdr := array.NewTableReader(at, 200)
	var recs []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	rdr.Release()
	dir := t.TempDir()
	edgetest.WriteArrowFile(t, filepath.Join(dir, "e.arrow"), at.Schema(), recs)
	data, _ := os.ReadFile(filepath.Join(dir, "e.arrow"))
	srv.Put("lake", "x/e.arrow", data)
	srv.Put("lake", "x/e.arrows", edgetest.ArrowStream(t, at.Schema(), recs))
	opts := edges.Options{Store: quickStore()}
	for _, input := range []string{"s3://lake/x/e.arrow", "s3://lake/x/e.arrows"} {
		tbl, err := Open(context.Background(), input, nil, opts)
		if err != nil {
			t.Fatalf("%s: %v", input, err)
		}
		edgetest.Same(t, edgetest.Edges(t, tbl), wantEdges(1, 500, false))
		tbl.Release()
	}
	tbl, err := Open(context.Background(), "s3://lake/e.csv", nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, tbl), []edgetest.Edge{{Row: 0, Src: "a", Dst: "b", W: 0}, {Row: 1, Src: "b", Dst: "c", W: 0}})
	tbl.Release()
}

func TestHTTPSInput(t *testing.T) {
	dir := t.TempDir()
	tbl := partTable(0, 2000, arrow.PrimitiveTypes.Int64, true, 0)
	path := edgetest.WriteParquet(t, dir, "e.parquet", tbl, edgetest.DefaultParquetWrite.With(500))
	tbl.Release()
	data, _ := os.ReadFile(path)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/data/e.parquet" {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "e.parquet", time.Time{}, bytes.NewReader(data))
	}))
	defer ts.Close()
	got, err := Open(context.Background(), ts.URL+"/data/e.parquet?sig=abc", nil, edges.Options{Columns: edges.Columns{ReadWeight: true}, Store: quickStore()})
	if err != nil {
		t.Fatal(err)
	}
	edgetest.Same(t, edgetest.Edges(t, got), wantEdges(1, 2000, true))
	got.Release()
	_, err = Open(context.Background(), ts.URL+"/data/missing.parquet", nil, edges.Options{Store: quickStore()})
	if !errors.Is(err, usererr.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
}
