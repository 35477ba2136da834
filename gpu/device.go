package gpu

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/usererr"
)

// MinComputeCapability is the oldest GPU generation gpipe's kernels run on,
// as 10*major + minor: 80, Ampere. kernels/ ships SASS from sm_80 on and
// PTX for compute_80 (kernels/build.sh).
const MinComputeCapability = 80

// CUdevice_attribute values used here (cuda.h; unchanged from CUDA 11 to 13).
const (
	attrMaxThreadsPerBlock        = 1
	attrMaxBlockDimX              = 2
	attrMaxGridDimX               = 5
	attrMaxSharedMemoryPerBlock   = 8
	attrTotalConstantMemory       = 9
	attrWarpSize                  = 10
	attrMaxRegistersPerBlock      = 12
	attrClockRate                 = 13 // kHz
	attrMultiprocessorCount       = 16
	attrIntegrated                = 18
	attrCanMapHostMemory          = 19
	attrComputeMode               = 20
	attrConcurrentKernels         = 31
	attrECCEnabled                = 32
	attrPCIBusID                  = 33
	attrPCIDeviceID               = 34
	attrMemoryClockRate           = 36 // kHz
	attrGlobalMemoryBusWidth      = 37 // bits
	attrL2CacheSize               = 38
	attrMaxThreadsPerSM           = 39
	attrAsyncEngineCount          = 40
	attrUnifiedAddressing         = 41
	attrPCIDomainID               = 50
	attrComputeCapabilityMajor    = 75
	attrComputeCapabilityMinor    = 76
	attrMaxSharedMemoryPerSM      = 81
	attrMaxRegistersPerSM         = 82
	attrCooperativeLaunch         = 95
	attrMaxSharedMemoryPerBlockOp = 97 // opt-in
	attrMaxBlocksPerSM            = 106
	attrReservedSharedMemPerBlock = 111
)

// Attributes are a GPU's fixed properties, read once when the driver loads.
type Attributes struct {
	Ordinal      int    `json:"ordinal"`
	Name         string `json:"name"`
	TotalMemory  int64  `json:"total_memory"`
	ComputeMajor int    `json:"compute_major"`
	ComputeMinor int    `json:"compute_minor"`
	SMs          int    `json:"sms"`
	WarpSize     int    `json:"warp_size"`

	MaxThreadsPerBlock int    `json:"max_threads_per_block"`
	MaxThreadsPerSM    int    `json:"max_threads_per_sm"`
	MaxBlocksPerSM     int    `json:"max_blocks_per_sm"`
	MaxBlockDim        [3]int `json:"max_block_dim"`
	MaxGridDim         [3]int `json:"max_grid_dim"`

	// Shared memory, bytes: what a block gets without asking, what it can
	// get after Function.SetMaxDynamicSharedMemory (opt-in), what an SM has,
	// and what the driver keeps of it per block.
	SharedMemPerBlock         int `json:"shared_mem_per_block"`
	SharedMemPerBlockOptin    int `json:"shared_mem_per_block_optin"`
	SharedMemPerSM            int `json:"shared_mem_per_sm"`
	ReservedSharedMemPerBlock int `json:"reserved_shared_mem_per_block"`
	ConstantMemory            int `json:"constant_memory"`

	RegistersPerBlock int `json:"registers_per_block"`
	RegistersPerSM    int `json:"registers_per_sm"`

	L2CacheSize    int `json:"l2_cache_size"`
	MemoryBusWidth int `json:"memory_bus_width_bits"`
	MemoryClockKHz int `json:"memory_clock_khz"` // 0 where the driver does not say
	ClockKHz       int `json:"clock_khz"`        // 0 where the driver does not say

	PCIBusID          string `json:"pci_bus_id"` // "0000:3b:00.0"
	ConcurrentKernels bool   `json:"concurrent_kernels"`
	AsyncEngines      int    `json:"async_engines"` // copy engines
	UnifiedAddressing bool   `json:"unified_addressing"`
	CanMapHostMemory  bool   `json:"can_map_host_memory"`
	Integrated        bool   `json:"integrated"`
	ECC               bool   `json:"ecc"`
	CooperativeLaunch bool   `json:"cooperative_launch"`
	ComputeMode       int    `json:"compute_mode"` // 0 default, 2 prohibited, 3 exclusive process
}

// ComputeCapability is "9.0" for an H100.
func (a *Attributes) ComputeCapability() string {
	return fmt.Sprintf("%d.%d", a.ComputeMajor, a.ComputeMinor)
}

// Arch is the SASS architecture name: "sm_90" for an H100.
func (a *Attributes) Arch() string { return fmt.Sprintf("sm_%d%d", a.ComputeMajor, a.ComputeMinor) }

// PeakMemoryBandwidth is the theoretical memory bandwidth in bytes per
// second (double data rate times bus width), 0 when the clock is unknown.
func (a *Attributes) PeakMemoryBandwidth() float64 {
	return 2 * float64(a.MemoryClockKHz) * 1e3 * float64(a.MemoryBusWidth) / 8
}

// Device is one GPU.
type Device struct {
	Attributes
	handle int32 // CUdevice

	ctxOnce sync.Once
	ctx     *Context
	ctxErr  error
}

func (d *Device) String() string {
	return fmt.Sprintf("GPU %d: %s (sm_%d%d, %d SMs, %s)", d.Ordinal, d.Name,
		d.ComputeMajor, d.ComputeMinor, d.SMs, bytesize.Format(d.TotalMemory))
}

// Supported says, as a usererr.Backend error, why gpipe's kernels cannot run
// on d; nil when they can.
func (d *Device) Supported() error {
	if 10*d.ComputeMajor+d.ComputeMinor < MinComputeCapability {
		return usererr.New(usererr.Backend,
			fmt.Sprintf("GPU %d (%s) has compute capability %s, but gpipe's kernels need %d.%d (Ampere) or newer",
				d.Ordinal, d.Name, d.ComputeCapability(), MinComputeCapability/10, MinComputeCapability%10),
			fixNoGPU)
	}
	return nil
}

// Devices lists the GPUs (see Available).
func Devices() ([]*Device, error) {
	info, err := Available()
	if err != nil {
		return nil, err
	}
	return info.Devices, nil
}

// DeviceAt is the GPU with the given ordinal.
func DeviceAt(ordinal int) (*Device, error) {
	info, err := Available()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= len(info.Devices) {
		return nil, usererr.New(usererr.Backend,
			fmt.Sprintf("there is no GPU %d: this machine shows %d", ordinal, len(info.Devices)),
			fmt.Sprintf("pick a GPU from 0 to %d", len(info.Devices)-1))
	}
	return info.Devices[ordinal], nil
}

// Default is the context of the first GPU that gpipe's kernels run on.
func Default() (*Context, error) {
	info, err := Available()
	if err != nil {
		return nil, err
	}
	var first error
	for _, d := range info.Devices {
		if err := d.Supported(); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		return d.Context()
	}
	return nil, first
}

// openDevice opens GPU ordinal and reads its name, memory and attributes.
func openDevice(ordinal int) (*Device, error) {
	var h int32
	if r := ccall(drv.deviceGet, uintptr(unsafe.Pointer(&h)), uintptr(ordinal)); r != success {
		err := newError("cuDeviceGet", r)
		return nil, backendError(fmt.Sprintf("cannot open GPU %d (%v)", ordinal, err), fixNoGPU, err)
	}
	d := &Device{handle: h}
	d.Ordinal = ordinal
	var name [256]byte
	if r := ccall(drv.deviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)-1), uintptr(h)); r == success {
		d.Name = cStringIn(name[:])
	}
	if d.Name == "" {
		d.Name = fmt.Sprintf("GPU %d", ordinal)
	}
	var total uint64
	if r := ccall(drv.deviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(h)); r != success {
		err := newError("cuDeviceTotalMem_v2", r)
		return nil, backendError(fmt.Sprintf("cannot read GPU %d's memory size (%v)", ordinal, err), fixNoGPU, err)
	}
	d.TotalMemory = int64(total)
	r := attrReader{h: h}
	r.read(&d.Attributes)
	if r.err != nil {
		return nil, backendError(fmt.Sprintf("cannot read GPU %d's attributes (%v)", ordinal, r.err), fixNoGPU, r.err)
	}
	d.Attributes.PCIBusID = r.pciBusID()
	return d, nil
}

// attrReader reads the attributes of the device h. The attributes a launch
// depends on must be there; the rest are informative and read as 0 where a
// driver does not report them.
type attrReader struct {
	h   int32
	err error // the first required attribute that could not be read
}

// get is attribute attr, 0 where it cannot be read.
func (r *attrReader) get(attr int, required bool) int {
	var v int32
	if res := ccall(drv.deviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(r.h)); res != success {
		if required && r.err == nil {
			r.err = newError("cuDeviceGetAttribute", res)
		}
		return 0
	}
	return int(v)
}

// read fills a, all but its PCI bus id.
func (r *attrReader) read(a *Attributes) {
	a.ComputeMajor = r.get(attrComputeCapabilityMajor, true)
	a.ComputeMinor = r.get(attrComputeCapabilityMinor, true)
	a.SMs = r.get(attrMultiprocessorCount, true)
	a.WarpSize = r.get(attrWarpSize, true)
	a.MaxThreadsPerBlock = r.get(attrMaxThreadsPerBlock, true)
	a.MaxThreadsPerSM = r.get(attrMaxThreadsPerSM, true)
	a.MaxBlocksPerSM = r.get(attrMaxBlocksPerSM, false)
	for i := 0; i < 3; i++ {
		a.MaxBlockDim[i] = r.get(attrMaxBlockDimX+i, true)
		a.MaxGridDim[i] = r.get(attrMaxGridDimX+i, true)
	}
	a.SharedMemPerBlock = r.get(attrMaxSharedMemoryPerBlock, true)
	a.SharedMemPerBlockOptin = r.get(attrMaxSharedMemoryPerBlockOp, false)
	if a.SharedMemPerBlockOptin < a.SharedMemPerBlock {
		a.SharedMemPerBlockOptin = a.SharedMemPerBlock
	}
	a.SharedMemPerSM = r.get(attrMaxSharedMemoryPerSM, false)
	a.ReservedSharedMemPerBlock = r.get(attrReservedSharedMemPerBlock, false)
	a.ConstantMemory = r.get(attrTotalConstantMemory, false)
	a.RegistersPerBlock = r.get(attrMaxRegistersPerBlock, false)
	a.RegistersPerSM = r.get(attrMaxRegistersPerSM, false)
	a.L2CacheSize = r.get(attrL2CacheSize, false)
	a.MemoryBusWidth = r.get(attrGlobalMemoryBusWidth, false)
	a.MemoryClockKHz = r.get(attrMemoryClockRate, false)
	a.ClockKHz = r.get(attrClockRate, false)
	a.ConcurrentKernels = r.get(attrConcurrentKernels, false) != 0
	a.AsyncEngines = r.get(attrAsyncEngineCount, false)
	a.UnifiedAddressing = r.get(attrUnifiedAddressing, false) != 0
	a.CanMapHostMemory = r.get(attrCanMapHostMemory, false) != 0
	a.Integrated = r.get(attrIntegrated, false) != 0
	a.ECC = r.get(attrECCEnabled, false) != 0
	a.CooperativeLaunch = r.get(attrCooperativeLaunch, false) != 0
	a.ComputeMode = r.get(attrComputeMode, false)
}

// pciBusID is the device's PCI bus id, lower case ("0000:17:00.0"), from
// the driver's string where it has one, else from the attributes.
func (r *attrReader) pciBusID() string {
	var bus [32]byte
	if drv.deviceGetPCIBusID != 0 &&
		ccall(drv.deviceGetPCIBusID, uintptr(unsafe.Pointer(&bus[0])), uintptr(len(bus)-1), uintptr(r.h)) == success {
		return strings.ToLower(cStringIn(bus[:]))
	}
	return fmt.Sprintf("%04x:%02x:%02x.0", r.get(attrPCIDomainID, false), r.get(attrPCIBusID, false), r.get(attrPCIDeviceID, false))
}

// cStringIn is the NUL-terminated string at the start of b.
func cStringIn(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Context is a GPU's primary context: the one context the driver keeps per
// device and process, shared by everything in the process that uses that
// GPU. It is retained once, on first use, and kept for the life of the
// process. Its methods may be called from any goroutine.
type Context struct {
	dev       *Device
	h         uintptr // CUcontext
	allocated atomic.Int64
}

// Context retains d's primary context (once) and returns it.
func (d *Device) Context() (*Context, error) {
	d.ctxOnce.Do(func() { d.ctx, d.ctxErr = d.retain() })
	return d.ctx, d.ctxErr
}

func (d *Device) retain() (*Context, error) {
	var h uintptr
	if r := ccall(drv.primaryCtxRetain, uintptr(unsafe.Pointer(&h)), uintptr(d.handle)); r != success {
		err := newError("cuDevicePrimaryCtxRetain", r)
		fix := fixNoGPU
		if err.Code == CodeDeviceUnavailable {
			fix = "the GPU is in exclusive mode and in use by another process; wait for it, or " + fixNoGPU
		}
		return nil, backendError(fmt.Sprintf("cannot open GPU %d (%s): %v", d.Ordinal, d.Name, err), fix, err)
	}
	c := &Context{dev: d, h: h}
	if err := c.bind(); err != nil {
		ccall(drv.primaryCtxRelease, uintptr(d.handle))
		return nil, backendError(fmt.Sprintf("cannot use GPU %d (%s): %v", d.Ordinal, d.Name, err), fixNoGPU, err)
	}
	c.unbind()
	return c, nil
}

// Device is the context's GPU.
func (c *Context) Device() *Device { return c.dev }

// bind makes c the calling thread's current context and locks the calling
// goroutine to that thread; unbind undoes the lock. Every entry point that
// makes context-dependent driver calls brackets them with bind and unbind:
// the driver's current context is per OS thread, and a goroutine may move
// to another thread between any two statements unless it is locked.
// LockOSThread nests, so a caller that has locked its thread stays locked.
func (c *Context) bind() error {
	runtime.LockOSThread()
	if r := ccall(drv.ctxSetCurrent, c.h); r != success {
		runtime.UnlockOSThread()
		return newError("cuCtxSetCurrent", r)
	}
	return nil
}

func (c *Context) unbind() { runtime.UnlockOSThread() }

// ctxCall makes one driver call with c current. As with ccall, a pointer
// argument must be converted to uintptr in the call expression itself.
//
//go:uintptrescapes
func ctxCall(c *Context, op string, fn uintptr, args ...uintptr) error {
	if err := c.bind(); err != nil {
		return err
	}
	r := ccall(fn, args...)
	c.unbind()
	return check(op, r)
}

// Synchronize waits for all work on the GPU from this process's context.
func (c *Context) Synchronize() error {
	return ctxCall(c, "cuCtxSynchronize", drv.ctxSynchronize)
}

// MemInfo is the GPU's free and total memory now, in bytes.
func (c *Context) MemInfo() (free, total int64, err error) {
	var f, t uint64
	err = ctxCall(c, "cuMemGetInfo_v2", drv.memGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))
	return int64(f), int64(t), err
}

// Allocated is the device memory this process holds through c's Alloc, in
// bytes: a leak check for tests.
func (c *Context) Allocated() int64 { return c.allocated.Load() }

// MemInfo is the GPU's free and total memory now. It opens the device's
// context (and so takes the few hundred MiB a context costs) on first use.
func (d *Device) MemInfo() (free, total int64, err error) {
	c, err := d.Context()
	if err != nil {
		return 0, 0, err
	}
	return c.MemInfo()
}

// MemoryFits says, as a usererr.Backend error naming both sizes, whether
// bytes more of device memory are free on d now. Allocation granularity and
// fragmentation make the true limit a little lower; callers that want a
// margin add it to bytes.
func (d *Device) MemoryFits(bytes int64) error {
	free, _, err := d.MemInfo()
	if err != nil {
		return err
	}
	return memoryFits(bytes, free, d.Name)
}

func memoryFits(need, free int64, name string) error {
	if need <= free {
		return nil
	}
	return usererr.New(usererr.Backend,
		fmt.Sprintf("the graph needs %s on the GPU but %s has %s free", bytesize.Format(need), name, bytesize.Format(free)),
		fixNoGPU)
}
