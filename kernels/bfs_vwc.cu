// Breadth-first search, virtual warp-centric (PPoPP'11 §3.1, with the
// deferring-outliers and dynamic workload distribution options of §3.2).
//
// Level-synchronous and top-down over a status array: depth[v] is v's level,
// or GPIPE_UNVISITED. One launch of bfs_vwc_k<K> expands every vertex whose
// depth is `level`; a virtual warp of K lanes owns a chunk of vertices,
// finds the frontier vertices among them K at a time (one coalesced read and
// a ballot: the SISD phase, vectorized) and expands each one's edges with its
// K lanes (the SIMD phase). Writes to depth and parent race only between
// threads that write the same depth and a parent from the same level, so any
// winner leaves a valid BFS tree (the status-array argument of Enterprise
// §2.1), and no atomics are needed.
//
// Deferring outliers: a frontier vertex with more than outlier_degree edges
// is not expanded in place; its edges are queued as segments of
// OUTLIER_SEGMENT edges, and bfs_vwc_outliers expands each segment with a
// whole block, so one hub no longer stalls its warp and block.
#include "common.cuh"

#define OUTLIER_SEGMENT 4096

// An outlier queue entry: the vertex in the low 32 bits, the segment in the
// high 32.
typedef unsigned long long outlier_t;

// VWCLevelArgs are a level's arguments, one struct (operators/gpuop/bfs.go's
// vwcLevelArgs mirrors it field by field).
struct VWCLevelArgs {
    ReadOnly<eid_t> offsets;
    ReadOnly<vid_t> targets;
    int* depth;
    vid_t* parent;
    unsigned long long* counter;
    outlier_t* outliers;
    unsigned* outlier_count;
    int* discovered;
    long long n;
    long long chunk;
    long long outlier_degree;
    int level;
};

template <int K>
__device__ __forceinline__ void bfs_level(const VWCLevelArgs& a)
{
    const ReadOnly<eid_t> offsets = a.offsets;
    const ReadOnly<vid_t> targets = a.targets;
    int* __restrict__ depth = a.depth;
    vid_t* __restrict__ parent = a.parent;
    const long long n = a.n, chunk = a.chunk, outlier_degree = a.outlier_degree;
    const int level = a.level;
    unsigned long long* counter = a.counter;
    outlier_t* __restrict__ outliers = a.outliers;
    unsigned* outlier_count = a.outlier_count;
    int* discovered = a.discovered;
    VirtualWarp<K> vw;
    ChunkSchedule<K> schedule(vw, counter, chunk, n);
    bool found = false;
    for (long long start = schedule.take(); start < n; start = schedule.take()) {
        long long end = min(start + chunk, n);
        for (long long base = start; base < end; base += K) {
            long long v = base + vw.lane;
            unsigned frontier = vw.ballot(v < end && depth[v] == level);
            while (frontier) {
                vid_t u = (vid_t)(base + __ffs(frontier) - 1);
                frontier &= frontier - 1;
                eid_t first = offsets[u], last = offsets[u + 1];
                if (outlier_degree > 0 && last - first > outlier_degree) {
                    if (vw.lane == 0) {
                        unsigned segments = (unsigned)((last - first + OUTLIER_SEGMENT - 1) / OUTLIER_SEGMENT);
                        unsigned at = atomicAdd(outlier_count, segments);
                        for (unsigned s = 0; s < segments; s++)
                            outliers[at + s] = (outlier_t)u | ((outlier_t)s << 32);
                    }
                    continue;
                }
                for (eid_t e = first + vw.lane; e < last; e += K) {
                    vid_t w = targets[e];
                    if (depth[w] == GPIPE_UNVISITED) {
                        depth[w] = level + 1;
                        parent[w] = u;
                        found = true;
                    }
                }
            }
        }
    }
    if (found) *discovered = 1;
}

#define BFS_VWC(K) \
    extern "C" __global__ void __launch_bounds__(256) bfs_vwc_k##K(VWCLevelArgs a) { bfs_level<K>(a); }
BFS_VWC(1)
BFS_VWC(2)
BFS_VWC(4)
BFS_VWC(8)
BFS_VWC(16)
BFS_VWC(32)

// Expands the deferred outliers' edge segments, one block per segment.
extern "C" __global__ void __launch_bounds__(256) bfs_vwc_outliers(
    const eid_t* __restrict__ offsets, const vid_t* __restrict__ targets,
    int* __restrict__ depth, vid_t* __restrict__ parent, int level,
    const outlier_t* __restrict__ outliers, const unsigned* outlier_count, int* discovered)
{
    unsigned count = *outlier_count;
    bool found = false;
    for (unsigned i = blockIdx.x; i < count; i += gridDim.x) {
        outlier_t entry = outliers[i];
        vid_t u = (vid_t)(entry & 0xffffffffu);
        eid_t first = offsets[u] + (eid_t)(entry >> 32) * OUTLIER_SEGMENT;
        eid_t last = min(first + OUTLIER_SEGMENT, offsets[u + 1]);
        for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x) {
            vid_t w = targets[e];
            if (depth[w] == GPIPE_UNVISITED) {
                depth[w] = level + 1;
                parent[w] = u;
                found = true;
            }
        }
    }
    if (found) *discovered = 1;
}

// Marks the source: depth 0, its own parent. depth and parent start as all
// ones (GPIPE_UNVISITED, GPIPE_NO_VERTEX) by a memset.
extern "C" __global__ void bfs_init_source(int* depth, vid_t* parent, vid_t source)
{
    depth[source] = 0;
    parent[source] = source;
}
