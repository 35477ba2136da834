// Warp Segmentation (khorasani-dissertation §2.1–2.2) and KiTES
// (§3.1–3.2, §3.4): the vertex programs of vertex_program.cuh pulled along
// in-edges, a warp at a time over 32 consecutive vertices. vp_warpseg.cu
// and vp_kites.cu instantiate the iteration below; the host side is
// operators/gpu_vp_pull.go.
//
// A warp takes a round of 32 consecutive vertices and lays their in-edge
// rows end to end: lane l's row starts at the exclusive prefix sum ps[l] of
// the rows' lengths. In each pass over the concatenated rows a lane takes
// the edge i = pass·32 + lane, finds its row (its *segment*) by a binary
// search over ps in five shuffles, computes the edge's message, and a
// segmented reduction in five shuffle steps leaves each segment's best
// message in its first lane, which folds it into the vertex's accumulator.
// No head flags, no atomics, no block barriers (§2.1.2): segments are
// found, not marked. The search and the row arithmetic do not depend on
// the gathered value, so they overlap its load (§2.2.1).
//
// KiTES runs the same rounds only for the vertices whose inputs changed:
//   - an activeness bitmask (§3.1.1) by iteration parity: bit g of the
//     current mask says vertex group g is active; the next mask collects
//     the activations an iteration makes; a warp clears the words it read;
//   - Vertex Grouping (§3.1.2): with a ratio R (a power of two, at most 32)
//     a bit stands for R consecutive vertices and activation runs over the
//     grouped adjacency (group → groups), which is what a directed graph
//     keeps beside its in-edges; R = 1 is the vertices themselves;
//   - Dynamic Thread Assignment (§3.2): only active vertices contribute a
//     row to the round's prefix sum, so the lanes stay busy on the edges of
//     scattered active vertices; the activation of a changed vertex's
//     out-neighbours is laid out the same way.
// A changed vertex activates its out-neighbours at once when its priority
// (the near-far order of vp_vwc.cu: distance, or top − width) is below the
// threshold, and is otherwise kept in the pending mask D until the
// threshold passes it; programs without priorities (CC) activate at once.
// D also seeds a run: the source starts in it.
//
// Rows longer than hub_degree (the hubs) would keep one warp busy while
// the others idle; their edges are queued in segments of WS_SEGMENT for
// whole blocks (PPoPP'11 §3.2's deferred outliers), in a second launch of
// the same iteration, which folds its results in with atomic_improve.
#pragma once

#include <type_traits>

#include "frontier.cuh"
#include "shards.cuh"

#define WS_SEGMENT 4096
#define WS_CHUNK 1024  // vertices a warp scans at a time: 32 rounds

// A queued hub segment: the vertex in bits 0-31, the segment in 32-59, the
// kind in 60-63.
typedef unsigned long long hubwork_t;
#define WS_PULL_IN 0ull   // pull along the in-edges
#define WS_PULL_OUT 1ull  // pull along the out-edges (CC on a directed graph)
#define WS_ACT 2ull       // activate along the activation rows
#define WS_ACT_IN 3ull    // activate along the in-edges (CC, directed, R = 1)

// A CSR (or CSC): row v is adj[offs[v] .. offs[v+1]).
struct Rows {
    const eid_t* __restrict__ offs;
    const vid_t* __restrict__ adj;
};

// The lane that owns element i of the round's concatenated rows: the
// largest l with ps[l] <= i (ps is the lanes' exclusive prefix sum, so
// ps[0] = 0; an empty row shares its start with the next and is never
// chosen). Every lane must call it.
__device__ __forceinline__ unsigned ws_owner(unsigned ps, unsigned i) {
    unsigned lo = 0;
#pragma unroll
    for (unsigned step = 16; step > 0; step >>= 1) {
        unsigned p = __shfl_sync(FULL_MASK, ps, lo + step);
        if (p <= i) lo += step;
    }
    return lo;
}

// The segmented reduction without head flags: after it, the first lane of
// each run of lanes with equal seg holds the combination of the run's
// values. Lanes that must not combine get a seg of their own. Every lane
// must call it.
template <typename T, class Combine>
__device__ __forceinline__ T ws_segment_reduce(T x, unsigned seg, Combine combine) {
    const unsigned lane = lane_id();
#pragma unroll
    for (unsigned off = 1; off < 32; off <<= 1) {
        T y = __shfl_down_sync(FULL_MASK, x, off);
        unsigned s = __shfl_down_sync(FULL_MASK, seg, off);
        if (lane + off < 32 && s == seg) x = combine(x, y);
    }
    return x;
}

// Whether this lane starts its run of equal seg. Every lane must call it.
__device__ __forceinline__ bool ws_segment_head(unsigned seg) {
    unsigned before = __shfl_up_sync(FULL_MASK, seg, 1);
    return lane_id() == 0 || before != seg;
}

// Folds the messages of the round's rows into acc (the warp's 32
// accumulators in shared memory, one per lane's vertex): the lanes with
// take set contribute their vertex's row r of rows (weights w). Returns the
// edges examined. Every lane must call it.
template <class P>
__device__ __forceinline__ unsigned ws_pull(Rows rows, EdgeArray<typename P::Weight> w, const typename P::Value* values,
                                            long long v, bool take, typename P::Value* acc)
{
    typedef typename P::Value V;
    const unsigned lane = lane_id();
    eid_t first = 0;
    unsigned len = 0;
    if (take) {
        first = rows.offs[v];
        len = (unsigned)(rows.offs[v + 1] - first);
    }
    unsigned total;
    const unsigned ps = warp_exclusive_sum(len, total);
    for (unsigned pass = 0; pass < total; pass += 32) {
        const unsigned i = pass + lane;
        unsigned seg = ws_owner(ps, i);
        const eid_t row = __shfl_sync(FULL_MASK, first, seg);
        const unsigned row_ps = __shfl_sync(FULL_MASK, ps, seg);
        V m = P::none();
        if (i < total) {
            const eid_t e = row + (i - row_ps);
            m = P::compute(values[rows.adj[e]], w(e));
        } else {
            seg = 32 + lane;
        }
        m = ws_segment_reduce(m, seg, [](V a, V b) { return P::better(b, a) ? b : a; });
        if (ws_segment_head(seg) && i < total && P::better(m, acc[seg])) acc[seg] = m;
        __syncwarp();
    }
    return total;
}

// Sets the activeness bit of every target group of the rows the lanes with
// take set own (targets >> log_r), skipping bits already set. Returns the
// edges walked. Every lane must call it.
__device__ __forceinline__ unsigned ws_activate(Rows rows, long long r, bool take, unsigned log_r, unsigned* next) {
    const unsigned lane = lane_id();
    eid_t first = 0;
    unsigned len = 0;
    if (take) {
        first = rows.offs[r];
        len = (unsigned)(rows.offs[r + 1] - first);
    }
    unsigned total;
    const unsigned ps = warp_exclusive_sum(len, total);
    for (unsigned pass = 0; pass < total; pass += 32) {
        const unsigned i = pass + lane;
        const unsigned seg = ws_owner(ps, i);
        const eid_t row = __shfl_sync(FULL_MASK, first, seg);
        const unsigned row_ps = __shfl_sync(FULL_MASK, ps, seg);
        if (i < total) {
            const unsigned g = rows.adj[row + (i - row_ps)] >> log_r;
            const unsigned bit = 1u << (g & 31u);
            if (!(*(volatile unsigned*)&next[g >> 5] & bit)) atomicOr(&next[g >> 5], bit);
        }
    }
    return total;
}

// Queues the hub segments of the lanes with hub set (row length len, the
// vertex v, the kind), one atomic for the warp. Every lane must call it.
__device__ __forceinline__ void ws_queue_hubs(bool hub, long long v, eid_t len, unsigned long long kind,
                                              hubwork_t* queue, unsigned* queued)
{
    const unsigned segments = hub ? (unsigned)((len + WS_SEGMENT - 1) / WS_SEGMENT) : 0;
    unsigned total;
    const unsigned at = warp_exclusive_sum(segments, total);
    if (total == 0) return;
    unsigned base = 0;
    if (lane_id() == 0) base = atomicAdd(queued, total);
    base = __shfl_sync(FULL_MASK, base, 0);
    for (unsigned s = 0; s < segments; s++)
        queue[base + at + s] = (hubwork_t)(unsigned)v | ((hubwork_t)s << 32) | (kind << 60);
}

// What one iteration reads and writes (the kernels take the fields one by
// one, in this order: WS_PARAMS below).
template <class P>
struct WSArgs {
    Rows in;                                  // pull rows (CSC; the CSR of an undirected graph)
    const typename P::Weight* in_weights;     // their weights in the program's type (null: none)
    Rows out;                                 // CC on a directed graph: also pull along out-edges (else null)
    Rows act;                                 // KiTES: activation rows (out-edges, or groups → groups)
    Rows act_in;                              // KiTES, CC on a directed graph, R = 1: also in-edges
    typename P::Value* values;
    unsigned* mask;                           // KiTES: 2 × mask_words activeness words, by parity
    unsigned* pending;                        // KiTES: D, a bit per vertex
    hubwork_t* queue;                         // hub segments of this iteration
    VPState* st;
    long long n;
    long long mask_words;
    long long hub_degree;
    unsigned log_r;                           // KiTES: log2 of the grouping ratio
};

// The best of m over the block, valid in thread 0; scratch holds 32 values.
template <class P>
__device__ __forceinline__ typename P::Value block_best(typename P::Value m, typename P::Value* scratch) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        typename P::Value y = __shfl_xor_sync(FULL_MASK, m, off);
        if (P::better(y, m)) m = y;
    }
    const unsigned warp = threadIdx.x >> 5, lane = lane_id();
    if (lane == 0) scratch[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = lane < (blockDim.x >> 5) ? scratch[lane] : P::none();
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            typename P::Value y = __shfl_xor_sync(FULL_MASK, m, off);
            if (P::better(y, m)) m = y;
        }
    }
    __syncthreads();
    return m;
}

// One iteration's rounds (the first launch). KITES selects the
// work-efficient variant; without it every vertex pulls every iteration and
// nothing is activated (Warp Segmentation, §2.2.1).
template <class P, bool KITES>
__device__ __forceinline__ void ws_iterate(const WSArgs<P>& a)
{
    typedef typename P::Value V;
    __shared__ V acc_all[256];
    __shared__ double scratch[32];
    if (*(volatile unsigned*)&a.st->done) return;
    const unsigned t = a.st->iteration, lane = lane_id();
    V* acc = acc_all + (threadIdx.x & ~31u);
    unsigned* cur = a.mask + (t & 1u ? a.mask_words : 0);
    unsigned* next = a.mask + (t & 1u ? 0 : a.mask_words);
    unsigned* queued = &a.st->outliers[t & 1u];
    const double threshold = a.st->threshold, top = a.st->top;
    const double inf = __longlong_as_double((long long)GPIPE_INF_BITS);
    EdgeArray<typename P::Weight> w{a.in_weights};
    const unsigned log_r = a.log_r;
    double far = inf;
    unsigned active = 0;
    unsigned long long examined = 0, walked = 0;  // edges pulled, edges walked to activate
    const long long chunks = (a.n + WS_CHUNK - 1) / WS_CHUNK;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long c = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; c < chunks; c += warps) {
        // Lane l looks at round l of the chunk: whether any of its vertices
        // is active or pending.
        const long long round = c * WS_CHUNK + 32 * lane;
        unsigned word = 0, dword = 0;
        bool visit = round < a.n;
        if (KITES && visit) {
            const long long g = round >> log_r;
            word = cur[g >> 5];
            const unsigned groups = 32u >> log_r;  // the round's groups: bits [g & 31, + groups)
            const unsigned bits = groups == 32 ? word : (word >> (g & 31)) & ((1u << groups) - 1u);
            dword = a.pending[round >> 5];
            visit = bits != 0 || dword != 0;
        }
        for (unsigned todo = __ballot_sync(FULL_MASK, visit); todo; todo &= todo - 1) {
            const unsigned r = __ffs(todo) - 1;
            const long long v0 = c * WS_CHUNK + 32 * r, v = v0 + lane;
            const bool in_range = v < a.n;
            bool is_active = in_range, in_d = false;
            unsigned d_was = 0;
            if (KITES) {
                const unsigned wr = __shfl_sync(FULL_MASK, word, r);
                is_active = in_range && ((wr >> ((v >> log_r) & 31)) & 1u);
                d_was = __shfl_sync(FULL_MASK, dword, r);
                in_d = (d_was >> lane) & 1u;
            }
            const V old = in_range ? a.values[v] : P::none();
            acc[lane] = old;
            __syncwarp();
            // The pull; a hub's rows go to the queue.
            eid_t len = is_active ? a.in.offs[v + 1] - a.in.offs[v] : 0;
            bool hub = len > a.hub_degree;
            ws_queue_hubs(hub, v, len, WS_PULL_IN, a.queue, queued);
            examined += ws_pull<P>(a.in, w, a.values, v, is_active && !hub, acc);
            // Only unweighted programs (CC) pull both ways.
            if constexpr (std::is_same<typename P::Weight, Unit>::value) {
                if (a.out.offs) {
                    len = is_active ? a.out.offs[v + 1] - a.out.offs[v] : 0;
                    hub = len > a.hub_degree;
                    ws_queue_hubs(hub, v, len, WS_PULL_OUT, a.queue, queued);
                    examined += ws_pull<P>(a.out, w, a.values, v, is_active && !hub, acc);
                }
            }
            const V now = acc[lane];
            const bool changed = in_range && P::better(now, old);
            // The only writer of v's value in this launch: the hubs' second
            // launch comes after it.
            if (changed) a.values[v] = now;
            if (!KITES) {
                active += __popc(__ballot_sync(FULL_MASK, changed));
                continue;
            }
            // Activation: at once when near, else kept in D.
            const bool pend = changed || in_d;
            bool near = pend;
            if (P::has_priority && pend) {
                const double pr = P::priority(now, top);
                near = pr < threshold;
                if (!near) far = fmin(far, pr);
            }
            // The round's D word has one writer in this launch: this warp.
            const unsigned keep = __ballot_sync(FULL_MASK, pend && !near);
            if (lane == 0 && keep != d_was) a.pending[v0 >> 5] = keep;
            const unsigned nears = __ballot_sync(FULL_MASK, near);
            active += __popc(__ballot_sync(FULL_MASK, near || changed));
            if (nears == 0) continue;
            // With groups, one lane activates each group: the first near
            // lane of its R lanes (R <= 32 lanes of a round share a group).
            bool lead = near;
            long long row = v;
            if (log_r > 0) {
                const unsigned r_lanes = 1u << min(log_r, 5u);
                const unsigned group_lanes = (r_lanes == 32 ? FULL_MASK : ((1u << r_lanes) - 1u) << (lane & ~(r_lanes - 1)));
                lead = near && (nears & group_lanes & lanes_below()) == 0;
                row = v >> log_r;
            }
            len = lead ? a.act.offs[row + 1] - a.act.offs[row] : 0;
            hub = len > a.hub_degree;
            ws_queue_hubs(hub, row, len, WS_ACT, a.queue, queued);
            walked += ws_activate(a.act, row, lead && !hub, log_r, next);
            if (a.act_in.offs) {
                len = near ? a.act_in.offs[v + 1] - a.act_in.offs[v] : 0;
                hub = len > a.hub_degree;
                ws_queue_hubs(hub, v, len, WS_ACT_IN, a.queue, queued);
                walked += ws_activate(a.act_in, v, near && !hub, 0, next);
            }
        }
        // Clear the activeness words this chunk read (every word lies in
        // one chunk, since R <= 32): the lane whose round starts a word.
        if (KITES && word != 0 && ((round >> log_r) & 31) == 0) cur[(round >> log_r) >> 5] = 0;
    }
    const double block_far = block_min(far, scratch);
    const double block_active = block_sum((double)active, scratch);
    const double block_examined = block_sum((double)examined, scratch);
    const double block_walked = block_sum((double)walked, scratch);
    if (threadIdx.x == 0) {
        if (block_active > 0) atomicAdd(&a.st->active, (unsigned)block_active);
        if (block_far < inf) atomicMin(&a.st->far_min, (unsigned long long)__double_as_longlong(block_far));
        if (block_examined > 0) atomicAdd(&a.st->examined, (unsigned long long)block_examined);
        if (block_walked > 0) atomicAdd(&a.st->walked, (unsigned long long)block_walked);
    }
}

// The hubs' segments queued by this iteration's rounds, a block each (the
// second launch); its last block ends the iteration.
template <class P, bool KITES>
__device__ __forceinline__ void ws_hubs(const WSArgs<P>& a)
{
    typedef typename P::Value V;
    __shared__ V scratch_v[32];
    if (*(volatile unsigned*)&a.st->done) return;
    const unsigned t = a.st->iteration;
    unsigned* next = a.mask + (t & 1u ? 0 : a.mask_words);
    const unsigned count = *(volatile unsigned*)&a.st->outliers[t & 1u];
    EdgeArray<typename P::Weight> w{a.in_weights};
    unsigned changed = 0;
    unsigned long long examined = 0, walked = 0;
    for (unsigned i = blockIdx.x; i < count; i += gridDim.x) {
        const hubwork_t entry = a.queue[i];
        const long long v = (long long)(entry & 0xffffffffu);
        const eid_t segment = (eid_t)((entry >> 32) & 0x0fffffffu);
        const unsigned long long kind = entry >> 60;
        const Rows rows = kind == WS_PULL_IN ? a.in : kind == WS_PULL_OUT ? a.out : kind == WS_ACT ? a.act : a.act_in;
        const eid_t first = rows.offs[v] + segment * WS_SEGMENT, last = min(first + WS_SEGMENT, rows.offs[v + 1]);
        if (kind == WS_PULL_IN || kind == WS_PULL_OUT) {
            examined += last - first;
            V m = P::none();
            // Only unweighted programs (CC) pull out-edges, so w(e) reads
            // no weight of the wrong direction.
            for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x) {
                const V x = P::compute(a.values[rows.adj[e]], w(e));
                if (P::better(x, m)) m = x;
            }
            m = block_best<P>(m, scratch_v);
            if (threadIdx.x == 0 && P::better(m, a.values[v])) {
                const V old = P::atomic_improve(&a.values[v], m);
                if (P::better(m, old)) {
                    changed++;
                    // Its activation waits for the next iteration's rounds.
                    if (KITES) atomicOr(&a.pending[v >> 5], 1u << (v & 31));
                }
            }
        } else {
            walked += last - first;
            const unsigned log_r = kind == WS_ACT ? a.log_r : 0;
            for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x) {
                const unsigned g = rows.adj[e] >> log_r;
                const unsigned bit = 1u << (g & 31u);
                if (!(*(volatile unsigned*)&next[g >> 5] & bit)) atomicOr(&next[g >> 5], bit);
            }
        }
    }
    if (threadIdx.x == 0) {
        if (changed) atomicAdd(&a.st->active, changed);
        if (examined) atomicAdd(&a.st->examined, examined);
        if (walked) atomicAdd(&a.st->walked, walked);
    }
    if (last_block(&a.st->blocks_done) && threadIdx.x == 0) vp_advance(a.st, t);
}

// The kernels' parameters, in WSArgs' order, and the struct made of them.
#define WS_PARAMS(P)                                                                                       \
    const eid_t *in_offs, const vid_t *in_adj, const P::Weight *in_weights, const eid_t *out_offs,         \
        const vid_t *out_adj, const eid_t *act_offs, const vid_t *act_adj, const eid_t *act_in_offs,       \
        const vid_t *act_in_adj, P::Value *values, unsigned *mask, unsigned *pending, hubwork_t *queue,    \
        VPState *st, long long n, long long mask_words, long long hub_degree, unsigned log_r
#define WS_ARGS(P)                                                                                         \
    WSArgs<P> { {in_offs, in_adj}, in_weights, {out_offs, out_adj}, {act_offs, act_adj},                  \
                {act_in_offs, act_in_adj}, values, mask, pending, queue, st, n, mask_words, hub_degree, log_r }
