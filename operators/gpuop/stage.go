package gpuop

import (
	"fmt"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/par"
)

// stager copies ordinary host memory to the device through a ring of
// pinned buffers: every core copies a piece into a free buffer, a DMA
// takes it to the device, and the next piece's copy overlaps that DMA.
// Memory the driver already knows to be pinned goes straight to the
// device. The edge columns reach the GPU this way: reading them into pinned
// memory in the first place cost more than the copy (cuMemHostAlloc pins,
// and so faults in and zeroes, every page on one thread, before the
// reader's first write; docs/gpu.md).
//
// A stager is used by one build at a time (GPU.buildMu).
type stager struct {
	ctx   *gpu.Context
	slots []stageSlot
	next  int
}

type stageSlot struct {
	host *gpu.HostBuffer
	done *gpu.Event // recorded after the slot's DMA; nil until first used
}

// Stage sizes: enough pieces in flight to keep the copy engine busy while
// the cores fill the next, little pinned memory held.
const (
	stageSlots     = 4
	stageSlotBytes = 32 << 20
	stagePiece     = 512 << 10 // what one core copies at a time
)

// newStager pins slots buffers of size bytes each.
func newStager(c *gpu.Context, slots, size int) (*stager, error) {
	st := &stager{ctx: c}
	for i := 0; i < slots; i++ {
		h, err := c.AllocHost(size)
		if err != nil {
			st.free()
			return nil, err
		}
		st.slots = append(st.slots, stageSlot{host: h})
	}
	return st, nil
}

// copy queues the copy of src to dst's bytes from off on s. It returns
// once src has been read: src may be reused then, but the copy is complete
// only when s is synchronized.
func (st *stager) copy(s *gpu.Stream, dst *gpu.DeviceBuffer, off int64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if off < 0 || off+int64(len(src)) > dst.Size() {
		return fmt.Errorf("operators: staged copy of %d bytes to offset %d of a %d-byte device buffer", len(src), off, dst.Size())
	}
	if gpu.IsPinned(src) {
		view, err := dst.Slice(off, int64(len(src)))
		if err != nil {
			return err
		}
		return view.CopyFromHost(s, src)
	}
	for len(src) > 0 {
		slot := &st.slots[st.next]
		st.next = (st.next + 1) % len(st.slots)
		if slot.done != nil {
			if err := slot.done.Synchronize(); err != nil {
				return err
			}
		} else {
			ev, err := st.ctx.NewMarker()
			if err != nil {
				return err
			}
			slot.done = ev
		}
		buf := slot.host.Bytes()
		n := min(len(src), len(buf))
		parallelCopy(buf[:n], src[:n])
		view, err := dst.Slice(off, int64(n))
		if err != nil {
			return err
		}
		if err := view.CopyFromHost(s, buf[:n]); err != nil {
			return err
		}
		if err := slot.done.Record(s); err != nil {
			return err
		}
		src, off = src[n:], off+int64(n)
	}
	return nil
}

// parallelCopy is copy(dst, src) on all cores.
func parallelCopy(dst, src []byte) {
	par.For(len(src), stagePiece, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// free gives back the pinned buffers and events; the stream that used them
// must be synchronized.
func (st *stager) free() {
	for _, slot := range st.slots {
		if slot.done != nil {
			slot.done.Destroy()
		}
		slot.host.Free()
	}
	st.slots = nil
}
