// A small CUDA emulator for checking kernels on a machine without a GPU:
// each block of a launch runs on a pool of 256 OS threads, one block at a
// time, with __syncthreads a barrier over the block and the warp
// intrinsics (shuffles, ballots, __match_any_sync) exchanges through a
// barrier over the warp's 32 threads. __shared__ variables are statics
// (one block runs at a time). Atomics are std::atomic_ref. It runs the
// kernels as written, slowly: for small inputs only. Every lane of a warp
// must reach every warp intrinsic (gpipe's kernels call them with the full
// mask).
#pragma once

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__
#define __shared__ static

namespace emu {

struct Warp {
    std::barrier<> bar{32};
    uint64_t vals[32];
};

inline std::unique_ptr<std::barrier<>> block_barrier;
inline std::vector<std::unique_ptr<Warp>> warps;

inline Warp& warp() { return *warps[threadIdx.x / 32]; }
inline unsigned lane() { return threadIdx.x & 31u; }

// exchange publishes v for the warp and returns every lane's value.
template <typename T>
inline void publish(Warp& w, T v) {
    w.bar.arrive_and_wait();  // the last exchange's reads are done
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    w.vals[lane()] = bits;
    w.bar.arrive_and_wait();
}

template <typename T>
inline T read(Warp& w, unsigned l) {
    T v;
    std::memcpy(&v, &w.vals[l], sizeof(T));
    return v;
}

// Pool is the threads a block runs on, made once: thread t is always
// threadIdx.x t, and each block of a launch runs a job on all of them.
struct Pool {
    static constexpr unsigned threads = 256;
    std::vector<std::thread> ts;
    std::barrier<> start{threads + 1}, end{threads + 1};
    std::function<void()> job;

    Pool() {
        for (unsigned t = 0; t < threads; t++)
            ts.emplace_back([this, t] {
                threadIdx.x = t;
                for (;;) {
                    start.arrive_and_wait();
                    job();
                    end.arrive_and_wait();
                }
            });
        for (auto& t : ts) t.detach();
    }
};

inline Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: its threads run until exit
    return *p;
}

// Launch runs kernel(args...) over a grid of blocks of 256 threads, one
// block after the other.
template <typename... K, typename... A>
void launch(void (*kernel)(K...), unsigned blocks, unsigned threads, A... args) {
    if (threads != Pool::threads) {
        std::fprintf(stderr, "cuda_emu: blocks of %u threads; only %u are emulated\n", threads, Pool::threads);
        std::abort();
    }
    Pool& p = pool();
    gridDim.x = blocks;
    blockDim.x = threads;
    if (!block_barrier) {
        block_barrier = std::make_unique<std::barrier<>>(threads);
        for (unsigned w = 0; w < threads / 32; w++) warps.push_back(std::make_unique<Warp>());
    }
    for (unsigned b = 0; b < blocks; b++) {
        p.job = [&] {
            blockIdx.x = b;
            kernel(K(args)...);
        };
        p.start.arrive_and_wait();
        p.end.arrive_and_wait();
    }
}

}  // namespace emu

inline void __syncthreads() { emu::block_barrier->arrive_and_wait(); }
// A fence over all memory (common.cuh's last_block orders every thread's
// writes before its ticket).
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp().bar.arrive_and_wait(); }

template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    auto& w = emu::warp();
    emu::publish(w, v);
    unsigned l = emu::lane();
    unsigned src = l ^ (unsigned)mask;
    if ((src & ~(unsigned)(width - 1)) != (l & ~(unsigned)(width - 1))) src = l;
    return emu::read<T>(w, src);
}

template <typename T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    auto& w = emu::warp();
    emu::publish(w, v);
    unsigned l = emu::lane(), base = l & ~(unsigned)(width - 1);
    return (l - base) >= delta ? emu::read<T>(w, l - delta) : v;
}

template <typename T>
inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
    auto& w = emu::warp();
    emu::publish(w, v);
    unsigned base = emu::lane() & ~(unsigned)(width - 1);
    return emu::read<T>(w, base + ((unsigned)src & (unsigned)(width - 1)));
}

inline unsigned __ballot_sync(unsigned, int pred) {
    auto& w = emu::warp();
    emu::publish(w, (unsigned)(pred != 0));
    unsigned m = 0;
    for (unsigned l = 0; l < 32; l++)
        if (emu::read<unsigned>(w, l)) m |= 1u << l;
    return m;
}

template <typename T>
inline unsigned __match_any_sync(unsigned, T v) {
    auto& w = emu::warp();
    emu::publish(w, v);
    unsigned m = 0;
    for (unsigned l = 0; l < 32; l++)
        if (emu::read<T>(w, l) == v) m |= 1u << l;
    return m;
}

template <typename T>
inline T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <typename T>
inline T atomicOr(T* p, T v) { return std::atomic_ref<T>(*p).fetch_or(v); }
template <typename T>
inline T atomicMin(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
}
template <typename T>
inline T atomicMax(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v > old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
using std::isfinite;
