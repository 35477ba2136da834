// Does BFS-4K's dynamic parallelism (§5.3) pay off on this GPU? A parent
// thread per hub vertex launches a child grid over the hub's edges (child
// blocks of 256 threads, K3 = 16 edges a thread, as the paper sets it),
// against what gpipe's bfs4k does instead: the parent queues the hub's
// segments of 4,096 edges and one more launch from the host runs a block per
// segment (b4k_hubs). Both visit the same edges of the same status array.
// Standalone, not part of gpipe's build (device launches need -rdc and the
// device runtime, which a PTX-only binary cannot link):
//   nvcc -O3 -arch=sm_90 -rdc=true -o dp-launch-cost scripts/dp-launch-cost.cu -lcudadevrt
//   ./dp-launch-cost
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ void visit(int* depth, unsigned* parent, unsigned w, unsigned u) {
    if (depth[w] < 0) { depth[w] = 1; parent[w] = u; }
}

__global__ void child(const unsigned* targets, long long first, long long last, int* depth, unsigned* parent, unsigned u) {
    for (long long e = first + (long long)blockIdx.x * blockDim.x + threadIdx.x; e < last; e += (long long)gridDim.x * blockDim.x)
        visit(depth, parent, targets[e], u);
}

// Dynamic parallelism: a thread per hub launches the hub's child grid.
__global__ void parent_dp(const long long* offsets, const unsigned* targets, int hubs, int* depth, unsigned* parent) {
    int h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= hubs) return;
    long long first = offsets[h], last = offsets[h + 1];
    int blocks = (int)((last - first + 16 * 256 - 1) / (16 * 256));
    child<<<blocks, 256>>>(targets, first, last, depth, parent, (unsigned)h);
}

// The equivalent without device launches: the parent queues segments...
__global__ void parent_queue(const long long* offsets, int hubs, unsigned long long* segments, unsigned* count) {
    int h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= hubs) return;
    long long degree = offsets[h + 1] - offsets[h];
    unsigned n = (unsigned)((degree + 4095) / 4096);
    unsigned at = atomicAdd(count, n);
    for (unsigned s = 0; s < n; s++) segments[at + s] = (unsigned long long)h | ((unsigned long long)s << 32);
}

// ...and the host's next launch runs a block per segment.
__global__ void segments_kernel(const long long* offsets, const unsigned* targets, const unsigned long long* segments,
                                const unsigned* count, int* depth, unsigned* parent) {
    for (unsigned i = blockIdx.x; i < *count; i += gridDim.x) {
        unsigned long long s = segments[i];
        unsigned h = (unsigned)(s & 0xffffffffu);
        long long first = offsets[h] + (long long)(s >> 32) * 4096, last = min(first + 4096, offsets[h + 1]);
        for (long long e = first + threadIdx.x; e < last; e += blockDim.x) visit(depth, parent, targets[e], h);
    }
}

int main() {
    const long long n = 1 << 24;  // vertices in the status array
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    printf("%-8s %-8s %14s %14s %8s\n", "hubs", "degree", "dynamic ms", "segments ms", "ratio");
    for (int hubs : {16, 64, 256, 1024}) {
        for (long long degree : {4096LL, 65536LL, 1LL << 20}) {
            if ((long long)hubs * degree > (1LL << 28)) continue;
            std::vector<long long> off(hubs + 1);
            for (int h = 0; h <= hubs; h++) off[h] = (long long)h * degree;
            std::vector<unsigned> tgt((size_t)hubs * degree);
            unsigned x = 12345;
            for (auto& t : tgt) { x = x * 1664525u + 1013904223u; t = x % (unsigned)n; }
            long long *d_off; unsigned *d_tgt, *d_parent, *d_count; int* d_depth; unsigned long long* d_seg;
            CHECK(cudaMalloc(&d_off, off.size() * 8));
            CHECK(cudaMalloc(&d_tgt, tgt.size() * 4));
            CHECK(cudaMalloc(&d_depth, n * 4));
            CHECK(cudaMalloc(&d_parent, n * 4));
            CHECK(cudaMalloc(&d_count, 4));
            CHECK(cudaMalloc(&d_seg, ((size_t)hubs * degree / 4096 + hubs + 1) * 8));
            CHECK(cudaMemcpy(d_off, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(d_tgt, tgt.data(), tgt.size() * 4, cudaMemcpyHostToDevice));
            cudaEvent_t a, b;
            CHECK(cudaEventCreate(&a));
            CHECK(cudaEventCreate(&b));
            auto time = [&](auto run) {
                std::vector<float> ms;
                for (int r = 0; r < 12; r++) {
                    CHECK(cudaMemset(d_depth, 0xff, n * 4));
                    CHECK(cudaMemset(d_count, 0, 4));
                    CHECK(cudaEventRecord(a));
                    run();
                    CHECK(cudaEventRecord(b));
                    CHECK(cudaEventSynchronize(b));
                    CHECK(cudaGetLastError());
                    float t;
                    CHECK(cudaEventElapsedTime(&t, a, b));
                    if (r >= 2) ms.push_back(t);  // two warm-up runs
                }
                std::sort(ms.begin(), ms.end());
                return ms[ms.size() / 2];
            };
            float dp = time([&] { parent_dp<<<(hubs + 255) / 256, 256>>>(d_off, d_tgt, hubs, d_depth, d_parent); });
            float seg = time([&] {
                parent_queue<<<(hubs + 255) / 256, 256>>>(d_off, hubs, d_seg, d_count);
                segments_kernel<<<sms * 8, 256>>>(d_off, d_tgt, d_seg, d_count, d_depth, d_parent);
            });
            printf("%-8d %-8lld %14.3f %14.3f %8.2f\n", hubs, degree, dp, seg, dp / seg);
            cudaFree(d_off); cudaFree(d_tgt); cudaFree(d_depth); cudaFree(d_parent); cudaFree(d_count); cudaFree(d_seg);
        }
    }
    return 0;
}
