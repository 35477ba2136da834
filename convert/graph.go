// Package convert turns an edge table into a graph: it renumbers vertex keys
// to dense ids (and maps them back), cleans the edges (self loops dropped,
// parallel edges merged with their minimum weight, both directions stored for
// undirected graphs) and builds the layouts the operators read.
package convert

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
)

// NoVertex marks "no vertex" in an id slice: an unreachable vertex's parent.
const NoVertex = ^uint32(0)

// MaxVertices is the most vertices a graph can have: ids are uint32 and
// NoVertex is reserved.
const MaxVertices = int64(NoVertex)

// CSR is a compressed sparse row layout: the neighbours of vertex v are
// Targets[Offsets[v]:Offsets[v+1]], in ascending order, without duplicates
// and without v itself. Weights, when present, run parallel to Targets.
type CSR struct {
	Offsets []int64
	Targets []uint32
	Weights []float64
}

// NumVertices is the number of rows.
func (c *CSR) NumVertices() int { return max(len(c.Offsets)-1, 0) }

// NumEdges is the number of stored edges: the targets', or where the layout
// holds only its offsets (a graph built on a GPU, before Materialize), the
// last offset.
func (c *CSR) NumEdges() int64 {
	if n := len(c.Offsets); len(c.Targets) == 0 && n > 0 {
		return c.Offsets[n-1]
	}
	return int64(len(c.Targets))
}

// Degree is the number of edges in row v.
func (c *CSR) Degree(v uint32) int64 { return c.Offsets[v+1] - c.Offsets[v] }

// Neighbors is row v's targets, aliasing the layout.
func (c *CSR) Neighbors(v uint32) []uint32 { return c.Targets[c.Offsets[v]:c.Offsets[v+1]] }

// Bytes is the memory the layout holds.
func (c *CSR) Bytes() int64 {
	return int64(len(c.Offsets))*8 + int64(len(c.Targets))*4 + int64(len(c.Weights))*8
}

// Graph is a cleaned, renumbered graph with its layouts. Vertex ids are dense
// uint32 in [0, NumVertices), in ascending order of their keys, so the
// smallest key of a set of vertices is the key of its smallest id.
type Graph struct {
	// Out holds every vertex's out-edges. For an undirected graph every edge
	// is stored in both directions, so Out is also the in-edge layout.
	Out      CSR
	Directed bool
	Weighted bool
	Keys     *VertexKeys
	Stats    Stats

	alloc   memory.Allocator
	inOnce  sync.Once
	inBuilt atomic.Bool // in holds the in-edge layout
	in      CSR
	degOnce sync.Once
	deg     DegreeStats

	// The GPU strategies' layouts (layouts.go, shards.go): plain and
	// symmetric shards, the hubs-first numbering, the weights' statistics.
	shards      [2]onceValue[*Shards]
	hubOrder    onceValue[*HubOrder]
	grouped     [2][MaxGroupLog + 1]onceValue[*Grouped] // by both, then log2 of the ratio
	weightStats onceValue[WeightStats]
	weights32   onceValue[[]uint32]   // the CPU's sssp's (layouts.go)
	chains      [2]onceValue[*Chains] // by hops, by weight (chains.go)
	degreeTwo   onceValue[int64]

	// remote links a graph built off the host to its edge arrays there
	// (remote.go); nil for a graph built on the host.
	remote *remoteState
	// split is the partition a part's graph belongs to (partition.go); nil
	// for a whole graph.
	split *partitionSet
	// tune is the build's (tuning.go), for the in-edge layout In builds;
	// zero, the defaults, for a graph not built by Build.
	tune tuning
}

// Stats counts what building the graph did to the input.
type Stats struct {
	InputEdges int64 // edges that entered the build (rows read, less skipped rows)
	SelfLoops  int64 // edges dropped because they were self loops
	Merged     int64 // parallel edges merged into another (per stored direction)
	MaxDegree  int64 // largest out-degree
	// Skipped counts rows dropped by the weight rule under SkipInvalid.
	Skipped edges.Skips
}

// NumVertices is the number of vertices.
func (g *Graph) NumVertices() int { return g.Out.NumVertices() }

// NumEdges is the number of stored directed edges: twice the distinct
// undirected edges for an undirected graph.
func (g *Graph) NumEdges() int64 { return g.Out.NumEdges() }

// In is the in-edge layout (CSC): the sources of the edges into v, ascending.
// It is built on first use and cached; for an undirected graph it is Out.
// (For a graph built off the host, its edge arrays are there until
// Materialize, as Out's are.)
func (g *Graph) In() *CSR {
	if !g.Directed {
		return &g.Out
	}
	g.inOnce.Do(func() {
		if !g.hostEdges() {
			return
		}
		var err error
		g.in, err = transpose(context.Background(), &g.Out, g.alloc, g.tune)
		g.inBuilt.Store(err == nil)
	})
	return &g.in
}

// Bytes is the memory the graph's layouts and keys hold.
func (g *Graph) Bytes() int64 {
	b := g.Out.Bytes() + g.Keys.Bytes()
	if g.Directed {
		b += g.in.Bytes() // zero until In has been called
	}
	if w, ok := g.weights32.peek(); ok {
		b += 4 * int64(len(w))
	}
	for _, c := range g.BuiltChains() {
		b += c.Bytes()
	}
	return b
}

// BuildOptions control Build.
type BuildOptions struct {
	// Undirected stores every edge in both directions.
	Undirected bool
	// Weighted keeps the table's weights in the layouts; the table must have
	// a weight column. Unweighted graphs carry no Weights at all.
	Weighted bool
	// Weights says which weights are valid; rows with invalid weights fail
	// the build, or are dropped and counted when SkipInvalid is set.
	Weights WeightRule
	// SkipInvalid drops rows with invalid weights instead of failing.
	SkipInvalid bool
	// BuildIn builds the in-edge layout eagerly, as part of the build.
	BuildIn bool
	// Alloc allocates the layouts; nil means Go memory.
	Alloc memory.Allocator

	// tune is what tests set to reach, on small graphs, the paths only
	// large ones take (tuning.go); its zero value is what every build runs.
	tune tuning
}

// WeightRule is what an operator accepts as an edge weight.
type WeightRule int

const (
	// FiniteWeights accepts any finite weight (no NaN, no infinity).
	FiniteWeights WeightRule = iota
	// NonNegativeWeights accepts finite weights >= 0 (shortest paths).
	NonNegativeWeights
)
