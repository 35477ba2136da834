package gpipe_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpipe/gpipe"
)

// writeFile writes text to a file called name in a fresh directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// LoadOptions.Header and Delimiter read what gpipe run's --header and
// --delimiter do: a ;-separated file, a header line or none, an edge
// list's header line skipped; and the messages of a file read without
// them name the options, not the flags.
func TestLoadHeaderDelimiter(t *testing.T) {
	ctx := context.Background()
	semi := writeFile(t, "e.csv", "a;b;w\n1;2;0.5\n2;3;1.5\n")
	g, err := gpipe.Load(ctx, semi, gpipe.LoadOptions{Src: "a", Dst: "b", Weight: "w", Delimiter: ';', Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if g.NumVertices() != 3 || !g.Stats().Weighted {
		t.Errorf("%d vertices, weighted %v; want 3, weighted", g.NumVertices(), g.Stats().Weighted)
	}
	g.Release()
	_, err = gpipe.Load(ctx, semi, gpipe.LoadOptions{Backend: "cpu"})
	if err == nil || !strings.Contains(err.Error(), "set LoadOptions.Delimiter to ';'") {
		t.Errorf("a ;-separated file read with commas: %v", err)
	}

	// "src,dst" as an edge (Header "no": string keys), or as the header.
	named := writeFile(t, "n.csv", "src,dst\n1,2\n2,3\n")
	for header, want := range map[string]int{"no": 5, "yes": 3, "": 3, "auto": 3} {
		g, err := gpipe.Load(ctx, named, gpipe.LoadOptions{Header: header, Backend: "cpu"})
		if err != nil {
			t.Fatalf("header %q: %v", header, err)
		}
		if g.NumVertices() != want {
			t.Errorf("header %q: %d vertices, want %d", header, g.NumVertices(), want)
		}
		g.Release()
	}

	// An edge list's header line: refused by auto, naming the option;
	// skipped with "yes".
	list := writeFile(t, "e.txt", "src dst\n1 2\n2 3\n")
	if _, err := gpipe.Load(ctx, list, gpipe.LoadOptions{Backend: "cpu"}); err == nil || !strings.Contains(err.Error(), `set LoadOptions.Header to "yes"`) {
		t.Errorf("an edge list's header line: %v", err)
	}
	g, err = gpipe.Load(ctx, list, gpipe.LoadOptions{Header: "yes", Backend: "cpu"})
	if err != nil || g.NumVertices() != 3 {
		t.Fatalf("header yes on an edge list: %v", err)
	}
	g.Release()

	// RunJob reads them too.
	rep, err := gpipe.RunJob(ctx, gpipe.Job{Input: semi, Op: gpipe.PageRank, Load: gpipe.LoadOptions{Src: "a", Dst: "b", Delimiter: ';', Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Vertices != 3 {
		t.Errorf("RunJob: %d vertices", rep.Vertices)
	}
	rep.Release()
}

// Header and Delimiter are refused where they say nothing, rather than
// ignored: a value that is none, a format without a header or delimiter,
// records, column names of a file without a header.
func TestLoadHeaderDelimiterRefused(t *testing.T) {
	ctx := context.Background()
	csvFile := writeFile(t, "e.csv", "src,dst\n1,2\n")
	for name, c := range map[string]struct {
		input string
		opts  gpipe.LoadOptions
	}{
		"header maybe":       {csvFile, gpipe.LoadOptions{Header: "maybe"}},
		"delimiter quote":    {csvFile, gpipe.LoadOptions{Delimiter: '"'}},
		"delimiter parquet":  {filepath.Join(t.TempDir(), "e.parquet"), gpipe.LoadOptions{Delimiter: ';'}},
		"delimiter txt":      {writeFile(t, "e.txt", "1 2\n"), gpipe.LoadOptions{Delimiter: ';'}},
		"header mtx":         {filepath.Join(t.TempDir(), "e.mtx"), gpipe.LoadOptions{Header: "yes"}},
		"header no, columns": {csvFile, gpipe.LoadOptions{Header: "no", Src: "a"}},
	} {
		c.opts.Backend = "cpu"
		_, err := gpipe.Load(ctx, c.input, c.opts)
		var e *gpipe.Error
		if !errors.As(err, &e) || e.Kind != gpipe.KindUsage || !strings.Contains(err.Error(), "LoadOptions.") {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := gpipe.FromRecords(ctx, nil, gpipe.LoadOptions{Delimiter: ';'})
	var e *gpipe.Error
	if !errors.As(err, &e) || e.Kind != gpipe.KindUsage {
		t.Errorf("FromRecords with a delimiter: %v", err)
	}
}
