// Small kernels every layout of the vertex-program engine shares: seeding a
// run's values and frontier, and the bookkeeping of the shortest-path-tree
// passes (shards.cuh's parent_check).
#include "vertex_program.cuh"

// Sets the source's value and marks what must run first: its group of 32
// vertices in the vwc frontier flags (flags may be null) and its shard in
// the shards' dirty marks (dirty may be null; N vertices a shard).
extern "C" __global__ void vp_seed32(unsigned* values, vid_t source, unsigned value, unsigned char* flags,
                                     int* dirty, unsigned N)
{
    values[source] = value;
    if (flags) flags[source >> 5] = 1;
    if (dirty) dirty[source / N] = 0;
}

extern "C" __global__ void vp_seed64(unsigned long long* values, vid_t source, unsigned long long value,
                                     unsigned char* flags, int* dirty, unsigned N)
{
    values[source] = value;
    if (flags) flags[source >> 5] = 1;
    if (dirty) dirty[source / N] = 0;
}

// values[v] = v: every vertex its own label (CC).
extern "C" __global__ void __launch_bounds__(256) vp_iota(unsigned* values, long long n)
{
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (long long)gridDim.x * blockDim.x)
        values[v] = (unsigned)v;
}

// The source is its own parent, set before every other vertex (pass 0).
extern "C" __global__ void vp_parent_init(vid_t* parent, unsigned* round, vid_t source)
{
    parent[source] = source;
    round[source] = 0;
}

// Counts the reached vertices whose parent is not set yet.
template <typename V>
__device__ __forceinline__ void unresolved(const V* __restrict__ values, V none, const unsigned* __restrict__ round,
                                           long long n, unsigned* count)
{
    __shared__ double scratch[32];
    unsigned c = 0;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (long long)gridDim.x * blockDim.x)
        if (values[v] != none && round[v] == 0xffffffffu) c++;
    double total = block_sum((double)c, scratch);
    if (threadIdx.x == 0 && total > 0) atomicAdd(count, (unsigned)total);
}

extern "C" __global__ void __launch_bounds__(256) vp_unresolved32(const unsigned* values, const unsigned* round,
                                                                  long long n, unsigned* count)
{
    unresolved<unsigned>(values, 0xffffffffu, round, n, count);
}

extern "C" __global__ void __launch_bounds__(256) vp_unresolved64(const unsigned long long* values,
                                                                  const unsigned* round, long long n, unsigned* count)
{
    unresolved<unsigned long long>(values, ~0ull, round, n, count);
}
