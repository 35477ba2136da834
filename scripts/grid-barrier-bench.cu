// The cost of a grid-wide barrier on this GPU, the floor of a persistent
// search's level (kernels/persist.cu): kernels/persist.cu's barrier, the
// same with a dependent global round trip a round (a level's queue read
// and write), and cooperative groups' grid.sync(), each over 20,000 rounds
// in one cooperative launch, for grids of 1 block to every resident block.
// Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/grid-barrier-bench scripts/grid-barrier-bench.cu && /tmp/grid-barrier-bench
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "../kernels/persist.cu"

namespace cg = cooperative_groups;

#define CHECK(x)                                                                                \
    do {                                                                                        \
        cudaError_t e = (x);                                                                    \
        if (e != cudaSuccess) {                                                                 \
            std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e));     \
            std::exit(1);                                                                       \
        }                                                                                       \
    } while (0)

// The barrier with a dependent round trip: each round a block reads the
// word its neighbour wrote last round (from L2) and writes its own.
extern "C" __global__ void __launch_bounds__(PERSIST_THREADS, 1) level_bench(GridBarrier* b, unsigned rounds, unsigned* words)
{
    __shared__ PersistShared sh;
    persist_start(sh);
    for (unsigned r = 0; r < rounds; r++) {
        if (threadIdx.x == 0) {
            words[blockIdx.x] = __ldcg(&words[(blockIdx.x + 1) % gridDim.x]) + 1;
            sh.count = 1;
        }
        grid_barrier(b, r, sh);
    }
}

extern "C" __global__ void __launch_bounds__(PERSIST_THREADS, 1) cg_bench(unsigned rounds, unsigned* sink)
{
    cg::grid_group g = cg::this_grid();
    for (unsigned r = 0; r < rounds; r++) g.sync();
    if (g.thread_rank() == 0) *sink = rounds;
}

static float timed(const void* fn, int blocks, void** args, GridBarrier* bar)
{
    cudaEvent_t a, z;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&z));
    float best = 1e30f;
    for (int trial = 0; trial < 4; trial++) {
        CHECK(cudaMemset(bar, 0, sizeof(GridBarrier)));
        CHECK(cudaEventRecord(a));
        CHECK(cudaLaunchCooperativeKernel(fn, blocks, PERSIST_THREADS, args, 0, 0));
        CHECK(cudaEventRecord(z));
        CHECK(cudaEventSynchronize(z));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, z));
        if (trial > 0 && ms < best) best = ms;  // trial 0 warms up
    }
    return best;
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persist_barrier_bench, PERSIST_THREADS, 0));
    std::printf("%s: %d SMs, %d blocks of %d threads an SM\n", prop.name, prop.multiProcessorCount, per_sm, PERSIST_THREADS);
    GridBarrier* bar;
    unsigned *sink, *words;
    CHECK(cudaMalloc(&bar, sizeof(GridBarrier)));
    CHECK(cudaMalloc(&sink, 4));
    CHECK(cudaMalloc(&words, 4096 * 4));
    CHECK(cudaMemset(words, 0, 4096 * 4));
    unsigned rounds = 20000;
    std::printf("%8s %14s %14s %14s  (µs a round, best of 3 after a warm-up)\n", "blocks", "persist.cu", "+round trip", "cg grid.sync");
    std::vector<int> grids = {1, 8, 32, 66, prop.multiProcessorCount, prop.multiProcessorCount * per_sm};
    for (int blocks : grids) {
        if (blocks > prop.multiProcessorCount * per_sm) continue;
        void* a1[] = {&bar, &rounds, &sink};
        void* a2[] = {&bar, &rounds, &words};
        void* a3[] = {&rounds, &sink};
        float t1 = timed((void*)persist_barrier_bench, blocks, a1, bar);
        float t2 = timed((void*)level_bench, blocks, a2, bar);
        float t3 = timed((void*)cg_bench, blocks, a3, bar);
        std::printf("%8d %14.3f %14.3f %14.3f\n", blocks, t1 * 1e3 / rounds, t2 * 1e3 / rounds, t3 * 1e3 / rounds);
    }
    return 0;
}
