package operators

import (
	"runtime"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/ingest/edges"
)

// TestBFSGrids runs BFS on grids, thousands of levels of a few vertices
// each (the per-level path that keeps the workers' buffers across levels,
// and loops of one, two or all workers), with several worker counts, from
// the corner (vertex 0) and others, against the reference.
func TestBFSGrids(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	list := append(optest.GridShapes(11), optest.Shape{Name: "grid-300x300", Edges: optest.GridEdges(300, 300, 12)})
	for _, s := range list {
		g := optest.BuildGraph(t, s, false, false, edges.KeyInt64)
		for _, procs := range []int{1, 3, 2*runtime.NumCPU() + 1} {
			runtime.GOMAXPROCS(procs)
			for _, src := range append(optest.SourcesOf(g), 0) {
				r := run(t, BFS{}, g, src, Params{})
				ref := optest.RefBFS(g, src)
				if err := optest.ValidateBFS(g, src, r.Column("depth").Int32, r.Column("parent").Vertex, ref); err != nil {
					t.Fatalf("%s, GOMAXPROCS %d: bfs from %d: %v", s.Name, procs, src, err)
				}
				maxDepth := int32(0)
				for _, d := range ref {
					maxDepth = max(maxDepth, d)
				}
				if r.Iterations != int(maxDepth)+1 {
					t.Fatalf("%s, GOMAXPROCS %d: bfs from %d: %d levels, want %d", s.Name, procs, src, r.Iterations, maxDepth+1)
				}
			}
		}
	}
}
