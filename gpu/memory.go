package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/bytesize"
)

// cuMemHostAlloc flags (cuda.h).
const (
	hostAllocPortable  = 0x1 // CU_MEMHOSTALLOC_PORTABLE: usable from every context
	hostAllocDeviceMap = 0x2 // CU_MEMHOSTALLOC_DEVICEMAP: mapped into the device address space
)

// DevicePtr is an address in the GPU's (unified) address space: a
// CUdeviceptr. It is a kernel argument of 8 bytes.
type DevicePtr uint64

// DeviceBuffer is memory on a GPU. A buffer from Alloc owns its memory and
// must be freed; a view from Slice or Module.Global does not.
//
// Copies and memsets take a stream and are queued on it. Where the host
// side of a copy is pinned memory (HostBuffer, PinnedAllocator) the copy is
// asynchronous: the host memory must stay untouched until the stream has
// been synchronized. Where it is ordinary Go memory the copy has finished
// when the call returns (the call synchronizes the stream), since Go memory
// can be reused or collected as soon as the caller lets go of it.
type DeviceBuffer struct {
	ctx   *Context
	ptr   DevicePtr
	size  int64
	owned bool
	freed bool
}

// Alloc allocates bytes of device memory (cuMemAlloc: 256-byte aligned,
// not zeroed). Zero bytes gives an empty buffer. Running out of memory is a
// usererr.Backend error that wraps the driver's *Error.
func (c *Context) Alloc(bytes int64) (*DeviceBuffer, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("gpu: Alloc of %d bytes", bytes)
	}
	b := &DeviceBuffer{ctx: c, size: bytes, owned: true}
	if bytes == 0 {
		return b, nil
	}
	if err := ctxCall(c, "cuMemAlloc_v2", drv.memAlloc, uintptr(unsafe.Pointer(&b.ptr)), uintptr(bytes)); err != nil {
		if IsCode(err, CodeOutOfMemory) {
			free, _, _ := c.MemInfo()
			return nil, backendError(fmt.Sprintf("out of GPU memory: cannot allocate %s on %s (%s free)",
				bytesize.Format(bytes), c.dev.Name, bytesize.Format(free)), fixNoGPU, err)
		}
		return nil, err
	}
	c.allocated.Add(bytes)
	return b, nil
}

// Ptr is the buffer's device address, for kernel arguments; 0 for a nil
// buffer (an absent optional array), as Launch passes a nil *DeviceBuffer.
func (b *DeviceBuffer) Ptr() DevicePtr {
	if b == nil {
		return 0
	}
	return b.ptr
}

// Size is the buffer's length in bytes.
func (b *DeviceBuffer) Size() int64 { return b.size }

// Context is the buffer's context.
func (b *DeviceBuffer) Context() *Context { return b.ctx }

// Slice is a view of n bytes from offset off. It shares b's memory, does
// not own it, and must not be used after b is freed.
func (b *DeviceBuffer) Slice(off, n int64) (*DeviceBuffer, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off+n > b.size {
		return nil, fmt.Errorf("gpu: Slice(%d, %d) of a %d-byte buffer", off, n, b.size)
	}
	return &DeviceBuffer{ctx: b.ctx, ptr: b.ptr + DevicePtr(off), size: n}, nil
}

// Free releases the buffer's memory. It waits for the GPU to finish work
// that may use it, as cuMemFree does. Freeing twice does nothing; freeing a
// view is an error.
func (b *DeviceBuffer) Free() error {
	if !b.owned {
		return errors.New("gpu: Free of a view (Slice or Global) of device memory")
	}
	if b.freed {
		return nil
	}
	b.freed = true
	if b.size == 0 {
		return nil
	}
	err := ctxCall(b.ctx, "cuMemFree_v2", drv.memFree, uintptr(b.ptr))
	b.ctx.allocated.Add(-b.size)
	b.ptr, b.size = 0, 0
	return err
}

func (b *DeviceBuffer) usable() error {
	if b == nil || b.freed {
		return errDestroyed
	}
	return nil
}

// Memset8 sets every byte of the buffer to v, on stream s.
func (b *DeviceBuffer) Memset8(s *Stream, v byte) error {
	if err := b.check(s, 0); err != nil || b.size == 0 {
		return err
	}
	return ctxCall(b.ctx, "cuMemsetD8Async", drv.memsetD8Async, uintptr(b.ptr), uintptr(v), uintptr(b.size), s.handle())
}

// Memset32 sets every 32-bit word of the buffer to v, on stream s. The
// buffer's address and size must be multiples of 4.
func (b *DeviceBuffer) Memset32(s *Stream, v uint32) error {
	if err := b.check(s, 0); err != nil || b.size == 0 {
		return err
	}
	if b.size%4 != 0 || b.ptr%4 != 0 {
		return fmt.Errorf("gpu: Memset32 of %d bytes at %#x: address and size must be multiples of 4", b.size, uint64(b.ptr))
	}
	return ctxCall(b.ctx, "cuMemsetD32Async", drv.memsetD32Async, uintptr(b.ptr), uintptr(v), uintptr(b.size/4), s.handle())
}

// check is the common validation of an operation of n bytes on stream s.
func (b *DeviceBuffer) check(s *Stream, n int64) error {
	if err := b.usable(); err != nil {
		return err
	}
	if n > b.size {
		return fmt.Errorf("gpu: copy of %d bytes into or out of a %d-byte device buffer", n, b.size)
	}
	return sameContext(b.ctx, s)
}

// CopyFromHost copies src to the start of the buffer, on stream s. See
// DeviceBuffer for when the copy is asynchronous.
func (b *DeviceBuffer) CopyFromHost(s *Stream, src []byte) error {
	n := int64(len(src))
	if err := b.check(s, n); err != nil || n == 0 {
		return err
	}
	pinned := IsPinned(src)
	if err := b.ctx.bind(); err != nil {
		return err
	}
	defer b.ctx.unbind()
	if r := ccall(drv.memcpyHtoDAsync, uintptr(b.ptr), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(n), s.handle()); r != success {
		return newError("cuMemcpyHtoDAsync_v2", r)
	}
	if !pinned {
		if r := ccall(drv.streamSynchronize, s.handle()); r != success {
			return newError("cuStreamSynchronize", r)
		}
	}
	runtime.KeepAlive(src)
	return nil
}

// CopyToHost copies the first len(dst) bytes of the buffer to dst, on
// stream s. See DeviceBuffer for when the copy is asynchronous.
func (b *DeviceBuffer) CopyToHost(s *Stream, dst []byte) error {
	n := int64(len(dst))
	if err := b.check(s, n); err != nil || n == 0 {
		return err
	}
	pinned := IsPinned(dst)
	if err := b.ctx.bind(); err != nil {
		return err
	}
	defer b.ctx.unbind()
	if r := ccall(drv.memcpyDtoHAsync, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(b.ptr), uintptr(n), s.handle()); r != success {
		return newError("cuMemcpyDtoHAsync_v2", r)
	}
	if !pinned {
		if r := ccall(drv.streamSynchronize, s.handle()); r != success {
			return newError("cuStreamSynchronize", r)
		}
	}
	runtime.KeepAlive(dst)
	return nil
}

// CopyFromDevice copies all of src to the start of the buffer, on stream s
// (which must belong to b's context). Asynchronous.
func (b *DeviceBuffer) CopyFromDevice(s *Stream, src *DeviceBuffer) error {
	if err := src.usable(); err != nil {
		return err
	}
	if err := b.check(s, src.size); err != nil || src.size == 0 {
		return err
	}
	return ctxCall(b.ctx, "cuMemcpyDtoDAsync_v2", drv.memcpyDtoDAsync, uintptr(b.ptr), uintptr(src.ptr), uintptr(src.size), s.handle())
}

// Scalar is an element type that device buffers hold and copy: plain
// numbers, no Go pointers.
type Scalar interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64 | ~uintptr
}

// AllocSlice allocates room for n elements of T.
func AllocSlice[T Scalar](c *Context, n int) (*DeviceBuffer, error) {
	var zero T
	return c.Alloc(int64(n) * int64(unsafe.Sizeof(zero)))
}

// Len is the number of T that fit in b.
func Len[T Scalar](b *DeviceBuffer) int {
	var zero T
	return int(b.size / int64(unsafe.Sizeof(zero)))
}

// Upload copies src to the start of dst, on stream s (see DeviceBuffer for
// when it is asynchronous).
func Upload[T Scalar](s *Stream, dst *DeviceBuffer, src []T) error {
	return dst.CopyFromHost(s, alloc.Bytes(src))
}

// Download copies the first len(dst) elements of src to dst, on stream s
// (see DeviceBuffer for when it is asynchronous).
func Download[T Scalar](s *Stream, dst []T, src *DeviceBuffer) error {
	return src.CopyToHost(s, alloc.Bytes(dst))
}

// UploadNew allocates a buffer for src and copies src into it, on stream s.
func UploadNew[T Scalar](c *Context, s *Stream, src []T) (*DeviceBuffer, error) {
	b, err := AllocSlice[T](c, len(src))
	if err != nil {
		return nil, err
	}
	if err := Upload(s, b, src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// HostBuffer is pinned (page-locked) host memory from cuMemHostAlloc,
// portable to every context and mapped into the device address space.
// Copies between it and the GPU run at full bus speed and asynchronously.
// It is not Go memory: free it with Free, and do not use Bytes after.
type HostBuffer struct {
	ctx *Context
	p   unsafe.Pointer
	n   int
}

// AllocHost allocates bytes of pinned host memory (page aligned, not
// zeroed).
func (c *Context) AllocHost(bytes int) (*HostBuffer, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("gpu: AllocHost of %d bytes", bytes)
	}
	h := &HostBuffer{ctx: c, n: bytes}
	if bytes == 0 {
		return h, nil
	}
	p, err := c.hostAlloc(bytes)
	if err != nil {
		return nil, err
	}
	h.p = p
	return h, nil
}

// Bytes is the buffer's memory.
func (h *HostBuffer) Bytes() []byte {
	if h.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(h.p), h.n)
}

// Size is the buffer's length in bytes.
func (h *HostBuffer) Size() int { return h.n }

// DevicePtr is the address kernels use to read and write the buffer
// directly over the bus (zero-copy). With unified addressing it equals the
// host address.
func (h *HostBuffer) DevicePtr() (DevicePtr, error) {
	if h.p == nil {
		return 0, errDestroyed
	}
	if drv.memHostGetDevicePointer == 0 {
		return DevicePtr(uintptr(h.p)), nil
	}
	var d DevicePtr
	err := ctxCall(h.ctx, "cuMemHostGetDevicePointer_v2", drv.memHostGetDevicePointer,
		uintptr(unsafe.Pointer(&d)), uintptr(h.p), 0)
	return d, err
}

// Free releases the memory; Bytes must not be used after. Freeing twice
// does nothing.
func (h *HostBuffer) Free() error {
	if h.p == nil {
		return nil
	}
	p := h.p
	h.p, h.n = nil, 0
	return h.ctx.hostFree(p)
}

// hostAlloc pins n bytes with cuMemHostAlloc and registers them as pinned.
func (c *Context) hostAlloc(n int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := ctxCall(c, "cuMemHostAlloc", drv.memHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n),
		hostAllocPortable|hostAllocDeviceMap)
	if err != nil {
		if IsCode(err, CodeOutOfMemory) {
			return nil, backendError(fmt.Sprintf("cannot pin %s of host memory for the GPU", bytesize.Format(int64(n))),
				"lower the memory in use (fewer or smaller row groups at a time), or "+fixNoGPU, err)
		}
		return nil, err
	}
	registerPinned(p, n)
	return p, nil
}

// hostFree unregisters and frees memory from hostAlloc.
func (c *Context) hostFree(p unsafe.Pointer) error {
	unregisterPinned(p)
	return ctxCall(c, "cuMemFreeHost", drv.memFreeHost, uintptr(p))
}

// pinnedRanges are the pinned host allocations of this package, sorted
// and disjoint, so that copies know which host memory is pinned.
var pinnedRanges struct {
	sync.RWMutex
	r []pinnedRange
}

type pinnedRange struct{ start, end uintptr }

func registerPinned(p unsafe.Pointer, n int) {
	start := uintptr(p)
	pinnedRanges.Lock()
	defer pinnedRanges.Unlock()
	r := pinnedRanges.r
	i := sort.Search(len(r), func(i int) bool { return r[i].start >= start })
	r = append(r, pinnedRange{})
	copy(r[i+1:], r[i:])
	r[i] = pinnedRange{start, start + uintptr(n)}
	pinnedRanges.r = r
}

func unregisterPinned(p unsafe.Pointer) {
	start := uintptr(p)
	pinnedRanges.Lock()
	defer pinnedRanges.Unlock()
	r := pinnedRanges.r
	i := sort.Search(len(r), func(i int) bool { return r[i].start >= start })
	if i < len(r) && r[i].start == start {
		pinnedRanges.r = append(r[:i], r[i+1:]...)
	}
}

// IsPinned reports whether all of b lies in pinned memory that this
// package allocated (HostBuffer, PinnedAllocator): copies from and to it
// are asynchronous.
func IsPinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end := start + uintptr(len(b))
	pinnedRanges.RLock()
	defer pinnedRanges.RUnlock()
	r := pinnedRanges.r
	i := sort.Search(len(r), func(i int) bool { return r[i].start > start }) - 1
	return i >= 0 && end <= r[i].end
}
