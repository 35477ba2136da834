// Package gputest is what tests outside package gpuop (multigpu's) need
// to run operators on a GPU and on the CPU and compare them. gpuop's own
// tests, inside the package, keep their copies of these few helpers (they
// cannot import a package that imports gpuop).
package gputest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/internal/optest"
)

// GPU is a poisoning GPU backend, or a skip where there is no GPU (a
// failure instead with GPIPE_REQUIRE_GPU=1).
func GPU(t *testing.T) *gpuop.GPU {
	t.Helper()
	c, err := gpu.Default()
	if err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "1" {
			t.Fatalf("GPIPE_REQUIRE_GPU=1 but no GPU is usable: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	b := gpuop.NewGPU(c)
	b.Poison = true
	t.Cleanup(func() { b.Close() })
	return b
}

// RunCPU runs op on the CPU: the result a GPU's is compared with.
func RunCPU(t testing.TB, op operators.Operator, g *convert.Graph, src uint32, p operators.Params) *operators.Result {
	t.Helper()
	if err := op.Prepare(&p); err != nil {
		t.Fatalf("%s: prepare: %v", op.Spec().Name, err)
	}
	r, err := operators.CPU{}.Run(context.Background(), op, operators.Input{Graph: g, Source: src, Params: p})
	if err != nil {
		t.Fatalf("%s on the CPU: %v", op.Spec().Name, err)
	}
	return r
}

// Run runs op on b and checks the result's header.
func Run(b operators.Backend, op operators.Operator, g *convert.Graph, src uint32, p operators.Params) (*operators.Result, error) {
	if err := op.Prepare(&p); err != nil {
		return nil, err
	}
	r, err := b.Run(context.Background(), op, operators.Input{Graph: g, Source: src, Params: p})
	if err != nil {
		return nil, err
	}
	if r.Backend != "gpu" || r.Compute <= 0 && g.NumVertices() > 0 || r.Strategy == "" || r.StrategyReason == "" {
		return nil, fmt.Errorf("result header backend=%q compute=%v strategy=%q reason=%q", r.Backend, r.Compute, r.Strategy, r.StrategyReason)
	}
	return r, nil
}

// RanksOf is a PageRank result as optest.SameRanks takes it.
func RanksOf(r *operators.Result) optest.Ranks {
	c := r.Column("rank")
	return optest.Ranks{Values: c.Float64, Valid: c.Valid, Float32: strings.Contains(r.Strategy, "float32"), Iterations: r.Iterations}
}
