// Package gen generates synthetic edge tables, seeded and deterministic at
// any core count: Graph 500 Kronecker graphs, grids and road-like graphs.
package gen

import (
	"context"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Generator makes a synthetic edge table.
type Generator interface {
	Generate(ctx context.Context) (*edges.Table, error)
}

// weightSeed sets the weights' random streams apart from the edges'.
const weightSeed = 0x77656967687473 // "weights"

// Parse reads a generator spec as gpipe bench --gen takes it:
// kronecker:SCALE[:EDGEFACTOR] (edge factor 16 by default), grid:ROWSxCOLS
// or road:VERTICES. The generator draws from seed, and adds weights when
// weighted.
func Parse(spec string, seed uint64, weighted bool) (Generator, error) {
	bad := usererr.New(usererr.Usage, "bad generator "+echo.Quote(spec),
		"write kronecker:SCALE, kronecker:SCALE:EDGEFACTOR, grid:ROWSxCOLS or road:VERTICES, e.g. kronecker:20:16, grid:2048x2048 or road:16000000")
	parts := strings.Split(spec, ":")
	switch {
	case len(parts) == 2 && parts[0] == "road":
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			return nil, bad
		}
		return Road{Vertices: n, Seed: seed, Weighted: weighted}, nil
	case len(parts) == 2 && parts[0] == "grid":
		rows, cols, ok := strings.Cut(parts[1], "x")
		g := Grid{Seed: seed, Weighted: weighted}
		var err1, err2 error
		g.Rows, err1 = strconv.Atoi(rows)
		g.Cols, err2 = strconv.Atoi(cols)
		if !ok || err1 != nil || err2 != nil {
			return nil, bad
		}
		return g, nil
	case len(parts) < 2 || len(parts) > 3 || parts[0] != "kronecker":
		return nil, bad
	}
	k := Kronecker{EdgeFactor: 16, Seed: seed, Weighted: weighted}
	var err error
	if k.Scale, err = strconv.Atoi(parts[1]); err != nil {
		return nil, bad
	}
	if len(parts) == 3 {
		if k.EdgeFactor, err = strconv.Atoi(parts[2]); err != nil {
			return nil, bad
		}
	}
	return k, nil
}

// newTable is a generated table of int64 keys: all of its m rows kept, in
// chunks of a few million.
func newTable(name string, src, dst []int64, weight []float64) *edges.Table {
	m := int64(len(src))
	t := &edges.Table{
		Name:         name,
		Columns:      edges.Columns{}.WithDefaults(),
		KeyType:      edges.KeyInt64,
		KeyArrowType: arrow.PrimitiveTypes.Int64,
		HasWeight:    weight != nil,
		RowsRead:     m,
		Skipped:      edges.Skips{},
	}
	for first := int64(0); first < m; first += 1 << 22 {
		last := min(first+1<<22, m)
		c := edges.Chunk{FirstRow: first, Src: edges.Keys{Int64: src[first:last]}, Dst: edges.Keys{Int64: dst[first:last]}}
		if weight != nil {
			c.Weight = weight[first:last]
		}
		t.Chunks = append(t.Chunks, c)
	}
	return t
}
