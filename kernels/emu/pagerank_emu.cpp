// Runs PageRank's pull kernels on the CPU (cuda_emu.h), weighted and not,
// as operators/gpuop/pagerank.go launches them: pr_init, then each
// iteration the pull (pagerank_vwc.cu's pr_pull_k32_*, or vp_warpseg.cu's
// pr_ws_*) and the outliers' pr_outliers_* and pr_outliers_finish_*; and
// compares every iteration's ranks, L1 change and dangling sum with a
// plain sequential reference (networkx's definition: x[u]·w/W(u), a vertex
// of out-weight 0 dangling). K = 32 only: the emulator needs every lane of
// a warp at each shuffle, which smaller virtual warps of one physical warp
// need not reach together. For checking the kernels where there is no GPU;
// the Go tests (operators/gpuop/pagerank_test.go) check them on the GPU.
//
//   kernels/emu/pagerank-emu.sh     (g++ 12 or newer; a minute on two cores)
#include "cuda_emu.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

// What graph_build.cu does not use, and so cuda_emu.h lacks.
template <typename T>
inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    auto& w = emu::warp();
    emu::publish(w, v);
    unsigned l = emu::lane(), base = l & ~(unsigned)(width - 1);
    return (l - base) + delta < (unsigned)width ? emu::read<T>(w, l + delta) : v;
}
template <typename T>
inline T __ldcs(const T* p) { return *p; }
template <typename T>
inline T __ldg(const T* p) { return *p; }
template <typename T>
inline T atomicExch(T* p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <typename T>
inline T atomicAnd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_and(v); }
inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
inline unsigned __float_as_uint(float x) { unsigned b; std::memcpy(&b, &x, 4); return b; }
inline float __uint_as_float(unsigned b) { float x; std::memcpy(&x, &b, 4); return x; }
inline long long __double_as_longlong(double x) { long long b; std::memcpy(&b, &x, 8); return b; }
inline double __longlong_as_double(long long b) { double x; std::memcpy(&x, &b, 8); return x; }
using std::max;
using std::min;

unsigned char smem[1];  // shards.cuh's dynamic shared memory (pagerank-emu.sh), unused here

#include "../pagerank_vwc.cu"
#include "../vp_warpseg.cu"

static int failures = 0;
#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            failures++;                                          \
            std::printf("FAIL %s:%d: ", __FILE__, __LINE__);     \
            std::printf(__VA_ARGS__);                            \
            std::printf("\n");                                   \
        }                                                        \
    } while (0)

struct Graph {
    long long n;
    std::vector<eid_t> out_off, in_off;
    std::vector<vid_t> out_dst, in_src, in_src_hub, hub_id;
    std::vector<double> out_w, in_w;
};

// A random directed graph with a hub of in-degree `hub` (vertex 0, an
// outlier of more than one segment where hub > OUTLIER_SEGMENT), weights
// in [0, 4) with some 0, vertices whose out-edges all weigh 0, and
// vertices without out-edges.
static Graph make_graph(long long n, long long m, long long hub, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::tuple<vid_t, vid_t, double>> es;
    for (long long i = 0; i < m; i++) {
        vid_t u = rng() % n, v = rng() % n;
        if (u % 17 == 3) continue;  // no out-edges
        double w = (rng() % 5 == 0) ? 0.0 : (double)(rng() % 400) / 100.0;
        if (u % 13 == 5) w = 0;  // out-weight 0: dangling when weighted
        if (u != v) es.emplace_back(u, v, w);
    }
    for (long long i = 1; i <= hub && i < n; i++)
        if (i % 17 != 3) es.emplace_back((vid_t)i, 0, 1.0 + (double)(i % 3));
    std::sort(es.begin(), es.end());
    es.erase(std::unique(es.begin(), es.end(), [](auto& a, auto& b) { return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b); }), es.end());
    Graph g;
    g.n = n;
    g.out_off.assign(n + 1, 0);
    g.in_off.assign(n + 1, 0);
    for (auto& [u, v, w] : es) g.out_off[u + 1]++, g.in_off[v + 1]++;
    for (long long i = 0; i < n; i++) g.out_off[i + 1] += g.out_off[i], g.in_off[i + 1] += g.in_off[i];
    g.out_dst.resize(es.size());
    g.out_w.resize(es.size());
    g.in_src.resize(es.size());
    g.in_w.resize(es.size());
    std::vector<eid_t> op(g.out_off.begin(), g.out_off.end() - 1), ip(g.in_off.begin(), g.in_off.end() - 1);
    // es is sorted by (u, v): out rows in order; in rows sorted by source.
    for (auto& [u, v, w] : es) {
        g.out_dst[op[u]] = v, g.out_w[op[u]++] = w;
        g.in_src[ip[v]] = u, g.in_w[ip[v]++] = w;
    }
    // A hubs-first numbering: any permutation will do for the kernels.
    g.hub_id.resize(n);
    for (long long i = 0; i < n; i++) g.hub_id[i] = (vid_t)((i * 7919) % n);
    g.in_src_hub.resize(es.size());
    for (size_t e = 0; e < es.size(); e++) g.in_src_hub[e] = g.hub_id[g.in_src[e]];
    return g;
}

// The reference's iteration: ranks, L1 change, next dangling sum.
struct Ref {
    std::vector<double> x, inv;
    double dangling = 0, change = 0;
};

static Ref ref_init(const Graph& g, bool weighted) {
    Ref r;
    r.x.assign(g.n, 1.0 / g.n);
    r.inv.assign(g.n, 0);
    for (long long u = 0; u < g.n; u++) {
        double out = (double)(g.out_off[u + 1] - g.out_off[u]);
        if (weighted) {
            out = 0;
            for (eid_t e = g.out_off[u]; e < g.out_off[u + 1]; e++) out += g.out_w[e];
        }
        r.inv[u] = out != 0 ? 1.0 / out : 0;
        if (r.inv[u] == 0) r.dangling += r.x[u];
    }
    return r;
}

static void ref_step(const Graph& g, bool weighted, double d, Ref& r) {
    std::vector<double> nx(g.n);
    double base = (1 - d) / g.n + d * r.dangling / g.n, change = 0, dangling = 0;
    for (long long v = 0; v < g.n; v++) {
        double s = 0;
        for (eid_t e = g.in_off[v]; e < g.in_off[v + 1]; e++) s += (weighted ? g.in_w[e] : 1.0) * r.x[g.in_src[e]] * r.inv[g.in_src[e]];
        nx[v] = base + d * s;
        change += std::fabs(nx[v] - r.x[v]);
        if (r.inv[v] == 0) dangling += nx[v];
    }
    r.x = nx, r.change = change, r.dangling = dangling;
}

// The outliers' lists as prOutliers makes them (none for a threshold of 0:
// deferring off).
static void outliers_of(const Graph& g, long long threshold, std::vector<vid_t>& outliers, std::vector<unsigned long long>& segments) {
    if (threshold <= 0) return;
    for (long long v = 0; v < g.n; v++) {
        eid_t d = g.in_off[v + 1] - g.in_off[v];
        if (d <= threshold) continue;
        unsigned long long k = outliers.size();
        outliers.push_back((vid_t)v);
        for (long long s = 0; s * OUTLIER_SEGMENT < d; s++) segments.push_back(k | (unsigned long long)s << 32);
    }
}

template <typename C>
static void run(const Graph& g, bool weighted, bool hub, bool warpseg, long long threshold, const char* label) {
    const double d = 0.85, tol = sizeof(C) == 4 ? 1e-6 : 1e-12;
    const long long n = g.n;
    std::vector<double> rank[2] = {std::vector<double>(n), std::vector<double>(n)}, inv(n), acc(4, 0);
    std::vector<C> contrib[2] = {std::vector<C>(n), std::vector<C>(n)};
    const vid_t* hub_id = hub ? g.hub_id.data() : nullptr;
    const vid_t* srcs = hub ? g.in_src_hub.data() : g.in_src.data();
    const double* inw = weighted ? g.in_w.data() : nullptr;
    std::vector<vid_t> outliers;
    std::vector<unsigned long long> segments;
    outliers_of(g, threshold, outliers, segments);
    std::vector<double> outlier_acc(outliers.size(), 0);
    // The kernels by the host's choice (pagerank.go's pullKernels).
    void (*init)(const eid_t*, const double*, const vid_t*, double*, double*, C*, long long, double*) = nullptr;
    if constexpr (sizeof(C) == 8) init = hub ? pr_init_f64_hub_w : pr_init_f64_w;
    else init = hub ? pr_init_f32_hub_w : pr_init_f32_w;
    if (weighted) emu::launch(init, 3, 256, g.out_off.data(), (const double*)g.out_w.data(), hub_id, rank[0].data(), inv.data(), contrib[0].data(), n, &acc[0]);
    else {
        void (*init0)(const eid_t*, const vid_t*, double*, double*, C*, long long, double*) = nullptr;
        if constexpr (sizeof(C) == 8) init0 = hub ? pr_init_f64_hub : pr_init_f64;
        else init0 = hub ? pr_init_f32_hub : pr_init_f32;
        emu::launch(init0, 3, 256, g.out_off.data(), hub_id, rank[0].data(), inv.data(), contrib[0].data(), n, &acc[0]);
    }
    Ref r = ref_init(g, weighted);
    CHECK(std::fabs(acc[0] - r.dangling) < 1e-12, "%s: initial dangling %g, reference %g", label, acc[0], r.dangling);
    for (long long v = 0; v < n; v++) CHECK(inv[v] == r.inv[v], "%s: vertex %lld 1/W %g, reference %g", label, v, inv[v], r.inv[v]);
    int cur = 0;
    for (int it = 0; it < 6; it++) {
        const int next = 1 - cur;
        double* dangling = &acc[cur];
        acc[next] = 0, acc[2] = 0;
        // The pulls take one PRPullArgs (issue 35); _w reads in_weights.
        using Pull = void (*)(PRPullArgs<C>);
        Pull pw, p0;
        if constexpr (sizeof(C) == 8) {
            pw = warpseg ? (hub ? pr_ws_f64_hub_w : pr_ws_f64_w) : (hub ? pr_pull_k32_f64_hub_w : pr_pull_k32_f64_w);
            p0 = warpseg ? (hub ? pr_ws_f64_hub : pr_ws_f64) : (hub ? pr_pull_k32_f64_hub : pr_pull_k32_f64);
        } else {
            pw = warpseg ? (hub ? pr_ws_f32_hub_w : pr_ws_f32_w) : (hub ? pr_pull_k32_f32_hub_w : pr_pull_k32_f32_w);
            p0 = warpseg ? (hub ? pr_ws_f32_hub : pr_ws_f32) : (hub ? pr_pull_k32_f32_hub : pr_pull_k32_f32);
        }
        const bool stream = it % 2 == 0;
        PRPullArgs<C> pa{};
        pa.in_offsets = g.in_off.data();
        pa.in_sources = srcs;
        pa.in_weights = inw;
        pa.hub_id = hub_id;
        pa.contrib = contrib[cur].data();
        pa.inv_degree = inv.data();
        pa.rank = rank[cur].data();
        pa.next_rank = rank[next].data();
        pa.next_contrib = contrib[next].data();
        pa.dangling = dangling;
        pa.next_dangling = &acc[next];
        pa.l1 = &acc[2];
        pa.counter = nullptr;
        pa.lo = 0;
        pa.hi = n;
        pa.n = n;
        pa.damping = d;
        pa.chunk = 8;
        pa.outlier_degree = threshold;
        pa.stream = stream;
        emu::launch(weighted ? pw : p0, 4, 256, pa);
        if (!outliers.empty()) {
            if (weighted) {
                if constexpr (sizeof(C) == 8) emu::launch(pr_outliers_f64_w, 2, 256, g.in_off.data(), srcs, inw, (const C*)contrib[cur].data(), (const vid_t*)outliers.data(), (const unsigned long long*)segments.data(), (unsigned)segments.size(), outlier_acc.data());
                else emu::launch(pr_outliers_f32_w, 2, 256, g.in_off.data(), srcs, inw, (const C*)contrib[cur].data(), (const vid_t*)outliers.data(), (const unsigned long long*)segments.data(), (unsigned)segments.size(), outlier_acc.data());
            } else {
                if constexpr (sizeof(C) == 8) emu::launch(pr_outliers_f64, 2, 256, g.in_off.data(), srcs, (const C*)contrib[cur].data(), (const vid_t*)outliers.data(), (const unsigned long long*)segments.data(), (unsigned)segments.size(), outlier_acc.data());
                else emu::launch(pr_outliers_f32, 2, 256, g.in_off.data(), srcs, (const C*)contrib[cur].data(), (const vid_t*)outliers.data(), (const unsigned long long*)segments.data(), (unsigned)segments.size(), outlier_acc.data());
            }
            void (*finish)(PRFinishArgs<C>);
            if constexpr (sizeof(C) == 8) finish = hub ? pr_outliers_finish_f64_hub : pr_outliers_finish_f64;
            else finish = hub ? pr_outliers_finish_f32_hub : pr_outliers_finish_f32;
            PRFinishArgs<C> fa{};
            fa.outliers = outliers.data();
            fa.hub_id = hub_id;
            fa.acc = outlier_acc.data();
            fa.inv_degree = inv.data();
            fa.rank = rank[cur].data();
            fa.next_rank = rank[next].data();
            fa.next_contrib = contrib[next].data();
            fa.dangling = dangling;
            fa.next_dangling = &acc[next];
            fa.l1 = &acc[2];
            fa.n = n;
            fa.damping = d;
            fa.count = (unsigned)outliers.size();
            emu::launch(finish, 1, 256, fa);
        }
        ref_step(g, weighted, d, r);
        double worst = 0;
        for (long long v = 0; v < n; v++) worst = std::max(worst, std::fabs(rank[next][v] - r.x[v]));
        CHECK(worst < tol, "%s: iteration %d: ranks off by %g", label, it + 1, worst);
        CHECK(std::fabs(acc[2] - r.change) < 1e3 * tol, "%s: iteration %d: L1 change %g, reference %g", label, it + 1, acc[2], r.change);
        CHECK(std::fabs(acc[next] - r.dangling) < tol, "%s: iteration %d: dangling %g, reference %g", label, it + 1, acc[next], r.dangling);
        cur = next;
    }
    std::printf("%s: %s\n", label, failures ? "failures so far" : "ok");
}

int main() {
    Graph g = make_graph(600, 4000, 200, 7);
    Graph big = make_graph(5000, 8000, 4500, 11);  // a hub of two segments
    for (bool weighted : {true, false})
        for (bool hub : {false, true})
            for (bool ws : {false, true}) {
                std::string l = std::string(weighted ? "weighted" : "unweighted") + (hub ? " hub" : "") + (ws ? " warpseg" : " vwc k32");
                run<double>(g, weighted, hub, ws, 64, (l + " f64").c_str());
                run<float>(g, weighted, hub, ws, 64, (l + " f32").c_str());
                run<double>(g, weighted, hub, ws, 0, (l + " f64, no outliers").c_str());
            }
    run<double>(big, true, true, true, 1024, "weighted hub warpseg f64, a hub of two segments");
    run<double>(big, true, false, false, 1024, "weighted vwc k32 f64, a hub of two segments");
    std::printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
