// A stand-in for the NVIDIA driver (libcuda.so.1) that runs
// kernels/graph_build.cu's kernels on the CPU (cuda_emu.h), so that the Go
// host code of the GPU build (operators/gpu_build.go and its tests) runs
// end to end on a machine without a GPU:
//
//   kernels/emu/fake-driver.sh go test ./operators -run 'GPUBuild|GPUScan|...'
//
// "Device" memory is host memory, copies are memcpy, streams and events do
// nothing (every call completes before it returns), and a module load
// accepts any PTX: its functions are the emulated kernels found by name,
// with their parameter sizes (cuFuncGetParamInfo), so Launch checks the Go
// side's arguments as CUDA 12.4+ drivers let it. Kernels of other modules
// are not found. One emulated GPU with 2 SMs keeps the grids small. For
// tests only: slow, and blocks of 256 threads only.
#include "cuda_emu.h"

#include "../graph_build.cu"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

namespace {

const CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotFound = 500;

struct Kernel {
    std::string name;
    std::vector<size_t> sizes;
    std::function<void(unsigned grid, void** params)> run;
};

template <typename... A, size_t... I>
void run_with(void (*k)(A...), unsigned grid, void** p, std::index_sequence<I...>) {
    emu::launch(k, grid, 256u, *static_cast<A*>(p[I])...);
}

template <typename... A>
Kernel kernel(const char* name, void (*k)(A...)) {
    return Kernel{name, {sizeof(A)...}, [k](unsigned grid, void** p) { run_with(k, grid, p, std::index_sequence_for<A...>{}); }};
}

std::map<std::string, Kernel>& registry() {
    static auto* r = [] {
        auto* m = new std::map<std::string, Kernel>;
        auto add = [m](Kernel k) { (*m)[k.name] = std::move(k); };
#define K(name) add(kernel(#name, name))
#define KEYED(s)                 \
    K(gb_range_##s);             \
    K(gb_mark_##s);              \
    K(gb_endpoints_##s);         \
    K(gb_entries_bitmap_##s);    \
    K(gb_entries_sorted_##s)
        KEYED(i32);
        KEYED(i64);
        KEYED(u32);
        KEYED(u64);
        K(gb_bad_weight);
        K(gb_popc);
        K(gb_bits_to_keys);
        K(gb_heads);
        K(gb_compact);
        K(rs_hist);
        K(rs_scatter);
        K(scan_reduce);
        K(scan_down);
        K(gb_merge);
        K(gb_merge_weights);
        K(gb_weights_from_keys);
        K(gb_offsets);
        K(gb_swap_ends);
        K(gb_low_ends);
        K(gb_mark_targets);
        K(gb_degree_stats);
#undef KEYED
#undef K
        return m;
    }();
    return *r;
}

std::mutex launches;  // one kernel at a time: the emulator's shared state

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

extern "C" {

CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDriverGetVersion(int* v) {
    *v = 13000;
    return kSuccess;
}
CUresult cuGetErrorName(CUresult r, const char** s) {
    static thread_local std::string name;
    name = r == kOutOfMemory ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_" + std::to_string(r);
    *s = name.c_str();
    return kSuccess;
}
CUresult cuGetErrorString(CUresult, const char** s) {
    *s = "an error of the emulated driver (kernels/emu)";
    return kSuccess;
}

CUresult cuDeviceGetCount(int* n) {
    *n = 1;
    return kSuccess;
}
CUresult cuDeviceGet(int* d, int) {
    *d = 0;
    return kSuccess;
}
CUresult cuDeviceGetName(char* name, int len, int) {
    std::snprintf(name, len, "Emulated GPU (kernels/emu)");
    return kSuccess;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int) {
    *bytes = 16ull << 30;
    return kSuccess;
}
CUresult cuDeviceGetAttribute(int* v, int attr, int) {
    switch (attr) {
    case 1: case 2: *v = 1024; break;           // threads per block, block dim x
    case 3: case 4: *v = 64; break;             // block dims y, z
    case 5: *v = 2147483647; break;             // grid dim x
    case 6: case 7: *v = 65535; break;          // grid dims y, z
    case 8: *v = 48 << 10; break;               // shared memory per block
    case 10: *v = 32; break;                    // warp size
    case 16: *v = 2; break;                     // SMs
    case 19: case 31: case 41: *v = 1; break;   // can map host memory, concurrent kernels, unified addressing
    case 39: *v = 2048; break;                  // threads per SM
    case 75: *v = 9; break;                     // compute capability 9.0
    case 76: *v = 0; break;
    case 81: *v = 228 << 10; break;             // shared memory per SM
    case 97: *v = 227 << 10; break;             // opt-in shared memory per block
    case 106: *v = 32; break;                   // blocks per SM
    default: *v = 0;
    }
    return kSuccess;
}
CUresult cuDeviceGetPCIBusId(char* s, int len, int) {
    std::snprintf(s, len, "0000:00:00.0");
    return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(void** ctx, int) {
    *ctx = reinterpret_cast<void*>(0x1);
    return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
CUresult cuCtxSetCurrent(void*) { return kSuccess; }
CUresult cuCtxSynchronize() { return kSuccess; }

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
    *free = 12ull << 30;
    *total = 16ull << 30;
    return kSuccess;
}
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
    void* m = std::aligned_alloc(256, round_up(n ? n : 1, 256));
    if (!m) return kOutOfMemory;
    *p = reinterpret_cast<CUdeviceptr>(m);
    return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
    std::free(reinterpret_cast<void*>(p));
    return kSuccess;
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void*) {
    std::memset(reinterpret_cast<void*>(p), v, n);
    return kSuccess;
}
CUresult cuMemsetD32Async(CUdeviceptr p, unsigned v, size_t n, void*) {
    auto* w = reinterpret_cast<unsigned*>(p);
    for (size_t i = 0; i < n; i++) w[i] = v;
    return kSuccess;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void*) {
    std::memcpy(reinterpret_cast<void*>(d), s, n);
    return kSuccess;
}
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void*) {
    std::memcpy(d, reinterpret_cast<const void*>(s), n);
    return kSuccess;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void*) {
    std::memmove(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n);
    return kSuccess;
}
CUresult cuMemHostAlloc(void** p, size_t n, unsigned) {
    *p = std::aligned_alloc(4096, round_up(n ? n : 1, 4096));
    return *p ? kSuccess : kOutOfMemory;
}
CUresult cuMemFreeHost(void* p) {
    std::free(p);
    return kSuccess;
}
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* d, void* p, unsigned) {
    *d = reinterpret_cast<CUdeviceptr>(p);
    return kSuccess;
}

CUresult cuStreamCreate(void** s, unsigned) {
    *s = new int;
    return kSuccess;
}
CUresult cuStreamDestroy_v2(void* s) {
    delete static_cast<int*>(s);
    return kSuccess;
}
CUresult cuStreamSynchronize(void*) { return kSuccess; }
CUresult cuStreamWaitEvent(void*, void*, unsigned) { return kSuccess; }
CUresult cuStreamQuery(void*) { return kSuccess; }
CUresult cuEventCreate(void** e, unsigned) {
    *e = new int;
    return kSuccess;
}
CUresult cuEventRecord(void*, void*) { return kSuccess; }
CUresult cuEventSynchronize(void*) { return kSuccess; }
CUresult cuEventQuery(void*) { return kSuccess; }
CUresult cuEventElapsedTime_v2(float* ms, void*, void*) {
    *ms = 0.01f;
    return kSuccess;
}
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { return cuEventElapsedTime_v2(ms, a, b); }
CUresult cuEventDestroy_v2(void* e) {
    delete static_cast<int*>(e);
    return kSuccess;
}

CUresult cuModuleLoadDataEx(void** m, const void*, unsigned, int*, void**) {
    *m = reinterpret_cast<void*>(0x3);
    return kSuccess;
}
CUresult cuModuleUnload(void*) { return kSuccess; }
CUresult cuModuleGetFunction(void** f, void*, const char* name) {
    auto& r = registry();
    auto it = r.find(name);
    if (it == r.end()) return kNotFound;
    *f = &it->second;
    return kSuccess;
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr*, size_t*, void*, const char*) { return kNotFound; }
CUresult cuFuncGetAttribute(int* v, int attr, void*) {
    switch (attr) {
    case 0: *v = 1024; break;      // max threads per block
    case 4: *v = 32; break;        // registers
    case 5: case 6: *v = 90; break;  // PTX and binary versions
    case 8: *v = 48 << 10; break;  // max dynamic shared memory
    default: *v = 0;
    }
    return kSuccess;
}
CUresult cuFuncSetAttribute(void*, int, int) { return kSuccess; }
CUresult cuFuncGetParamInfo(void* f, size_t index, size_t* offset, size_t* size) {
    auto* k = static_cast<Kernel*>(f);
    if (index >= k->sizes.size()) return kInvalidValue;
    size_t off = 0;
    for (size_t i = 0; i <= index; i++) {
        off = round_up(off, k->sizes[i]);
        if (i < index) off += k->sizes[i];
    }
    *offset = off;
    *size = k->sizes[index];
    return kSuccess;
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void*, void** params, void**) {
    auto* k = static_cast<Kernel*>(f);
    if (gy != 1 || gz != 1 || bx != 256 || by != 1 || bz != 1 || shared != 0) {
        std::fprintf(stderr, "fake libcuda: %s launched with grid %u,%u,%u block %u,%u,%u shared %u: not emulated\n", k->name.c_str(), gx, gy,
                     gz, bx, by, bz, shared);
        return kInvalidValue;
    }
    std::lock_guard<std::mutex> lock(launches);
    k->run(gx, params);
    return kSuccess;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void*, int, size_t) {
    *n = 1;
    return kSuccess;
}

}  // extern "C"
