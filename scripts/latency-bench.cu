// The latency of one dependent access of each kind a persistent search's
// level waits on (kernels/persist.cu): one thread a block chases a random
// cycle through an L2-resident array (4 MiB of 32-bit next indices, 8 MiB
// of 64-bit labels), each step's address the last step's result. Prints
// ns an access (CUDA events) and cycles (clock64, block 0), for 1 block
// and for 132 at once. On the H200 (2026-11-29): ld.cg and ld.nc 153 ns
// (300 cycles), a 64-bit atomicMin 275 ns (542), a 32-bit atomicAdd 209,
// a row load then a claim 435 ns; the same with 132 blocks.
// Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/latency-bench scripts/latency-bench.cu && /tmp/latency-bench
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

__global__ void chase(unsigned* next, unsigned long long* label, unsigned n, unsigned steps, int kind,
                      unsigned long long* cycles, unsigned* sink)
{
    if (threadIdx.x != 0) return;
    unsigned i = blockIdx.x * 7919u % n;
    const long long t0 = clock64();
    for (unsigned s = 0; s < steps; s++) {
        switch (kind) {
        case 0: i = __ldcg(&next[i]); break;                                   // L2 load
        case 1: i = __ldg(&next[i]); break;                                    // read-only load
        case 2: i = (unsigned)atomicMin(&label[i], ~0ull) % n; break;          // a claim
        case 3: i = atomicAdd(&next[i], 0u); break;                            // a 32-bit atomic
        case 4: i = __ldg(&next[i]); i = (unsigned)atomicMin(&label[i], ~0ull) % n; break;  // a row, then a claim
        }
    }
    cycles[blockIdx.x] = clock64() - t0;
    sink[blockIdx.x] = i;
}

int main()
{
    const unsigned n = 1u << 20, steps = 20000;
    std::vector<unsigned> perm(n), next(n);
    for (unsigned k = 0; k < n; k++) perm[k] = k;
    unsigned long long x = 88172645463325252ull;  // xorshift: a random cycle through every index
    for (unsigned k = n - 1; k > 0; k--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const unsigned j = (unsigned)(x % (k + 1)), t = perm[k];
        perm[k] = perm[j], perm[j] = t;
    }
    for (unsigned k = 0; k < n; k++) next[perm[k]] = perm[(k + 1) % n];
    std::vector<unsigned long long> label(next.begin(), next.end());
    unsigned *d_next, *sink;
    unsigned long long *d_label, *cycles;
    cudaMalloc(&d_next, 4ull * n);
    cudaMalloc(&d_label, 8ull * n);
    cudaMalloc(&cycles, 8 * 1024);
    cudaMalloc(&sink, 4 * 1024);
    cudaMemcpy(d_next, next.data(), 4ull * n, cudaMemcpyHostToDevice);
    cudaMemcpy(d_label, label.data(), 8ull * n, cudaMemcpyHostToDevice);
    const char* names[] = {"ld.cg", "ld.nc", "atomicMin64", "atomicAdd32", "ld.nc+atomicMin64"};
    for (int blocks : {1, 132}) {
        for (int kind = 0; kind < 5; kind++) {
            float ms = 0;
            for (int rep = 0; rep < 2; rep++) {  // the first warms L2
                cudaEvent_t a, b;
                cudaEventCreate(&a);
                cudaEventCreate(&b);
                cudaEventRecord(a);
                chase<<<blocks, 32>>>(d_next, d_label, n, steps, kind, cycles, sink);
                cudaEventRecord(b);
                cudaEventSynchronize(b);
                cudaEventElapsedTime(&ms, a, b);
            }
            unsigned long long c = 0;
            cudaMemcpy(&c, cycles, 8, cudaMemcpyDeviceToHost);
            std::printf("blocks %3d %-18s %7.1f ns/access, %5.0f cycles (block 0)\n", blocks, names[kind],
                        ms * 1e6 / steps, (double)c / steps);
        }
    }
    const cudaError_t err = cudaGetLastError();
    std::printf("%s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
}
