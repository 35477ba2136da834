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
	t.seq++
	j := &job{body: body, workers: workers, seq: t.seq}
	t.current.Store(j)
	helpers := t.helpers[:workers-1]
	woke := false
	for _, h := range helpers {
		woke = h.wakeIfAsleep() || woke
	}
	if woke {
		// A woken helper is queued on this goroutine's processor, where it
		// would wait until an idle processor steals it: yield to it, and
		// let an idle processor take this goroutine from the global queue.
		runtime.Gosched()
	}
	body(0)
	for i, h := range helpers {
		if h.done.Load() == j.seq {
			continue
		}
		if h.claim(j.seq) {
			// The helper has not started (its thread may be waiting for
			// a core, or it may be waking): do its share here.
			body(i + 1)
			continue
		}
		for s := (spinner{}); h.done.Load() != j.seq; {
			s.spin()
		}
	}
	// Every helper that ran body is done with it: let go of what it holds.
	j.body = nil
}

// Goroutines calls body(w) for w in [0, workers) in parallel, workers >= 1,
// on goroutines started for the purpose (body(0) on the caller's), never
// on the team: for a loop among small ones, after which the team's helpers
// would spin on every core for spinTime (a Flight server sending a result,
// whose cores gRPC's writer and the clients need).
func Goroutines(workers int, body func(w int)) { spawn(workers, body) }

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
// i+1.
//
// A loop costs the team two cache misses per helper, not a trip through the
// scheduler: the caller publishes the job in one pointer that every helper
// watches (current), and each helper that takes part reports in its own
// cache line (done), which the caller watches. A helper that finished a job
// spins for the next one for spinTime, as OpenMP's threads do, then sleeps
// on its channel until a job needs it (after crowdedSpinTime only where
// GOMAXPROCS exceeds the cores, as OpenMP also spins less when its threads
// outnumber them). Spinning executes PAUSE and yields
// its thread to the scheduler only every yieldTime: runtime.Gosched takes
// the scheduler's global lock, and fifteen helpers yielding in a tight loop
// spent half of a high-diameter BFS's time contending for it on 16 cores.
//
// Each helper's share of a job goes to whichever claims it first, the
// helper or the caller: once the caller has run its own share, it runs the
// shares of helpers that have not started. So a loop never waits for a
// helper whose thread is not on a core (a machine shared with other
// processes, more workers than cores); with a Gosched in every spin such a
// helper sat in the scheduler's queue, where the caller's thread picked it
// up, and the PAUSE spin without claims made an empty loop take 80 µs
// instead of 1 to 10 on a loaded 2-core machine.
var theTeam team

type team struct {
	busy    atomic.Bool // a loop is running on the team; guards helpers and seq
	current atomic.Pointer[job]
	seq     uint64 // the last job's number
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
		go t.serve(h, len(t.helpers))
	}
}

// job is one parallel loop: its body, run by workers 0 .. workers-1, and
// its number, which tells helpers a new job from the one they last saw.
type job struct {
	body    func(w int)
	workers int
	seq     uint64
}

type helper struct {
	_ [64]byte // keeps helpers' hot fields off each other's cache lines
	// claimed is the number of the last job whose share for this helper
	// was claimed, by the helper (which then runs it) or by the caller.
	claimed  atomic.Uint64
	done     atomic.Uint64 // the number of the last job this helper ran
	sleeping atomic.Bool
	wake     chan struct{} // capacity 1: a wake-up is never lost
	_        [64]byte
}

const (
	// spinTime is how long a helper waits for the next job before it
	// sleeps: long enough to bridge the serial steps between the loops of
	// one algorithm, short enough to give the core back soon after.
	spinTime = time.Millisecond
	// crowdedSpinTime replaces spinTime where there are more workers than
	// cores: spinning helpers would take turns on the cores with the
	// workers that have work.
	crowdedSpinTime = 50 * time.Microsecond
	// yieldTime is how long a spinning goroutine runs between yields to
	// the scheduler, which let other goroutines queued on its processor
	// (the garbage collector's workers, goroutines of nested loops) run.
	yieldTime = 100 * time.Microsecond
	// timeChecks is how many spins pass between looks at the clock.
	timeChecks = 64
)

// spinner paces a wait: spin executes PAUSE, and now and then looks at the
// clock to yield to the scheduler every yieldTime. The zero value starts a
// wait.
type spinner struct {
	n       int
	start   time.Time // the first look at the clock
	now     time.Time // the latest
	yielded time.Time // the last yield, or start
}

func (s *spinner) spin() {
	pause()
	s.n++
	if s.n%timeChecks != 0 {
		return
	}
	s.now = time.Now()
	if s.start.IsZero() {
		s.start, s.yielded = s.now, s.now
	}
	if s.now.Sub(s.yielded) >= yieldTime {
		runtime.Gosched()
		s.yielded = s.now
	}
}

// waited is how long the wait has lasted, as of the latest look at the
// clock.
func (s *spinner) waited() time.Duration { return s.now.Sub(s.start) }

// wakeIfAsleep wakes h if it sleeps, and says whether it did; the caller
// has published a job for it. Both sides use sequentially consistent atomics: either the helper
// sees the new job before it sleeps, or the caller sees it sleeping.
func (h *helper) wakeIfAsleep() bool {
	if !h.sleeping.Load() {
		return false
	}
	select {
	case h.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	return true
}

// claim claims the helper's share of job seq, for whichever of the helper
// and the caller asks first; it reports whether this call got it. A helper
// may still hold an old job that the caller finished for it, so a claim
// never goes back to an older job.
func (h *helper) claim(seq uint64) bool {
	for {
		old := h.claimed.Load()
		if old >= seq {
			return false
		}
		if h.claimed.CompareAndSwap(old, seq) {
			return true
		}
	}
}

// serve runs the jobs that need helper h, worker w.
func (t *team) serve(h *helper, w int) {
	var seen uint64
	for {
		j := t.await(h, seen)
		seen = j.seq
		if w < j.workers && h.claim(j.seq) {
			j.body(w)
			h.done.Store(j.seq)
		}
	}
}

// await waits for a job other than the one numbered seen: spinning, then
// sleeping.
func (t *team) await(h *helper, seen uint64) *job {
	limit := spinTime
	if Workers() > runtime.NumCPU() {
		limit = crowdedSpinTime
	}
	for s := (spinner{}); s.waited() < limit; s.spin() {
		if j := t.current.Load(); j != nil && j.seq != seen {
			return j
		}
	}
	h.sleeping.Store(true)
	for {
		if j := t.current.Load(); j != nil && j.seq != seen {
			h.sleeping.Store(false)
			return j
		}
		<-h.wake
	}
}
