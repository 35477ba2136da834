package cost

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Class is a machine class's measured constants: the CPU's (Cores cores)
// and, where it has one, the GPU's. Rows holds the operators' runs, a row
// per operator and strategy (CPU for the CPU engine).
type Class struct {
	// Name names the class ("H200 + 16 cores"); Measured says with which
	// command, on which machine and when its figures were measured.
	Name, Measured string
	// Cores is how many cores the CPU rows were measured on.
	Cores int
	// GPU is what the GPU's name contains ("H200"), "" for a class
	// without one; GPUBandwidth its peak memory bandwidth (bytes/s,
	// gpu.Attributes.PeakMemoryBandwidth), which scales its rows to
	// another GPU's.
	GPU          string
	GPUBandwidth float64
	// Setup is the GPU's set-up (the driver, the context, the build's
	// pinned ring and kernels), seconds, which a job hides behind its
	// read; Teardown what a process that set up a GPU takes longer to
	// end (the driver's release of the context), which none hides. H2D
	// and D2H are the copy rates from and to ordinary host memory,
	// bytes/s; ReadPerRow the least a reader takes a row (what a read
	// hides of the set-up).
	Setup, Teardown, H2D, D2H, ReadPerRow float64
	// HostBuildPerEdge is convert.Build's time a stored edge (an
	// undirected row is two), after HostBuildFixed, WeightedBuild times
	// that with weights; DeviceBuildPerEdge the GPU build's, its upload
	// aside, after DeviceBuildFixed.
	HostBuildFixed, HostBuildPerEdge, WeightedBuild float64
	DeviceBuildFixed, DeviceBuildPerEdge            float64
	// ResultPerVertex is the host's time a vertex to take a GPU result
	// (its columns, beside the copy).
	ResultPerVertex float64
	Rows            []Row
}

// row is the class's row for op and strategy.
func (c *Class) row(op, strategy string) (Row, bool) {
	i := slices.IndexFunc(c.Rows, func(r Row) bool { return r.Op == op && r.Strategy == strategy })
	if i < 0 {
		return Row{}, false
	}
	return c.Rows[i], true
}

// hasCPU says the class has CPU rows; hasGPU GPU rows.
func (c *Class) hasCPU() bool {
	return slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Strategy == CPU })
}
func (c *Class) hasGPU() bool {
	return slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Strategy != CPU })
}

// Model is the cost model for one machine: the CPU's constants from the
// class measured on the nearest number of cores, scaled by cores, and the
// GPU's from the class of its name, else of the first class with a GPU,
// scaled by memory bandwidth.
type Model struct {
	cpu, gpu           *Class
	cpuScale, gpuScale float64
	cores              int
}

// New is the model of a machine with cores cores and a GPU called gpuName
// of peak memory bandwidth gpuBandwidth (bytes/s; 0: unknown, taken as the
// class's), from classes. It panics on a table without a class of CPU
// rows and one of GPU rows: a table is the program's, not the user's.
func New(classes []Class, cores int, gpuName string, gpuBandwidth float64) *Model {
	m := &Model{cores: max(cores, 1), cpuScale: 1, gpuScale: 1}
	for i := range classes {
		c := &classes[i]
		if c.hasCPU() && (m.cpu == nil || coreDistance(c.Cores, m.cores) < coreDistance(m.cpu.Cores, m.cores)) {
			m.cpu = c
		}
		if c.hasGPU() && (m.gpu == nil || c.GPU != "" && strings.Contains(gpuName, c.GPU) && !strings.Contains(gpuName, m.gpu.GPU)) {
			m.gpu = c
		}
	}
	if m.cpu == nil || m.gpu == nil {
		panic("cost: a table needs a class with CPU rows and one with GPU rows")
	}
	m.cpuScale = float64(m.cpu.Cores) / float64(m.cores)
	if gpuBandwidth > 0 && m.gpu.GPUBandwidth > 0 {
		m.gpuScale = m.gpu.GPUBandwidth / gpuBandwidth
	}
	return m
}

// coreDistance is how far apart two core counts are, as a ratio.
func coreDistance(a, b int) float64 {
	return math.Abs(math.Log(float64(max(a, 1)) / float64(max(b, 1))))
}

// Name says which classes the estimates come from, for reasons.
func (m *Model) Name() string {
	cpu := m.cpu.Name
	if m.cpu.Cores != m.cores {
		cpu = fmt.Sprintf("%s scaled to %d cores", m.cpu.Name, m.cores)
	}
	if m.gpu == m.cpu {
		return cpu
	}
	return fmt.Sprintf("CPU: %s; GPU: %s", cpu, m.gpu.Name)
}

// CPU is the CPU engine's estimated run of op on s, and whether the table
// has a row for it.
func (m *Model) CPU(op string, s Shape, iterations float64) (float64, bool) {
	r, ok := m.cpu.row(op, CPU)
	return r.seconds(s, iterations) * m.cpuScale, ok
}

// GPU is the GPU strategy's estimated run of op on s (the graph on the
// device; its result still there), and whether the table has a row for it.
func (m *Model) GPU(op, strategy string, s Shape, iterations float64) (float64, bool) {
	r, ok := m.gpu.row(op, strategy)
	return r.seconds(s, iterations) * m.gpuScale, ok
}

// Setup is the GPU's whole set-up.
func (m *Model) Setup() float64 { return m.gpu.Setup }

// Fixed is what setting up a GPU adds to a job that had not begun to:
// the set-up and the process's longer end.
func (m *Model) Fixed() float64 { return m.gpu.Setup + m.gpu.Teardown }

// Read is the least time a reader takes over rows rows.
func (m *Model) Read(rows int64) float64 { return float64(rows) * m.gpu.ReadPerRow }

// SetupLeft is what remains of the set-up elapsed seconds after it began
// (elapsed < 0: not begun).
func (m *Model) SetupLeft(elapsed float64) float64 {
	if elapsed < 0 {
		return m.gpu.Setup
	}
	return max(m.gpu.Setup-elapsed, 0)
}

// Upload is the copy of bytes from ordinary host memory to the GPU;
// Download from the GPU.
func (m *Model) Upload(bytes int64) float64   { return float64(bytes) / m.gpu.H2D }
func (m *Model) Download(bytes int64) float64 { return float64(bytes) / m.gpu.D2H }

// Result is taking a GPU result of vertices rows of bytesPerVertex bytes
// to the host.
func (m *Model) Result(vertices int64, bytesPerVertex int) float64 {
	return m.Download(vertices*int64(bytesPerVertex)) + float64(vertices)*m.gpu.ResultPerVertex*m.cpuScale
}

// HostBuild is convert.Build of rows input rows (each two stored edges
// where undirected), with weights or not.
func (m *Model) HostBuild(rows int64, undirected, weighted bool) float64 {
	t := m.cpu.HostBuildFixed + float64(rows)*rowFactor(undirected)*m.cpu.HostBuildPerEdge
	if weighted {
		t *= m.cpu.WeightedBuild
	}
	return t * m.cpuScale
}

// DeviceBuild is the GPU build of rows rows of rowBytes bytes each (the
// key and weight columns), their upload included.
func (m *Model) DeviceBuild(rows, rowBytes int64, undirected bool) float64 {
	return m.gpu.DeviceBuildFixed + m.Upload(rows*rowBytes) + float64(rows)*rowFactor(undirected)*m.gpu.DeviceBuildPerEdge*m.gpuScale
}

// rowFactor is what a row weighs in a build: an undirected row is two
// stored edges.
func rowFactor(undirected bool) float64 {
	if undirected {
		return 2
	}
	return 1
}

// Ranked is a GPU strategy with its estimated run; Known says the table
// has a row for it.
type Ranked struct {
	Strategy string
	Seconds  float64
	Known    bool
}

// Rank orders the GPU strategies of op by estimated run on s, cheapest
// first; those without a row (a strategy added to the registry before its
// cost) follow in the order given.
func (m *Model) Rank(op string, strategies []string, s Shape, iterations float64) []Ranked {
	out := make([]Ranked, len(strategies))
	for i, name := range strategies {
		sec, ok := m.GPU(op, name, s, iterations)
		out[i] = Ranked{Strategy: name, Seconds: sec, Known: ok}
	}
	slices.SortStableFunc(out, func(a, b Ranked) int {
		switch {
		case a.Known != b.Known:
			if a.Known {
				return -1
			}
			return 1
		case !a.Known:
			return 0
		}
		return cmpFloat(a.Seconds, b.Seconds)
	})
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Skewed is the model of New(Classes(), ...) for this machine with every
// CPU estimate (runs and builds) multiplied by cpu and every GPU one (set-up,
// copies, builds, runs) by gpu: what tests pass to make auto choose one
// side (a skew of 1e6 against 1e-6), and experiments to ask how far the
// constants may be off before a choice turns.
func Skewed(cores int, gpuName string, bandwidth, cpu, gpu float64) *Model {
	m := New(Classes(), cores, gpuName, bandwidth)
	c, g := *m.cpu, *m.gpu
	c.Rows, g.Rows = skewRows(c.Rows, cpu, 1), skewRows(g.Rows, 1, gpu)
	c.HostBuildFixed *= cpu
	c.HostBuildPerEdge *= cpu
	g.Setup *= gpu
	g.Teardown *= gpu
	g.H2D /= gpu
	g.D2H /= gpu
	g.DeviceBuildPerEdge *= gpu
	g.DeviceBuildFixed *= gpu
	g.ResultPerVertex *= gpu
	m.cpu, m.gpu = &c, &g
	return m
}

// skewRows are rows with the CPU's multiplied by cpu, the GPU's by gpu.
func skewRows(rows []Row, cpu, gpu float64) []Row {
	out := slices.Clone(rows)
	for i := range out {
		f := gpu
		if out[i].Strategy == CPU {
			f = cpu
		}
		out[i].Fixed *= f
		out[i].PerEdge *= f
		out[i].PerVertex *= f
		out[i].PerLevel *= f
	}
	return out
}
