// Runs kernels/graph_build.cu's kernels on the CPU (cuda_emu.h), in the
// order operators/gpu_build.go launches them, and compares what they build
// with a plain reference: the scan and the radix sort against the standard
// library, and whole builds (every key type, both renumbering paths,
// weighted or not, directed with and without the in-edge layout,
// undirected) against a reference CSR built by sorting. For checking the
// kernels where there is no GPU; the Go tests (operators/gpu_build_test.go)
// check them on the GPU against convert.Build.
//
//   kernels/emu/run.sh     (g++ 12 or newer)
#include "cuda_emu.h"

#include "../graph_build.cu"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <string>

static int failures = 0;
#define CHECK(cond, ...)                         \
    do {                                         \
        if (!(cond)) {                           \
            failures++;                          \
            std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            std::printf(__VA_ARGS__);            \
            std::printf("\n");                   \
        }                                        \
    } while (0)

static const unsigned TPB = 256;
// Grid-stride kernels get a few blocks, as many as their items need.
static unsigned grid_for(u64 items) { return (unsigned)std::max<u64>(1, std::min<u64>((items + TPB - 1) / TPB, 3)); }

static void scan(unsigned* buf, u64 count) {
    if (count == 0) return;
    u64 tiles = (count + SCAN_TILE - 1) / SCAN_TILE;
    if (tiles == 1) {
        emu::launch(scan_down, 1, TPB, buf, count, (const unsigned*)nullptr);
        return;
    }
    std::vector<unsigned> partial(tiles, 0xA5A5A5A5u);
    emu::launch(scan_reduce, (unsigned)tiles, TPB, (const unsigned*)buf, count, partial.data());
    scan(partial.data(), tiles);
    emu::launch(scan_down, (unsigned)tiles, TPB, buf, count, (const unsigned*)partial.data());
}

// radix_sort sorts count keys at *a (values at *va, or none) by their low
// bits, *b and *vb scratch; on return *a and *va hold the result.
static void radix_sort(u64** a, u64** b, u64** va, u64** vb, u64 count, int bits) {
    if (count <= 1 || bits == 0) return;
    u64 tiles = (count + RS_TILE - 1) / RS_TILE;
    std::vector<unsigned> counts(256 * tiles, 0xA5A5A5A5u);
    for (int shift = 0; shift < bits; shift += 8) {
        emu::launch(rs_hist, (unsigned)tiles, TPB, (const u64*)*a, count, (unsigned)shift, counts.data(), (unsigned)tiles);
        scan(counts.data(), 256 * tiles);
        emu::launch(rs_scatter, (unsigned)tiles, TPB, (const u64*)*a, (const u64*)(va ? *va : nullptr), count, (unsigned)shift,
                    (const unsigned*)counts.data(), (unsigned)tiles, *b, vb ? *vb : nullptr);
        std::swap(*a, *b);
        if (va) std::swap(*va, *vb);
    }
}

static void test_scan(std::mt19937_64& rng) {
    for (u64 n : {1ull, 2ull, 255ull, 4095ull, 4096ull, 4097ull, 9000ull, 20000ull}) {
        std::vector<unsigned> xs(n), want(n);
        for (auto& x : xs) x = rng() % 3;
        unsigned run = 0;
        for (u64 i = 0; i < n; i++) {
            want[i] = run;
            run += xs[i];
        }
        scan(xs.data(), n);
        CHECK(xs == want, "scan of %llu", n);
    }
}

static void test_radix(std::mt19937_64& rng) {
    for (u64 n : {0ull, 1ull, 2ull, 100ull, 4095ull, 4097ull, 13000ull}) {
        for (int bits : {1, 8, 13, 48, 64}) {
            for (bool vals : {false, true}) {
                std::vector<u64> k(n), v(n), kb(n), vbuf(n);
                for (u64 i = 0; i < n; i++) {
                    k[i] = bits == 64 ? rng() : rng() & ((1ull << bits) - 1);
                    if (i > 0 && rng() % 4 == 0) k[i] = k[rng() % i];
                    v[i] = i;
                }
                std::vector<u64> order(n);
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), [&](u64 x, u64 y) { return k[x] < k[y]; });
                std::vector<u64> wk(n), wv(n);
                for (u64 i = 0; i < n; i++) wk[i] = k[order[i]], wv[i] = order[i];
                u64 *a = k.data(), *b = kb.data(), *va = v.data(), *vb = vbuf.data();
                radix_sort(&a, &b, vals ? &va : nullptr, vals ? &vb : nullptr, n, bits);
                CHECK(std::equal(wk.begin(), wk.end(), a), "radix sort keys n=%llu bits=%d vals=%d", n, bits, vals);
                if (vals) CHECK(std::equal(wv.begin(), wv.end(), va), "radix sort stability n=%llu bits=%d", n, bits);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Whole builds.

template <typename T>
u64 host_ord(T v) {
    if constexpr (std::is_signed_v<T>) return (u64)(long long)v ^ (1ull << 63);
    return (u64)v;
}

struct Graph {
    std::vector<u64> keys;  // ordinals, in id order
    std::vector<long long> off, in_off;
    std::vector<unsigned> tgt, in_tgt;
    std::vector<double> w, in_w;
    u64 self = 0, merged = 0;
    std::vector<u64> stats;  // 64 histogram buckets, max, isolated
};

struct Opts {
    bool undirected, weighted, in;
};

// Reference: distinct keys sorted, entries sorted, duplicates merged with
// the minimum weight (-0 before +0).
template <typename T>
Graph reference(const std::vector<T>& src, const std::vector<T>& dst, const std::vector<double>& wt, Opts o) {
    Graph g;
    u64 m = src.size();
    for (u64 i = 0; i < m; i++) g.keys.push_back(host_ord(src[i])), g.keys.push_back(host_ord(dst[i]));
    std::sort(g.keys.begin(), g.keys.end());
    g.keys.erase(std::unique(g.keys.begin(), g.keys.end()), g.keys.end());
    auto id = [&](T k) { return (unsigned)(std::lower_bound(g.keys.begin(), g.keys.end(), host_ord(k)) - g.keys.begin()); };
    u64 n = g.keys.size();
    struct E {
        unsigned u, v;
        double w;
    };
    std::vector<E> es;
    for (u64 i = 0; i < m; i++) {
        unsigned u = id(src[i]), v = id(dst[i]);
        if (u == v) {
            g.self++;
            continue;
        }
        es.push_back({u, v, o.weighted ? wt[i] : 0});
        if (o.undirected) es.push_back({v, u, o.weighted ? wt[i] : 0});
    }
    auto less = [](const E& a, const E& b) { return a.u != b.u ? a.u < b.u : a.v < b.v; };
    std::stable_sort(es.begin(), es.end(), less);
    std::vector<E> out;
    for (auto& e : es) {
        if (!out.empty() && out.back().u == e.u && out.back().v == e.v) {
            g.merged++;
            double& b = out.back().w;
            if (e.w < b || (e.w == b && std::signbit(e.w))) b = e.w;
            continue;
        }
        out.push_back(e);
    }
    auto layout = [&](const std::vector<E>& xs, std::vector<long long>& off, std::vector<unsigned>& tgt, std::vector<double>& w) {
        off.assign(n + 1, 0);
        for (auto& e : xs) off[e.u + 1]++;
        for (u64 u = 0; u < n; u++) off[u + 1] += off[u];
        for (auto& e : xs) {
            tgt.push_back(e.v);
            if (o.weighted) w.push_back(e.w);
        }
    };
    layout(out, g.off, g.tgt, g.w);
    std::vector<bool> has_in(n);
    for (auto& e : out) has_in[e.v] = true;
    if (o.in && !o.undirected) {
        std::vector<E> rev;
        for (auto& e : out) rev.push_back({e.v, e.u, e.w});
        std::stable_sort(rev.begin(), rev.end(), less);
        layout(rev, g.in_off, g.in_tgt, g.in_w);
    }
    g.stats.assign(66, 0);
    for (u64 v = 0; v < n; v++) {
        u64 d = g.off[v + 1] - g.off[v];
        if (d == 0) {
            if (o.undirected || !has_in[v]) g.stats[65]++;
            continue;
        }
        g.stats[63 - __builtin_clzll(d)]++;
        g.stats[64] = std::max(g.stats[64], d);
    }
    return g;
}

template <typename T>
struct KeyKernels;
#define KEY_KERNELS_OF(T, S)                                                                   \
    template <>                                                                                \
    struct KeyKernels<T> {                                                                     \
        static constexpr auto range = gb_range_##S;                                            \
        static constexpr auto mark = gb_mark_##S;                                              \
        static constexpr auto endpoints = gb_endpoints_##S;                                    \
        static constexpr auto entries_bitmap = gb_entries_bitmap_##S;                          \
        static constexpr auto entries_sorted = gb_entries_sorted_##S;                          \
    };
KEY_KERNELS_OF(int, i32)
KEY_KERNELS_OF(long long, i64)
KEY_KERNELS_OF(unsigned, u32)
KEY_KERNELS_OF(u64, u64)

// The device build, in gpu_build.go's order. bitmap_limit stands for
// convert.DirectLimit.
template <typename T>
Graph device(const std::vector<T>& src, const std::vector<T>& dst, const std::vector<double>& wt, Opts o, u64 bitmap_limit,
             bool* used_bitmap) {
    using K = KeyKernels<T>;
    Graph g;
    u64 m = src.size();
    std::vector<u64> scalars(128, 0);
    u64 lo = 0, hi = 0;
    if (m > 0) {
        scalars[0] = ~0ull;
        scalars[1] = 0;
        emu::launch(K::range, grid_for(m), TPB, src.data(), dst.data(), m, scalars.data());
        lo = scalars[0], hi = scalars[1];
        if (o.weighted) {
            scalars[2] = ~0ull;
            emu::launch(gb_bad_weight, grid_for(m), TPB, wt.data(), m, 0, &scalars[2]);
            CHECK(scalars[2] == ~0ull, "bad weight reported at %llu", scalars[2]);
        }
    }
    std::vector<u64> words, distinct;
    std::vector<unsigned> rank;
    u64 n = 0;
    *used_bitmap = m == 0 || hi - lo < bitmap_limit;
    if (m == 0) {
    } else if (*used_bitmap) {
        u64 nw = (hi - lo) / 64 + 1;
        words.assign(nw, 0);
        emu::launch(K::mark, grid_for(m), TPB, src.data(), dst.data(), m, lo, words.data());
        rank.assign(nw + 1, 0);
        emu::launch(gb_popc, grid_for(nw), TPB, (const u64*)words.data(), nw, rank.data());
        scan(rank.data(), nw + 1);
        n = rank[nw];
        g.keys.assign(n, 0xA5A5A5A5A5A5A5A5ull);
        emu::launch(gb_bits_to_keys, grid_for(nw), TPB, (const u64*)words.data(), (const unsigned*)rank.data(), nw, g.keys.data());
    } else {
        u64 ends = 2 * m;
        std::vector<u64> a(ends), b(ends);
        emu::launch(K::endpoints, grid_for(m), TPB, src.data(), dst.data(), m, lo, a.data());
        u64 *pa = a.data(), *pb = b.data();
        radix_sort(&pa, &pb, nullptr, nullptr, ends, 64 - __builtin_clzll(hi - lo | 1) - ((hi - lo) == 0));
        std::vector<unsigned> flags(ends + 1, 0xA5A5A5A5u);
        emu::launch(gb_heads, grid_for(ends), TPB, (const u64*)pa, ends, flags.data());
        scan(flags.data(), ends + 1);
        n = flags[ends];
        distinct.assign(n, 0xA5A5A5A5A5A5A5A5ull);
        emu::launch(gb_compact, grid_for(ends), TPB, (const u64*)pa, (const unsigned*)flags.data(), ends, distinct.data());
        g.keys = distinct;
    }
    for (auto& k : g.keys) k += lo;
    int bits = 1;
    while (n > 0 && (1ull << bits) < n) bits++;  // bits.Len(n-1), at least 1
    u64 E = o.undirected ? 2 * m : m;
    std::vector<u64> keys(E, 0xA5A5A5A5A5A5A5A5ull), keys2(E);
    std::vector<u64> vals(o.weighted ? E : 0), vals2(o.weighted ? E : 0);
    if (m > 0) {
        scalars[3] = 0;
        double* v = o.weighted ? (double*)vals.data() : nullptr;
        const double* w = o.weighted ? wt.data() : nullptr;
        EntriesArgs<T> a{src.data(), dst.data(), w, nullptr, nullptr, keys.data(), v, &scalars[3], m, lo, 0,
                         (unsigned)bits, (int)o.undirected};
        if (*used_bitmap) {
            a.table = (const u64*)words.data();
            a.rank = (const unsigned*)rank.data();
            emu::launch(K::entries_bitmap, grid_for(m), TPB, a);
        } else {
            a.table = (const u64*)distinct.data();
            a.n = n;
            emu::launch(K::entries_sorted, grid_for(m), TPB, a);
        }
    }
    g.self = scalars[3];
    u64 *ka = keys.data(), *kb = keys2.data(), *va = vals.data(), *vb = vals2.data();
    radix_sort(&ka, &kb, o.weighted ? &va : nullptr, o.weighted ? &vb : nullptr, E, 2 * bits);
    u64 valid = E - g.self * (o.undirected ? 2 : 1);
    std::vector<unsigned> flags(valid + 1, 0xA5A5A5A5u);
    emu::launch(gb_heads, grid_for(valid), TPB, (const u64*)ka, valid, flags.data());
    scan(flags.data(), valid + 1);
    u64 k = flags[valid];
    g.merged = valid - k;
    u64* merged = kb;  // the other sort buffer
    g.tgt.assign(k, 0xA5A5A5A5u);
    u64 mask = (1ull << bits) - 1;
    emu::launch(gb_merge, grid_for(valid), TPB, (const u64*)ka, (const unsigned*)flags.data(), valid, mask, merged, g.tgt.data());
    if (o.weighted) {
        std::vector<u64> wk(k, ~0ull);
        emu::launch(gb_merge_weights, grid_for(valid), TPB, (const u64*)va, (const unsigned*)flags.data(), valid, wk.data());
        emu::launch(gb_weights_from_keys, grid_for(k), TPB, wk.data(), k);
        g.w.resize(k);
        std::memcpy(g.w.data(), wk.data(), k * 8);
    }
    g.off.assign(n + 1, -7);
    emu::launch(gb_offsets, grid_for(n + 1), TPB, (const u64*)merged, k, (unsigned)bits, n, g.off.data());
    std::vector<unsigned> marks;
    if (o.in && !o.undirected) {
        std::vector<u64> sw(k, 0xA5A5A5A5A5A5A5A5ull), scratch(k), cv(o.weighted ? k : 0), cvb(o.weighted ? k : 0);
        emu::launch(gb_swap_ends, grid_for(k), TPB, (const u64*)merged, k, (unsigned)bits, sw.data());
        if (o.weighted) std::memcpy(cv.data(), g.w.data(), k * 8);
        u64 *sa = sw.data(), *sb = scratch.data(), *ca = cv.data(), *cb = cvb.data();
        radix_sort(&sa, &sb, o.weighted ? &ca : nullptr, o.weighted ? &cb : nullptr, k, 2 * bits);
        g.in_tgt.assign(k, 0xA5A5A5A5u);
        emu::launch(gb_low_ends, grid_for(k), TPB, (const u64*)sa, k, mask, g.in_tgt.data());
        g.in_off.assign(n + 1, -7);
        emu::launch(gb_offsets, grid_for(n + 1), TPB, (const u64*)sa, k, (unsigned)bits, n, g.in_off.data());
        if (o.weighted) {
            g.in_w.resize(k);
            std::memcpy(g.in_w.data(), ca, k * 8);
        }
    } else if (!o.undirected) {
        marks.assign((n + 31) / 32, 0);
        emu::launch(gb_mark_targets, grid_for(k), TPB, (const unsigned*)g.tgt.data(), k, marks.data());
    }
    g.stats.assign(66, 0);
    if (n > 0)
        emu::launch(gb_degree_stats, grid_for(n), TPB, (const long long*)g.off.data(), n,
                    (const long long*)(g.in_off.empty() ? nullptr : g.in_off.data()),
                    (const unsigned*)(marks.empty() ? nullptr : marks.data()), g.stats.data());
    return g;
}

static bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 8) == 0);
}

template <typename T>
void test_builds(std::mt19937_64& rng, const char* type) {
    const double weights[] = {0.0, -0.0, 1, 2.5, -1, 3, 1e300};
    for (int round = 0; round < 14; round++) {
        u64 m = round == 0 ? 0 : round == 1 ? 1 : round < 4 ? 3 : 20 + rng() % (round < 10 ? 300 : 6000);
        u64 nv = 1 + rng() % (round < 10 ? 40 : 2000);
        bool sparse = round % 2 == 1;
        // Labels to key ordinals: dense near a random point (crossing zero
        // for signed types now and then), or spread over the type.
        std::vector<T> label(nv);
        std::map<T, bool> seen;
        T base = (T)(rng() >> 8);
        if (std::is_signed_v<T> && rng() % 2) base = (T)(-(long long)(nv / 2));
        for (u64 l = 0; l < nv; l++) {
            for (;;) {
                T k = sparse ? (T)rng() : (T)(base + (T)(l * 2 + rng() % 2));
                if (!seen[k]) {
                    seen[k] = true;
                    label[l] = k;
                    break;
                }
            }
        }
        std::vector<T> src(m), dst(m);
        std::vector<double> w(m);
        for (u64 i = 0; i < m; i++) {
            u64 u = (u64)(nv * std::pow((double)(rng() % 1000000) / 1e6, 2.5)), v = rng() % nv;
            if (rng() % 10 == 0) v = u;  // self loops
            if (i > 0 && rng() % 5 == 0) {  // repeats, either way round
                u64 j = rng() % i;
                src[i] = src[j], dst[i] = dst[j];
                if (rng() % 2) std::swap(src[i], dst[i]);
            } else {
                src[i] = label[u], dst[i] = label[v];
            }
            w[i] = weights[rng() % 7];
        }
        for (Opts o : {Opts{true, false, false}, Opts{true, true, false}, Opts{false, false, true}, Opts{false, true, true},
                       Opts{false, true, false}, Opts{false, false, false}}) {
            char name[128];
            std::snprintf(name, sizeof name, "%s round %d m=%llu sparse=%d undirected=%d weighted=%d in=%d", type, round, m, sparse,
                          o.undirected, o.weighted, o.in);
            Graph want = reference(src, dst, w, o);
            bool bitmap;
            Graph got = device(src, dst, w, o, sparse ? 1 : ~0ull, &bitmap);
            CHECK(got.keys == want.keys, "%s: keys (%zu vs %zu)", name, got.keys.size(), want.keys.size());
            CHECK(got.off == want.off, "%s: offsets", name);
            CHECK(got.tgt == want.tgt, "%s: targets", name);
            CHECK(same_bits(got.w, want.w), "%s: weights", name);
            CHECK(got.in_off == want.in_off, "%s: in offsets", name);
            CHECK(got.in_tgt == want.in_tgt, "%s: in sources", name);
            CHECK(same_bits(got.in_w, want.in_w), "%s: in weights", name);
            CHECK(got.self == want.self && got.merged == want.merged, "%s: self %llu merged %llu, want %llu %llu", name, got.self,
                  got.merged, want.self, want.merged);
            CHECK(got.stats == want.stats, "%s: degree statistics", name);
        }
    }
}

int main() {
    std::mt19937_64 rng(12345);
    test_scan(rng);
    test_radix(rng);
    test_builds<int>(rng, "int32");
    test_builds<long long>(rng, "int64");
    test_builds<unsigned>(rng, "uint32");
    test_builds<u64>(rng, "uint64");
    std::printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
