package gpu

import (
	"errors"
	"time"
	"unsafe"
)

// Stream and event flags (cuda.h).
const (
	streamNonBlocking  = 0x1 // CU_STREAM_NON_BLOCKING
	eventDefault       = 0x0 // CU_EVENT_DEFAULT
	eventDisableTiming = 0x2 // CU_EVENT_DISABLE_TIMING
)

// Stream is a queue of GPU work that runs in order; work on different
// streams may run concurrently. Streams from NewStream do not synchronize
// with the legacy default stream. A nil *Stream means the legacy default
// stream (CUstream 0) wherever a stream is taken.
type Stream struct {
	ctx *Context
	h   uintptr // CUstream
}

// NewStream creates a stream (CU_STREAM_NON_BLOCKING). Destroy it when done.
func (c *Context) NewStream() (*Stream, error) {
	var h uintptr
	if err := ctxCall(c, "cuStreamCreate", drv.streamCreate, uintptr(unsafe.Pointer(&h)), streamNonBlocking); err != nil {
		return nil, err
	}
	return &Stream{ctx: c, h: h}, nil
}

// handle is the CUstream: 0 for a nil stream.
func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Context is the stream's context.
func (s *Stream) Context() *Context { return s.ctx }

var errDestroyed = errors.New("gpu: use of a destroyed or freed object")

// Synchronize waits until all work queued on s has finished.
func (s *Stream) Synchronize() error {
	if s == nil {
		return errors.New("gpu: Synchronize of the nil (default) stream: use Context.Synchronize")
	}
	if s.h == 0 {
		return errDestroyed
	}
	return ctxCall(s.ctx, "cuStreamSynchronize", drv.streamSynchronize, s.h)
}

// Query reports whether all work queued on s has finished, without waiting.
func (s *Stream) Query() (bool, error) {
	if s == nil || s.h == 0 {
		return false, errDestroyed
	}
	err := ctxCall(s.ctx, "cuStreamQuery", drv.streamQuery, s.h)
	if IsCode(err, CodeNotReady) {
		return false, nil
	}
	return err == nil, err
}

// WaitEvent makes all work queued on s after this call wait until e's
// recorded work has finished, as recorded when this call is made (the
// event may belong to another stream, of another context or GPU). The
// host does not wait.
func (s *Stream) WaitEvent(e *Event) error {
	if s == nil || s.h == 0 || e == nil || e.h == 0 {
		return errDestroyed
	}
	return ctxCall(s.ctx, "cuStreamWaitEvent", drv.streamWaitEvent, s.h, e.h, 0)
}

// Destroy releases the stream; work already queued still runs. Destroying a
// destroyed stream does nothing.
func (s *Stream) Destroy() error {
	if s == nil || s.h == 0 {
		return nil
	}
	h := s.h
	s.h = 0
	return ctxCall(s.ctx, "cuStreamDestroy_v2", drv.streamDestroy, h)
}

// Event marks a point in a stream's work: to wait for it, to make another
// stream wait for it, or to time the GPU between two events.
type Event struct {
	ctx    *Context
	h      uintptr // CUevent
	timing bool
}

// NewEvent creates an event that records time, for Elapsed.
func (c *Context) NewEvent() (*Event, error) { return c.newEvent(eventDefault) }

// NewMarker creates an event without timing: cheaper, for dependencies
// between streams (Stream.WaitEvent) and host waits.
func (c *Context) NewMarker() (*Event, error) { return c.newEvent(eventDisableTiming) }

func (c *Context) newEvent(flags uintptr) (*Event, error) {
	var h uintptr
	if err := ctxCall(c, "cuEventCreate", drv.eventCreate, uintptr(unsafe.Pointer(&h)), flags); err != nil {
		return nil, err
	}
	return &Event{ctx: c, h: h, timing: flags&eventDisableTiming == 0}, nil
}

// Record captures the work queued on s so far (nil: the default stream);
// the event completes when that work has.
func (e *Event) Record(s *Stream) error {
	if e == nil || e.h == 0 {
		return errDestroyed
	}
	if err := sameContext(e.ctx, s); err != nil {
		return err
	}
	return ctxCall(e.ctx, "cuEventRecord", drv.eventRecord, e.h, s.handle())
}

// Context is the context the event belongs to.
func (e *Event) Context() *Context { return e.ctx }

// Synchronize waits until the event has completed.
func (e *Event) Synchronize() error {
	if e == nil || e.h == 0 {
		return errDestroyed
	}
	return ctxCall(e.ctx, "cuEventSynchronize", drv.eventSynchronize, e.h)
}

// Query reports whether the event has completed, without waiting.
func (e *Event) Query() (bool, error) {
	if e == nil || e.h == 0 {
		return false, errDestroyed
	}
	err := ctxCall(e.ctx, "cuEventQuery", drv.eventQuery, e.h)
	if IsCode(err, CodeNotReady) {
		return false, nil
	}
	return err == nil, err
}

// Destroy releases the event. Destroying a destroyed event does nothing.
func (e *Event) Destroy() error {
	if e == nil || e.h == 0 {
		return nil
	}
	h := e.h
	e.h = 0
	return ctxCall(e.ctx, "cuEventDestroy_v2", drv.eventFree, h)
}

// Elapsed is the GPU time between two recorded, completed events (about
// 0.5 µs resolution). It fails with CUDA_ERROR_NOT_READY when either has
// not completed: synchronize on end first.
func Elapsed(start, end *Event) (time.Duration, error) {
	if start == nil || end == nil || start.h == 0 || end.h == 0 {
		return 0, errDestroyed
	}
	if !start.timing || !end.timing {
		return 0, errors.New("gpu: Elapsed needs events from NewEvent, not NewMarker")
	}
	var ms float32
	if err := ctxCall(start.ctx, drv.eventElapsedName, drv.eventElapsed,
		uintptr(unsafe.Pointer(&ms)), start.h, end.h); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// sameContext checks that stream s (nil: the default stream) belongs to c.
func sameContext(c *Context, s *Stream) error {
	if s == nil {
		return nil
	}
	if s.h == 0 {
		return errDestroyed
	}
	if s.ctx != c {
		return errors.New("gpu: the stream belongs to " + s.ctx.dev.String() + ", the object to " + c.dev.String())
	}
	return nil
}
