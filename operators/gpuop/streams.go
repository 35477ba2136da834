package gpuop

import (
	"github.com/gpipe/gpipe/gpu"
)

// streamFan runs kernels concurrently on several streams after what a main
// stream has queued, and makes the main stream wait for all of them: the
// fork and join of Enterprise's concurrent class kernels (§4.2).
type streamFan struct {
	streams []*gpu.Stream // streams[0] is the main stream, not owned
	fork    *gpu.Event
	joins   []*gpu.Event
}

// newStreamFan adds width-1 streams beside main.
func newStreamFan(c *gpu.Context, main *gpu.Stream, width int) (f *streamFan, err error) {
	f = &streamFan{streams: []*gpu.Stream{main}}
	defer func() {
		if err != nil {
			f.destroy()
		}
	}()
	if f.fork, err = c.NewMarker(); err != nil {
		return nil, err
	}
	for i := 1; i < width; i++ {
		s, err := c.NewStream()
		if err != nil {
			return nil, err
		}
		f.streams = append(f.streams, s)
		e, err := c.NewMarker()
		if err != nil {
			return nil, err
		}
		f.joins = append(f.joins, e)
	}
	return f, nil
}

// stream is the i-th stream; 0 is the main one.
func (f *streamFan) stream(i int) *gpu.Stream { return f.streams[i] }

// begin makes the side streams in used (bit i: stream i; stream 0 is
// the main one) wait for the main stream's work so far. Streams left out
// cost no driver calls, at 3 to 5 µs each: on several GPUs a small level is
// mostly those calls.
func (f *streamFan) begin(used uint32) error {
	if err := f.fork.Record(f.streams[0]); err != nil {
		return err
	}
	for i, s := range f.streams[1:] {
		if used&(1<<(i+1)) == 0 {
			continue
		}
		if err := s.WaitEvent(f.fork); err != nil {
			return err
		}
	}
	return nil
}

// end makes the main stream wait for the work so far of the side streams
// in used.
func (f *streamFan) end(used uint32) error {
	for i, s := range f.streams[1:] {
		if used&(1<<(i+1)) == 0 {
			continue
		}
		if err := f.joins[i].Record(s); err != nil {
			return err
		}
		if err := f.streams[0].WaitEvent(f.joins[i]); err != nil {
			return err
		}
	}
	return nil
}

func (f *streamFan) destroy() {
	for _, s := range f.streams[1:] {
		s.Destroy()
	}
	for _, e := range f.joins {
		e.Destroy()
	}
	if f.fork != nil {
		f.fork.Destroy()
	}
}

// Counters is a block of device Counters that kernels leave for the host,
// and a pinned host copy to read them into without a pageable copy's
// overhead at every level.
type Counters struct {
	host    *gpu.HostBuffer
	release func()
}

func NewCounters(b *GPU, bytes int) (*Counters, error) {
	h, release, err := b.pinned(bytes)
	if err != nil {
		return nil, err
	}
	return &Counters{host: h, release: release}, nil
}

// read waits for s and returns the contents of dev (at most the host
// copy's size).
func (c *Counters) read(s *gpu.Stream, dev *gpu.DeviceBuffer) ([]byte, error) {
	if err := c.Fetch(s, dev); err != nil {
		return nil, err
	}
	return c.Wait(s, dev)
}

// Fetch queues the copy of dev on s, for wait to return: several GPUs'
// copies then go at once, each GPU's after its own work, rather than each
// queued only once the previous GPU's is read.
func (c *Counters) Fetch(s *gpu.Stream, dev *gpu.DeviceBuffer) error {
	return dev.CopyToHost(s, c.host.Bytes()[:dev.Size()])
}

// Wait waits for s and returns what fetch copied of dev.
func (c *Counters) Wait(s *gpu.Stream, dev *gpu.DeviceBuffer) ([]byte, error) {
	if err := s.Synchronize(); err != nil {
		return nil, err
	}
	return c.host.Bytes()[:dev.Size()], nil
}

// Free gives the host copy back to the backend's pool; the run's streams
// must have finished with it.
func (c *Counters) Free() { c.release() }

// Releases frees what a run's set-up allocated, in the reverse order, once:
// a set-up that fails part-way frees what it had, a finished run all.
type Releases []func()

func (r *Releases) Add(free func()) { *r = append(*r, free) }

func (r *Releases) Free() {
	for i := len(*r) - 1; i >= 0; i-- {
		(*r)[i]()
	}
	*r = nil
}

// SyncAll waits for every stream's work, in order, and returns the first
// failure.
func SyncAll(streams []*gpu.Stream) error {
	for _, s := range streams {
		if err := s.Synchronize(); err != nil {
			return err
		}
	}
	return nil
}
