package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// The example runs as documented, on the payments made in memory and on the
// bundled graph, and its outputs read back with a row per vertex.
func TestExampleRuns(t *testing.T) {
	ctx := context.Background()
	for _, j := range []job{
		{src: "payer", dst: "payee", source: "acct-0000", backend: "cpu"},
		{input: "../data/karate.parquet", src: "src", dst: "dst", source: "1", backend: "cpu"},
	} {
		j.out = t.TempDir()
		if err := run(ctx, j); err != nil {
			t.Fatal(err)
		}
		g, err := load(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		vertices := g.NumVertices()
		g.Release()
		for _, name := range []string{"ranks.parquet", "groups.parquet"} {
			f, err := file.OpenParquetFile(filepath.Join(j.out, name), false)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if rows := f.NumRows(); rows != int64(vertices) {
				t.Errorf("%s: %d rows, want %d", name, rows, vertices)
			}
			f.Close()
		}
	}
}
