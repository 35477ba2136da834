package operators

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
)

// bfsStrategyConfigs are the BFS strategies of the seeds, and auto.
var bfsStrategyConfigs = []Params{{Strategy: "enterprise"}, {Strategy: "bfs4k"}, {Strategy: "auto"}}

// strategyCount is the number before label in a strategy's description
// ("enterprise (3 top-down, 4 bottom-up levels)"), or 0.
func strategyCount(strategy, label string) int {
	m := regexp.MustCompile(`(\d+) ` + regexp.QuoteMeta(label)).FindStringSubmatch(strategy)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// bfsPaths counts how often each path of the strategies ran, so that the
// test can tell that it reached all of them.
type bfsPaths map[string]int

func (p bfsPaths) note(strategy string) {
	for _, label := range []string{"top-down", "bottom-up", "single-block", "edge-discover", "virtual-warp", "frontiers rebuilt"} {
		p[label] += strategyCount(strategy, label)
	}
}

// checkBFSStrategies runs every strategy from each source and compares
// with the CPU under the Graph 500 rules, reporting every failure.
func checkBFSStrategies(t *testing.T, b *GPU, name string, g *convert.Graph, srcs []uint32, configs []Params, paths bfsPaths) {
	t.Helper()
	for _, src := range srcs {
		want := run(t, BFS{}, g, src, Params{}).Column("depth").Int32
		for _, p := range configs {
			r, err := b.Run(context.Background(), BFS{}, Input{Graph: g, Source: src, Params: p})
			if err != nil {
				t.Errorf("%s/src=%d/%s: %v", name, src, p.Strategy, err)
				continue
			}
			paths.note(r.Strategy)
			if r.Backend != "gpu" || r.Compute <= 0 || r.StrategyReason == "" {
				t.Errorf("%s/src=%d/%s: backend %q, compute %v, reason %q", name, src, p.Strategy, r.Backend, r.Compute, r.StrategyReason)
			}
			if err := validateBFS(g, src, r.Column("depth").Int32, r.Column("parent").Vertex, want); err != nil {
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
	seed := freshSeed(t)
	list := append(gpuShapes(t), gridShapes(seed)...)
	// Large enough for a frontier above half the H100's resident threads,
	// where bfs4k switches from edge-discover to virtual warps.
	list = append(list, shape{name: "fresh-kronecker-19", edges: kroneckerEdges(t, 19, 16, seed+7)})
	for _, s := range list {
		for _, directed := range []bool{true, false} {
			g := buildGraph(t, s, directed, false, edges.KeyInt64)
			checkBFSStrategies(t, b, fmt.Sprintf("%s/directed=%v", s.name, directed), g, sourcesOf(g), bfsStrategyConfigs, paths)
		}
	}
	for _, rg := range realGraphs(t) {
		checkBFSStrategies(t, b, rg.name, rg.g, sourcesOf(rg.g), bfsStrategyConfigs, paths)
	}
	// A frontier queue too small for its level: the kernels count past its
	// end, and the host rebuilds it from the status array.
	b4kTestCapacity = 64
	for _, s := range []shape{{name: "kronecker-12", edges: kroneckerEdges(t, 12, 16, seed+8)}, gridShapes(seed)[0]} {
		g := buildGraph(t, s, false, false, edges.KeyInt64)
		checkBFSStrategies(t, b, s.name+"/small-queue", g, sourcesOf(g), []Params{{Strategy: "bfs4k"}}, paths)
	}
	b4kTestCapacity = 0
	t.Logf("paths taken: %v", paths)
	for _, label := range []string{"top-down", "bottom-up", "single-block", "edge-discover", "virtual-warp", "frontiers rebuilt"} {
		if paths[label] == 0 {
			t.Errorf("no search ran a %s level: the test graphs do not reach that path", label)
		}
	}
}
