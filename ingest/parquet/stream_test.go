package parquet

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// recordStream keeps what a reader streams.
type recordStream struct {
	mu       sync.Mutex
	begins   int
	rows     int64
	keys     edges.KeyType
	weighted bool
	got      map[int64]edges.Chunk
	early    bool // Rows before Begin
}

func (s *recordStream) Begin(rows int64, keys edges.KeyType, weighted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begins++
	s.rows, s.keys, s.weighted = rows, keys, weighted
}

func (s *recordStream) Rows(first int64, c *edges.Chunk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begins == 0 {
		s.early = true
	}
	if s.got == nil {
		s.got = map[int64]edges.Chunk{}
	}
	s.got[first] = *c
}

// TestParquetStream reads files of several row groups with a Stream: each
// row group's rows arrive once, as the table's chunks hold them, after one
// Begin with the table's size; with SkipInvalid nothing is streamed.
func TestParquetStream(t *testing.T) {
	dir := t.TempDir()
	const rows, rgRows = 2000, 170
	for i, kt := range keyTypes {
		for _, weighted := range []bool{false, true} {
			name := fmt.Sprintf("%s-weighted=%v", kt.name, weighted)
			weight := weightTypes[0]
			if weighted {
				weight = weightTypes[4]
			}
			c := randomEdges(uint64(i+1), rows, rgRows, kt.typ, weight, i%2 == 0, 0, 0)
			path := c.write(t, dir, name+".parquet", false, edgetest.ParquetWrite{RowGroupRows: rgRows})
			for _, skip := range []bool{false, true} {
				s := &recordStream{}
				opts := edges.Options{Columns: edges.Columns{ReadWeight: weighted}, Stream: s, SkipInvalid: skip}
				readChecked(t, path, opts, func(tbl *edges.Table) {
					if skip {
						if s.begins != 0 || len(s.got) != 0 {
							t.Errorf("%s with SkipInvalid: streamed %d begins, %d chunks", name, s.begins, len(s.got))
						}
						return
					}
					if s.begins != 1 || s.early || s.rows != tbl.NumEdges() || s.keys != tbl.KeyType || s.weighted != tbl.HasWeight {
						t.Fatalf("%s: Begin %d times (rows early %v) with %d rows, %v keys, weighted %v; want once, %d, %v, %v",
							name, s.begins, s.early, s.rows, s.keys, s.weighted, tbl.NumEdges(), tbl.KeyType, tbl.HasWeight)
					}
					if len(s.got) != len(tbl.Chunks) {
						t.Fatalf("%s: %d chunks streamed, the table has %d", name, len(s.got), len(tbl.Chunks))
					}
					var first int64
					for ci := range tbl.Chunks {
						want := tbl.Chunks[ci]
						got, ok := s.got[first]
						if !ok || !reflect.DeepEqual(got, want) {
							t.Fatalf("%s: chunk %d (rows from %d) streamed as %v, the table has it as %v", name, ci, first, ok, want.Len())
						}
						first += int64(want.Len())
					}
				})
			}
		}
	}
}
