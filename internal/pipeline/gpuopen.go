package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// The process's GPU backend is opened once, in the background from the
// first StartGPU: the driver, the GPU's primary context and the backend's
// state, a fixed cost of a few hundred milliseconds that a job hides
// behind its read (docs/gpu.md, "Set-up").
var shared struct {
	once  sync.Once
	begun atomic.Bool
	done  chan struct{}
	start time.Time
	gpu   *gpuop.GPU
	err   error
}

// StartGPU starts opening the process's GPU backend in the background,
// unless that began already.
func StartGPU() {
	shared.once.Do(func() {
		shared.done = make(chan struct{})
		shared.start = time.Now()
		shared.begun.Store(true)
		go func() {
			defer close(shared.done)
			c, err := gpu.Default()
			if err != nil {
				shared.err = err
				return
			}
			shared.gpu = gpuop.NewGPU(c)
		}()
	})
}

// SharedGPU is the process's GPU backend, on the first GPU gpipe's kernels
// run on, opened once; or the reason no GPU is usable. It waits for the
// opening, starting it if need be.
func SharedGPU() (*gpuop.GPU, error) {
	StartGPU()
	<-shared.done
	return shared.gpu, shared.err
}

// gpuOpening says how far the opening is: not begun (elapsed < 0), under
// way for elapsed, or done.
func gpuOpening() (done bool, elapsed time.Duration) {
	if !shared.begun.Load() {
		return false, -1
	}
	select {
	case <-shared.done:
		return true, time.Since(shared.start)
	default:
		return false, time.Since(shared.start)
	}
}

// setupClock is one job's (or one loaded graph's) account of the GPU's
// set-up: when its part began and ended (the opening, if this job began
// it, and the build's preparation) and how long the job waited for it.
type setupClock struct {
	mu           sync.Mutex
	began, ended time.Time
	waited       time.Duration
}

// begin notes that set-up work for the job began at t, if none began
// before.
func (c *setupClock) begin(t time.Time) {
	c.mu.Lock()
	if c.began.IsZero() {
		c.began = t
	}
	c.mu.Unlock()
}

// end notes that set-up work ended at t.
func (c *setupClock) end(t time.Time) {
	c.mu.Lock()
	if t.After(c.ended) {
		c.ended = t
	}
	c.mu.Unlock()
}

// wait runs f, counting the time it takes as waited for the set-up.
func (c *setupClock) wait(f func()) {
	start := time.Now()
	f()
	c.mu.Lock()
	c.waited += time.Since(start)
	c.mu.Unlock()
}

// Setup is the GPU's set-up as a job saw it: how long it took (0 where it
// was done before the job began) and how much of that the job did not
// wait for (hidden behind the read).
type Setup struct {
	Took, Hidden time.Duration
}

// report is the clock's Setup; a set-up still under way (a job that
// chose the CPU before it ended) counts until now.
func (c *setupClock) report() Setup {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.began.IsZero() {
		return Setup{}
	}
	end := c.ended
	if end.Before(c.began) {
		end = time.Now()
	}
	took := end.Sub(c.began)
	return Setup{Took: took, Hidden: max(took-c.waited, 0)}
}
