package gpipe

import (
	"github.com/gpipe/gpipe/operators"
)

// The operators, by the names Graph.Run and Job.Op take.
const (
	// BFS is breadth-first search from Params.Source: columns depth
	// (int32) and parent (a key), null where the source does not reach.
	BFS = "bfs"
	// SSSP is single-source shortest paths from Params.Source over
	// weights >= 0 (1 without a weight column): columns distance
	// (float64) and parent.
	SSSP = "sssp"
	// SSWP is single-source widest paths from Params.Source: column width
	// (float64), the largest bottleneck weight of a path; +Inf at the
	// source.
	SSWP = "sswp"
	// PageRank is networkx.pagerank's PageRank: column rank (float64),
	// summing to 1; unweighted (networkx.pagerank(G, weight=None)) unless
	// Params.Weighted.
	PageRank = "pagerank"
	// CC is weakly connected components: column component, the smallest
	// key of the vertex's component.
	CC = "cc"
)

// Operators lists the operators' names.
func Operators() []string { return operators.Names() }

// Params are the parameters of one operator run. The zero value of a field
// means the operator's default; a field set for an operator that does not
// take it is an error (KindUsage), so that nothing given is silently
// ignored.
type Params struct {
	// Source is the start vertex's key, written as in the input ("42",
	// "alice"): bfs, sssp and sswp need it; pagerank and cc take none.
	Source string

	// Tolerance stops pagerank when the L1 change of an iteration is below
	// it (default 1e-9).
	Tolerance float64
	// MaxIterations caps pagerank's iterations (default 1000; the result
	// carries a warning when it stopped there before converging).
	MaxIterations int
	// Damping is pagerank's damping factor (default 0.85).
	Damping float64
	// Weighted makes pagerank weigh each out-edge by its weight over the
	// vertex's total out-weight, as networkx.pagerank(G) does by default
	// (weight="weight"); weights must be >= 0, and a vertex whose
	// out-edges all weigh 0 is dangling. Without it (the default) every
	// out-edge of a vertex counts the same: networkx.pagerank(G,
	// weight=None).
	Weighted bool

	// Delta is the bucket width of Δ-stepping (sssp, sswp); 0 chooses one
	// from the weights.
	Delta float64

	// Strategy names the GPU strategy (every operator; README, "The
	// GPU"): "" or "auto" lets gpipe choose. The options below tune the
	// strategies that read them; given with another strategy they are an
	// error.
	Strategy string
	// VWarp is the virtual warp size K (1, 2, 4, 8, 16 or 32) of the
	// virtual warp-centric strategies (vwc; afforest for cc).
	VWarp int
	// DeferOutliers defers vertices with more edges than this to whole
	// thread blocks (vwc; default 1024, -1 turns it off).
	DeferOutliers int64
	// Dynamic makes vwc's warps take chunks of vertices from a global
	// counter instead of a fixed order.
	Dynamic bool
	// ChunkSize is the vertices a vwc warp takes at a time (default 8·K).
	ChunkSize int
	// VertexGroup is kites' Vertex Grouping ratio (1 to 32, a power of
	// two; 0 chooses one that fits the GPU's memory).
	VertexGroup int
}

// engine is p as the operators take it, with the names of the parameters
// set (non-zero), which the operator must take.
func (p Params) engine() (operators.Params, []string) {
	q := operators.Params{
		Source: p.Source, Tolerance: p.Tolerance, MaxIterations: p.MaxIterations, Damping: p.Damping,
		Weighted: p.Weighted, Delta: p.Delta, Strategy: p.Strategy, VWarp: p.VWarp, DeferOutliers: p.DeferOutliers,
		Dynamic: p.Dynamic, ChunkSize: p.ChunkSize, VertexGroup: p.VertexGroup,
	}
	named := map[string]bool{
		operators.ParamSource: p.Source != "", operators.ParamTolerance: p.Tolerance != 0,
		operators.ParamMaxIterations: p.MaxIterations != 0, operators.ParamDamping: p.Damping != 0,
		operators.ParamWeighted: p.Weighted, operators.ParamDelta: p.Delta != 0,
		"strategy": p.Strategy != "" && p.Strategy != "auto", "vwarp": p.VWarp != 0,
		"defer_outliers": p.DeferOutliers != 0, "dynamic": p.Dynamic,
		"chunk_size": p.ChunkSize != 0, "vertex_group": p.VertexGroup != 0,
	}
	var set []string
	for _, name := range operators.ParamNames() {
		if named[name] {
			set = append(set, name)
		}
	}
	return q, set
}
