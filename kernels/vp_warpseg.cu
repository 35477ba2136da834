// Warp Segmentation (khorasani-dissertation §2.1–2.2): every vertex pulls
// its in-edges every iteration, 32 consecutive vertices a warp, segments
// found by binary search and reduced without head flags (warpseg.cuh). The
// monotone programs run to a fixed point (an iteration that changes
// nothing); PageRank's synchronous iterations use the same rounds with a
// sum (pr_ws_*), beside pagerank_vwc.cu's outlier kernels.
#include "warpseg.cuh"

#define WS_PROGRAM(NAME, P)                                                                               \
    extern "C" __global__ void __launch_bounds__(256) ws_##NAME(WSArgs<P> a)                              \
    {                                                                                                     \
        ws_iterate<P, false>(a);                                                                 \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(256) ws_##NAME##_hubs(WSArgs<P> a)                       \
    {                                                                                                     \
        ws_hubs<P, false>(a);                                                                    \
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
// argument is pr_pull's (PRPullArgs), so the host drives both alike; lo
// and hi are 0 and n, counter and chunk are not read (a warp takes the
// rounds in turn). The weighted pr_ws_<SUF>_w read in_weights.
#define PR_WS(SUF, C, HUB)                                                                                \
    extern "C" __global__ void __launch_bounds__(256) pr_ws_##SUF(PRPullArgs<C> a)                         \
    {                                                                                                      \
        ws_pagerank_pull<C, HUB, false>(a);                                                                \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(256) pr_ws_##SUF##_w(PRPullArgs<C> a)                     \
    {                                                                                                      \
        ws_pagerank_pull<C, HUB, true>(a);                                                                 \
    }

PR_WS(f64, double, false)
PR_WS(f32, float, false)
PR_WS(f64_hub, double, true)
PR_WS(f32_hub, float, true)
