// A result's output columns in Arrow's layout, made on the GPU beside the
// values (operators/gpu_columns.go): vertex ids mapped to the graph's keys,
// and validity bitmaps. On the host the mapping is a random read of the key
// array per row (Kronecker 22's BFS parents: 2.4 M reads, 19 ms of a Flight
// server's CPU a query); here it is a gather at memory speed.
//
// A bitmap is Arrow's: bit i%8 of byte i/8 is row i, least significant bit
// first, which on a little-endian host is bit i%32 of 32-bit word i/32. A
// warp makes a word with one ballot over 32 consecutive rows; rows past n
// read as null, so the last word's spare bits are zero.
#include "common.cuh"

// The rows of warp w: [32w, 32w+32). Every lane of a warp runs each trip of
// the loop (the ballot needs them all), rows past n included.
#define FOR_WARP_ROWS(n, row, word)                                                     \
    for (long long word = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5,       \
                   row = word * 32 + (threadIdx.x & 31);                                  \
         word * 32 < (n);                                                                 \
         word += ((long long)gridDim.x * blockDim.x) >> 5,                                \
                   row = word * 32 + (threadIdx.x & 31))

// col_keys writes out[i] = keys[ids[i]] (0 where ids[i] is no vertex) and
// the validity bitmap valid (a word per 32 rows). K is the key's width: an
// unsigned type of 4 or 8 bytes (signed keys are the same bits).
template <typename K>
__device__ void col_keys(const vid_t* __restrict__ ids, const K* __restrict__ keys, K* __restrict__ out,
                         unsigned* __restrict__ valid, long long n) {
    FOR_WARP_ROWS(n, row, word) {
        vid_t id = row < n ? ids[row] : GPIPE_NO_VERTEX;
        bool ok = id != GPIPE_NO_VERTEX;
        unsigned bits = __ballot_sync(0xffffffffu, ok);
        if (row < n)
            out[row] = ok ? keys[id] : K(0);
        if ((threadIdx.x & 31) == 0)
            valid[word] = bits;
    }
}

extern "C" __global__ void col_keys32(const vid_t* ids, const unsigned* keys, unsigned* out, unsigned* valid,
                                      long long n) {
    col_keys<unsigned>(ids, keys, out, valid, n);
}

extern "C" __global__ void col_keys64(const vid_t* ids, const unsigned long long* keys, unsigned long long* out,
                                      unsigned* valid, long long n) {
    col_keys<unsigned long long>(ids, keys, out, valid, n);
}

// col_valid_nonneg writes the validity bitmap of an int32 column whose
// negative values are null (a BFS's unreached depths).
extern "C" __global__ void col_valid_nonneg(const int* __restrict__ values, unsigned* __restrict__ valid,
                                            long long n) {
    FOR_WARP_ROWS(n, row, word) {
        bool ok = row < n && values[row] >= 0;
        unsigned bits = __ballot_sync(0xffffffffu, ok);
        if ((threadIdx.x & 31) == 0)
            valid[word] = bits;
    }
}
