// The vertex programs over Concatenated Windows (CuSha §3.2): the shards
// of G-Shards without SrcIndex, and per shard i the concatenated window
// CW_i (sources and Mapper) that step 4 walks with every thread
// (shards.cuh).
#include "shards.cuh"

#define CW_PROGRAM(NAME, P)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) cw_##NAME(                                              \
        const unsigned* start, const unsigned* cw_start, const unsigned short* cw_src, const unsigned* mapper, \
        const unsigned short* dest, const P::Weight* weights, P::Value* src_value, P::Value* values,          \
        int* dirty, VPState* st, unsigned n, unsigned N, unsigned S)                                          \
    {                                                                                                         \
        shards_iterate<P>(start, dest, weights, src_value, values, dirty, st, n, N, S,                        \
                          [=](unsigned i, unsigned, const P::Value* local, const unsigned char* changed,      \
                              int next) {                                                                     \
                              cw_write_back<P>(i, S, start, cw_start, cw_src, mapper, src_value, local,       \
                                               changed, dirty, next);                                         \
                          });                                                                                 \
    }

// The parent pass walks CW_i: the source is i·N + cw_src[k], the entry
// mapper[k], in the shard that shard_of finds.
#define CW_PARENT(NAME, P)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) cw_parent_##NAME(                                       \
        const unsigned* start, const unsigned* cw_start, const unsigned short* cw_src, const unsigned* mapper, \
        const unsigned short* dest, const P::Weight* weights, const P::Value* values, vid_t* parent,          \
        unsigned* round, unsigned r, vid_t source, unsigned N, unsigned S)                                    \
    {                                                                                                         \
        EdgeArray<P::Weight> w{weights};                                                                      \
        for (unsigned i = blockIdx.x; i < S; i += gridDim.x) {                                                \
            const unsigned hi = cw_start[i + 1];                                                              \
            for (unsigned k = cw_start[i] + threadIdx.x; k < hi; k += blockDim.x) {                           \
                const unsigned p = mapper[k];                                                                 \
                parent_check<P>(i * N + cw_src[k], shard_of(start, S, p) * N + dest[p], w(p), values, parent, \
                                round, r, source);                                                            \
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
    extern "C" __global__ void __launch_bounds__(256) cw_pr_compute_##SUF(                                    \
        const unsigned* start, const unsigned short* dest, const C* src_value, const double* inv_degree,     \
        const double* rank, double* next_rank, C* next_contrib, unsigned n, unsigned N, unsigned S,           \
        double damping, const double* dangling, double* next_dangling, double* l1)                            \
    {                                                                                                         \
        shards_pagerank<C>(start, dest, src_value, inv_degree, rank, next_rank, next_contrib, n, N, S,        \
                           damping, dangling, next_dangling, l1);                                             \
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
