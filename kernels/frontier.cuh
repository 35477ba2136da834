// Device pieces of the frontier-based traversals (Enterprise, BFS-4K):
// shuffle prefix sums, appends to a global queue that cost one atomic per
// warp or block and write consecutive addresses, the degree classes, the
// hub-vertex cache, and what a BFS level leaves for the host (LevelStats,
// level_stats_to_host).
#pragma once

#include "common.cuh"

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }

// The lanes below this one, as a mask.
__device__ __forceinline__ unsigned lanes_below() { return (1u << lane_id()) - 1u; }

// Exclusive prefix sum of x over the warp, with shuffles in log2(32) steps
// (BFS-4K §5.1, Fig. 3); total gets the warp's sum. Every lane must call it.
template <typename T>
__device__ __forceinline__ T warp_exclusive_sum(T x, T& total) {
    T v = x;
#pragma unroll
    for (int i = 1; i < 32; i <<= 1) {
        T n = __shfl_up_sync(FULL_MASK, v, i);
        if (lane_id() >= (unsigned)i) v += n;
    }
    total = __shfl_sync(FULL_MASK, v, 31);
    return v - x;
}

// Appends v to queue where keep is set, for every lane of the warp at once:
// the warp reserves its run with one atomic (the binary prefix sum of
// BFS-4K §5.1: ballot and popc), and the lanes write consecutive slots, so
// the writes coalesce (§5.6). Slots at cap or beyond are counted but not
// written: a count above cap tells the host the queue overflowed. Every lane
// must call it.
__device__ __forceinline__ void warp_append(bool keep, vid_t v, vid_t* queue, unsigned* count, unsigned cap) {
    unsigned mask = __ballot_sync(FULL_MASK, keep);
    if (mask == 0) return;
    unsigned base = 0;
    if (lane_id() == __ffs(mask) - 1) base = atomicAdd(count, (unsigned)__popc(mask));
    base = __shfl_sync(FULL_MASK, base, __ffs(mask) - 1);
    unsigned at = base + __popc(mask & lanes_below());
    if (keep && at < cap) queue[at] = v;
}

// The sum of x over the block, added to *total by one thread: one atomic
// per block (atomics on one address serialize in L2: one per warp, on a
// grid of a thousand blocks, cost tens of microseconds a level). Every
// thread of the block must call it; it synchronizes the block.
template <typename T>
__device__ __forceinline__ void block_add(T x, T* total) {
    __shared__ T sum;
    if (threadIdx.x == 0) sum = 0;
    __syncthreads();
#pragma unroll
    for (int i = 16; i > 0; i >>= 1) x += __shfl_xor_sync(FULL_MASK, x, i);
    if (lane_id() == 0 && x != 0) atomicAdd(&sum, x);
    __syncthreads();
    if (threadIdx.x == 0 && sum != 0) atomicAdd(total, sum);
}

// WARP_STAGE is the room, in vertices, of a warp's staging area.
#define WARP_STAGE 128

// WarpQueue stages one warp's appends to a global queue in shared memory
// and moves them out a stage at a time, with one atomic per flush: a queue
// that every warp appends to then costs an atomic per WARP_STAGE entries,
// not one per warp and round. Its runs keep the order of the appends. All
// lanes of the warp must make every call together.
struct WarpQueue {
    vid_t* stage;     // WARP_STAGE slots of shared memory, this warp's own
    unsigned staged;  // the same in every lane
    vid_t* queue;
    unsigned* count;
    unsigned cap;  // slots at cap or beyond are counted, not written

    __device__ __forceinline__ WarpQueue(vid_t* stage_, vid_t* queue_, unsigned* count_, unsigned cap_)
        : stage(stage_), staged(0), queue(queue_), count(count_), cap(cap_) {}

    __device__ __forceinline__ void append(bool keep, vid_t v) {
        unsigned mask = __ballot_sync(FULL_MASK, keep);
        if (keep) stage[staged + __popc(mask & lanes_below())] = v;
        staged += __popc(mask);
        if (staged > WARP_STAGE - 32) flush();
    }

    __device__ __forceinline__ void flush() {
        __syncwarp();
        if (staged == 0) return;
        unsigned base = 0;
        if (lane_id() == 0) base = atomicAdd(count, staged);
        base = __shfl_sync(FULL_MASK, base, 0);
        for (unsigned i = lane_id(); i < staged; i += 32)
            if (base + i < cap) queue[base + i] = stage[i];
        __syncwarp();
        staged = 0;
    }
};

// The staging area of this thread's warp among `stages` areas per warp.
__device__ __forceinline__ vid_t* warp_stage(vid_t* shared_stages, int which, int stages) {
    return shared_stages + ((threadIdx.x >> 5) * stages + which) * WARP_STAGE;
}

// Enterprise's frontier classes by out-degree (§4.2): fewer than 32 edges
// (a thread each), 32 to 255 (a warp), 256 to 65,535 (a block), and more (the
// whole grid).
#define CLASS_SMALL 0
#define CLASS_MIDDLE 1
#define CLASS_LARGE 2
#define CLASS_EXTREME 3
#define CLASSES 4

__device__ __forceinline__ int degree_class(eid_t degree) {
    return degree < 32 ? CLASS_SMALL : degree < 256 ? CLASS_MIDDLE : degree < 65536 ? CLASS_LARGE : CLASS_EXTREME;
}

// The hub-vertex cache of Enterprise §4.3: a hash table in shared memory
// holding hub vertices of the current frontier, HC[hash(id)] = id. A hit is
// exact (the slot holds that id, so the vertex is in the frontier); a miss
// says nothing and the status array is read instead.
#define HUB_CACHE_SLOTS 2048

__device__ __forceinline__ unsigned hub_slot(vid_t v) {
    return (v * 2654435761u) >> (32 - 11);  // Fibonacci hashing to 2^11 slots
}

// Fills the block's cache from the list of frontier hubs. Every thread must
// call it; it synchronizes the block. Hubs: a const vid_t* or a
// ReadOnly<vid_t>.
template <class Hubs>
__device__ __forceinline__ void hub_cache_load(vid_t* cache, const Hubs& hubs, unsigned count) {
    for (unsigned i = threadIdx.x; i < HUB_CACHE_SLOTS; i += blockDim.x) cache[i] = GPIPE_NO_VERTEX;
    __syncthreads();
    count = min(count, (unsigned)HUB_CACHE_SLOTS * 4);
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) {
        vid_t h = hubs[i];
        cache[hub_slot(h)] = h;
    }
    __syncthreads();
}

__device__ __forceinline__ bool hub_cached(const vid_t* cache, vid_t v) { return cache[hub_slot(v)] == v; }

// A frontier as a bitmap, one bit per vertex: what a bottom-up step asks of
// each in-neighbour ("is it in the frontier?") in a 32nd of the bytes of
// the status array, so that far more of it stays in the caches. Bits: a
// const unsigned* or a ReadOnly<unsigned>.
template <class Bits>
__device__ __forceinline__ bool in_bitmap(const Bits& bits, vid_t v) { return (bits[v >> 5] >> (v & 31)) & 1u; }

// What a BFS level leaves for the host (Enterprise's, on one GPU or
// several), which reads it after each level.
struct LevelStats {
    unsigned count[CLASSES];  // the next queue, per class
    unsigned hubs;            // F_h: hub vertices in the next top-down frontier
    unsigned found;           // vertices a bottom-up level visited, or in a top-down frontier
    unsigned hub_list;        // entries of the next hub list
    // On several GPUs, mg_push_clear's count of the part's own vertices in
    // the next frontier and of the hubs among them, made as it stores
    // their words (kernels/mgpu.cu): the host decides the next level's
    // direction from these before any queue pass.
    unsigned own_found, own_hubs;
    // blocks_done counts the blocks of a launch that have added their
    // counts (level_stats_to_host); 0 between launches.
    unsigned blocks_done;
};

// LEVEL_STATS_WORDS are the fields before blocks_done, which the host reads.
#define LEVEL_STATS_WORDS 9

// Copies stats to host (mapped pinned memory) once every block of the
// launch has added its counts to them: the last block to finish does it,
// and clears blocks_done for the next launch. The host then reads them
// after its wait for the stream, with no copy of its own queued: a copy is
// a driver call and a DMA, 10–25 µs of each small BFS level on four GPUs
// (operators/mgpu_bfs.go). Nothing where host is null. Every thread of the
// block must call it, after its adds.
__device__ __forceinline__ void level_stats_to_host(LevelStats* stats, unsigned* host) {
    if (host == nullptr || !last_block(&stats->blocks_done)) return;
    if (threadIdx.x < LEVEL_STATS_WORDS) host[threadIdx.x] = ((volatile unsigned*)stats)[threadIdx.x];
    if (threadIdx.x == 0) stats->blocks_done = 0;
}
