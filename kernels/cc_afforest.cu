// Connected components by Afforest (Sutton, Ben-Nun, Barak, IPDPS'18; the
// CPU's operators/cc.go, after GAP's cc.cc) with ECL-CC's lock-free path
// halving (Jaiganesh and Burtscher, HPDC'18): link every vertex to its first
// two neighbours, compress, find the most frequent label by sampling, then
// link the remaining edges of the vertices outside that component (their
// in-edges too on a directed graph: weak connectivity), and compress.
//
// A link hangs the larger root under the smaller, so comp[v] <= v always
// and every tree's root is its smallest vertex: the labels are the
// smallest vertex id of each component, as on the CPU, with no relabelling.
#include "vertex_program.cuh"

// A load that sees other threads' stores made during this launch.
__device__ __forceinline__ vid_t load(const vid_t* p) { return *(volatile const vid_t*)p; }

// The root of v's tree, halving the path on the way (every step points a
// vertex at its grandparent, which other threads may read at any time: it
// is still an ancestor). The step is an atomicMin, not a store: another
// thread may have pointed that vertex nearer the root since this one read
// it (at the root, in the last cc_compress), and a store would put back
// the grandparent read before, leaving the vertex's label a non-root
// (ancestors have smaller ids, so the minimum is the nearer one).
__device__ __forceinline__ vid_t find(vid_t* comp, vid_t v) {
    vid_t cur = load(&comp[v]);
    if (cur == v) return v;
    vid_t prev = v, next;
    while (cur > (next = load(&comp[cur]))) {
        atomicMin(&comp[prev], next);
        prev = cur;
        cur = next;
    }
    return cur;
}

// Joins the trees of u and v (GAP's Link).
__device__ __forceinline__ void link(vid_t u, vid_t v, vid_t* comp) {
    vid_t p1 = load(&comp[u]), p2 = load(&comp[v]);
    while (p1 != p2) {
        vid_t high = max(p1, p2), low = min(p1, p2);
        vid_t p_high = load(&comp[high]);
        if (p_high == low) return;
        if (p_high == high && atomicCAS(&comp[high], high, low) == high) return;
        p1 = load(&comp[load(&comp[high])]);
        p2 = load(&comp[low]);
    }
}

extern "C" __global__ void __launch_bounds__(256) cc_init(vid_t* comp, long long n)
{
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (long long)gridDim.x * blockDim.x)
        comp[v] = (vid_t)v;
}

// Links every vertex with its r-th neighbour.
extern "C" __global__ void __launch_bounds__(256) cc_link_round(const eid_t* __restrict__ offs,
                                                                const vid_t* __restrict__ targets, vid_t* comp,
                                                                long long n, long long r)
{
    for (long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += (long long)gridDim.x * blockDim.x) {
        eid_t e = offs[u] + r;
        if (e < offs[u + 1]) link((vid_t)u, targets[e], comp);
    }
}

// Points every vertex straight at its root.
extern "C" __global__ void __launch_bounds__(256) cc_compress(vid_t* comp, long long n)
{
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (long long)gridDim.x * blockDim.x)
        comp[v] = find(comp, (vid_t)v);
}

// The most frequent label among 1024 sampled vertices (ties: the smaller
// label), into *out. One block of 1024 threads.
extern "C" __global__ void __launch_bounds__(1024) cc_sample(const vid_t* __restrict__ comp, long long n, vid_t* out)
{
    __shared__ vid_t label[1024];
    __shared__ unsigned long long best[32];
    const unsigned i = threadIdx.x;
    unsigned long long h = (unsigned long long)(i + 1) * 0x9e3779b97f4a7c15ull;
    label[i] = comp[(h >> 17) % (unsigned long long)n];
    __syncthreads();
    unsigned count = 0;
    for (unsigned j = 0; j < 1024; j++) count += label[j] == label[i];
    // The largest (count, -label): count in the high word, ~label in the low.
    unsigned long long key = ((unsigned long long)count << 32) | (unsigned long long)(~label[i]);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) key = max(key, __shfl_xor_sync(GPIPE_FULL_MASK, key, offset));
    if ((i & 31u) == 0) best[i >> 5] = key;
    __syncthreads();
    if (i < 32) {
        key = best[i];
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) key = max(key, __shfl_xor_sync(GPIPE_FULL_MASK, key, offset));
        if (i == 0) *out = ~(vid_t)(key & 0xffffffffu);
    }
}

// Links the edges not sampled yet (out-edges from the third on, and every
// in-edge where in_offs is set) of the vertices outside the component
// *skip, a virtual warp of K lanes a vertex.
template <int K>
__device__ __forceinline__ void link_rest(const eid_t* __restrict__ offs, const vid_t* __restrict__ targets,
                                          const eid_t* __restrict__ in_offs, const vid_t* __restrict__ in_srcs,
                                          vid_t* comp, long long n, long long skipped_rounds, const vid_t* skip)
{
    const vid_t c = *skip;
    VirtualWarp<K> vw;
    for (long long base = VirtualWarp<K>::id() * K; base < n; base += VirtualWarp<K>::count() * K) {
        const long long v = base + vw.lane;
        for (unsigned mask = vw.ballot(v < n && load(&comp[v]) != c); mask; mask &= mask - 1) {
            const vid_t u = (vid_t)(base + __ffs(mask) - 1);
            const eid_t last = offs[u + 1];
            for (eid_t e = offs[u] + skipped_rounds + vw.lane; e < last; e += K) link(u, targets[e], comp);
            if (in_offs) {
                const eid_t in_last = in_offs[u + 1];
                for (eid_t e = in_offs[u] + vw.lane; e < in_last; e += K) link(u, in_srcs[e], comp);
            }
        }
    }
}

#define CC_LINK_REST(K)                                                                                       \
    extern "C" __global__ void __launch_bounds__(256) cc_link_rest_k##K(                                      \
        const eid_t* offs, const vid_t* targets, const eid_t* in_offs, const vid_t* in_srcs, vid_t* comp,     \
        long long n, long long skipped_rounds, const vid_t* skip)                                             \
    {                                                                                                         \
        link_rest<K>(offs, targets, in_offs, in_srcs, comp, n, skipped_rounds, skip);                         \
    }
CC_LINK_REST(1)
CC_LINK_REST(2)
CC_LINK_REST(4)
CC_LINK_REST(8)
CC_LINK_REST(16)
CC_LINK_REST(32)
