// PageRank, pull-based over the in-edge layout (CSC), virtual warp-centric
// (PPoPP'11 §3.1, with §3.2's options). The definition is networkx's, as on
// the CPU: x'[v] = d·(Σ_{u→v} c[u] + dangling/n) + (1−d)/n, where c[u] is
// x[u]/outdeg(u) and dangling the rank of the vertices without out-edges.
//
// One iteration is one launch of pr_pull_k<K>: each vertex goes to a virtual
// warp whose K lanes sum its in-neighbours' contributions; lane 0 writes the
// new rank and the vertex's next contribution, and adds to the L1 change and
// to the next iteration's dangling sum — one pass over the graph, as on the
// CPU. With deferred outliers, vertices of huge in-degree are skipped there
// and summed by pr_outliers (a block per segment of OUTLIER_SEGMENT in-edges,
// atomically into acc) and finished by pr_outliers_finish.
#include "common.cuh"

#define OUTLIER_SEGMENT 4096

// Starts the iteration: x = 1/n, inv_degree = 1/outdeg (0 without
// out-edges), c = x·inv_degree, and the dangling sum.
extern "C" __global__ void __launch_bounds__(256) pr_init(
    const eid_t* __restrict__ out_offsets, double* __restrict__ rank,
    double* __restrict__ inv_degree, double* __restrict__ contrib, long long n, double* dangling)
{
    __shared__ double scratch[32];
    const double x0 = 1.0 / (double)n;
    double sum = 0;
    for (long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x; u < n;
         u += (long long)gridDim.x * blockDim.x) {
        eid_t degree = out_offsets[u + 1] - out_offsets[u];
        double inv = degree > 0 ? 1.0 / (double)degree : 0.0;
        rank[u] = x0;
        inv_degree[u] = inv;
        contrib[u] = x0 * inv;
        if (degree == 0) sum += x0;
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0 && sum != 0) atomicAdd(dangling, sum);
}

// The end of one vertex's update, shared by the pull and outlier kernels.
struct RankUpdate {
    double base, damping, change, dangle;

    __device__ __forceinline__ RankUpdate(double damping_, const double* dangling, long long n)
        : base((1.0 - damping_) / (double)n + damping_ * (*dangling) / (double)n),
          damping(damping_), change(0), dangle(0) {}

    __device__ __forceinline__ void apply(long long v, double sum, const double* __restrict__ rank,
                                          const double* __restrict__ inv_degree,
                                          double* __restrict__ next_rank, double* __restrict__ next_contrib) {
        double x = base + damping * sum;
        double inv = inv_degree[v];
        change += fabs(x - rank[v]);
        next_rank[v] = x;
        next_contrib[v] = x * inv;
        if (inv == 0) dangle += x;
    }

    // Adds this thread's change and dangling rank to the block's, and the
    // block's to the totals.
    __device__ __forceinline__ void flush(double* scratch, double* l1, double* next_dangling) {
        double c = block_sum(change, scratch);
        double d = block_sum(dangle, scratch);
        if (threadIdx.x == 0) {
            if (c != 0) atomicAdd(l1, c);
            if (d != 0) atomicAdd(next_dangling, d);
        }
    }
};

template <int K>
__device__ __forceinline__ void pr_pull(
    const eid_t* __restrict__ in_offsets, const vid_t* __restrict__ in_sources,
    const double* __restrict__ contrib, const double* __restrict__ inv_degree,
    const double* __restrict__ rank, double* __restrict__ next_rank, double* __restrict__ next_contrib,
    long long n, double damping, const double* dangling, double* next_dangling, double* l1,
    unsigned long long* counter, long long chunk, long long outlier_degree)
{
    __shared__ double scratch[32];
    VirtualWarp<K> vw;
    ChunkSchedule<K> schedule(vw, counter, chunk, n);
    RankUpdate update(damping, dangling, n);
    for (long long start = schedule.take(); start < n; start = schedule.take()) {
        long long end = min(start + chunk, n);
        for (long long v = start; v < end; v++) {
            eid_t first = in_offsets[v], last = in_offsets[v + 1];
            if (outlier_degree > 0 && last - first > outlier_degree) continue;
            double sum = 0;
            for (eid_t e = first + vw.lane; e < last; e += K) sum += contrib[in_sources[e]];
            sum = vw.sum(sum);
            if (vw.lane == 0) update.apply(v, sum, rank, inv_degree, next_rank, next_contrib);
        }
    }
    update.flush(scratch, l1, next_dangling);
}

#define PR_PULL(K)                                                                                       \
    extern "C" __global__ void __launch_bounds__(256) pr_pull_k##K(                                      \
        const eid_t* in_offsets, const vid_t* in_sources, const double* contrib,                         \
        const double* inv_degree, const double* rank, double* next_rank, double* next_contrib,           \
        long long n, double damping, const double* dangling, double* next_dangling, double* l1,          \
        unsigned long long* counter, long long chunk, long long outlier_degree)                           \
    {                                                                                                    \
        pr_pull<K>(in_offsets, in_sources, contrib, inv_degree, rank, next_rank, next_contrib, n,        \
                   damping, dangling, next_dangling, l1, counter, chunk, outlier_degree);                \
    }
PR_PULL(1)
PR_PULL(2)
PR_PULL(4)
PR_PULL(8)
PR_PULL(16)
PR_PULL(32)

// Sums the outliers' in-edge segments into acc, one block per segment.
// segments[i] is (outlier index in the low 32 bits, segment in the high 32);
// outliers[k] is the k-th outlier vertex.
extern "C" __global__ void __launch_bounds__(256) pr_outliers(
    const eid_t* __restrict__ in_offsets, const vid_t* __restrict__ in_sources,
    const double* __restrict__ contrib, const vid_t* __restrict__ outliers,
    const unsigned long long* __restrict__ segments, unsigned count, double* acc)
{
    __shared__ double scratch[32];
    for (unsigned i = blockIdx.x; i < count; i += gridDim.x) {
        unsigned long long entry = segments[i];
        unsigned k = (unsigned)(entry & 0xffffffffu);
        vid_t v = outliers[k];
        eid_t first = in_offsets[v] + (eid_t)(entry >> 32) * OUTLIER_SEGMENT;
        eid_t last = min(first + OUTLIER_SEGMENT, in_offsets[v + 1]);
        double sum = 0;
        for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x) sum += contrib[in_sources[e]];
        sum = block_sum(sum, scratch);
        if (threadIdx.x == 0) atomicAdd(&acc[k], sum);
    }
}

// Turns the outliers' sums into ranks and clears acc for the next iteration.
extern "C" __global__ void __launch_bounds__(256) pr_outliers_finish(
    const vid_t* __restrict__ outliers, unsigned count, double* acc,
    const double* __restrict__ inv_degree, const double* __restrict__ rank,
    double* __restrict__ next_rank, double* __restrict__ next_contrib, long long n, double damping,
    const double* dangling, double* next_dangling, double* l1)
{
    __shared__ double scratch[32];
    RankUpdate update(damping, dangling, n);
    for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < count; k += gridDim.x * blockDim.x) {
        update.apply(outliers[k], acc[k], rank, inv_degree, next_rank, next_contrib);
        acc[k] = 0;
    }
    update.flush(scratch, l1, next_dangling);
}
