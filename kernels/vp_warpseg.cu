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

// PageRank's pull with Warp Segmentation over every vertex (warpseg.cuh's
// ws_pagerank_pull), beside pagerank_vwc.cu's outlier kernels. The
// parameters are pr_pull's (pagerank_vwc.cu), so the host drives both
// alike; counter and chunk are not read (a warp takes the rounds in turn).
// The weighted pr_ws_<SUF>_w take the in-edges' weights after the sources,
// as pr_pull_k<K>_<SUF>_w do.
#define PR_WS(SUF, C, HUB)                                                                                \
    extern "C" __global__ void __launch_bounds__(256) pr_ws_##SUF(                                         \
        const eid_t* in_offsets, const vid_t* in_sources, const vid_t* hub_id, const C* contrib,           \
        const double* inv_degree, const double* rank, double* next_rank, C* next_contrib, long long n,     \
        double damping, const double* dangling, double* next_dangling, double* l1,                         \
        unsigned long long* counter, long long chunk, long long outlier_degree, bool stream)                \
    {                                                                                                      \
        ws_pagerank_pull<C, HUB, false>(in_offsets, in_sources, nullptr, hub_id, contrib, inv_degree,     \
                                        rank, next_rank, next_contrib, 0, n, n, damping, dangling,         \
                                        next_dangling, l1, outlier_degree, stream);                        \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(256) pr_ws_##SUF##_w(                                     \
        const eid_t* in_offsets, const vid_t* in_sources, const double* in_weights, const vid_t* hub_id,   \
        const C* contrib, const double* inv_degree, const double* rank, double* next_rank,                 \
        C* next_contrib, long long n, double damping, const double* dangling, double* next_dangling,       \
        double* l1, unsigned long long* counter, long long chunk, long long outlier_degree, bool stream)   \
    {                                                                                                      \
        ws_pagerank_pull<C, HUB, true>(in_offsets, in_sources, in_weights, hub_id, contrib, inv_degree,    \
                                       rank, next_rank, next_contrib, 0, n, n, damping, dangling,          \
                                       next_dangling, l1, outlier_degree, stream);                         \
    }

PR_WS(f64, double, false)
PR_WS(f32, float, false)
PR_WS(f64_hub, double, true)
PR_WS(f32_hub, float, true)
