// G-Shards and Concatenated Windows (CuSha, HPDC'14 §3.1, §3.2, §4): the
// template kernels that run a vertex program (vertex_program.cuh) over a
// graph's shards. vp_gshards.cu and vp_cw.cu instantiate them; the host
// side is operators/gpu_vp.go and the layout convert/shards.go.
//
// Shard i holds every edge whose destination is in [i·N, (i+1)·N), sorted
// by source: entries e in [start[i], start[i+1]) of the arrays SrcIndex
// (src_index), SrcValue (src_value, the source's value as last written
// back), EdgeValue (weights) and DestIndex (dest, the destination less
// i·N, so 16 bits). Window W_ij is the run of shard j's entries whose source
// is in shard i: [windows[j·(S+1)+i], windows[j·(S+1)+i+1]). Concatenated
// Windows keep, for each shard i, the windows W_ij of all shards j one after
// the other: the sources (less i·N, cw_src) and where each entry lives
// (mapper), in [cw_start[i], cw_start[i+1]).
//
// One block processes one shard in four steps (§4, Figure 5): 1. the
// shard's vertex values into shared memory (coalesced); 2. every entry's
// message into its destination's shared value (coalesced reads, atomics
// in shared memory); 3. the improved values back to VertexValues
// (coalesced); 4. the write-back of the improved values into every other
// shard's SrcValue: G-Shards by warps walking window W_ij of each shard j,
// CW by threads walking CW_i through the Mapper.
//
// Monotone programs run asynchronously, as CuSha does: a block may see
// values other blocks wrote in the same launch. A shard whose SrcValue
// nothing wrote since its last run is skipped (dirty[i] < iteration): the
// write-back marks each shard it writes into with the next iteration.
// PageRank runs synchronously (its iteration count and L1 change are
// networkx's), so its write-back is a second launch.
#pragma once

#include "vertex_program.cuh"

// The shard holding entry p: the j with start[j] <= p < start[j+1]. Start:
// a const unsigned* or a ReadOnly<unsigned>.
template <class Start>
__device__ __forceinline__ unsigned shard_of(const Start& start, unsigned S, unsigned p) {
    unsigned lo = 0, hi = S;  // start[lo] <= p < start[hi]
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) >> 1;
        if (start[mid] <= p) lo = mid;
        else hi = mid;
    }
    return lo;
}

// ShardArgs are the arguments of an iteration over G-Shards or
// Concatenated Windows (gs_<P>, cw_<P>) and of their parent passes
// (gs_parent_<P>, cw_parent_<P>), one struct (operators/gpuop/vp.go's
// shardArgs mirrors it field by field): windows and src_index are
// G-Shards', cw_start, cw_src and mapper Concatenated Windows' (null in
// the other); parent, round, r and source the parent passes'.
template <class P>
struct ShardArgs {
    ReadOnly<unsigned> start;
    ReadOnly<unsigned> windows;
    ReadOnly<unsigned> src_index;
    ReadOnly<unsigned> cw_start;
    ReadOnly<unsigned short> cw_src;
    ReadOnly<unsigned> mapper;
    ReadOnly<unsigned short> dest;
    ReadOnly<typename P::Weight> weights;
    // Read and written in the same launch (step 2 reads what other
    // blocks' step 4 writes): plain loads.
    typename P::Value* src_value;
    typename P::Value* values;
    int* dirty;
    VPState* st;
    vid_t* parent;
    unsigned* round;
    unsigned n, N, S, r;
    vid_t source;
};

// Steps 1 to 3 for shard i; true in every thread when some vertex of the
// shard changed (its changed[] flag is set). At iteration 0 the vertices
// that start with a value (the source; every vertex for CC) count as
// changed, so that step 4 sends their values out.
template <class P>
__device__ __forceinline__ bool shard_compute(const ShardArgs<P>& a, unsigned i, unsigned iteration,
                                              typename P::Value* local, unsigned char* changed)
{
    typedef typename P::Value V;
    const unsigned N = a.N, n = a.n;
    const ReadOnly<unsigned> start = a.start;
    const ReadOnly<unsigned short> dest = a.dest;
    const V* src_value = a.src_value;
    V* values = a.values;
    __shared__ int any;
    const unsigned offset = i * N, nv = min(N, n - offset);
    if (threadIdx.x == 0) any = 0;
    for (unsigned k = threadIdx.x; k < nv; k += blockDim.x) local[k] = values[offset + k];
    __syncthreads();
    EdgeArray<typename P::Weight> w{a.weights};
    const unsigned end = start[i + 1];
    for (unsigned e = start[i] + threadIdx.x; e < end; e += blockDim.x) {
        V m = P::compute(src_value[e], w(e));
        unsigned d = dest[e];
        if (P::better(m, local[d])) P::atomic_improve(&local[d], m);
    }
    __syncthreads();
    bool mine = false;
    for (unsigned k = threadIdx.x; k < nv; k += blockDim.x) {
        V old = values[offset + k], now = local[k];
        bool improved = P::better(now, old);
        bool c = improved || (iteration == 0 && P::better(old, P::none()));
        if (improved) values[offset + k] = now;
        changed[k] = c;
        mine |= c;
    }
    if (mine) any = 1;
    __syncthreads();
    return any != 0;
}

// Step 4, G-Shards: warp by warp over the shards j, window W_ij.
template <class P>
__device__ __forceinline__ void gs_write_back(const ShardArgs<P>& a, unsigned i, unsigned offset,
                                              const typename P::Value* local, const unsigned char* changed, int next)
{
    const unsigned S = a.S;
    const ReadOnly<unsigned> windows = a.windows;
    const ReadOnly<unsigned> src_index = a.src_index;
    typename P::Value* src_value = a.src_value;
    int* dirty = a.dirty;
    const unsigned lane = threadIdx.x & 31u, warps = blockDim.x >> 5;
    for (unsigned j = threadIdx.x >> 5; j < S; j += warps) {
        const ReadOnly<unsigned> wj = windows + (long long)j * (S + 1);
        const unsigned lo = wj[i], hi = wj[i + 1];
        bool wrote = false;
        for (unsigned p = lo + lane; p < hi; p += 32) {
            unsigned k = src_index[p] - offset;
            if (changed[k]) {
                src_value[p] = local[k];
                wrote = true;
            }
        }
        if (__any_sync(GPIPE_FULL_MASK, wrote) && lane == 0) dirty[j] = next;
    }
}

// Step 4, Concatenated Windows: thread by thread over CW_i, through the
// Mapper; the shards written into are marked once per warp.
template <class P>
__device__ __forceinline__ void cw_write_back(const ShardArgs<P>& a, unsigned i, const typename P::Value* local,
                                              const unsigned char* changed, int next)
{
    const unsigned S = a.S;
    const ReadOnly<unsigned> start = a.start;
    const ReadOnly<unsigned> cw_start = a.cw_start;
    const ReadOnly<unsigned short> cw_src = a.cw_src;
    const ReadOnly<unsigned> mapper = a.mapper;
    typename P::Value* src_value = a.src_value;
    int* dirty = a.dirty;
    const unsigned lane = threadIdx.x & 31u, hi = cw_start[i + 1];
    for (unsigned base = cw_start[i] + (threadIdx.x & ~31u); base < hi; base += blockDim.x) {
        const unsigned k = base + lane;
        unsigned j = 0xffffffffu;
        if (k < hi) {
            unsigned s = cw_src[k];
            if (changed[s]) {
                unsigned p = mapper[k];
                src_value[p] = local[s];
                j = shard_of(start, S, p);
            }
        }
        unsigned peers = __match_any_sync(GPIPE_FULL_MASK, j);
        if (j != 0xffffffffu && lane == (unsigned)(__ffs(peers) - 1)) dirty[j] = next;
    }
}

// Whether shard i has work at iteration t, read once for the whole block.
__device__ __forceinline__ bool shard_dirty(const int* dirty, unsigned i, unsigned t) {
    __shared__ bool run;
    if (threadIdx.x == 0) run = *(volatile const int*)&dirty[i] >= (int)t;
    __syncthreads();
    return run;
}

// The end of an iteration of a monotone program (shards or vwc): the last
// block decides whether the run is done and moves the near-far threshold.
__device__ __forceinline__ void vp_advance(VPState* st, unsigned t) {
    volatile VPState* s = st;
    if (s->active == 0) {
        if (s->far_min == GPIPE_INF_BITS) {
            s->done = 1;
        } else {
            // At least one step past the nearest pending vertex, however
            // small delta is next to it.
            double far = __longlong_as_double((long long)s->far_min);
            double next = far + s->delta;
            s->threshold = next > far ? next : nextafter(far, __longlong_as_double((long long)GPIPE_INF_BITS));
        }
    } else {
        s->worked = s->worked + 1;
    }
    s->active = 0;
    s->far_min = GPIPE_INF_BITS;
    s->blocks_done = 0;
    s->counter = 0;
    s->outliers[(t + 1) & 1u] = 0;
    __threadfence();
    s->iteration = t + 1;
}

// One iteration of a monotone program over the shards, one block a shard,
// N values and N flags of dynamic shared memory. WriteBack is the layout's
// step 4, called as wb(i, offset, local, changed, next).
template <class P, class WriteBack>
__device__ __forceinline__ void shards_iterate(const ShardArgs<P>& a, WriteBack wb)
{
    typedef typename P::Value V;
    VPState* st = a.st;
    const int* dirty = a.dirty;
    const unsigned N = a.N, S = a.S;
    if (*(volatile unsigned*)&st->done) return;
    const unsigned t = st->iteration;
    extern __shared__ __align__(8) unsigned char smem[];
    V* local = (V*)smem;
    unsigned char* changed = smem + (size_t)N * sizeof(V);
    bool any = false;
    for (unsigned i = blockIdx.x; i < S; i += gridDim.x) {
        if (shard_dirty(dirty, i, t)) {
            if (shard_compute<P>(a, i, t, local, changed)) {
                any = true;
                wb(i, i * N, local, changed, (int)t + 1);
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && any) atomicAdd(&st->active, 1u);
    if (last_block(&st->blocks_done) && threadIdx.x == 0) vp_advance(st, t);
}

// ---- shortest-path trees from final distances ----

// Checks edge src→dst of weight w for dst's parent. Pass 0 takes a tight
// edge from a strictly closer source (parents closer to the source cannot
// close a cycle); pass r > 0 takes a tight edge from a source whose parent
// was set in an earlier pass (for ties: zero weights, or weights absorbed
// by rounding). A vertex's final distance was set by a relaxation along
// some edge, and the argument in operators/gpu_sssp.go shows every reached
// vertex gets a parent in some pass.
template <class P>
__device__ __forceinline__ void parent_check(
    vid_t src, vid_t dst, typename P::Weight w, const typename P::Value* __restrict__ values,
    vid_t* parent, unsigned* round, unsigned r, vid_t source)
{
    typedef typename P::Value V;
    if (dst == source) return;
    V du = values[src];
    if (du == P::none()) return;
    V dv = values[dst];
    if (P::compute(du, w) != dv) return;
    if (r == 0) {
        if (P::better(du, dv)) {
            parent[dst] = src;
            round[dst] = 0;
        }
    } else if (round[dst] == 0xffffffffu && round[src] < r) {
        parent[dst] = src;
        round[dst] = r;
    }
}

// ---- PageRank over shards (synchronous) ----

// Steps 1 to 3 of PageRank: every shard's sums of its entries' SrcValue
// (the sources' contributions of the last iteration) into shared memory,
// then the ranks. Dynamic shared memory: N doubles.
// ShardRankArgs are gs_pr_compute's and cw_pr_compute's arguments, one
// struct (operators/gpuop/pagerank.go's shardRankArgs mirrors it).
template <typename C>
struct ShardRankArgs {
    ReadOnly<unsigned> start;
    ReadOnly<unsigned short> dest;
    ReadOnly<C> src_value;  // written back by a second launch
    ReadOnly<double> inv_degree;
    ReadOnly<double> rank;  // not next_rank: the host swaps the two
    double* next_rank;
    C* next_contrib;
    const double* dangling;
    double* next_dangling;
    double* l1;
    double damping;
    unsigned n, N, S;
};

template <typename C>
__device__ __forceinline__ void shards_pagerank(const ShardRankArgs<C>& a)
{
    const ReadOnly<unsigned> start = a.start;
    const ReadOnly<unsigned short> dest = a.dest;
    const ReadOnly<C> src_value = a.src_value;
    const ReadOnly<double> inv_degree = a.inv_degree;
    const ReadOnly<double> rank = a.rank;
    double* __restrict__ next_rank = a.next_rank;
    C* __restrict__ next_contrib = a.next_contrib;
    const unsigned n = a.n, N = a.N, S = a.S;
    const double damping = a.damping;
    const double* dangling = a.dangling;
    double* next_dangling = a.next_dangling;
    double* l1 = a.l1;
    extern __shared__ __align__(8) unsigned char smem[];
    double* sum = (double*)smem;
    __shared__ double scratch[32];
    RankUpdate update(damping, dangling, n);
    const unsigned lane = threadIdx.x & 31u;
    for (unsigned i = blockIdx.x; i < S; i += gridDim.x) {
        const unsigned offset = i * N, nv = min(N, n - offset);
        for (unsigned k = threadIdx.x; k < nv; k += blockDim.x) sum[k] = 0;
        __syncthreads();
        const unsigned hi = start[i + 1];
        for (unsigned base = start[i] + (threadIdx.x & ~31u); base < hi; base += blockDim.x) {
            const unsigned e = base + lane;
            const bool valid = e < hi;
            warp_add(sum, valid ? dest[e] : 0u, valid ? (double)src_value[e] : 0.0, valid);
        }
        __syncthreads();
        for (unsigned k = threadIdx.x; k < nv; k += blockDim.x)
            update.apply(offset + k, offset + k, sum[k], rank, inv_degree, next_rank, next_contrib);
        __syncthreads();
    }
    update.flush(scratch, l1, next_dangling);
}

// Loads shard i's contributions into shared memory for the write-back.
template <typename C>
__device__ __forceinline__ C* shard_contrib(const C* __restrict__ contrib, unsigned offset, unsigned nv) {
    extern __shared__ __align__(8) unsigned char smem[];
    C* local = (C*)smem;
    for (unsigned k = threadIdx.x; k < nv; k += blockDim.x) local[k] = contrib[offset + k];
    __syncthreads();
    return local;
}
