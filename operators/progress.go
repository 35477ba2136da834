package operators

import "context"

// Progress is what a run says after each of its iterations, for a caller
// that shows how a long run is going (gpipe run's progress line: "pagerank:
// iteration 37, change 3.2e-07").
type Progress struct {
	// Op is the operator that runs.
	Op string
	// Iteration counts the iterations done: PageRank's, the Δ-stepping
	// phases of sssp and sswp on the CPU, the vertex programs' on the GPU
	// (as far as the host has seen).
	Iteration int
	// Change is PageRank's L1 change in the iteration; NaN where the
	// operator has none.
	Change float64
	// Active counts the vertices the iteration worked on (a Δ-stepping
	// phase's frontier, a vertex program's active vertices); -1 where the
	// operator does not count them.
	Active int64
}

type progressKey struct{}

// WithProgress returns a context whose runs call report after each
// iteration, from the goroutine that drives the run. report must be quick
// (an iteration waits for it) and safe to call from several runs at once
// where the context is shared.
func WithProgress(ctx context.Context, report func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// ProgressOf is the function a run of op calls after each iteration: the
// context's hook with Op filled in, or one that does nothing. A run looks
// it up once, so that an iteration costs one call.
func ProgressOf(ctx context.Context, op string) func(Progress) {
	report, _ := ctx.Value(progressKey{}).(func(Progress))
	if report == nil {
		return func(Progress) {}
	}
	return func(p Progress) {
		p.Op = op
		report(p)
	}
}
