// Package pollctx is a context for tests of cancellation. It counts the
// times code asks whether it is canceled (calls of Err and Done) and cancels
// itself at a chosen one, so that a test can cancel a stage in the middle of
// its work, and see how much more it asked before it stopped, without
// timing anything.
package pollctx

import (
	"context"
	"sync/atomic"
)

// Context is a context that cancels itself at its n-th poll.
type Context struct {
	context.Context
	cancel context.CancelFunc
	at     int64
	polls  atomic.Int64
}

// New returns a context that is canceled at its at-th poll: the at-th call
// of Err or Done, which already sees it canceled. With at <= 0 it is never
// canceled, and only counts.
func New(at int64) *Context {
	ctx, cancel := context.WithCancel(context.Background())
	return &Context{Context: ctx, cancel: cancel, at: at}
}

func (c *Context) poll() {
	if c.polls.Add(1) == c.at {
		c.cancel()
	}
}

// Err implements context.Context, counting a poll.
func (c *Context) Err() error {
	c.poll()
	return c.Context.Err()
}

// Done implements context.Context, counting a poll.
func (c *Context) Done() <-chan struct{} {
	c.poll()
	return c.Context.Done()
}

// Polls is how many times the context was polled.
func (c *Context) Polls() int64 { return c.polls.Load() }
