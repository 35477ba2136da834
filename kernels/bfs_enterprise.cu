// Breadth-first search after Enterprise (SC'15 §4): direction-optimizing,
// over frontier queues built from the frontier's bitmap.
//
// The status array is depth[]: GPIPE_UNVISITED, or the vertex's level. The
// host runs one level at a time:
//
//   top-down   the frontier (depth == level) is in four queues by out-degree
//              (§4.2): ent_td_thread, ent_td_warp, ent_td_block and
//              ent_td_grid expand them concurrently, on four streams, and
//              set depth = level + 1 and parent of the unvisited neighbours,
//              and their bits in the next frontier's bitmap. Writes race
//              only between threads writing the same depth and a parent
//              from the same level, so any winner leaves a valid tree (§2.1)
//              and no atomics are needed but the bitmap's (an OR: every
//              winner sets the same bit).
//   queues     ent_queue builds the next queues from that bitmap in one
//              pass: a thread reads a word, and the warp deals its 32
//              words' set bits out to its lanes, a vertex a lane, 32 at a
//              time (a prefix sum of the words' bit counts orders them);
//              a ballot per class is the prefix sum that places the
//              vertices (the binary prefix sum of BFS-4K §5.1), one atomic
//              per warp stage reserving their run. The paper scans the status array (§4.1); the
//              bitmap is the same status compressed to a bit a vertex, so
//              the pass reads a 32nd of the bytes, an empty word costs one
//              load, and the queues keep the vertex order that the paper's
//              direction-switching workflow is for: the next level's warps
//              read consecutive rows. (Scanning the status array cost 230
//              µs a level on Kronecker 26 whatever the frontier's size;
//              BENCHMARKS.md has the measurements.) On several GPUs the
//              bitmap, with every part's words stored or gathered into it,
//              is the whole frontier (operators/mgpu_bfs.go). A word's
//              vertices' classes come from a per-vertex class array read
//              with it (four bits a vertex), and its hubs from a bitmap of
//              the hubs (an AND with the word), not from their offsets.
//   switch     ent_unvisited scans the status array once, when the search
//              goes bottom-up, for the queues of the unvisited vertices.
//              (On several GPUs by peer stores the host knows the
//              direction before the queue pass, so the level that turns
//              runs ent_queue without its queues: the hub list only.)
//   bottom-up  the queue holds the unvisited vertices; ent_bu_small,
//              ent_bu_middle and ent_bu_wide (by in-degree class) look for an
//              in-neighbour in the frontier, first in the block's hub cache
//              (§4.3), then in the frontier bitmap (a 32nd of the status
//              array's bytes, so it stays in the caches), stop at the first,
//              and append the vertices still unvisited to the next queue
//              (the bottom-up workflow: a shrinking subset, no scan).
//
// The host switches to bottom-up when the share of hub vertices in the
// frontier, γ = F_h / T_h, exceeds 30% (§4.3), and back to top-down when a
// bottom-up level finds few vertices (below n/24, Beamer's β) while many
// remain unvisited (more than n/24); the paper never switches back, but on
// graphs with many unreachable vertices each bottom-up level would scan all
// of their edges again.
#include "frontier.cuh"

// A vertex's degree class in four bits, eight vertices a word (ent_classes
// makes them from the offsets once per graph and layout): bits 0-1
// degree_class, bit 2 set when the vertex has rows. Read instead of the
// offsets where only the class is needed.
#define CLASS_HAS_ROWS 4u

__device__ __forceinline__ unsigned nibble_at(unsigned eight, int i) { return (eight >> (i * 4)) & 15u; }

__device__ __forceinline__ unsigned class_nibble(const unsigned* __restrict__ classes, long long v)
{
    return nibble_at(classes[v >> 3], (int)(v & 7));
}

// The four class queues of a queue pass, class c's at queues + c * cap and
// counted in counts[c], each staged per warp (WarpQueue) in stages: the
// block's shared CLASS_STAGES. Every lane of the warp makes every call.
#define CLASS_STAGES (8 * CLASSES * WARP_STAGE)
struct ClassQueues {
    WarpQueue q[CLASSES];

    __device__ __forceinline__ ClassQueues(vid_t* stages, vid_t* queues, long long cap, unsigned* counts)
        : q{WarpQueue(warp_stage(stages, 0, CLASSES), queues + 0 * cap, &counts[0], ~0u),
            WarpQueue(warp_stage(stages, 1, CLASSES), queues + 1 * cap, &counts[1], ~0u),
            WarpQueue(warp_stage(stages, 2, CLASSES), queues + 2 * cap, &counts[2], ~0u),
            WarpQueue(warp_stage(stages, 3, CLASSES), queues + 3 * cap, &counts[3], ~0u)}
    {
    }

    __device__ __forceinline__ void append(bool keep, int c, vid_t v)
    {
#pragma unroll
        for (int k = 0; k < CLASSES; k++) q[k].append(keep && c == k, v);
    }

    __device__ __forceinline__ void flush()
    {
#pragma unroll
        for (int k = 0; k < CLASSES; k++) q[k].flush();
    }
};

// Fills classes (words of eight vertices' class_nibble) from the rows
// offsets of n vertices, once per graph and layout: a thread a word.
extern "C" __global__ void __launch_bounds__(256) ent_classes(const eid_t* __restrict__ offsets, long long n,
                                                              unsigned* __restrict__ classes, long long words)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned word = 0;
        for (int j = 0; j < 8 && 8 * i + j < n; j++) {
            const eid_t degree = offsets[8 * i + j + 1] - offsets[8 * i + j];
            if (degree > 0) word |= ((unsigned)degree_class(degree) | CLASS_HAS_ROWS) << (4 * j);
        }
        classes[i] = word;
    }
}

// Fills hub_bits, a bit a vertex, with the vertices of more than hub_degree
// rows in offsets (none when hub_degree is 0): a thread a word.
extern "C" __global__ void __launch_bounds__(256) ent_hub_bits(const eid_t* __restrict__ offsets, long long n,
                                                               long long hub_degree, unsigned* __restrict__ hub_bits,
                                                               long long words)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned word = 0;
        for (int j = 0; j < 32 && 32 * i + j < n; j++) {
            if (hub_degree > 0 && offsets[32 * i + j + 1] - offsets[32 * i + j] > hub_degree) word |= 1u << j;
        }
        hub_bits[i] = word;
    }
}

// Large frontier vertices (256 to 65,535 edges) are split into segments of
// LARGE_SEGMENT edges, a block each, so that a few large vertices keep many
// blocks busy rather than one each.
#define LARGE_SEGMENT 2048
#define LARGE_SEGMENTS 32  // 65,536 / LARGE_SEGMENT

// Marks the source: depth 0, its own parent. depth and parent start as all
// ones (GPIPE_UNVISITED, GPIPE_NO_VERTEX) by a memset; the host puts the
// source in its queue.
extern "C" __global__ void ent_init(int* depth, vid_t* parent, vid_t source, vid_t* queue_slot)
{
    depth[source] = 0;
    parent[source] = source;
    *queue_slot = source;
}

// Visits w from u at the given level if w is unvisited, and sets its bit
// in the next frontier's bitmap.
__device__ __forceinline__ void visit(int* __restrict__ depth, vid_t* __restrict__ parent, unsigned* __restrict__ bits,
                                      vid_t w, vid_t u, int level)
{
    if (depth[w] == GPIPE_UNVISITED) {
        depth[w] = level + 1;
        parent[w] = u;
        atomicOr(&bits[w >> 5], 1u << (w & 31u));
    }
}

// Small frontier vertices (fewer than 32 edges): a thread each.
extern "C" __global__ void __launch_bounds__(256) ent_td_thread(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, const vid_t* __restrict__ queue, unsigned count, int level,
    unsigned* __restrict__ bits)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        vid_t u = queue[i];
        eid_t last = offsets[u + 1];
        for (eid_t e = offsets[u]; e < last; e++) visit(depth, parent, bits, targets[e], u, level);
    }
}

// Middle frontier vertices (32 to 255 edges): a warp each.
extern "C" __global__ void __launch_bounds__(256) ent_td_warp(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, const vid_t* __restrict__ queue, unsigned count, int level,
    unsigned* __restrict__ bits)
{
    unsigned warps = gridDim.x * (blockDim.x >> 5);
    for (unsigned i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < count; i += warps) {
        vid_t u = queue[i];
        eid_t last = offsets[u + 1];
        for (eid_t e = offsets[u] + lane_id(); e < last; e += 32) visit(depth, parent, bits, targets[e], u, level);
    }
}

// Large frontier vertices (256 to 65,535 edges): a block per segment, the
// blocks taking (vertex, segment) pairs; the segments past a vertex's last
// edge are empty.
extern "C" __global__ void __launch_bounds__(256) ent_td_block(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, const vid_t* __restrict__ queue, unsigned count, int level,
    unsigned* __restrict__ bits)
{
    unsigned long long pairs = (unsigned long long)count * LARGE_SEGMENTS;
    for (unsigned long long p = blockIdx.x; p < pairs; p += gridDim.x) {
        vid_t u = queue[p / LARGE_SEGMENTS];
        eid_t first = offsets[u] + (eid_t)(p % LARGE_SEGMENTS) * LARGE_SEGMENT;
        eid_t last = min(first + LARGE_SEGMENT, offsets[u + 1]);
        for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x) visit(depth, parent, bits, targets[e], u, level);
    }
}

// Extreme frontier vertices (65,536 edges or more): the whole grid each.
extern "C" __global__ void __launch_bounds__(256) ent_td_grid(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets, int* __restrict__ depth,
    vid_t* __restrict__ parent, const vid_t* __restrict__ queue, unsigned count, int level,
    unsigned* __restrict__ bits)
{
    eid_t stride = (eid_t)gridDim.x * blockDim.x;
    for (unsigned i = 0; i < count; i++) {
        vid_t u = queue[i];
        eid_t last = offsets[u + 1];
        for (eid_t e = offsets[u] + (eid_t)blockIdx.x * blockDim.x + threadIdx.x; e < last; e += stride)
            visit(depth, parent, bits, targets[e], u, level);
    }
}

// Queues the frontier in bits (a bit a vertex, words words) by degree
// class into queues[class * cap ...], with the counts in stats. The class
// comes from classes (class_nibble: the out-degree's, the rows a top-down
// level walks), read with the bitmap's word, four bits a vertex, so that
// dealing a word's vertices out waits on no load of theirs (the degrees'
// offsets, two dependent loads a vertex, were 44% of the pass's stalls); a
// vertex without rows is not queued (it would expand nothing; a part of a
// partitioned graph has no rows for the others' vertices). Counts the
// frontier's vertices in the words [own_lo, own_hi) in stats->found (the
// GPU's own part, or every word: 0 ends the search), and the hubs (hub_bits:
// the whole graph's) in stats->hubs, listing them in hubs (room for hub_cap)
// for a bottom-up level's hub cache. With deal 0 it only counts and lists:
// the pass a search turning bottom-up needs, its queues being the
// unvisited vertices (ent_unvisited). Where host_stats is set, the last
// block copies the stats there (level_stats_to_host).
//
// Its arguments are one QueueArgs (enterprise.go's queueArgs mirrors it).
struct QueueArgs {
    ReadOnly<uint4> classes;
    ReadOnly<unsigned> hub_bits;
    ReadOnly<unsigned> bits;
    vid_t* queues;
    LevelStats* stats;
    vid_t* hubs;
    unsigned* host_stats;
    long long words, own_lo, own_hi, cap;
    unsigned hub_cap;
    int deal;
};

extern "C" __global__ void __launch_bounds__(256) ent_queue(QueueArgs a)
{
    const ReadOnly<uint4> classes = a.classes;
    const ReadOnly<unsigned> hub_bits = a.hub_bits;
    const ReadOnly<unsigned> bits = a.bits;
    const long long words = a.words, own_lo = a.own_lo, own_hi = a.own_hi, cap = a.cap;
    vid_t* __restrict__ queues = a.queues;
    LevelStats* stats = a.stats;
    vid_t* __restrict__ hubs = a.hubs;
    const unsigned hub_cap = a.hub_cap;
    const int deal = a.deal;
    unsigned* host_stats = a.host_stats;
    __shared__ vid_t stages[CLASS_STAGES];
    ClassQueues q(stages, queues, cap, stats->count);
    const unsigned lane = lane_id();
    unsigned hub_count = 0, found = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    // A warp takes 32 consecutive words; base is the same in all its lanes.
    for (long long base = (long long)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < words; base += stride) {
        const long long w = base + lane;
        const unsigned word = w < words ? bits[w] : 0u;
        uint4 nibbles = make_uint4(0, 0, 0, 0);
        if (word != 0) {
            if (deal) nibbles = classes[w];
            // Hubs are a few thousand in all: an atomic each costs nothing.
            for (unsigned h = word & hub_bits[w]; h != 0; h &= h - 1) {
                const unsigned slot = atomicAdd(&stats->hub_list, 1u);
                if (slot < hub_cap) hubs[slot] = (vid_t)(w * 32 + __ffs(h) - 1);
                hub_count++;
            }
        }
        if (w >= own_lo && w < own_hi) found += __popc(word);
        if (!deal) continue;
        // The warp's set bits in vertex order: lane l's word holds the bits
        // [first, first + its count) of them. A round deals 32 out, a lane
        // each. (A round a word left 29 of 32 lanes idle on Kronecker's
        // dense levels, about 3 bits a word.)
        unsigned total;
        const unsigned first = warp_exclusive_sum((unsigned)__popc(word), total);
        for (unsigned round = 0; round < total; round += 32) {
            const unsigned i = round + lane;
            // The lane whose word holds bit i: the last whose first <= i.
            int from = 0;
#pragma unroll
            for (int step = 16; step > 0; step >>= 1) {
                if (__shfl_sync(FULL_MASK, first, from + step) <= i) from += step;
            }
            const unsigned x = __shfl_sync(FULL_MASK, word, from);
            const unsigned rank = i - __shfl_sync(FULL_MASK, first, from);
            const unsigned nx = __shfl_sync(FULL_MASK, nibbles.x, from), ny = __shfl_sync(FULL_MASK, nibbles.y, from);
            const unsigned nz = __shfl_sync(FULL_MASK, nibbles.z, from), nw = __shfl_sync(FULL_MASK, nibbles.w, from);
            const bool match = i < total;
            // __fns: the position of x's (rank+1)-th set bit from bit 0.
            const int bit = match ? __fns(x, 0, (int)rank + 1) : 0;
            const unsigned nibble = nibble_at(bit < 16 ? (bit < 8 ? nx : ny) : (bit < 24 ? nz : nw), bit & 7);
            q.append(match && (nibble & CLASS_HAS_ROWS), nibble & 3, (vid_t)((base + from) * 32 + bit));
        }
    }
    q.flush();
    block_add(hub_count, &stats->hubs);
    block_add(found, &stats->found);
    level_stats_to_host(stats, host_stats);
}

// Queues the unvisited vertices of [lo, hi) that have rows (in-edges: a
// bottom-up level checks them), by the degree class in classes
// (class_nibble: the in-degree's), into queues[class * cap ...] with the
// counts in stats: the bottom-up queues, made once when the search turns
// bottom-up. Each warp reads 32 consecutive entries of the status array.
extern "C" __global__ void __launch_bounds__(256) ent_unvisited(
    const unsigned* __restrict__ classes, const int* __restrict__ depth, long long lo, long long hi,
    vid_t* __restrict__ queues, long long cap, LevelStats* stats)
{
    __shared__ vid_t stages[CLASS_STAGES];
    ClassQueues q(stages, queues, cap, stats->count);
    for (long long base = lo + (long long)blockIdx.x * blockDim.x; base < hi; base += (long long)gridDim.x * blockDim.x) {
        const long long v = base + threadIdx.x;
        const bool unvisited = v < hi && depth[v] == GPIPE_UNVISITED;
        const unsigned nibble = unvisited ? class_nibble(classes, v) : 0u;
        q.append(nibble & CLASS_HAS_ROWS, nibble & 3, (vid_t)v);
    }
    q.flush();
}

// Bottom-up for the unvisited vertices of one queue, with groups of K lanes
// per vertex: the group checks K in-neighbours at a time, first in the
// block's hub cache, then in the frontier bitmap, and stops at the first
// round with a hit. A visited vertex joins the next frontier (next_bits),
// and the hub list (room for hub_cap, as hubs) when it is a hub; the others
// go to the next queue.
// BottomUpArgs are a bottom-up step's arguments, one struct (the Go side's
// bottomUpArgs in operators/gpuop/enterprise.go mirrors it field by field).
struct BottomUpArgs {
    ReadOnly<eid_t> in_offsets;
    ReadOnly<vid_t> in_sources;
    ReadOnly<unsigned> hub_bits;
    int* depth;
    vid_t* parent;
    ReadOnly<vid_t> queue;
    ReadOnly<vid_t> hubs;
    const unsigned* hub_count;
    ReadOnly<unsigned> bits;
    vid_t* next_queue;
    unsigned* next_count;
    LevelStats* stats;
    vid_t* next_hubs;
    unsigned* next_bits;
    unsigned count;
    int level;
    unsigned hub_cap;
};

template <int K>
__device__ __forceinline__ void bottom_up(const BottomUpArgs& a)
{
    const ReadOnly<eid_t> in_offsets = a.in_offsets;
    const ReadOnly<vid_t> in_sources = a.in_sources;
    const ReadOnly<unsigned> hub_bits = a.hub_bits;
    int* __restrict__ depth = a.depth;
    vid_t* __restrict__ parent = a.parent;
    const ReadOnly<vid_t> queue = a.queue;
    const unsigned count = a.count;
    const int level = a.level;
    const ReadOnly<vid_t> hubs = a.hubs;
    const unsigned* hub_count = a.hub_count;
    const ReadOnly<unsigned> bits = a.bits;
    vid_t* __restrict__ next_queue = a.next_queue;
    unsigned* next_count = a.next_count;
    LevelStats* stats = a.stats;
    vid_t* __restrict__ next_hubs = a.next_hubs;
    const unsigned hub_cap = a.hub_cap;
    unsigned* __restrict__ next_bits = a.next_bits;
    __shared__ vid_t cache[HUB_CACHE_SLOTS];
    __shared__ vid_t stages[8 * WARP_STAGE];
    hub_cache_load(cache, hubs, min(*hub_count, hub_cap));
    WarpQueue unvisited(warp_stage(stages, 0, 1), next_queue, next_count, ~0u);
    VirtualWarp<K> group;
    const unsigned per_warp = 32 / K, warps = gridDim.x * (blockDim.x >> 5);
    unsigned found = 0;
    for (unsigned base = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * per_warp; base < count; base += warps * per_warp) {
        unsigned i = base + lane_id() / K;
        bool active = i < count, visited = false;
        vid_t v = active ? queue[i] : 0;
        if (active) {
            eid_t first = in_offsets[v], last = in_offsets[v + 1];
            for (eid_t round = first; round < last; round += K) {
                eid_t e = round + group.lane;
                vid_t u = e < last ? in_sources[e] : GPIPE_NO_VERTEX;
                unsigned hit = group.ballot(e < last && (hub_cached(cache, u) || in_bitmap(bits, u)));
                if (hit) {
                    vid_t p = __shfl_sync(group.mask, u, __ffs(hit) - 1, K);
                    if (group.lane == 0) {
                        depth[v] = level + 1;
                        parent[v] = p;
                        atomicOr(&next_bits[v >> 5], 1u << (v & 31));
                    }
                    visited = true;
                    break;
                }
            }
        }
        __syncwarp();
        bool leader = active && group.lane == 0;
        found += leader && visited;
        unvisited.append(leader && !visited, v);
        warp_append(leader && visited && in_bitmap(hub_bits, v), v, next_hubs, &stats->hub_list, hub_cap);
    }
    unvisited.flush();
    block_add(found, &stats->found);
}

#define BOTTOM_UP(NAME, K)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256) NAME(BottomUpArgs a) { bottom_up<K>(a); }

// Vertices with fewer than 32 in-edges: groups of 4 lanes, so that a warp
// has eight vertices' loads in flight at once, and a vertex's in-neighbours
// are checked 4 at a time rather than one by one while the rest of the warp
// waits for its longest row.
BOTTOM_UP(ent_bu_small, 4)
// 32 to 255 in-edges: half a warp each.
BOTTOM_UP(ent_bu_middle, 16)
// More: a warp each.
BOTTOM_UP(ent_bu_wide, 32)
