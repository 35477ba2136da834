package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators"
)

// lineWriter hands every write (a progress line) to lines.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	w.lines <- string(p)
	return len(p), nil
}

// Where stderr is not a terminal (a scheduled job's log), progress is a
// line at every tick (10 s apart) naming the stage and the rows it has
// counted, which stays: nothing is redrawn or erased. Ticks are sent by
// the test, so that nothing here depends on how long anything takes.
func TestProgressLogLines(t *testing.T) {
	w := lineWriter{make(chan string, 1)}
	ticks := make(chan time.Time)
	p := startProgress(w, false, ticks)
	tick := func() string {
		ticks <- time.Time{}
		return <-w.lines
	}
	p.Stage("edges.parquet")("read")
	p.Rows().Add(1200)
	first := tick()
	p.Rows().Add(800)
	second := tick()
	p.Stage("edges.parquet")("compute")
	third := tick()
	p.Stop()
	p.Stop() // twice is fine
	for i, tc := range []struct{ got, want string }{
		{first, "gpipe: reading edges.parquet: 1200 rows so far, "},
		{second, "gpipe: reading edges.parquet: 2000 rows so far, "},
		{third, "gpipe: computing: "},
	} {
		if !strings.HasPrefix(tc.got, tc.want) || !strings.HasSuffix(tc.got, " s\n") || strings.Contains(tc.got, "\r") {
			t.Errorf("line %d: %q, want %q... s", i, tc.got, tc.want)
		}
	}
}

// A stage that knows its total says how far it is.
func TestProgressOfTotal(t *testing.T) {
	w := lineWriter{make(chan string, 1)}
	ticks := make(chan time.Time)
	p := startProgress(w, false, ticks)
	written := p.Rows()
	p.Begin("writing k.parquet", written, 4096)
	written.Add(1024)
	ticks <- time.Time{}
	got := <-w.lines
	p.Stop()
	if want := "gpipe: writing k.parquet: 1024 of 4096 rows so far, "; !strings.HasPrefix(got, want) {
		t.Errorf("%q, want %q...", got, want)
	}
}

// --quiet shows nothing.
func TestProgressQuiet(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true)
	p.Stage("e.csv")("read")
	p.Stop()
	if b.Len() != 0 {
		t.Errorf("quiet progress wrote %q", b.String())
	}
}

// The compute stage's line shows the operator's last iteration, which the
// operators report through the context (operators.WithProgress): pagerank
// its L1 change, sssp the vertices its phase worked on. A job runs here
// with the hook, and a tick after it shows what the last iteration said.
func TestProgressIterations(t *testing.T) {
	in := filepath.Join(t.TempDir(), "e.csv")
	if err := os.WriteFile(in, []byte("src,dst,weight\n1,2,1\n2,3,1\n3,1,1\n3,4,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op     string
		params operators.Params
		want   string
	}{
		{"pagerank", operators.Params{}, "gpipe: computing: pagerank: iteration %d, delta "},
		{"sssp", operators.Params{Source: "1"}, "gpipe: computing: sssp: iteration %d, 1 vertex active, "},
	} {
		w := lineWriter{make(chan string, 1)}
		ticks := make(chan time.Time)
		p := startProgress(w, false, ticks)
		rep, err := pipeline.RunJob(operators.WithProgress(context.Background(), p.Iterated), pipeline.Job{
			Input: in, Op: tc.op, Params: tc.params, Backend: "cpu",
			Load: pipeline.LoadOptions{Stage: p.Stage(in)},
		})
		if err != nil {
			t.Fatal(err)
		}
		ticks <- time.Time{}
		got := <-w.lines
		p.Stop()
		want := fmt.Sprintf(tc.want, rep.Iterations)
		if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " s\n") {
			t.Errorf("%s: %q, want %q... s", tc.op, got, want)
		}
		rep.Release()
	}
}
