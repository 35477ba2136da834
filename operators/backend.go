package operators

import (
	"context"
)

// Backend runs operators somewhere: on the CPU cores, or on a GPU.
type Backend interface {
	// Name is "cpu" or "gpu".
	Name() string
	// Run runs op on in. A backend that cannot run op returns a
	// usererr.Backend error that says what to use instead.
	Run(ctx context.Context, op Operator, in Input) (*Result, error)
}

// CPU runs operators on all CPU cores.
type CPU struct{}

// Name is "cpu".
func (CPU) Name() string { return "cpu" }

// Run runs op's CPU implementation, on the graph's edges copied to the
// host first if it was built on a GPU.
func (CPU) Run(ctx context.Context, op Operator, in Input) (*Result, error) {
	if err := in.Graph.Materialize(); err != nil {
		return nil, err
	}
	return op.RunCPU(ctx, in)
}
