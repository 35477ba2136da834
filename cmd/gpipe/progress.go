package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress shows the running stage on a terminal's stderr once it has taken
// longer than a second, and clears the line when the stage ends. It prints
// nothing when stderr is not a terminal.
type progress struct {
	w     io.Writer
	on    bool
	mu    sync.Mutex
	name  string
	start time.Time
	shown bool
	stop  chan struct{}
	once  sync.Once
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, on: isTerminal(w), stop: make(chan struct{})}
	if p.on {
		go p.loop()
	}
	return p
}

// Stage returns the callback the pipeline calls as each stage starts.
func (p *progress) Stage(input string) func(string) {
	return func(stage string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.clearLocked()
		switch stage {
		case "read":
			p.name = "reading " + input
		case "build":
			p.name = "building the graph"
		case "compute":
			p.name = "computing"
		case "write":
			p.name = "writing the result"
		default:
			p.name = stage
		}
		p.start = time.Now()
	}
}

func (p *progress) loop() {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
			p.mu.Lock()
			if p.name != "" && time.Since(p.start) > time.Second {
				fmt.Fprintf(p.w, "\r\033[Kgpipe: %s… %.1f s", p.name, time.Since(p.start).Seconds())
				p.shown = true
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) clearLocked() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// Stop clears the line and ends the display; it may be called twice.
func (p *progress) Stop() {
	p.once.Do(func() {
		close(p.stop)
		p.mu.Lock()
		p.clearLocked()
		p.name = ""
		p.mu.Unlock()
	})
}
