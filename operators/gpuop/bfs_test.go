package gpuop

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
)

// bfsStrategyConfigs are the BFS strategies of the seeds, the persistent
// one, and auto.
var bfsStrategyConfigs = []operators.Params{{Strategy: "enterprise"}, {Strategy: "bfs4k"}, {Strategy: "persist"}, {Strategy: "auto"}}

// bfsPathLabels are the paths a strategy's description counts.
var bfsPathLabels = []string{"top-down", "bottom-up", "single-block", "edge-discover", "virtual-warp", "frontiers rebuilt", "multi-block steps"}

// bfsPaths counts how often each path of the strategies ran, so that the
// test can tell that it reached all of them.
type bfsPaths map[string]int

func (p bfsPaths) note(strategy string) {
	for _, label := range bfsPathLabels {
		p[label] += optest.StrategyCount(strategy, label)
	}
}

// checkBFSStrategies runs every strategy from each source and compares
// with the CPU under the Graph 500 rules, reporting every failure.
func checkBFSStrategies(t *testing.T, b *GPU, name string, g *convert.Graph, srcs []uint32, configs []operators.Params, paths bfsPaths) {
	t.Helper()
	for _, src := range srcs {
		want := run(t, operators.BFS{}, g, src, operators.Params{}).Column("depth").Int32
		for _, p := range configs {
			r, err := b.Run(context.Background(), operators.BFS{}, operators.Input{Graph: g, Source: src, Params: p})
			if err != nil {
				t.Errorf("%s/src=%d/%s: %v", name, src, p.Strategy, err)
				continue
			}
			paths.note(r.Strategy)
			if r.Backend != "gpu" || r.Compute <= 0 || r.StrategyReason == "" {
				t.Errorf("%s/src=%d/%s: backend %q, compute %v, reason %q", name, src, p.Strategy, r.Backend, r.Compute, r.StrategyReason)
			}
			if err := optest.ValidateBFS(g, src, r.Column("depth").Int32, r.Column("parent").Vertex, want); err != nil {
				t.Errorf("%s/src=%d/%s: %v", name, src, r.Strategy, err)
			}
			if err := checkArrowColumns(g, r); err != nil {
				t.Errorf("%s/src=%d/%s: %v", name, src, r.Strategy, err)
			}
			maxDepth := int32(-1)
			for _, d := range want {
				maxDepth = max(maxDepth, d)
			}
			if r.Iterations != int(maxDepth)+1 {
				t.Errorf("%s/src=%d/%s: %d levels, the deepest vertex is at %d", name, src, r.Strategy, r.Iterations, maxDepth)
			}
		}
	}
	b.Forget(g)
}

func TestGPUBFSStrategiesMatchCPU(t *testing.T) {
	b := testGPU(t)
	paths := bfsPaths{}
	seed := optest.FreshSeed(t)
	list := append(optest.GPUShapes(t), optest.GridShapes(seed)...)
	list = append(list, optest.RoadShapes(t, seed)...)
	// Large enough for a frontier above half the H100's resident threads,
	// where bfs4k switches from edge-discover to virtual warps.
	list = append(list, optest.Shape{Name: "fresh-kronecker-19", Edges: optest.KroneckerEdges(t, 19, 16, seed+7)})
	for _, s := range list {
		for _, directed := range []bool{true, false} {
			g := optest.BuildGraph(t, s, directed, false, edges.KeyInt64)
			checkBFSStrategies(t, b, fmt.Sprintf("%s/directed=%v", s.Name, directed), g, optest.SourcesOf(g), bfsStrategyConfigs, paths)
		}
	}
	for _, rg := range optest.RealGraphs(t) {
		checkBFSStrategies(t, b, rg.Name, rg.G, optest.SourcesOf(rg.G), bfsStrategyConfigs, paths)
	}
	// A frontier queue too small for its level: the kernels count past its
	// end, and the host rebuilds it from the status array.
	b.tune.b4kCapacity = 64
	for _, s := range []optest.Shape{{Name: "kronecker-12", Edges: optest.KroneckerEdges(t, 12, 16, seed+8)}, optest.GridShapes(seed)[0]} {
		g := optest.BuildGraph(t, s, false, false, edges.KeyInt64)
		checkBFSStrategies(t, b, s.Name+"/small-queue", g, optest.SourcesOf(g), []operators.Params{{Strategy: "bfs4k"}}, paths)
	}
	b.tune.b4kCapacity = 0
	t.Logf("paths taken: %v", paths)
	for _, label := range bfsPathLabels {
		if paths[label] == 0 {
			t.Errorf("no search ran a %s level: the test graphs do not reach that path", label)
		}
	}
}
