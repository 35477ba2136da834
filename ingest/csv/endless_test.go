package csv

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/pollctx"
)

// shortLine is input.MaxLine in these tests, and endlessLimit where their
// endless inputs stop giving bytes: a reader that reads on past a long
// record fails there.
const (
	shortLine    = 1 << 20
	endlessLimit = 16 << 20
)

// An input whose record does not end (/dev/zero, `yes | tr -d '\n'`, a
// quote never closed) is refused once the record runs past input.MaxLine,
// having read little more than that; it used to fill memory (2 GB in 15 s)
// until killed.
func TestCSVEndlessRecord(t *testing.T) {
	edgetest.ShortLines(t, shortLine)
	for _, tc := range []struct {
		name, prefix, pattern string
		line                  int
	}{
		{"header", "", "a", 1},
		{"zeros", "", "\x00", 1},
		{"record", "src,dst\n1,2\n", "7", 3},
		{"open quote", "src,dst\n1,2\n\n\"", "a,b\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &edgetest.Endless{Prefix: []byte(tc.prefix), Pattern: []byte(tc.pattern), Limit: endlessLimit}
			_, err := Read(context.Background(), "-", in, edges.Options{})
			edgetest.UserErr(t, err, "-", fmt.Sprintf("line %d:", tc.line), "longer than 1 MiB, the most a record may hold", "every quoted field is closed")
			if n := in.ReadBytes(); n > shortLine+2<<20 {
				t.Errorf("read %d bytes of an endless record, want no more than %d", n, shortLine+2<<20)
			}
		})
	}
}

// A record of input.MaxLine bytes is read; one byte more is refused.
func TestCSVLongestRecord(t *testing.T) {
	edgetest.ShortLines(t, shortLine)
	head := "src,dst\n1,"
	for _, extra := range []int{0, 1} {
		key := make([]byte, shortLine-len("1,")-len("\n")+extra)
		for i := range key {
			key[i] = 'k'
		}
		data := append(append([]byte(head), key...), "\n3,4\n"...)
		tbl, err := readCSVBytes(data, edges.Options{})
		if extra == 0 {
			if err != nil {
				t.Fatal(err)
			}
			if tbl.NumEdges() != 2 {
				t.Errorf("%d edges", tbl.NumEdges())
			}
			tbl.Release()
			continue
		}
		edgetest.UserErr(t, err, "edges.csv", "line 2:", "longer than 1 MiB")
	}
}

// A canceled read stops while it reads: amid an endless input of rows, and
// amid one endless record, which it used to read to the end (there was none).
func TestCSVCanceledWhileReading(t *testing.T) {
	for _, pattern := range []string{"1,2\n", "a"} {
		in := &edgetest.Endless{Prefix: []byte("src,dst\n"), Pattern: []byte(pattern), Limit: endlessLimit}
		if _, err := Read(pollctx.New(20), "-", in, edges.Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("%q: %v, want the cancellation", pattern, err)
		}
		if n := in.ReadBytes(); n > 8<<20 {
			t.Errorf("%q: read %d bytes before it saw the cancellation", pattern, n)
		}
	}
}
