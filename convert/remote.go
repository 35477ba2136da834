package convert

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
)

// Graphs built off the host.
//
// A graph built on a GPU (gpuop.GPU.BuildGraph) keeps its edge arrays
// where they were built: the host holds the vertex keys, the offsets of the
// layouts and the statistics, and the targets and weights stay on the device
// until something on the host reads them. Materialize copies them down. The
// accessors that build host layouts from the edges (In for a directed graph
// without an in-edge layout, Shards, HubOrder, Weights) call it themselves;
// the CPU backend calls it before it runs an operator, and the GPU backend
// before an operator that reads edges on the host.
//
// Until then Out.Targets and Out.Weights (and In's) are empty: NumEdges and
// Degree work from the offsets, and nothing else may read them.

// Remote holds the edge arrays of a graph built elsewhere.
type Remote interface {
	// Fetch copies the out-edge layout's targets and weights into out's,
	// and, when in is not nil, the in-edge layout's into in's. The slices
	// have their final lengths; the weights are nil for an unweighted graph.
	Fetch(out, in *CSR) error
}

// RemoteParts is what a graph built elsewhere brings to the host.
type RemoteParts struct {
	Keys *VertexKeys
	// OutOffsets are the out-edge layout's offsets, n+1 of them.
	OutOffsets []int64
	// InOffsets are the in-edge layout's offsets, for a directed graph
	// whose in-edge layout was built too; nil otherwise.
	InOffsets          []int64
	Directed, Weighted bool
	Stats              Stats
	Degrees            DegreeStats
	// Alloc is where the offsets came from, and where Materialize puts the
	// edge arrays; nil means Go memory.
	Alloc  memory.Allocator
	Remote Remote
}

// remoteState is a graph's link to the edge arrays it was built with
// elsewhere (nil in a graph built on the host).
type remoteState struct {
	from    Remote
	once    sync.Once
	err     error
	fetched atomic.Bool
}

// NewRemote is the graph of layouts built elsewhere, its edge arrays still
// there (see Remote).
func NewRemote(p RemoteParts) *Graph {
	g := &Graph{
		Out:      CSR{Offsets: p.OutOffsets},
		Directed: p.Directed,
		Weighted: p.Weighted,
		Keys:     p.Keys,
		Stats:    p.Stats,
		alloc:    p.Alloc,
		remote:   &remoteState{from: p.Remote},
	}
	if g.Stats.Skipped == nil {
		g.Stats.Skipped = map[string]int64{}
	}
	if p.Directed && p.InOffsets != nil {
		g.inOnce.Do(func() { g.in = CSR{Offsets: p.InOffsets} })
		g.inBuilt.Store(true)
	}
	deg := p.Degrees
	deg.Log2 = append([]int64(nil), deg.Log2...)
	g.degOnce.Do(func() { g.deg = deg })
	return g
}

// OnHost says whether the graph's edge arrays are in host memory: always
// for a graph built on the host, after Materialize for one built elsewhere.
func (g *Graph) OnHost() bool { return g.remote == nil || g.remote.fetched.Load() }

// Materialize copies the edge arrays of a graph built elsewhere into host
// memory (the allocator the graph was built with). It does nothing for a
// graph built on the host, or the second time; it is safe for concurrent
// use, and every call returns the first call's error.
func (g *Graph) Materialize() error {
	r := g.remote
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		r.err = g.fetch()
		r.fetched.Store(r.err == nil)
	})
	return r.err
}

// fetch fills the edge arrays from the remote copies.
func (g *Graph) fetch() error {
	out := CSR{Offsets: g.Out.Offsets}
	out.Targets, out.Weights = g.edgeArrays(g.Out.NumEdges())
	var in *CSR
	if g.Directed && g.inBuilt.Load() {
		in = &CSR{Offsets: g.in.Offsets}
		in.Targets, in.Weights = g.edgeArrays(g.in.NumEdges())
	}
	err := g.remote.from.Fetch(&out, in)
	if err != nil {
		freeEdges(g.alloc, &out)
		if in != nil {
			freeEdges(g.alloc, in)
		}
		return fmt.Errorf("copying the graph's edges to the host: %w", err)
	}
	// Only the edge arrays change: readers of the offsets need no lock.
	g.Out.Targets, g.Out.Weights = out.Targets, out.Weights
	if in != nil {
		g.in.Targets, g.in.Weights = in.Targets, in.Weights
	}
	return nil
}

// edgeArrays are room for m targets and, for a weighted graph, m weights.
func (g *Graph) edgeArrays(m int64) ([]uint32, []float64) {
	t := layoutSlice[uint32](g.alloc, int(m))
	if !g.Weighted {
		return t, nil
	}
	return t, layoutSlice[float64](g.alloc, int(m))
}

// freeEdges gives back a layout's targets and weights, keeping its offsets.
func freeEdges(a memory.Allocator, c *CSR) {
	offsets := c.Offsets
	c.Offsets = nil
	c.free(a)
	c.Offsets = offsets
}

// hostEdges makes sure the edge arrays are on the host, for the accessors
// that build from them; an error leaves them empty, and the layouts built
// from them empty too (Materialize returns it).
func (g *Graph) hostEdges() bool { return g.Materialize() == nil }

// DirectLimit is the widest range of integer keys (largest ordinal less
// smallest) that the build renumbers through a presence bitmap rather than a
// hash table or a sort, for a table of the given number of endpoints (twice
// its rows), so that a build elsewhere takes the same path.
func DirectLimit(endpoints int64) uint64 { return directLimit(int(endpoints)) }

// KeyArrowType is the type of the output's vertex column for t's keys: the
// input key column's type, dictionary encoding removed.
func KeyArrowType(t *edges.Table) arrow.DataType { return keyArrowType(t) }
