// Package par runs loops over index ranges on all cores. Work is handed out in
// chunks from an atomic counter, so a range of uneven cost (vertices of skewed
// degree) still keeps every worker busy.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
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
		fn(0, 0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(grain))) - grain
				if lo >= n {
					return
				}
				fn(w, lo, min(lo+grain, n))
			}
		}(w)
	}
	wg.Wait()
}

// Blocks splits [0, n) into one contiguous block per worker and calls
// fn(worker, lo, hi) on each in parallel. Use it where each worker must own a
// fixed, ordered range (per-worker histograms, prefix sums).
func Blocks(n int, fn func(worker, lo, hi int)) {
	workers := Workers()
	if n < workers*1024 {
		workers = 1
	}
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		go func(w, lo, hi int) {
			defer wg.Done()
			fn(w, lo, hi)
		}(w, lo, hi)
	}
	wg.Wait()
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
