package gpipe

import (
	"fmt"
	"sync"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

// Backend is a backend choice ("auto", "cpu", "gpu") opened before the input
// is read: it says which memory the input should go into (pinned host
// memory when a GPU may run the job, so the copy to the device needs no
// staging), and once the graph is built, which backend runs the operator.
type Backend struct {
	choice string
	gpu    *operators.GPU // nil when no GPU is usable (or cpu was chosen)
	noGPU  error          // why gpu is nil, for auto's report
}

// OpenBackend opens a backend choice. "gpu" fails here, before any input is
// read, when no GPU is usable.
func OpenBackend(choice string) (*Backend, error) {
	switch choice {
	case "", "auto":
		b := &Backend{choice: "auto"}
		b.gpu, b.noGPU = SharedGPU()
		return b, nil
	case "cpu":
		return &Backend{choice: "cpu"}, nil
	case "gpu":
		g, err := SharedGPU()
		if err != nil {
			return nil, err
		}
		return &Backend{choice: "gpu", gpu: g}, nil
	}
	return nil, usererr.New(usererr.Usage, fmt.Sprintf("unknown backend %q", choice), "use auto, cpu or gpu")
}

var shared struct {
	once sync.Once
	gpu  *operators.GPU
	err  error
}

// SharedGPU is the process's GPU backend, on the first GPU gpipe's kernels
// run on, opened once; or the reason no GPU is usable.
func SharedGPU() (*operators.GPU, error) {
	shared.once.Do(func() {
		c, err := gpu.Default()
		if err != nil {
			shared.err = err
			return
		}
		shared.gpu = operators.NewGPU(c)
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
// the backend's GPU when a GPU may run op, else nil (the host builds).
func (b *Backend) BuildDevice(op operators.Operator) *operators.GPU {
	if b.gpu == nil || len(operators.GPUStrategies(op.Spec().Name)) == 0 {
		return nil
	}
	return b.gpu
}

// Check fails at once when the backend cannot run op at all, before any
// input is read: the GPU chosen for an operator it has no kernels for.
func (b *Backend) Check(op operators.Operator) error {
	if b.choice == "gpu" && len(operators.GPUStrategies(op.Spec().Name)) == 0 {
		return usererr.New(usererr.Backend, fmt.Sprintf("operator %s has no GPU implementation yet", op.Spec().Name),
			"use --backend cpu (or auto) for it")
	}
	return nil
}

// For picks the backend that runs spec's operator on g, and says why when
// the choice was automatic.
func (b *Backend) For(g *convert.Graph, op operators.Operator, p operators.Params) (operators.Backend, string, error) {
	switch b.choice {
	case "cpu":
		return operators.CPU{}, "", nil
	case "gpu":
		if err := b.gpu.Fits(op, g, p); err != nil {
			return nil, "", err
		}
		return b.gpu, "", nil
	}
	if b.gpu == nil {
		return operators.CPU{}, "no usable GPU: " + b.noGPU.Error(), nil
	}
	if err := b.gpu.Fits(op, g, p); err != nil {
		return operators.CPU{}, err.Error(), nil
	}
	return b.gpu, fmt.Sprintf("%s is usable and the graph fits in its memory", b.gpu.Device().Name), nil
}

// Release frees what the backend holds for g (its copies on the GPU).
func (b *Backend) Release(g *convert.Graph) {
	if b.gpu != nil {
		b.gpu.Forget(g)
	}
}
