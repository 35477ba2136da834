package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/gpipe/gpipe/ingest/objstore/s3test"
)

// readParts reads the part files of a directory output, in order, as one
// output.
func readParts(t *testing.T, dir string) *output {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*.parquet"))
	if err != nil || len(names) == 0 {
		t.Fatalf("%s: no parts (%v)", dir, err)
	}
	slices.Sort(names)
	all := &output{cols: map[string][]any{}}
	for _, n := range names {
		o := readParquetOutput(t, n)
		for k, v := range o.cols {
			all.cols[k] = append(all.cols[k], v...)
		}
	}
	return all
}

// download copies the objects under prefix into dir.
func download(t *testing.T, srv *s3test.Server, bucket, prefix, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, key := range srv.Keys(bucket, prefix) {
		data, _ := srv.Get(bucket, key)
		writeFile(t, filepath.Join(dir, strings.TrimPrefix(key, prefix)), data)
	}
}

func TestDatasetsAndObjectStores(t *testing.T) {
	dir := t.TempDir()
	srv := s3test.Start(t, "lake")
	gen := []string{"gen", "kronecker", "--scale", "10", "--edge-factor", "8"}
	ok(t, dir, nil, append(gen, "--output", "edges.parquet")...)
	ok(t, dir, nil, append(gen, "--output", "edges/", "--max-rows-per-file", "3000", "--row-group-size", "1000", "--compression", "gzip", "--checksum")...)
	names, _ := filepath.Glob(filepath.Join(dir, "edges", "*"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	want := []string{"_SUCCESS", "part-00000.parquet", "part-00000.parquet.sha256", "part-00001.parquet", "part-00001.parquet.sha256", "part-00002.parquet", "part-00002.parquet.sha256"}
	if !slices.Equal(names, want) {
		t.Fatalf("gen wrote %v, want %v", names, want)
	}
	pf, err := file.OpenParquetFile(filepath.Join(dir, "edges", "part-00000.parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != 3000 || pf.NumRowGroups() != 3 || cc.Compression() != compress.Codecs.Gzip {
		t.Errorf("part 0: %d rows, %d row groups, codec %v", pf.NumRows(), pf.NumRowGroups(), cc.Compression())
	}
	pf.Close()
	ok(t, dir, nil, append(gen, "--output", "s3://lake/edges/", "--max-rows-per-file", "2500")...)
	if keys := srv.Keys("lake", "edges/"); len(keys) != 5 {
		t.Errorf("gen to s3 wrote %v", keys)
	}

	ok(t, dir, nil, "run", "--input", "edges.parquet", "--op", "cc", "--output", "cc.parquet")
	ref := readOutput(t, filepath.Join(dir, "cc.parquet"))
	// A directory, a glob and an S3 prefix, to a file, a directory of
	// parts, an S3 object and an S3 prefix of parts: the same result.
	for i, io := range [][2]string{
		{"edges", "cc-dir/"},
		{filepath.Join("edges", "part-*.parquet"), "cc-glob.parquet"},
		{"s3://lake/edges/", "s3://lake/cc/one.parquet"},
		{"s3://lake/edges", "s3://lake/cc/parts/"},
	} {
		args := []string{"run", "--input", io[0], "--op", "cc", "--output", io[1], "--json"}
		if strings.HasSuffix(io[1], "/") {
			args = append(args, "--max-rows-per-file", "300")
		}
		r := ok(t, dir, nil, args...)
		var rep struct {
			RowsRead int64 `json:"rows_read"`
		}
		if err := json.Unmarshal([]byte(r.stderr), &rep); err != nil || rep.RowsRead != 8192 {
			t.Errorf("%s: rows_read %d (%v)", io[0], rep.RowsRead, err)
		}
		var got *output
		switch {
		case strings.HasSuffix(io[1], "/") && !strings.HasPrefix(io[1], "s3://"):
			got = readParts(t, filepath.Join(dir, io[1]))
		case strings.HasPrefix(io[1], "s3://"):
			local := filepath.Join(t.TempDir(), "dl")
			prefix := strings.TrimPrefix(io[1], "s3://lake/")
			if strings.HasSuffix(prefix, "/") {
				download(t, srv, "lake", prefix, local)
				got = readParts(t, local)
			} else {
				data, _ := srv.Get("lake", prefix)
				writeFile(t, local+".parquet", data)
				got = readOutput(t, local+".parquet")
			}
		default:
			got = readOutput(t, filepath.Join(dir, io[1]))
		}
		if !reflect.DeepEqual(got.cols, ref.cols) {
			t.Errorf("%d: %s -> %s: the result differs from one file's", i, io[0], io[1])
		}
	}
}

func TestObjectStoreErrors(t *testing.T) {
	dir := t.TempDir()
	srv := s3test.Start(t, "lake")
	ok(t, dir, nil, "gen", "kronecker", "--scale", "8", "--output", "s3://lake/e/", "--max-rows-per-file", "1000")
	fails(t, dir, nil, 3, []string{"s3://lake/nothing/", "holds no part files"}, "run", "--input", "s3://lake/nothing/", "--op", "cc")
	fails(t, dir, nil, 3, []string{"s3://lake/e.parquet", "no such object", "aws s3 ls s3://lake/"}, "run", "--input", "s3://lake/e.parquet", "--op", "cc")
	fails(t, dir, nil, 2, []string{"--s3-endpoint", "not an http:// or https:// URL"}, "run", "--input", "s3://lake/e/", "--op", "cc", "--s3-endpoint", "localhost:9")
	fails(t, dir, nil, 2, []string{"--max-rows-per-file applies to a directory output"}, "run", "--input", "s3://lake/e/", "--op", "cc", "--output", "x.parquet", "--max-rows-per-file", "5")
	// A part the server fails for good: one line naming it, and no output.
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf("e/part-00001.parquet"), Times: 1 << 20, Status: 500, Code: "InternalError"})
	fails(t, dir, nil, 1, []string{"s3://lake/e/part-00001.parquet", "HTTP 500", "after 5 attempts", "run the job again"},
		"run", "--input", "s3://lake/e/", "--op", "cc", "--output", "s3://lake/out.parquet")
	if _, found := srv.Get("lake", "out.parquet"); found || len(srv.Uploads("lake")) != 0 {
		t.Error("a failed job left an output object or an upload")
	}
	srv.ClearFaults()
	// The endpoint named by the flag rather than the environment.
	t.Setenv("AWS_ENDPOINT_URL", "")
	ok(t, dir, nil, "run", "--input", "s3://lake/e/", "--op", "cc", "--s3-endpoint", srv.URL)
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, dir, nil, 2, []string{"which gpipe did not write"}, "run", "--input", "s3://lake/e/", "--op", "cc", "--output", dir+"/", "--s3-endpoint", srv.URL)
}
