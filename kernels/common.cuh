// Pieces every gpipe kernel shares: the id types (they match convert.CSR:
// uint32 vertex ids, int64 edge offsets), the "no vertex" sentinel, and the
// virtual-warp helpers of the virtual warp-centric method (PPoPP'11 §3.1).
#pragma once

typedef unsigned int vid_t;
typedef long long eid_t;

#define GPIPE_NO_VERTEX 0xffffffffu
#define GPIPE_UNVISITED (-1)

// An array the kernel only reads, loaded through the read-only data path
// (ld.global.nc, what __ldg does). Kernels that take one argument struct
// lost that path: NVVM ignores __restrict__ on struct members and on locals
// copied from them, so it no longer proves the arrays unaliased (issue 35's
// ld.global.nc counts: scripts/ptx-loads.sh). One pointer, the layout of a
// `const T*`: the Go mirrors of the structs stay as they are. Only for an
// array no thread of the same launch writes: the nc path does not see such
// writes.
//
// The load is an asm that is not volatile rather than __ldg, which in CUDA
// 11 is an asm volatile: the compiler may not reorder a volatile asm past
// another or past a store or atomic, and unrolled loops then lose the
// loads they had in flight (bfs_vwc and vp_vwc lost a third to half of
// their loads' copies with __ldg). A plain asm with an output and no memory
// clobber is a pure function of the address, which is what a read-only
// array is for the length of a launch. On the CPU (kernels/emu) it is a
// plain load.
#ifdef __CUDA_ARCH__
template <int N>
struct NcWord;
template <>
struct NcWord<1> { typedef unsigned char type; };
template <>
struct NcWord<2> { typedef unsigned short type; };
template <>
struct NcWord<4> { typedef unsigned type; };
template <>
struct NcWord<8> { typedef unsigned long long type; };
template <>
struct NcWord<16> { typedef uint4 type; };

__device__ __forceinline__ unsigned char nc_word(const unsigned char* p) {
    unsigned short r;
    asm("ld.global.nc.u8 %0, [%1];" : "=h"(r) : "l"(p));
    return (unsigned char)r;
}
__device__ __forceinline__ unsigned short nc_word(const unsigned short* p) {
    unsigned short r;
    asm("ld.global.nc.u16 %0, [%1];" : "=h"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ unsigned nc_word(const unsigned* p) {
    unsigned r;
    asm("ld.global.nc.u32 %0, [%1];" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ unsigned long long nc_word(const unsigned long long* p) {
    unsigned long long r;
    asm("ld.global.nc.u64 %0, [%1];" : "=l"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ uint4 nc_word(const uint4* p) {
    uint4 r;
    asm("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
}
#endif

// *p through the read-only path: any type of 1, 2, 4, 8 or 16 bytes.
template <class T>
__device__ __forceinline__ T load_nc(const T* p) {
#ifdef __CUDA_ARCH__
    typedef typename NcWord<sizeof(T)>::type W;
    const W w = nc_word(reinterpret_cast<const W*>(p));
    T t;
    memcpy(&t, &w, sizeof(T));
    return t;
#else
    return *p;
#endif
}

template <class T>
struct ReadOnly {
    const T* p;

    ReadOnly() = default;
    __host__ __device__ constexpr ReadOnly(const T* q) : p(q) {}

    __device__ __forceinline__ T operator[](long long i) const { return load_nc(p + i); }
    __device__ __forceinline__ ReadOnly operator+(long long i) const { return ReadOnly(p + i); }
    __device__ __forceinline__ explicit operator bool() const { return p != nullptr; }
};

// The address of element i of an array, plain or ReadOnly: for the loads
// with another cache hint (__ldcs, evict-first), which take a pointer.
template <class T>
__device__ __forceinline__ const T* address(const T* p, long long i) { return p + i; }
template <class T>
__device__ __forceinline__ const T* address(const ReadOnly<T>& a, long long i) { return a.p + i; }

// A virtual warp is K consecutive lanes of a physical warp (K a power of two,
// at most 32). Its lanes synchronize and shuffle only among themselves, with
// a mask of their own lanes, since under independent thread scheduling the
// virtual warps of one physical warp may follow different paths.
template <int K>
struct VirtualWarp {
    unsigned lane;   // 0..K-1
    unsigned mask;   // this virtual warp's lanes in the physical warp
    unsigned first;  // the physical lane of this virtual warp's lane 0

    __device__ __forceinline__ VirtualWarp() {
        unsigned physical = threadIdx.x & 31u;
        lane = physical & (K - 1);
        first = physical - lane;
        mask = (K == 32) ? 0xffffffffu : (((1u << K) - 1u) << first);
    }

    // Global index of this virtual warp, and how many there are in the grid.
    __device__ __forceinline__ static long long id() {
        return ((long long)blockIdx.x * blockDim.x + threadIdx.x) / K;
    }
    __device__ __forceinline__ static long long count() {
        return ((long long)gridDim.x * blockDim.x) / K;
    }

    // Lane 0's value of x, in every lane (the SISD phase's broadcast).
    template <typename T>
    __device__ __forceinline__ T broadcast(T x) const {
        return __shfl_sync(mask, x, 0, K);
    }

    // Which lanes have pred set, as bits 0..K-1.
    __device__ __forceinline__ unsigned ballot(bool pred) const {
        return (__ballot_sync(mask, pred) >> first) & (K == 32 ? 0xffffffffu : ((1u << K) - 1u));
    }

    // Sum of x over the virtual warp, in every lane.
    __device__ __forceinline__ double sum(double x) const {
#pragma unroll
        for (int offset = K / 2; offset > 0; offset /= 2)
            x += __shfl_xor_sync(mask, x, offset, K);
        return x;
    }
};

// Sum of x over the block, valid in thread 0. scratch holds one double per
// warp of the block.
__device__ __forceinline__ double block_sum(double x, double* scratch) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        x += __shfl_xor_sync(0xffffffffu, x, offset);
    unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31u;
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    x = 0;
    if (warp == 0) {
        unsigned warps = (blockDim.x + 31) >> 5;
        x = lane < warps ? scratch[lane] : 0.0;
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2)
            x += __shfl_xor_sync(0xffffffffu, x, offset);
    }
    __syncthreads();
    return x;
}

// Hands out chunks of [0, n) to virtual warps: statically (virtual warp w
// takes chunks w, w + count, ...) or, with a work counter, dynamically (each
// takes the next chunk from the counter, PPoPP'11 §3.2). Lane 0 takes the
// chunk and broadcasts it, since atomics on one address serialize.
template <int K>
struct ChunkSchedule {
    const VirtualWarp<K>& vw;
    unsigned long long* counter;  // null: static
    long long chunk, n, next;

    __device__ __forceinline__ ChunkSchedule(const VirtualWarp<K>& w, unsigned long long* c, long long chunk_, long long n_)
        : vw(w), counter(c), chunk(chunk_), n(n_), next(VirtualWarp<K>::id() * chunk_) {}

    // The start of the next chunk, or a value >= n when none is left.
    __device__ __forceinline__ long long take() {
        long long start;
        if (counter) {
            unsigned long long got = 0;
            if (vw.lane == 0) got = atomicAdd(counter, (unsigned long long)chunk);
            start = (long long)vw.broadcast(got);
        } else {
            start = next;
            next += VirtualWarp<K>::count() * chunk;
        }
        return start;
    }
};

// Takes the block's ticket after its work for this launch; true in every
// thread of the last block to finish, which then sees every other block's
// writes. Every thread fences its own writes first: the writes a ticket
// stands for are not only thread 0's (warp leaders add a queue's counts).
// Every thread of the block must call it.
__device__ __forceinline__ bool last_block(unsigned* blocks_done) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (last) __threadfence();
    return last;
}
