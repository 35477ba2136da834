// Breadth-first search after BFS-4K (§5-6): top-down over a frontier queue,
// with the technique chosen per level from the frontier's size.
//
//   b4k_single     one block runs level after level without returning to the
//                  host while the frontier is small (§5.5): the frontier lives
//                  in shared memory, levels are separated by __syncthreads,
//                  and threads are assigned to edges as in edge-discover.
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
// Every kernel appends the vertices it visits to the next frontier a warp at
// a time (ballot, popc, one atomic, consecutive slots: the coalesced writes
// of §5.6), after the duplicate filter of §6: a hash table in shared memory
// where a visiting thread stores (vertex, thread) and reads it back; a
// different thread's id for the same vertex means another thread of the
// block visited it too, and this copy is dropped. Duplicates the filter
// misses (across blocks) only cost a repeated expansion: depths and parents
// are those of the status array, whose writes race only between equal values
// as in kernels/bfs_vwc.cu.
#include "frontier.cuh"

// What a level leaves for the host.
struct FrontierStats {
    unsigned next_count;            // vertices in the next frontier
    unsigned hub_segments;          // deferred hub segments queued
    unsigned long long next_edges;  // their out-edges
    int level;                      // b4k_single: the level the next frontier is at
    int done;                       // b4k_single: the search ended
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
// edge at all).
__device__ __forceinline__ void visit_and_append(
    bool has_edge, vid_t w, vid_t u, int level, const eid_t* __restrict__ offsets, int* __restrict__ depth,
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

// Queues the segments of a hub's edges for b4k_hubs.
__device__ __forceinline__ void defer_hub(vid_t u, eid_t degree, segment_t* segments, FrontierStats* stats)
{
    unsigned n = (unsigned)((degree + HUB_SEGMENT - 1) / HUB_SEGMENT);
    unsigned at = atomicAdd(&stats->hub_segments, n);
    for (unsigned s = 0; s < n; s++) segments[at + s] = (segment_t)u | ((segment_t)s << 32);
}

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
__device__ __forceinline__ void vw_level(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, const vid_t* __restrict__ frontier, unsigned count, int level,
    WarpQueue& next, unsigned long long& edges, FrontierStats* stats, long long hub_degree, segment_t* segments,
    unsigned long long* dups, unsigned first_warp, unsigned warps)
{
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
                if (lane == 0) defer_hub(u, last - first, segments, stats);
                last = first;
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
    extern "C" __global__ void __launch_bounds__(256) b4k_vw_k##K(                                        \
        const eid_t* offsets, const vid_t* targets, int* depth, vid_t* parent, const vid_t* frontier,     \
        unsigned count, int level, vid_t* next, unsigned cap, FrontierStats* stats, long long hub_degree, \
        segment_t* segments)                                                                              \
    {                                                                                                     \
        __shared__ unsigned long long dups[DUP_SLOTS];                                                    \
        __shared__ vid_t stages[8 * WARP_STAGE];                                                          \
        clear_duplicates(dups);                                                                           \
        WarpQueue q(warp_stage(stages, 0, 1), next, &stats->next_count, cap);                             \
        unsigned long long edges = 0;                                                                     \
        vw_level<K>(offsets, targets, depth, parent, frontier, count, level, q, edges, stats, hub_degree,   \
                    segments, dups, (blockIdx.x * blockDim.x + threadIdx.x) >> 5,                         \
                    gridDim.x * (blockDim.x >> 5));                                                       \
        q.flush();                                                                                        \
        block_add(edges, &stats->next_edges);                                                             \
    }
B4K_VW(4)
B4K_VW(8)
B4K_VW(16)
B4K_VW(32)

// One level with edge-discover (§5.4), for a frontier of count vertices.
__device__ __forceinline__ void ed_level(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, const vid_t* __restrict__ frontier, unsigned count, int level,
    WarpQueue& next, unsigned long long& edges, FrontierStats* stats, long long hub_degree, segment_t* segments,
    unsigned long long* dups, unsigned first_warp, unsigned warps)
{
    for (unsigned base = first_warp * 32; base < count; base += warps * 32) {
        unsigned i = base + lane_id();
        vid_t u = 0;
        eid_t first = 0, degree = 0;
        if (i < count) {
            u = frontier[i];
            first = offsets[u];
            degree = offsets[u + 1] - first;
            if (hub_degree > 0 && degree > hub_degree) {
                defer_hub(u, degree, segments, stats);
                degree = 0;
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

extern "C" __global__ void __launch_bounds__(256) b4k_ed(
    const eid_t* offsets, const vid_t* targets, int* depth, vid_t* parent, const vid_t* frontier,
    unsigned count, int level, vid_t* next, unsigned cap, FrontierStats* stats, long long hub_degree, segment_t* segments)
{
    __shared__ unsigned long long dups[DUP_SLOTS];
    __shared__ vid_t stages[8 * WARP_STAGE];
    clear_duplicates(dups);
    WarpQueue q(warp_stage(stages, 0, 1), next, &stats->next_count, cap);
    unsigned long long edges = 0;
    ed_level(offsets, targets, depth, parent, frontier, count, level, q, edges, stats, hub_degree, segments, dups,
             (blockIdx.x * blockDim.x + threadIdx.x) >> 5, gridDim.x * (blockDim.x >> 5));
    q.flush();
    block_add(edges, &stats->next_edges);
}

// The deferred hubs' edges: one block per segment.
extern "C" __global__ void __launch_bounds__(256) b4k_hubs(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, int level, const segment_t* __restrict__ segments, vid_t* __restrict__ next,
    unsigned cap, FrontierStats* stats)
{
    __shared__ unsigned long long dups[DUP_SLOTS];
    __shared__ vid_t stages[8 * WARP_STAGE];
    clear_duplicates(dups);
    WarpQueue q(warp_stage(stages, 0, 1), next, &stats->next_count, cap);
    unsigned long long edges = 0;
    unsigned count = stats->hub_segments;
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
// SINGLE_CAPACITY vertices and SINGLE_EDGES edges, and returns the next
// frontier to the host (in global memory) when it would exceed either.
#define SINGLE_THREADS 1024
#define SINGLE_CAPACITY 5120
#define SINGLE_EDGES 32768
// Edges a thread takes at a time: its loads of the targets, then of their
// depths, then of the new vertices' offsets go out together, so a level
// costs a few memory latencies, not one per edge.
#define SINGLE_BATCH 8

// A frontier in shared memory: each vertex with its first edge and degree,
// read when it was visited, so a level starts from the edges.
struct SharedFrontier {
    vid_t* vertex;
    eid_t* first;
    unsigned* degree;
};

// Appends each thread's kept vertices (the first kept of its batch's slots)
// to the block's next frontier with one shared atomic per warp (a warp
// prefix sum of the threads' counts places them), or past its end to the
// spill area in global memory (vertex ids only). Every lane must call it.
__device__ __forceinline__ void single_append(const bool (&keep)[SINGLE_BATCH], const vid_t (&w)[SINGLE_BATCH],
                                              const eid_t (&first)[SINGLE_BATCH], const eid_t (&last)[SINGLE_BATCH],
                                              SharedFrontier next, unsigned* next_count, vid_t* spill, unsigned cap)
{
    unsigned mine = 0;
#pragma unroll
    for (int j = 0; j < SINGLE_BATCH; j++) mine += keep[j];
    unsigned total;
    unsigned at = warp_exclusive_sum(mine, total);
    if (total == 0) return;
    unsigned base = 0;
    if (lane_id() == 0) base = atomicAdd(next_count, total);
    at += __shfl_sync(FULL_MASK, base, 0);
#pragma unroll
    for (int j = 0; j < SINGLE_BATCH; j++) {
        if (!keep[j]) continue;
        if (at < SINGLE_CAPACITY) {
            next.vertex[at] = w[j];
            next.first[at] = first[j];
            next.degree[at] = (unsigned)(last[j] - first[j]);
        } else if (at - SINGLE_CAPACITY < cap) {
            spill[at - SINGLE_CAPACITY] = w[j];
        }
        at++;
    }
}

// One level of the single-block kernel, edge-discover style (§5.4): the
// frontier's edges are numbered by an exclusive prefix sum of the degrees
// (start), and each thread takes SINGLE_BATCH consecutive edges at a time,
// finding the vertex of the first by binary search and walking on from
// there. Warps past the level's edges skip the round, so that a small level
// costs a few warps' work, not the whole block's.
__device__ __forceinline__ void single_level(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, SharedFrontier cur, const unsigned* start, unsigned count, unsigned edges, int level,
    SharedFrontier next, unsigned* next_count, unsigned long long* next_edges, vid_t* spill, unsigned cap,
    unsigned long long* dups)
{
    unsigned long long added = 0;
    for (unsigned round = 0; round < edges; round += SINGLE_THREADS * SINGLE_BATCH) {
        if (round + (threadIdx.x & ~31u) * SINGLE_BATCH >= edges) break;  // the whole warp: nothing left
        unsigned lo = min(round + threadIdx.x * SINGLE_BATCH, edges), hi = min(lo + SINGLE_BATCH, edges);
        // The owner of edge lo: the last vertex whose start is <= lo.
        unsigned owner = 0, span = count;
        while (span > 1) {
            unsigned half = span / 2;
            if (start[owner + half] <= lo) owner += half;
            span -= half;
        }
        // First every edge's place, from shared memory alone, so that the
        // loads below go out together: no loaded value is looked at before
        // the last load of its kind has been issued.
        vid_t u[SINGLE_BATCH];
        eid_t at[SINGLE_BATCH];
        bool has[SINGLE_BATCH];
#pragma unroll
        for (int j = 0; j < SINGLE_BATCH; j++) {
            unsigned k = lo + j;
            has[j] = k < hi;
            if (has[j]) {
                while (start[owner + 1] <= k) owner++;
                u[j] = cur.vertex[owner];
                at[j] = cur.first[owner] + (k - start[owner]);
            }
        }
        vid_t w[SINGLE_BATCH];
#pragma unroll
        for (int j = 0; j < SINGLE_BATCH; j++) w[j] = has[j] ? targets[at[j]] : 0;
        int d[SINGLE_BATCH];
#pragma unroll
        for (int j = 0; j < SINGLE_BATCH; j++) d[j] = has[j] ? depth[w[j]] : 0;
        bool fresh[SINGLE_BATCH];
#pragma unroll
        for (int j = 0; j < SINGLE_BATCH; j++) {
            fresh[j] = has[j] && d[j] == GPIPE_UNVISITED;
            if (fresh[j]) {
                depth[w[j]] = level + 1;
                parent[w[j]] = u[j];
            }
            bool dup = duplicate(dups, w[j], fresh[j]);
            fresh[j] = fresh[j] && !dup;
        }
#pragma unroll
        for (int j = 0; j < SINGLE_BATCH; j++) at[j] = fresh[j] ? offsets[w[j]] : 0;
        eid_t last[SINGLE_BATCH];
#pragma unroll
        for (int j = 0; j < SINGLE_BATCH; j++) {
            last[j] = fresh[j] ? offsets[w[j] + 1] : 0;
            added += last[j] - at[j];
        }
        single_append(fresh, w, at, last, next, next_count, spill, cap);
    }
    // Warps that skipped rounds reach this with the others.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) added += __shfl_xor_sync(FULL_MASK, added, o);
    if (lane_id() == 0 && added) atomicAdd(next_edges, added);
}

// The exclusive prefix sum of the frontier's degrees into start[0..count],
// returning the total. Every thread must call it.
__device__ __forceinline__ unsigned single_starts(SharedFrontier cur, unsigned count, unsigned* start, unsigned* scratch)
{
    unsigned per = (count + SINGLE_THREADS - 1) / SINGLE_THREADS;
    unsigned lo = min(threadIdx.x * per, count), hi = min(lo + per, count);
    unsigned sum = 0;
    for (unsigned i = lo; i < hi; i++) sum += cur.degree[i];
    unsigned total;
    unsigned at = block_exclusive_sum(sum, scratch, total);
    for (unsigned i = lo; i < hi; i++) {
        start[i] = at;
        at += cur.degree[i];
    }
    if (threadIdx.x == 0) start[count] = total;
    __syncthreads();
    return total;
}

// The single-block kernel's dynamic shared memory, in bytes: the duplicate
// filter, two frontiers and the prefix sums.
#define SINGLE_SHARED (DUP_SLOTS * 8 + 2 * SINGLE_CAPACITY * (8 + 4 + 4) + (SINGLE_CAPACITY + 1) * 4)

// Runs levels from `level` with the frontier given (count vertices, at most
// SINGLE_CAPACITY) in one block of SINGLE_THREADS threads until the search
// ends or the next frontier outgrows the block; then the next frontier is
// in next (global memory) and stats says its size and level.
extern "C" __global__ void __launch_bounds__(SINGLE_THREADS, 1) b4k_single(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, const vid_t* __restrict__ frontier, unsigned count, int level,
    vid_t* __restrict__ next, unsigned cap, FrontierStats* stats)
{
    extern __shared__ unsigned long long shared[];
    unsigned long long* dups = shared;
    eid_t* firsts = (eid_t*)(shared + DUP_SLOTS);
    unsigned* words = (unsigned*)(firsts + 2 * SINGLE_CAPACITY);
    SharedFrontier cur = {words, firsts, words + SINGLE_CAPACITY};
    SharedFrontier nxt = {words + 2 * SINGLE_CAPACITY, firsts + SINGLE_CAPACITY, words + 3 * SINGLE_CAPACITY};
    unsigned* start = words + 4 * SINGLE_CAPACITY;
    __shared__ unsigned scratch[33];
    __shared__ unsigned next_count;
    __shared__ unsigned long long next_edges;

    clear_duplicates(dups);
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) {
        vid_t v = frontier[i];
        eid_t first = offsets[v];
        cur.vertex[i] = v;
        cur.first[i] = first;
        cur.degree[i] = (unsigned)(offsets[v + 1] - first);
    }
    for (;;) {
        if (threadIdx.x == 0) {
            next_count = 0;
            next_edges = 0;
        }
        __syncthreads();
        unsigned edges = single_starts(cur, count, start, scratch);
        single_level(offsets, targets, depth, parent, cur, start, count, edges, level, nxt, &next_count, &next_edges,
                     next, cap, dups);
        __syncthreads();
        count = next_count;
        unsigned long long next_total = next_edges;
        level++;
        SharedFrontier t = cur;
        cur = nxt;
        nxt = t;
        __syncthreads();  // every thread has read the counters before thread 0 resets them
        if (count == 0 || count > SINGLE_CAPACITY || next_total > SINGLE_EDGES) break;
    }
    // Hand the next frontier to the host: the spilled part is at the start
    // of next already; the part in shared memory goes after it.
    unsigned in_shared = min(count, (unsigned)SINGLE_CAPACITY);
    unsigned spilled = count - in_shared;
    for (unsigned i = threadIdx.x; i < in_shared; i += blockDim.x)
        if (spilled + i < cap) next[spilled + i] = cur.vertex[i];
    if (threadIdx.x == 0) {
        stats->next_count = count;
        stats->next_edges = next_edges;  // unchanged since the last level
        stats->level = level;
        stats->done = count == 0;
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
