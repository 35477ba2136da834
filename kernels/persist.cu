// Persistent searches for graphs of high diameter (roads, meshes, grids):
// BFS and SSSP in one cooperative launch over every SM, levels (BFS) or
// steps (SSSP) separated by a grid-wide barrier on the device instead of a
// return to the host (operators/gpuop/persist.go says when they pay).
//
//   bfsp_search        BFS in steps between barriers: each block expands
//                      the vertices it pushed at the level before, kept in
//                      its shared memory (a kept pile), and its deal of
//                      the queue in global memory (entry i to block i mod
//                      blocks), where pushes past a block's share go, so a
//                      frontier of a few thousand vertices keeps every SM's
//                      load and atomic units busy instead of one's; then
//                      up to span − 1 more levels from its own kept pile
//                      without waiting for the other blocks, claiming each
//                      vertex with an atomicMin of (depth, parent): a
//                      block that ran ahead and claimed a vertex too deep
//                      is corrected by the one that reaches it first, which
//                      pushes it again (label-correcting, as ADDS is for
//                      SSSP). While a frontier has at most single_limit
//                      vertices, block 0 runs levels alone with
//                      __syncthreads between them (BFS-4K §5.5's single
//                      block) and the other blocks wait at the barrier.
//   bfsp_split         the labels' depths and parents, and the levels.
//   bfsp_ell           the ELL copy of a CSR of out-degrees up to 4 (roads,
//                      meshes, grids), whose rows a level finds from the
//                      vertex alone.
//   ssspp_<program>    SSSP by near-far Δ-stepping with both piles on the
//                      device: a step relaxes the near pile's vertices (and
//                      each block's kept pile, for up to span rounds in
//                      the block without waiting); when they empty, a split
//                      step moves the far pile's vertices under the next
//                      threshold to the near pile, which every block
//                      chooses alike from the barrier's sum (ADDS's manager,
//                      here in the barrier), and Δ adapts to the buckets'
//                      sizes.
//   chain_seed,        the chains' contraction (operators/gpuop/chains.go):
//   chain_bf,          Bellman-Ford over a small one (chain_seed, chain_bf)
//   ssspp_init_ends,   or ssspp_sssp_u32 over a large one from the source's
//   chain_fill         chain's ends, then every vertex's distance from its
//                      junction's or its chain's ends'.
//   persist_barrier_bench  the barrier alone: the floor of a level's cost.
//
// The entries carry each vertex's first edge and degree, read when it was
// pushed (or, in the ELL copy, known from it), so that a step starts from
// its edges. On the H200 a dependent access costs about 1 µs under a
// level's load (timed with clock64 in every block: a BFS level of the
// 2048² grid did 3.5 µs of work in its slowest block, 2.1 on average, and
// the barrier's fences, atomic and release 1 µs more; an SSSP step 6.2 µs
// of work), so a level is its chain: the targets (prefetched into L2 when
// the vertex was pushed), the claim, and the barrier; an SSSP step adds
// the entry's stamp and distance, the distance's atomic, and the stamp's
// for a push to the near pile.
//
// Kernels take the scalar arguments gpu.Launch packs (it has no struct
// parameters); the state they share with the host is BfspState and
// SsspState, mirrored in operators/gpuop/persist.go.
#include "frontier.cuh"
#include "vertex_program.cuh"

#include <cstddef>

#define PERSIST_THREADS 1024  // the BFS's largest block (the host launches 256: persist.go; the emulator's is 256)
// SSSP's largest block: half of an SM's threads, so that each has 128
// registers (at 64, SSSP's kernels spilled 300 bytes a thread to local
// memory, which its chain of dependent accesses then waited on too); the
// host launches 256 (persist.go). A step of the 2048² grid holds a few
// thousand entries, a few tens a block.
#ifndef PERSIST_SSSP_THREADS
#define PERSIST_SSSP_THREADS 512
#endif
#define PERSIST_NARROW 16     // a thread takes a vertex of up to this many edges alone
#define PERSIST_BATCH 4       // edges a thread loads together

// ---- the grid barrier ----

// GridBarrier is zero before a launch: a word for each parity of the
// generation (the steps passed so far), each summing over the launch its
// generations' arrivals (top 11 bits, wrapping) and the blocks'
// contributions (low 53 bits). A block adds its arrival and contribution in
// one atomic and polls the word until the generation's arrivals are all
// there: no last block publishes a release, as in cooperative groups' grid
// sync (a release word cost 0.6 µs more a barrier on the H200: 1.6 against
// 1.0 µs over 132 blocks). A parity's word is next added to two
// generations on, which no block reaches before every block has read it.
// The arrival field only has to tell a generation's count from the one
// before it (at most PERSIST_MAX_BLOCKS apart), and the contributions of a
// whole launch stay under 2^53 (BFS: each vertex counts at most twice).
struct GridBarrier {
    unsigned long long word[2];
    unsigned long long pad[30];
};

// What a waiting block does between polls: nothing on the GPU (a poll is an
// L2 round trip already); the emulator yields its OS thread.
#ifndef PERSIST_SPIN_PAUSE
#define PERSIST_SPIN_PAUSE()
#endif

#define ARRIVAL_SHIFT 53
#define ARRIVAL_MASK 0x7ffu
#define CONTRIB_MASK ((1ull << ARRIVAL_SHIFT) - 1)
#define PERSIST_MAX_BLOCKS 1024  // under ARRIVAL_MASK, and the BFS's kept entries under 2^KEPT_BITS (persist.go)

// A BFS contribution is its queue pushes shifted by KEPT_BITS plus the
// entries it keeps in shared memory (at most PERSIST_LOCAL a block).
#define KEPT_BITS 20

// A frontier entry: the vertex, its degree and first out-edge.
struct QEntry {
    vid_t v;
    unsigned degree;
    eid_t first;
};

// What a block keeps in shared memory across a step.
struct PersistShared {
    unsigned count;                 // entries this block pushed to the queue this step (the barrier's contribution)
    unsigned kept;                  // BFS: entries this block keeps in shared memory for the next level
    unsigned wide_count;            // entries of wide
    unsigned long long word;        // the barrier's sum
    unsigned long long prev[2];     // thread 0: each parity word's contributions at its last generation
    QEntry wide[PERSIST_THREADS];
};

// Clears the block's barrier bookkeeping at the start of a launch.
__device__ __forceinline__ void persist_start(PersistShared& sh)
{
    if (threadIdx.x == 0) {
        sh.count = sh.kept = 0;
        sh.prev[0] = sh.prev[1] = 0;
    }
    __syncthreads();
}

__device__ __forceinline__ unsigned long long volatile_load(const unsigned long long* p)
{
    return *(const volatile unsigned long long*)p;
}

__device__ __forceinline__ unsigned volatile_load(const unsigned* p) { return *(const volatile unsigned*)p; }

// The barrier's arrival and its polls, ordered as a release and an
// acquire at the GPU's scope (atom.acq_rel, ld.acquire): what a block
// wrote before arriving is visible to what every block reads after
// leaving, as __threadfence() on both sides would make it, without the
// two sequentially consistent fences (the timing run of a 4.8 µs grid
// level on the H200 gave 0.35 µs to the fence before the arrival, and
// 0.4 µs to what followed the barrier, its fence with the rest). The
// emulator's fences stand in for them.
__device__ __forceinline__ unsigned long long atomic_add_acq_rel(unsigned long long* p, unsigned long long v)
{
#ifdef __CUDA_ARCH__
    unsigned long long old;
    asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
    return old;
#else
    __threadfence();
    const unsigned long long old = atomicAdd(p, v);
    __threadfence();
    return old;
#endif
}

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p)
{
#ifdef __CUDA_ARCH__
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#else
    const unsigned long long v = volatile_load(p);
    __threadfence();
    return v;
#endif
}

// An entry pushed by another block this launch: read from L2 (ld.cg), never
// from an SM's L1, which may hold the line from before it was written.
__device__ __forceinline__ QEntry load_entry(const QEntry* p)
{
    const unsigned long long* w = (const unsigned long long*)p;
    unsigned long long head = __ldcg(w), first = __ldcg(w + 1);
    return QEntry{(vid_t)head, (unsigned)(head >> 32), (eid_t)first};
}

// Every thread of every block calls it with the same gen (the steps passed
// so far). Thread 0 adds the block's arrival and contribution (sh.count
// shifted by shift, plus sh.kept; it clears both for the next step) to the
// generation's word and polls it until every block has arrived; the sum of
// the contributions is the word's growth since the same parity's last
// generation. The arrival releases and the polls acquire (as cooperative
// groups' grid sync's fences do): every write before the barrier is
// visible to every read after it. Returns the sum.
__device__ __forceinline__ unsigned long long grid_barrier(GridBarrier* b, unsigned gen, PersistShared& sh,
                                                           unsigned shift = 0)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned long long add = (1ull << ARRIVAL_SHIFT) + ((unsigned long long)sh.count << shift) + sh.kept;
        const unsigned p = gen & 1, arrivals = (((gen >> 1) + 1) * gridDim.x) & ARRIVAL_MASK;
        sh.count = sh.kept = 0;  // the next step's counts start here, behind the final __syncthreads
        unsigned long long w = atomic_add_acq_rel(&b->word[p], add) + add;
        while ((unsigned)(w >> ARRIVAL_SHIFT) != arrivals) {
            PERSIST_SPIN_PAUSE();
            w = load_acquire(&b->word[p]);
        }
        sh.word = ((w & CONTRIB_MASK) - sh.prev[p]) & CONTRIB_MASK;
        sh.prev[p] = w & CONTRIB_MASK;
    }
    __syncthreads();
    return sh.word;
}

// Thread 0 of a block that has not yet arrived at generation gen's barrier
// waits until every other block has: what they read before arriving (the
// schedule, the far piles' counters) is read, and the block may change it.
// Its acquiring polls order their reads before its writes, as the
// barrier's do.
__device__ __forceinline__ void grid_wait_others(const GridBarrier* b, unsigned gen)
{
    const unsigned p = gen & 1, others = (((gen >> 1) + 1) * gridDim.x - 1) & ARRIVAL_MASK;
    while ((unsigned)(load_acquire(&b->word[p]) >> ARRIVAL_SHIFT) != others) PERSIST_SPIN_PAUSE();
}

// Where a step's pushes go: slots from a global counter less base (every
// block of a multi-block step), or, single, from the block's own count
// after base (block 0 alone: no global atomic).
struct Pusher {
    unsigned* global;
    unsigned base;
    bool single;
};

// Reserves a slot for each of the warp's lanes' N candidates that take
// (slot[j] for take[j]), with one atomic for the warp, and adds them to
// *block_count (shared memory; none where null). Every lane of the warp
// must call it.
template <int N>
__device__ __forceinline__ void warp_reserve(const bool (&take)[N], unsigned (&slot)[N], unsigned* block_count, Pusher p)
{
    unsigned total = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const unsigned m = __ballot_sync(FULL_MASK, take[j]);
        slot[j] = total + __popc(m & lanes_below());
        total += __popc(m);
    }
    if (total == 0) return;
    unsigned base = 0;
    if (lane_id() == 0) {
        const unsigned local = block_count ? atomicAdd(block_count, total) : 0;
        base = p.single ? p.base + local : atomicAdd(p.global, total) - p.base;
    }
    base = __shfl_sync(FULL_MASK, base, 0);
#pragma unroll
    for (int j = 0; j < N; j++) slot[j] += base;
}

// The frontier entry of the lane's slot in a step of count entries: block
// rank of active takes entries rank, rank + active, ..., so that a small
// frontier spreads over every block. valid says there is one.
__device__ __forceinline__ unsigned long long dealt(unsigned rank, unsigned active, unsigned long long slot0)
{
    return rank + (unsigned long long)active * (slot0 + threadIdx.x);
}

// ---- kept piles ----

// A step's pushes stay in the block that made them, in shared memory,
// while the block holds fewer than its keep (PERSIST_LOCAL at most), and
// that block expands them at the next step: the step then costs its loads,
// its atomics and the barrier, without the entry's round trip through L2
// and the slot's global atomic (two of a BFS level's five dependent
// accesses through the queue). Pushes past keep go to the queue (the near
// pile) in global memory, whose entries the next step deals round-robin
// to every block, so a block whose part of the frontier grows hands the
// rest to the others.
#define PERSIST_LOCAL 960u

// A block's kept entries: q[cur] holds the step's (in of them); the
// step's pushes claim slots of q[cur ^ 1] (out counts the claims, those
// at or past keep went to the queue instead).
struct KeptPile {
    unsigned in, out;
    QEntry q[2][PERSIST_LOCAL];
};

// The kept pile a multi-block step allows a block: keep when it is not
// 0, else four times the block's fair share of the step's total entries
// and at least PERSIST_KEEP_MIN; at most PERSIST_LOCAL. Within a step a
// block's entries cost one round of latencies however many there are up
// to its threads, but each one's loads and atomics go through its own SM:
// a block holding hundreds while the others hold tens would make the SM's
// throughput, not the latencies, bound the step (keeping all, up to 960,
// made the 2048² grid's BFS 15.8 ms against 13.1 keeping 256).
#ifndef PERSIST_KEEP_MIN
#define PERSIST_KEEP_MIN 256u
#endif

__device__ __forceinline__ unsigned kept_limit(unsigned long long total, unsigned active, unsigned keep)
{
    if (keep != 0) return min(keep, PERSIST_LOCAL);
    const unsigned long long share = 4 * ((total + active - 1) / active);
    return (unsigned)max((unsigned long long)PERSIST_KEEP_MIN, min(share, (unsigned long long)PERSIST_LOCAL));
}

// Writes each of the lane's N taken entries to a slot of the block's next
// kept pile (out) while it holds fewer than keep, the rest that admit(j)
// lets through to the queue (pile, of cap entries: a slot past it is
// counted, not written; the BFS checks its count after the barrier) at
// slots from spill, counted in sh.count. Every lane of the warp must call
// it.
template <int N, typename Admit>
__device__ __forceinline__ void push_kept(const bool (&take)[N], const QEntry (&ent)[N], QEntry* out, unsigned keep,
                                          QEntry* pile, unsigned cap, Pusher spill, KeptPile& L, PersistShared& sh,
                                          Admit admit)
{
    unsigned slot[N], qslot[N];
    bool spilled[N];
    warp_reserve(take, slot, &L.out, Pusher{nullptr, 0, true});
#pragma unroll
    for (int j = 0; j < N; j++) spilled[j] = take[j] && slot[j] >= keep && admit(j);
    warp_reserve(spilled, qslot, &sh.count, spill);
#pragma unroll
    for (int j = 0; j < N; j++) {
        if (spilled[j]) {
            if (qslot[j] < cap) pile[qslot[j]] = ent[j];
        } else if (take[j] && slot[j] < keep) {
            out[slot[j]] = ent[j];
        }
    }
}

// Ends a step's pushes: the block keeps min(out, keep) entries (L.in and
// sh.kept, the barrier's contribution), and the next step's claims start
// at 0. Every thread of the block calls it after the step.
__device__ __forceinline__ void kept_close(KeptPile& L, unsigned keep, PersistShared& sh)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        L.in = sh.kept = min(L.out, keep);
        L.out = 0;
    }
    __syncthreads();
}

// ---- BFS ----

// The search's state, zero before the launch but for what bfsp_init sets.
// Mirrored by operators/gpuop/persist.go (bfspState*).
struct BfspState {
    GridBarrier bar;                // 256 bytes
    unsigned tail;                  // entries in the queue (every push to it adds to it)
    unsigned pad0[31];
    unsigned head, level;           // where block 0's single-block run left the search
    unsigned levels;                // the search's levels (bfsp_split)
    unsigned single_runs, single_levels, multi_levels;  // multi_levels: multi-block steps
    unsigned local_levels;          // multi-block steps that read no queue entry: every block's input was its own
    unsigned gathers;               // times the blocks' kept entries went to the queue for a single-block run
    unsigned overflow;              // 1: the queue's pushes passed its cap and the search stopped (span > 1 only)
    unsigned phases;                // levels the blocks ran in multi-block steps, summed over the blocks
    unsigned pad1[22];
};

static_assert(sizeof(BfspState) == 512 && offsetof(BfspState, levels) == 392 && offsetof(BfspState, multi_levels) == 404 &&
                  offsetof(BfspState, gathers) == 412 && offsetof(BfspState, overflow) == 416 &&
                  offsetof(BfspState, phases) == 420,
              "BfspState: persist.go's offsets");

// A vertex's label: its depth in the high 32 bits and its parent in the
// low, so that one atomicMin claims the vertex and names its parent: where
// a step spans several levels, a block may claim a vertex deeper than it
// is (it ran ahead of the block that reaches it first), and the block that
// lowers it later must set its parent with its depth. Unvisited is all
// ones: depth -1 and parent GPIPE_NO_VERTEX, as bfsp_split writes them.
#define BFS_UNLABELED 0xffffffffffffffffull

__device__ __forceinline__ unsigned long long bfs_label(unsigned depth, vid_t parent)
{
    return (unsigned long long)depth << 32 | parent;
}

// targets is the CSR's, or with width the ELL copy (bfsp_ell): a vertex
// v's edges at v · width, so that a pushed vertex's entry needs no read
// of its offsets, which would otherwise be the level's one access to
// DRAM left after the prefetch. span is the levels a block runs from its
// own kept pile between two barriers; cap the queue's entries.
struct BfsArgs {
    ReadOnly<eid_t> offsets;
    ReadOnly<vid_t> targets;
    unsigned long long* label;
    QEntry* queue;
    BfspState* st;
    unsigned width, span, cap;
};

// The depth a level expands entry e from: the level's while levels have
// run in lockstep (every entry's vertex has the level's depth: at span 1,
// and until the first multi-block step past it), else the vertex's label
// now, read beside its targets. A block may have lowered it since e was
// pushed; that block pushed it again, and this expansion only repeats its
// work.
__device__ __forceinline__ unsigned bfs_depth(const BfsArgs& a, const QEntry& e, int level, bool lockstep)
{
    if (lockstep || e.degree == 0) return (unsigned)level;
    return (unsigned)(__ldcg(&a.label[e.v]) >> 32);
}

// Claims the lane's N targets w[j] (GPIPE_NO_VERTEX: none) at depth d
// from parent from: won[j] where that lowers w[j]'s depth (its first
// visit, or a block lowering a depth claimed ahead of it), which pushes
// it with entry ent[j]: its degree and first edge from the offsets, or
// from w[j] alone in the ELL copy. The batch's atomics issue together,
// in one branch for the batch, before any result is used, and the offsets
// load after them: an atomic in its own branch (`has && claim(w)`) made
// the compiler copy its result out of the branch, waiting for it before
// the next one, so a level's chain was the row, the offsets and two or
// three atomics one after another (on the H200 a dependent L2 load takes
// 150 ns, a 64-bit atomicMin 275: scripts/latency-bench.cu;
// luxembourg_osm's levels took 2.1–2.4 µs). A lane without a vertex j
// min()s all ones into from's own label instead, which changes nothing.
template <int N>
__device__ __forceinline__ void bfs_claim(const BfsArgs& a, const vid_t (&w)[N], unsigned d, vid_t from,
                                          QEntry (&ent)[N], bool (&won)[N])
{
    const unsigned long long mine = bfs_label(d, from);
    unsigned long long old[N];
    eid_t lo[N], hi[N];
    bool any = false;
#pragma unroll
    for (int j = 0; j < N; j++) {
        old[j] = BFS_UNLABELED;
        any = any || w[j] != GPIPE_NO_VERTEX;
    }
    if (any) {  // one branch for the batch; no vertex: a no-op on from's own label
#pragma unroll
        for (int j = 0; j < N; j++) {
            const bool has = w[j] != GPIPE_NO_VERTEX;
            old[j] = atomicMin(&a.label[has ? w[j] : from], has ? mine : BFS_UNLABELED);
        }
    }
#pragma unroll
    for (int j = 0; j < N; j++) {
        lo[j] = hi[j] = 0;
        if (w[j] != GPIPE_NO_VERTEX && a.width == 0) {
            lo[j] = a.offsets[w[j]];
            hi[j] = a.offsets[w[j] + 1];
        }
    }
#pragma unroll
    for (int j = 0; j < N; j++) {
        won[j] = w[j] != GPIPE_NO_VERTEX && (unsigned)(old[j] >> 32) > d;
        ent[j] = a.width ? QEntry{w[j], a.width, (eid_t)w[j] * a.width} : QEntry{w[j], (unsigned)(hi[j] - lo[j]), lo[j]};
    }
}

// How a level runs: its pushes go to the block's next kept list while it
// holds fewer than keep, then to the queue; prefetch asks L2 for each
// pushed vertex's first targets, which the next level reads first;
// lockstep says every entry has the level's depth (bfs_depth).
struct BfsPush {
    QEntry* out;
    unsigned keep;
    bool prefetch, lockstep;
};

extern "C" __global__ void bfsp_init(const eid_t* offsets, unsigned long long* label, QEntry* queue, BfspState* st,
                                     vid_t source, unsigned width)
{
    label[source] = bfs_label(0, source);
    queue[0] = width ? QEntry{source, width, (eid_t)source * width}
                     : QEntry{source, (unsigned)(offsets[source + 1] - offsets[source]), offsets[source]};
    st->tail = 1;
}

// The ELL copy of a CSR whose out-degrees are at most width (persist.go
// makes one up to PERSIST_BATCH wide): vertex v's
// targets at ell[v · width, v · width + degree), the rest of its row
// GPIPE_NO_VERTEX.
extern "C" __global__ void bfsp_ell(const eid_t* offsets, const vid_t* targets, vid_t* ell, unsigned long long n,
                                    unsigned width)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long v = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        const eid_t lo = offsets[v], hi = offsets[v + 1];
        for (unsigned j = 0; j < width; j++) ell[v * width + j] = lo + j < hi ? targets[lo + j] : GPIPE_NO_VERTEX;
    }
}

// The labels' depths and parents, and the search's levels (the deepest
// depth + 1) in st->levels, zero before it. Blocks of at most 1024
// threads.
extern "C" __global__ void bfsp_split(const unsigned long long* label, int* depth, vid_t* parent, BfspState* st,
                                      unsigned long long n)
{
    __shared__ unsigned levels;
    if (threadIdx.x == 0) levels = 0;
    __syncthreads();
    unsigned most = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long v = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        const unsigned long long l = label[v];
        depth[v] = (int)(l >> 32);
        parent[v] = (vid_t)l;
        if (l != BFS_UNLABELED) most = max(most, (unsigned)(l >> 32) + 1);
    }
    most = __reduce_max_sync(FULL_MASK, most);
    if (lane_id() == 0 && most > 0) atomicMax(&levels, most);
    __syncthreads();
    if (threadIdx.x == 0 && levels > 0) atomicMax(&st->levels, levels);
}

__device__ __forceinline__ void prefetch_l2(const void* p)
{
#ifdef __CUDA_ARCH__
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

// Pushes the lane's N won vertices (entry ent[j]) to the kept pile or the
// queue (push_kept), and asks L2 for their targets. Every lane of the
// warp must call it.
template <int N>
__device__ __forceinline__ void bfs_push(const BfsArgs& a, const bool (&won)[N], const QEntry (&ent)[N], BfsPush p,
                                         KeptPile& L, PersistShared& sh)
{
    push_kept(won, ent, p.out, p.keep, a.queue, a.cap, Pusher{&a.st->tail, 0, false}, L, sh, [](int) { return true; });
#pragma unroll
    for (int j = 0; j < N; j++)
        if (won[j] && p.prefetch && ent[j].degree > 0) prefetch_l2(address(a.targets, ent[j].first));
}

// Claims the targets of the lane's entry (degree at most PERSIST_NARROW;
// 0 for none) one deeper than it, PERSIST_BATCH edges at a time, their
// loads and claims issued together (bfs_claim), and pushes the vertices
// it claims.
__device__ __forceinline__ void bfs_narrow(const BfsArgs& a, const QEntry& e, int level, BfsPush p, KeptPile& L,
                                           PersistShared& sh)
{
    const unsigned widest = __reduce_max_sync(FULL_MASK, e.degree), d = bfs_depth(a, e, level, p.lockstep) + 1;
    for (unsigned k = 0; k < widest; k += PERSIST_BATCH) {
        vid_t w[PERSIST_BATCH];
        QEntry ent[PERSIST_BATCH];
        bool won[PERSIST_BATCH];
#pragma unroll
        for (int j = 0; j < PERSIST_BATCH; j++)
            w[j] = k + j < e.degree ? a.targets[e.first + k + j] : GPIPE_NO_VERTEX;
        bfs_claim(a, w, d, e.v, ent, won);
        bfs_push(a, won, ent, p, L, sh);
    }
}

// The block's wide entries (sh.wide), a warp each, 32 edges at a time.
__device__ __forceinline__ void bfs_wide(const BfsArgs& a, int level, BfsPush p, KeptPile& L, PersistShared& sh)
{
    const unsigned wides = sh.wide_count;
    for (unsigned k = threadIdx.x >> 5; k < wides; k += blockDim.x >> 5) {
        const QEntry e = sh.wide[k];
        const unsigned d = bfs_depth(a, e, level, p.lockstep) + 1;
        for (unsigned base = 0; base < e.degree; base += 32) {
            const unsigned j = base + lane_id();
            const vid_t w[1] = {j < e.degree ? a.targets[e.first + j] : GPIPE_NO_VERTEX};
            QEntry ent[1];
            bool won[1];
            bfs_claim(a, w, d, e.v, ent, won);
            bfs_push(a, won, ent, p, L, sh);
        }
    }
}

// One level, this block's share (rank of active blocks): its kept entries
// (L.q[cur]) and its deal of the queue's [head, head + count), a thread an
// entry, the wide ones after to warps. The rounds are the same for every
// thread of the block. Leaves the kept pushes in L.q[cur ^ 1] and their
// number in L.in and sh.kept.
__device__ void bfs_level(const BfsArgs& a, unsigned head, unsigned count, int level, unsigned rank, unsigned active,
                          BfsPush p, KeptPile& L, unsigned cur, PersistShared& sh)
{
    const unsigned local = L.in, dealt_here = count > rank ? (count - rank - 1) / active + 1 : 0;
    const QEntry* in = L.q[cur];
    p.out = L.q[cur ^ 1];
    for (unsigned base = 0; base < local + dealt_here; base += blockDim.x) {
        if (threadIdx.x == 0) sh.wide_count = 0;
        __syncthreads();
        const unsigned i = base + threadIdx.x;
        QEntry e{0, 0, 0};
        if (i < local) e = in[i];
        else if (i < local + dealt_here) e = load_entry(&a.queue[head + rank + (unsigned long long)active * (i - local)]);
        if (e.degree > PERSIST_NARROW) {
            sh.wide[atomicAdd(&sh.wide_count, 1u)] = e;
            e.degree = 0;
        }
        bfs_narrow(a, e, level, p, L, sh);
        if (a.width == 0) {  // an ELL row is narrow
            __syncthreads();
            bfs_wide(a, level, p, L, sh);
        }
        __syncthreads();
    }
    kept_close(L, p.keep, sh);
}

// A multi-block step: the level from the block's kept entries and its deal
// of the queue's [head, tail), then up to span − 1 levels more from its own
// kept pile alone, while it keeps any (a grid's or road's frontier moves
// through the same region of vertices from level to level, so a block's
// part of it stays its own), their entries' depths read from the labels.
// Returns the levels it ran.
__device__ unsigned bfs_step(const BfsArgs& a, unsigned head, unsigned tail, int level, BfsPush p, KeptPile& L,
                             unsigned& cur, PersistShared& sh)
{
    bfs_level(a, head, tail - head, level, blockIdx.x, gridDim.x, p, L, cur, sh);
    cur ^= 1;
    unsigned levels = 1;
    p.lockstep = false;
    for (; levels < a.span && L.in > 0; levels++) {
        bfs_level(a, 0, 0, level, blockIdx.x, gridDim.x, p, L, cur, sh);
        cur ^= 1;
    }
    return levels;
}

// The block's kept entries to the queue (slots from its tail, counted in
// sh.count), before a level that block 0 runs alone reads them there.
__device__ void bfs_flush(const BfsArgs& a, KeptPile& L, unsigned cur, PersistShared& sh)
{
    __shared__ unsigned at;
    const unsigned n = L.in;
    if (threadIdx.x == 0 && n > 0) {
        at = atomicAdd(&a.st->tail, n);
        sh.count += n;
    }
    __syncthreads();
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
        if (at + i < a.cap) a.queue[at + i] = L.q[cur][i];
    __syncthreads();
    if (threadIdx.x == 0) L.in = 0;
}

// Block 0 alone runs levels from the queue's [head, tail) at level while
// the next frontier has at most limit entries, keeping them in its shared
// memory (what does not fit goes to the queue), its entries' depths the
// level's or their labels' as p.lockstep says. Then it puts its kept
// entries in the queue after tail, so that the next level deals the whole
// frontier to every block, and leaves where it stopped in st and its queue
// pushes in sh.count (the barrier's contribution).
__device__ void bfs_single(const BfsArgs& a, unsigned head, unsigned tail, int level, unsigned limit, BfsPush p,
                           KeptPile& L, PersistShared& sh)
{
    unsigned levels = 0, cur = 0;
    p.keep = PERSIST_LOCAL;
    for (;;) {
        const unsigned before = sh.count;
        bfs_level(a, head, tail - head, level, 0, 1, p, L, cur, sh);
        const unsigned pushed = sh.count - before, kept = L.in;
        __syncthreads();  // every thread has read sh.count before the next level adds to it
        head = tail;
        tail += pushed;
        cur ^= 1;
        level++;
        levels++;
        if (pushed + kept == 0 || pushed + kept > limit || tail > a.cap) break;
    }
    bfs_flush(a, L, cur, sh);
    if (threadIdx.x == 0) {
        BfspState* st = a.st;
        st->head = head;
        st->level = (unsigned)level;
        st->single_runs++;
        st->single_levels += levels;
        sh.kept = 0;
    }
}

// The whole search, into label (all BFS_UNLABELED before bfsp_init).
// single_limit is the largest frontier block 0 takes alone; keep, when not
// 0, what a block keeps in shared memory from a multi-block level to the
// next (else kept_limit's rule); prefetch, not 0, asks L2 for the pushed
// vertices' targets; width, when not 0, says targets is the ELL copy of
// that width; span (at least 1) is the levels a multi-block step may run;
// cap is the queue's entries: at span 1 each vertex enters it once, past
// that a vertex whose depth a block lowers enters it again, and where the
// pushes pass cap the search stops with st->overflow set (the host runs it
// again at span 1). The grid must be resident at once (a cooperative
// launch) and at most PERSIST_MAX_BLOCKS.
extern "C" __global__ void __launch_bounds__(PERSIST_THREADS, 1) bfsp_search(
    const eid_t* offsets, const vid_t* targets, unsigned long long* label, QEntry* queue, BfspState* st,
    unsigned single_limit, unsigned keep, unsigned prefetch, unsigned width, unsigned span, unsigned cap)
{
    __shared__ PersistShared sh;
    __shared__ KeptPile L;
    const BfsArgs a{offsets, targets, label, queue, st, width, max(span, 1u), cap};
    unsigned head = 0, tail = 1, gen = 0, cur = 0;
    unsigned long long kept = 0;  // entries all blocks keep for the next level
    unsigned multi = 0, local = 0, gathers = 0, phases = 0;  // the state's counts, written at the end: off the levels' path
    int level = 0;          // in lockstep, the next level's depth
    bool lockstep = true;   // every entry's depth is level's: until a step runs past one level (span > 1)
    persist_start(sh);
    if (threadIdx.x == 0) L.in = L.out = 0;
    __syncthreads();
    while (kept + (tail - head) > 0 && tail <= a.cap) {
        const unsigned long long total = kept + (tail - head);
        const bool single = total <= single_limit;
        if (single && kept > 0) {
            // Every block's kept entries to the queue, for block 0's run.
            bfs_flush(a, L, cur, sh);
            tail += (unsigned)(grid_barrier(&st->bar, gen++, sh, KEPT_BITS) >> KEPT_BITS);
            kept = 0;
            gathers++;
            continue;
        }
        const BfsPush p{nullptr, kept_limit(total, gridDim.x, keep), prefetch != 0, lockstep};
        if (!single) {
            phases += bfs_step(a, head, tail, level, p, L, cur, sh);
            lockstep = lockstep && a.span == 1;
        } else if (blockIdx.x == 0) {
            bfs_single(a, head, tail, level, single_limit, p, L, sh);
        }
        const unsigned long long sum = grid_barrier(&st->bar, gen++, sh, KEPT_BITS);
        if (single) {
            head = volatile_load(&st->head);
            level = (int)volatile_load(&st->level);
        } else {
            multi++;
            local += head == tail;
            head = tail;
            level++;
        }
        tail += (unsigned)(sum >> KEPT_BITS);
        kept = sum & ((1ull << KEPT_BITS) - 1);
    }
    if (threadIdx.x == 0) atomicAdd(&st->phases, phases);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        st->multi_levels = multi;
        st->local_levels = local;
        st->gathers = gathers;
        st->overflow = tail > a.cap;
    }
}

// ---- SSSP ----

#define SCHED_NEAR 0
#define SCHED_SPLIT 1
#define SCHED_DONE 2

// The far piles rotate over three buffers by epoch: epoch e's near steps
// push to pile e, split e reads it and keeps what stays far in pile e + 1,
// and pile e + 2's counters, last read at split e - 1 and next pushed to at
// split e + 1, are cleared by block 0 in epoch e's first step: no step's
// pushes wait for a clear, and no block reads a count that another clears
// (between the read and the clear there is a barrier, or, in a
// single-block run, block 0 waits for the others' arrival at it).
#define FAR_PILES 3

// The schedule of an SSSP search: what the next step does. Every block
// keeps its own copy and advances it the same way after each barrier
// (sched_next); block 0's single-block run leaves its copy in the state.
struct SsspSched {
    double threshold;    // the bucket's end: a vertex of lower priority is near
    double below;        // the last bucket's end: vertices under it are expanded
    double delta;        // the bucket's width
    unsigned step;       // steps so far, from 1: near entries for this step carry stamp == step
    unsigned epoch;      // splits so far: far pile epoch % FAR_PILES takes the far pushes
    unsigned count;      // entries of this step's input (near, or far for a split)
    unsigned kind;       // SCHED_NEAR, SCHED_SPLIT or SCHED_DONE
    unsigned fresh;      // the epoch's first step: block 0 clears pile epoch + 2
    unsigned near_base;  // near_tail when the step starts (multi-block steps add to it)
};

// Mirrored by operators/gpuop/persist_sssp.go (ssspState*): zero before
// the launch but for what ssspp_init sets.
struct SsspState {
    GridBarrier bar;                         // 0
    unsigned near_tail;                      // 256: near entries pushed by multi-block steps, all told
    unsigned pad0[31];
    unsigned far_tail[FAR_PILES];            // 384: the far piles' lengths
    unsigned pad1[29];
    unsigned long long far_min[FAR_PILES];   // 512: the lowest value pushed to each far pile
    unsigned long long pad2[13];
    SsspSched sched;                         // 640: the schedule (48 bytes)
    double delta_min, delta_max;             // 688: Δ's bounds (equal: fixed)
    unsigned adapt_low, adapt_high;          // 704: a new bucket under low entries doubles Δ, over high halves it
    unsigned near_steps, split_steps, single_runs, single_steps;  // 712
    unsigned long long relaxed;              // 728: edges relaxed
    unsigned delta_changes;                  // 736
    unsigned rounds;                         // 740: near rounds past the steps' first, summed over the blocks
    unsigned pad3[6];                        // to 768
};

static_assert(sizeof(SsspSched) == 48 && sizeof(SsspState) == 768, "SsspState: persist_sssp.go's offsets");
static_assert(offsetof(SsspState, sched) == 640 && offsetof(SsspState, near_steps) == 712 &&
                  offsetof(SsspState, relaxed) == 728 && offsetof(SsspState, delta_changes) == 736 &&
                  offsetof(SsspState, rounds) == 740,
              "SsspState: persist_sssp.go's offsets");

template <typename P>
struct SsspArgs {
    ReadOnly<eid_t> offsets;
    ReadOnly<vid_t> targets;
    EdgeArray<typename P::Weight> weight;
    typename P::Value* dist;
    unsigned* stamp;   // the step that expands the vertex's latest near pile entry (kept entries carry none)
    unsigned* fstamp;  // 1 + the epoch of the far pile that holds the vertex: it only grows (a relaxation's atomicMax)
    QEntry* near[2];
    vid_t* far[FAR_PILES];
    SsspState* st;
};

template <typename P>
__device__ __forceinline__ double sssp_priority(unsigned long long v)
{
    return P::priority((typename P::Value)v, 0.0);
}

// The schedule after a step that pushed `pushed` near entries to the near
// pile (multi: by every block, through near_tail) and kept `kept` in the
// blocks' kept piles: another near step (whose count is the pile's
// entries, dealt to the blocks), a split (when both are empty and the far
// pile is not: the next threshold is Δ past the lowest far value, skipping
// empty buckets), or done. After a split, Δ doubles when the new bucket is
// smaller than adapt_low entries and halves when it is larger than
// adapt_high, within its bounds: the bucket keeps the GPU busy without
// re-relaxing much (ADDS's dynamic Δ). It reads
// the far pile's counters, which no block changes between the barrier and
// the next step's pushes (a single-block run that follows waits for every
// block's arrival before its next epoch clears the pile: sssp_single), and
// writes nothing: every block's thread 0 runs it after each barrier and
// gets the same schedule.
template <typename P>
__device__ void sched_next(SsspSched& s, unsigned pushed, unsigned kept, bool multi, const SsspState* st)
{
    const bool split = s.kind == SCHED_SPLIT;
    const unsigned bucket = pushed + kept;
    s.step++;
    s.fresh = split;
    if (multi) s.near_base += pushed;
    if (split) {
        s.epoch++;
        if (bucket < st->adapt_low) s.delta = fmin(s.delta * 2, st->delta_max);
        else if (bucket > st->adapt_high) s.delta = fmax(s.delta / 2, st->delta_min);
    }
    if (bucket > 0) {
        s.kind = SCHED_NEAR;
        s.count = pushed;
        return;
    }
    const unsigned far = volatile_load(&st->far_tail[s.epoch % FAR_PILES]);
    if (far == 0) {
        s.kind = SCHED_DONE;
        s.count = 0;
        return;
    }
    const double lowest = sssp_priority<P>(volatile_load(&st->far_min[s.epoch % FAR_PILES]));
    s.below = s.threshold;
    s.threshold = fmax(s.threshold, lowest) + s.delta;
    // Δ under the values' rounding: every far vertex is near (+Inf).
    if (!(s.threshold > lowest)) s.threshold = __longlong_as_double(0x7ff0000000000000ll);
    s.kind = SCHED_SPLIT;
    s.count = far;
}

// What block 0's thread 0 counts of a search, in registers (a global
// add each step would put an L2 round trip on block 0's path, which every
// block then waits for at the barrier) until its end.
struct SsspCounts {
    unsigned near_steps, split_steps, delta_changes, single_runs, single_steps;
};

// Counts a step of kind `was` that led to schedule s, where a Δ change
// shows.
__device__ __forceinline__ void sched_count(SsspCounts& c, unsigned was, double delta, const SsspSched& s)
{
    if (was == SCHED_NEAR) c.near_steps++;
    else c.split_steps++;
    if (s.delta != delta) c.delta_changes++;
}

// Block 0's thread 0 at the start of an epoch's first step: pile
// epoch + 2 empty again (FAR_PILES says why this is safe).
__device__ __forceinline__ void sched_clear_pile(const SsspSched& s, SsspState* st)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || !s.fresh) return;
    const unsigned pile = (s.epoch + 2) % FAR_PILES;
    st->far_tail[pile] = 0;
    st->far_min[pile] = ~0ull;
}

// Where a step's near pushes go: the block's next kept pile (out) while it
// holds fewer than keep, then the next near pile through spill.
struct NearPush {
    QEntry* out;
    unsigned keep;
    Pusher spill;
};

// Pushes the lane's N near vertices take: to the block's kept pile, each
// improvement its own entry (a block may expand it in a later round of
// the same step, so no mark may say it is still to come), or past keep
// to the next near pile once a step (the stamp: an entry there waits for
// the next step, which reads the vertex's value then).
template <typename P, int N>
__device__ __forceinline__ void sssp_push_near(const SsspArgs<P>& a, const SsspSched& s, const bool (&take)[N],
                                               const vid_t (&w)[N], const eid_t (&lo)[N], const eid_t (&hi)[N],
                                               NearPush np, KeptPile& L, PersistShared& sh)
{
    QEntry ent[N];
#pragma unroll
    for (int j = 0; j < N; j++) ent[j] = QEntry{w[j], (unsigned)(hi[j] - lo[j]), lo[j]};
    push_kept(take, ent, np.out, np.keep, a.near[(s.step + 1) & 1], 0xffffffffu, np.spill, L, sh,
              [&](int j) { return atomicExch(&a.stamp[w[j]], s.step + 1) != s.step + 1; });
}

template <typename P, int N>
__device__ __forceinline__ void sssp_push_far(const SsspArgs<P>& a, unsigned pile, const bool (&take)[N], const vid_t (&w)[N])
{
    unsigned slot[N];
    warp_reserve(take, slot, (unsigned*)nullptr, Pusher{&a.st->far_tail[pile], 0, false});
    vid_t* out = a.far[pile];
#pragma unroll
    for (int j = 0; j < N; j++)
        if (take[j]) out[slot[j]] = w[j];
}

// Relaxes up to N edges from u (value du) starting at edge e0, of which n
// are real (0 to N), and pushes the improved targets: near (under the
// threshold: sssp_push_near) or far (once an epoch: fstamp, with the far
// pile's lowest value). Its atomics are issued together, in one branch
// for the batch, the targets' offsets read after them, before they are
// known to be needed (bfs_claim says why): a lane without an edge j but
// with others improves u's own value by none(), which changes nothing;
// so do its far marks (an atomicMax of 0 on u's), which, as the marks only
// grow, stand for the exchange they were. Every lane of the warp must call
// it.
template <typename P, int N>
__device__ __forceinline__ void sssp_relax(const SsspArgs<P>& a, const SsspSched& s, vid_t u, typename P::Value du,
                                           eid_t e0, unsigned n, NearPush np, KeptPile& L, PersistShared& sh)
{
    typedef typename P::Value V;
    const unsigned pile = s.epoch % FAR_PILES;
    vid_t w[N];
    V nd[N], old[N];
    eid_t lo[N], hi[N];
    bool near[N], far[N];
#pragma unroll
    for (int j = 0; j < N; j++) {
        w[j] = (unsigned)j < n ? a.targets[e0 + j] : GPIPE_NO_VERTEX;
        nd[j] = (unsigned)j < n ? P::compute(du, a.weight(e0 + j)) : P::none();
    }
#pragma unroll
    for (int j = 0; j < N; j++) old[j] = P::none();
    if (n > 0) {  // one branch for the batch (an idle lane makes no atomic)
#pragma unroll
        for (int j = 0; j < N; j++) {
            const bool has = w[j] != GPIPE_NO_VERTEX;
            old[j] = P::atomic_improve(&a.dist[has ? w[j] : u], has ? nd[j] : P::none());
        }
    }
#pragma unroll
    for (int j = 0; j < N; j++) {
        const bool has = w[j] != GPIPE_NO_VERTEX;
        lo[j] = has ? a.offsets[w[j]] : 0;
        hi[j] = has ? a.offsets[w[j] + 1] : 0;
    }
    bool any_far = false;
    unsigned long long lowest = ~0ull;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const bool improved = w[j] != GPIPE_NO_VERTEX && P::better(nd[j], old[j]);
        near[j] = improved && P::priority(nd[j], 0.0) < s.threshold;
        far[j] = improved && !near[j];
        if (far[j]) lowest = min(lowest, (unsigned long long)nd[j]);
        any_far = any_far || far[j];
    }
    if (any_far) {  // the lane's lowest far value once, its far marks together (a no-op on u's for the rest)
        atomicMin(&a.st->far_min[pile], lowest);
        unsigned was[N];
#pragma unroll
        for (int j = 0; j < N; j++) was[j] = atomicMax(&a.fstamp[far[j] ? w[j] : u], far[j] ? s.epoch + 1 : 0u);
#pragma unroll
        for (int j = 0; j < N; j++) far[j] = far[j] && was[j] != s.epoch + 1;
    }
    sssp_push_near<P, N>(a, s, near, w, lo, hi, np, L, sh);
    sssp_push_far<P, N>(a, pile, far, w);
}

// The block's wide near entries (sh.wide), a warp each, each lane one edge
// of every 32.
template <typename P>
__device__ void sssp_wide(const SsspArgs<P>& a, const SsspSched& s, NearPush np, KeptPile& L, PersistShared& sh,
                          unsigned long long& relaxed)
{
    const unsigned wides = sh.wide_count;
    for (unsigned k = threadIdx.x >> 5; k < wides; k += blockDim.x >> 5) {
        const QEntry e = sh.wide[k];
        const typename P::Value du = __ldcg(&a.dist[e.v]);
        for (unsigned base = 0; base < e.degree; base += 32) {
            const unsigned j = base + lane_id();
            sssp_relax<P, 1>(a, s, e.v, du, e.first + j, j < e.degree ? 1 : 0, np, L, sh);
        }
        if (lane_id() == 0) relaxed += e.degree;
    }
}

// A near step's entries of this block (rank of active): its kept pile's
// (L.q[cur]) and its deal of the near pile's, a thread an entry whose
// stamp says it is the vertex's latest, its edges PERSIST_BATCH at a
// time; wide ones after to warps. Adds the edges relaxed to relaxed.
template <typename P>
__device__ void sssp_near(const SsspArgs<P>& a, const SsspSched& s, unsigned rank, unsigned active, NearPush np,
                          KeptPile& L, unsigned cur, PersistShared& sh, unsigned long long& relaxed)
{
    const QEntry* in = a.near[s.step & 1];
    const unsigned local = L.in, mine = s.count > rank ? (s.count - rank - 1) / active + 1 : 0;
    for (unsigned base = 0; base < local + mine; base += blockDim.x) {
        if (threadIdx.x == 0) sh.wide_count = 0;
        __syncthreads();
        const unsigned i = base + threadIdx.x;
        QEntry e{0, 0, 0};
        typename P::Value du = P::none();
        if (i < local + mine) {
            // A near pile's entry with a later stamp: the vertex improved
            // since, and its newer entry expands it. A kept entry is
            // expanded with the vertex's value now, whatever came since.
            if (i < local) {
                e = L.q[cur][i];
            } else {
                e = load_entry(&in[rank + (unsigned long long)active * (i - local)]);
                if (__ldcg(&a.stamp[e.v]) != s.step) e.degree = 0;
            }
            du = __ldcg(&a.dist[e.v]);
        }
        if (e.degree > PERSIST_NARROW) {
            sh.wide[atomicAdd(&sh.wide_count, 1u)] = e;
            e.degree = 0;
        }
        relaxed += e.degree;
        const unsigned widest = __reduce_max_sync(FULL_MASK, e.degree);
        for (unsigned k = 0; k < widest; k += PERSIST_BATCH)
            sssp_relax<P, PERSIST_BATCH>(a, s, e.v, du, e.first + k, k < e.degree ? min(e.degree - k, (unsigned)PERSIST_BATCH) : 0,
                                         np, L, sh);
        __syncthreads();
        sssp_wide(a, s, np, L, sh, relaxed);
        __syncthreads();
    }
}

// A split step's share of the far pile: a vertex whose value is under the
// last threshold was expanded then (its improvement was near); under the
// new one it moves to the near pile, else to the next far pile.
template <typename P>
__device__ void sssp_split(const SsspArgs<P>& a, const SsspSched& s, unsigned rank, unsigned active, NearPush np,
                           KeptPile& L, PersistShared& sh)
{
    const vid_t* in = a.far[s.epoch % FAR_PILES];
    const unsigned keep = (s.epoch + 1) % FAR_PILES;
    for (unsigned long long slot0 = 0; rank + active * slot0 < s.count; slot0 += blockDim.x) {
        const unsigned long long i = dealt(rank, active, slot0);
        vid_t v[1] = {GPIPE_NO_VERTEX};
        eid_t lo[1] = {0}, hi[1] = {0};
        bool near[1] = {false}, far[1] = {false};
        if (i < s.count) {
            v[0] = __ldcg(&in[i]);
            const typename P::Value dv = __ldcg(&a.dist[v[0]]);
            lo[0] = a.offsets[v[0]];
            hi[0] = a.offsets[v[0] + 1];
            const double pv = P::priority(dv, 0.0);
            if (pv >= s.below && pv < s.threshold) {
                near[0] = true;
            } else if (pv >= s.threshold) {
                atomicMin(&a.st->far_min[keep], (unsigned long long)dv);
                far[0] = atomicExch(&a.fstamp[v[0]], s.epoch + 2) != s.epoch + 2;
            }
        }
        sssp_push_near<P, 1>(a, s, near, v, lo, hi, np, L, sh);
        sssp_push_far<P, 1>(a, keep, far, v);
    }
}

// One step of the schedule, this block's share (block 0 alone where
// single): its kept pile L.q[cur] and its deal of the step's input,
// pushing to its next kept pile L.q[cur ^ 1] up to keep (0: every push to
// the near pile, counted in sh.count). A near step then runs up to
// span − 1 rounds more from the block's own kept pile alone, while it
// keeps any, under the same threshold, without waiting for the other
// blocks (bfs_step's levels; Δ-stepping's relaxations within a bucket are
// label-correcting in any order). cur flips after each round. The edges
// relaxed go to the state once a block. Returns the rounds past the first.
template <typename P>
__device__ unsigned sssp_step(const SsspArgs<P>& a, const SsspSched& s, bool single, unsigned span, unsigned keep,
                              KeptPile& L, unsigned& cur, PersistShared& sh)
{
    sched_clear_pile(s, a.st);
    NearPush np{L.q[cur ^ 1], keep, Pusher{&a.st->near_tail, single ? 0u : s.near_base, single}};
    const unsigned rank = single ? 0 : blockIdx.x, active = single ? 1 : gridDim.x;
    unsigned long long relaxed = 0;
    if (s.kind == SCHED_NEAR)
        sssp_near(a, s, rank, active, np, L, cur, sh, relaxed);
    else
        sssp_split(a, s, rank, active, np, L, sh);
    kept_close(L, keep, sh);
    cur ^= 1;
    SsspSched own = s;
    own.count = 0;  // the later rounds read no near pile entry
    unsigned round = 1;
    for (; round < span && s.kind == SCHED_NEAR && L.in > 0; round++) {
        np.out = L.q[cur ^ 1];
        sssp_near(a, own, rank, active, np, L, cur, sh, relaxed);
        kept_close(L, keep, sh);
        cur ^= 1;
    }
    block_add(relaxed, &a.st->relaxed);
    return round - 1;
}

// Thread 0's schedule in every thread of the block.
__device__ __forceinline__ SsspSched sched_broadcast(const SsspSched& s)
{
    __shared__ SsspSched shared;
    __syncthreads();
    if (threadIdx.x == 0) shared = s;
    __syncthreads();
    return shared;
}

// The schedule a single-block run left, read after the barrier from L2.
__device__ __forceinline__ SsspSched load_sched(const SsspSched* p)
{
    const volatile SsspSched* v = p;
    return SsspSched{v->threshold, v->below, v->delta, v->step, v->epoch, v->count, v->kind, v->fresh, v->near_base};
}

// Block 0 alone runs steps from s while their inputs have at most limit
// entries, then leaves the schedule in the state. The other blocks go to
// barrier gen after reading, late on a busy GPU, what this run changes: the
// schedule in the state (at the launch's start) and the far pile of the
// split that starts the run (sched_next), which the run's next epoch
// clears and pushes to. So before its first epoch's clear, and before it
// writes the schedule, block 0 waits for their arrival: once a run, while
// its first steps overlap their way to the barrier.
//
// Its pushes stay in its kept pile; at the end it moves them to the near
// pile after the entries there, so that the next multi-block step deals
// them to every block. Those carry no stamp and may repeat a vertex: a
// near pile holds n + PERSIST_LOCAL entries (persist_sssp.go's
// ssspNearEntries).
template <typename P>
__device__ void sssp_single(const SsspArgs<P>& a, SsspSched s, unsigned limit, unsigned gen, KeptPile& L,
                            PersistShared& sh, SsspCounts& c)
{
    SsspState* st = a.st;
    unsigned steps = 0, cur = 0;
    bool waited = false;  // the same in every thread: s is broadcast
    do {
        if (s.fresh && !waited) {
            if (threadIdx.x == 0) grid_wait_others(&st->bar, gen);
            __syncthreads();
            waited = true;
        }
        sssp_step(a, s, true, 1, PERSIST_LOCAL, L, cur, sh);
        if (threadIdx.x == 0) {
            const unsigned was = s.kind, pushed = sh.count;
            const double delta = s.delta;
            sh.count = 0;
            sched_next<P>(s, pushed, L.in, false, st);
            sched_count(c, was, delta, s);
        }
        s = sched_broadcast(s);
        steps++;
    } while (s.kind != SCHED_DONE && s.count + L.in <= limit);
    // Their stamps say they are the step's (a kept entry carries none).
    QEntry* pile = a.near[s.step & 1];
    for (unsigned i = threadIdx.x; i < L.in; i += blockDim.x) {
        pile[s.count + i] = L.q[cur][i];
        a.stamp[L.q[cur][i].v] = s.step;
    }
    s.count += L.in;
    __syncthreads();
    if (threadIdx.x == 0) {
        L.in = sh.kept = 0;
        if (!waited) grid_wait_others(&st->bar, gen);
        st->sched = s;
        c.single_runs++;
        c.single_steps += steps;
    }
}

// The whole search from the schedule ssspp_init left. The grid must be
// resident at once (a cooperative launch).
//
// A step whose input is at most single_limit entries runs in block 0 once
// they are all in the near pile: a small step with entries kept in the
// blocks keeps none, so that the next one can. A multi-block near step
// runs up to span rounds in each block (sssp_step).
template <typename P>
__device__ void ssspp_search(const SsspArgs<P>& a, unsigned single_limit, unsigned span)
{
    __shared__ PersistShared sh;
    __shared__ KeptPile L;
    SsspState* st = a.st;
    SsspSched s = st->sched;
    unsigned gen = 0, cur = 0, kept = 0;  // kept: the entries every block keeps for this step
    unsigned rounds = 0;                  // this block's near rounds past its steps' first
    SsspCounts c{0, 0, 0, 0, 0};          // block 0's thread 0's
    persist_start(sh);
    if (threadIdx.x == 0) L.in = L.out = 0;
    __syncthreads();
    while (s.kind != SCHED_DONE) {
        const unsigned long long total = (unsigned long long)s.count + kept;
        const bool small = total <= single_limit, single = small && kept == 0;
        if (!single) {
            const unsigned keep = small ? 0u : min(kept_limit(total, gridDim.x, 0), blockDim.x);
            rounds += sssp_step(a, s, false, span, keep, L, cur, sh);
        } else if (blockIdx.x == 0) {
            sssp_single(a, s, single_limit, gen, L, sh, c);
        }
        const unsigned long long sum = grid_barrier(&st->bar, gen++, sh, KEPT_BITS);
        if (single) {
            s = load_sched(&st->sched);
            kept = 0;
        } else {
            kept = (unsigned)(sum & ((1ull << KEPT_BITS) - 1));
            if (threadIdx.x == 0) {
                const unsigned was = s.kind;
                const double delta = s.delta;
                sched_next<P>(s, (unsigned)(sum >> KEPT_BITS), kept, true, st);
                sched_count(c, was, delta, s);
            }
            s = sched_broadcast(s);
        }
    }
    if (threadIdx.x == 0) atomicAdd(&st->rounds, rounds);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        st->near_steps = c.near_steps;
        st->split_steps = c.split_steps;
        st->delta_changes = c.delta_changes;
        st->single_runs = c.single_runs;
        st->single_steps = c.single_steps;
    }
}

// Puts v in the first near pile at slot i (its value set already).
template <typename P>
__device__ __forceinline__ void ssspp_queue(const SsspArgs<P>& a, unsigned i, vid_t v)
{
    a.stamp[v] = 1;
    a.near[1][i] = QEntry{v, (unsigned)(a.offsets[v + 1] - a.offsets[v]), a.offsets[v]};
}

// Puts the schedule's start in the state: a first near step of count
// entries under threshold. The rest of the state is zero (the host clears
// it).
template <typename P>
__device__ __forceinline__ void ssspp_schedule(const SsspArgs<P>& a, unsigned count, double threshold, double delta,
                                               double delta_max, unsigned adapt_low, unsigned adapt_high)
{
    SsspState* st = a.st;
    for (int i = 0; i < FAR_PILES; i++) st->far_min[i] = ~0ull;
    st->sched = SsspSched{threshold, -1.0, delta, 1, 0, count, SCHED_NEAR, 0, 0};
    st->delta_min = delta;
    st->delta_max = delta_max;
    st->adapt_low = adapt_low;
    st->adapt_high = adapt_high;
}

// Puts the source in the first near pile and the schedule's start in the
// state.
template <typename P>
__device__ __forceinline__ void ssspp_init(const SsspArgs<P>& a, vid_t source, double delta, double delta_max,
                                           unsigned adapt_low, unsigned adapt_high)
{
    a.dist[source] = 0;  // the bits of 0 in either width
    ssspp_queue(a, 0, source);
    ssspp_schedule(a, 1, delta, delta, delta_max, adapt_low, adapt_high);
}

// The kernels take SsspArgs by value (operators/gpuop/persist_sssp.go's
// ssspPersistArgs mirrors it field by field).
#define SSSPP_PROGRAM(NAME, P)                                                                                     \
    extern "C" __global__ void ssspp_init_##NAME(SsspArgs<P> a, vid_t source, double delta, double delta_max,     \
                                                 unsigned adapt_low, unsigned adapt_high)                         \
    {                                                                                                              \
        ssspp_init<P>(a, source, delta, delta_max, adapt_low, adapt_high);                                        \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(PERSIST_SSSP_THREADS, 1) ssspp_##NAME(SsspArgs<P> a, unsigned single_limit, \
                                                                                      unsigned span)              \
    {                                                                                                              \
        ssspp_search<P>(a, single_limit, span);                                                                    \
    }

SSSPP_PROGRAM(sssp_u32u, SSSP32<Unit>)
SSSPP_PROGRAM(sssp_u32, SSSP32<unsigned>)
SSSPP_PROGRAM(sssp_f64, SSSP64)

// ---- chains (operators/gpuop/chains.go, convert/chains.go) ----
//
// A search of a road network's chains contracted: over the junctions,
// joined by the chains' lengths, from the source or, where the source is
// inside a chain, from that chain's ends; by Bellman-Ford where the
// contraction is small (chain_seed, chain_bf), else by ssspp_sssp_u32
// (ssspp_init_ends); then chain_fill gives every vertex its distance.

// The source's chain's ends, junctions, at their distances from it: count
// of them (one where both ends are the same junction).
struct ChainSeeds {
    vid_t end[2];
    unsigned dist[2];
    unsigned count;
};

// Puts the seeds in the first near pile, the search's first threshold Δ
// past the nearer (a farther seed is expanded in the first step too, and
// again if it improves: the near-far search corrects labels).
extern "C" __global__ void ssspp_init_ends(SsspArgs<SSSP32<unsigned>> a, ChainSeeds seeds, double delta,
                                           double delta_max, unsigned adapt_low, unsigned adapt_high)
{
    unsigned nearest = seeds.dist[0];
    for (unsigned i = 0; i < seeds.count; i++) {
        a.dist[seeds.end[i]] = seeds.dist[i];
        ssspp_queue(a, i, seeds.end[i]);
        nearest = min(nearest, seeds.dist[i]);
    }
    ssspp_schedule(a, seeds.count, nearest + delta, delta, delta_max, adapt_low, adapt_high);
}

// Sets the seeds' distances (the distances all ones before): a search of
// the contraction by chain_bf.
extern "C" __global__ void chain_seed(unsigned* dist, ChainSeeds seeds)
{
    for (unsigned i = 0; i < seeds.count; i++) atomicMin(&dist[seeds.end[i]], seeds.dist[i]);
}

// Mirrored by operators/gpuop/chains.go's chainBFArgs: the contraction's
// CSR and weights, its distances (the seeds' set, all ones elsewhere),
// each vertex's distance when it last pushed (all ones before), the
// barrier (zero before) and the rounds run (out).
struct ChainBF {
    const eid_t* offsets;
    const vid_t* targets;
    const unsigned* weights;
    unsigned* dist;
    unsigned* pushed;
    GridBarrier* bar;
    unsigned* rounds;
    unsigned long long n;
    unsigned span;  // sweeps a block runs between barriers, while its own pushes lower its vertices
};

// Bellman-Ford over a small contraction in one cooperative launch: each
// round, every vertex whose distance fell since it last pushed pushes its
// edges, and the rounds end after one in which none did. Between two
// barriers a block sweeps its vertices up to span times, while its own
// pushes lowered some of them. The pushes are reductions whose results
// nobody waits for (atomicMin's value unused: REDG in the SASS), so a
// sweep's chain is the distance's load and the edges' (L1 after the first
// round: they do not change). On luxembourg_osm's junctions: 249–290
// rounds at one sweep a round, 36–45 at 8. A round sweeps every vertex,
// so a large contraction takes the near-far search instead (chains.go).
extern "C" __global__ void __launch_bounds__(PERSIST_THREADS, 1) chain_bf(ChainBF a)
{
    __shared__ PersistShared sh;
    __shared__ unsigned swept;  // this sweep's pushes in the block
    persist_start(sh);
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned gen = 0;
    for (;;) {
        unsigned pushers = 0;
        for (unsigned r = 0; r < a.span; r++) {
            if (threadIdx.x == 0) swept = 0;
            __syncthreads();
            unsigned mine = 0;
            const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
            for (unsigned long long v = first; v < a.n; v += stride) {
                const unsigned d = __ldcg(&a.dist[v]);
                const eid_t lo = __ldg(&a.offsets[v]), hi = __ldg(&a.offsets[v + 1]);
                if (d >= a.pushed[v]) continue;  // pushed[v] is this thread's alone
                a.pushed[v] = d;
                mine++;
                for (eid_t e = lo; e < hi; e++) atomicMin(&a.dist[__ldg(&a.targets[e])], d + __ldg(&a.weights[e]));
            }
            if (mine > 0) atomicAdd(&swept, mine);
            pushers += mine;
            __syncthreads();  // the block's pushes visible to its next sweep, and swept summed
            const bool again = swept != 0;
            __syncthreads();  // every thread read swept before thread 0 clears it
            if (!again) break;
        }
        if (pushers > 0) atomicAdd(&sh.count, pushers);
        if (grid_barrier(a.bar, gen++, sh) == 0) break;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *a.rounds = gen;
}

// Mirrored by operators/gpuop/chains.go's chainFillArgs: the contraction's
// roles, ways along the chains and ends (convert.Chains), the distances
// its search found, and the source's role and way along its chain.
struct ChainFill {
    const unsigned* role;   // a junction's number, or CHAIN_INTERIOR | its chain's
    const unsigned* fwd;    // an interior vertex's length from its chain's first end
    const unsigned* bwd;    // ... and from its last
    const unsigned* ends;   // chain c's first and last junctions at 2c, 2c + 1
    const unsigned* cdist;  // the junctions' distances (all ones: unreached)
    unsigned* dist;         // out: every vertex's
    unsigned* levels;       // out: the largest distance + 1, atomicMax'd (zero before)
    unsigned long long n;
    unsigned src_role, src_fwd;
};

#define CHAIN_INTERIOR 0x80000000u  // convert.InteriorBit

// Every vertex's distance: a junction's from the search, an interior
// vertex's the nearer of its ends' plus its way from there or, on the
// source's own chain, its way from the source along it.
extern "C" __global__ void chain_fill(ChainFill f)
{
    __shared__ unsigned levels;
    if (threadIdx.x == 0) levels = 0;
    __syncthreads();
    unsigned most = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long v = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; v < f.n; v += stride) {
        const unsigned r = f.role[v];
        unsigned long long d = ~0u;
        if (!(r & CHAIN_INTERIOR)) {
            d = f.cdist[r];
        } else {
            const unsigned c = r & ~CHAIN_INTERIOR, da = f.cdist[f.ends[2 * c]], db = f.cdist[f.ends[2 * c + 1]];
            if (da != ~0u) d = (unsigned long long)da + f.fwd[v];
            if (db != ~0u) d = min(d, (unsigned long long)db + f.bwd[v]);
            if (r == f.src_role) {
                const unsigned w = f.fwd[v];
                d = min(d, (unsigned long long)(w > f.src_fwd ? w - f.src_fwd : f.src_fwd - w));
            }
        }
        f.dist[v] = (unsigned)min(d, (unsigned long long)~0u);
        if (d < ~0u) most = max(most, (unsigned)d + 1);
    }
    most = __reduce_max_sync(FULL_MASK, most);
    if (lane_id() == 0 && most > 0) atomicMax(&levels, most);
    __syncthreads();
    if (threadIdx.x == 0 && levels > 0) atomicMax(f.levels, levels);
}

// ---- the barrier's cost ----

// rounds barriers and nothing else; *sink gets the last sum (gridDim.x).
extern "C" __global__ void __launch_bounds__(PERSIST_THREADS, 1) persist_barrier_bench(GridBarrier* b, unsigned rounds,
                                                                                      unsigned* sink)
{
    __shared__ PersistShared sh;
    persist_start(sh);
    for (unsigned r = 0; r < rounds; r++) {
        if (threadIdx.x == 0) sh.count = 1;  // thread 0 alone reads and clears it
        grid_barrier(b, r, sh);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *sink = sh.word;
}
