package gpu

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/gpipe/gpipe/internal/usererr"
)

// MinDriverVersion is the oldest driver API version gpipe accepts, as
// cuDriverGetVersion reports it (1000*major + 10*minor): CUDA 12.0, that is
// driver 525 or later.
const MinDriverVersion = 12000

// driverAPI holds the driver's function addresses, bound once by load.
type driverAPI struct {
	lib     uintptr
	version int

	init, driverGetVersion, getErrorName, getErrorString uintptr

	deviceGetCount, deviceGet, deviceGetName, deviceTotalMem, deviceGetAttribute, deviceGetPCIBusID uintptr

	primaryCtxRetain, primaryCtxRelease, ctxSetCurrent, ctxSynchronize uintptr

	memGetInfo, memAlloc, memFree, memsetD8Async, memsetD32Async                    uintptr
	memcpyHtoDAsync, memcpyDtoHAsync, memcpyDtoDAsync                               uintptr
	memHostAlloc, memFreeHost, memHostGetDevicePointer                              uintptr
	streamCreate, streamDestroy, streamSynchronize, streamWaitEvent, streamQuery    uintptr
	eventCreate, eventRecord, eventSynchronize, eventQuery, eventElapsed, eventFree uintptr

	moduleLoadDataEx, moduleUnload, moduleGetFunction, moduleGetGlobal uintptr
	funcGetAttribute, funcSetAttribute, funcGetParamInfo, launchKernel uintptr
	occupancyMaxActiveBlocks                                           uintptr
	eventElapsedName                                                   string

	// Peer access between GPUs (peer.go): optional, so that a driver
	// without them still loads; peer.go says which is missing when called.
	deviceCanAccessPeer, deviceGetP2PAttribute, ctxEnablePeerAccess, memcpyPeerAsync uintptr
}

// symbol is one driver function to bind: the first of names the library
// exports. The names are the versioned ones cuda.h maps the API names to
// (cuMemAlloc is cuMemAlloc_v2, and so on), which CUDA 12 and 13 export.
type symbol struct {
	to       *uintptr
	names    []string
	optional bool
}

func (d *driverAPI) symbols() []symbol {
	req := func(to *uintptr, names ...string) symbol { return symbol{to: to, names: names} }
	opt := func(to *uintptr, names ...string) symbol { return symbol{to: to, names: names, optional: true} }
	return []symbol{
		req(&d.deviceGetCount, "cuDeviceGetCount"),
		req(&d.deviceGet, "cuDeviceGet"),
		req(&d.deviceGetName, "cuDeviceGetName"),
		req(&d.deviceTotalMem, "cuDeviceTotalMem_v2"),
		req(&d.deviceGetAttribute, "cuDeviceGetAttribute"),
		opt(&d.deviceGetPCIBusID, "cuDeviceGetPCIBusId"),
		req(&d.primaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		req(&d.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
		req(&d.ctxSetCurrent, "cuCtxSetCurrent"),
		req(&d.ctxSynchronize, "cuCtxSynchronize"),
		req(&d.memGetInfo, "cuMemGetInfo_v2"),
		req(&d.memAlloc, "cuMemAlloc_v2"),
		req(&d.memFree, "cuMemFree_v2"),
		req(&d.memsetD8Async, "cuMemsetD8Async"),
		req(&d.memsetD32Async, "cuMemsetD32Async"),
		req(&d.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
		req(&d.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
		req(&d.memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
		req(&d.memHostAlloc, "cuMemHostAlloc"),
		req(&d.memFreeHost, "cuMemFreeHost"),
		opt(&d.memHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
		req(&d.streamCreate, "cuStreamCreate"),
		req(&d.streamDestroy, "cuStreamDestroy_v2"),
		req(&d.streamSynchronize, "cuStreamSynchronize"),
		req(&d.streamWaitEvent, "cuStreamWaitEvent"),
		req(&d.streamQuery, "cuStreamQuery"),
		req(&d.eventCreate, "cuEventCreate"),
		req(&d.eventRecord, "cuEventRecord"),
		req(&d.eventSynchronize, "cuEventSynchronize"),
		req(&d.eventQuery, "cuEventQuery"),
		// CUDA 12.8 added cuEventElapsedTime_v2 and CUDA 13 headers map the
		// API name to it; older drivers have only the first version. Same
		// signature: (float *ms, CUevent start, CUevent end).
		req(&d.eventElapsed, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
		req(&d.eventFree, "cuEventDestroy_v2"),
		req(&d.moduleLoadDataEx, "cuModuleLoadDataEx"),
		req(&d.moduleUnload, "cuModuleUnload"),
		req(&d.moduleGetFunction, "cuModuleGetFunction"),
		req(&d.moduleGetGlobal, "cuModuleGetGlobal_v2"),
		req(&d.funcGetAttribute, "cuFuncGetAttribute"),
		req(&d.funcSetAttribute, "cuFuncSetAttribute"),
		// CUDA 12.4 and later: parameter offsets and sizes, used to check
		// Launch arguments against the kernel's signature.
		opt(&d.funcGetParamInfo, "cuFuncGetParamInfo"),
		req(&d.launchKernel, "cuLaunchKernel"),
		req(&d.occupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
		opt(&d.deviceCanAccessPeer, "cuDeviceCanAccessPeer"),
		opt(&d.deviceGetP2PAttribute, "cuDeviceGetP2PAttribute"),
		opt(&d.ctxEnablePeerAccess, "cuCtxEnablePeerAccess"),
		opt(&d.memcpyPeerAsync, "cuMemcpyPeerAsync"),
	}
}

var (
	drv      driverAPI
	loadOnce sync.Once
	loaded   *Info
	loadErr  error
)

// Available loads the NVIDIA driver (once; later calls return the same
// answer) and lists its GPUs. The error, a usererr.Backend error, says why
// no GPU is usable: no driver library, a driver too old, a driver that
// fails to initialize, or no GPUs.
func Available() (*Info, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

// Info is the loaded driver and its GPUs.
type Info struct {
	// DriverVersion is the CUDA version the driver supports, as
	// cuDriverGetVersion reports it: 13000 for CUDA 13.0.
	DriverVersion int
	// Devices are the GPUs the driver shows this process (CUDA_VISIBLE_DEVICES
	// applies), in ordinal order.
	Devices []*Device
}

// DriverVersionString is the CUDA version the driver supports: "13.0".
func (i *Info) DriverVersionString() string { return versionString(i.DriverVersion) }

func versionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

const fixNoGPU = "use --backend cpu"

func load() (*Info, error) {
	if !platformSupported {
		_, err := dlopen(libcudaName)
		return nil, backendError(fmt.Sprintf("no GPU backend on this platform (%v)", err), fixNoGPU, err)
	}
	lib, err := dlopen(libcudaName)
	if err != nil {
		return nil, backendError(fmt.Sprintf("no NVIDIA driver found (%s not loadable: %v)", libcudaName, err),
			"install the NVIDIA driver, or "+fixNoGPU, err)
	}
	d := driverAPI{lib: lib}
	for _, s := range []symbol{
		{to: &d.driverGetVersion, names: []string{"cuDriverGetVersion"}},
		{to: &d.init, names: []string{"cuInit"}},
		{to: &d.getErrorName, names: []string{"cuGetErrorName"}},
		{to: &d.getErrorString, names: []string{"cuGetErrorString"}},
	} {
		if *s.to = dlsym(lib, s.names[0]); *s.to == 0 {
			return nil, usererr.New(usererr.Backend,
				fmt.Sprintf("%s is not a usable NVIDIA driver (it has no %s)", libcudaName, s.names[0]),
				"reinstall the NVIDIA driver, or "+fixNoGPU)
		}
	}
	// The error functions work before cuInit; bind them now so that the
	// errors below carry CUDA names.
	drv.getErrorName, drv.getErrorString = d.getErrorName, d.getErrorString

	var version int32
	if r := ccall(d.driverGetVersion, uintptr(unsafe.Pointer(&version))); r != success {
		err := newError("cuDriverGetVersion", r)
		return nil, backendError(fmt.Sprintf("the NVIDIA driver does not report its version (%v)", err), fixNoGPU, err)
	}
	d.version = int(version)
	if d.version < MinDriverVersion {
		return nil, usererr.New(usererr.Backend,
			fmt.Sprintf("the NVIDIA driver supports CUDA %s, but gpipe needs CUDA %s or newer (driver 525 or later)",
				versionString(d.version), versionString(MinDriverVersion)),
			"update the NVIDIA driver, or "+fixNoGPU)
	}
	for _, s := range d.symbols() {
		for _, name := range s.names {
			if *s.to = dlsym(lib, name); *s.to != 0 {
				if s.to == &d.eventElapsed {
					d.eventElapsedName = name
				}
				break
			}
		}
		if *s.to == 0 && !s.optional {
			return nil, usererr.New(usererr.Backend,
				fmt.Sprintf("the NVIDIA driver (CUDA %s) lacks %s", versionString(d.version), s.names[0]),
				"update the NVIDIA driver, or "+fixNoGPU)
		}
	}
	if r := ccall(d.init, 0); r != success {
		return nil, initError(newError("cuInit", r))
	}
	var count int32
	if r := ccall(d.deviceGetCount, uintptr(unsafe.Pointer(&count))); r != success {
		err := newError("cuDeviceGetCount", r)
		return nil, backendError(fmt.Sprintf("the NVIDIA driver cannot count its GPUs (%v)", err), fixNoGPU, err)
	}
	if count == 0 {
		return nil, usererr.New(usererr.Backend, "the NVIDIA driver reports no GPU"+visibleDevicesNote(), fixNoGPU)
	}
	drv = d
	info := &Info{DriverVersion: d.version}
	for i := 0; i < int(count); i++ {
		dev, err := openDevice(i)
		if err != nil {
			return nil, err
		}
		info.Devices = append(info.Devices, dev)
	}
	return info, nil
}

// initError explains a failed cuInit.
func initError(e *Error) error {
	problem := fmt.Sprintf("the NVIDIA driver failed to initialize (%v)", e)
	switch e.Code {
	case CodeNoDevice:
		problem = fmt.Sprintf("no NVIDIA GPU found (%v)%s", e, visibleDevicesNote())
	case CodeStubLibrary:
		problem = fmt.Sprintf("%s is the CUDA toolkit's stub library, not the driver (%v)", libcudaName, e)
	case CodeInsufficientDriver:
		problem = fmt.Sprintf("the NVIDIA kernel module does not match the driver library (%v)", e)
	}
	return backendError(problem, "check the driver with nvidia-smi, or "+fixNoGPU, e)
}

func visibleDevicesNote() string {
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		return fmt.Sprintf(" (CUDA_VISIBLE_DEVICES=%q)", v)
	}
	return ""
}
