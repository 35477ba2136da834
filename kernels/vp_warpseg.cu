// Warp Segmentation (khorasani-dissertation §2.1–2.2): every vertex pulls
// its in-edges every iteration, 32 consecutive vertices a warp, segments
// found by binary search and reduced without head flags (warpseg.cuh). The
// monotone programs run to a fixed point (an iteration that changes
// nothing); PageRank's synchronous iterations use the same rounds with a
// sum (pr_ws_*), beside pagerank_vwc.cu's outlier kernels.
#include "warpseg.cuh"

#define WS_PROGRAM(NAME, P)                                                                               \
    extern "C" __global__ void __launch_bounds__(256) ws_##NAME(WS_PARAMS(P))                              \
    {                                                                                                     \
        ws_iterate<P, false>(WS_ARGS(P));                                                                 \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(256) ws_##NAME##_hubs(WS_PARAMS(P))                       \
    {                                                                                                     \
        ws_hubs<P, false>(WS_ARGS(P));                                                                    \
    }

WS_PROGRAM(sssp_u32u, SSSP32<Unit>)
WS_PROGRAM(sssp_u32, SSSP32<unsigned>)
WS_PROGRAM(sssp_f64, SSSP64)
WS_PROGRAM(sswp_k32u, SSWP32<Unit>)
WS_PROGRAM(sswp_k32, SSWP32<unsigned>)
WS_PROGRAM(sswp_k64, SSWP64)
WS_PROGRAM(cc, CCLabel)

// PageRank's pull with Warp Segmentation: a warp's 32 vertices' in-edges
// end to end, the contributions summed per segment; vertices of more than
// outlier_degree in-edges are left to pagerank_vwc.cu's pr_outliers and
// pr_outliers_finish, as in the vwc layout. The parameters are pr_pull's
// (pagerank_vwc.cu), so the host drives both alike; counter and chunk are
// not read (a warp takes the rounds in turn).
template <typename C, bool HUB>
__device__ __forceinline__ void pr_ws(
    const eid_t* __restrict__ in_offsets, const vid_t* __restrict__ in_sources, const vid_t* __restrict__ hub_id,
    const C* __restrict__ contrib, const double* __restrict__ inv_degree,
    const double* __restrict__ rank, double* __restrict__ next_rank, C* __restrict__ next_contrib,
    long long n, double damping, const double* dangling, double* next_dangling, double* l1,
    long long outlier_degree, bool stream)
{
    __shared__ double acc_all[256];
    __shared__ double scratch[32];
    const unsigned lane = lane_id();
    double* acc = acc_all + (threadIdx.x & ~31u);
    RankUpdate update(damping, dangling, n);
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long c = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; c * 32 < n; c += warps) {
        const long long v = c * 32 + lane;
        eid_t first = 0;
        unsigned len = 0;
        bool mine = v < n;
        if (mine) {
            first = in_offsets[v];
            const eid_t l = in_offsets[v + 1] - first;
            if (outlier_degree > 0 && l > outlier_degree) mine = false;
            else len = (unsigned)l;
        }
        acc[lane] = 0;
        __syncwarp();
        unsigned total;
        const unsigned ps = warp_exclusive_sum(len, total);
        for (unsigned pass = 0; pass < total; pass += 32) {
            const unsigned i = pass + lane;
            unsigned seg = ws_owner(ps, i);
            const eid_t row = __shfl_sync(FULL_MASK, first, seg);
            const unsigned row_ps = __shfl_sync(FULL_MASK, ps, seg);
            double x = 0;
            if (i < total) {
                const eid_t e = row + (i - row_ps);
                x = (double)contrib[stream ? __ldcs(&in_sources[e]) : in_sources[e]];
            } else {
                seg = 32 + lane;
            }
            x = ws_segment_reduce(x, seg, [](double a, double b) { return a + b; });
            if (ws_segment_head(seg) && i < total) acc[seg] += x;
            __syncwarp();
        }
        if (mine) update.apply(v, HUB ? (long long)hub_id[v] : v, acc[lane], rank, inv_degree, next_rank, next_contrib);
        __syncwarp();
    }
    update.flush(scratch, l1, next_dangling);
}

#define PR_WS(SUF, C, HUB)                                                                                \
    extern "C" __global__ void __launch_bounds__(256) pr_ws_##SUF(                                         \
        const eid_t* in_offsets, const vid_t* in_sources, const vid_t* hub_id, const C* contrib,           \
        const double* inv_degree, const double* rank, double* next_rank, C* next_contrib, long long n,     \
        double damping, const double* dangling, double* next_dangling, double* l1,                         \
        unsigned long long* counter, long long chunk, long long outlier_degree, bool stream)                \
    {                                                                                                      \
        pr_ws<C, HUB>(in_offsets, in_sources, hub_id, contrib, inv_degree, rank, next_rank, next_contrib,  \
                      n, damping, dangling, next_dangling, l1, outlier_degree, stream);                    \
    }

PR_WS(f64, double, false)
PR_WS(f32, float, false)
PR_WS(f64_hub, double, true)
PR_WS(f32_hub, float, true)
