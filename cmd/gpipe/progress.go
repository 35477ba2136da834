package main

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpipe/gpipe/operators"
)

// How often progress is shown: redrawn on a terminal, and written as a
// line that stays where stderr is a file or a pipe (a scheduled job's log,
// which a redrawn line would fill with escape codes).
const (
	terminalTick = 250 * time.Millisecond
	logTick      = 10 * time.Second
	// terminalAfter is how long a stage runs before a terminal shows it.
	terminalAfter = time.Second
)

// progress shows the running stage on stderr: on a terminal, a line redrawn
// while the stage runs once it has taken a second, erased when it ends;
// elsewhere, a line every 10 seconds ("gpipe: reading edges.parquet: 1200000
// rows so far, 20 s"). A stage may count rows (read, generated, written),
// which the line shows; the compute stage shows the operator's last
// iteration ("gpipe: computing: pagerank: iteration 37, delta 3.2e-07,
// 20 s"), which the operators report through Iterated. With quiet it shows
// nothing.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	name  string
	rows  *atomic.Int64 // the running stage's count, nil: none
	total int64         // the rows the stage will count, 0: not known
	start time.Time
	shown bool
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	// read counts the input rows the pipeline's read stage reads.
	read atomic.Int64
	// iter is the running operator's last iteration (Iterated), nil
	// before its first.
	iter atomic.Pointer[operators.Progress]
}

// newProgress starts showing progress on w, which is stderr (nothing when
// quiet).
func newProgress(w io.Writer, quiet bool) *progress {
	if quiet {
		return startProgress(w, false, nil)
	}
	tty := isTerminal(w)
	every := logTick
	if tty {
		every = terminalTick
	}
	tick := time.NewTicker(every)
	p := startProgress(w, tty, tick.C)
	go func() {
		<-p.done
		tick.Stop()
	}()
	return p
}

// startProgress shows progress on w at every tick (none when ticks is nil);
// tty says w is a terminal, where the line is redrawn.
func startProgress(w io.Writer, tty bool, ticks <-chan time.Time) *progress {
	p := &progress{w: w, tty: tty, stop: make(chan struct{}), done: make(chan struct{})}
	if ticks == nil {
		close(p.done)
		return p
	}
	go p.loop(ticks)
	return p
}

// Iterated is the operators' progress hook (operators.WithProgress): the
// compute stage's line shows the last iteration. It only stores it, so an
// iteration does not wait for the terminal.
func (p *progress) Iterated(it operators.Progress) { p.iter.Store(&it) }

// Rows is the counter the pipeline's read stage counts its rows in
// (pipeline.LoadOptions.Progress).
func (p *progress) Rows() *atomic.Int64 { return &p.read }

// Stage returns the callback the pipeline calls as each stage starts; the
// read of input counts its rows in Rows.
func (p *progress) Stage(input string) func(string) {
	return func(stage string) {
		switch stage {
		case "read":
			p.Begin("reading "+input, &p.read, 0)
		case "build":
			p.Begin("building the graph", nil, 0)
		case "compute":
			p.Begin("computing", nil, 0)
		case "write":
			p.Begin("writing the result", nil, 0)
		default:
			p.Begin(stage, nil, 0)
		}
	}
}

// Begin starts a stage named name, whose progress rows counts (nil: none)
// towards total (0: not known).
func (p *progress) Begin(name string, rows *atomic.Int64, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	p.name, p.rows, p.total, p.start = name, rows, total, time.Now()
	p.iter.Store(nil)
}

func (p *progress) loop(ticks <-chan time.Time) {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-ticks:
			p.show()
		}
	}
}

// show writes the running stage's line.
func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := time.Since(p.start)
	switch {
	case p.name == "":
	case p.tty && elapsed > terminalAfter:
		fmt.Fprintf(p.w, "\r\033[Kgpipe: %s… %s%s%.1f s", p.name, p.counted(", "), p.iterated(), elapsed.Seconds())
		p.shown = true
	case !p.tty:
		fmt.Fprintf(p.w, "gpipe: %s: %s%s%.0f s\n", p.name, p.counted(" so far, "), p.iterated(), elapsed.Seconds())
	}
}

// iterated is the operator's last iteration ("pagerank: iteration 37,
// delta 3.2e-07, " or "sssp: iteration 12, 4096 vertices active, "), or ""
// before its first.
func (p *progress) iterated() string {
	it := p.iter.Load()
	if it == nil {
		return ""
	}
	s := fmt.Sprintf("%s: iteration %d, ", it.Op, it.Iteration)
	if !math.IsNaN(it.Change) {
		s += fmt.Sprintf("delta %.2g, ", it.Change)
	}
	if it.Active >= 0 {
		s += count(it.Active, "vertex", "vertices") + " active, "
	}
	return s
}

// counted is the stage's rows ("1200000 rows" then sep, or "1200000 of
// 4000000 rows"), or "" where it counts none.
func (p *progress) counted(sep string) string {
	if p.rows == nil {
		return ""
	}
	if p.total > 0 {
		return fmt.Sprintf("%d of %d rows%s", p.rows.Load(), p.total, sep)
	}
	return fmt.Sprintf("%d rows%s", p.rows.Load(), sep)
}

func (p *progress) clearLocked() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// Stop clears the line and ends the display, once it has written its last
// line; it may be called twice.
func (p *progress) Stop() {
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		p.mu.Lock()
		p.clearLocked()
		p.name = ""
		p.mu.Unlock()
	})
}
