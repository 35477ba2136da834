// Vertex programs (CuSha §4, Table 3): an algorithm written once as a struct
// of device functions and instantiated into each layout's template kernel
// (G-Shards and Concatenated Windows in shards.cuh, the virtual warp-centric
// CSR push in vp_vwc.cu). The same interface is the one Warp Segmentation
// and KiTES use (khorasani-dissertation §2.1, §3.4): the layouts decide
// which edges a thread sees, the program what happens on each.
//
// A monotone program (SSSP, SSWP, CC) has
//   Value                     the vertex value; none() is "no value yet"
//                             (unreached), whose all-equal bytes let a
//                             memset fill it
//   Weight                    the stored edge value (Unit: none stored)
//   compute(src, w)           the message an edge carries from a source
//                             value (none() for none)
//   better(a, b)              a improves on b (a strict order)
//   atomic_improve(at, m)     *at = the better of *at and m, atomically,
//                             returning the old value (CuSha's atomic
//                             compute; in shared or global memory)
//   priority(v, top)          v's place in the near-far order (>= 0); only
//                             where has_priority
// CuSha's init_compute is "local = old" for every monotone program, and its
// update_condition is better(local, old); both live in the layouts.
//
// PageRank is the sum program (CuSha's PR row, with networkx's dangling
// rule): its compute is the source's contribution, its combine a sum, and
// its update RankUpdate below.
#pragma once

#include "common.cuh"

#define GPIPE_FULL_MASK 0xffffffffu

// Unit is the edge value of unweighted programs: nothing is stored.
struct Unit {};

// EdgeArray reads edge values; for Unit it reads nothing (the array may be
// null). Through the read-only path: no kernel writes the weights it reads.
template <typename W>
struct EdgeArray {
    ReadOnly<W> p;
    __device__ __forceinline__ W operator()(long long e) const { return p[e]; }
};
template <>
struct EdgeArray<Unit> {
    ReadOnly<Unit> p;
    __device__ __forceinline__ Unit operator()(long long) const { return Unit(); }
};

// Order keys of floats: unsigned integers whose order is the floats' order
// (-Inf < ... < -0 < +0 < ... < +Inf), so that max and min on widths are
// integer atomics. Key 0 is below every number's key (it is the key of a
// NaN that never occurs) and means "none".
__device__ __forceinline__ unsigned key32_of(float f) {
    unsigned b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float float_of_key32(unsigned k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
__device__ __forceinline__ double double_of_key64(unsigned long long k) {
    return __longlong_as_double((long long)((k & 0x8000000000000000ull) ? (k & 0x7fffffffffffffffull) : ~k));
}
#define GPIPE_KEY32_ONE 0xbf800000u             // key32_of(1.0f)
#define GPIPE_KEY64_ONE 0xbff0000000000000ull   // the key of 1.0

// The state of a run that the host reads between batches of launches and
// the kernels advance themselves (the last block of each launch), so that
// the host can queue several iterations without waiting for each. Its layout
// is mirrored by operators/gpu_vp.go (vpState).
struct VPState {
    double threshold;             // near-far: vertices of priority below it are expanded
    unsigned long long far_min;   // the smallest priority (double bits) left beyond it
    double delta;                 // the threshold's step
    double top;                   // SSWP: the largest weight (priority = top - width)
    unsigned active;              // vertices expanded (vwc) or changed (shards) this iteration
    unsigned done;                // set when nothing is left to do
    unsigned iteration;           // launches so far (the parity of the flag arrays)
    unsigned worked;              // iterations that did something
    unsigned blocks_done;         // the last-block ticket
    unsigned counter;             // dynamic scheduling: the next group
    unsigned outliers[2];         // deferred segments queued, by parity
    unsigned long long examined;  // edges pulled, over the run (warpseg, kites)
    unsigned long long walked;    // edges walked to activate, over the run (kites)
    unsigned rounds[2];           // kites: rounds queued, by parity
};

#define GPIPE_INF_BITS 0x7ff0000000000000ull    // +Inf as double bits

// ---- SSSP: distances as uint32 (integer weights) or as double bits ----

__device__ __forceinline__ unsigned sssp_weight(Unit) { return 1u; }
__device__ __forceinline__ unsigned sssp_weight(unsigned w) { return w; }

// SSSP32 is shortest paths over integer weights (W = unsigned) or weight 1
// (W = Unit); the host checks that no distance can reach 2^32 - 1.
template <typename W>
struct SSSP32 {
    typedef unsigned Value;
    typedef W Weight;
    static constexpr bool has_priority = true;
    __device__ __forceinline__ static Value none() { return 0xffffffffu; }
    __device__ __forceinline__ static Value compute(Value s, W w) { return s == none() ? none() : s + sssp_weight(w); }
    __device__ __forceinline__ static bool better(Value a, Value b) { return a < b; }
    __device__ __forceinline__ static Value atomic_improve(Value* at, Value m) { return atomicMin(at, m); }
    __device__ __forceinline__ static double priority(Value v, double) { return (double)v; }
};

// SSSP64 is shortest paths over any non-negative weights: distances are the
// bits of non-negative doubles, ordered as the doubles are, and none() (all
// ones, a NaN) is above all of them.
struct SSSP64 {
    typedef unsigned long long Value;
    typedef double Weight;
    static constexpr bool has_priority = true;
    __device__ __forceinline__ static Value none() { return ~0ull; }
    __device__ __forceinline__ static Value compute(Value s, double w) {
        return s == none() ? none() : (Value)__double_as_longlong(__longlong_as_double((long long)s) + w);
    }
    __device__ __forceinline__ static bool better(Value a, Value b) { return a < b; }
    __device__ __forceinline__ static Value atomic_improve(Value* at, Value m) { return atomicMin(at, m); }
    __device__ __forceinline__ static double priority(Value v, double) { return __longlong_as_double((long long)v); }
};

// ---- SSWP: widths as order keys of float32 (every weight exact in float32) or float64 ----

__device__ __forceinline__ unsigned sswp_key(Unit) { return GPIPE_KEY32_ONE; }
__device__ __forceinline__ unsigned sswp_key(unsigned k) { return k; }

template <typename W>
struct SSWP32 {
    typedef unsigned Value;
    typedef W Weight;
    static constexpr bool has_priority = true;
    __device__ __forceinline__ static Value none() { return 0u; }
    __device__ __forceinline__ static Value compute(Value s, W w) { return s == none() ? none() : min(s, sswp_key(w)); }
    __device__ __forceinline__ static bool better(Value a, Value b) { return a > b; }
    __device__ __forceinline__ static Value atomic_improve(Value* at, Value m) { return atomicMax(at, m); }
    __device__ __forceinline__ static double priority(Value v, double top) {
        return fmax(0.0, top - (double)float_of_key32(v));
    }
};

struct SSWP64 {
    typedef unsigned long long Value;
    typedef unsigned long long Weight;
    static constexpr bool has_priority = true;
    __device__ __forceinline__ static Value none() { return 0ull; }
    __device__ __forceinline__ static Value compute(Value s, Weight w) { return s == none() ? none() : min(s, w); }
    __device__ __forceinline__ static bool better(Value a, Value b) { return a > b; }
    __device__ __forceinline__ static Value atomic_improve(Value* at, Value m) { return atomicMax(at, m); }
    __device__ __forceinline__ static double priority(Value v, double top) { return fmax(0.0, top - double_of_key64(v)); }
};

// ---- CC: label propagation to the smallest vertex id ----

struct CCLabel {
    typedef unsigned Value;
    typedef Unit Weight;
    static constexpr bool has_priority = false;
    __device__ __forceinline__ static Value none() { return 0xffffffffu; }
    __device__ __forceinline__ static Value compute(Value s, Unit) { return s; }
    __device__ __forceinline__ static bool better(Value a, Value b) { return a < b; }
    __device__ __forceinline__ static Value atomic_improve(Value* at, Value m) { return atomicMin(at, m); }
    __device__ __forceinline__ static double priority(Value, double) { return 0.0; }
};

// ---- PageRank: the sum program ----

// PRPullArgs are a PageRank pull's arguments, one struct for every pull
// kernel: pr_pull_k* (pagerank_vwc.cu), pr_ws_* (vp_warpseg.cu) and
// mg_pr_ws_* (mgpu.cu); operators/gpuop/pagerank.go's PRPullArgs mirrors
// it field by field. in_weights is read by the weighted pulls (_w) alone,
// hub_id where the contributions are numbered hubs first; [lo, hi) are the
// vertices pulled (all on one GPU, a part's own on several); counter and
// chunk are the virtual warps' schedule (pr_pull_k* alone); stream reads
// the sources past the caches.
template <typename C>
struct PRPullArgs {
    ReadOnly<eid_t> in_offsets;
    ReadOnly<vid_t> in_sources;
    ReadOnly<double> in_weights;
    ReadOnly<vid_t> hub_id;
    ReadOnly<C> contrib;  // not next_contrib: the host swaps the two
    ReadOnly<double> inv_degree;
    ReadOnly<double> rank;  // not next_rank: swapped the same way
    double* next_rank;
    C* next_contrib;
    const double* dangling;
    double* next_dangling;
    double* l1;
    unsigned long long* counter;
    long long lo, hi, n;
    double damping;
    long long chunk, outlier_degree;
    int stream;
};

// PRFinishArgs are pr_outliers_finish's arguments (the outliers' sums in
// acc turned into ranks); pagerank.go's prFinishArgs mirrors it.
template <typename C>
struct PRFinishArgs {
    ReadOnly<vid_t> outliers;
    ReadOnly<vid_t> hub_id;
    double* acc;
    ReadOnly<double> inv_degree;
    ReadOnly<double> rank;
    double* next_rank;
    C* next_contrib;
    const double* dangling;
    double* next_dangling;
    double* l1;
    long long n;
    double damping;
    unsigned count;
};

// RankUpdate is PageRank's update condition (networkx's definition, as on
// the CPU): x = (1-d)/n + d·(dangling/n + Σ contributions); it records the
// L1 change and the next iteration's dangling rank, and writes the vertex's
// next contribution x/outdeg at cslot (its own id, or its id in a
// renumbered layout).
struct RankUpdate {
    double base, damping, change, dangle;

    __device__ __forceinline__ RankUpdate(double damping_, const double* dangling, long long n)
        : base((1.0 - damping_) / (double)n + damping_ * (*dangling) / (double)n),
          damping(damping_), change(0), dangle(0) {}

    // rank and inv_degree: const double* or ReadOnly<double>.
    template <typename C, class Rank, class InvDegree>
    __device__ __forceinline__ void apply(long long v, long long cslot, double sum, const Rank& rank,
                                          const InvDegree& inv_degree,
                                          double* __restrict__ next_rank, C* __restrict__ next_contrib) {
        double x = base + damping * sum;
        double inv = inv_degree[v];
        change += fabs(x - rank[v]);
        next_rank[v] = x;
        next_contrib[cslot] = (C)(x * inv);
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

// ---- block-wide helpers ----

// Minimum of x over the block, valid in thread 0; scratch holds a double
// per warp.
__device__ __forceinline__ double block_min(double x, double* scratch) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) x = fmin(x, __shfl_xor_sync(GPIPE_FULL_MASK, x, offset));
    unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31u;
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    if (warp == 0) {
        unsigned warps = (blockDim.x + 31) >> 5;
        x = lane < warps ? scratch[lane] : __longlong_as_double((long long)GPIPE_INF_BITS);
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) x = fmin(x, __shfl_xor_sync(GPIPE_FULL_MASK, x, offset));
    }
    __syncthreads();
    return x;
}

// Adds x into *at (double, in shared memory) for every lane of the warp,
// first summing the lanes that add to the same address when several do
// (a hub among a shard's destinations), since a shared-memory double add is
// a compare-and-swap loop on current GPUs and serializes on one address.
// Every lane of the warp must call it; valid says whether the lane adds.
__device__ __forceinline__ void warp_add(double* local, unsigned d, double x, bool valid) {
    unsigned key = valid ? d : 0xffffffffu;
    unsigned peers = __match_any_sync(GPIPE_FULL_MASK, key);
    bool crowd = valid && __popc(peers) > 2;
    if (__any_sync(GPIPE_FULL_MASK, crowd)) {
        unsigned lane = threadIdx.x & 31u;
        double sum = 0;
        for (int k = 0; k < 32; k++) {
            double y = __shfl_sync(GPIPE_FULL_MASK, x, k);
            if ((peers >> k) & 1u) sum += y;
        }
        if (valid && lane == (unsigned)(__ffs(peers) - 1)) atomicAdd(&local[d], sum);
    } else if (valid) {
        atomicAdd(&local[d], x);
    }
}
