package gpu

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// CUjit_option values (cuda.h). The options array of cuModuleLoadDataEx is
// an array of this enum (C int, 4 bytes); the values array is void*, where
// the size options carry the number itself, not a pointer to it.
const (
	jitInfoLogBuffer      = 3 // CU_JIT_INFO_LOG_BUFFER: char*
	jitInfoLogBufferSize  = 4 // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: unsigned int in, bytes used out
	jitErrorLogBuffer     = 5 // CU_JIT_ERROR_LOG_BUFFER: char*
	jitErrorLogBufferSize = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	jitLogSize            = 32 << 10
)

// CUfunction_attribute values (cuda.h).
const (
	funcAttrMaxThreadsPerBlock = 0
	funcAttrSharedSizeBytes    = 1
	funcAttrConstSizeBytes     = 2
	funcAttrLocalSizeBytes     = 3
	funcAttrNumRegs            = 4
	funcAttrPTXVersion         = 5
	funcAttrBinaryVersion      = 6
	funcAttrMaxDynamicShared   = 8
)

// Module is loaded GPU code: PTX that the driver compiled for this GPU, or
// a cubin/fatbin.
type Module struct {
	ctx *Context
	h   uintptr // CUmodule
	log string
}

// jitOptions is the option block of one module load: the option and value
// arrays and the two log buffers the driver writes into. It lives on the
// Go heap, pinned for the call, and holds no Go pointers (the values are
// uintptrs, since two of them are plain numbers).
type jitOptions struct {
	opts [4]int32
	vals [4]uintptr
	info [jitLogSize]byte
	errs [jitLogSize]byte
}

// LoadPTX JIT-compiles PTX text for c's GPU and loads it. A compilation
// failure is an *Error (CUDA_ERROR_INVALID_PTX and the like) whose Log holds
// the compiler's messages.
func (c *Context) LoadPTX(ptx string) (*Module, error) {
	img := make([]byte, len(ptx)+1) // the driver reads PTX up to a NUL
	copy(img, ptx)
	return c.loadImage(img)
}

// LoadModule loads a module image: PTX text, a cubin or a fatbin.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	img := make([]byte, len(image)+1)
	copy(img, image)
	return c.loadImage(img)
}

func (c *Context) loadImage(img []byte) (*Module, error) {
	jo := new(jitOptions)
	var pin runtime.Pinner
	pin.Pin(jo)
	defer pin.Unpin()
	jo.opts = [4]int32{jitInfoLogBuffer, jitInfoLogBufferSize, jitErrorLogBuffer, jitErrorLogBufferSize}
	jo.vals = [4]uintptr{
		uintptr(unsafe.Pointer(&jo.info[0])), jitLogSize - 1,
		uintptr(unsafe.Pointer(&jo.errs[0])), jitLogSize - 1,
	}
	m := &Module{ctx: c}
	err := ctxCall(c, "cuModuleLoadDataEx", drv.moduleLoadDataEx,
		uintptr(unsafe.Pointer(&m.h)), uintptr(unsafe.Pointer(&img[0])), uintptr(len(jo.opts)),
		uintptr(unsafe.Pointer(&jo.opts[0])), uintptr(unsafe.Pointer(&jo.vals[0])))
	runtime.KeepAlive(jo)
	runtime.KeepAlive(img)
	infoLog := strings.TrimSpace(cStringIn(jo.info[:]))
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Log = strings.TrimSpace(cStringIn(jo.errs[:]))
			if e.Log == "" {
				e.Log = infoLog
			}
		}
		return nil, err
	}
	m.log = infoLog
	return m, nil
}

// JITLog is what the JIT compiler said while loading the module (often
// empty).
func (m *Module) JITLog() string { return m.log }

// Unload releases the module; its functions and globals must not be used
// after. Unloading twice does nothing.
func (m *Module) Unload() error {
	if m.h == 0 {
		return nil
	}
	h := m.h
	m.h = 0
	return ctxCall(m.ctx, "cuModuleUnload", drv.moduleUnload, h)
}

// Function finds the kernel called name (its extern "C" or mangled name) and
// reads its attributes.
func (m *Module) Function(name string) (*Function, error) {
	if m.h == 0 {
		return nil, errDestroyed
	}
	cname, err := cString(name)
	if err != nil {
		return nil, err
	}
	f := &Function{mod: m, name: name}
	if err := m.ctx.bind(); err != nil {
		return nil, err
	}
	defer m.ctx.unbind()
	if r := ccall(drv.moduleGetFunction, uintptr(unsafe.Pointer(&f.h)), m.h, uintptr(unsafe.Pointer(&cname[0]))); r != success {
		e := newError("cuModuleGetFunction", r)
		e.Target = name
		return nil, e
	}
	if err := f.readAttributes(); err != nil {
		return nil, err
	}
	f.readParams()
	return f, nil
}

// Global is the module's __device__ (global) variable called name, as a
// view: copy to and from it like any device buffer.
func (m *Module) Global(name string) (*DeviceBuffer, error) {
	if m.h == 0 {
		return nil, errDestroyed
	}
	cname, err := cString(name)
	if err != nil {
		return nil, err
	}
	b := &DeviceBuffer{ctx: m.ctx}
	var size uint64
	if err := ctxCall(m.ctx, "cuModuleGetGlobal_v2", drv.moduleGetGlobal,
		uintptr(unsafe.Pointer(&b.ptr)), uintptr(unsafe.Pointer(&size)), m.h, uintptr(unsafe.Pointer(&cname[0]))); err != nil {
		if e, ok := err.(*Error); ok {
			e.Target = name
		}
		return nil, err
	}
	b.size = int64(size)
	return b, nil
}

// FuncAttributes are a compiled kernel's resource use and limits.
type FuncAttributes struct {
	NumRegs            int // registers per thread
	MaxThreadsPerBlock int // the largest block it can launch with
	SharedSizeBytes    int // static shared memory per block
	ConstSizeBytes     int
	LocalSizeBytes     int // local memory (spills) per thread
	PTXVersion         int // the virtual architecture it was compiled for: 80 for compute_80 PTX
	BinaryVersion      int // the SASS it runs as: 90 on an H100
	MaxDynamicShared   int // the dynamic shared memory a launch may ask for
}

// Function is a kernel in a loaded module.
type Function struct {
	mod    *Module
	h      uintptr // CUfunction
	name   string
	attrs  FuncAttributes
	params []int // parameter sizes in bytes; nil where the driver cannot say
}

// Name is the kernel's name.
func (f *Function) Name() string { return f.name }

// Attributes are the kernel's attributes, read when it was looked up (and
// after SetMaxDynamicSharedMemory).
func (f *Function) Attributes() FuncAttributes { return f.attrs }

// NumParams is the number of parameters the kernel takes, and whether the
// driver could say (CUDA 12.4 and later can).
func (f *Function) NumParams() (int, bool) { return len(f.params), f.params != nil }

// readAttributes reads f's attributes; c is bound.
func (f *Function) readAttributes() error {
	get := func(attr int) (int, error) {
		var v int32
		if r := ccall(drv.funcGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), f.h); r != success {
			e := newError("cuFuncGetAttribute", r)
			e.Target = f.name
			return 0, e
		}
		return int(v), nil
	}
	var err error
	for _, a := range []struct {
		attr int
		to   *int
	}{
		{funcAttrNumRegs, &f.attrs.NumRegs},
		{funcAttrMaxThreadsPerBlock, &f.attrs.MaxThreadsPerBlock},
		{funcAttrSharedSizeBytes, &f.attrs.SharedSizeBytes},
		{funcAttrConstSizeBytes, &f.attrs.ConstSizeBytes},
		{funcAttrLocalSizeBytes, &f.attrs.LocalSizeBytes},
		{funcAttrPTXVersion, &f.attrs.PTXVersion},
		{funcAttrBinaryVersion, &f.attrs.BinaryVersion},
		{funcAttrMaxDynamicShared, &f.attrs.MaxDynamicShared},
	} {
		if *a.to, err = get(a.attr); err != nil {
			return err
		}
	}
	return nil
}

// readParams asks the driver for the kernel's parameter sizes
// (cuFuncGetParamInfo, which answers CUDA_ERROR_INVALID_VALUE past the last
// parameter); c is bound. Without the call, or when it fails otherwise,
// params stays nil and Launch cannot check its arguments.
func (f *Function) readParams() {
	if drv.funcGetParamInfo == 0 {
		return
	}
	sizes := []int{}
	for i := 0; i <= maxKernelParams; i++ {
		var off, size uint64
		r := ccall(drv.funcGetParamInfo, f.h, uintptr(i), uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)))
		if r == CodeInvalidValue {
			break
		}
		if r != success {
			return
		}
		sizes = append(sizes, int(size))
	}
	f.params = sizes
}

// SetMaxDynamicSharedMemory lets launches of f ask for up to bytes of
// dynamic shared memory: needed above the default 48 KiB per block, up to
// the device's SharedMemPerBlockOptin less the kernel's static shared
// memory.
func (f *Function) SetMaxDynamicSharedMemory(bytes int) error {
	c := f.mod.ctx
	if err := c.bind(); err != nil {
		return err
	}
	defer c.unbind()
	if r := ccall(drv.funcSetAttribute, f.h, funcAttrMaxDynamicShared, uintptr(bytes)); r != success {
		e := newError("cuFuncSetAttribute", r)
		e.Target = fmt.Sprintf("%s, max dynamic shared memory %d", f.name, bytes)
		return e
	}
	return f.readAttributes()
}

// Occupancy is how many blocks of blockSize threads, each with dynSmem
// bytes of dynamic shared memory, fit on one SM at once.
func (f *Function) Occupancy(blockSize, dynSmem int) (int, error) {
	var n int32
	err := ctxCall(f.mod.ctx, "cuOccupancyMaxActiveBlocksPerMultiprocessor", drv.occupancyMaxActiveBlocks,
		uintptr(unsafe.Pointer(&n)), f.h, uintptr(blockSize), uintptr(dynSmem))
	if e, ok := err.(*Error); ok {
		e.Target = f.name
	}
	return int(n), err
}
