// PageRank, pull-based over the in-edge layout (CSC), virtual warp-centric
// (PPoPP'11 §3.1, with §3.2's options): the sum program of the vertex-program
// engine (vertex_program.cuh's RankUpdate) in the vwc layout. The definition
// is networkx's, as on the CPU: x'[v] = d·(Σ_{u→v} c[u] + dangling/n) +
// (1−d)/n, where c[u] is x[u]/outdeg(u) and dangling the rank of the
// vertices without out-edges.
//
// One iteration is one launch of pr_pull_k<K>_<C>: each vertex goes to a
// virtual warp whose K lanes sum its in-neighbours' contributions, up to
// four independent loads a lane in flight; lane 0 writes the new rank and the
// vertex's next contribution, and adds to the L1 change and to the next
// iteration's dangling sum: one pass over the graph, as on the CPU. With
// deferred outliers, vertices of huge in-degree are skipped there and summed
// by pr_outliers (a block per segment of OUTLIER_SEGMENT in-edges,
// atomically into acc) and finished by pr_outliers_finish.
//
// C is the contributions' type: double, or float where the tolerance allows
// it (the CPU's rule, operators/pagerank.go).
//
// Weighted PageRank (networkx's default, weight="weight"; the _w kernels)
// is the same pull with c[u] = x[u]/W(u), W(u) the sum of u's out-weights
// (a vertex of W(u) = 0 is dangling), each in-edge's contribution
// multiplied by its weight: in_weights run parallel to in_sources. The _hub kernels read a CSC
// whose sources are renumbered hubs first (hub_id[v] is v's new number), so
// that the contributions every edge gathers at random sit together, the
// most-read ones in L1 and the rest in L2; ranks stay in vertex order.
#include "vertex_program.cuh"

#define OUTLIER_SEGMENT 4096

// Starts the iteration: x = 1/n, inv_degree = 1/outdeg (0 without
// out-edges), c = x·inv_degree, and the dangling sum. Weighted (W), the
// out-weight W(u) = Σ out_weights over u's out-edges, in their order (as
// the CPU sums it) takes the out-degree's place.
template <typename C, bool HUB, bool W>
__device__ __forceinline__ void pr_init(
    const eid_t* __restrict__ out_offsets, const double* __restrict__ out_weights, const vid_t* __restrict__ hub_id,
    double* __restrict__ rank, double* __restrict__ inv_degree, C* __restrict__ contrib, long long n, double* dangling)
{
    __shared__ double scratch[32];
    const double x0 = 1.0 / (double)n;
    double sum = 0;
    for (long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x; u < n;
         u += (long long)gridDim.x * blockDim.x) {
        const eid_t first = out_offsets[u], last = out_offsets[u + 1];
        double out = (double)(last - first);
        if (W) {
            out = 0;
            for (eid_t e = first; e < last; e++) out += out_weights[e];
        }
        double inv = out != 0 ? 1.0 / out : 0.0;
        rank[u] = x0;
        inv_degree[u] = inv;
        contrib[HUB ? hub_id[u] : u] = (C)(x0 * inv);
        if (inv == 0) sum += x0;
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0 && sum != 0) atomicAdd(dangling, sum);
}

// The source of in-edge e. With stream set, the load carries the
// evict-first hint (ld.global.cs): the indices are read once an iteration,
// and should not push the gathered contributions out of L1 and L2.
__device__ __forceinline__ vid_t source_at(const ReadOnly<vid_t>& sources, eid_t e, bool stream) {
    return stream ? __ldcs(address(sources, e)) : sources[e];
}

// c, the contribution of in-edge e, times the edge's weight where the pull
// is weighted (W); the weights are read once an iteration, as the sources
// are, and carry the same hint. Weights: a const double* or a
// ReadOnly<double>.
template <bool W, class Weights>
__device__ __forceinline__ double weigh(const Weights& weights, eid_t e, bool stream, double c)
{
    if (!W) return c;
    return (stream ? __ldcs(address(weights, e)) : weights[e]) * c;
}

// Σ contrib[sources[e]] (weighed) over [first, last), K lanes apart, up to
// four loads in flight a lane.
template <int K, typename C, bool W>
__device__ __forceinline__ double gather(const ReadOnly<vid_t>& sources, const ReadOnly<double>& weights,
                                         const ReadOnly<C>& contrib, eid_t first, eid_t last, unsigned lane, bool stream)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    eid_t e = first + lane;
    for (; e + 3 * K < last; e += 4 * K) {
        const vid_t a = source_at(sources, e, stream), b = source_at(sources, e + K, stream);
        const vid_t c = source_at(sources, e + 2 * K, stream), d = source_at(sources, e + 3 * K, stream);
        s0 += weigh<W>(weights, e, stream, (double)contrib[a]);
        s1 += weigh<W>(weights, e + K, stream, (double)contrib[b]);
        s2 += weigh<W>(weights, e + 2 * K, stream, (double)contrib[c]);
        s3 += weigh<W>(weights, e + 3 * K, stream, (double)contrib[d]);
    }
    if (e + K < last) {
        const vid_t a = source_at(sources, e, stream), b = source_at(sources, e + K, stream);
        s0 += weigh<W>(weights, e, stream, (double)contrib[a]);
        s1 += weigh<W>(weights, e + K, stream, (double)contrib[b]);
        e += 2 * K;
    }
    if (e < last) s2 += weigh<W>(weights, e, stream, (double)contrib[source_at(sources, e, stream)]);
    return (s0 + s1) + (s2 + s3);
}

template <int K, typename C, bool HUB, bool W>
__device__ __forceinline__ void pr_pull(const PRPullArgs<C>& a)
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
    const long long n = a.n, chunk = a.chunk, outlier_degree = a.outlier_degree;
    const double damping = a.damping;
    const double* dangling = a.dangling;
    double* next_dangling = a.next_dangling;
    double* l1 = a.l1;
    unsigned long long* counter = a.counter;
    const bool stream = a.stream != 0;
    __shared__ double scratch[32];
    VirtualWarp<K> vw;
    ChunkSchedule<K> schedule(vw, counter, chunk, n);
    RankUpdate update(damping, dangling, n);
    for (long long start = schedule.take(); start < n; start = schedule.take()) {
        long long end = min(start + chunk, n);
        for (long long v = start; v < end; v++) {
            eid_t first = in_offsets[v], last = in_offsets[v + 1];
            if (outlier_degree > 0 && last - first > outlier_degree) continue;
            double sum = vw.sum(gather<K, C, W>(in_sources, in_weights, contrib, first, last, vw.lane, stream));
            if (vw.lane == 0)
                update.apply(v, HUB ? (long long)hub_id[v] : v, sum, rank, inv_degree, next_rank, next_contrib);
        }
    }
    update.flush(scratch, l1, next_dangling);
}

// Sums the outliers' in-edge segments into acc, one block per segment.
// segments[i] is (outlier index in the low 32 bits, segment in the high 32);
// outliers[k] is the k-th outlier vertex.
template <typename C, bool W>
__device__ __forceinline__ void pr_outliers(
    const eid_t* __restrict__ in_offsets, const vid_t* __restrict__ in_sources, const double* __restrict__ in_weights,
    const C* __restrict__ contrib, const vid_t* __restrict__ outliers,
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
        for (eid_t e = first + threadIdx.x; e < last; e += blockDim.x)
            sum += weigh<W>(in_weights, e, false, (double)contrib[in_sources[e]]);
        sum = block_sum(sum, scratch);
        if (threadIdx.x == 0) atomicAdd(&acc[k], sum);
    }
}

// Turns the outliers' sums into ranks and clears acc for the next iteration.
template <typename C, bool HUB>
__device__ __forceinline__ void pr_outliers_finish(const PRFinishArgs<C>& a)
{
    __shared__ double scratch[32];
    RankUpdate update(a.damping, a.dangling, a.n);
    for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < a.count; k += gridDim.x * blockDim.x) {
        vid_t v = a.outliers[k];
        update.apply(v, HUB ? (long long)a.hub_id[v] : (long long)v, a.acc[k], a.rank, a.inv_degree, a.next_rank,
                     a.next_contrib);
        a.acc[k] = 0;
    }
    update.flush(scratch, a.l1, a.next_dangling);
}

// The kernels: pr_pull_k<K>_<SUF>, pr_init_<SUF>, pr_outliers_<f64|f32>
// and pr_outliers_finish_<SUF>, and the weighted pull's pr_pull_k<K>_<SUF>_w
// (the same arguments, reading in_weights), pr_init_<SUF>_w and
// pr_outliers_<f64|f32>_w, which take the in-edges' weights after the
// sources (the init the out-edges' after the offsets); the finish is the
// same.
#define PR_PULL(K, SUF, C, HUB)                                                                           \
    extern "C" __global__ void __launch_bounds__(256) pr_pull_k##K##_##SUF(PRPullArgs<C> a)                 \
    {                                                                                                        \
        pr_pull<K, C, HUB, false>(a);                                                                        \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) pr_pull_k##K##_##SUF##_w(PRPullArgs<C> a)             \
    {                                                                                                        \
        pr_pull<K, C, HUB, true>(a);                                                                         \
    }

#define PR_VARIANT(SUF, C, HUB)                                                                           \
    PR_PULL(1, SUF, C, HUB)                                                                                  \
    PR_PULL(2, SUF, C, HUB)                                                                                  \
    PR_PULL(4, SUF, C, HUB)                                                                                  \
    PR_PULL(8, SUF, C, HUB)                                                                                  \
    PR_PULL(16, SUF, C, HUB)                                                                                 \
    PR_PULL(32, SUF, C, HUB)                                                                                 \
    extern "C" __global__ void __launch_bounds__(256) pr_init_##SUF(                                         \
        const eid_t* out_offsets, const vid_t* hub_id, double* rank, double* inv_degree, C* contrib,         \
        long long n, double* dangling)                                                                       \
    {                                                                                                        \
        pr_init<C, HUB, false>(out_offsets, nullptr, hub_id, rank, inv_degree, contrib, n, dangling);        \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) pr_init_##SUF##_w(                                     \
        const eid_t* out_offsets, const double* out_weights, const vid_t* hub_id, double* rank,              \
        double* inv_degree, C* contrib, long long n, double* dangling)                                       \
    {                                                                                                        \
        pr_init<C, HUB, true>(out_offsets, out_weights, hub_id, rank, inv_degree, contrib, n, dangling);     \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) pr_outliers_finish_##SUF(PRFinishArgs<C> a)         \
    {                                                                                                        \
        pr_outliers_finish<C, HUB>(a);                                                                       \
    }

PR_VARIANT(f64, double, false)
PR_VARIANT(f32, float, false)
PR_VARIANT(f64_hub, double, true)
PR_VARIANT(f32_hub, float, true)

#define PR_OUTLIERS(SUF, C)                                                                               \
    extern "C" __global__ void __launch_bounds__(256) pr_outliers_##SUF(                                     \
        const eid_t* in_offsets, const vid_t* in_sources, const C* contrib, const vid_t* outliers,           \
        const unsigned long long* segments, unsigned count, double* acc)                                     \
    {                                                                                                        \
        pr_outliers<C, false>(in_offsets, in_sources, nullptr, contrib, outliers, segments, count, acc);     \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) pr_outliers_##SUF##_w(                                 \
        const eid_t* in_offsets, const vid_t* in_sources, const double* in_weights, const C* contrib,        \
        const vid_t* outliers, const unsigned long long* segments, unsigned count, double* acc)              \
    {                                                                                                        \
        pr_outliers<C, true>(in_offsets, in_sources, in_weights, contrib, outliers, segments, count, acc);   \
    }

PR_OUTLIERS(f64, double)
PR_OUTLIERS(f32, float)
