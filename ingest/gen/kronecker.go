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

// Kronecker describes a Graph 500 Kronecker graph: 2^Scale vertices and
// EdgeFactor·2^Scale edges, each placed by Scale recursive choices of a
// quadrant of the adjacency matrix with probabilities A, B, C and 1-A-B-C,
// with vertex labels randomly permuted so that ids carry no degree order.
type Kronecker struct {
	Scale      int
	EdgeFactor int
	Seed       uint64
	// A, B, C are the quadrant probabilities; zero means Graph 500's
	// 0.57, 0.19, 0.19.
	A, B, C float64
	// Weighted adds a "weight" column of integers drawn uniformly from
	// [1, 255], as the GAP benchmark suite weights its generated graphs.
	Weighted bool
	// Progress, when set, counts the edges drawn so far.
	Progress *atomic.Int64
}

// kroneckerChunk is the number of edges drawn from one seeded stream, so that
// the graph is the same whatever the number of cores.
const kroneckerChunk = 1 << 16

// Generate draws the graph as an edge table with int64 keys in [0, 2^Scale).
func (k Kronecker) Generate(ctx context.Context) (*edges.Table, error) {
	if k.Scale < 1 || k.Scale > 31 {
		return nil, usererr.Newf(usererr.Usage, "kronecker scale %d is out of range (1 to 31)", k.Scale)
	}
	if k.EdgeFactor < 1 {
		return nil, usererr.Newf(usererr.Usage, "kronecker edge factor %d must be at least 1", k.EdgeFactor)
	}
	if k.A == 0 && k.B == 0 && k.C == 0 {
		k.A, k.B, k.C = 0.57, 0.19, 0.19
	}
	if k.A <= 0 || k.B < 0 || k.C < 0 || k.A+k.B+k.C >= 1 {
		return nil, usererr.Newf(usererr.Usage, "kronecker probabilities a=%v b=%v c=%v must be positive and sum below 1", k.A, k.B, k.C)
	}
	n := int64(1) << k.Scale
	// The byte count below (24 bytes an edge, 8 a vertex) stays within
	// int64: at 2^62 edges it wrapped, and scale 1 with edge factor 2^60
	// passed the memory check and panicked in make.
	const maxEdges = 1 << 58
	if int64(k.EdgeFactor) > maxEdges>>k.Scale {
		return nil, usererr.Newf(usererr.Usage, "kronecker scale %d with edge factor %d is more than 2^58 edges; choose a smaller edge factor", k.Scale, k.EdgeFactor)
	}
	m := n * int64(k.EdgeFactor)
	// Refuse a graph whose columns cannot fit in this machine's memory
	// rather than let the allocation kill the process.
	need := m*16 + n*8
	if k.Weighted {
		need += m * 8
	}
	if total := physicalMemory(); total > 0 && need > total {
		return nil, usererr.Newf(usererr.Usage, "kronecker scale %d, edge factor %d: %d edges need %s for their columns alone, more than this machine's %s of memory; choose a smaller scale or edge factor",
			k.Scale, k.EdgeFactor, m, bytesize.Format(need), bytesize.Format(total))
	}
	perm, err := k.permutation(ctx, n)
	if err != nil {
		return nil, err
	}

	// One uint64 draw decides a level: its high half picks the row bit, its
	// low half the column bit, each against a threshold in 2^-32 units.
	ab := k.A + k.B
	rowBit := uint64(ab * (1 << 32))
	colIfTop := uint64(k.A / ab * (1 << 32))
	colIfBottom := uint64(k.C / (1 - ab) * (1 << 32))

	src := make([]int64, m)
	dst := make([]int64, m)
	var weight []float64
	if k.Weighted {
		weight = make([]float64, m)
	}
	chunks := int((m + kroneckerChunk - 1) / kroneckerChunk)
	par.For(chunks, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			if ctx.Err() != nil {
				return
			}
			rng := rand.New(rand.NewPCG(k.Seed, uint64(c)+1))
			// Weights come from a stream of their own, so that --weighted
			// adds weights to the same edges instead of drawing others.
			wrng := rand.New(rand.NewPCG(k.Seed^weightSeed, uint64(c)+1))
			first := int64(c) * kroneckerChunk
			last := min(first+kroneckerChunk, m)
			for e := first; e < last; e++ {
				var i, j int64
				for level := 0; level < k.Scale; level++ {
					r := rng.Uint64()
					row := (r >> 32) >= rowBit
					threshold := colIfTop
					if row {
						threshold = colIfBottom
					}
					col := (r & 0xffffffff) >= threshold
					if row {
						i |= 1 << level
					}
					if col {
						j |= 1 << level
					}
				}
				src[e], dst[e] = perm[i], perm[j]
				if weight != nil {
					weight[e] = float64(1 + wrng.IntN(255))
				}
			}
			if k.Progress != nil {
				k.Progress.Add(last - first)
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newTable(fmt.Sprintf("kronecker:%d:%d", k.Scale, k.EdgeFactor), src, dst, weight), nil
}

// permutePiece is how many vertices the permutation takes between looks at
// its context: the shuffle is sequential, seconds long at scale 27.
const permutePiece = 1 << 20

// permutation is a seeded random permutation of [0, n): a Fisher-Yates
// shuffle, which checks ctx every permutePiece vertices.
func (k Kronecker) permutation(ctx context.Context, n int64) ([]int64, error) {
	perm := make([]int64, n)
	for i := range perm {
		if i%permutePiece == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		perm[i] = int64(i)
	}
	rng := rand.New(rand.NewPCG(k.Seed, 0))
	for i := n - 1; i > 0; i-- {
		if i%permutePiece == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		j := rng.Int64N(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm, nil
}
