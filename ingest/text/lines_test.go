package text

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
)

// LineOf maps every row of a text input back to its line, across blocks,
// with comments and blank lines anywhere, skipped lines and mirrored
// Matrix Market entries included.
func TestLineOf(t *testing.T) {
	for _, blockSize := range []int{1, 7, 64, 1 << 20} {
		t.Run(fmt.Sprint("block", blockSize), func(t *testing.T) {
			smallBlocks(t, blockSize)
			rng := rand.New(rand.NewPCG(uint64(blockSize), 3))
			var data bytes.Buffer
			var lineOfRow []int64
			line := int64(0)
			for i := 0; i < 300; i++ {
				line++
				switch rng.IntN(6) {
				case 0:
					data.WriteString("# comment\n")
				case 1:
					data.WriteString(" \t\n")
				case 2:
					data.WriteString("% another\n")
				default:
					w := "1.5"
					if rng.IntN(10) == 0 {
						w = "x" // skipped with SkipInvalid, still a row
					}
					fmt.Fprintf(&data, "%d %d %s\n", rng.IntN(50), rng.IntN(50), w)
					lineOfRow = append(lineOfRow, line)
				}
			}
			tbl, err := readTextBytes(data.Bytes(), edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true})
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			if tbl.RowsRead != int64(len(lineOfRow)) {
				t.Fatalf("%d rows read, want %d", tbl.RowsRead, len(lineOfRow))
			}
			for row, want := range lineOfRow {
				if got := tbl.LineOf(int64(row)); got != want {
					t.Fatalf("row %d: line %d, want %d", row, got, want)
				}
			}
			if got := tbl.LineOf(-1); got != 0 {
				t.Errorf("row -1: line %d, want 0", got)
			}
		})
	}

	mtx := "%%MatrixMarket matrix coordinate real symmetric\n% c\n3 3 3\n1 2 1\n% mid\n\n2 3 2\n3 1 3\n"
	tbl, err := readMTXBytes([]byte(mtx), edges.Options{Columns: edges.Columns{ReadWeight: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for row, want := range []int64{4, 7, 8} {
		if got := tbl.LineOf(int64(row)); got != want {
			t.Errorf("mtx row %d: line %d, want %d", row, got, want)
		}
	}
	for _, c := range tbl.Chunks {
		for i := 0; i < c.Len(); i++ {
			if r := c.Row(i); tbl.LineOf(r) == 0 {
				t.Errorf("mirrored edge at row %d has no line", r)
			}
		}
	}
}
