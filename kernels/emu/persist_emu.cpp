// Runs kernels/persist.cu's persistent BFS and SSSP on the CPU (cuda_emu.h)
// and compares them with a queue BFS and Dijkstra on graphs of several
// shapes: grids, paths, stars (wide vertices), random, skewed and small
// dense graphs, with every mode forced: all levels single-block, none, and
// mixed. Each array ends where an inaccessible page begins, so a kernel
// that runs past one faults (shared_alloc). The
// persistent kernels' blocks wait for each other at a grid barrier, which
// cuda_emu.h's one-block-at-a-time launch cannot run: here each block of a
// cooperative launch is a forked process with its own 256 threads and
// __shared__ statics, and "device" memory is shared mappings, so the
// barrier's atomics and spins cross processes as they cross SMs. For
// checking the kernels where there is no GPU; the Go tests
// (operators/gpuop/persist_test.go) check them on the GPU.
//
//   kernels/emu/persist.sh     (g++ 12 or newer; a minute or two on two cores)
#include "cuda_emu.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <queue>
#include <random>
#include <utility>

#undef __launch_bounds__
#define __launch_bounds__(...)
#ifndef PERSIST_SPIN_PAUSE
#define PERSIST_SPIN_PAUSE() emu_pause()
#endif

using std::max;
using std::min;

static long emu_env(const char* name, long unset) {
    const char* v = std::getenv(name);
    return v ? std::atol(v) : unset;
}

// Sleeps a random 0 to PERSIST_EMU_JITTER_US µs unless the block is the
// fast one; false where there is no jitter.
static bool emu_jitter() {
    static const long jitter = emu_env("PERSIST_EMU_JITTER_US", 0), fast = emu_env("PERSIST_EMU_FAST_BLOCK", -1);
    if (jitter <= 0 || (long)blockIdx.x == fast) return false;
    static thread_local std::mt19937_64 rng(getpid());
    usleep((useconds_t)(rng() % (unsigned long)(jitter + 1)));
    return true;
}

// What a block does between its barrier polls: yields, or with
// PERSIST_EMU_JITTER_US=N also sleeps a random 0 to N µs, so that blocks
// leave a barrier up to N µs apart, as a preempted or busy SM's block
// does: it widens the races between what one block does right after a
// barrier and what a late one reads. PERSIST_EMU_FAST_BLOCK=B spares block
// B the sleeps: it leaves every barrier first (B = 0: the block that runs
// the single-block steps). The sleeps also delay each block's start, as a
// cooperative launch's blocks start at different times.
static void emu_pause() {
    if (!emu_jitter()) sched_yield();
}

// ---- what cuda_emu.h lacks and persist.cu uses ----

template <typename T>
inline T atomicCAS(T* p, T expected, T desired) {
    std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
    return expected;
}
template <typename T>
inline T atomicExch(T* p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <typename T>
inline T __ldg(const T* p) { return *p; }
template <typename T>
inline T __ldcg(const T* p) { return std::atomic_ref<T>(*const_cast<T*>(p)).load(); }
inline unsigned __reduce_max_sync(unsigned, unsigned v) {
    auto& w = emu::warp();
    emu::publish(w, v);
    unsigned m = 0;
    for (unsigned l = 0; l < 32; l++) m = std::max(m, emu::read<unsigned>(w, l));
    return m;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline long long __double_as_longlong(double d) {
    long long x;
    std::memcpy(&x, &d, 8);
    return x;
}
inline double __longlong_as_double(long long x) {
    double d;
    std::memcpy(&d, &x, 8);
    return d;
}
inline unsigned __float_as_uint(float f) {
    unsigned x;
    std::memcpy(&x, &f, 4);
    return x;
}
inline float __uint_as_float(unsigned x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

#include "../persist.cu"

static int failures = 0;
#define CHECK(cond, ...)                                      \
    do {                                                      \
        if (!(cond)) {                                        \
            failures++;                                       \
            std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            std::printf(__VA_ARGS__);                         \
            std::printf("\n");                                \
            return;                                           \
        }                                                     \
    } while (0)

// ---- device memory and the cooperative launch ----

// Memory every block's process shares: a mapping made before the forks,
// its n elements ending where an inaccessible page begins, so that a
// kernel that reads or writes past them faults (coop_launch reports the
// block killed by a signal) instead of touching the next array.
struct SharedLayout {
    size_t page, bytes, span;  // span: bytes rounded up to pages, the guard page after it
};

template <typename T>
static SharedLayout shared_layout(size_t n) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = std::max<size_t>(n, 1) * sizeof(T);
    return {page, bytes, (bytes + page - 1) / page * page};
}

template <typename T>
static T* shared_alloc(size_t n, int fill) {
    const SharedLayout m = shared_layout<T>(n);
    void* p = mmap(nullptr, m.span + m.page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect((char*)p + m.span, m.page, PROT_NONE) != 0) {
        std::perror("mmap");
        std::exit(2);
    }
    std::memset(p, fill, m.span);
    return reinterpret_cast<T*>((char*)p + m.span - m.bytes);
}

template <typename T>
static void shared_free(T* p, size_t n) {
    const SharedLayout m = shared_layout<T>(n);
    munmap((char*)p + m.bytes - m.span, m.span + m.page);
}

// Runs kernel over `blocks` blocks of 256 threads, all at once: block b is
// a child process. A block that has not finished in 15 minutes
// (PERSIST_EMU_ALARM_S: a barrier that never releases) is killed and
// reported.
template <typename... K, typename... A>
static bool coop_launch(void (*kernel)(K...), unsigned blocks, A... args) {
    std::vector<pid_t> kids;
    std::fflush(stdout);
    for (unsigned b = 0; b < blocks; b++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm((unsigned)emu_env("PERSIST_EMU_ALARM_S", 900));
            gridDim.x = blocks;
            blockDim.x = emu::Pool::threads;
            emu::block_barrier = std::make_unique<std::barrier<>>(emu::Pool::threads);
            for (unsigned w = 0; w < emu::Pool::threads / 32; w++) emu::warps.push_back(std::make_unique<emu::Warp>());
            emu::Pool& p = emu::pool();
            p.job = [&] {
                blockIdx.x = b;
                if (threadIdx.x == 0) emu_jitter();  // a block that starts late
                emu::block_barrier->arrive_and_wait();
                kernel(K(args)...);
            };
            p.start.arrive_and_wait();
            p.end.arrive_and_wait();
            std::fflush(stdout);
            _exit(0);
        }
        kids.push_back(pid);
    }
    // A block that dies (its threads not made on a loaded machine, a fault)
    // leaves the others waiting at the barrier: end them and say so.
    bool ok = true;
    for (size_t left = kids.size(); left > 0; left--) {
        int status = 0;
        pid_t k = waitpid(-1, &status, 0);
        if (k < 0) break;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        if (ok) {
            unsigned b = (unsigned)(std::find(kids.begin(), kids.end(), k) - kids.begin());
            std::printf("block %u: %s %d\n", b, WIFSIGNALED(status) ? "killed by signal" : "exit status",
                        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            for (pid_t other : kids)
                if (other != k) kill(other, SIGKILL);
        }
        ok = false;
    }
    return ok;
}

// ---- graphs ----

struct Graph {
    std::string name;
    long long n = 0;
    std::vector<eid_t> off;
    std::vector<vid_t> tgt;
    std::vector<unsigned> wu;  // integer weights
    std::vector<double> wf;    // real weights
};

struct Edge {
    vid_t u, v;
    unsigned w;
};

static Graph build(std::string name, long long n, std::vector<Edge> edges, bool undirected, std::mt19937_64& rng) {
    if (undirected) {
        size_t m = edges.size();
        for (size_t i = 0; i < m; i++) edges.push_back({edges[i].v, edges[i].u, edges[i].w});
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.u != b.u ? a.u < b.u : a.v < b.v; });
    Graph g;
    g.name = name;
    g.n = n;
    g.off.assign(n + 1, 0);
    for (auto& e : edges) g.off[e.u + 1]++;
    for (long long v = 0; v < n; v++) g.off[v + 1] += g.off[v];
    std::uniform_real_distribution<double> real(0.0, 10.0);
    for (auto& e : edges) {
        g.tgt.push_back(e.v);
        g.wu.push_back(e.w);
        g.wf.push_back(e.w == 0 ? 0.0 : real(rng));
    }
    return g;
}

static std::vector<Graph> graphs() {
    std::mt19937_64 rng(7);
    std::vector<Graph> out;
    auto weight = [&](unsigned hi) { return (unsigned)(rng() % hi) + 1; };
    {  // a grid: thousands of small levels
        std::vector<Edge> e;
        const int R = 37, C = 53;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                vid_t v = r * C + c;
                if (c + 1 < C) e.push_back({v, v + 1, weight(255)});
                if (r + 1 < R) e.push_back({v, (vid_t)(v + C), weight(255)});
            }
        out.push_back(build("grid-37x53", R * C, e, true, rng));
    }
    {  // a path: one vertex a level
        std::vector<Edge> e;
        for (vid_t v = 0; v + 1 < 300; v++) e.push_back({v, v + 1, weight(9)});
        out.push_back(build("path-300", 300, e, true, rng));
    }
    {  // a star with a tail: a vertex wider than a thread's share, and zero weights
        std::vector<Edge> e;
        for (vid_t v = 1; v < 3000; v++) e.push_back({0, v, v % 5 == 0 ? 0u : weight(20)});
        for (vid_t v = 3000; v < 3100; v++) e.push_back({v - 1, v, weight(3)});
        out.push_back(build("star-tail", 3100, e, true, rng));
    }
    {  // random directed, unreached vertices
        std::vector<Edge> e;
        for (int i = 0; i < 6000; i++) e.push_back({(vid_t)(rng() % 2500), (vid_t)(rng() % 2500), (unsigned)(rng() % 50)});
        out.push_back(build("random-directed", 2500, e, false, rng));
    }
    {  // skewed: a few hubs among random edges
        std::vector<Edge> e;
        for (int i = 0; i < 8000; i++) {
            vid_t u = (vid_t)(rng() % 4000);
            if (rng() % 3 == 0) u = (vid_t)(rng() % 8);
            e.push_back({u, (vid_t)(rng() % 4000), weight(100)});
        }
        out.push_back(build("hubs", 4000, e, true, rng));
    }
    {  // small and dense: a step's improvements outnumber the vertices (a kept pile repeats them)
        std::vector<Edge> e;
        for (vid_t u = 0; u < 300; u++)
            for (int k = 0; k < 12; k++) e.push_back({u, (vid_t)(rng() % 300), weight(50)});
        out.push_back(build("dense-300", 300, e, true, rng));
    }
    return out;
}

// ---- references ----

static std::vector<int> ref_bfs(const Graph& g, vid_t s) {
    std::vector<int> d(g.n, -1);
    std::queue<vid_t> q;
    d[s] = 0;
    q.push(s);
    while (!q.empty()) {
        vid_t u = q.front();
        q.pop();
        for (eid_t e = g.off[u]; e < g.off[u + 1]; e++)
            if (d[g.tgt[e]] < 0) {
                d[g.tgt[e]] = d[u] + 1;
                q.push(g.tgt[e]);
            }
    }
    return d;
}

template <typename W>
static std::vector<double> ref_dijkstra(const Graph& g, vid_t s, const std::vector<W>* w) {
    std::vector<double> d(g.n, INFINITY);
    std::priority_queue<std::pair<double, vid_t>, std::vector<std::pair<double, vid_t>>, std::greater<>> q;
    d[s] = 0;
    q.push({0, s});
    while (!q.empty()) {
        auto [du, u] = q.top();
        q.pop();
        if (du > d[u]) continue;
        for (eid_t e = g.off[u]; e < g.off[u + 1]; e++) {
            double nd = du + (w ? (double)(*w)[e] : 1.0);
            if (nd < d[g.tgt[e]]) {
                d[g.tgt[e]] = nd;
                q.push({nd, g.tgt[e]});
            }
        }
    }
    return d;
}

// ---- runs ----

template <typename T>
static T* upload(const std::vector<T>& v) {
    T* p = shared_alloc<T>(v.size(), 0);
    std::copy(v.begin(), v.end(), p);
    return p;
}

// A BFS run's shape: blocks, the single-block limit, the kept list (0:
// the rule), the L2 prefetch, the ELL copy (where the degrees allow), the
// levels a multi-block step spans (0: 1) and the queue's entries (0: twice
// the vertices).
struct BfsCase {
    unsigned blocks, limit, keep, prefetch;
    bool ell;
    unsigned span = 1, cap = 0;
};

static void check_bfs(const Graph& g, vid_t src, BfsCase c) {
    const unsigned blocks = c.blocks, limit = c.limit;
    eid_t* off = upload(g.off);
    vid_t* tgt = upload(g.tgt);
    int* depth = shared_alloc<int>(g.n, 0x77);
    vid_t* parent = shared_alloc<vid_t>(g.n, 0x77);
    unsigned long long* label = shared_alloc<unsigned long long>(g.n, 0xff);
    const unsigned cap = c.cap ? c.cap : 2 * (unsigned)g.n;
    QEntry* queue = shared_alloc<QEntry>(cap, 0xee);
    BfspState* st = shared_alloc<BfspState>(1, 0);
    unsigned width = 0;
    for (long long v = 0; c.ell && v < g.n; v++) width = std::max<unsigned>(width, g.off[v + 1] - g.off[v]);
    if (width > 16) width = 0;
    vid_t* ell = nullptr;
    if (width) {
        ell = shared_alloc<vid_t>(g.n * width, 0);
        blockIdx.x = 0;
        gridDim.x = blockDim.x = 1;
        threadIdx.x = 0;
        bfsp_ell(off, tgt, ell, (unsigned long long)g.n, width);
    }
    bfsp_init(off, label, queue, st, src, width);
    bool ok = coop_launch(bfsp_search, blocks, (const eid_t*)off, width ? (const vid_t*)ell : (const vid_t*)tgt, label, queue,
                          st, limit, c.keep, c.prefetch, width, c.span, cap);
    const bool overflow = ok && st->overflow;
    // bfsp_split over three blocks (processes, as every launch here: a
    // thread pool made in this process would not survive the next fork).
    if (ok && !overflow) ok = coop_launch(bfsp_split, 3, (const unsigned long long*)label, depth, parent, st, (unsigned long long)g.n);
    std::vector<int> want = ref_bfs(g, src);
    int deepest = -1;
    for (int d : want) deepest = std::max(deepest, d);
    [&] {
        CHECK(ok, "%s bfs src %u blocks %u limit %u keep %u span %u: a block failed or hung", g.name.c_str(), src, blocks,
              limit, c.keep, c.span);
        if (overflow) {  // the host runs the search again at span 1
            CHECK(c.span > 1 && c.cap > 0, "%s bfs src %u span %u: the queue of %u entries overflowed", g.name.c_str(), src,
                  c.span, cap);
            std::printf("ok %s bfs src %u blocks %u span %u cap %u: overflow reported\n", g.name.c_str(), src, blocks, c.span,
                        cap);
            return;
        }
        for (long long v = 0; v < g.n; v++) {
            CHECK(depth[v] == want[v], "%s bfs src %u blocks %u limit %u keep %u span %u: depth[%lld] = %d, want %d",
                  g.name.c_str(), src, blocks, limit, c.keep, c.span, v, depth[v], want[v]);
            CHECK(want[v] >= 0 || parent[v] == GPIPE_NO_VERTEX, "%s bfs src %u: unreached %lld has parent %u", g.name.c_str(),
                  src, v, parent[v]);
            if (want[v] <= 0) continue;
            vid_t p = parent[v];
            bool edge = p < g.n && std::binary_search(g.tgt.begin() + g.off[p], g.tgt.begin() + g.off[p + 1], (vid_t)v);
            CHECK(edge && want[p] == want[v] - 1, "%s bfs src %u: parent[%lld] = %u is no parent", g.name.c_str(), src, v, p);
        }
        CHECK((int)st->levels == deepest + 1, "%s bfs src %u blocks %u limit %u: %u levels, want %d", g.name.c_str(), src,
              blocks, limit, st->levels, deepest + 1);
        std::printf("ok %s bfs src %u blocks %u limit %u keep %u ell %u span %u: %u levels (%u single in %u runs, %u multi "
                    "steps of %u levels in all blocks, %u of them local, %u gathers, %u queue pushes)\n",
                    g.name.c_str(), src, blocks, limit, c.keep, width, c.span, st->levels, st->single_levels, st->single_runs,
                    st->multi_levels, st->phases, st->local_levels, st->gathers, st->tail);
    }();
    shared_free(off, g.off.size());
    shared_free(tgt, g.tgt.size());
    shared_free(depth, g.n);
    shared_free(parent, g.n);
    shared_free(label, g.n);
    shared_free(queue, cap);
    shared_free(st, 1);
    if (ell) shared_free(ell, g.n * width);
}

// How an SSSP run is set up: the program's weights, Δ and its bounds, and
// the rounds a multi-block near step may run (0: 1).
struct SsspCase {
    unsigned blocks, limit;
    double delta, delta_max;
    unsigned span = 1;
};

template <typename P, typename W>
static void check_sssp(const Graph& g, vid_t src, const char* prog, const std::vector<W>* weights, SsspCase c,
                       void (*init)(SsspArgs<P>, vid_t, double, double, unsigned, unsigned),
                       void (*search)(SsspArgs<P>, unsigned, unsigned)) {
    typedef typename P::Value V;
    eid_t* off = upload(g.off);
    vid_t* tgt = upload(g.tgt);
    W* w = weights ? upload(*weights) : nullptr;
    V* dist = shared_alloc<V>(g.n, 0xff);
    unsigned* stamp = shared_alloc<unsigned>(g.n, 0);
    unsigned* fstamp = shared_alloc<unsigned>(g.n, 0);
    QEntry* near0 = shared_alloc<QEntry>(g.n + PERSIST_LOCAL, 0xee);  // persist_sssp.go: ssspNearEntries
    QEntry* near1 = shared_alloc<QEntry>(g.n + PERSIST_LOCAL, 0xee);
    vid_t* far0 = shared_alloc<vid_t>(g.n, 0xee);
    vid_t* far1 = shared_alloc<vid_t>(g.n, 0xee);
    vid_t* far2 = shared_alloc<vid_t>(g.n, 0xee);
    SsspState* st = shared_alloc<SsspState>(1, 0);
    const SsspArgs<P> a{off, tgt, {(const typename P::Weight*)w}, dist, stamp, fstamp, {near0, near1}, {far0, far1, far2}, st};
    init(a, src, c.delta, c.delta_max, 4, 64);
    bool ok = coop_launch(search, c.blocks, a, c.limit, std::max(c.span, 1u));
    std::vector<double> want = ref_dijkstra(g, src, weights);
    [&] {
        CHECK(ok, "%s %s src %u blocks %u limit %u delta %g span %u: a block failed or hung", g.name.c_str(), prog, src,
              c.blocks, c.limit, c.delta, c.span);
        for (long long v = 0; v < g.n; v++) {
            double got = dist[v] == P::none() ? INFINITY : P::priority(dist[v], 0.0);
            CHECK(got == want[v], "%s %s src %u blocks %u limit %u delta %g span %u: dist[%lld] = %.17g, want %.17g",
                  g.name.c_str(), prog, src, c.blocks, c.limit, c.delta, c.span, v, got, want[v]);
        }
        std::printf("ok %s %s src %u blocks %u limit %u delta %g..%g span %u: %u near, %u split steps (%u single in %u "
                    "runs), %u rounds more, %llu relaxed, %u delta changes\n",
                    g.name.c_str(), prog, src, c.blocks, c.limit, c.delta, c.delta_max, c.span, st->near_steps,
                    st->split_steps, st->single_steps, st->single_runs, st->rounds, st->relaxed, st->delta_changes);
    }();
    // The mappings stay until the process ends: a few megabytes in all.
}

// PERSIST_EMU_ONLY=NAME runs only the graph called NAME;
// PERSIST_EMU_SSSP_ONLY=1 only its SSSP cases, PERSIST_EMU_BFS_ONLY=1 only
// its BFS cases.
int main() {
    const char* only = std::getenv("PERSIST_EMU_ONLY");
    const bool bfs = !std::getenv("PERSIST_EMU_SSSP_ONLY"), sssp = !std::getenv("PERSIST_EMU_BFS_ONLY");
    for (const Graph& g : graphs()) {
        if (only && g.name != only) continue;
        std::vector<vid_t> srcs = {0, (vid_t)(g.n / 2)};
        for (vid_t s : bfs ? srcs : std::vector<vid_t>{}) {
            check_bfs(g, s, {3, 0, 0, 1, true});
            check_bfs(g, s, {3, 40, 0, 0, false});
            check_bfs(g, s, {3, 0, 1, 1, false});  // a block keeps one entry: the rest through the queue
            check_bfs(g, s, {3, 40, 5, 0, true});
            check_bfs(g, s, {3, 0, 0, 1, true, 4});
            check_bfs(g, s, {4, 0, 5, 0, false, 3});  // small kept piles: levels ahead of the queue's
        }
        if (bfs) {
            check_bfs(g, srcs[0], {2, 1u << 30, 0, 1, true});
            check_bfs(g, srcs[0], {1, 10, 0, 1, false});
            check_bfs(g, srcs[0], {4, 0, 1000, 1, true});  // every push kept
            check_bfs(g, srcs[0], {4, 0, 1000, 1, true, 16});
            check_bfs(g, srcs[0], {3, 20, 0, 0, false, 2});
            check_bfs(g, srcs[0], {3, 0, 1, 1, false, 8, 2});  // a queue too small: the overflow is reported
        }
        if (!sssp) continue;
        vid_t s = srcs[1];
        for (SsspCase c : {SsspCase{3, 0, 30, 30}, SsspCase{3, 25, 8, 256}, SsspCase{2, 1u << 30, 1e9, 1e9}, SsspCase{1, 10, 1, 64},
                           SsspCase{3, 0, 30, 30, 8}, SsspCase{4, 25, 8, 256, 4}, SsspCase{3, 0, 1e9, 1e9, 16},
                           SsspCase{3, 25, 1e9, 1e9}}) {  // the last: runs that end with more kept entries than vertices
            check_sssp<SSSP32<unsigned>, unsigned>(g, s, "sssp_u32", &g.wu, c, ssspp_init_sssp_u32, ssspp_sssp_u32);
            check_sssp<SSSP64, double>(g, s, "sssp_f64", &g.wf, {c.blocks, c.limit, c.delta / 3, c.delta_max / 3, c.span},
                                       ssspp_init_sssp_f64, ssspp_sssp_f64);
        }
        check_sssp<SSSP32<Unit>, unsigned>(g, 0, "sssp_u32u", nullptr, SsspCase{3, 8, 2, 8}, ssspp_init_sssp_u32u,
                                           ssspp_sssp_u32u);
    }
    std::printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
