package pipeline

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/multigpu"
	"github.com/gpipe/gpipe/operators/vprog"
)

// Backend is a backend choice ("auto", "cpu", "gpu") opened before the input
// is read: it says which memory the input should go into (pinned host
// memory when a GPU may run the job, so the copy to the device needs no
// staging), and once the graph is built, which backend runs the operator.
type Backend struct {
	choice string
	gpu    *gpuop.GPU // nil when no GPU is usable (or cpu was chosen)
	noGPU  error      // why gpu is nil, for auto's report
	// gpus is what --gpus asked for (0: every usable GPU where that is
	// faster or one is too small), usable how many GPUs there are to
	// spread over (1: no spreading); multi, opened on first use, spreads
	// the operators with a partitioned path over them.
	gpus, usable int
	multi        *multigpu.MultiGPU
}

// OpenBackend opens a backend choice on one GPU. "gpu" fails here, before
// any input is read, when no GPU is usable.
func OpenBackend(choice string) (*Backend, error) { return OpenBackendGPUs(choice, 1) }

// OpenBackendGPUs opens a backend choice over gpus GPUs (0: every usable
// GPU). Asking for more GPUs than are usable fails.
func OpenBackendGPUs(choice string, gpus int) (*Backend, error) {
	if gpus < 0 {
		return nil, usererr.Newf(usererr.Usage, "--gpus %d must be at least 1 (or 0 for every usable GPU)", gpus)
	}
	var b *Backend
	switch choice {
	case "", "auto":
		b = &Backend{choice: "auto"}
		b.gpu, b.noGPU = SharedGPU()
	case "cpu":
		return &Backend{choice: "cpu"}, nil
	case "gpu":
		g, err := SharedGPU()
		if err != nil {
			return nil, err
		}
		b = &Backend{choice: "gpu", gpu: g}
	default:
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("unknown backend %q", choice), "use auto, cpu or gpu")
	}
	b.gpus, b.usable = gpus, 1
	if b.gpu != nil && gpus != 1 {
		usable, err := multiGPUDevices(gpus)
		if err != nil {
			return nil, err
		}
		b.usable = len(usable)
	}
	return b, nil
}

var shared struct {
	once sync.Once
	gpu  *gpuop.GPU
	err  error
}

// SharedGPU is the process's GPU backend, on the first GPU gpipe's kernels
// run on, opened once; or the reason no GPU is usable.
func SharedGPU() (*gpuop.GPU, error) {
	shared.once.Do(func() {
		c, err := gpu.Default()
		if err != nil {
			shared.err = err
			return
		}
		shared.gpu = gpuop.NewGPU(c)
	})
	return shared.gpu, shared.err
}

var pinned struct {
	once  sync.Once
	alloc memory.Allocator
}

// Alloc is the allocator the input and layouts should use: pinned host
// memory when a GPU may run the job, else nil (Go memory).
func (b *Backend) Alloc() memory.Allocator {
	if b.gpu == nil {
		return nil
	}
	pinned.once.Do(func() {
		c, err := b.gpu.Device().Context()
		if err == nil {
			pinned.alloc = gpu.NewPinnedAllocator(c)
		}
	})
	return pinned.alloc
}

// BuildDevice is the GPU to build the graph on for op (LoadOptions.Device):
// the backend's GPU when a GPU may run op, else nil (the host builds). op
// nil stands for a graph any operator may run on.
func (b *Backend) BuildDevice(op operators.Operator) *gpuop.GPU {
	if b.gpu == nil || op != nil && len(gpuop.Strategies(op.Spec().Name)) == 0 {
		return nil
	}
	return b.gpu
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

// For picks the backend that runs spec's operator on g, and says why when
// the choice was automatic.
func (b *Backend) For(g *convert.Graph, op operators.Operator, p operators.Params) (operators.Backend, string, error) {
	if vp, ok := op.(*vprog.Operator); ok {
		be, reason := b.programBackend(vp)
		return be, reason, nil
	}
	if b.choice != "cpu" && b.usable > 1 {
		if reason, ok := b.spread(g, op, p); ok {
			if b.multi == nil {
				m, err := SharedMultiGPU(b.gpus)
				if err != nil {
					return nil, "", err
				}
				b.multi = m
			}
			if b.multi != nil {
				// The parts are cut from the host's edges; the whole graph's
				// copies (a build on the first GPU leaves them there) would
				// only take that GPU's memory from its part. The edges come
				// back to the host first: a build on the GPU left them there.
				if err := g.Materialize(); err != nil {
					return nil, "", err
				}
				b.gpu.Forget(g)
				return b.multi, reason, nil
			}
		}
	}
	switch b.choice {
	case "cpu":
		return operators.CPU{}, "", nil
	case "gpu":
		return b.plan(g, op, p)
	}
	if b.gpu == nil {
		return operators.CPU{}, "no usable GPU: " + b.noGPU.Error(), nil
	}
	pl, _, err := b.plan(g, op, p)
	if err != nil {
		return operators.CPU{}, err.Error(), nil
	}
	return pl, fmt.Sprintf("%s is usable and the graph fits in its memory", b.gpu.Device().Name), nil
}

// plan is the GPU's plan for op on g, decided here once: the strategy the
// run takes, sized as it runs (gpuop.Plan). It is the runner: nothing below
// chooses again.
func (b *Backend) plan(g *convert.Graph, op operators.Operator, p operators.Params) (operators.Backend, string, error) {
	pl, err := b.gpu.Plan(op, g, p)
	if err == nil {
		err = pl.Fits(g)
	}
	if err != nil {
		return nil, "", err
	}
	return pl, "", nil
}

// spreadEdges is, by operator, the size from which --gpus 0 spreads a graph
// over every usable GPU even where one GPU holds it: where the partitioned
// run measured faster (BENCHMARKS.md, issue 16: PageRank 1.98× on two GPUs
// at 2.1 billion stored edges, Kronecker 26; BFS 1.33× there, and slower
// at 134 million). The vertex programs' partitioned pulls measured slower
// than one GPU's best strategies, so they spread only graphs that do not
// fit one GPU.
var spreadEdges = map[string]int64{"pagerank": 1 << 28, "bfs": 2_000_000_000}

// spread says whether op on g runs partitioned over the GPUs, and why.
func (b *Backend) spread(g *convert.Graph, op operators.Operator, p operators.Params) (string, bool) {
	if !multigpu.Partitioned(op) {
		return "", false
	}
	k := b.usable
	if b.gpus > 1 {
		return fmt.Sprintf("--gpus %d: the graph is cut into %d parts by vertex range", b.gpus, k), true
	}
	if err := b.gpu.Fits(op, g, p); err != nil {
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
	switch {
	case b.gpu == nil:
		return 0
	}
	return b.usable
}

// Release frees what the backend holds for g (its copies on the GPUs).
func (b *Backend) Release(g *convert.Graph) {
	if b.multi != nil {
		b.multi.Forget(g)
	}
	if b.gpu != nil {
		b.gpu.Forget(g)
	}
}
