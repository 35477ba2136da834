// The graph built on the GPU (operators/gpu_build.go): the edge columns'
// keys renumbered to dense ids in ascending key order, as convert/ does on
// the host (a presence bitmap ranked by popcounts where the keys' range is
// small, else the distinct keys sorted and each key's id found by binary
// search), each edge made a 64-bit entry (source << bits | target, both
// directions for an undirected graph, self loops as a sentinel that sorts
// last), the entries sorted by an LSD radix sort, parallel edges merged
// keeping the minimum weight, and the offsets found by binary search. The
// in-edge layout is the same sort of the entries with their ends swapped.
//
// Every loop over edges indexes with 64 bits; the radix sort's and the
// scans' counts are 32-bit, so a build has fewer than 2^32 entries (the
// host checks).
#include "common.cuh"

typedef unsigned long long u64;

#define FULL_MASK 0xffffffffu
#define THREADS 256

// A grid-stride loop over [0, n) with a 64-bit index.
#define GRID_STRIDE(i, n) \
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (u64)(n); i += (u64)gridDim.x * blockDim.x)

// ord maps a key to a uint64 of the same order, as convert.ord does: the
// sign bit of a signed key (sign-extended) is flipped.
__device__ __forceinline__ u64 ord(int v) { return (u64)(long long)v ^ (1ull << 63); }
__device__ __forceinline__ u64 ord(long long v) { return (u64)v ^ (1ull << 63); }
__device__ __forceinline__ u64 ord(unsigned v) { return (u64)v; }
__device__ __forceinline__ u64 ord(u64 v) { return v; }

__device__ __forceinline__ u64 umin64(u64 a, u64 b) { return a < b ? a : b; }
__device__ __forceinline__ u64 umax64(u64 a, u64 b) { return a > b ? a : b; }

__device__ __forceinline__ u64 warp_min(u64 x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = umin64(x, __shfl_xor_sync(FULL_MASK, x, o));
    return x;
}

__device__ __forceinline__ u64 warp_max(u64 x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = umax64(x, __shfl_xor_sync(FULL_MASK, x, o));
    return x;
}

__device__ __forceinline__ u64 warp_sum(u64 x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(FULL_MASK, x, o);
    return x;
}

// ---------------------------------------------------------------------------
// The keys' range and the weights' check.

// The smallest and largest key ordinal of both columns, into lohi[0]
// (atomicMin; the host sets it to all ones) and lohi[1] (atomicMax; zero).
template <typename T>
__device__ __forceinline__ void key_range(const T* __restrict__ src, const T* __restrict__ dst, u64 m, u64* lohi)
{
    u64 lo = ~0ull, hi = 0;
    GRID_STRIDE(i, m) {
        u64 a = ord(src[i]), b = ord(dst[i]);
        lo = umin64(lo, umin64(a, b));
        hi = umax64(hi, umax64(a, b));
    }
    lo = warp_min(lo);
    hi = warp_max(hi);
    if ((threadIdx.x & 31) == 0) {
        if (lo != ~0ull) atomicMin(&lohi[0], lo);
        if (hi != 0) atomicMax(&lohi[1], hi);
    }
}

// The first row whose weight the rule refuses (not finite; negative where
// nonneg is set), into *first (atomicMin; the host sets it to all ones).
extern "C" __global__ void __launch_bounds__(THREADS) gb_bad_weight(const double* __restrict__ w, u64 m, int nonneg, u64* first)
{
    u64 best = ~0ull;
    GRID_STRIDE(i, m) {
        double x = w[i];
        if (i < best && (!isfinite(x) || (nonneg && x < 0.0))) best = i;
    }
    best = warp_min(best);
    if ((threadIdx.x & 31) == 0 && best != ~0ull) atomicMin(first, best);
}

// ---------------------------------------------------------------------------
// Renumbering through a presence bitmap (convert.renumberDirect): words of
// 64 keys from lo; a key's id is its word's rank (the keys before it) plus
// the keys below it in the word.

template <typename T>
__device__ __forceinline__ void mark_keys(const T* __restrict__ src, const T* __restrict__ dst, u64 m, u64 lo, u64* words)
{
    GRID_STRIDE(i, m) {
        u64 a = ord(src[i]) - lo, b = ord(dst[i]) - lo;
        u64 ba = 1ull << (a & 63), bb = 1ull << (b & 63);
        if (!(words[a >> 6] & ba)) atomicOr(&words[a >> 6], ba);
        if (!(words[b >> 6] & bb)) atomicOr(&words[b >> 6], bb);
    }
}

// counts[w] = the keys in word w, for the scan that makes them ranks.
extern "C" __global__ void __launch_bounds__(THREADS) gb_popc(const u64* __restrict__ words, u64 nw, unsigned* counts)
{
    GRID_STRIDE(w, nw) counts[w] = (unsigned)__popcll(words[w]);
}

// keys[id] = the ordinal (less lo) of vertex id, from the ranked bitmap.
extern "C" __global__ void __launch_bounds__(THREADS) gb_bits_to_keys(const u64* __restrict__ words, const unsigned* __restrict__ rank,
                                                                      u64 nw, u64* keys)
{
    GRID_STRIDE(w, nw) {
        u64 x = words[w];
        unsigned r = rank[w];
        for (; x != 0; x &= x - 1) keys[r++] = w * 64 + (u64)(__ffsll((long long)x) - 1);
    }
}

// Words and Rank: plain pointers or ReadOnly arrays.
template <class Words, class Rank>
__device__ __forceinline__ unsigned bitmap_id(u64 o, const Words& words, const Rank& rank)
{
    return rank[o >> 6] + (unsigned)__popcll(words[o >> 6] & ((1ull << (o & 63)) - 1));
}

// ---------------------------------------------------------------------------
// Renumbering by sorting (convert.renumberHashed's order): every endpoint's
// ordinal (less lo) is sorted, the distinct ones kept, and a key's id is its
// position among them.

template <typename T>
__device__ __forceinline__ void endpoints(const T* __restrict__ src, const T* __restrict__ dst, u64 m, u64 lo, u64* out)
{
    GRID_STRIDE(i, m) {
        out[i] = ord(src[i]) - lo;
        out[m + i] = ord(dst[i]) - lo;
    }
}

// Distinct: a plain pointer or a ReadOnly array.
template <class Distinct>
__device__ __forceinline__ unsigned sorted_id(u64 o, const Distinct& distinct, u64 n)
{
    u64 lo = 0, hi = n;
    while (lo < hi) {
        u64 mid = (lo + hi) >> 1;
        if (distinct[mid] < o)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (unsigned)lo;
}

// flags[i] = 1 where keys[i] starts a run of equal keys, for i < count;
// flags[count] = 0, so that the exclusive scan of count+1 flags ends with
// the number of runs.
extern "C" __global__ void __launch_bounds__(THREADS) gb_heads(const u64* __restrict__ keys, u64 count, unsigned* flags)
{
    GRID_STRIDE(i, count) flags[i] = (i == 0 || keys[i] != keys[i - 1]) ? 1u : 0u;
    if (blockIdx.x == 0 && threadIdx.x == 0) flags[count] = 0;
}

// out[pos[i]] = keys[i] for every run start i (pos: the scanned flags).
extern "C" __global__ void __launch_bounds__(THREADS) gb_compact(const u64* __restrict__ keys, const unsigned* __restrict__ pos,
                                                                 u64 count, u64* out)
{
    GRID_STRIDE(i, count) if (pos[i + 1] != pos[i]) out[pos[i]] = keys[i];
}

// ---------------------------------------------------------------------------
// Every edge as entries: (u << bits | v), and (v << bits | u) at m + i for
// an undirected graph, with its weight alongside; a self loop as the
// sentinel, the largest value of 2·bits bits (a self loop of vertex
// 2^bits − 1, which no stored entry is), counted into *self.

//
// EntriesArgs are gb_entries_*'s arguments, one struct (operators/gpuop/
// build_keys.go's entriesArgs mirrors it field by field): table is the
// bitmap's words (with rank) or the n sorted distinct keys.
template <typename T>
struct EntriesArgs {
    ReadOnly<T> src;
    ReadOnly<T> dst;
    ReadOnly<double> w;
    ReadOnly<u64> table;
    ReadOnly<unsigned> rank;
    u64* keys;
    double* vals;
    u64* self;
    u64 m, lo, n;
    unsigned bits;
    int undirected;
};

template <typename T, bool BITMAP>
__device__ __forceinline__ void make_entries(const EntriesArgs<T>& a)
{
    const ReadOnly<T> src = a.src;
    const ReadOnly<T> dst = a.dst;
    const ReadOnly<double> w = a.w;
    const ReadOnly<u64> table = a.table;
    const ReadOnly<unsigned> rank = a.rank;
    const u64 m = a.m, lo = a.lo, n = a.n;
    const unsigned bits = a.bits;
    const int undirected = a.undirected;
    u64* keys = a.keys;
    double* vals = a.vals;
    u64* self = a.self;
    const u64 sentinel = bits >= 32 ? ~0ull : (1ull << (2 * bits)) - 1;
    u64 loops = 0;
    GRID_STRIDE(i, m) {
        u64 a = ord(src[i]) - lo, b = ord(dst[i]) - lo;
        unsigned u = BITMAP ? bitmap_id(a, table, rank) : sorted_id(a, table, n);
        unsigned v = BITMAP ? bitmap_id(b, table, rank) : sorted_id(b, table, n);
        u64 forward = sentinel, backward = sentinel;
        if (u == v) {
            loops++;
        } else {
            forward = ((u64)u << bits) | v;
            backward = ((u64)v << bits) | u;
        }
        keys[i] = forward;
        if (vals) vals[i] = w[i];
        if (undirected) {
            keys[m + i] = backward;
            if (vals) vals[m + i] = w[i];
        }
    }
    loops = warp_sum(loops);
    if ((threadIdx.x & 31) == 0 && loops != 0) atomicAdd(self, loops);
}

// The entry points of the templates, one per key type (int32, int64,
// uint32, uint64: the suffixes i32, i64, u32, u64).
#define KEY_KERNELS(SUFFIX, T)                                                                                              \
    extern "C" __global__ void __launch_bounds__(THREADS) gb_range_##SUFFIX(const T* src, const T* dst, u64 m, u64* lohi)     \
    {                                                                                                                       \
        key_range<T>(src, dst, m, lohi);                                                                                    \
    }                                                                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) gb_mark_##SUFFIX(const T* src, const T* dst, u64 m, u64 lo,        \
                                                                           u64* words)                                      \
    {                                                                                                                       \
        mark_keys<T>(src, dst, m, lo, words);                                                                               \
    }                                                                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) gb_endpoints_##SUFFIX(const T* src, const T* dst, u64 m, u64 lo,   \
                                                                                u64* out)                                   \
    {                                                                                                                       \
        endpoints<T>(src, dst, m, lo, out);                                                                                 \
    }                                                                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) gb_entries_bitmap_##SUFFIX(EntriesArgs<T> a)                       \
    {                                                                                                                       \
        make_entries<T, true>(a);                                                                                           \
    }                                                                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS) gb_entries_sorted_##SUFFIX(EntriesArgs<T> a)                       \
    {                                                                                                                       \
        make_entries<T, false>(a);                                                                                          \
    }

KEY_KERNELS(i32, int)
KEY_KERNELS(i64, long long)
KEY_KERNELS(u32, unsigned)
KEY_KERNELS(u64, u64)

// ---------------------------------------------------------------------------
// LSD radix sort of 64-bit keys (with 64-bit values, or none), 8 bits a
// pass. A tile of RS_TILE keys is one block's: rs_hist counts its digits
// into counts[digit · tiles + tile], the host scans that array (digit-major,
// so the scan gives every tile's start within every digit's run), and
// rs_scatter moves the tile's keys there, stably: each warp takes a
// contiguous sub-tile in rounds of 32 and ranks each key among the equal
// digits before it with __match_any_sync and a per-warp count per digit.

#define RS_ITEMS 16
#define RS_TILE (THREADS * RS_ITEMS)
#define RS_WARPS (THREADS / 32)

extern "C" __global__ void __launch_bounds__(THREADS) rs_hist(const u64* __restrict__ keys, u64 count, unsigned shift,
                                                              unsigned* counts, unsigned tiles)
{
    __shared__ unsigned hist[256];
    hist[threadIdx.x] = 0;
    __syncthreads();
    const unsigned lane = threadIdx.x & 31;
    const u64 base = (u64)blockIdx.x * RS_TILE;
#pragma unroll 4
    for (int r = 0; r < RS_ITEMS; r++) {
        u64 i = base + (u64)r * THREADS + threadIdx.x;
        bool ok = i < count;
        unsigned d = ok ? (unsigned)(keys[i] >> shift) & 255u : 256u + lane;
        unsigned peers = __match_any_sync(FULL_MASK, d);
        if (ok && lane == (unsigned)(__ffs(peers) - 1)) atomicAdd(&hist[d], (unsigned)__popc(peers));
    }
    __syncthreads();
    counts[(u64)threadIdx.x * tiles + blockIdx.x] = hist[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(THREADS) rs_scatter(const u64* __restrict__ kin, const u64* __restrict__ vin, u64 count,
                                                                 unsigned shift, const unsigned* __restrict__ starts,
                                                                 unsigned tiles, u64* __restrict__ kout, u64* __restrict__ vout)
{
    // wc[w][d]: warp w's keys of digit d, then where they start within the
    // tile's run of digit d.
    __shared__ unsigned wc[RS_WARPS][256];
    __shared__ unsigned start[256];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (unsigned j = threadIdx.x; j < RS_WARPS * 256; j += THREADS) (&wc[0][0])[j] = 0;
    start[threadIdx.x] = starts[(u64)threadIdx.x * tiles + blockIdx.x];
    __syncthreads();

    const u64 base = (u64)blockIdx.x * RS_TILE + (u64)warp * (32 * RS_ITEMS);
    const unsigned below = (1u << lane) - 1;
    u64 key[RS_ITEMS];
    unsigned rank[RS_ITEMS];
#pragma unroll
    for (int r = 0; r < RS_ITEMS; r++) {
        u64 i = base + (u64)r * 32 + lane;
        bool ok = i < count;
        key[r] = ok ? kin[i] : 0;
        unsigned d = ok ? (unsigned)(key[r] >> shift) & 255u : 256u + lane;
        unsigned peers = __match_any_sync(FULL_MASK, d);
        unsigned before = (unsigned)__popc(peers & below);
        unsigned c = ok ? wc[warp][d] : 0;
        __syncwarp();
        if (ok && before == 0) wc[warp][d] = c + (unsigned)__popc(peers);
        __syncwarp();
        rank[r] = c + before;
    }
    __syncthreads();
    {
        unsigned d = threadIdx.x, run = 0;
#pragma unroll
        for (int w = 0; w < RS_WARPS; w++) {
            unsigned x = wc[w][d];
            wc[w][d] = run;
            run += x;
        }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < RS_ITEMS; r++) {
        u64 i = base + (u64)r * 32 + lane;
        if (i < count) {
            unsigned d = (unsigned)(key[r] >> shift) & 255u;
            u64 p = (u64)start[d] + wc[warp][d] + rank[r];
            kout[p] = key[r];
            if (vin) vout[p] = vin[i];
        }
    }
}

// ---------------------------------------------------------------------------
// Exclusive prefix sums of unsigned counts, in place, in tiles of SCAN_TILE:
// scan_reduce sums each tile into partial[tile], the host scans partial
// (recursively), and scan_down scans each tile from its partial (null: a
// single tile).

#define SCAN_ITEMS 16
#define SCAN_TILE (THREADS * SCAN_ITEMS)

// Exclusive sum of x over the block; total gets the block's sum. Every
// thread must call it.
__device__ __forceinline__ unsigned block_exclusive(unsigned x, unsigned& total)
{
    __shared__ unsigned sums[THREADS / 32];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned v = x;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        unsigned y = __shfl_up_sync(FULL_MASK, v, d);
        if (lane >= (unsigned)d) v += y;
    }
    if (lane == 31) sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        unsigned s = lane < THREADS / 32 ? sums[lane] : 0;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            unsigned y = __shfl_up_sync(FULL_MASK, s, d);
            if (lane >= (unsigned)d) s += y;
        }
        if (lane < THREADS / 32) sums[lane] = s;
    }
    __syncthreads();
    unsigned before = warp == 0 ? 0 : sums[warp - 1];
    total = sums[THREADS / 32 - 1];
    __syncthreads();
    return before + v - x;
}

extern "C" __global__ void __launch_bounds__(THREADS) scan_reduce(const unsigned* __restrict__ in, u64 count, unsigned* partial)
{
    const u64 base = (u64)blockIdx.x * SCAN_TILE;
    unsigned s = 0;
#pragma unroll
    for (int r = 0; r < SCAN_ITEMS; r++) {
        u64 i = base + (u64)r * THREADS + threadIdx.x;
        if (i < count) s += in[i];
    }
    unsigned total;
    block_exclusive(s, total);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(THREADS) scan_down(unsigned* data, u64 count, const unsigned* __restrict__ partial)
{
    const u64 base = (u64)blockIdx.x * SCAN_TILE + (u64)threadIdx.x * SCAN_ITEMS;
    unsigned x[SCAN_ITEMS];
    unsigned s = 0;
#pragma unroll
    for (int r = 0; r < SCAN_ITEMS; r++) {
        u64 i = base + r;
        x[r] = i < count ? data[i] : 0;
        s += x[r];
    }
    unsigned total;
    unsigned run = block_exclusive(s, total) + (partial ? partial[blockIdx.x] : 0);
#pragma unroll
    for (int r = 0; r < SCAN_ITEMS; r++) {
        u64 i = base + r;
        if (i < count) data[i] = run;
        run += x[r];
    }
}

// ---------------------------------------------------------------------------
// The layouts from the sorted entries.

// At every run start i of the sorted entries keys[0, valid): the entry into
// merged[pos[i]] and its target (the low bits) into targets[pos[i]].
extern "C" __global__ void __launch_bounds__(THREADS) gb_merge(const u64* __restrict__ keys, const unsigned* __restrict__ pos, u64 valid,
                                                               u64 mask, u64* merged, unsigned* targets)
{
    GRID_STRIDE(i, valid) {
        unsigned p = pos[i];
        if (pos[i + 1] != p) {
            u64 k = keys[i];
            merged[p] = k;
            targets[p] = (unsigned)(k & mask);
        }
    }
}

// The minimum weight of every run of equal entries (convert.dedupeMin's:
// -0 before +0), as order keys: wkey (all ones to begin with) gets the
// atomicMin of each entry's weight's order key.
extern "C" __global__ void __launch_bounds__(THREADS) gb_merge_weights(const u64* __restrict__ vals, const unsigned* __restrict__ pos,
                                                                       u64 valid, u64* wkey)
{
    GRID_STRIDE(i, valid) {
        u64 b = vals[i];
        u64 k = (b >> 63) ? ~b : (b | (1ull << 63));
        atomicMin(&wkey[pos[i + 1] - 1], k);
    }
}

// Order keys back to doubles, in place.
extern "C" __global__ void __launch_bounds__(THREADS) gb_weights_from_keys(u64* w, u64 k)
{
    GRID_STRIDE(i, k) {
        u64 x = w[i];
        w[i] = (x >> 63) ? (x & ~(1ull << 63)) : ~x;
    }
}

// offsets[u] = the first of the sorted entries keys[0, k) whose source (the
// high bits) is u or more, for u in [0, n]: offsets[n] is k.
extern "C" __global__ void __launch_bounds__(THREADS) gb_offsets(const u64* __restrict__ keys, u64 k, unsigned bits, u64 n,
                                                                 long long* offsets)
{
    GRID_STRIDE(u, n + 1) {
        const u64 want = u << bits;
        u64 lo = 0, hi = k;
        while (lo < hi) {
            u64 mid = (lo + hi) >> 1;
            if (keys[mid] < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        offsets[u] = (long long)lo;
    }
}

// out[i] = keys[i] with its two ends swapped: the in-edge entries.
extern "C" __global__ void __launch_bounds__(THREADS) gb_swap_ends(const u64* __restrict__ keys, u64 k, unsigned bits, u64* out)
{
    const u64 mask = (1ull << bits) - 1;
    GRID_STRIDE(i, k) {
        u64 x = keys[i];
        out[i] = ((x & mask) << bits) | (x >> bits);
    }
}

// targets[i] = the low end of entry i.
extern "C" __global__ void __launch_bounds__(THREADS) gb_low_ends(const u64* __restrict__ keys, u64 k, u64 mask, unsigned* targets)
{
    GRID_STRIDE(i, k) targets[i] = (unsigned)(keys[i] & mask);
}

// ---------------------------------------------------------------------------
// Degree statistics (convert.DegreeStats), so that the host needs only the
// offsets: stats[0..63] count the vertices by the bit length of their
// out-degree less one, stats[64] is the largest out-degree, stats[65] the
// vertices with no edge in or out. A directed graph says which vertices
// have in-edges by its in-edge offsets, or by a bitmap of the targets
// (gb_mark_targets); for an undirected one both are null.

extern "C" __global__ void __launch_bounds__(THREADS) gb_mark_targets(const unsigned* __restrict__ targets, u64 k, unsigned* marks)
{
    GRID_STRIDE(i, k) {
        unsigned v = targets[i], b = 1u << (v & 31);
        if (!(marks[v >> 5] & b)) atomicOr(&marks[v >> 5], b);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) gb_degree_stats(const long long* __restrict__ offs, u64 n,
                                                                      const long long* __restrict__ in_offs,
                                                                      const unsigned* __restrict__ marks, u64* stats)
{
    __shared__ u64 hist[64];
    __shared__ u64 isolated;
    if (threadIdx.x < 64) hist[threadIdx.x] = 0;
    if (threadIdx.x == 0) isolated = 0;
    __syncthreads();
    u64 most = 0;
    GRID_STRIDE(v, n) {
        u64 d = (u64)(offs[v + 1] - offs[v]);
        if (d == 0) {
            bool in = false;
            if (in_offs)
                in = in_offs[v + 1] > in_offs[v];
            else if (marks)
                in = (marks[v >> 5] >> (v & 31)) & 1u;
            if (!in) atomicAdd(&isolated, 1ull);
            continue;
        }
        atomicAdd(&hist[63 - __clzll((long long)d)], 1ull);
        most = umax64(most, d);
    }
    most = warp_max(most);
    if ((threadIdx.x & 31) == 0 && most != 0) atomicMax(&stats[64], most);
    __syncthreads();
    if (threadIdx.x < 64 && hist[threadIdx.x] != 0) atomicAdd(&stats[threadIdx.x], hist[threadIdx.x]);
    if (threadIdx.x == 0 && isolated != 0) atomicAdd(&stats[65], isolated);
}
