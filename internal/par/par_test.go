package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkCover checks that the chunks cover [0, n) exactly once.
func checkCover(t *testing.T, n, grain int) {
	t.Helper()
	hits := make([]int32, n)
	var bad atomic.Int32
	workers := Workers()
	ForWorker(n, grain, func(w, lo, hi int) {
		if w < 0 || w >= workers || lo < 0 || hi > n || lo >= hi || (grain > 0 && hi-lo > grain) {
			bad.Add(1)
			return
		}
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&hits[i], 1)
		}
	})
	if bad.Load() != 0 {
		t.Fatalf("n=%d grain=%d: %d chunks out of range", n, grain, bad.Load())
	}
	for i, h := range hits {
		if h != 1 {
			t.Fatalf("n=%d grain=%d: index %d visited %d times", n, grain, i, h)
		}
	}
}

func TestForWorkerCovers(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 64, 1000, 100003} {
		for _, grain := range []int{0, 1, 3, 64, 4096} {
			checkCover(t, n, grain)
		}
	}
}

// On one core too, fn gets chunks of at most grain, not the whole range in
// one call: loops check for cancellation at the start of each chunk, and
// with one call they would check once (GOMAXPROCS is 1 in a container
// limited to one CPU).
func TestForWorkerCoversOnOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, n := range []int{0, 1, 7, 1000, 100003} {
		for _, grain := range []int{0, 1, 64, 4096} {
			checkCover(t, n, grain)
		}
	}
}

func TestBlocksAndPrefixSum(t *testing.T) {
	for _, n := range []int{0, 1, 5, 2047, 1 << 16, 100001} {
		xs := make([]int64, n)
		for i := range xs {
			xs[i] = int64(i%7 + 1)
		}
		want := make([]int64, n)
		var s int64
		for i, x := range xs {
			want[i] = s
			s += x
		}
		if got := PrefixSum(xs); got != s {
			t.Fatalf("n=%d: total %d, want %d", n, got, s)
		}
		for i := range xs {
			if xs[i] != want[i] {
				t.Fatalf("n=%d: prefix[%d] = %d, want %d", n, i, xs[i], want[i])
			}
		}
		// Blocks are contiguous, ordered and cover [0, n).
		blocks := NumBlocks(n)
		los, his := make([]int, blocks), make([]int, blocks)
		Blocks(n, func(w, lo, hi int) { los[w], his[w] = lo, hi })
		if n > 0 && (los[0] != 0 || his[blocks-1] != n) {
			t.Fatalf("n=%d: blocks %v %v", n, los, his)
		}
		for w := 1; w < blocks; w++ {
			if los[w] != his[w-1] {
				t.Fatalf("n=%d: blocks %v %v", n, los, his)
			}
		}
	}
}

// TestNested runs loops inside loops: the inner ones cannot use the busy
// team and must still finish.
func TestNested(t *testing.T) {
	var total atomic.Int64
	For(8, 1, func(lo, hi int) {
		For(1000, 10, func(lo, hi int) {
			total.Add(int64(hi - lo))
		})
	})
	if total.Load() != 8000 {
		t.Fatalf("total %d", total.Load())
	}
}

// TestConcurrentCallers starts loops from many goroutines at once.
func TestConcurrentCallers(t *testing.T) {
	var wg sync.WaitGroup
	var total atomic.Int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 50; r++ {
				For(10000, 100, func(lo, hi int) { total.Add(int64(hi - lo)) })
			}
		}()
	}
	wg.Wait()
	if total.Load() != 16*50*10000 {
		t.Fatalf("total %d", total.Load())
	}
}

// TestSleepingHelpers lets the helpers fall asleep between loops, and
// raises GOMAXPROCS so that the team grows.
func TestSleepingHelpers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 3))
	for r := 0; r < 3; r++ {
		checkCover(t, 50000, 10)
		time.Sleep(3 * spinTime)
	}
	seen := make([]atomic.Bool, Workers())
	// Chunks that take a while, so that every worker gets some.
	ForWorker(Workers()*20, 1, func(w, lo, hi int) {
		seen[w].Store(true)
		time.Sleep(200 * time.Microsecond)
	})
	for w := range seen {
		if !seen[w].Load() {
			t.Logf("worker %d got no chunk (the machine may be busy)", w)
		}
	}
}

// BenchmarkLoopStart is the fixed cost of a parallel loop: one tiny chunk
// for each worker.
func BenchmarkLoopStart(b *testing.B) {
	var sink atomic.Int64
	for i := 0; i < b.N; i++ {
		For(Workers(), 1, func(lo, hi int) { sink.Add(1) })
	}
}

// BenchmarkSmallLoop is a BFS level on a grid: 1024 items in chunks of 64,
// each item a few dozen nanoseconds of work.
func BenchmarkSmallLoop(b *testing.B) {
	xs := make([]uint64, 1024)
	for i := 0; i < b.N; i++ {
		For(len(xs), 64, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				x := xs[k] + uint64(k)
				for r := 0; r < 20; r++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
				xs[k] = x
			}
		})
	}
}

// TestEveryWorkerOnce runs many small loops with more workers than cores,
// so that helpers are often not running when a loop starts and the caller
// runs their shares: every worker index must still run exactly once per
// loop (Blocks gives each its own range), and ForWorker's chunks must still
// cover the range once.
func TestEveryWorkerOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.NumCPU() + 5))
	workers := Workers()
	n := workers * 1024
	counts := make([]atomic.Int32, workers)
	for r := 0; r < 300; r++ {
		Blocks(n, func(w, lo, hi int) { counts[w].Add(1) })
		for w := range counts {
			if c := counts[w].Swap(0); c != 1 {
				t.Fatalf("loop %d: worker %d ran %d times", r, w, c)
			}
		}
		if r%10 == 0 {
			checkCover(t, 5000, 7)
		}
	}
}

// TestClaimIsMonotone: a claim goes to the first asker, and never back to
// an older job.
func TestClaimIsMonotone(t *testing.T) {
	var h helper
	if !h.claim(3) || h.claim(3) {
		t.Fatal("job 3: the first claim must win, the second lose")
	}
	if h.claim(2) {
		t.Fatal("job 2 claimed after job 3")
	}
	if !h.claim(5) {
		t.Fatal("job 5 not claimable")
	}
}

// BenchmarkLoopAfterIdle is the first loops after the helpers fell asleep
// (as after a garbage collection between two runs): a loop of 0.2 ms of
// work then one of 2 ms, each in 64 chunks; time.Sleep between rounds is
// not timed.
func BenchmarkLoopAfterIdle(b *testing.B) {
	xs := make([]uint64, 64)
	work := func(lo, hi int, rounds int) {
		for k := lo; k < hi; k++ {
			x := xs[k]
			for r := 0; r < rounds; r++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
			xs[k] = x
		}
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		time.Sleep(3 * spinTime)
		b.StartTimer()
		For(len(xs), 1, func(lo, hi int) { work(lo, hi, 2500) })
		For(len(xs), 1, func(lo, hi int) { work(lo, hi, 25000) })
	}
}

// TestGoroutines: every worker's body runs once.
func TestGoroutines(t *testing.T) {
	for _, workers := range []int{1, 2, 7} {
		calls := make([]atomic.Int32, workers)
		Goroutines(workers, func(w int) { calls[w].Add(1) })
		for w := range calls {
			if got := calls[w].Load(); got != 1 {
				t.Errorf("%d workers: body(%d) ran %d times", workers, w, got)
			}
		}
	}
}
