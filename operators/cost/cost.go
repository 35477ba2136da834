// Package cost is gpipe's cost model: what a job will take on the CPU and
// on the GPU, estimated from the graph's size and degree statistics, the
// operator and the GPU strategy, with constants measured per machine class
// (table.go). --backend auto runs the cheaper (internal/pipeline), the GPU
// backend's auto takes the cheapest strategy (operators/gpuop), and gpipe
// serve asks it per query, its GPU already open.
//
// Every estimate is in seconds. The CPU's figures scale with the cores
// (the class's rates over the cores at hand), the GPU's with its memory
// bandwidth (graph kernels are bound by it): a machine of another class is
// estimated from the nearest one measured, not guessed anew.
package cost

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpipe/gpipe/convert"
)

// CPU is the strategy name of the CPU engine's rows.
const CPU = "cpu"

// Shape is what the model knows of a graph.
type Shape struct {
	Vertices, Edges int64 // stored directed edges
	AvgDegree       float64
	MaxDegree       int64
	// SeenLevels is the most levels an earlier search on the graph ran (0:
	// none yet): a measured depth, which the estimate from the degrees
	// gives way to.
	SeenLevels int
}

// ShapeOf is the shape of a graph of degree statistics d.
func ShapeOf(d convert.DegreeStats, seenLevels int) Shape {
	return Shape{Vertices: int64(d.Vertices), Edges: d.Edges, AvgDegree: d.Average, MaxDegree: d.Max, SeenLevels: seenLevels}
}

// Road-like degrees: an average under 8 and no vertex of more than 64
// edges, the shape of road networks, meshes and grids.
const (
	roadAverage = 8
	roadMax     = 64
)

// HighDiameter says the degrees are road-like: low on average and at most.
// Such a graph is planar or nearly so, and a traversal from one source
// takes about its diameter's levels, some √n, where a small-world graph of
// the same size takes a dozen.
func (s Shape) HighDiameter() bool { return s.AvgDegree < roadAverage && s.MaxDegree <= roadMax }

// Levels is the estimated depth of a traversal from one source: the depth
// an earlier search saw, else 2√n for a road-like graph (a k × k grid's
// diameter is 2k: 4,094 for 2048²; luxembourg_osm's 1,337 against 2√n =
// 677) and 2 + log n / log(average degree) for a small-world one.
func (s Shape) Levels() float64 {
	if s.SeenLevels > 0 {
		return float64(s.SeenLevels)
	}
	n := float64(max(s.Vertices, 1))
	if s.HighDiameter() {
		return 2 * math.Sqrt(n)
	}
	return 2 + math.Log(n)/math.Log(max(s.AvgDegree, 2))
}

// Row is the cost of one way to run one operator on a machine class: Fixed
// + PerEdge·edges + PerVertex·vertices + PerLevel·levels seconds (edges
// stored, levels Shape.Levels), each of PageRank's terms once an iteration.
// Strategy is a GPU strategy's name (operators/gpuop's registry), or CPU.
type Row struct {
	Op, Strategy                        string
	Fixed, PerEdge, PerVertex, PerLevel float64
}

// seconds is r's estimate for shape s and iterations (PageRank's; 1 for
// the others).
func (r Row) seconds(s Shape, iterations float64) float64 {
	t := r.Fixed + r.PerEdge*float64(s.Edges) + r.PerVertex*float64(s.Vertices)
	if r.PerLevel != 0 {
		t += r.PerLevel * s.Levels()
	}
	return t * iterations
}

// Iterations is PageRank's expected iteration count: the L1 change falls
// by about the damping factor an iteration, from about 2 at the start,
// until it is under tolerance, at most maxIterations (measured within a
// factor of 1.5 on Kronecker 22, 49 iterations at 1e-9, and the real
// graphs). Other operators run once.
func Iterations(op string, tolerance, damping float64, maxIterations int) float64 {
	if op != "pagerank" || !(tolerance > 0) || !(damping > 0 && damping < 1) {
		return 1
	}
	k := 0.4 * math.Log(tolerance/2) / math.Log(damping)
	if maxIterations > 0 {
		k = min(k, float64(maxIterations))
	}
	return max(k, 1)
}

// Millis formats seconds as milliseconds for reasons: "12.3 ms".
func Millis(s float64) string {
	switch {
	case s >= 0.0995:
		return fmt.Sprintf("%.0f ms", s*1e3)
	case s >= 0.00995:
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f ms", s*1e3)
}

// GPUEstimate is a job's time on the GPU, by part.
type GPUEstimate struct {
	Strategy string
	// Setup is the GPU's set-up not yet done (the driver, the context):
	// 0 once it is open, as in gpipe serve.
	Setup float64
	// Upload is the copy of the graph to the GPU (0 where it is there:
	// built there, or copied by an earlier run), Compute the strategy's
	// run and Download the result's copy back and its columns.
	Upload, Compute, Download float64
}

// Total is the estimate's sum.
func (e GPUEstimate) Total() float64 { return e.Setup + e.Upload + e.Compute + e.Download }

// String is the estimate by part, for reasons.
func (e GPUEstimate) String() string {
	var parts []string
	if e.Setup > 0 {
		parts = append(parts, "set-up "+Millis(e.Setup))
	}
	if e.Upload > 0 {
		parts = append(parts, "upload "+Millis(e.Upload))
	}
	parts = append(parts, e.Strategy+" "+Millis(e.Compute), "download "+Millis(e.Download))
	return fmt.Sprintf("%s (%s)", Millis(e.Total()), strings.Join(parts, ", "))
}

// CPUEstimate is a job's time on the CPU: the edges' copy back from the
// GPU where the graph was built there, and the run.
type CPUEstimate struct {
	Fetch, Compute float64
}

// Total is the estimate's sum.
func (e CPUEstimate) Total() float64 { return e.Fetch + e.Compute }

// String is the estimate by part, for reasons.
func (e CPUEstimate) String() string {
	if e.Fetch > 0 {
		return fmt.Sprintf("%s (edges from the GPU %s, run %s)", Millis(e.Total()), Millis(e.Fetch), Millis(e.Compute))
	}
	return Millis(e.Total())
}

// ResultBytes is the bytes a vertex of op's result takes on its way from
// the GPU: a depth and a parent key (bfs), a distance and a parent
// (sssp), a width, a rank or a component key.
func ResultBytes(op string) int {
	switch op {
	case "bfs":
		return 12
	case "sssp":
		return 16
	}
	return 8
}
