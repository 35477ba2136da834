package multigpu

import (
	"fmt"
	"os"
	"time"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// roundTrace, under GPIPE_BFS_TRACE=calls, times each part's calls in a
// multi-GPU level's first round, to tell the host's time from the GPUs':
// the host's µs since the round began as the part's worker started and as
// each call returned (expansion, stores, the wait for them: the stores'
// kernel copies the counters to the host), and the GPU's µs between events
// recorded after each call. The events' own calls add a few µs a part.
type roundTrace struct {
	began time.Time
	parts []partCalls
}

type partCalls struct {
	events [3]*gpu.Event // before the expansion, after it, after the stores
	host   [4]time.Duration
}

// newRoundTrace is the trace of ps's rounds where GPIPE_BFS_TRACE=calls
// and the parts store into each other's bitmaps (whose first round waits
// for the stores, which copy the counters to the host); nil otherwise.
func newRoundTrace(ps []*mgBFSPart, stores bool) (*roundTrace, error) {
	if os.Getenv(gpuop.TraceEnv) != "calls" || !stores {
		return nil, nil
	}
	t := &roundTrace{parts: make([]partCalls, len(ps))}
	for i, p := range ps {
		for j := range t.parts[i].events {
			ev, err := p.GPU.Context().NewEvent()
			if err != nil {
				t.destroy()
				return nil, err
			}
			t.parts[i].events[j] = ev
		}
	}
	return t, nil
}

func (t *roundTrace) begin() {
	if t != nil {
		t.began = time.Now()
	}
}

// mark notes that part i's call at returned, and records event at on s
// (none after the wait: nil s).
func (t *roundTrace) mark(i, at int, s *gpu.Stream) {
	if t == nil {
		return
	}
	t.parts[i].host[at] = time.Since(t.began)
	if s != nil {
		_ = t.parts[i].events[at].Record(s) // a trace: a failed record shows as an error below
	}
}

// print writes every part's line of the round, once the streams are done.
func (t *roundTrace) print(level int32) {
	if t == nil {
		return
	}
	for i, p := range t.parts {
		gpuTimes := make([]string, len(p.events)-1)
		for j := range gpuTimes {
			d, err := gpu.Elapsed(p.events[j], p.events[j+1])
			if err != nil {
				gpuTimes[j] = "?"
				continue
			}
			gpuTimes[j] = fmt.Sprintf("%.1f", gpuop.Micros(d))
		}
		fmt.Fprintf(os.Stderr, "level %d part %d: start %.1f, expand %.1f (GPU %s), stores %.1f (GPU %s), wait %.1f µs\n",
			level, i, gpuop.Micros(p.host[0]), gpuop.Micros(p.host[1]), gpuTimes[0], gpuop.Micros(p.host[2]), gpuTimes[1], gpuop.Micros(p.host[3]))
	}
}

func (t *roundTrace) destroy() {
	if t == nil {
		return
	}
	for _, p := range t.parts {
		for _, ev := range p.events {
			if ev != nil {
				ev.Destroy()
			}
		}
	}
}
