// Package par runs loops over index ranges on all cores. Work is handed out in
// chunks from an atomic counter, so a range of uneven cost (vertices of skewed
// degree) still keeps every worker busy.
//
// The loops run on a team of helper goroutines that outlive them (see team),
// so that a loop starts in about a microsecond instead of waiting for the
// runtime to wake a parked thread, which under virtualization takes tens of
// microseconds: long enough for the calling goroutine to run the whole of a
// small loop alone. Graph algorithms run thousands of such loops (one or
// more per BFS level or Δ-stepping bucket).
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Workers is the number of goroutines a parallel loop uses.
func Workers() int { return runtime.GOMAXPROCS(0) }

// For calls fn(lo, hi) on disjoint chunks [lo, hi) covering [0, n), each at
// most grain long, from Workers() goroutines. It returns when all are done.
func For(n, grain int, fn func(lo, hi int)) {
	ForWorker(n, grain, func(_, lo, hi int) { fn(lo, hi) })
}

// ForWorker is For that also passes the worker's index in [0, Workers()), so
// a loop can accumulate into per-worker state without locks.
func ForWorker(n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	workers := Workers()
	if chunks := (n + grain - 1) / grain; chunks < workers {
		workers = chunks
	}
	if workers <= 1 {
		// Chunk by chunk still, as the doc says: loops check for
		// cancellation at the start of each chunk.
		for lo := 0; lo < n; lo += grain {
			fn(0, lo, min(lo+grain, n))
		}
		return
	}
	var next atomic.Int64
	run(workers, func(w int) {
		for {
			lo := int(next.Add(int64(grain))) - grain
			if lo >= n {
				return
			}
			fn(w, lo, min(lo+grain, n))
		}
	})
}

// Blocks splits [0, n) into one contiguous block per worker and calls
// fn(worker, lo, hi) on each in parallel. Use it where each worker must own a
// fixed, ordered range (per-worker histograms, prefix sums).
func Blocks(n int, fn func(worker, lo, hi int)) {
	workers := NumBlocks(n)
	if workers == 1 {
		fn(0, 0, n)
		return
	}
	run(workers, func(w int) {
		fn(w, n*w/workers, n*(w+1)/workers)
	})
}

// NumBlocks is the number of blocks Blocks(n, ...) makes.
func NumBlocks(n int) int {
	if n < Workers()*1024 {
		return 1
	}
	return Workers()
}

// PrefixSum replaces xs with its exclusive prefix sum, in parallel, and
// returns the total.
func PrefixSum(xs []int64) int64 {
	n := len(xs)
	blocks := NumBlocks(n)
	sums := make([]int64, blocks+1)
	Blocks(n, func(w, lo, hi int) {
		var s int64
		for _, x := range xs[lo:hi] {
			s += x
		}
		sums[w+1] = s
	})
	for i := 1; i <= blocks; i++ {
		sums[i] += sums[i-1]
	}
	Blocks(n, func(w, lo, hi int) {
		s := sums[w]
		for i := lo; i < hi; i++ {
			x := xs[i]
			xs[i] = s
			s += x
		}
	})
	return sums[blocks]
}

// run calls body(w) for w in [0, workers) in parallel and returns when all
// have returned: body(0) on the calling goroutine, the others on the team's
// helpers, or on fresh goroutines where the team is busy (a loop nested in a
// loop, or loops started by several goroutines at once).
func run(workers int, body func(w int)) {
	t := &theTeam
	if !t.busy.CompareAndSwap(false, true) {
		spawn(workers, body)
		return
	}
	defer t.busy.Store(false)
	t.grow(workers - 1)
	job := &job{body: body}
	job.pending.Store(int32(workers - 1))
	for _, h := range t.helpers[:workers-1] {
		h.give(job)
	}
	body(0)
	for i := 0; job.pending.Load() != 0; i++ {
		if i >= spinChecks {
			runtime.Gosched()
		}
	}
}

// spawn is run on goroutines started for the purpose.
func spawn(workers int, body func(w int)) {
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() {
			defer wg.Done()
			body(w)
		}()
	}
	body(0)
	wg.Wait()
}

// theTeam is the process's team of helpers: one for each worker but the
// caller's, more started when GOMAXPROCS grows. Helper i is always worker
// i+1. A helper that finished a job spins
// for the next one for spinTime (as OpenMP's threads do), then sleeps on
// its channel until given one.
var theTeam team

type team struct {
	busy    atomic.Bool // a loop is running on the team; guards helpers
	helpers []*helper
}

// The helpers for GOMAXPROCS start with the program, so that the number of
// goroutines does not change on the first loop (tests count them).
func init() {
	theTeam.grow(Workers() - 1)
}

// grow starts helpers until there are k; the caller holds busy (or is init).
func (t *team) grow(k int) {
	for len(t.helpers) < k {
		h := &helper{wake: make(chan struct{}, 1)}
		t.helpers = append(t.helpers, h)
		go h.loop(len(t.helpers))
	}
}

// job is one parallel loop: its body and the helpers still running it.
type job struct {
	body    func(w int)
	pending atomic.Int32
}

type helper struct {
	job      atomic.Pointer[job]
	sleeping atomic.Bool
	wake     chan struct{} // capacity 1: a wake-up is never lost
	_        [64]byte      // keeps helpers' hot fields off one cache line
}

const (
	// spinTime is how long a helper waits for the next job before it
	// sleeps: long enough to bridge the serial steps between the loops of
	// one algorithm, short enough to give the core back soon after.
	spinTime = time.Millisecond
	// spinChecks is how many times a spinning goroutine checks before it
	// starts yielding its thread between checks.
	spinChecks = 256
)

// give hands j to h, waking h if it sleeps. Both sides use sequentially
// consistent atomics: either h sees the job before it sleeps, or give sees
// h sleeping and sends a wake-up.
func (h *helper) give(j *job) {
	h.job.Store(j)
	if h.sleeping.Load() {
		select {
		case h.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

func (h *helper) loop(w int) {
	for {
		j := h.next()
		j.body(w)
		j.pending.Add(-1)
	}
}

// next waits for a job: spinning, then sleeping.
func (h *helper) next() *job {
	start := time.Now()
	for i := 0; ; i++ {
		if j := h.job.Swap(nil); j != nil {
			return j
		}
		if i >= spinChecks {
			if i%64 == 0 && time.Since(start) > spinTime {
				break
			}
			runtime.Gosched()
		}
	}
	h.sleeping.Store(true)
	for {
		if j := h.job.Swap(nil); j != nil {
			h.sleeping.Store(false)
			return j
		}
		<-h.wake
	}
}
