package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs the program and checks what it says it saw.
func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	for _, want := range []string{
		"int64 keys: 1000 vertices, bfs from 0",
		"utf8 keys: 1000 vertices, bfs from v0",
		"pagerank sums to 1.000000",
		"missing file: errors.Is(err, fs.ErrNotExist)",
		"null key: errors.Is(err, gpipe.ErrInput), column dst, row 2",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the program's output lacks %q:\n%s", want, got)
		}
	}
}
