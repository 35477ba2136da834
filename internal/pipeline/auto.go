package pipeline

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
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
// rows rows (InputRows): at once under gpu; under auto where the cost
// model finds the whole job cheaper on the GPU, its set-up counted less
// what the read hides, or where the rows cannot be told (standard input).
// A Parquet input's reader tells its rows before it decodes any, and the
// placement decides then (Placement.StreamTo).
func (b *Backend) Start(op operators.Operator, rows int64, later, undirected bool) {
	switch {
	case b.choice == "gpu":
		b.begin(true)
	case b.choice != "auto" || !hasGPU(op) || later:
	case rows < 0:
		b.begin(true)
	default:
		m := b.model()
		if cpu, gpu := b.jobEstimates(m, op, rows, undirected, m.Read(rows)); gpu < cpu {
			b.begin(true)
		}
	}
}

// jobEstimates are the cost model's estimates of a job of op over a
// table of rows rows before its graph is built, on the host and on the
// GPU: the builds, and the run (the GPU's best strategy) on a graph of
// average degree 8; on the GPU, the set-up not yet sunk, less readLeft
// seconds of reading still to come that hide it. op nil: the builds alone.
func (b *Backend) jobEstimates(m *cost.Model, op operators.Operator, rows int64, undirected bool, readLeft float64) (cpu, gpu float64) {
	edges := rows
	if undirected {
		edges *= 2
	}
	weighted := op != nil && op.Spec().Weighted
	cpu = m.HostBuild(rows, undirected, weighted)
	gpu = max(b.fixedLeft(m)-readLeft, 0) + m.DeviceBuild(rows, 24, undirected)
	if op == nil {
		return cpu, gpu
	}
	name := op.Spec().Name
	s := cost.Shape{Vertices: max(edges/8, 1), Edges: edges, AvgDegree: 8, MaxDegree: 1 << 20}
	run, _ := m.CPU(name, s, 1)
	cpu += run
	gpu += m.Result(s.Vertices, cost.ResultBytes(name))
	if ranked := m.Rank(name, gpuop.Strategies(name), s, 1); len(ranked) > 0 && ranked[0].Known {
		gpu += ranked[0].Seconds
	}
	return cpu, gpu
}

// fixedLeft is what the GPU's set-up still adds to the job: all of it and
// the process's longer end where it has not begun; once begun, what is
// left of it (a job that chose the CPU then would still wait for it as it
// ends).
func (b *Backend) fixedLeft(m *cost.Model) float64 {
	if b.opened() != nil {
		return 0
	}
	_, elapsed := gpuOpening()
	if elapsed < 0 {
		return m.Fixed()
	}
	return m.SetupLeft(elapsed.Seconds())
}

// InputRows is an upper bound of the rows of the input at path in format
// (empty: from the extension), from its size: a text row takes at least 4
// bytes ("1 2\n"), an Arrow IPC row at least 8 (two int32 keys); -1 where
// it cannot say (standard input, a directory), with later where the reader
// tells the rows before it decodes any (Parquet, whose pages may compress
// a row to a bit).
func InputRows(path, format string) (rows int64, later bool) {
	if path == "-" {
		return -1, false
	}
	if format == "" {
		format, _ = ingest.FormatOf(path)
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return -1, false
	}
	switch format {
	case ingest.FormatText, ingest.FormatCSV, ingest.FormatTSV, ingest.FormatMTX:
		return st.Size() / 4, false
	case ingest.FormatArrowFile, ingest.FormatArrowStream:
		return st.Size() / 8, false
	case ingest.FormatParquet:
		return -1, true
	}
	return -1, false
}

// Placer places a job's build (LoadOptions.Place): on the GPU under gpu,
// by the cost model under auto (op nil: a graph for any operator, placed by
// the builds' costs alone); nil for the cpu choice and operators without
// GPU strategies.
func (b *Backend) Placer(op operators.Operator, undirected bool) *Placement {
	if b.choice == "cpu" || !hasGPU(op) {
		return nil
	}
	return &Placement{b: b, op: op, undirected: undirected}
}

// Placement is where a graph is built (LoadOptions.Place).
type Placement struct {
	b          *Backend
	op         operators.Operator
	undirected bool
	// Decided once the rows are known, under mu (the upload's goroutine
	// and the build may ask at once): onGPU, or why the host builds.
	mu      sync.Mutex
	decided bool
	onGPU   bool
	why     string
}

// StreamTo is the GPU a table of rows rows is copied to while it is read
// (gpuop.NewColumnUploadTo), nil where the host builds it. It decides the
// build's place, the read still to come hiding the set-up, and waits for
// the GPU where that is the GPU: on the upload's goroutine, which the job
// does not wait for.
func (pl *Placement) StreamTo(rows int64) *gpuop.GPU {
	if !pl.place(rows, pl.b.model().Read(rows)) {
		return nil
	}
	g, _ := pl.b.waitGPU(false)
	return g
}

// BuildOn is the GPU to build t's graph on, or nil and why the host builds
// it: decided by StreamTo where the reader told the rows, else now.
func (pl *Placement) BuildOn(t *edges.Table) (*gpuop.GPU, string) {
	if !pl.place(t.NumEdges(), 0) {
		return nil, pl.why
	}
	g, err := pl.b.waitGPU(true)
	if err != nil {
		return nil, "no usable GPU: " + err.Error()
	}
	return g, ""
}

// place decides, once, whether a table of rows rows is built on the GPU:
// under gpu always; under auto where the cost model finds the job cheaper
// there (jobEstimates), beginning the GPU's set-up then.
func (pl *Placement) place(rows int64, readLeft float64) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.decided {
		return pl.onGPU
	}
	pl.decided = true
	b := pl.b
	if b.choice == "auto" {
		m := b.model()
		cpu, gpu := b.jobEstimates(m, pl.op, rows, pl.undirected, readLeft)
		if cpu <= gpu {
			pl.why = fmt.Sprintf("%s%s): %d rows built and run on the host %s against the GPU's %s (its set-up %s of it)",
				costPrefix, m.Name(), rows, cost.Millis(cpu), cost.Millis(gpu), cost.Millis(b.fixedLeft(m)))
			return false
		}
	}
	b.begin(true)
	pl.onGPU = true
	return true
}

// auto is For under auto: the CPU or the GPU by the cost model. It waits
// for the GPU only where the GPU may be the cheaper, its set-up left
// counted.
func (b *Backend) auto(g *convert.Graph, op operators.Operator, p operators.Params) (operators.Backend, string, error) {
	name := op.Spec().Name
	if !hasGPU(op) {
		return operators.CPU{}, fmt.Sprintf("operator %s has no GPU implementation", name), nil
	}
	if done, _ := gpuOpening(); done && shared.err != nil {
		return operators.CPU{}, "no usable GPU: " + shared.err.Error(), nil
	}
	m := b.model()
	cpu, gpuEst := estimates(m, g, name, p, b.fixedLeft(m))
	if gpuEst.Total() >= cpu.Total() && gpuEst.Setup > 0 {
		// The GPU loses even with its best strategy: no wait for it.
		why := choiceReason(m, "cpu", cpu, gpuEst)
		if _, elapsed := gpuOpening(); elapsed < 0 {
			why += "; the GPU was not opened"
		}
		return operators.CPU{}, why, nil
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
	planned := pl.EstimateBy(m, g, p)
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

// CheaperOnCPU says whether the cost model m (nil: dev's) prefers the CPU
// for a run of op on g where the GPU dev is open and g's copies there stay
// (gpipe serve's queries under auto: no set-up, and no upload for a graph
// on the GPU already), and why.
func CheaperOnCPU(dev *gpuop.GPU, m *cost.Model, g *convert.Graph, op operators.Operator, p operators.Params) (bool, string) {
	if err := op.Prepare(&p); err != nil {
		return false, ""
	}
	pl, err := dev.Plan(op, g, p)
	if err != nil {
		return false, "" // the GPU's own refusal decides
	}
	if m == nil {
		m = dev.Model()
	}
	cpu, _ := estimates(m, g, op.Spec().Name, p, 0)
	gpu := pl.EstimateBy(m, g, p)
	if cpu.Total() < gpu.Total() {
		return true, choiceReason(m, "cpu", cpu, gpu)
	}
	return false, choiceReason(m, "gpu", cpu, gpu)
}
