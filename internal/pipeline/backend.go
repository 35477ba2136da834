package pipeline

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/multigpu"
	"github.com/gpipe/gpipe/operators/vprog"
)

// Backend is a backend choice ("auto", "cpu", "gpu") opened before the input
// is read. It opens the GPU in the background while the input is read
// (Start), says where the graph is built (Placer) and which backend runs the
// operator (For): under auto, the cheaper by the cost model
// (operators/cost), with both estimates in the reason.
type Backend struct {
	choice string
	opts   BackendOptions

	// start begins the GPU's set-up once; ready closes when it is done
	// (the opening and, where the job builds on the GPU, the build's
	// preparation); setup is the job's account of it.
	start sync.Once
	ready chan struct{}
	setup setupClock

	mu sync.Mutex
	// usable is how many GPUs a run may spread over (1: no spreading; 0:
	// not known yet); multi, opened on first use, spreads the operators
	// with a partitioned path over them.
	usable int
	multi  *multigpu.MultiGPU
}

// BackendOptions are a backend's settings beside its choice.
type BackendOptions struct {
	// GPUs is what --gpus asked for (0: every usable GPU where that is
	// faster or one is too small; 1: one).
	GPUs int
	// Model is the cost model auto decides by; nil: this machine's
	// (cost.Default, the GPU's own once it is open).
	Model *cost.Model
}

// OpenBackend opens a backend choice on one GPU. "gpu" fails here, before
// any input is read, when no GPU is usable.
func OpenBackend(choice string) (*Backend, error) { return OpenBackendGPUs(choice, 1) }

// OpenBackendGPUs opens a backend choice over gpus GPUs (0: every usable
// GPU). Asking for more GPUs than are usable fails.
func OpenBackendGPUs(choice string, gpus int) (*Backend, error) {
	return OpenBackendWith(choice, BackendOptions{GPUs: gpus})
}

// OpenBackendWith opens a backend choice with opts. "gpu" loads the driver
// here, so that a machine without a usable GPU fails before any input is
// read; the GPU's set-up begins with Start or a use.
func OpenBackendWith(choice string, opts BackendOptions) (*Backend, error) {
	if opts.GPUs < 0 {
		return nil, usererr.Newf(usererr.Usage, "--gpus %d must be at least 1 (or 0 for every usable GPU)", opts.GPUs)
	}
	b := &Backend{choice: choice, opts: opts, ready: make(chan struct{})}
	switch choice {
	case "", "auto":
		b.choice = "auto"
	case "cpu":
		return b, nil
	case "gpu":
		// The driver and the GPUs now; the context in the background, from
		// Start or the first use.
		if _, err := gpu.Available(); err != nil {
			return nil, err
		}
	default:
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("unknown backend %q", choice), "use auto, cpu or gpu")
	}
	if opts.GPUs > 1 {
		// Asked for: checked before the input is read.
		if _, err := b.usableGPUs(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// begin begins the GPU's set-up for the backend's job, once, in the
// background: the opening (StartGPU), then, with prepareBuild, the build's
// staging ring and kernels.
func (b *Backend) begin(prepareBuild bool) {
	b.start.Do(func() {
		now := time.Now()
		if done, elapsed := gpuOpening(); !done {
			StartGPU()
			b.setup.begin(now.Add(-max(elapsed, 0)))
		} else if prepareBuild {
			b.setup.begin(now)
		}
		go func() {
			defer close(b.ready)
			g, err := SharedGPU()
			if err == nil && prepareBuild {
				g.PrepareBuild()
			}
			b.setup.end(time.Now())
		}()
	})
}

// device is the GPU, once its set-up is done (waiting for it, and
// starting it if need be), or why there is none usable; nil for the cpu
// choice.
func (b *Backend) device() (*gpuop.GPU, error) { return b.waitGPU(true) }

// waitGPU is device, the wait counted as the job's (count: the job's own
// goroutine waits) or not (a goroutine beside it, the upload's).
func (b *Backend) waitGPU(count bool) (*gpuop.GPU, error) {
	if b.choice == "cpu" {
		return nil, nil
	}
	b.begin(false)
	if count {
		b.setup.wait(func() { <-b.ready })
	} else {
		<-b.ready
	}
	return shared.gpu, shared.err
}

// opened is the GPU if its set-up is done, without waiting; nil otherwise.
func (b *Backend) opened() *gpuop.GPU {
	if b.choice == "cpu" {
		return nil
	}
	select {
	case <-b.ready:
		return shared.gpu
	default:
		return nil
	}
}

// Setup is the GPU's set-up as the backend's job saw it.
func (b *Backend) Setup() Setup { return b.setup.report() }

// model is the cost model: the options', else the open GPU's, else this
// machine's cores with the first GPU class.
func (b *Backend) model() *cost.Model {
	if b.opts.Model != nil {
		return b.opts.Model
	}
	if g := b.opened(); g != nil {
		return g.Model()
	}
	return cost.Default(runtime.GOMAXPROCS(0), "", 0)
}

// SharedGPU is in gpuopen.go.

var pinned struct {
	once  sync.Once
	alloc memory.Allocator
}

// Alloc is the allocator the input and layouts should use: pinned host
// memory when a GPU may run the job, else nil (Go memory). It waits for
// the GPU's opening.
func (b *Backend) Alloc() memory.Allocator {
	g, _ := b.device()
	if g == nil {
		return nil
	}
	pinned.once.Do(func() {
		c, err := g.Device().Context()
		if err == nil {
			pinned.alloc = gpu.NewPinnedAllocator(c)
		}
	})
	return pinned.alloc
}

// BuildDevice is the GPU to build the graph on for op (LoadOptions.Device):
// the backend's GPU when a GPU may run op, else nil (the host builds). op
// nil stands for a graph any operator may run on. It waits for the GPU's
// opening; a job that should not (RunJob) places its build with Placer.
func (b *Backend) BuildDevice(op operators.Operator) *gpuop.GPU {
	if !hasGPU(op) {
		return nil
	}
	g, _ := b.device()
	return g
}

// hasGPU says op has GPU strategies (op nil: any operator, which may).
func hasGPU(op operators.Operator) bool {
	return op == nil || len(gpuop.Strategies(op.Spec().Name)) > 0
}

// Check fails at once when the backend cannot run op at all, before any
// input is read: the GPU chosen for an operator it has no kernels for.
func (b *Backend) Check(op operators.Operator) error {
	if _, ok := op.(*vprog.Operator); ok {
		return nil // a vertex program compiles for the GPU
	}
	if b.choice == "gpu" && len(gpuop.Strategies(op.Spec().Name)) == 0 {
		return usererr.New(usererr.Backend, fmt.Sprintf("operator %s has no GPU implementation yet", op.Spec().Name),
			"use --backend cpu (or auto) for it")
	}
	return nil
}

// For picks the backend that runs op on g, and says why when the choice
// was automatic: the cheaper of the CPU and the GPU by the cost model
// (auto.go), on several GPUs where the graph is spread.
func (b *Backend) For(g *convert.Graph, op operators.Operator, p operators.Params) (operators.Backend, string, error) {
	if vp, ok := op.(*vprog.Operator); ok {
		return b.programBackend(vp)
	}
	switch b.choice {
	case "cpu":
		return operators.CPU{}, "", nil
	case "gpu":
		dev, err := b.device()
		if err != nil {
			return nil, "", err
		}
		if runner, reason, ok, err := b.spreadRun(dev, g, op, p); ok || err != nil {
			return runner, reason, err
		}
		pl, err := plan(dev, g, op, p)
		return pl, "", err
	}
	return b.auto(g, op, p)
}

// spreadRun is the run over several GPUs, where op on g spreads (ok);
// else not ok.
func (b *Backend) spreadRun(dev *gpuop.GPU, g *convert.Graph, op operators.Operator, p operators.Params) (operators.Backend, string, bool, error) {
	usable, err := b.usableGPUs()
	if err != nil || usable < 2 {
		return nil, "", false, err
	}
	reason, ok := b.spread(dev, usable, g, op, p)
	if !ok {
		return nil, "", false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.multi == nil {
		m, err := SharedMultiGPU(b.opts.GPUs)
		if err != nil || m == nil {
			return nil, "", false, err
		}
		b.multi = m
	}
	// The parts are cut from the host's edges; the whole graph's copies
	// (a build on the first GPU leaves them there) would only take that
	// GPU's memory from its part. The edges come back to the host first:
	// a build on the GPU left them there.
	if err := g.Materialize(); err != nil {
		return nil, "", false, err
	}
	dev.Forget(g)
	return b.multi, reason, true, nil
}

// usableGPUs is how many GPUs the backend may spread a run over, found on
// first use (1 where --gpus 1).
func (b *Backend) usableGPUs() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.usable > 0 {
		return b.usable, nil
	}
	b.usable = 1
	if b.opts.GPUs != 1 {
		if _, err := b.device(); err != nil {
			return 1, nil // no GPU: nothing to spread over
		}
		usable, err := multiGPUDevices(b.opts.GPUs)
		if err != nil {
			b.usable = 0
			return 0, err
		}
		b.usable = len(usable)
	}
	return b.usable, nil
}

// plan is the GPU's plan for op on g, decided here once: the strategy the
// run takes, sized as it runs (gpuop.Plan). It is the runner: nothing below
// chooses again.
func plan(dev *gpuop.GPU, g *convert.Graph, op operators.Operator, p operators.Params) (*gpuop.Plan, error) {
	pl, err := dev.Plan(op, g, p)
	if err == nil {
		err = pl.Fits(g)
	}
	if err != nil {
		return nil, err
	}
	return pl, nil
}

// spreadEdges is, by operator, the size from which --gpus 0 spreads a graph
// over every usable GPU even where one GPU holds it: where the partitioned
// run measured faster (BENCHMARKS.md, issue 16: PageRank 1.98× on two GPUs
// at 2.1 billion stored edges, Kronecker 26; BFS 1.33× there, and slower
// at 134 million). The vertex programs' partitioned pulls measured slower
// than one GPU's best strategies, so they spread only graphs that do not
// fit one GPU.
var spreadEdges = map[string]int64{"pagerank": 1 << 28, "bfs": 2_000_000_000}

// spread says whether op on g runs partitioned over the k usable GPUs,
// and why.
func (b *Backend) spread(dev *gpuop.GPU, k int, g *convert.Graph, op operators.Operator, p operators.Params) (string, bool) {
	if !multigpu.Partitioned(op) {
		return "", false
	}
	if b.opts.GPUs > 1 {
		return fmt.Sprintf("--gpus %d: the graph is cut into %d parts by vertex range", b.opts.GPUs, k), true
	}
	if err := dev.Fits(op, g, p); err != nil {
		return fmt.Sprintf("the graph does not fit one GPU (%v): cut into %d parts, one a GPU", err, k), true
	}
	name := op.Spec().Name
	if edges, ok := spreadEdges[name]; ok && g.NumEdges() >= edges {
		return fmt.Sprintf("%d edges (%s spreads from %d): over the %d usable GPUs", g.NumEdges(), name, edges, k), true
	}
	return "", false
}

// GPUs is how many GPUs the backend may spread a run over (0 on the CPU).
func (b *Backend) GPUs() int {
	if g, _ := b.device(); g == nil {
		return 0
	}
	k, _ := b.usableGPUs()
	return max(k, 1)
}

// Release frees what the backend holds for g (its copies on the GPUs).
func (b *Backend) Release(g *convert.Graph) {
	b.mu.Lock()
	multi := b.multi
	b.mu.Unlock()
	if multi != nil {
		multi.Forget(g)
	}
	if dev := b.opened(); dev != nil {
		dev.Forget(g)
	}
}
