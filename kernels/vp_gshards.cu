// The vertex programs over G-Shards (CuSha §3.1, §4): one block a shard,
// step 4 by warps over the windows W_ij of every shard (shards.cuh).
#include "shards.cuh"

#define GS_PROGRAM(NAME, P)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) gs_##NAME(ShardArgs<P> a)                               \
    {                                                                                                         \
        shards_iterate<P>(a, [&](unsigned i, unsigned offset, const P::Value* local, const unsigned char* changed, \
                                 int next) { gs_write_back<P>(a, i, offset, local, changed, next); });        \
    }

#define GS_PARENT(NAME, P)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) gs_parent_##NAME(ShardArgs<P> a)                        \
    {                                                                                                         \
        EdgeArray<P::Weight> w{a.weights};                                                                    \
        for (unsigned j = blockIdx.x; j < a.S; j += gridDim.x) {                                              \
            const unsigned hi = a.start[j + 1];                                                               \
            for (unsigned e = a.start[j] + threadIdx.x; e < hi; e += blockDim.x)                              \
                parent_check<P>(a.src_index[e], j * a.N + a.dest[e], w(e), a.values, a.parent, a.round, a.r,  \
                                a.source);                                                                    \
        }                                                                                                     \
    }

GS_PROGRAM(sssp_u32u, SSSP32<Unit>)
GS_PROGRAM(sssp_u32, SSSP32<unsigned>)
GS_PROGRAM(sssp_f64, SSSP64)
GS_PROGRAM(sswp_k32u, SSWP32<Unit>)
GS_PROGRAM(sswp_k32, SSWP32<unsigned>)
GS_PROGRAM(sswp_k64, SSWP64)
GS_PROGRAM(cc, CCLabel)

GS_PARENT(sssp_u32u, SSSP32<Unit>)
GS_PARENT(sssp_u32, SSSP32<unsigned>)
GS_PARENT(sssp_f64, SSSP64)

// PageRank: the sums and ranks (steps 1-3), then the write-back of the new
// contributions into every window (step 4), a launch each.
#define GS_PAGERANK(SUF, C)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) gs_pr_compute_##SUF(ShardRankArgs<C> a)                 \
    {                                                                                                         \
        shards_pagerank<C>(a);                                                                                \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(256) gs_pr_write_back_##SUF(                                 \
        const unsigned* windows, const unsigned* src_index, C* src_value, const C* contrib, unsigned n,       \
        unsigned N, unsigned S)                                                                               \
    {                                                                                                         \
        const unsigned lane = threadIdx.x & 31u, warps = blockDim.x >> 5;                                     \
        for (unsigned i = blockIdx.x; i < S; i += gridDim.x) {                                                \
            const unsigned offset = i * N;                                                                    \
            const C* local = shard_contrib<C>(contrib, offset, min(N, n - offset));                           \
            for (unsigned j = threadIdx.x >> 5; j < S; j += warps) {                                          \
                const unsigned* wj = windows + (size_t)j * (S + 1);                                           \
                const unsigned hi = wj[i + 1];                                                                \
                for (unsigned p = wj[i] + lane; p < hi; p += 32) src_value[p] = local[src_index[p] - offset]; \
            }                                                                                                 \
            __syncthreads();                                                                                  \
        }                                                                                                     \
    }

GS_PAGERANK(f64, double)
GS_PAGERANK(f32, float)
