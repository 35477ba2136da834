package pipeline

import (
	"fmt"

	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/vprog"
	"github.com/gpipe/gpipe/operators/vprog/vpgpu"
)

// programBackend is where a vertex program runs: the GPU where there is
// one (--backend gpu, or auto), else the CPU, and why. A program has no
// row in the cost model (its cost is the user's code), so auto takes the
// GPU whenever one is usable; it waits for the GPU's opening.
func (b *Backend) programBackend(op *vprog.Operator) (operators.Backend, string, error) {
	if b.choice == "cpu" {
		return operators.CPU{}, "", nil
	}
	dev, err := b.device()
	switch {
	case err != nil && b.choice == "gpu":
		return nil, "", err
	case err != nil:
		return operators.CPU{}, "no usable GPU: " + err.Error(), nil
	case dev == nil:
		return operators.CPU{}, "no usable GPU", nil
	case b.choice == "gpu":
		return vpgpu.Backend{Ctx: dev.Context()}, "", nil
	}
	return vpgpu.Backend{Ctx: dev.Context()}, fmt.Sprintf("%s is usable: the program %s is compiled for it", dev.Device().Name, op.Prog.Name), nil
}
