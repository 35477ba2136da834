package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
