// Package gpu is the CUDA driver API, loaded at run time: devices, their
// primary contexts, streams, events, device buffers, pinned host buffers, an
// arrow memory.Allocator over pinned memory, module loading (PTX JIT with
// its log), kernel attributes, occupancy and kernel launch. It holds no
// algorithm logic; kernels/ holds the kernels and operators/ drives them.
//
// # Why purego
//
// gpipe is one CGO_ENABLED=0 binary that runs everywhere and uses an NVIDIA
// GPU where a driver is present. So nothing of CUDA is linked: Available
// opens libcuda.so.1 with dlopen (RTLD_NOW|RTLD_GLOBAL) through
// github.com/ebitengine/purego on first use, binds each function with
// Dlsym, and calls it with purego.SyscallN (the C calling convention,
// integer and pointer arguments only, which is all the driver API here
// needs). Without a driver, Available says why (no library, a driver older
// than CUDA 12.0, cuInit failing, no GPU) as a usererr.Backend error and the
// rest of gpipe runs on the CPU. Two consequences: the binary is dynamically
// linked against glibc's libc.so.6 and libdl.so.2 (purego's fake cgo needs
// them for dlopen, GPU or not), and the GPU backend exists on linux/amd64
// and linux/arm64 only (elsewhere Available says so).
//
// # Symbols
//
// The driver exports versioned names for functions whose ABI changed, and
// cuda.h maps the API names to them; this package binds those names
// directly, as the CUDA 12 and 13 drivers export them: cuInit,
// cuDriverGetVersion, cuGetErrorName, cuGetErrorString, cuDeviceGetCount,
// cuDeviceGet, cuDeviceGetName, cuDeviceTotalMem_v2, cuDeviceGetAttribute,
// cuDeviceGetPCIBusId (optional), cuDevicePrimaryCtxRetain,
// cuDevicePrimaryCtxRelease_v2, cuCtxSetCurrent, cuCtxSynchronize,
// cuMemGetInfo_v2, cuMemAlloc_v2, cuMemFree_v2, cuMemsetD8Async,
// cuMemsetD32Async, cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2,
// cuMemcpyDtoDAsync_v2, cuMemHostAlloc, cuMemFreeHost,
// cuMemHostGetDevicePointer_v2 (optional), cuStreamCreate,
// cuStreamDestroy_v2, cuStreamSynchronize, cuStreamQuery, cuStreamWaitEvent,
// cuEventCreate, cuEventRecord, cuEventSynchronize, cuEventQuery,
// cuEventElapsedTime_v2 (CUDA 12.8 and later; else cuEventElapsedTime),
// cuEventDestroy_v2, cuModuleLoadDataEx, cuModuleUnload,
// cuModuleGetFunction, cuModuleGetGlobal_v2, cuFuncGetAttribute,
// cuFuncSetAttribute, cuFuncGetParamInfo (optional, CUDA 12.4 and later:
// Launch checks its arguments against it), cuLaunchKernel and
// cuOccupancyMaxActiveBlocksPerMultiprocessor, and for work between GPUs
// (peer.go; optional, so that a driver without them still loads)
// cuDeviceCanAccessPeer, cuDeviceGetP2PAttribute, cuCtxEnablePeerAccess and
// cuMemcpyPeerAsync. The per-thread-default-stream
// variants (_ptsz, _ptds) are not used: stream 0 is the legacy default
// stream. cuOccupancyMaxPotentialBlockSize takes a C callback and is left
// out; Function.Occupancy and the device attributes give what it computes.
// Enum values (device and function attributes, JIT options, flags) are
// cuda.h's and are written next to their constants.
//
// # Threading model
//
// The driver keeps a current context per OS thread, and Go moves goroutines
// between threads at will. Each device has one Context, its primary
// context, retained on first use and kept for the life of the process
// (cuDevicePrimaryCtxRelease only undoes a failed start), shared by all
// goroutines. Every method that makes context-dependent calls locks its
// goroutine to its thread (runtime.LockOSThread, which nests), makes the
// context current there (cuCtxSetCurrent, a thread-local store), makes its
// calls, and unlocks. So calls from any number of goroutines, on any
// devices, are safe; the driver itself is thread-safe. No thread keeps a
// context that matters: code in the process that uses CUDA by other means
// must set its own. Objects (buffers, streams, events, modules) may be used
// from several goroutines at once, except that freeing or destroying one
// must not race with its use.
//
// Streams from NewStream are non-blocking (they do not synchronize with
// the legacy default stream); a nil *Stream means the default stream.
// Kernel launches and copies from and to pinned memory are asynchronous;
// copies from and to ordinary Go memory complete before they return (see
// DeviceBuffer), because the Go collector may reuse that memory as soon as
// the caller drops it.
//
// # Memory handed to the driver
//
// Pointers passed in a call are converted to uintptr in the call
// expression of a //go:uintptrescapes function (ccall, ctxCall), which keeps
// their objects alive and on the heap until the call returns. Where the
// driver reads Go memory that itself holds pointers — the kernelParams
// array of a launch, the option values of a module load — that memory is a
// heap object pinned with runtime.Pinner for the call, as the cgo rules ask.
// Pinned host memory (HostBuffer, PinnedAllocator) is C memory from
// cuMemHostAlloc, outside the Go heap, registered in a range table so that
// copies know they may run asynchronously.
//
// # NCCL
//
// The collectives between GPUs come from NCCL, loaded the same way and as
// lazily (nccl.go): LoadNCCL looks for libnccl.so.2 where $GPIPE_NCCL says,
// else through the loader, else in pip's NCCL wheels, and needs NCCL 2.18
// or newer. One process drives all the GPUs: NewComms makes one
// communicator over them (ncclCommInitAll) after forcing
// NCCL_NVLS_ENABLE=0, and NCCLGroup runs the calls of all ranks as one
// group on one locked thread. NCCL's calls return an *NCCLError carrying
// ncclGetErrorString and ncclGetLastError. docs/multi-gpu.md says why and
// how a run over several hosts would be launched.
//
// # Errors
//
// Every driver call's CUresult becomes an *Error (Op, Code, Name such as
// CUDA_ERROR_OUT_OF_MEMORY, the driver's description, and for module loads
// the JIT log); the package never panics on a driver failure. Errors a user
// can act on (no GPU, out of device or pinned memory, a graph too large)
// are usererr.Backend errors that wrap the *Error. After a sticky error
// (Error.Sticky: an illegal address or a failed kernel) the context is
// unusable and every later call fails; only a new process recovers.
package gpu
