// The vertex programs over the CSR, pushed along out-edges by virtual warps
// (PPoPP'11 §3.1, with §3.2's deferred outliers and dynamic distribution),
// driven by a frontier: the third layout of the engine beside G-Shards and
// Concatenated Windows (shards.cuh), for the same programs.
//
// A vertex is pending while its value is better than the value it was last
// expanded with (expanded[v]); no queue is needed, and a relaxation that
// lands while the vertex is being expanded leaves it pending, so no update
// is lost whatever the interleaving. To find pending vertices without
// reading every value, vertices come in groups of 32 with a flag each, in
// two arrays by iteration parity: an improvement flags its target's group
// for the next iteration, and a scan clears the flags it reads.
//
// Near-far (Davidson et al., IPDPS'14; Δ-stepping's buckets merged into
// two): of the pending vertices, those whose priority (distance; top −
// width for SSWP) is below the threshold are expanded; the rest stay
// pending, and when none is below it the threshold moves to the smallest
// priority left plus Δ. CC has no priorities: every pending vertex is
// expanded. The last block of each launch advances the state, so the host
// queues launches in batches and reads the state once per batch.
#include <type_traits>

#include "shards.cuh"

#define GROUP 32
#define OUTLIER_SEGMENT 4096

// A deferred outlier: the vertex in bits 0-31, its segment of
// OUTLIER_SEGMENT edges in 32-62, and in bit 63 whether the edges are
// in-edges (CC on a directed graph pushes both ways).
typedef unsigned long long outlier_t;

// VWCPushArgs are an iteration's arguments, one struct for vwc_<P>_k<K> and
// vwc_<P>_outliers (operators/gpuop/vp.go's vwcPushArgs mirrors it field by
// field; the outliers' kernel reads neither n, outlier_degree nor chunk).
template <class P>
struct VWCPushArgs {
    ReadOnly<eid_t> offs;
    ReadOnly<vid_t> targets;
    ReadOnly<typename P::Weight> weights;
    ReadOnly<eid_t> in_offs;
    ReadOnly<vid_t> in_srcs;
    typename P::Value* values;
    typename P::Value* expanded;
    unsigned char* flags;
    outlier_t* queue;
    VPState* st;
    long long groups, queue_cap, n, outlier_degree;
    unsigned chunk;
};

// PushTo is where an iteration's relaxations go: the values, the next
// iteration's group flags, and the queue of deferred outliers (queued
// counts them).
template <typename V>
struct PushTo {
    V* values;
    unsigned char* flags_next;
    outlier_t* queue;
    unsigned* queued;
};

// Relaxes the edges [first, last) of a vertex of value vu, K lanes apart.
template <class P, int K>
__device__ __forceinline__ void relax_range(
    const ReadOnly<vid_t>& targets, EdgeArray<typename P::Weight> w, eid_t first, eid_t last, unsigned lane,
    typename P::Value vu, typename P::Value* values, unsigned char* flags_next)
{
    typedef typename P::Value V;
    for (eid_t e = first + lane; e < last; e += K) {
        vid_t t = targets[e];
        V m = P::compute(vu, w(e));
        if (P::better(m, values[t])) {
            V old = P::atomic_improve(&values[t], m);
            if (P::better(m, old)) flags_next[t >> 5] = 1;
        }
    }
}

// Expands one vertex's edges of one direction with its virtual warp, or
// queues them in segments for whole blocks when it has more than
// outlier_degree of them.
template <class P, int K>
__device__ __forceinline__ void expand(
    const ReadOnly<eid_t>& offs, const ReadOnly<vid_t>& targets, EdgeArray<typename P::Weight> w, vid_t u,
    typename P::Value vu, outlier_t dir, const PushTo<typename P::Value>& to, long long outlier_degree,
    const VirtualWarp<K>& vw)
{
    const eid_t first = offs[u], last = offs[u + 1];
    if (outlier_degree > 0 && last - first > outlier_degree) {
        if (vw.lane == 0) {
            unsigned segments = (unsigned)((last - first + OUTLIER_SEGMENT - 1) / OUTLIER_SEGMENT);
            unsigned at = atomicAdd(to.queued, segments);
            for (unsigned s = 0; s < segments; s++) to.queue[at + s] = (outlier_t)u | ((outlier_t)s << 32) | (dir << 63);
        }
        return;
    }
    relax_range<P, K>(targets, w, first, last, vw.lane, vu, to.values, to.flags_next);
}

// One iteration: scan the flagged groups, expand the near pending vertices.
// in_offs is null except for CC on a directed graph, which also pushes
// along in-edges (weak connectivity). chunk > 0 takes chunk groups at a
// time from a counter (dynamic distribution); 0 deals them out statically.
template <class P, int K>
__device__ __forceinline__ void vwc_push(const VWCPushArgs<P>& a)
{
    typedef typename P::Value V;
    const ReadOnly<eid_t> offs = a.offs;
    const ReadOnly<vid_t> targets = a.targets;
    const ReadOnly<eid_t> in_offs = a.in_offs;
    const ReadOnly<vid_t> in_srcs = a.in_srcs;
    V* values = a.values;
    V* expanded = a.expanded;
    unsigned char* flags = a.flags;
    VPState* st = a.st;
    const long long groups = a.groups, queue_cap = a.queue_cap, n = a.n, outlier_degree = a.outlier_degree;
    const unsigned chunk = a.chunk;
    __shared__ double scratch[32];
    if (*(volatile unsigned*)&st->done) return;
    const unsigned t = st->iteration, cur = t & 1u;
    unsigned char* flags_cur = flags + (cur ? groups : 0);
    unsigned char* flags_next = flags + (cur ? 0 : groups);
    const PushTo<V> to{values, flags_next, a.queue + (cur ? queue_cap : 0), &st->outliers[cur]};
    const double threshold = st->threshold, top = st->top;
    const double inf = __longlong_as_double((long long)GPIPE_INF_BITS);
    VirtualWarp<K> vw;
    EdgeArray<typename P::Weight> w{a.weights};
    double far = inf;
    unsigned active = 0;
    long long next = VirtualWarp<K>::id(), left = 0;
    for (;;) {
        long long g;
        if (chunk == 0) {
            g = next;
            next += VirtualWarp<K>::count();
        } else {
            if (left == 0) {
                unsigned long long got = 0;
                if (vw.lane == 0) got = atomicAdd(&st->counter, chunk);
                next = (long long)vw.broadcast(got);
                left = chunk;
            }
            g = next++;
            left--;
        }
        if (g >= groups) break;
        unsigned char f = 0;
        if (vw.lane == 0) {
            f = flags_cur[g];
            if (f) flags_cur[g] = 0;
        }
        if (!vw.broadcast(f)) continue;
        bool keep = false;
        const long long end = min((g + 1) * GROUP, n);
        for (long long b = g * GROUP; b < end; b += K) {
            const long long v = b + vw.lane;
            V val = P::none();
            bool near = false;
            if (v < end) {
                val = values[v];
                if (P::better(val, expanded[v])) {
                    if (!P::has_priority) {
                        near = true;
                    } else {
                        double pr = P::priority(val, top);
                        if (pr < threshold) {
                            near = true;
                        } else {
                            far = fmin(far, pr);
                            keep = true;
                        }
                    }
                }
            }
            for (unsigned mask = vw.ballot(near); mask; mask &= mask - 1) {
                const int l = __ffs(mask) - 1;
                const vid_t u = (vid_t)(b + l);
                const V vu = __shfl_sync(vw.mask, val, l, K);
                if (vw.lane == 0) {
                    expanded[u] = vu;
                    active++;
                }
                expand<P, K>(offs, targets, w, u, vu, 0, to, outlier_degree, vw);
                if constexpr (std::is_same<typename P::Weight, Unit>::value) {
                    if (in_offs) expand<P, K>(in_offs, in_srcs, w, u, vu, 1, to, outlier_degree, vw);
                }
            }
        }
        if (vw.ballot(keep) && vw.lane == 0) flags_next[g] = 1;
    }
    const double block_far = block_min(far, scratch);
    const double block_active = block_sum((double)active, scratch);
    if (threadIdx.x == 0) {
        if (block_active > 0) atomicAdd(&st->active, (unsigned)block_active);
        if (block_far < inf) atomicMin(&st->far_min, (unsigned long long)__double_as_longlong(block_far));
    }
    if (last_block(&st->blocks_done) && threadIdx.x == 0) vp_advance(st, t);
}

// Expands the deferred outliers' segments, a block each, after the
// iteration that queued them (whose launch already advanced the state: the
// flags they set are those of the iteration now current).
template <class P>
__device__ __forceinline__ void vwc_push_outliers(const VWCPushArgs<P>& a)
{
    typedef typename P::Value V;
    const ReadOnly<eid_t> offs = a.offs;
    const ReadOnly<vid_t> targets = a.targets;
    const ReadOnly<typename P::Weight> weights = a.weights;
    const ReadOnly<eid_t> in_offs = a.in_offs;
    const ReadOnly<vid_t> in_srcs = a.in_srcs;
    V* values = a.values;
    // Written by the launch before (vwc_push), only read here.
    const ReadOnly<V> expanded = a.expanded;
    unsigned char* flags = a.flags;
    const long long groups = a.groups, queue_cap = a.queue_cap;
    const ReadOnly<outlier_t> queue = a.queue;  // queued by the launch before
    VPState* st = a.st;
    if (*(volatile unsigned*)&st->done) return;
    const unsigned now = st->iteration, queued_at = (now - 1) & 1u;
    unsigned char* flags_next = flags + ((now & 1u) ? groups : 0);
    const ReadOnly<outlier_t> q = queue + (queued_at ? queue_cap : 0);
    const unsigned count = st->outliers[queued_at];
    EdgeArray<typename P::Weight> w{weights};
    for (unsigned i = blockIdx.x; i < count; i += gridDim.x) {
        const outlier_t entry = q[i];
        const vid_t u = (vid_t)(entry & 0xffffffffu);
        const eid_t segment = (eid_t)((entry >> 32) & 0x7fffffffu);
        const bool in = entry >> 63;
        const ReadOnly<eid_t> o = in ? in_offs : offs;
        const eid_t first = o[u] + segment * OUTLIER_SEGMENT, last = min(first + OUTLIER_SEGMENT, o[u + 1]);
        const V vu = expanded[u];
        for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x) {
            // In-edges come only with unweighted programs (CC), so w(e) reads nothing for them.
            const vid_t t = in ? in_srcs[e] : targets[e];
            const V m = P::compute(vu, w(e));
            if (P::better(m, values[t])) {
                V old = P::atomic_improve(&values[t], m);
                if (P::better(m, old)) flags_next[t >> 5] = 1;
            }
        }
    }
}

// The parent pass over the CSR (shards.cuh's parent_check on every edge),
// edge-balanced: each block takes tiles of TILE edges and finds each edge's
// source by binary search over the tile's offsets in shared memory (the
// source search of Warp Segmentation, khorasani-dissertation §2.1), so hubs
// cost no more than their edges.
#define TILE 2048

// The largest s in [lo, hi) with off(s) <= e, given off(lo) <= e < off(hi).
template <typename Off>
__device__ __forceinline__ long long row_of(Off off, long long lo, long long hi, eid_t e) {
    while (hi - lo > 1) {
        long long mid = (lo + hi) >> 1;
        if (off(mid) <= e) lo = mid;
        else hi = mid;
    }
    return lo;
}

template <class P>
__device__ __forceinline__ void csr_parent(
    const eid_t* __restrict__ offs, const vid_t* __restrict__ targets, const typename P::Weight* weights,
    long long n, const typename P::Value* __restrict__ values, vid_t* parent, unsigned* round, unsigned r,
    vid_t source)
{
    __shared__ eid_t tile_offs[TILE + 1];
    __shared__ long long first_row, last_row;
    EdgeArray<typename P::Weight> w{weights};
    const eid_t m = offs[n];
    auto global = [=](long long s) { return offs[s]; };
    for (eid_t e0 = (eid_t)blockIdx.x * TILE; e0 < m; e0 += (eid_t)gridDim.x * TILE) {
        const eid_t e1 = min(e0 + TILE, m);
        if (threadIdx.x == 0) first_row = row_of(global, 0, n, e0);
        if (threadIdx.x == 32) last_row = row_of(global, 0, n, e1 - 1);
        __syncthreads();
        const long long s0 = first_row, rows = last_row - first_row + 1;
        const bool shared = rows < TILE;
        if (shared)
            for (long long k = threadIdx.x; k <= rows; k += blockDim.x) tile_offs[k] = offs[s0 + k];
        __syncthreads();
        for (eid_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
            long long s = shared ? s0 + row_of([&](long long k) { return tile_offs[k]; }, 0, rows, e)
                                 : row_of(global, s0, s0 + rows, e);
            parent_check<P>((vid_t)s, targets[e], w(e), values, parent, round, r, source);
        }
        __syncthreads();
    }
}

#define VWC_PUSH_K(NAME, P, K) \
    extern "C" __global__ void __launch_bounds__(256) vwc_##NAME##_k##K(VWCPushArgs<P> a) { vwc_push<P, K>(a); }

#define VWC_PROGRAM(NAME, P)                                                                                  \
    VWC_PUSH_K(NAME, P, 1)                                                                                    \
    VWC_PUSH_K(NAME, P, 2)                                                                                    \
    VWC_PUSH_K(NAME, P, 4)                                                                                    \
    VWC_PUSH_K(NAME, P, 8)                                                                                    \
    VWC_PUSH_K(NAME, P, 16)                                                                                   \
    VWC_PUSH_K(NAME, P, 32)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) vwc_##NAME##_outliers(VWCPushArgs<P> a)                 \
    {                                                                                                         \
        vwc_push_outliers<P>(a);                                                                              \
    }

#define CSR_PARENT(NAME, P)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) csr_parent_##NAME(                                      \
        const eid_t* offs, const vid_t* targets, const P::Weight* weights, long long n,                       \
        const P::Value* values, vid_t* parent, unsigned* round, unsigned r, vid_t source)                     \
    {                                                                                                         \
        csr_parent<P>(offs, targets, weights, n, values, parent, round, r, source);                           \
    }

VWC_PROGRAM(sssp_u32u, SSSP32<Unit>)
VWC_PROGRAM(sssp_u32, SSSP32<unsigned>)
VWC_PROGRAM(sssp_f64, SSSP64)
VWC_PROGRAM(sswp_k32u, SSWP32<Unit>)
VWC_PROGRAM(sswp_k32, SSWP32<unsigned>)
VWC_PROGRAM(sswp_k64, SSWP64)
VWC_PROGRAM(cc, CCLabel)

CSR_PARENT(sssp_u32u, SSSP32<Unit>)
CSR_PARENT(sssp_u32, SSSP32<unsigned>)
CSR_PARENT(sssp_f64, SSSP64)
