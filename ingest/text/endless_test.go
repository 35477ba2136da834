package text

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/pollctx"
)

// shortLine is input.MaxLine in these tests, and endlessLimit where their
// endless inputs stop giving bytes: a reader that reads on past a long line
// fails there.
const (
	shortLine    = 1 << 20
	endlessLimit = 16 << 20
)

// readers are the text formats' readers.
var readers = map[string]func(context.Context, string, io.Reader, edges.Options) (*edges.Table, error){
	"edge list": Read, "Matrix Market": ReadMatrixMarket,
}

// An input read whole (standard input, a pipe, /dev/zero) whose line does
// not end is refused once the line runs past input.MaxLine, having read
// little more than that; it used to be read into memory to its end, which
// there is none of (2 GB in 15 s, until killed).
func TestTextEndlessLine(t *testing.T) {
	edgetest.ShortLines(t, shortLine)
	const banner = "%%MatrixMarket matrix coordinate real general\n"
	for _, tc := range []struct {
		format, prefix, pattern string
		line                    int
	}{
		{"edge list", "", "\x00", 1},
		{"edge list", "1 2\n3 4\n", "7", 3},
		{"Matrix Market", "", "%", 1},
		{"Matrix Market", banner + "% comment\n", "%", 3},
		{"Matrix Market", banner + "3 3 2\n1 2 1.5\n", "2", 4},
	} {
		t.Run(fmt.Sprintf("%s %q", tc.format, tc.prefix), func(t *testing.T) {
			in := &edgetest.Endless{Prefix: []byte(tc.prefix), Pattern: []byte(tc.pattern), Limit: endlessLimit}
			_, err := readers[tc.format](context.Background(), "-", in, edges.Options{})
			edgetest.UserErr(t, err, "-", fmt.Sprintf("line %d:", tc.line), "the line is longer than 1 MiB, the most a line of", "binary data, or text without line ends")
			if n := in.ReadBytes(); n > shortLine+2<<20 {
				t.Errorf("read %d bytes of an endless line, want no more than %d", n, shortLine+2<<20)
			}
		})
	}
}

// A line longer than input.MaxLine in a file (mapped) or in memory is
// refused as one read from a pipe is, wherever the blocks are cut; one of
// input.MaxLine bytes is read.
func TestTextLongLine(t *testing.T) {
	edgetest.ShortLines(t, shortLine)
	smallBlocks(t, 64<<10)
	dir := t.TempDir()
	for _, extra := range []int{0, 1} {
		for _, before := range []int{0, 3, 40000} {
			var b bytes.Buffer
			for i := 0; i < before; i++ {
				b.WriteString("1 2\n")
			}
			long := bytes.Repeat([]byte{'9'}, shortLine-len("1 ")+extra)
			b.WriteString("1 ")
			b.Write(long)
			b.WriteString("\n5 6\n")
			path := filepath.Join(dir, "long.el")
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, read := range []func() (*edges.Table, error){
				func() (*edges.Table, error) { return readTextBytes(b.Bytes(), edges.Options{}) },
				func() (*edges.Table, error) { return readPath(context.Background(), path, edges.Options{}) },
			} {
				tbl, err := read()
				if extra == 0 {
					if err != nil {
						t.Fatalf("a line of %d bytes: %v", shortLine, err)
					}
					if n := tbl.NumEdges(); n != int64(before+2) {
						t.Errorf("%d edges, want %d", n, before+2)
					}
					tbl.Release()
					continue
				}
				edgetest.UserErr(t, err, "", fmt.Sprintf("line %d:", before+1), "longer than 1 MiB")
			}
		}
	}
}

// A canceled read stops while it reads an input whole: it used to read an
// endless one to its end.
func TestTextCanceledWhileReading(t *testing.T) {
	for format, prefix := range map[string]string{"edge list": "", "Matrix Market": "%%MatrixMarket matrix coordinate pattern general\n9 9 9\n"} {
		in := &edgetest.Endless{Prefix: []byte(prefix), Pattern: []byte("1 2\n"), Limit: endlessLimit}
		if _, err := readers[format](pollctx.New(5), "-", in, edges.Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want the cancellation", format, err)
		}
		if n := in.ReadBytes(); n > 8<<20 {
			t.Errorf("%s: read %d bytes before it saw the cancellation", format, n)
		}
	}
}
