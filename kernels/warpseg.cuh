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
//     the activations an iteration makes; the warp that reads a round's
//     bits clears them;
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
// Which rounds an iteration visits is not found by scanning the masks: the
// activation that first sets a bit of a round in the next mask, and the
// warp that leaves a vertex pending in D, append the round to the next
// iteration's round queue (once: a stamp per round says for which
// iteration it is queued). Warps take the queue's rounds in turn, so the
// work of a thin frontier (a grid's wavefront) spreads over the whole GPU,
// and an iteration costs nothing for the rounds it does not visit.
//
// Rows longer than hub_degree (the hubs) would keep one warp busy while
// the others idle; their edges are queued in segments of WS_SEGMENT for
// whole blocks (PPoPP'11 §3.2's deferred outliers), in a second launch of
// the same iteration, which folds its results in with atomic_improve.
//
// KiTES does not activate a hub (hub_mask: in-degree over hub_degree) when
// one of its in-neighbours changes: pulling a hub's whole row again for
// every change among its thousands of in-neighbours is what makes a pull
// work-inefficient on a skewed graph. The changed vertex sends its message
// along the edge instead (atomic_improve), and an improved hub is marked in
// the sent mask of the next iteration, whose round for it treats it as
// pending (a mask by parity, so that the warp that owns the hub's round in
// this iteration, reading and clearing its own marks, never races a send). Every in-neighbour's value reaches the hub this
// way, since a vertex activates (and sends) whenever its value changes and
// is near, so the hub's value is still the best over its in-edges. This
// needs the activation rows to be vertices (R = 1) with the edges' weights.
#pragma once

#include <type_traits>

#include "frontier.cuh"
#include "shards.cuh"

#define WS_SEGMENT 4096

// A queued hub segment: the vertex in bits 0-31, the segment in 32-59, the
// kind in 60-63.
typedef unsigned long long hubwork_t;
#define WS_PULL_IN 0ull   // pull along the in-edges
#define WS_PULL_OUT 1ull  // pull along the out-edges (CC on a directed graph)
#define WS_ACT 2ull       // activate along the activation rows
#define WS_ACT_IN 3ull    // activate along the in-edges (CC, directed, R = 1)

// A CSR (or CSC): row v is adj[offs[v] .. offs[v+1]).
struct Rows {
    ReadOnly<eid_t> offs;
    ReadOnly<vid_t> adj;
};

// What one iteration reads and writes: the kernels' one argument
// (operators/gpuop/vp_pull.go's wsArgs mirrors it field by field; a Rows
// is its two pointers).
template <class P>
struct WSArgs {
    Rows in;                                  // pull rows (CSC; the CSR of an undirected graph)
    ReadOnly<typename P::Weight> in_weights;  // their weights in the program's type (null: none)
    Rows out;                                 // CC on a directed graph: also pull along out-edges (else null)
    Rows act;                                 // KiTES: activation rows (out-edges, or groups → groups)
    Rows act_in;                              // KiTES, CC on a directed graph, R = 1: also in-edges
    ReadOnly<typename P::Weight> act_weights; // KiTES, R = 1: the activation rows' weights (null: none)
    ReadOnly<unsigned> hub_mask;              // KiTES, R = 1: a bit per hub, sent to instead of activated (else null)
    typename P::Value* values;
    unsigned* mask;                           // KiTES: 2 × mask_words activeness words, by parity
    unsigned* pending;                        // KiTES: D, a bit per vertex (a word per round), owner-written
    unsigned* sent;                           // KiTES: 2 × n/32 + 1 words by parity: vertices improved by sends
    vid_t* rounds;                            // KiTES: 2 × round queues of n/32 rounds, by parity
    unsigned* stamp;                          // KiTES: the iteration each round is queued for
    hubwork_t* queue;                         // hub segments of this iteration
    VPState* st;
    long long n;
    long long mask_words;
    long long hub_degree;
    unsigned log_r;                           // KiTES: log2 of the grouping ratio
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

// An element of the round's concatenated rows: its owner lane (seg, or
// 32 + lane past the end) and its edge.
struct WSElement {
    unsigned seg;
    eid_t e;
    bool valid;
};

// Element i of the rows whose lane starts are first and lane prefix sums
// ps, total long. Every lane must call it.
__device__ __forceinline__ WSElement ws_element(eid_t first, unsigned ps, unsigned total, unsigned i) {
    WSElement x;
    x.seg = ws_owner(ps, i);
    const eid_t row = __shfl_sync(FULL_MASK, first, x.seg);
    const unsigned row_ps = __shfl_sync(FULL_MASK, ps, x.seg);
    x.valid = i < total;
    x.e = row + (i - row_ps);
    if (!x.valid) x.seg = 32 + lane_id();
    return x;
}

// Folds the messages of the round's rows into acc (the warp's 32
// accumulators in shared memory, one per lane's vertex): the lanes with
// take set contribute their vertex's row of rows (weights w). Two passes
// of 32 edges at a time, their loads issued before either is reduced, so
// that two gathers a lane are in flight (§2.2.1: the search and the
// segment arithmetic hide the gather's latency). Returns the edges pulled.
// Every lane must call it.
template <class P>
__device__ __forceinline__ unsigned ws_pull(Rows rows, EdgeArray<typename P::Weight> w, const typename P::Value* values,
                                            long long v, bool take, typename P::Value* acc)
{
    typedef typename P::Value V;
    eid_t first = 0;
    unsigned len = 0;
    if (take) {
        first = rows.offs[v];
        len = (unsigned)(rows.offs[v + 1] - first);
    }
    unsigned total;
    const unsigned ps = warp_exclusive_sum(len, total);
    auto better = [](V a, V b) { return P::better(b, a) ? b : a; };
    for (unsigned pass = 0; pass < total; pass += 64) {
        const WSElement x = ws_element(first, ps, total, pass + lane_id());
        const WSElement y = ws_element(first, ps, total, pass + 32 + lane_id());
        const vid_t sx = x.valid ? rows.adj[x.e] : 0, sy = y.valid ? rows.adj[y.e] : 0;
        V mx = x.valid ? P::compute(values[sx], w(x.e)) : P::none();
        V my = y.valid ? P::compute(values[sy], w(y.e)) : P::none();
        mx = ws_segment_reduce(mx, x.seg, better);
        if (ws_segment_head(x.seg) && x.valid && P::better(mx, acc[x.seg])) acc[x.seg] = mx;
        __syncwarp();
        my = ws_segment_reduce(my, y.seg, better);
        if (ws_segment_head(y.seg) && y.valid && P::better(my, acc[y.seg])) acc[y.seg] = my;
        __syncwarp();
    }
    return total;
}

// Queues round r for iteration t + 1 unless it is queued already (its
// stamp), the lanes with want set at once, one atomic for the warp. Every
// lane must call it.
__device__ __forceinline__ void ws_queue_rounds(bool want, long long r, unsigned t, unsigned* stamp, vid_t* next_rounds,
                                                unsigned* count)
{
    if (want) want = atomicExch(&stamp[r], t + 1) != t + 1;
    warp_append(want, (vid_t)r, next_rounds, count, 0xffffffffu);
}

// Sets the activeness bit of group g in next; true when it was the first
// bit of g's round (the round must be queued).
__device__ __forceinline__ bool ws_set_active(unsigned g, unsigned log_r, unsigned* next) {
    const unsigned bit = 1u << (g & 31u);
    if (*(volatile unsigned*)&next[g >> 5] & bit) return false;
    const unsigned old = atomicOr(&next[g >> 5], bit);
    // The round's groups: 32 >> log_r bits of the word, aligned.
    const unsigned span = 32u >> log_r;
    const unsigned round_bits = span == 32 ? FULL_MASK : ((1u << span) - 1u) << (g & 31u & ~(span - 1u));
    return (old & round_bits) == 0;
}

// Whether vertex v is a hub that KiTES sends to (hub_mask, when set).
__device__ __forceinline__ bool ws_is_hub(const ReadOnly<unsigned>& hub_mask, unsigned v) {
    return hub_mask && ((hub_mask[v >> 5] >> (v & 31u)) & 1u);
}

// Sends message m to hub h: true when it improved h, which is then marked
// in sent_next (its round queued for the next iteration through the stamps,
// by the caller).
template <class P>
__device__ __forceinline__ bool ws_send(typename P::Value* values, unsigned h, typename P::Value m, unsigned* sent_next) {
    if (!P::better(m, values[h])) return false;
    if (!P::better(m, P::atomic_improve(&values[h], m))) return false;
    atomicOr(&sent_next[h >> 5], 1u << (h & 31u));
    return true;
}

// The sent marks of iteration t.
template <class P>
__device__ __forceinline__ unsigned* ws_sent(const WSArgs<P>& a, unsigned t) {
    return a.sent + (t & 1u ? a.n / 32 + 1 : 0);
}

// WSNext is where an iteration's activations go: the activeness words of
// iteration t + 1 (next) and its round queues (rounds, counted in count).
struct WSNext {
    unsigned t;
    unsigned* next;
    vid_t* rounds;
    unsigned* count;
};

// Activates the groups in the rows the lanes with take set own (each row's
// targets are groups: vertices when R = 1), queueing the rounds they open;
// a hub gets the lane's vertex's message (value now, weights w) instead.
// Returns the edges walked; improved counts the hubs improved. Every lane
// must call it.
template <class P>
__device__ __forceinline__ unsigned ws_activate(const WSArgs<P>& a, Rows rows, long long r, bool take, typename P::Value now,
                                                unsigned log_r, const WSNext& to, unsigned& improved)
{
    const ReadOnly<unsigned> hub_mask = a.hub_mask;
    const unsigned t = to.t;
    unsigned* next = to.next;
    typedef typename P::Value V;
    EdgeArray<typename P::Weight> w{a.act_weights};
    eid_t first = 0;
    unsigned len = 0;
    if (take) {
        first = rows.offs[r];
        len = (unsigned)(rows.offs[r + 1] - first);
    }
    unsigned total;
    const unsigned ps = warp_exclusive_sum(len, total);
    for (unsigned pass = 0; pass < total; pass += 32) {
        const WSElement x = ws_element(first, ps, total, pass + lane_id());
        const V from = __shfl_sync(FULL_MASK, now, x.seg & 31u);
        bool opened = false;
        unsigned g = 0;
        if (x.valid) {
            g = rows.adj[x.e];
            if (ws_is_hub(hub_mask, g)) {
                opened = ws_send<P>(a.values, g, P::compute(from, w(x.e)), ws_sent(a, t + 1));
                improved += opened;
            } else {
                opened = ws_set_active(g, log_r, next);
            }
        }
        ws_queue_rounds(opened, ((long long)g << log_r) >> 5, t, a.stamp, to.rounds, to.count);
    }
    return total;
}

// Queues the hub segments of the lanes with hub set (row length len, the
// row r, the kind), one atomic for the warp. Every lane must call it.
__device__ __forceinline__ void ws_queue_hubs(bool hub, long long r, eid_t len, unsigned long long kind,
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
        queue[base + at + s] = (hubwork_t)(unsigned)r | ((hubwork_t)s << 32) | (kind << 60);
}

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

// What a warp's rounds add to the iteration's totals.
struct WSTally {
    double far;                   // the nearest priority left pending
    unsigned active;              // vertices changed or activating
    unsigned long long examined;  // edges pulled (counted in lane 0)
    unsigned long long walked;    // edges walked to activate (lane 0)
};

// One round of one iteration: the 32 vertices from v0, those of them
// active (is_active, this lane's) pulling, then (KiTES) activating or
// staying pending. Every lane must call it.
template <class P, bool KITES>
__device__ __forceinline__ void ws_round(const WSArgs<P>& a, long long r, bool is_active, bool in_d, unsigned d_was,
                                         bool in_s, typename P::Value* acc, unsigned t, unsigned* next, WSTally& tally)
{
    typedef typename P::Value V;
    const unsigned lane = lane_id();
    const long long v0 = r * 32, v = v0 + lane;
    const bool in_range = v < a.n;
    unsigned* queued = &a.st->outliers[t & 1u];
    EdgeArray<typename P::Weight> w{a.in_weights};
    const V old = in_range ? a.values[v] : P::none();
    acc[lane] = old;
    __syncwarp();
    // The pull; a hub's rows go to the queue.
    eid_t len = is_active ? a.in.offs[v + 1] - a.in.offs[v] : 0;
    bool hub = len > a.hub_degree;
    ws_queue_hubs(hub, v, len, WS_PULL_IN, a.queue, queued);
    unsigned pulled = ws_pull<P>(a.in, w, a.values, v, is_active && !hub, acc);
    // Only unweighted programs (CC) pull both ways.
    if constexpr (std::is_same<typename P::Weight, Unit>::value) {
        if (a.out.offs) {
            len = is_active ? a.out.offs[v + 1] - a.out.offs[v] : 0;
            hub = len > a.hub_degree;
            ws_queue_hubs(hub, v, len, WS_PULL_OUT, a.queue, queued);
            pulled += ws_pull<P>(a.out, w, a.values, v, is_active && !hub, acc);
        }
    }
    if (lane == 0) tally.examined += pulled;
    V now = acc[lane];
    bool changed = false;
    if (in_range && P::better(now, old)) {
        // A round is visited once an iteration, so this warp is the only
        // writer of v's value in this launch, and the hubs' launch comes
        // after it; the atomic keeps the value monotone all the same.
        const V before = P::atomic_improve(&a.values[v], now);
        changed = P::better(now, before);
        if (!changed) now = before;
    }
    if (!KITES) {
        const unsigned changes = __ballot_sync(FULL_MASK, changed);
        if (lane == 0) tally.active += __popc(changes);
        return;
    }
    // Activation: at once when near, else kept in D.
    const bool pend = changed || in_d || in_s;
    bool near = pend;
    if (P::has_priority && pend) {
        const double pr = P::priority(now, a.st->top);
        near = pr < a.st->threshold;
        if (!near) tally.far = fmin(tally.far, pr);
    }
    // The round's D word has one writer in this launch: this warp.
    const unsigned keep = __ballot_sync(FULL_MASK, pend && !near);
    vid_t* next_rounds = a.rounds + ((t + 1) & 1u ? a.n / 32 + 1 : 0);
    unsigned* next_count = &a.st->rounds[(t + 1) & 1u];
    if (lane == 0 && keep != d_was) a.pending[r] = keep;
    ws_queue_rounds(lane == 0 && keep != 0, r, t, a.stamp, next_rounds, next_count);
    const unsigned nears = __ballot_sync(FULL_MASK, near);
    const unsigned acting = __ballot_sync(FULL_MASK, near || changed);
    if (lane == 0) tally.active += __popc(acting);
    if (nears == 0) return;
    // With groups, one lane activates each group: the first near lane of
    // its R lanes (R <= 32 lanes of a round share a group).
    const unsigned log_r = a.log_r;
    bool lead = near;
    long long row = v;
    if (log_r > 0) {
        const unsigned r_lanes = 1u << log_r;
        const unsigned group_lanes = (r_lanes == 32 ? FULL_MASK : ((1u << r_lanes) - 1u) << (lane & ~(r_lanes - 1)));
        lead = near && (nears & group_lanes & lanes_below()) == 0;
        row = v >> log_r;
    }
    len = lead ? a.act.offs[row + 1] - a.act.offs[row] : 0;
    hub = len > a.hub_degree;
    ws_queue_hubs(hub, row, len, WS_ACT, a.queue, queued);
    unsigned improved = 0;
    const WSNext to{t, next, next_rounds, next_count};
    unsigned walked = ws_activate(a, a.act, row, lead && !hub, now, log_r, to, improved);
    if (a.act_in.offs) {
        len = near ? a.act_in.offs[v + 1] - a.act_in.offs[v] : 0;
        hub = len > a.hub_degree;
        ws_queue_hubs(hub, v, len, WS_ACT_IN, a.queue, queued);
        walked += ws_activate(a, a.act_in, v, near && !hub, now, 0, to, improved);
    }
    tally.active += improved;
    if (lane == 0) tally.walked += walked;
}

// Adds the warps' tallies to the iteration's totals, an atomic a block.
__device__ __forceinline__ void ws_add_tally(const WSTally& tally, VPState* st) {
    __shared__ double scratch[32];
    const double inf = __longlong_as_double((long long)GPIPE_INF_BITS);
    const double far = block_min(tally.far, scratch);
    const double active = block_sum((double)tally.active, scratch);
    const double examined = block_sum((double)tally.examined, scratch);
    const double walked = block_sum((double)tally.walked, scratch);
    if (threadIdx.x == 0) {
        if (active > 0) atomicAdd(&st->active, (unsigned)active);
        if (far < inf) atomicMin(&st->far_min, (unsigned long long)__double_as_longlong(far));
        if (examined > 0) atomicAdd(&st->examined, (unsigned long long)examined);
        if (walked > 0) atomicAdd(&st->walked, (unsigned long long)walked);
    }
}

// One iteration's rounds (the first launch). KITES selects the
// work-efficient variant: the rounds of the iteration's queue; without it
// every round, every iteration, and nothing is activated (Warp
// Segmentation, §2.2.1). A warp takes a round at a time.
template <class P, bool KITES>
__device__ __forceinline__ void ws_iterate(const WSArgs<P>& a)
{
    typedef typename P::Value V;
    __shared__ V acc_all[256];
    if (*(volatile unsigned*)&a.st->done) return;
    const unsigned t = a.st->iteration, lane = lane_id();
    V* acc = acc_all + (threadIdx.x & ~31u);
    unsigned* cur = a.mask + (t & 1u ? a.mask_words : 0);
    unsigned* next = a.mask + (t & 1u ? 0 : a.mask_words);
    const double inf = __longlong_as_double((long long)GPIPE_INF_BITS);
    WSTally tally{inf, 0, 0, 0};
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (!KITES) {
        for (long long r = first; r * 32 < a.n; r += warps)
            ws_round<P, false>(a, r, r * 32 + lane < a.n, false, 0, false, acc, t, next, tally);
    } else {
        const vid_t* rounds = a.rounds + (t & 1u ? a.n / 32 + 1 : 0);
        const long long count = *(volatile unsigned*)&a.st->rounds[t & 1u];
        const unsigned log_r = a.log_r, span = 32u >> log_r;
        for (long long i = first; i < count; i += warps) {
            const long long r = rounds[i], v = r * 32 + lane;
            // The round's activeness bits: span groups of its word.
            const long long g0 = (r * 32) >> log_r;
            const unsigned word = cur[g0 >> 5];
            const unsigned shift = (unsigned)(g0 & 31), round_bits = span == 32 ? FULL_MASK : ((1u << span) - 1u) << shift;
            const bool is_active = v < a.n && ((word >> ((v >> log_r) & 31)) & 1u);
            if (lane == 0 && (word & round_bits)) {
                if (span == 32) cur[g0 >> 5] = 0;
                else atomicAnd(&cur[g0 >> 5], ~round_bits);
            }
            const unsigned d_was = a.pending[r];
            // The last iteration's sends: this warp alone reads and clears
            // this iteration's marks of its round.
            unsigned* sent = ws_sent(a, t);
            const unsigned s_was = sent[r];
            if (lane == 0 && s_was) sent[r] = 0;
            ws_round<P, true>(a, r, is_active, (d_was >> lane) & 1u, d_was, (s_was >> lane) & 1u, acc, t, next, tally);
        }
    }
    ws_add_tally(tally, a.st);
}

// The end of a KiTES iteration: the round queue it read is empty for the
// iteration after next, which appends to it. (The sent marks it read were
// cleared by their rounds' warps.)
__device__ __forceinline__ void ws_advance(VPState* st, unsigned t, bool kites) {
    vp_advance(st, t);
    if (kites) st->rounds[t & 1u] = 0;
}

// The hubs' segments queued by this iteration's rounds, a block each (the
// second launch); its last block ends the iteration. A hub whose pull
// improves it goes to D, so that its round activates it next iteration.
template <class P, bool KITES>
__device__ __forceinline__ void ws_hubs(const WSArgs<P>& a)
{
    typedef typename P::Value V;
    __shared__ V scratch_v[32];
    if (*(volatile unsigned*)&a.st->done) return;
    const unsigned t = a.st->iteration;
    unsigned* next = a.mask + (t & 1u ? 0 : a.mask_words);
    vid_t* next_rounds = a.rounds + ((t + 1) & 1u ? a.n / 32 + 1 : 0);
    unsigned* next_count = &a.st->rounds[(t + 1) & 1u];
    const unsigned count = *(volatile unsigned*)&a.st->outliers[t & 1u];
    EdgeArray<typename P::Weight> w{a.in_weights};
    __shared__ unsigned block_changed;
    if (threadIdx.x == 0) block_changed = 0;
    __syncthreads();
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
                    if (KITES) {
                        atomicOr(&ws_sent(a, t + 1)[v >> 5], 1u << (v & 31));
                        if (atomicExch(&a.stamp[v >> 5], t + 1) != t + 1) next_rounds[atomicAdd(next_count, 1u)] = (vid_t)(v >> 5);
                    }
                }
            }
        } else {
            walked += last - first;
            const unsigned log_r = kind == WS_ACT ? a.log_r : 0;
            // The activating vertex's message, for the hubs (R = 1).
            const V from = a.hub_mask ? a.values[v] : P::none();
            EdgeArray<typename P::Weight> aw{a.act_weights};
            // Warp-uniform passes, since queueing the rounds is warp-wide.
            for (eid_t base = first; base < last; base += blockDim.x) {
                const eid_t e = base + threadIdx.x;
                bool opened = false;
                unsigned g = 0;
                if (e < last) {
                    g = rows.adj[e];
                    if (ws_is_hub(a.hub_mask, g)) {
                        opened = ws_send<P>(a.values, g, P::compute(from, kind == WS_ACT ? aw(e) : typename P::Weight()),
                                            ws_sent(a, t + 1));
                        changed += opened;
                    } else {
                        opened = ws_set_active(g, log_r, next);
                    }
                }
                ws_queue_rounds(opened, ((long long)g << log_r) >> 5, t, a.stamp, next_rounds, next_count);
            }
        }
    }
    // Every thread may have improved hubs; thread 0 alone the pulled ones.
    if (changed) atomicAdd(&block_changed, changed);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (block_changed) atomicAdd(&a.st->active, block_changed);
        if (examined) atomicAdd(&a.st->examined, examined);
        if (walked) atomicAdd(&a.st->walked, walked);
    }
    if (last_block(&a.st->blocks_done) && threadIdx.x == 0) ws_advance(a.st, t, KITES);
}

// PageRank's pull with Warp Segmentation over the vertices [lo, hi) of an
// n-vertex graph: a warp's 32 vertices' in-edges end to end, the
// contributions summed per segment; weighted (W: networkx's weight="weight"),
// each times its in-edge's weight in_weights[e]. Vertices of more than outlier_degree
// in-edges are left to pagerank_vwc.cu's pr_outliers and
// pr_outliers_finish. With HUB, a vertex's contribution sits at hub_id[v]
// (a hubs-first numbering: convert.HubOrder). One GPU pulls [0, n)
// (vp_warpseg.cu's pr_ws_*), a part of a partitioned graph its own range
// (mgpu.cu's mg_pr_ws_*). stream reads the sources past the caches
// (__ldcs): they are read once an iteration.
template <typename C, bool HUB, bool W>
__device__ __forceinline__ void ws_pagerank_pull(const PRPullArgs<C>& a)
{
    const ReadOnly<eid_t> in_offsets = a.in_offsets;
    const ReadOnly<vid_t> in_sources = a.in_sources;
    const ReadOnly<double> in_weights = a.in_weights;
    const ReadOnly<vid_t> hub_id = a.hub_id;
    const ReadOnly<C> contrib = a.contrib;
    const ReadOnly<double> inv_degree = a.inv_degree;
    const ReadOnly<double> rank = a.rank;
    double* __restrict__ next_rank = a.next_rank;
    C* __restrict__ next_contrib = a.next_contrib;
    const long long lo = a.lo, hi = a.hi, n = a.n, outlier_degree = a.outlier_degree;
    const double damping = a.damping;
    const double* dangling = a.dangling;
    double* next_dangling = a.next_dangling;
    double* l1 = a.l1;
    const bool stream = a.stream != 0;
    __shared__ double acc_all[256];
    __shared__ double scratch[32];
    const unsigned lane = lane_id();
    double* acc = acc_all + (threadIdx.x & ~31u);
    RankUpdate update(damping, dangling, n);
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long c = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; lo + c * 32 < hi; c += warps) {
        const long long v = lo + c * 32 + lane;
        eid_t first = 0;
        unsigned len = 0;
        bool mine = v < hi;
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
            const WSElement x = ws_element(first, ps, total, pass + lane);
            double y = 0;
            if (x.valid) {
                y = (double)contrib[stream ? __ldcs(address(in_sources, x.e)) : in_sources[x.e]];
                if (W) y *= stream ? __ldcs(address(in_weights, x.e)) : in_weights[x.e];
            }
            y = ws_segment_reduce(y, x.seg, [](double a, double b) { return a + b; });
            if (ws_segment_head(x.seg) && x.valid) acc[x.seg] += y;
            __syncwarp();
        }
        if (mine) update.apply(v, HUB ? (long long)hub_id[v] : v, acc[lane], rank, inv_degree, next_rank, next_contrib);
        __syncwarp();
    }
    update.flush(scratch, l1, next_dangling);
}

