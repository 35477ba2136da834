package pipeline

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators/cost"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// --backend auto, decided by the cost model at three points of a job:
//
//  1. Start, before the input is read: whether to begin opening the GPU at
//     all, from an upper bound of the input's rows (its size): a table too
//     small for the GPU to pay off even were its set-up free of the read
//     never opens it, so a small job costs what --backend cpu does.
//  2. Placer, once the rows are known (a Parquet footer, or the read
//     table): whether the graph is built on the GPU, the set-up not yet
//     done counted against the GPU.
//  3. For, once the graph is built: whether the operator runs on the CPU
//     or the GPU, each side's estimate whole (the set-up left, the graph's
//     copy where it is not on the GPU, the run, the result's download; on
//     the CPU the edges' copy back where the GPU built the graph).

// Start begins the GPU's set-up for a job of op whose input has at most
// rows rows (rows < 0: unknown), when a GPU may run it: at once under
// gpu, and under auto unless the cost model says the CPU is cheaper for
// so small a table even with a GPU set up already.
func (b *Backend) Start(op operators.Operator, rows int64, undirected bool) {
	switch {
	case b.choice == "gpu":
		b.begin(true)
	case b.choice != "auto" || !hasGPU(op):
	case rows < 0 || b.gpuMayPay(op, rows, undirected):
		b.begin(true)
	}
}

// gpuMayPay says whether a job of op over a table of rows rows might run
// faster on the GPU, its set-up aside: the whole job on each side for a
// graph of average degree 8 (a small-world graph, the GPU's better case).
func (b *Backend) gpuMayPay(op operators.Operator, rows int64, undirected bool) bool {
	m := b.model()
	edges := rows
	if undirected {
		edges *= 2
	}
	s := cost.Shape{Vertices: max(edges/8, 1), Edges: edges, AvgDegree: 8, MaxDegree: 1 << 20}
	cpu := m.HostBuild(rows, undirected)
	gpu := m.DeviceBuild(rows, 16, undirected)
	if op != nil {
		name := op.Spec().Name
		run, _ := m.CPU(name, s, 1)
		cpu += run
		gpu += m.Result(s.Vertices, cost.ResultBytes(name))
		ranked := m.Rank(name, gpuop.Strategies(name), s, 1)
		if len(ranked) > 0 && ranked[0].Known {
			gpu += ranked[0].Seconds
		}
	}
	return gpu < cpu
}

// RowsAtMost is an upper bound of the rows of the input at path in format
// (empty: from the extension), from its size: a text row takes at least 4
// bytes ("1 2\n"), an Arrow IPC row at least 8 (two int32 keys); -1 where
// it cannot say (standard input, Parquet, whose pages may compress a row
// to a bit: its reader tells the rows before it decodes any, Placer).
func RowsAtMost(path, format string) int64 {
	if path == "-" {
		return -1
	}
	if format == "" {
		format, _ = ingest.FormatOf(path)
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	switch format {
	case ingest.FormatText, ingest.FormatCSV, ingest.FormatTSV, ingest.FormatMTX:
		return st.Size() / 4
	case ingest.FormatArrowFile, ingest.FormatArrowStream:
		return st.Size() / 8
	}
	return -1
}

// setupLeft is what the cost model expects of the GPU's set-up still to
// come, 0 once the backend's is done.
func (b *Backend) setupLeft(m *cost.Model) float64 {
	if b.opened() != nil {
		return 0
	}
	_, elapsed := gpuOpening()
	if elapsed < 0 {
		return m.SetupLeft(-1)
	}
	return m.SetupLeft(elapsed.Seconds())
}

// Placer places a job's build (LoadOptions.Place): on the GPU under gpu,
// by the cost model under auto (op nil: a graph for any operator, placed by
// the builds' costs alone); nil for the cpu choice and operators without
// GPU strategies.
func (b *Backend) Placer(op operators.Operator, undirected bool) *Placement {
	if b.choice == "cpu" || !hasGPU(op) {
		return nil
	}
	return &Placement{b: b, undirected: undirected}
}

// Placement is where a graph is built (LoadOptions.Place).
type Placement struct {
	b          *Backend
	undirected bool
	// decided is set once the rows are known, under mu (the upload's
	// goroutine and the build may ask at once): gpu (nil: the host) and
	// why the host builds.
	mu      sync.Mutex
	decided bool
	gpu     *gpuop.GPU
	why     string
}

// StreamTo is the GPU a table of rows rows is copied to while it is read
// (gpuop.NewColumnUploadTo), nil where the host builds it. It decides the
// build's place, and waits for the GPU where that is the GPU.
func (pl *Placement) StreamTo(rows int64) *gpuop.GPU {
	pl.decide(rows)
	return pl.gpu
}

// BuildOn is the GPU to build t's graph on, or nil and why the host builds
// it: decided by StreamTo where the reader told the rows, else now.
func (pl *Placement) BuildOn(t *edges.Table) (*gpuop.GPU, string) {
	pl.decide(t.NumEdges())
	return pl.gpu, pl.why
}

// decide places the build of rows rows, once: the GPU under gpu; under
// auto the GPU where its build, with the set-up left, costs less than the
// host's. A GPU that cannot be used places it on the host, saying why.
func (pl *Placement) decide(rows int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.decided {
		return
	}
	pl.decided = true
	b := pl.b
	if b.choice == "auto" {
		m := b.model()
		host := m.HostBuild(rows, pl.undirected)
		left := b.setupLeft(m)
		dev := m.DeviceBuild(rows, 16, pl.undirected) + left
		if host <= dev {
			pl.why = fmt.Sprintf("%s%s): the host's build %s against the GPU's %s (its set-up left %s)",
				costPrefix, m.Name(), cost.Millis(host), cost.Millis(dev), cost.Millis(left))
			return
		}
		b.begin(true)
	}
	g, err := b.device()
	if err != nil {
		pl.why = "no usable GPU: " + err.Error()
		return
	}
	pl.gpu = g
}

// auto is For under auto: the CPU or the GPU by the cost model. It waits
// for the GPU only where the GPU may be the cheaper, its set-up left
// counted.
func (b *Backend) auto(g *convert.Graph, op operators.Operator, p operators.Params) (operators.Backend, string, error) {
	name := op.Spec().Name
	if !hasGPU(op) {
		return operators.CPU{}, fmt.Sprintf("operator %s has no GPU implementation", name), nil
	}
	m := b.model()
	cpu, gpuEst := estimates(m, g, name, p, b.setupLeft(m))
	if gpuEst.Total() >= cpu.Total() && gpuEst.Setup > 0 {
		// The GPU loses even with its best strategy: no wait for it.
		return operators.CPU{}, choiceReason(m, "cpu", cpu, gpuEst), nil
	}
	dev, err := b.device()
	if dev == nil {
		return operators.CPU{}, "no usable GPU: " + err.Error(), nil
	}
	if runner, reason, ok, err := b.spreadRun(dev, g, op, p); ok || err != nil {
		return runner, reason, err
	}
	pl, err := plan(dev, g, op, p)
	if err != nil {
		return operators.CPU{}, err.Error(), nil
	}
	m = b.model()
	cpu, _ = estimates(m, g, name, p, 0)
	planned := pl.Estimate(g, p)
	planned.Setup = gpuEst.Setup
	if cpu.Total() < planned.Total() {
		return operators.CPU{}, choiceReason(m, "cpu", cpu, planned), nil
	}
	return pl, choiceReason(m, "gpu", cpu, planned), nil
}

// estimates are the cost model's for op on g: the CPU's, and the GPU's
// with the strategy it ranks first and setup seconds of set-up left.
func estimates(m *cost.Model, g *convert.Graph, op string, p operators.Params, setup float64) (cost.CPUEstimate, cost.GPUEstimate) {
	s := cost.ShapeOf(g.Degrees(), 0)
	it := gpuop.Iterations(op, p)
	var cpu cost.CPUEstimate
	cpu.Compute, _ = m.CPU(op, s, it)
	if !g.OnHost() {
		cpu.Fetch = m.Download(g.Bytes() + 4*g.NumEdges())
	}
	gpu := cost.GPUEstimate{Setup: setup}
	if g.OnHost() {
		gpu.Upload = m.Upload(g.Bytes())
	}
	if ranked := m.Rank(op, gpuop.Strategies(op), s, it); len(ranked) > 0 {
		gpu.Strategy, gpu.Compute = ranked[0].Strategy, ranked[0].Seconds
	}
	gpu.Download = m.Result(s.Vertices, cost.ResultBytes(op))
	return cpu, gpu
}

// costPrefix starts every backend_reason the cost model gave.
const costPrefix = "cost model ("

// choiceReason is backend_reason: the side chosen and both estimates.
func choiceReason(m *cost.Model, chosen string, cpu cost.CPUEstimate, gpu cost.GPUEstimate) string {
	return fmt.Sprintf("%s%s): %s is cheaper: cpu %s against gpu %s", costPrefix, m.Name(), chosen, cpu, gpu)
}

// ByCostModel says a backend_reason is the cost model's, weighing a usable
// GPU against the CPU (not "no usable GPU" and the like).
func ByCostModel(reason string) bool { return strings.HasPrefix(reason, costPrefix) }

// CheaperOnCPU says whether the cost model prefers the CPU for a run of op
// on g where the GPU dev is open and g's copies there stay (gpipe serve's
// queries under auto: no set-up, and no upload for a graph on the GPU
// already), and why.
func CheaperOnCPU(dev *gpuop.GPU, g *convert.Graph, op operators.Operator, p operators.Params) (bool, string) {
	if err := op.Prepare(&p); err != nil {
		return false, ""
	}
	pl, err := dev.Plan(op, g, p)
	if err != nil {
		return false, "" // the GPU's own refusal decides
	}
	m := dev.Model()
	cpu, _ := estimates(m, g, op.Spec().Name, p, 0)
	gpu := pl.Estimate(g, p)
	if cpu.Total() < gpu.Total() {
		return true, choiceReason(m, "cpu", cpu, gpu)
	}
	return false, choiceReason(m, "gpu", cpu, gpu)
}
