package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
)

// The example runs as documented against the bundled graph.
func TestExampleRuns(t *testing.T) {
	out := t.TempDir()
	if err := run(context.Background(), "../data/karate.parquet", "1", out, "cpu"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ranks.parquet", "bfs.parquet"} {
		// The result tables are read back as edge tables of (vertex, vertex):
		// enough to check that 34 rows with the right key column arrived.
		tab, err := ingest.Open(context.Background(), filepath.Join(out, name), nil,
			edges.Options{Columns: edges.Columns{Src: "vertex", Dst: "vertex"}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tab.RowsRead != 34 {
			t.Errorf("%s: %d rows, want 34", name, tab.RowsRead)
		}
		tab.Release()
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
}
