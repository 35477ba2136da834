package gpu

// Tests of peer copies and NCCL on the GPUs. Without a GPU (or, for the
// tests between GPUs, without two) they skip; under GPIPE_REQUIRE_GPU=1
// they fail instead where the machine has the GPUs they need. The NCCL
// tests run on every usable GPU of the machine, one rank each, one also.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"
)

// usableContexts are the contexts of the GPUs gpipe's kernels run on; the
// test skips (fails under GPIPE_REQUIRE_GPU=1) with fewer than min, and
// with fewer than two fails only where the machine has two.
func usableContexts(t *testing.T, min int) []*Context {
	t.Helper()
	info, err := Available()
	if err != nil {
		if requireGPU() {
			t.Fatalf("GPIPE_REQUIRE_GPU=1 but no usable GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	var ctxs []*Context
	for _, d := range info.Devices {
		if d.Supported() != nil {
			continue
		}
		c, err := d.Context()
		must(t, err)
		ctxs = append(ctxs, c)
	}
	if len(ctxs) < min {
		if requireGPU() && len(info.Devices) >= min {
			t.Fatalf("GPIPE_REQUIRE_GPU=1: %d GPUs, but only %d usable", len(info.Devices), len(ctxs))
		}
		t.Skipf("%d usable GPUs, the test needs %d", len(ctxs), min)
	}
	return ctxs
}

func TestPeerCopyOneGPU(t *testing.T) {
	c := testContext(t)
	s := newStream(t, c)
	const n = 1<<20 + 12
	src := alloc64(t, c, n)
	dst := alloc64(t, c, n)
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + i>>11)
	}
	must(t, src.CopyFromHost(s, want))
	must(t, dst.Memset8(s, 0xA5))
	// Whole, then a part at odd offsets, on the stream and on the default.
	must(t, CopyPeer(s, dst.Ptr(), c, src.Ptr(), c, n))
	got := make([]byte, n)
	must(t, dst.CopyToHost(s, got))
	checkBytes(t, "CopyPeer within one GPU", got, want)

	must(t, dst.Memset8(s, 0xA5))
	must(t, s.Synchronize())
	must(t, CopyPeer(nil, dst.Ptr()+3, c, src.Ptr()+1001, c, 4093))
	must(t, c.Synchronize())
	must(t, dst.CopyToHost(s, got))
	part := make([]byte, n)
	for i := range part {
		part[i] = 0xA5
	}
	copy(part[3:3+4093], want[1001:])
	checkBytes(t, "CopyPeer of a part within one GPU", got, part)
}

func TestPeerCopyTwoGPUs(t *testing.T) {
	ctxs := usableContexts(t, 2)
	const n = 3<<20 + 5
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*13 + i>>9)
	}
	for _, pair := range [][2]int{{0, 1}, {1, 0}} {
		a, b := ctxs[pair[0]], ctxs[pair[1]]
		name := fmt.Sprintf("GPU %d to GPU %d", a.dev.Ordinal, b.dev.Ordinal)
		can, err := CanAccessPeer(a.dev, b.dev)
		must(t, err)
		link, err := P2PLink(a.dev, b.dev)
		must(t, err)
		t.Logf("%s: can access %v, %+v", name, can, link)
		if link.Access != can {
			t.Errorf("%s: P2PLink access %v, CanAccessPeer %v", name, link.Access, can)
		}
		// The copies run without peer access (staged by the driver), then
		// with it where the GPUs have it.
		for _, enabled := range []bool{false, true} {
			if enabled {
				if !can {
					t.Logf("%s: no peer access", name)
					continue
				}
				must(t, a.EnablePeerAccess(b))
				must(t, a.EnablePeerAccess(b)) // already enabled: no error
				must(t, b.EnablePeerAccess(a))
			}
			src := alloc64(t, a, n)
			dst := alloc64(t, b, n)
			sa, sb := newStream(t, a), newStream(t, b)
			must(t, src.CopyFromHost(sa, want))
			// The copy on the destination's stream, then on the source's.
			for _, s := range []*Stream{sb, sa} {
				must(t, dst.Memset8(sb, 0x5A))
				must(t, sb.Synchronize())
				must(t, CopyPeer(s, dst.Ptr(), b, src.Ptr(), a, n))
				must(t, s.Synchronize())
				got := make([]byte, n)
				must(t, dst.CopyToHost(sb, got))
				checkBytes(t, fmt.Sprintf("%s, peer access %v, on GPU %d's stream", name, enabled, s.ctx.dev.Ordinal), got, want)
			}
		}
	}
}

func checkBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: byte %d is %#x, want %#x", what, i, got[i], want[i])
		}
	}
}

// ranks are NCCL communicators over every usable GPU, with a stream each.
type ranks struct {
	comms   []*Comm
	streams []*Stream
}

func ncclRanks(t *testing.T, min int) *ranks {
	t.Helper()
	ctxs := usableContexts(t, min)
	info, err := LoadNCCL()
	if err != nil {
		if requireGPU() && len(ctxs) >= 2 {
			t.Fatalf("GPIPE_REQUIRE_GPU=1 with %d GPUs but no NCCL: %v", len(ctxs), err)
		}
		t.Skipf("no NCCL: %v", err)
	}
	t.Logf("NCCL %s from %s, %d ranks", info.Version, info.Path, len(ctxs))
	comms, err := NewComms(ctxs)
	must(t, err)
	r := &ranks{comms: comms}
	t.Cleanup(func() {
		for _, c := range comms {
			must(t, c.Destroy())
		}
	})
	for i, c := range comms {
		if c.Rank() != i || c.Size() != len(ctxs) || c.Context() != ctxs[i] {
			t.Fatalf("comm %d: rank %d of %d on %v", i, c.Rank(), c.Size(), c.Context().dev)
		}
		r.streams = append(r.streams, newStream(t, c.Context()))
	}
	return r
}

// each runs fn for every rank in one NCCL group.
func (r *ranks) each(t *testing.T, fn func(i int, c *Comm, s *Stream) error) {
	t.Helper()
	must(t, NCCLGroup(func() error {
		for i, c := range r.comms {
			if err := fn(i, c, r.streams[i]); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, s := range r.streams {
		must(t, s.Synchronize())
	}
}

// buffers allocates one buffer of n elements of T a rank, filled by fill
// (nil: poisoned with 0xA5 bytes).
func buffers[T Scalar](t *testing.T, r *ranks, n int, fill func(rank, i int) T) []*DeviceBuffer {
	t.Helper()
	bufs := make([]*DeviceBuffer, len(r.comms))
	for k, c := range r.comms {
		b, err := AllocSlice[T](c.Context(), n)
		must(t, err)
		t.Cleanup(func() { must(t, b.Free()) })
		if fill == nil {
			must(t, b.Memset8(r.streams[k], 0xA5))
		} else {
			host := make([]T, n)
			for i := range host {
				host[i] = fill(k, i)
			}
			must(t, Upload(r.streams[k], b, host))
		}
		bufs[k] = b
	}
	return bufs
}

func download[T Scalar](t *testing.T, s *Stream, b *DeviceBuffer) []T {
	t.Helper()
	out := make([]T, Len[T](b))
	must(t, Download(s, out, b))
	return out
}

func checkEqual[T Scalar](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestNCCLAllGather(t *testing.T) {
	r := ncclRanks(t, 1)
	for _, count := range []int{1, 1000 + 3, 1 << 18} {
		seed := rand.Uint64()
		value := func(rank, i int) uint64 { return seed ^ uint64(rank)<<48 ^ uint64(i)*0x9E3779B97F4A7C15 }
		send := buffers(t, r, count, value)
		recv := buffers[uint64](t, r, count*len(r.comms), nil)
		r.each(t, func(k int, c *Comm, s *Stream) error {
			return c.AllGather(s, send[k].Ptr(), recv[k].Ptr(), int64(count), NCCLUint64)
		})
		want := make([]uint64, 0, count*len(r.comms))
		for rank := range r.comms {
			for i := 0; i < count; i++ {
				want = append(want, value(rank, i))
			}
		}
		for k := range r.comms {
			checkEqual(t, fmt.Sprintf("AllGather of %d on rank %d", count, k), download[uint64](t, r.streams[k], recv[k]), want)
		}
	}
}

func TestNCCLBroadcast(t *testing.T) {
	r := ncclRanks(t, 1)
	const count = 1<<16 + 1
	value := func(rank, i int) int32 { return int32(rank*1000003 - i*7) }
	send := buffers(t, r, count, value)
	for root := range r.comms {
		recv := buffers[int32](t, r, count, nil)
		r.each(t, func(k int, c *Comm, s *Stream) error {
			return c.Broadcast(s, send[k].Ptr(), recv[k].Ptr(), count, NCCLInt32, root)
		})
		want := make([]int32, count)
		for i := range want {
			want[i] = value(root, i)
		}
		for k := range r.comms {
			checkEqual(t, fmt.Sprintf("Broadcast from %d to rank %d", root, k), download[int32](t, r.streams[k], recv[k]), want)
		}
	}
}

func TestNCCLAllReduce(t *testing.T) {
	r := ncclRanks(t, 1)
	n := len(r.comms)
	const count = 1<<17 + 9
	seed := rand.Uint64()
	// Values that every order of reduction gives exactly: small integers,
	// also in float.
	small := func(rank, i int) int64 { return int64((uint64(i)*2654435761+uint64(rank)*97+seed)%2001) - 1000 }
	allReduce(t, r, NCCLInt32, NCCLSum, count, func(rank, i int) int32 { return int32(small(rank, i)) },
		func(a, b int32) int32 { return a + b })
	allReduce(t, r, NCCLInt64, NCCLMax, count, func(rank, i int) int64 { return small(rank, i) << 30 },
		func(a, b int64) int64 { return max(a, b) })
	allReduce(t, r, NCCLUint32, NCCLMin, count, func(rank, i int) uint32 { return uint32(small(rank, i) + 1000) },
		func(a, b uint32) uint32 { return min(a, b) })
	allReduce(t, r, NCCLUint64, NCCLProd, count, func(rank, i int) uint64 { return uint64(small(rank, i)+1000)%3 + 1 },
		func(a, b uint64) uint64 { return a * b })
	allReduce(t, r, NCCLFloat64, NCCLSum, count, func(rank, i int) float64 { return float64(small(rank, i)) / 4 },
		func(a, b float64) float64 { return a + b })
	allReduce(t, r, NCCLFloat32, NCCLMin, count, func(rank, i int) float32 { return float32(small(rank, i)) / 8 },
		func(a, b float32) float32 { return min(a, b) })
	allReduce(t, r, NCCLUint8, NCCLMax, count, func(rank, i int) uint8 { return uint8(small(rank, i)) },
		func(a, b uint8) uint8 { return max(a, b) })
	allReduce(t, r, NCCLInt8, NCCLSum, count, func(rank, i int) int8 { return int8(small(rank, i) % (128 / int64(n+1))) },
		func(a, b int8) int8 { return a + b })
}

func allReduce[T Scalar](t *testing.T, r *ranks, typ NCCLType, op NCCLOp, count int, value func(rank, i int) T, reduce func(a, b T) T) {
	t.Helper()
	var zero T
	if typ.Size() != int64(unsafe.Sizeof(zero)) {
		t.Fatalf("%v is %d bytes, NCCL type %d %d", reflect.TypeOf(zero), unsafe.Sizeof(zero), typ, typ.Size())
	}
	send := buffers(t, r, count, value)
	recv := buffers[T](t, r, count, nil)
	r.each(t, func(k int, c *Comm, s *Stream) error {
		return c.AllReduce(s, send[k].Ptr(), recv[k].Ptr(), int64(count), typ, op)
	})
	want := make([]T, count)
	for i := range want {
		want[i] = value(0, i)
		for rank := 1; rank < len(r.comms); rank++ {
			want[i] = reduce(want[i], value(rank, i))
		}
	}
	what := fmt.Sprintf("AllReduce (op %d) of %v", op, reflect.TypeOf(zero))
	for k := range r.comms {
		checkEqual(t, fmt.Sprintf("%s on rank %d", what, k), download[T](t, r.streams[k], recv[k]), want)
	}
	// In place, as the exchanges of the multi-GPU operators run it.
	r.each(t, func(k int, c *Comm, s *Stream) error {
		return c.AllReduce(s, send[k].Ptr(), send[k].Ptr(), int64(count), typ, op)
	})
	for k := range r.comms {
		checkEqual(t, fmt.Sprintf("%s in place on rank %d", what, k), download[T](t, r.streams[k], send[k]), want)
	}
}

// A ring: every rank sends to the next and receives from the previous
// (with one rank, itself).
func TestNCCLSendRecv(t *testing.T) {
	r := ncclRanks(t, 1)
	n := len(r.comms)
	const count = 1<<15 + 7
	value := func(rank, i int) float32 { return float32(rank*100000 + i) }
	send := buffers(t, r, count, value)
	recv := buffers[float32](t, r, count, nil)
	r.each(t, func(k int, c *Comm, s *Stream) error {
		if err := c.Send(s, send[k].Ptr(), count, NCCLFloat32, (k+1)%n); err != nil {
			return err
		}
		return c.Recv(s, recv[k].Ptr(), count, NCCLFloat32, (k+n-1)%n)
	})
	for k := range r.comms {
		want := make([]float32, count)
		for i := range want {
			want[i] = value((k+n-1)%n, i)
		}
		checkEqual(t, fmt.Sprintf("Recv on rank %d", k), download[float32](t, r.streams[k], recv[k]), want)
	}
}

// A failed call carries NCCL's texts. The argument checks here come first,
// so NCCL's own are reached directly: an element type NCCL does not have.
func TestNCCLErrors(t *testing.T) {
	r := ncclRanks(t, 1)
	c, s := r.comms[0], r.streams[0]
	err := ncclCall(c.ctx, "ncclAllGather", nccl.allGather, 0, 0, 16, 99, c.h, s.handle())
	t.Logf("ncclAllGather of type 99: %v", err)
	var ne *NCCLError
	if !errors.As(err, &ne) || ne.Code != 4 || ne.Desc == "" {
		t.Errorf("error %v: want ncclInvalidArgument with NCCL's description", err)
	}
	if len(r.comms) > 1 {
		if err := r.comms[1].AllGather(s, 0, 0, 1, NCCLInt32); err == nil {
			t.Error("AllGather on another GPU's stream accepted")
		}
	}
}
