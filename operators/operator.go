// Package operators holds one operator per graph algorithm: its parameters and
// their validation, its result schema and its CPU implementation (on all
// cores). Its GPU strategies live in operators/gpuop (one GPU) and
// operators/multigpu (several), which implement this package's Backend.
// Operators never read files or print; they take a built graph and return
// per-vertex columns.
package operators

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Params are every operator's parameters. The JSON names are the ones a
// Flight ticket uses; the command line's flags carry the same names with
// dashes. Zero values mean "the operator's default".
type Params struct {
	// Source is the start vertex's key as text (bfs, sssp, sswp).
	Source string `json:"source,omitempty"`
	// Tolerance stops PageRank when the L1 change of an iteration is below it.
	Tolerance float64 `json:"tolerance,omitempty"`
	// MaxIterations caps PageRank's iterations.
	MaxIterations int `json:"max_iterations,omitempty"`
	// Damping is PageRank's damping factor.
	Damping float64 `json:"damping,omitempty"`
	// Weighted makes PageRank weight each out-edge by its weight over the
	// vertex's total out-weight, as networkx.pagerank(G) does by default
	// (weight="weight"); without it every out-edge of a vertex counts the
	// same (networkx.pagerank(G, weight=None)).
	Weighted bool `json:"weighted,omitempty"`
	// Delta is the bucket width of Δ-stepping (sssp, sswp); 0 picks one from
	// the weights.
	Delta float64 `json:"delta,omitempty"`

	// Strategy names the GPU strategy; "" or "auto" lets the operator choose.
	Strategy string `json:"strategy,omitempty"`
	// VWarp is the virtual warp size K (1, 2, 4, 8, 16 or 32) of the
	// virtual warp-centric strategies; 0 picks it from the average degree.
	VWarp int `json:"vwarp,omitempty"`
	// DeferOutliers defers vertices with more edges than this to a second
	// pass processed by whole blocks (virtual warp-centric §3.2); 0 picks
	// the default degree (1024), -1 turns deferring off.
	DeferOutliers int64 `json:"defer_outliers,omitempty"`
	// Dynamic makes warps take chunks of vertices from a global counter
	// instead of a static partition (virtual warp-centric §3.2).
	Dynamic bool `json:"dynamic,omitempty"`
	// ChunkSize is the vertices a warp takes at a time under Dynamic.
	ChunkSize int `json:"chunk_size,omitempty"`
	// VertexGroup is the kites strategy's grouping ratio (Vertex Grouping,
	// a power of two up to 32); 0 lets it choose.
	VertexGroup int `json:"vertex_group,omitempty"`
}

// ColumnType is the type of a result column.
type ColumnType int

const (
	Int32Column   ColumnType = iota + 1 // int32; negative values are null
	Float64Column                       // float64; NaN is null
	VertexColumn                        // vertex ids, written as keys; convert.NoVertex is null
	Int64Column                         // int64; null where Valid's bit is clear (none without Valid)
)

// ColumnSpec describes one output column.
type ColumnSpec struct {
	Name string
	Type ColumnType
	Doc  string
}

// Spec describes an operator.
type Spec struct {
	Name    string
	Summary string
	// NeedsSource says the operator starts from Params.Source.
	NeedsSource bool
	// Weighted says the operator reads edge weights (1 where the input has
	// no weight column), and Weights which weights it accepts.
	Weighted bool
	Weights  convert.WeightRule
	// WeightedParam says the operator uses weights only when
	// Params.Weighted asks for them (pagerank): SpecFor then says Weighted.
	WeightedParam bool
	// NeedsIn says the operator reads the in-edge layout (for a directed
	// graph, the build should make it eagerly).
	NeedsIn bool
	// Params names the parameters the operator takes (Params' JSON names;
	// those of the GPU strategies come on top where it has a GPU kernel).
	Params []string
	// GPU says the operator has GPU strategies (package gpuop), which take
	// the GPU parameters (GPUParams).
	GPU     bool
	Columns []ColumnSpec
}

// Input is what an operator runs on.
type Input struct {
	Graph *convert.Graph
	// Source is the dense id of Params.Source, resolved by the caller.
	Source uint32
	Params Params
	// tune overrides the CPU engine's thresholds (tuning.go); nil in
	// every run but the tests'.
	tune *tuning
}

// Result is an operator's output: one value per vertex in each column, in
// vertex id order.
type Result struct {
	Op       string
	Backend  string // "cpu" or "gpu"
	Strategy string // the algorithm or GPU strategy that ran
	// StrategyReason says why the GPU strategy was chosen: auto's rule from
	// the graph's statistics, or "asked for"; empty on the CPU.
	StrategyReason string
	// Iterations is PageRank's iteration count, BFS's number of levels.
	Iterations int
	// NotConverged says PageRank stopped at its iteration limit before the
	// change fell below the tolerance.
	NotConverged bool
	// Compute is the time the computation took, as the backend measured it
	// (wall clock on the CPU; CUDA events on the GPU).
	Compute time.Duration
	// Transfer is the time spent copying the graph to the device for this
	// run (zero on the CPU, and for a graph already on the GPU).
	Transfer time.Duration
	// EdgesExamined counts the edges the pull strategies (warpseg, kites)
	// read over the run, and EdgesWalked those kites walked to activate
	// vertices; zero where a strategy does not count them.
	EdgesExamined, EdgesWalked int64
	// GPUs is the number of GPUs a partitioned run used (0: one GPU, or
	// the CPU).
	GPUs    int
	Columns []Column
	// Warnings are things the user should know about a result that is
	// still returned, such as PageRank stopping before it converged.
	Warnings []string
	// release gives the columns' memory back to the backend that made them
	// (OnRelease).
	release []func()
}

// OnRelease registers f to run when the result is released: a backend
// gives back there the memory its columns took (reused Go memory, pinned
// memory lent by a pool).
func (r *Result) OnRelease(f func()) { r.release = append(r.release, f) }

// Release gives the memory of the result's columns back to the backend
// that made them, for later runs. Only for a caller that holds nothing of
// the columns any more (no slice of them, no Arrow array over them): the
// memory may be overwritten by the next run. The columns are emptied. A
// result never released is collected as usual, but for memory a backend
// lent (gpuop's pinned results), which stays lent.
func (r *Result) Release() {
	for _, f := range r.release {
		f()
	}
	r.release = nil
	r.Columns = nil
}

// Column is one result column; the field that matches its type is set.
type Column struct {
	Name    string
	Type    ColumnType
	Int32   []int32
	Float64 []float64
	Vertex  []uint32
	Int64   []int64
	// Keys and Valid are the column as Arrow lays it out, where a GPU run
	// made them beside the values (gpuop/columns.go), or knows them (a GPU
	// PageRank whose ranks are all numbers); nil otherwise, and the host
	// makes them from the values. Keys is a vertex column mapped to the
	// graph's integer keys, the key type's width a row. Valid is the
	// validity bitmap (bit i%8 of byte i/8 for row i), in whole 32-bit
	// words, the bits past the last row zero.
	Keys  []byte
	Valid []byte
}

// Len is the column's rows.
func (c *Column) Len() int {
	switch c.Type {
	case Int32Column:
		return len(c.Int32)
	case Float64Column:
		return len(c.Float64)
	case Int64Column:
		return len(c.Int64)
	}
	return len(c.Vertex)
}

// Column returns the column called name, or nil.
func (r *Result) Column(name string) *Column {
	for i := range r.Columns {
		if r.Columns[i].Name == name {
			return &r.Columns[i]
		}
	}
	return nil
}

// Operator is one graph algorithm.
type Operator interface {
	Spec() Spec
	// Prepare fills the defaults of the operator's parameters into p and
	// checks them, returning a Usage error for a bad one.
	Prepare(p *Params) error
	// RunCPU runs the operator on all CPU cores.
	RunCPU(ctx context.Context, in Input) (*Result, error)
}

// SpecFor is op's Spec for a run with parameters p: where Params.Weighted
// makes the operator use weights (pagerank), Weighted and Weights say so,
// so that whatever reads the graph for the run reads the weight column and
// checks it by the operator's rule (weights >= 0: a vertex's out-edges
// share its rank in proportion to them).
func SpecFor(op Operator, p Params) Spec {
	s := op.Spec()
	if s.WeightedParam && p.Weighted {
		s.Weighted, s.Weights = true, convert.NonNegativeWeights
	}
	return s
}

// Lookup is the operator called name.
func Lookup(name string) (Operator, error) {
	for _, op := range All() {
		if op.Spec().Name == name {
			return op, nil
		}
	}
	return nil, usererr.New(usererr.Usage, "unknown operator "+echo.Quote(name),
		"use one of "+strings.Join(Names(), ", "))
}

// Names lists the operators' names.
func Names() []string {
	var names []string
	for _, op := range All() {
		names = append(names, op.Spec().Name)
	}
	return names
}

// All lists the operators in the order help texts show them.
func All() []Operator { return slices.Clone(registry) }
