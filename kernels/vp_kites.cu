// KiTES (khorasani-dissertation §3.1–3.2, §3.4): Warp Segmentation's rounds
// (warpseg.cuh) for the active vertices only: an activeness bitmask by
// iteration parity, Vertex Grouping of the activation rows, and Dynamic
// Thread Assignment over the active vertices' rows; near-far ordering of
// the activations for the programs with priorities.
#include "warpseg.cuh"

#define KITES_PROGRAM(NAME, P)                                                                            \
    extern "C" __global__ void __launch_bounds__(256) kites_##NAME(WSArgs<P> a)                           \
    {                                                                                                     \
        ws_iterate<P, true>(a);                                                                  \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(256) kites_##NAME##_hubs(WSArgs<P> a)                    \
    {                                                                                                     \
        ws_hubs<P, true>(a);                                                                     \
    }

KITES_PROGRAM(sssp_u32u, SSSP32<Unit>)
KITES_PROGRAM(sssp_u32, SSSP32<unsigned>)
KITES_PROGRAM(sssp_f64, SSSP64)
KITES_PROGRAM(sswp_k32u, SSWP32<Unit>)
KITES_PROGRAM(sswp_k32, SSWP32<unsigned>)
KITES_PROGRAM(sswp_k64, SSWP64)
KITES_PROGRAM(cc, CCLabel)

// The hubs KiTES sends to instead of activating: a bit for every vertex of
// more than hub_degree in-edges, and their number added to *count (without
// hubs the host passes no mask, and activation skips the look-up).
extern "C" __global__ void __launch_bounds__(256) kites_hub_mask(const eid_t* in_offs, long long n, long long hub_degree,
                                                                 unsigned* mask, unsigned* count)
{
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    unsigned hubs = 0;
    for (long long r = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r * 32 < n; r += warps) {
        const long long v = r * 32 + lane_id();
        const bool hub = v < n && in_offs[v + 1] - in_offs[v] > hub_degree;
        const unsigned bits = __ballot_sync(FULL_MASK, hub);
        if (lane_id() == 0) {
            mask[r] = bits;
            hubs += __popc(bits);
        }
    }
    if (hubs) atomicAdd(count, hubs);
}
