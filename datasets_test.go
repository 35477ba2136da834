package gpipe_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpipe/gpipe"
	"github.com/gpipe/gpipe/ingest/objstore/s3test"
)

// Load takes a directory of part files and an S3 prefix through the same
// options as a file (the environment names the S3-compatible store).
func TestLoadDatasets(t *testing.T) {
	srv := s3test.Start(t, "lake")
	dir := t.TempDir()
	parts := map[string]string{"p0.csv": "src,dst\n1,2\n2,3\n", "p1.csv": "src,dst\n3,4\n", "_SUCCESS": ""}
	for name, text := range parts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		srv.Put("lake", "edges/"+name, []byte(text))
	}
	for _, input := range []string{dir, filepath.Join(dir, "p*.csv"), "s3://lake/edges/"} {
		g, err := gpipe.Load(context.Background(), input, gpipe.LoadOptions{Backend: "cpu"})
		if err != nil {
			t.Fatalf("%s: %v", input, err)
		}
		if g.NumVertices() != 4 || g.NumEdges() != 3 {
			t.Errorf("%s: %d vertices, %d edges", input, g.NumVertices(), g.NumEdges())
		}
		g.Release()
	}
	_, err := gpipe.Load(context.Background(), "s3://nolake/edges/", gpipe.LoadOptions{Backend: "cpu"})
	var ge *gpipe.Error
	if !errors.As(err, &ge) || ge.Kind != gpipe.KindNotFound || strings.Contains(err.Error(), "--s3-endpoint") {
		t.Errorf("a missing bucket: %v", err)
	}
}
