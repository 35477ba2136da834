package gen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Grid describes the Rows × Cols grid with 4-neighbour edges: vertex
// r·Cols + c, an edge (v, v+1) to the right neighbour within a row and an
// edge (v, v+Cols) to the one below between rows, each once, so that the
// grid's graph is the table read with --undirected. Its BFS depth from
// vertex 0 is r + c: a graph as deep as it is wide, the opposite of a
// Kronecker graph.
type Grid struct {
	Rows, Cols int
	// Seed draws the weights; the edges do not depend on it.
	Seed uint64
	// Weighted adds a "weight" column of integers drawn uniformly from
	// [1, 255], as Kronecker does.
	Weighted bool
	// Progress, when set, counts the edges made so far.
	Progress *atomic.Int64
}

// maxGridVertices is the most vertices a grid may have: the engine's vertex
// ids are uint32, one value reserved (convert.MaxVertices).
const maxGridVertices = 1<<32 - 1

// weightChunk is the number of weights drawn from one seeded stream, so
// that the weights are the same whatever the number of cores.
const weightChunk = 1 << 16

// Generate writes the grid as an edge table with int64 keys in
// [0, Rows·Cols), row by row.
func (g Grid) Generate(ctx context.Context) (*edges.Table, error) {
	if g.Rows < 1 || g.Cols < 1 {
		return nil, usererr.Newf(usererr.Usage, "grid %dx%d: rows and columns must be at least 1", g.Rows, g.Cols)
	}
	rows, cols := int64(g.Rows), int64(g.Cols)
	if rows > maxGridVertices/cols {
		return nil, usererr.Newf(usererr.Usage, "grid %dx%d has more than %d vertices, the most a graph can have (vertex ids are uint32); choose fewer rows or columns",
			g.Rows, g.Cols, int64(maxGridVertices))
	}
	// Each row but the last has cols-1 edges along it and cols down from it.
	perRow := 2*cols - 1
	m := rows*(cols-1) + (rows-1)*cols
	need := m * 16
	if g.Weighted {
		need += m * 8
	}
	if total := physicalMemory(); total > 0 && need > total {
		return nil, usererr.Newf(usererr.Usage, "grid %dx%d: %d edges need %s for their columns alone, more than this machine's %s of memory; choose fewer rows or columns",
			g.Rows, g.Cols, m, bytesize.Format(need), bytesize.Format(total))
	}

	src := make([]int64, m)
	dst := make([]int64, m)
	par.For(g.Rows, 1, func(lo, hi int) {
		for r := int64(lo); r < int64(hi); r++ {
			if ctx.Err() != nil {
				return
			}
			e, v := r*perRow, r*cols
			for c := int64(0); c < cols; c, v = c+1, v+1 {
				if c+1 < cols {
					src[e], dst[e] = v, v+1
					e++
				}
				if r+1 < rows {
					src[e], dst[e] = v, v+cols
					e++
				}
			}
			if g.Progress != nil {
				g.Progress.Add(e - r*perRow)
			}
		}
	})
	var weight []float64
	if g.Weighted {
		weight = make([]float64, m)
		drawWeights(ctx, g.Seed, weight)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newTable(fmt.Sprintf("grid:%dx%d", g.Rows, g.Cols), src, dst, weight), nil
}

// drawWeights fills weight with integers drawn uniformly from [1, 255]:
// chunk c of weightChunk edges from its own stream of seed, as Kronecker's
// weights are drawn.
func drawWeights(ctx context.Context, seed uint64, weight []float64) {
	m := int64(len(weight))
	chunks := int((m + weightChunk - 1) / weightChunk)
	par.For(chunks, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			if ctx.Err() != nil {
				return
			}
			rng := rand.New(rand.NewPCG(seed^weightSeed, uint64(c)+1))
			first := int64(c) * weightChunk
			for e := first; e < min(first+weightChunk, m); e++ {
				weight[e] = float64(1 + rng.IntN(255))
			}
		}
	})
}
