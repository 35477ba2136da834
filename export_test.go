package gpipe

import "github.com/gpipe/gpipe/operators/cost"

// WithCostModel is opts deciding auto by m: what the tests pass to send
// auto to the CPU or the GPU.
func WithCostModel(opts LoadOptions, m *cost.Model) LoadOptions {
	opts.model = m
	return opts
}
