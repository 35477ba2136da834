package gpuop

import (
	"strings"
	"testing"

	"github.com/gpipe/gpipe/operators/cost"
)

// auto's strategy for a first search without history comes from the cost
// model: persist for a grid (road-like degrees), enterprise for a
// small-world graph, whatever the rules' order; each reason gives the
// estimates.
func TestCostOrderFirstSearch(t *testing.T) {
	m := cost.Default(16, "NVIDIA H200", 0)
	grid := cost.Shape{Vertices: 1 << 22, Edges: 1 << 24, AvgDegree: 4, MaxDegree: 4}
	kron := cost.Shape{Vertices: 1 << 22, Edges: 1 << 27, AvgDegree: 32, MaxDegree: 1 << 17}
	rule := orderOf(bfsTable, strategyVWC, "the rules' first")
	for _, c := range []struct {
		s     cost.Shape
		first string
	}{{grid, "persist"}, {kron, "enterprise"}} {
		got := costOrder(m, "bfs", rule, c.s, 1)
		if len(got) != len(bfsTable.strategies) || got[0].s.name != c.first {
			t.Errorf("%+v: order %v, want %s first", c.s, choiceNames(got), c.first)
		}
		if !strings.HasPrefix(got[0].why, "cost model: "+c.first) || !strings.Contains(got[0].why, "vwc") {
			t.Errorf("reason %q", got[0].why)
		}
	}
}

// A strategy the cost table has no row for (one added to the registry
// before its cost) keeps its place in the rules' order after the known
// ones, and its why.
func TestCostOrderUnknownStrategy(t *testing.T) {
	m := cost.Default(16, "NVIDIA H200", 0)
	t2 := &table{strategies: append([]*strategy{{name: "newcomer"}}, bfsTable.strategies...)}
	rule := orderOf(t2, "newcomer", "a new strategy")
	got := costOrder(m, "bfs", rule, cost.Shape{Vertices: 100, Edges: 400, AvgDegree: 4, MaxDegree: 4}, 1)
	if n := len(got); got[n-1].s.name != "newcomer" || got[n-1].why != "a new strategy" {
		t.Errorf("order %v, last why %q", choiceNames(got), got[n-1].why)
	}
}

func choiceNames(cs []choice) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.s.name
	}
	return out
}
