package gpu

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// maxKernelParams bounds the arguments of one launch.
const maxKernelParams = 64

// paramBlock is the kernelParams array of one launch: ptrs[i] points at
// vals[i], which holds argument i in its low bytes (little endian, as on
// amd64 and arm64). cuLaunchKernel reads as many bytes from ptrs[i] as
// parameter i has and copies them before it returns.
//
// The block is Go heap memory (from a sync.Pool, so launches allocate
// nothing) passed to C while it holds Go pointers (ptrs into itself). The
// cgo rules allow that only for pinned memory, so Launch pins it with
// runtime.Pinner for the duration of the call: the collector then neither
// moves nor frees it, whatever a future collector does. (Today's collector
// never moves heap objects; only stacks move, which is why the block is not
// a local variable.)
type paramBlock struct {
	ptrs [maxKernelParams]unsafe.Pointer
	vals [maxKernelParams]uint64
	// structs holds the bytes of the arguments passed as structs (Args),
	// which ptrs[i] then points into for the launch.
	structs [maxStructBytes]byte
	pinner  runtime.Pinner
}

// maxStructBytes bounds the bytes of one launch's struct arguments: the
// 4 KiB every CUDA version takes as a kernel's parameters.
const maxStructBytes = 4096

var paramPool = sync.Pool{New: func() any {
	pb := new(paramBlock)
	for i := range pb.ptrs {
		pb.ptrs[i] = unsafe.Pointer(&pb.vals[i])
	}
	return pb
}}

// Dim is a one-dimensional grid or block: {x, 1, 1}.
func Dim(x uint32) [3]uint32 { return [3]uint32{x, 1, 1} }

// BlocksFor is the number of blocks of blockSize threads that cover n
// items: ceil(n / blockSize), and at least 1.
func BlocksFor(n, blockSize int) uint32 {
	if n <= 0 || blockSize <= 0 {
		return 1
	}
	return uint32((n + blockSize - 1) / blockSize)
}

// Launch queues kernel fn on stream s (nil: the default stream) with grid
// and block dimensions, sharedMem bytes of dynamic shared memory per block,
// and args as the kernel's parameters, in order. An argument is one of
//
//	DevicePtr, *DeviceBuffer, uintptr      8 bytes (a pointer parameter)
//	int64, uint64, float64                 8 bytes
//	int32, uint32, float32                 4 bytes
//	int16, uint16                          2 bytes
//	int8, uint8, bool                      1 byte
//	Args(&s)                               the bytes of struct s
//
// Go's int and uint are refused: their width says nothing about the
// kernel's. Where the driver reports the kernel's parameters (CUDA 12.4
// and later) their number and sizes are checked against args.
//
// Launch returns when the launch is queued. A fault inside the kernel shows
// up later, at a synchronization, as a sticky error (see Error.Sticky).
func Launch(fn *Function, grid, block [3]uint32, sharedMem uint32, s *Stream, args ...any) error {
	return launch(fn, false, grid, block, sharedMem, s, args)
}

// launch packs args and queues fn through cuLaunchKernel, or, cooperative,
// through cuLaunchCooperativeKernel (cooperative.go).
func launch(fn *Function, cooperative bool, grid, block [3]uint32, sharedMem uint32, s *Stream, args []any) error {
	if fn == nil || fn.h == 0 || fn.mod.h == 0 {
		return errDestroyed
	}
	c := fn.mod.ctx
	if err := sameContext(c, s); err != nil {
		return err
	}
	if err := fn.checkGeometry(grid, block, sharedMem); err != nil {
		return err
	}
	entry, op := drv.launchKernel, "cuLaunchKernel"
	if cooperative {
		var err error
		if entry, err = cooperativeEntry(); err != nil {
			return err
		}
		op = "cuLaunchCooperativeKernel"
	}
	pb, err := packParams(fn, args)
	if err != nil {
		return err
	}
	defer paramPool.Put(pb)
	defer pb.pointAtVals(len(args))
	pb.pinner.Pin(pb)
	defer pb.pinner.Unpin()
	if err := c.bind(); err != nil {
		return err
	}
	var r result
	if cooperative { // cuLaunchCooperativeKernel has no trailing "extra"
		r = ccall(entry, fn.h,
			uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
			uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
			uintptr(sharedMem), s.handle(), uintptr(unsafe.Pointer(&pb.ptrs[0])))
	} else {
		r = ccall(entry, fn.h,
			uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
			uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
			uintptr(sharedMem), s.handle(), uintptr(unsafe.Pointer(&pb.ptrs[0])), 0)
	}
	c.unbind()
	if r != success {
		e := newError(op, r)
		e.Target = fmt.Sprintf("%s, grid %v, block %v, shared %d", fn.name, grid, block, sharedMem)
		return e
	}
	return nil
}

// packParams is a parameter block holding args, checked against fn's
// parameters where the driver reports them; the caller points it back at
// its vals (pointAtVals) and puts it back in paramPool.
func packParams(fn *Function, args []any) (*paramBlock, error) {
	if len(args) > maxKernelParams {
		return nil, fmt.Errorf("gpu: kernel %s: %d arguments, at most %d", fn.name, len(args), maxKernelParams)
	}
	if fn.params != nil && len(args) != len(fn.params) {
		return nil, fmt.Errorf("gpu: kernel %s takes %d arguments, %d given", fn.name, len(fn.params), len(args))
	}
	pb := paramPool.Get().(*paramBlock)
	if err := pb.pack(fn, args); err != nil {
		pb.pointAtVals(len(args))
		paramPool.Put(pb)
		return nil, err
	}
	return pb, nil
}

// pack puts args into the block, checking each against the kernel's
// parameter sizes where the driver reports them.
func (pb *paramBlock) pack(fn *Function, args []any) error {
	used := 0
	for i, a := range args {
		var size int
		if st, ok := a.(structArg); ok {
			size = len(st.b)
			if used+size > maxStructBytes {
				return fmt.Errorf("gpu: kernel %s: struct arguments of more than %d bytes", fn.name, maxStructBytes)
			}
			copy(pb.structs[used:], st.b)
			pb.ptrs[i] = unsafe.Pointer(&pb.structs[used])
			used += (size + 7) &^ 7
		} else {
			v, n, err := packArg(a)
			if err != nil {
				return fmt.Errorf("gpu: kernel %s argument %d: %w", fn.name, i, err)
			}
			pb.vals[i], size = v, n
		}
		if fn.params != nil && fn.params[i] != size {
			return fmt.Errorf("gpu: kernel %s parameter %d is %d bytes, but argument %d is a %s (%d bytes)",
				fn.name, i, fn.params[i], i, argName(a), size)
		}
	}
	return nil
}

// pointAtVals points the first n parameters back at their vals slots, as
// a block from the pool expects.
func (pb *paramBlock) pointAtVals(n int) {
	for i := range n {
		pb.ptrs[i] = unsafe.Pointer(&pb.vals[i])
	}
}

// argName names an argument's type in errors.
func argName(a any) string {
	if st, ok := a.(structArg); ok {
		return st.name
	}
	return fmt.Sprintf("%T", a)
}

// checkGeometry turns the common launch mistakes into errors that say what
// is wrong, before the driver answers CUDA_ERROR_INVALID_VALUE.
func (f *Function) checkGeometry(grid, block [3]uint32, sharedMem uint32) error {
	dev := f.mod.ctx.dev
	threads := uint64(1)
	for i := 0; i < 3; i++ {
		if grid[i] == 0 || block[i] == 0 {
			return fmt.Errorf("gpu: kernel %s: grid %v and block %v must be at least 1 in every dimension", f.name, grid, block)
		}
		if dev.MaxGridDim[i] > 0 && uint64(grid[i]) > uint64(dev.MaxGridDim[i]) {
			return fmt.Errorf("gpu: kernel %s: grid %v exceeds the GPU's %v", f.name, grid, dev.MaxGridDim)
		}
		threads *= uint64(block[i])
	}
	if threads > uint64(f.attrs.MaxThreadsPerBlock) {
		return fmt.Errorf("gpu: kernel %s: block %v has %d threads, but the kernel launches with at most %d (it uses %d registers per thread)",
			f.name, block, threads, f.attrs.MaxThreadsPerBlock, f.attrs.NumRegs)
	}
	if int(sharedMem) > f.attrs.MaxDynamicShared {
		return fmt.Errorf("gpu: kernel %s: %d bytes of dynamic shared memory asked, at most %d; call SetMaxDynamicSharedMemory (the GPU allows %d per block less the kernel's static %d)",
			f.name, sharedMem, f.attrs.MaxDynamicShared, dev.SharedMemPerBlockOptin, f.attrs.SharedSizeBytes)
	}
	return nil
}

// packArg is a kernel argument's bits and size in bytes.
func packArg(a any) (uint64, int, error) {
	switch v := a.(type) {
	case DevicePtr:
		return uint64(v), 8, nil
	case *DeviceBuffer:
		if v == nil {
			return 0, 8, nil
		}
		if v.freed {
			return 0, 0, errDestroyed
		}
		return uint64(v.ptr), 8, nil
	case uintptr:
		return uint64(v), 8, nil
	case int64:
		return uint64(v), 8, nil
	case uint64:
		return v, 8, nil
	case float64:
		return math.Float64bits(v), 8, nil
	case int32:
		return uint64(uint32(v)), 4, nil
	case uint32:
		return uint64(v), 4, nil
	case float32:
		return uint64(math.Float32bits(v)), 4, nil
	case int16:
		return uint64(uint16(v)), 2, nil
	case uint16:
		return uint64(v), 2, nil
	case int8:
		return uint64(uint8(v)), 1, nil
	case uint8:
		return uint64(v), 1, nil
	case bool:
		if v {
			return 1, 1, nil
		}
		return 0, 1, nil
	case int, uint:
		return 0, 0, fmt.Errorf("a Go %T has no fixed width: pass int32 or int64 (uint32 or uint64) as the kernel declares it", a)
	}
	return 0, 0, fmt.Errorf("unsupported kernel argument type %T", a)
}
