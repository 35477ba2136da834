package pipeline

import (
	"fmt"

	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/vprog"
	"github.com/gpipe/gpipe/operators/vprog/vpgpu"
)

// programBackend is where a vertex program runs: the GPU where there is
// one (--backend gpu, or auto), else the CPU, and why.
func (b *Backend) programBackend(op *vprog.Operator) (operators.Backend, string) {
	switch {
	case b.choice == "cpu":
		return operators.CPU{}, ""
	case b.gpu == nil:
		return operators.CPU{}, "no usable GPU: " + b.noGPU.Error()
	case b.choice == "gpu":
		return vpgpu.Backend{Ctx: b.gpu.Context()}, ""
	}
	return vpgpu.Backend{Ctx: b.gpu.Context()}, fmt.Sprintf("%s is usable: the program %s is compiled for it", b.gpu.Device().Name, op.Prog.Name)
}
