// The vertex programs over Concatenated Windows (CuSha §3.2): the shards
// of G-Shards without SrcIndex, and per shard i the concatenated window
// CW_i (sources and Mapper) that step 4 walks with every thread
// (shards.cuh).
#include "shards.cuh"

#define CW_PROGRAM(NAME, P)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) cw_##NAME(ShardArgs<P> a)                               \
    {                                                                                                         \
        shards_iterate<P>(a, [&](unsigned i, unsigned, const P::Value* local, const unsigned char* changed,   \
                                 int next) { cw_write_back<P>(a, i, local, changed, next); });                \
    }

// The parent pass walks CW_i: the source is i·N + cw_src[k], the entry
// mapper[k], in the shard that shard_of finds.
#define CW_PARENT(NAME, P)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) cw_parent_##NAME(ShardArgs<P> a)                        \
    {                                                                                                         \
        EdgeArray<P::Weight> w{a.weights};                                                                    \
        for (unsigned i = blockIdx.x; i < a.S; i += gridDim.x) {                                              \
            const unsigned hi = a.cw_start[i + 1];                                                            \
            for (unsigned k = a.cw_start[i] + threadIdx.x; k < hi; k += blockDim.x) {                         \
                const unsigned p = a.mapper[k];                                                               \
                parent_check<P>(i * a.N + a.cw_src[k], shard_of(a.start, a.S, p) * a.N + a.dest[p], w(p),     \
                                a.values, a.parent, a.round, a.r, a.source);                                  \
            }                                                                                                 \
        }                                                                                                     \
    }

CW_PROGRAM(sssp_u32u, SSSP32<Unit>)
CW_PROGRAM(sssp_u32, SSSP32<unsigned>)
CW_PROGRAM(sssp_f64, SSSP64)
CW_PROGRAM(sswp_k32u, SSWP32<Unit>)
CW_PROGRAM(sswp_k32, SSWP32<unsigned>)
CW_PROGRAM(sswp_k64, SSWP64)
CW_PROGRAM(cc, CCLabel)

CW_PARENT(sssp_u32u, SSSP32<Unit>)
CW_PARENT(sssp_u32, SSSP32<unsigned>)
CW_PARENT(sssp_f64, SSSP64)

#define CW_PAGERANK(SUF, C)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) cw_pr_compute_##SUF(ShardRankArgs<C> a)                 \
    {                                                                                                         \
        shards_pagerank<C>(a);                                                                                \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(256) cw_pr_write_back_##SUF(                                 \
        const unsigned* cw_start, const unsigned short* cw_src, const unsigned* mapper, C* src_value,         \
        const C* contrib, unsigned n, unsigned N, unsigned S)                                                 \
    {                                                                                                         \
        for (unsigned i = blockIdx.x; i < S; i += gridDim.x) {                                                \
            const unsigned offset = i * N;                                                                    \
            const C* local = shard_contrib<C>(contrib, offset, min(N, n - offset));                           \
            const unsigned hi = cw_start[i + 1];                                                              \
            for (unsigned k = cw_start[i] + threadIdx.x; k < hi; k += blockDim.x)                             \
                src_value[mapper[k]] = local[cw_src[k]];                                                      \
            __syncthreads();                                                                                  \
        }                                                                                                     \
    }

CW_PAGERANK(f64, double)
CW_PAGERANK(f32, float)
