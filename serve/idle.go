package serve

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Idle clients. A client that stops sending an upload would hold its graph
// slot and the memory of what it sent, and one that stops reading a result
// would hold the graph (a dropped one too) and the result, for as long as
// it stays connected. So the server waits on a client for at most the idle
// timeout: an upload whose client sends no message for that long is
// abandoned, and a result whose client takes no batch for that long (gRPC's
// flow control makes Send wait once the client's window is full) is
// canceled; the call ends with DeadlineExceeded and frees what it held.
// The clock runs only while the server waits on the client, never while it
// builds or computes.

// idleRecv is an upload's stream whose Recv gives up when the client sends
// nothing for d (d <= 0: no limit), or when the upload has not ended by
// deadline (zero: none), which --max-upload-time set: the idle timeout
// alone lets a client that sends a batch now and then hold its memory and
// graph slot for ever.
type idleRecv struct {
	flight.DataStreamReader
	d        time.Duration
	total    time.Duration // --max-upload-time, for the message
	deadline time.Time
	err      error // once Recv gave up, the stream is not read again
}

func (r *idleRecv) Recv() (*flight.FlightData, error) {
	if r.err != nil {
		return nil, r.err
	}
	wait, late := r.d, false
	if !r.deadline.IsZero() {
		left := time.Until(r.deadline)
		if wait <= 0 || left < wait {
			wait, late = max(left, time.Nanosecond), true
		}
	}
	fd, idle, err := untilIdle(wait, r.DataStreamReader.Recv)
	switch {
	case idle && late:
		r.err = status.Errorf(codes.DeadlineExceeded,
			"the upload did not end within %v (the server's --max-upload-time), so it was abandoned and nothing was stored: send the edges in fewer, larger batches without pauses, or ask for a longer limit", r.total)
		return nil, r.err
	case idle:
		r.err = status.Errorf(codes.DeadlineExceeded,
			"the client sent nothing for %v (the server's --upload-idle-timeout), so the upload was abandoned and nothing was stored: send the record batches without long pauses, or ask for a longer timeout", r.d)
		return nil, r.err
	}
	return fd, err
}

// idleSend is a result's stream whose SendMsg gives up when the client
// takes no message for d (d <= 0: no limit).
type idleSend struct {
	sender messageSender
	d      time.Duration
	err    error // once SendMsg gave up, the stream is not written again
}

func (w *idleSend) SendMsg(m any) error {
	if w.err != nil {
		return w.err
	}
	_, idle, err := untilIdle(w.d, func() (struct{}, error) { return struct{}{}, w.sender.SendMsg(m) })
	if idle {
		w.err = status.Errorf(codes.DeadlineExceeded,
			"the client took no result batch for %v (the server's --result-idle-timeout), so the query was canceled: read results as they come, or ask for a longer timeout", w.d)
		return w.err
	}
	return err
}

// untilIdle runs op, a Recv or a Send on a client's stream, and stops
// waiting for it after d: then it says idle, and op ends in its own
// goroutine when the call does (its handler returns, and gRPC cancels the
// stream). d <= 0 waits as long as op takes.
func untilIdle[T any](d time.Duration, op func() (T, error)) (v T, idle bool, err error) {
	if d <= 0 {
		v, err = op()
		return v, false, err
	}
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := op()
		done <- outcome{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case o := <-done:
		return o.v, false, o.err
	case <-timer.C:
		return v, true, nil
	}
}
