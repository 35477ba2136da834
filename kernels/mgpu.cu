// Several GPUs (operators/mgpu*.go): the kernels each GPU runs around the
// exchanges of a 1-D partitioned run. Part p owns the vertices [lo, hi) and
// holds the edges into them (convert/partition.go) with the whole graph's
// vertex ids; vertex-value arrays are full length on every GPU, and each GPU
// writes only its own vertices' entries, which the exchanges copy to the
// others.
//
//   BFS (Enterprise §4.4)   runs bfs_enterprise.cu's kernels on the part:
//                           a level sets the part's bits of the frontier's
//                           bitmap, mg_push_clear stores the part's nonzero
//                           words straight into every other GPU's bitmap
//                           and counts them (or the transport gathers
//                           them), and ent_queue queues the whole frontier
//                           from them; where the level may turn the search
//                           bottom-up, mg_push_clear also lists the hubs
//                           into every part's hub list.
//   PageRank                mg_pr_ws_* is warpseg.cuh's pull over the
//                           owned range only; the owned contributions are
//                           gathered from every GPU each iteration.
//   vertex programs         Vertex Refinement (khorasani-dissertation §2.3):
//   (SSSP, SSWP, CC)        mg_pull pulls the active owned vertices (Warp
//                           Segmentation's rounds), lists the ones it
//                           improved, and collects the improved *boundary*
//                           vertices (marked offline) into an outbox with a
//                           ballot, a prefix sum in popc and one atomic a
//                           warp (§2.3.3); outboxes travel, mg_apply writes
//                           them, mg_activate marks the owned out-neighbours
//                           of every local and received update active.
//                           With Permissive Partitioning (§3.3) a part
//                           holds more than it owns, and the range it pulls
//                           slides each iteration by the active vertices
//                           mg_count_sections counts per 128-vertex section.
#include "warpseg.cuh"

// ---- BFS: the frontier's bitmap ----

// Stores the nonzero words [lo, hi) of bits, the part's own, into each of
// the npeers bitmaps listed at peers (the other parts' copies, which are
// clear), counts their vertices and the hubs among them (hub_bits) into
// stats' own_found and own_hubs, copies the stats to host_stats (the host's
// mapped memory; level_stats_to_host), and clears the
// words [0, clear_words) of done: the buffer (stats and bitmap) of the
// level just expanded, which the next level writes. Over NVLink
// a GPU writes into another's memory directly (peer access), so a level's
// exchange is this kernel, a few µs when the frontier is small, where a
// collective moves the whole range whatever it holds; zero words are left
// out, being what the peers already hold. One launch a part and level does
// it all, where a launch a peer and a memset cost the host k driver calls a
// part (operators/mgpu_bfs.go: a small level's time on four GPUs was
// mostly such calls). zeros stores the zero words too: the set-up's first
// touch of the peers' bitmaps. With list_hubs, each hub among the words
// also joins the hub list of every part (nparts of them, this one's
// included: hub_lists and their counts hub_counts, room for hub_cap each),
// the list a bottom-up level's hub cache loads: a level that turns the
// search bottom-up then needs no pass over the whole frontier for it.
//
// PushClearArgs are mg_push_clear's arguments, one struct
// (operators/multigpu/bfs.go's pushClearArgs mirrors it field by field).
struct PushClearArgs {
    ReadOnly<unsigned> bits;  // its own words, which no peer writes
    ReadOnly<unsigned*> peers;
    ReadOnly<unsigned> hub_bits;
    LevelStats* stats;
    unsigned* host_stats;
    unsigned* done;
    ReadOnly<vid_t*> hub_lists;
    ReadOnly<unsigned*> hub_counts;
    long long lo, hi, clear_words;
    int npeers, zeros, nparts, list_hubs;
    unsigned hub_cap;
};

extern "C" __global__ void __launch_bounds__(256) mg_push_clear(PushClearArgs a)
{
    const ReadOnly<unsigned> bits = a.bits;
    const ReadOnly<unsigned*> peers = a.peers;
    const ReadOnly<unsigned> hub_bits = a.hub_bits;
    LevelStats* stats = a.stats;
    unsigned* host_stats = a.host_stats;
    unsigned* __restrict__ done = a.done;
    const ReadOnly<vid_t*> hub_lists = a.hub_lists;
    const ReadOnly<unsigned*> hub_counts = a.hub_counts;
    const long long lo = a.lo, hi = a.hi, clear_words = a.clear_words;
    const int npeers = a.npeers, zeros = a.zeros, nparts = a.nparts, list_hubs = a.list_hubs;
    const unsigned hub_cap = a.hub_cap;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned found = 0, hubs = 0;
    for (long long w = lo + first; w < hi; w += stride) {
        const unsigned v = bits[w];
        if (v != 0 || zeros) {
            for (int p = 0; p < npeers; p++) peers[p][w] = v;
        }
        if (v != 0) {
            const unsigned h = v & hub_bits[w];
            found += __popc(v);
            hubs += __popc(h);
            if (list_hubs) {
                // Hubs are a few thousand in all: an atomic each and part.
                for (unsigned left = h; left != 0; left &= left - 1) {
                    const vid_t hub = (vid_t)(w * 32 + __ffs(left) - 1);
                    for (int p = 0; p < nparts; p++) {
                        const unsigned slot = atomicAdd(hub_counts[p], 1u);
                        if (slot < hub_cap) hub_lists[p][slot] = hub;
                    }
                }
            }
        }
    }
    for (long long w = first; w < clear_words; w += stride) done[w] = 0;
    block_add(found, &stats->own_found);
    block_add(hubs, &stats->own_hubs);
    level_stats_to_host(stats, host_stats);
}

// ---- PageRank: the pull of the owned range ----

// warpseg.cuh's ws_pagerank_pull over the part's own vertices [lo, hi)
// (PRPullArgs), the sources streamed as on one GPU.
#define MG_PR(SUF, C, HUB)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) mg_pr_ws_##SUF(PRPullArgs<C> a)                          \
    {                                                                                                         \
        ws_pagerank_pull<C, HUB, false>(a);                                                                   \
    }

MG_PR(f64, double, false)
MG_PR(f32, float, false)
MG_PR(f64_hub, double, true)
MG_PR(f32_hub, float, true)

// ---- Vertex Refinement ----

// Bits: a const unsigned* or a ReadOnly<unsigned>.
template <class Bits>
__device__ __forceinline__ bool mg_bit(const Bits& bits, long long v) {
    return (bits[v >> 5] >> (v & 31)) & 1u;
}

// The lists an update joins: every improved vertex (changed), and the
// improved boundary vertices with their values (the outbox). Every lane of
// the warp must call it.
template <typename V>
__device__ __forceinline__ void mg_collect(bool improved, bool boundary, vid_t v, V value, vid_t* changed,
                                           unsigned* changed_count, vid_t* out_ids, V* out_vals, unsigned* out_count)
{
    warp_append(improved, v, changed, changed_count, 0xffffffffu);
    const bool send = improved && boundary;
    const unsigned ballot = __ballot_sync(FULL_MASK, send);
    if (ballot == 0) return;
    unsigned base = 0;
    if (lane_id() == 0) base = atomicAdd(out_count, (unsigned)__popc(ballot));
    base = __shfl_sync(FULL_MASK, base, 0);
    if (send) {
        const unsigned at = base + __popc(ballot & lanes_below());
        out_ids[at] = v;
        out_vals[at] = value;
    }
}

// One iteration's pull of the owned vertices [lo, hi) set in active, 32
// consecutive vertices a warp (Warp Segmentation's rounds); rows longer
// than hub_degree are mg_hubs'.
// MgPullArgs are the arguments of mg_pull and mg_hubs, one struct
// (operators/multigpu/vp.go's mgPullArgs mirrors it field by field):
// hub_degree is mg_pull's, hubs and hub_count mg_hubs'.
template <class P>
struct MgPullArgs {
    ReadOnly<eid_t> in_offs;
    ReadOnly<vid_t> in_adj;
    ReadOnly<typename P::Weight> in_weights;
    typename P::Value* values;
    ReadOnly<unsigned> active;  // mg_activate writes it, in a later launch
    ReadOnly<unsigned> boundary;
    vid_t* changed;
    unsigned* changed_count;
    vid_t* out_ids;
    typename P::Value* out_vals;
    unsigned* out_count;
    unsigned long long* examined;
    ReadOnly<vid_t> hubs;
    long long lo, hi, hub_degree;
    unsigned hub_count;
};

template <class P>
__device__ __forceinline__ void mg_pull(const MgPullArgs<P>& a)
{
    const Rows in{a.in_offs, a.in_adj};
    const ReadOnly<typename P::Weight> in_weights = a.in_weights;
    typename P::Value* values = a.values;
    const ReadOnly<unsigned> active = a.active;
    const long long lo = a.lo, hi = a.hi, hub_degree = a.hub_degree;
    const ReadOnly<unsigned> boundary = a.boundary;
    vid_t* changed = a.changed;
    unsigned* changed_count = a.changed_count;
    vid_t* out_ids = a.out_ids;
    typename P::Value* out_vals = a.out_vals;
    unsigned* out_count = a.out_count;
    unsigned long long* examined = a.examined;
    typedef typename P::Value V;
    __shared__ V acc_all[256];
    V* acc = acc_all + (threadIdx.x & ~31u);
    EdgeArray<typename P::Weight> w{in_weights};
    const unsigned lane = lane_id();
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    unsigned long long pulled = 0;
    for (long long c = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; lo + c * 32 < hi; c += warps) {
        const long long v = lo + c * 32 + lane;
        bool take = v < hi && mg_bit(active, v);
        if (take && hub_degree > 0 && in.offs[v + 1] - in.offs[v] > hub_degree) take = false;
        if (__ballot_sync(FULL_MASK, take) == 0) continue;
        acc[lane] = P::none();
        __syncwarp();
        pulled += ws_pull<P>(in, w, values, v, take, acc);
        __syncwarp();
        const V m = acc[lane];
        const bool improved = take && P::better(m, values[v]);
        if (improved) values[v] = m;
        mg_collect<V>(improved, improved && mg_bit(boundary, v), (vid_t)v, m, changed, changed_count, out_ids,
                      out_vals, out_count);
    }
    if (lane == 0 && pulled) atomicAdd(examined, pulled);
}

// The active hubs of the part in [lo, hi) (rows over hub_degree, listed in
// hubs), a block each.
template <class P>
__device__ __forceinline__ void mg_hubs(const MgPullArgs<P>& a)
{
    const Rows in{a.in_offs, a.in_adj};
    const ReadOnly<typename P::Weight> in_weights = a.in_weights;
    typename P::Value* values = a.values;
    const ReadOnly<unsigned> active = a.active;
    const long long lo = a.lo, hi = a.hi;
    const ReadOnly<vid_t> hubs = a.hubs;
    const unsigned hub_count = a.hub_count;
    const ReadOnly<unsigned> boundary = a.boundary;
    vid_t* changed = a.changed;
    unsigned* changed_count = a.changed_count;
    vid_t* out_ids = a.out_ids;
    typename P::Value* out_vals = a.out_vals;
    unsigned* out_count = a.out_count;
    unsigned long long* examined = a.examined;
    typedef typename P::Value V;
    __shared__ V scratch[32];
    EdgeArray<typename P::Weight> w{in_weights};
    for (unsigned i = blockIdx.x; i < hub_count; i += gridDim.x) {
        const vid_t v = hubs[i];
        if (v < lo || v >= hi || !mg_bit(active, v)) continue;
        const eid_t first = in.offs[v], last = in.offs[v + 1];
        V m = P::none();
        for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x) {
            const V x = P::compute(values[in.adj[e]], w(e));
            if (P::better(x, m)) m = x;
        }
        m = block_best<P>(m, scratch);
        if (threadIdx.x < 32) {
            const bool improved = threadIdx.x == 0 && P::better(m, values[v]);
            if (improved) values[v] = m;
            mg_collect<V>(improved, improved && mg_bit(boundary, v), v, m, changed, changed_count, out_ids,
                          out_vals, out_count);
        }
        if (threadIdx.x == 0) atomicAdd(examined, (unsigned long long)(last - first));
        __syncthreads();
    }
}

#define MG_PROGRAM(NAME, P)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) mg_pull_##NAME(MgPullArgs<P> a) { mg_pull<P>(a); }      \
    extern "C" __global__ void __launch_bounds__(256) mg_hubs_##NAME(MgPullArgs<P> a) { mg_hubs<P>(a); }

MG_PROGRAM(sssp_u32u, SSSP32<Unit>)
MG_PROGRAM(sssp_u32, SSSP32<unsigned>)
MG_PROGRAM(sssp_f64, SSSP64)
MG_PROGRAM(sswp_k32u, SSWP32<Unit>)
MG_PROGRAM(sswp_k32, SSWP32<unsigned>)
MG_PROGRAM(sswp_k64, SSWP64)
MG_PROGRAM(cc, CCLabel)

// Writes another part's updates (an inbox) into values.
template <typename V>
__device__ __forceinline__ void mg_apply(const vid_t* __restrict__ ids, const V* __restrict__ vals, unsigned count,
                                         V* values)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        values[ids[i]] = vals[i];
}

extern "C" __global__ void __launch_bounds__(256) mg_apply32(const vid_t* ids, const unsigned* vals, unsigned count,
                                                             unsigned* values)
{
    mg_apply<unsigned>(ids, vals, count, values);
}

extern "C" __global__ void __launch_bounds__(256) mg_apply64(const vid_t* ids, const unsigned long long* vals,
                                                             unsigned count, unsigned long long* values)
{
    mg_apply<unsigned long long>(ids, vals, count, values);
}

// Marks active the targets of the rows of the listed vertices (the part's
// out-edges: targets it owns), a warp a vertex.
extern "C" __global__ void __launch_bounds__(256) mg_activate(
    const vid_t* __restrict__ ids, unsigned count, const eid_t* __restrict__ out_offs,
    const vid_t* __restrict__ out_adj, unsigned* active)
{
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < count; i += warps) {
        const vid_t u = ids[i];
        for (eid_t e = out_offs[u] + lane_id(); e < out_offs[u + 1]; e += 32) {
            const vid_t t = out_adj[e];
            const unsigned bit = 1u << (t & 31u);
            if ((*(volatile unsigned*)&active[t >> 5] & bit) == 0) atomicOr(&active[t >> 5], bit);
        }
    }
}

// ---- Permissive Partitioning, the online phase ----

// counts[i] = the active vertices of section i (128 vertices: 4 words of
// the mask) from word first on, for sections sections.
extern "C" __global__ void __launch_bounds__(256) mg_count_sections(
    const unsigned* __restrict__ active, long long first, long long sections, long long words, unsigned* counts)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < sections; i += (long long)gridDim.x * blockDim.x) {
        unsigned c = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const long long w = first + 4 * i + k;
            if (w < words) c += __popc(active[w]);
        }
        counts[i] = c;
    }
}
