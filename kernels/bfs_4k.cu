// Breadth-first search after BFS-4K (§5-6): top-down over a frontier queue,
// with the technique chosen per level from the frontier's size.
//
//   b4k_single     one block runs level after level without returning to the
//                  host while the frontier is small (§5.5): the frontier lives
//                  in shared memory with each vertex's first edge and degree,
//                  levels are separated by __syncthreads, a thread takes a
//                  low-degree vertex alone and warps share the wider ones.
//                  High-diameter graphs (roads, grids) spend nearly all their
//                  levels here: thousands of levels cost one launch instead
//                  of thousands, and each a few memory latencies.
//   b4k_vw_k<K>    a multi-block level with dynamic virtual warps of K lanes,
//                  K = nearest_pow2(resident threads / |F|) in [4, 32] (§5.2).
//   b4k_ed         a multi-block level with edge-discover (§5.4): each warp
//                  takes 32 frontier vertices, sums their degrees with a
//                  shuffle prefix sum, and assigns its lanes to edges by a
//                  binary search over the sums, so every lane has an edge.
//   b4k_hubs       the vertices of very high degree that the two kernels
//                  above deferred, one block per segment of HUB_SEGMENT
//                  edges. It stands in for §5.3's dynamic parallelism: the
//                  child grid a parent thread would launch per hub is the
//                  same blocks, queued by the parent and run right after it
//                  (docs/gpu.md says why no device-side launch).
//
// The multi-block kernels append the vertices they visit to the next
// frontier a warp at a time (ballot, popc, consecutive slots: the coalesced
// writes of §5.6), staged per warp so that one atomic moves a run, after the
// duplicate filter of §6: a hash table in shared memory
// where a visiting thread stores (vertex, thread) and reads it back; a
// different thread's id for the same vertex means another thread of the
// block visited it too, and this copy is dropped. Duplicates the filter
// misses (across blocks) only cost a repeated expansion: depths and parents
// are those of the status array, whose writes race only between equal values
// as in kernels/bfs_vwc.cu. The single-block kernel claims vertices exactly
// instead (atomicCAS on the status array): it must keep its frontier within
// shared memory, and on a grid, where most vertices have two parents, the
// filter's misses doubled it.
#include "frontier.cuh"

// What a level leaves for the host.
struct FrontierStats {
    unsigned next_count;            // vertices in the next frontier
    unsigned hub_segments;          // deferred hub segments queued
    unsigned long long next_edges;  // their out-edges
    int level;                      // b4k_single: the level the next frontier is at
};

#define HUB_SEGMENT 4096
#define DUP_SLOTS 2048

// A deferred hub segment: the vertex in the low 32 bits, the segment number
// in the high 32.
typedef unsigned long long segment_t;

// The duplicate filter of §6, for the lanes where fresh is set: true when
// another thread of the block visited v since this thread's store. table has
// DUP_SLOTS entries. Every lane of the warp must call it.
__device__ __forceinline__ bool duplicate(unsigned long long* table, vid_t v, bool fresh)
{
    unsigned slot = (v * 2654435761u) >> (32 - 11);
    volatile unsigned long long* t = table;
    if (fresh) t[slot] = ((unsigned long long)v << 32) | threadIdx.x;
    __syncwarp();
    if (!fresh) return false;
    unsigned long long seen = t[slot];
    return (vid_t)(seen >> 32) == v && (unsigned)seen != threadIdx.x;
}

__device__ __forceinline__ void clear_duplicates(unsigned long long* table)
{
    for (unsigned i = threadIdx.x; i < DUP_SLOTS; i += blockDim.x) table[i] = ~0ull;
    __syncthreads();
}

// Visits w from u if it is unvisited, filters duplicates and appends the
// survivors to the next frontier, adding their out-degrees to edges. Every
// lane of the warp must call it (has_edge says whether this lane has an
// edge at all). Offsets: a const eid_t* or a ReadOnly<eid_t>.
template <class Offsets>
__device__ __forceinline__ void visit_and_append(
    bool has_edge, vid_t w, vid_t u, int level, const Offsets& offsets, int* __restrict__ depth,
    vid_t* __restrict__ parent, unsigned long long* dups, WarpQueue& next, unsigned long long& edges)
{
    bool fresh = has_edge && depth[w] == GPIPE_UNVISITED;
    if (fresh) {
        depth[w] = level + 1;
        parent[w] = u;
    }
    bool dup = duplicate(dups, w, fresh);
    bool keep = fresh && !dup;
    next.append(keep, w);
    if (keep) edges += offsets[w + 1] - offsets[w];
}

// Queues the segments of a hub's edges for b4k_hubs, as many as fit in the
// queue's cap entries (a frontier's duplicates can repeat a hub), and
// returns how many of its edges they cover: the caller expands the rest.
// One atomic reserves the room; past cap, nothing is written, and b4k_hubs
// reads no further than cap.
__device__ __forceinline__ eid_t defer_hub(vid_t u, eid_t degree, segment_t* segments, unsigned cap, FrontierStats* stats)
{
    unsigned n = (unsigned)((degree + HUB_SEGMENT - 1) / HUB_SEGMENT);
    unsigned at = atomicAdd(&stats->hub_segments, n);
    unsigned fit = at >= cap ? 0 : min(n, cap - at);
    for (unsigned s = 0; s < fit; s++) segments[at + s] = (segment_t)u | ((segment_t)s << 32);
    return min((eid_t)fit * HUB_SEGMENT, degree);
}

// B4KLevelArgs are a level's arguments, one struct for b4k_vw_k*, b4k_ed and
// b4k_single (operators/gpuop/bfs4k.go's b4kLevelArgs mirrors it field by
// field): the frontier of count vertices at level, the next frontier (room
// for cap), the stats; the multi-block levels' deferred hubs (rows over
// hub_degree, in segments, room for segment_cap); the single-block
// kernel's shared frontier capacity.
struct B4KLevelArgs {
    ReadOnly<eid_t> offsets;
    ReadOnly<vid_t> targets;
    int* depth;
    vid_t* parent;
    ReadOnly<vid_t> frontier;  // not next: the host swaps two queues
    vid_t* next;
    FrontierStats* stats;
    segment_t* segments;
    long long hub_degree;
    unsigned count;
    int level;
    unsigned cap, segment_cap, capacity;
};

extern "C" __global__ void b4k_init(int* depth, vid_t* parent, vid_t source, vid_t* frontier)
{
    depth[source] = 0;
    parent[source] = source;
    frontier[0] = source;
}

// One level with virtual warps of K lanes, for a frontier of count vertices.
// A physical warp holds 32/K virtual warps, each on its own vertex, and
// loops as many rounds as its widest vertex needs, so that all its lanes
// reach the appends together.
template <int K>
__device__ __forceinline__ void vw_level(const B4KLevelArgs& a, WarpQueue& next, unsigned long long& edges,
                                         unsigned long long* dups, unsigned first_warp, unsigned warps)
{
    const ReadOnly<eid_t> offsets = a.offsets;
    const ReadOnly<vid_t> targets = a.targets;
    int* __restrict__ depth = a.depth;
    vid_t* __restrict__ parent = a.parent;
    const ReadOnly<vid_t> frontier = a.frontier;
    const unsigned count = a.count, segment_cap = a.segment_cap;
    const int level = a.level;
    FrontierStats* stats = a.stats;
    const long long hub_degree = a.hub_degree;
    segment_t* segments = a.segments;
    const unsigned lane = lane_id() & (K - 1), per_warp = 32 / K;
    for (unsigned base = first_warp * per_warp; base < count; base += warps * per_warp) {
        unsigned i = base + lane_id() / K;
        vid_t u = 0;
        eid_t first = 0, last = 0;
        if (i < count) {
            u = frontier[i];
            first = offsets[u];
            last = offsets[u + 1];
            if (hub_degree > 0 && last - first > hub_degree) {
                eid_t deferred = 0;
                if (lane == 0) deferred = defer_hub(u, last - first, segments, segment_cap, stats);
                // The lanes of a virtual warp share its vertex, so they are all here.
                unsigned group = K == 32 ? FULL_MASK : ((1u << K) - 1u) << (lane_id() & ~(K - 1u));
                first += __shfl_sync(group, deferred, 0, K);
            }
        }
        eid_t widest = last - first;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) widest = max(widest, __shfl_xor_sync(FULL_MASK, widest, o));
        for (eid_t r = 0; r < widest; r += K) {
            eid_t e = first + r + lane;
            bool has = e < last;
            vid_t w = has ? targets[e] : 0;
            visit_and_append(has, w, u, level, offsets, depth, parent, dups, next, edges);
        }
    }
}

#define B4K_VW(K)                                                                                         \
    extern "C" __global__ void __launch_bounds__(256) b4k_vw_k##K(B4KLevelArgs a)                         \
    {                                                                                                     \
        __shared__ unsigned long long dups[DUP_SLOTS];                                                    \
        __shared__ vid_t stages[8 * WARP_STAGE];                                                          \
        clear_duplicates(dups);                                                                           \
        WarpQueue q(warp_stage(stages, 0, 1), a.next, &a.stats->next_count, a.cap);                       \
        unsigned long long edges = 0;                                                                     \
        vw_level<K>(a, q, edges, dups, (blockIdx.x * blockDim.x + threadIdx.x) >> 5,                      \
                    gridDim.x * (blockDim.x >> 5));                                                       \
        q.flush();                                                                                        \
        block_add(edges, &a.stats->next_edges);                                                           \
    }
B4K_VW(4)
B4K_VW(8)
B4K_VW(16)
B4K_VW(32)

// One level with edge-discover (§5.4), for a frontier of count vertices.
__device__ __forceinline__ void ed_level(const B4KLevelArgs& a, WarpQueue& next, unsigned long long& edges,
                                         unsigned long long* dups, unsigned first_warp, unsigned warps)
{
    const ReadOnly<eid_t> offsets = a.offsets;
    const ReadOnly<vid_t> targets = a.targets;
    int* __restrict__ depth = a.depth;
    vid_t* __restrict__ parent = a.parent;
    const ReadOnly<vid_t> frontier = a.frontier;
    const unsigned count = a.count, segment_cap = a.segment_cap;
    const int level = a.level;
    FrontierStats* stats = a.stats;
    const long long hub_degree = a.hub_degree;
    segment_t* segments = a.segments;
    for (unsigned base = first_warp * 32; base < count; base += warps * 32) {
        unsigned i = base + lane_id();
        vid_t u = 0;
        eid_t first = 0, degree = 0;
        if (i < count) {
            u = frontier[i];
            first = offsets[u];
            degree = offsets[u + 1] - first;
            if (hub_degree > 0 && degree > hub_degree) {
                eid_t deferred = defer_hub(u, degree, segments, segment_cap, stats);
                first += deferred;
                degree -= deferred;
            }
        }
        eid_t total;
        eid_t start = warp_exclusive_sum(degree, total);
        for (eid_t round = 0; round < total; round += 32) {
            eid_t k = round + lane_id();
            // The owner of edge k: the last lane whose start is <= k.
            int owner = 0;
#pragma unroll
            for (int step = 16; step > 0; step >>= 1) {
                eid_t s = __shfl_sync(FULL_MASK, start, owner + step);
                if (s <= k) owner += step;
            }
            eid_t owner_start = __shfl_sync(FULL_MASK, start, owner);
            eid_t owner_first = __shfl_sync(FULL_MASK, first, owner);
            vid_t owner_u = __shfl_sync(FULL_MASK, u, owner);
            bool has = k < total;
            vid_t w = has ? targets[owner_first + (k - owner_start)] : 0;
            visit_and_append(has, w, owner_u, level, offsets, depth, parent, dups, next, edges);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) b4k_ed(B4KLevelArgs a)
{
    __shared__ unsigned long long dups[DUP_SLOTS];
    __shared__ vid_t stages[8 * WARP_STAGE];
    clear_duplicates(dups);
    WarpQueue q(warp_stage(stages, 0, 1), a.next, &a.stats->next_count, a.cap);
    unsigned long long edges = 0;
    ed_level(a, q, edges, dups, (blockIdx.x * blockDim.x + threadIdx.x) >> 5, gridDim.x * (blockDim.x >> 5));
    q.flush();
    block_add(edges, &a.stats->next_edges);
}

// The deferred hubs' edges: one block per segment.
extern "C" __global__ void __launch_bounds__(256) b4k_hubs(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, int level, const segment_t* __restrict__ segments, vid_t* __restrict__ next,
    unsigned cap, FrontierStats* stats, unsigned segment_cap)
{
    __shared__ unsigned long long dups[DUP_SLOTS];
    __shared__ vid_t stages[8 * WARP_STAGE];
    clear_duplicates(dups);
    WarpQueue q(warp_stage(stages, 0, 1), next, &stats->next_count, cap);
    unsigned long long edges = 0;
    unsigned count = min(stats->hub_segments, segment_cap);
    for (unsigned i = blockIdx.x; i < count; i += gridDim.x) {
        segment_t s = segments[i];
        vid_t u = (vid_t)(s & 0xffffffffu);
        eid_t first = offsets[u] + (eid_t)(s >> 32) * HUB_SEGMENT;
        eid_t last = min(first + HUB_SEGMENT, offsets[u + 1]);
        // All lanes of a warp loop together for the warp-wide appends.
        for (eid_t base = first; base < last; base += blockDim.x) {
            eid_t e = base + threadIdx.x;
            bool has = e < last;
            vid_t w = has ? targets[e] : 0;
            visit_and_append(has, w, u, level, offsets, depth, parent, dups, q, edges);
        }
    }
    q.flush();
    block_add(edges, &stats->next_edges);
}

// The single-block kernel's limits: it runs while the frontier has at most
// `capacity` vertices (as many as the GPU's shared memory holds: 6,144 on
// Hopper, fewer on older GPUs; the host passes it) and SINGLE_EDGES edges,
// and returns the next frontier to the host (in global memory) when it would
// exceed either.
#define SINGLE_THREADS 1024
#define SINGLE_EDGES 32768
// A thread takes a frontier vertex of up to SINGLE_NARROW edges alone, 4
// edges at a time with their loads issued together; wider vertices go to a
// list that the warps share out afterwards, 32 edges at a time.
#define SINGLE_NARROW 16
#define SINGLE_WIDE (SINGLE_EDGES / SINGLE_NARROW)

// A frontier in shared memory: each vertex with its first edge and degree,
// read when it was visited, so a level starts from the edges.
struct SharedFrontier {
    vid_t* vertex;
    eid_t* first;
    unsigned* degree;
};

// The level's bookkeeping in shared memory.
struct SingleLevel {
    unsigned next_count;
    unsigned wide_count;
    unsigned long long next_edges;
};

// Claims w for the next level if it is unvisited: an exact claim, so that
// no vertex enters the next frontier twice (a grid's frontier would outgrow
// the block with duplicates; the claim costs the round trip of the load it
// replaces).
__device__ __forceinline__ bool claim(int* depth, vid_t w, int level)
{
    return atomicCAS(&depth[w], GPIPE_UNVISITED, level + 1) == GPIPE_UNVISITED;
}

// Puts the lanes' claimed vertices in the next frontier (shared memory, or
// the spill area in global memory past its capacity) with their first edge
// and degree: one shared atomic per warp, since atomics on one address
// serialize in shared memory too. Every lane of the warp must call it.
__device__ __forceinline__ void single_push(bool won, vid_t w, eid_t first, eid_t last, SharedFrontier next,
                                            unsigned capacity, SingleLevel* lvl, vid_t* spill, unsigned cap)
{
    unsigned mask = __ballot_sync(FULL_MASK, won);
    if (mask == 0) return;
    unsigned base = 0;
    if (lane_id() == __ffs(mask) - 1) base = atomicAdd(&lvl->next_count, (unsigned)__popc(mask));
    base = __shfl_sync(FULL_MASK, base, __ffs(mask) - 1);
    if (!won) return;
    unsigned at = base + __popc(mask & lanes_below());
    if (at < capacity) {
        next.vertex[at] = w;
        next.first[at] = first;
        next.degree[at] = (unsigned)(last - first);
    } else if (at - capacity < cap) {
        spill[at - capacity] = w;
    }
}

// One level of the single-block kernel. The loops are the same for every
// lane of a warp (a lane whose vertex has fewer edges idles), so that the
// pushes are warp-wide.
__device__ __forceinline__ void single_level(const B4KLevelArgs& a, SharedFrontier cur, unsigned count, int level,
                                             SharedFrontier next, SingleLevel* lvl, unsigned* wide)
{
    const ReadOnly<eid_t> offsets = a.offsets;
    const ReadOnly<vid_t> targets = a.targets;
    int* __restrict__ depth = a.depth;
    vid_t* __restrict__ parent = a.parent;
    vid_t* spill = a.next;
    const unsigned capacity = a.capacity, cap = a.cap;
    unsigned long long added = 0;
    for (unsigned base = threadIdx.x & ~31u; base < count; base += SINGLE_THREADS) {
        unsigned i = base + lane_id();
        vid_t u = 0;
        eid_t first = 0;
        unsigned degree = 0;
        if (i < count) {
            u = cur.vertex[i];
            first = cur.first[i];
            degree = cur.degree[i];
            if (degree > SINGLE_NARROW) {
                wide[atomicAdd(&lvl->wide_count, 1u)] = i;
                degree = 0;
            }
        }
        unsigned widest = __reduce_max_sync(FULL_MASK, degree);
        for (unsigned e = 0; e < widest; e += 4) {
            vid_t w[4];
            bool won[4];
#pragma unroll
            for (int j = 0; j < 4; j++) w[j] = e + j < degree ? targets[first + e + j] : GPIPE_NO_VERTEX;
#pragma unroll
            for (int j = 0; j < 4; j++) won[j] = w[j] != GPIPE_NO_VERTEX && claim(depth, w[j], level);
            eid_t lo[4], hi[4];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                lo[j] = won[j] ? offsets[w[j]] : 0;
                hi[j] = won[j] ? offsets[w[j] + 1] : 0;
            }
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (won[j]) parent[w[j]] = u;
                single_push(won[j], w[j], lo[j], hi[j], next, capacity, lvl, spill, cap);
                added += hi[j] - lo[j];
            }
        }
    }
    __syncthreads();
    // The wide vertices: a warp each, 32 edges at a time.
    unsigned wides = lvl->wide_count;
    for (unsigned k = threadIdx.x >> 5; k < wides; k += SINGLE_THREADS / 32) {
        unsigned i = wide[k];
        vid_t u = cur.vertex[i];
        eid_t first = cur.first[i], last = first + cur.degree[i];
        for (eid_t round = first; round < last; round += 32) {
            eid_t e = round + lane_id();
            vid_t w = e < last ? targets[e] : GPIPE_NO_VERTEX;
            bool won = w != GPIPE_NO_VERTEX && claim(depth, w, level);
            eid_t lo = won ? offsets[w] : 0, hi = won ? offsets[w + 1] : 0;
            if (won) parent[w] = u;
            single_push(won, w, lo, hi, next, capacity, lvl, spill, cap);
            added += hi - lo;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) added += __shfl_xor_sync(FULL_MASK, added, o);
    if (lane_id() == 0 && added) atomicAdd(&lvl->next_edges, added);
}

// Runs levels from `level` with the frontier given (count vertices, at most
// capacity) in one block of SINGLE_THREADS threads until the search ends or
// the next frontier outgrows the block; then the next frontier is in next
// (global memory) and stats says its size and level. Its dynamic shared
// memory holds two frontiers of capacity vertices (16 bytes each: vertex,
// first edge, degree) and the list of SINGLE_WIDE wide vertices.
extern "C" __global__ void __launch_bounds__(SINGLE_THREADS, 1) b4k_single(B4KLevelArgs a)
{
    const ReadOnly<eid_t> offsets = a.offsets;
    const ReadOnly<vid_t> frontier = a.frontier;
    vid_t* __restrict__ next = a.next;
    FrontierStats* stats = a.stats;
    const unsigned capacity = a.capacity, cap = a.cap;
    unsigned count = a.count;
    int level = a.level;
    extern __shared__ unsigned long long shared[];
    eid_t* firsts = (eid_t*)shared;
    unsigned* words = (unsigned*)(firsts + 2 * capacity);
    SharedFrontier cur = {words, firsts, words + capacity};
    SharedFrontier nxt = {words + 2 * capacity, firsts + capacity, words + 3 * capacity};
    unsigned* wide = words + 4 * capacity;
    __shared__ SingleLevel lvl;

    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) {
        vid_t v = frontier[i];
        eid_t first = offsets[v];
        cur.vertex[i] = v;
        cur.first[i] = first;
        cur.degree[i] = (unsigned)(offsets[v + 1] - first);
    }
    for (;;) {
        if (threadIdx.x == 0) lvl = SingleLevel{0, 0, 0};
        __syncthreads();
        single_level(a, cur, count, level, nxt, &lvl, wide);
        __syncthreads();
        count = lvl.next_count;
        unsigned long long edges = lvl.next_edges;
        level++;
        SharedFrontier t = cur;
        cur = nxt;
        nxt = t;
        __syncthreads();  // every thread has read the counters before thread 0 resets them
        if (count == 0 || count > capacity || edges > SINGLE_EDGES) {
            // Hand the next frontier to the host: the spilled part is at the
            // start of next already; the part in shared memory goes after it.
            unsigned in_shared = min(count, capacity);
            unsigned spilled = count - in_shared;
            for (unsigned i = threadIdx.x; i < in_shared; i += blockDim.x)
                if (spilled + i < cap) next[spilled + i] = cur.vertex[i];
            if (threadIdx.x == 0) {
                stats->next_count = count;
                stats->next_edges = edges;
                stats->level = level;
            }
            return;
        }
    }
}

// Rebuilds a frontier that overflowed its queue (more duplicates than the
// queue has room for: possible in theory, never seen) from the status
// array: every vertex at the level, once.
extern "C" __global__ void __launch_bounds__(256) b4k_rebuild(
    const eid_t* __restrict__ offsets, const int* __restrict__ depth, long long n, int level,
    vid_t* __restrict__ next, FrontierStats* stats)
{
    __shared__ vid_t stages[8 * WARP_STAGE];
    WarpQueue q(warp_stage(stages, 0, 1), next, &stats->next_count, ~0u);
    unsigned long long edges = 0;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += (long long)gridDim.x * blockDim.x) {
        long long v = base + threadIdx.x;
        bool at_level = v < n && depth[v] == level;
        q.append(at_level, (vid_t)v);
        if (at_level) edges += offsets[v + 1] - offsets[v];
    }
    q.flush();
    block_add(edges, &stats->next_edges);
}
