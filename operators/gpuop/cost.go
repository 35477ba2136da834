package gpuop

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
)

// defaultModel is the cost model of this machine: its cores and the GPU
// of c (nil: tests of the host side, the first GPU class's).
func defaultModel(c *gpu.Context) *cost.Model {
	if c == nil {
		return cost.Default(runtime.GOMAXPROCS(0), "", 0)
	}
	d := c.Device()
	return cost.Default(runtime.GOMAXPROCS(0), d.Name, d.PeakMemoryBandwidth())
}

// autoOrder is auto's order of t's strategies for op on g: the measured
// rules' (t.order), ranked by the cost model.
func (b *GPU) autoOrder(t *table, op string, g *convert.Graph, p operators.Params) []choice {
	rule := t.order(t, b, g, p)
	if g == nil || op == "bfs" && int64(g.NumVertices()) > b4kMaxVertices {
		return rule // bfs4k cannot take it
	}
	return costOrder(b.model, op, rule, b.Shape(g), Iterations(op, p))
}

// Model is the cost model auto's choices on this GPU read (operators/cost).
func (b *GPU) Model() *cost.Model { return b.model }

// Shape is what the cost model knows of g on this GPU: its degrees, and
// the levels an earlier search on it ran here.
func (b *GPU) Shape(g *convert.Graph) cost.Shape { return cost.ShapeOf(g.Degrees(), b.seenLevels(g)) }

// Iterations is the runs of op's step the cost model expects with p
// (PageRank's iterations; 1 for the others).
func Iterations(op string, p operators.Params) float64 {
	return cost.Iterations(op, p.Tolerance, p.Damping, p.MaxIterations)
}

// costOrder is auto's order of t's strategies for op on g: the cost
// model's estimates, cheapest first, each with its estimate and the
// measured rule's why (rule: t.order's choices, whose order stands for
// the strategies without a row in the model's table).
func costOrder(m *cost.Model, op string, rule []choice, s cost.Shape, iterations float64) []choice {
	names := make([]string, len(rule))
	whys := map[string]choice{}
	for i, c := range rule {
		names[i] = c.s.name
		whys[c.s.name] = c
	}
	ranked := m.Rank(op, names, s, iterations)
	out := make([]choice, len(ranked))
	for i, r := range ranked {
		c := whys[r.Strategy]
		if r.Known {
			c.why = fmt.Sprintf("cost model: %s %s%s: %s", r.Strategy, cost.Millis(r.Seconds), others(ranked, i), c.why)
		}
		out[i] = c
	}
	return out
}

// others lists the estimates of the ranked strategies but the i-th, for a
// reason: " (gshards 4.1 ms, cw 5.0 ms)".
func others(ranked []cost.Ranked, i int) string {
	var parts []string
	for j, r := range ranked {
		if j != i && r.Known {
			parts = append(parts, r.Strategy+" "+cost.Millis(r.Seconds))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Estimate is the cost model's time for the plan's run on g: its upload
// (the plan's memory less what is on the GPU already; 0 for a graph built
// or copied there), its run and its result's download. Setup is the
// caller's to fill in: the GPU is open here.
func (pl *Plan) Estimate(g *convert.Graph, p operators.Params) cost.GPUEstimate {
	return pl.EstimateBy(pl.gpu.model, g, p)
}

// EstimateBy is Estimate by the cost model m.
func (pl *Plan) EstimateBy(m *cost.Model, g *convert.Graph, p operators.Params) cost.GPUEstimate {
	b := pl.gpu
	e := cost.GPUEstimate{Strategy: pl.Strategy}
	if up := pl.Bytes - b.resident(g); b.resident(g) == 0 && up > 0 {
		e.Upload = m.Upload(up)
	}
	e.Compute, _ = m.GPU(pl.Op, pl.Strategy, b.Shape(g), Iterations(pl.Op, p))
	e.Download = m.Result(int64(g.NumVertices()), cost.ResultBytes(pl.Op))
	return e
}
