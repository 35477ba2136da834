package gpuop

import (
	"fmt"
	"structs"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/kernels"
)

// The persistent strategy on a road network's chains contracted
// (convert.Chains): most of a road network's vertices sit inside chains,
// paths of vertices of degree 2 between junctions, and a level-by-level
// search walks each chain one vertex a level, latency-bound on one SM.
// luxembourg_osm is 1,035 levels deep; its 16,905 junctions, joined by an
// edge for each chain (its length), 109. So where at least half of an
// undirected graph's vertices have degree 2, persist searches the
// junctions, by hops for BFS and by weight for SSSP, from the source or
// from its chain's ends: Bellman-Ford in one cooperative launch where the
// contraction is small (chain_bf: every improved vertex pushes each
// round, a block sweeping its own up to 8 times between barriers), else
// the persistent near-far SSSP (ssspp_sssp_u32 from ssspp_init_ends).
// chain_fill then gives every vertex the nearer of its ends' distances
// plus its way from there, and the parent pass (sssp.go) a parent from
// the distances. The contraction is built on the host once a graph, on
// first use (the plan's memory estimate, or the first run), and its arrays
// are kept with the graph's layouts.

// chainsLeast is the share of an undirected graph's vertices of degree 2
// from which persist searches its chains' contraction: below it, the
// levels saved are fewer than what running the SSSP kernel for a BFS
// costs (the 16 M road of gpipe gen road has 40% and keeps the BFS).
const chainsLeast = 0.5

// persistChains is g's contraction that persist searches with prog (nil:
// a BFS, by hops), or nil where it searches g itself: a directed graph,
// one with too few vertices of degree 2, float distances.
func (b *GPU) persistChains(g *convert.Graph, prog *Program) *convert.Chains {
	if b == nil || b.tune.noChains || g.Directed || float64(g.DegreeTwo()) < chainsLeast*float64(g.NumVertices()) {
		return nil
	}
	byWeight := prog != nil && *prog == ssspU32
	if prog != nil && !byWeight && *prog != ssspUnit {
		return nil
	}
	c, err := g.Chains(byWeight)
	if err != nil || float64(c.Interior) < chainsLeast*float64(g.NumVertices()) {
		return nil
	}
	return c
}

// chainsLimit is the single-block limit of a search of a chains'
// contraction: none (every step in every block) unless tuning sets one.
// Its steps' frontiers are a few hundred junctions, where the blocks,
// each running up to span rounds ahead (persistSSSPSpan), gain more than
// the barriers they cost: on the H200, luxembourg_osm's BFS took 0.79 ms
// without single-block runs, 0.81 at a limit of 16, 0.83 at 64 and 0.94
// at persistSingleLimit's 256; its SSSP 0.99, 0.96, 1.03 and 1.10.
func (b *GPU) chainsLimit() uint32 {
	if b.tune.persistSingle != 0 {
		return b.persistLimit()
	}
	return 0
}

// chainHost is the host array of a chain part of g.
func chainHost(g *convert.Graph, base Layout, byWeight bool) ([]byte, error) {
	c, err := g.Chains(byWeight)
	if err != nil {
		return nil, err
	}
	switch base {
	case chainRole:
		return alloc.Bytes(c.Role), nil
	case chainFwd:
		return alloc.Bytes(c.Fwd), nil
	case chainBwd:
		return alloc.Bytes(c.Bwd), nil
	}
	return alloc.Bytes(c.Ends), nil
}

// chainPartBytes is a chain part's size: a word a vertex, or two a chain
// (at most one a vertex).
func chainPartBytes(g *convert.Graph, base Layout) int64 {
	n := int64(g.NumVertices())
	if base == chainEnds {
		return 8 * n
	}
	return 4 * n
}

// chainsSearchBytes is the device memory a persistent search on g's
// chains' contraction c takes beyond g's own layouts: the roles, ways and
// ends, every vertex's distance, and the contraction's layouts and search.
func chainsSearchBytes(g *convert.Graph, c *convert.Chains) int64 {
	return 12*int64(len(c.Role)) + 4*int64(len(c.Ends)) + 4*int64(g.NumVertices()) +
		layoutBytes(c.Graph, OutOffsets, OutTargets, outWeightsU32) + ssspSearchBytes(int64(c.Graph.NumVertices()), ssspU32)
}

// chainFillArgs mirrors kernels/persist.cu's ChainFill.
type chainFillArgs struct {
	_               structs.HostLayout
	role, fwd       gpu.DevicePtr
	bwd, ends       gpu.DevicePtr
	cdist, dist     gpu.DevicePtr
	levels          gpu.DevicePtr
	n               uint64
	srcRole, srcFwd uint32
}

// chainSeeds mirrors kernels/persist.cu's ChainSeeds.
type chainSeeds struct {
	_     structs.HostLayout
	end   [2]uint32
	dist  [2]uint32
	count uint32
}

// chainSearch is a persistent search of a graph's chains' contraction:
// Bellman-Ford (bf) where the contraction is small, else the near-far
// search (nf).
type chainSearch struct {
	c          *convert.Chains
	bf         *chainBF
	nf         *ssspPersist        // over c.Graph, by uint32 distances
	ends, fill *Kernel             // ssspp_init_ends, chain_fill
	parts      []*gpu.DeviceBuffer // role, fwd, bwd, ends
	dist       *gpu.DeviceBuffer   // every vertex's
	levels     *gpu.DeviceBuffer
}

// newChainSearch takes the search's kernels, the contraction's layouts
// and the buffers from e.
func newChainSearch(e *enactor, c *convert.Chains, byWeight bool) (*chainSearch, error) {
	cs := &chainSearch{c: c}
	var err error
	if cs.bf, err = newChainBF(e, c); err != nil {
		return nil, err
	}
	if cs.bf == nil {
		if cs.nf, err = prepareSSSPPersist(e, c.Graph, ssspU32); err != nil {
			return nil, err
		}
	}
	ks, err := e.kernels(kernels.Persist, "ssspp_init_ends", "chain_fill")
	if err != nil {
		return nil, err
	}
	cs.ends, cs.fill = ks[0], ks[1]
	flag := Layout(0)
	if byWeight {
		flag = chainByWeight
	}
	if cs.parts, err = e.layouts(chainRole|flag, chainFwd|flag, chainBwd|flag, chainEnds|flag); err != nil {
		return nil, err
	}
	bufs, err := e.buffers(4*max(int64(e.g.NumVertices()), 1), 4)
	if err != nil {
		return nil, err
	}
	cs.dist, cs.levels = bufs[0], bufs[1]
	return cs, nil
}

// run searches the contraction from e's source (seeded at its chain's
// ends where it is inside one; the near-far search with Δ from start,
// bounded by most), then fills every vertex's distance into cs.dist and
// the largest + 1 into cs.levels.
func (cs *chainSearch) run(e *enactor, start, most float64) error {
	if err := cs.levels.Memset8(e.s, 0); err != nil {
		return err
	}
	src := e.in.Source
	seeds := cs.seeds(src)
	var cdist *gpu.DeviceBuffer
	if cs.bf != nil {
		if err := cs.bf.run(e, seeds); err != nil {
			return err
		}
		cdist = cs.bf.dist
	} else {
		a, err := cs.nf.clear(e, ssspU32)
		if err != nil {
			return err
		}
		low, high := cs.nf.adaptBounds()
		if err := gpu.Launch(cs.ends.Fn, gpu.Dim(1), gpu.Dim(1), 0, e.s, gpu.Args(&a), gpu.Args(&seeds), start, most, low, high); err != nil {
			return err
		}
		if err := cs.nf.launch(e, &a, e.b.chainsLimit()); err != nil {
			return err
		}
		cdist = cs.nf.bufs[0]
	}
	f := chainFillArgs{role: cs.parts[0].Ptr(), fwd: cs.parts[1].Ptr(), bwd: cs.parts[2].Ptr(), ends: cs.parts[3].Ptr(),
		cdist: cdist.Ptr(), dist: cs.dist.Ptr(), levels: cs.levels.Ptr(), n: uint64(len(cs.c.Role)),
		srcRole: cs.c.Role[src], srcFwd: cs.c.Fwd[src]}
	return cs.fill.LaunchFor(e.s, int64(len(cs.c.Role)), BlockSize, gpu.Args(&f))
}

// seeds are where the contraction's search starts: src's junction at 0,
// or the ends of the chain that holds src at their distances from it (one
// where the chain closes on its junction: the nearer way).
func (cs *chainSearch) seeds(src uint32) chainSeeds {
	c := cs.c
	if r := c.Role[src]; r&convert.InteriorBit == 0 {
		return chainSeeds{end: [2]uint32{r, r}, count: 1}
	}
	ch := c.Role[src] &^ convert.InteriorBit
	s := chainSeeds{end: [2]uint32{c.Ends[2*ch], c.Ends[2*ch+1]}, dist: [2]uint32{c.Fwd[src], c.Bwd[src]}, count: 2}
	if s.end[0] == s.end[1] {
		s.dist[0], s.count = min(s.dist[0], s.dist[1]), 1
	}
	return s
}

// describe is the result's strategy: the search (what it ran), and the
// contraction it ran on.
func (cs *chainSearch) describe(search string) string {
	c := cs.c
	return fmt.Sprintf("%s, on the chains contracted (%d of %d vertices inside %d chains; %d junctions, %d edges)",
		search, c.Interior, len(c.Role), len(c.Ends)/2, c.Graph.NumVertices(), c.Graph.NumEdges())
}

// runBFSChains runs the persistent BFS as a search of the chains'
// contraction c by hops: the depths are the distances, the parents the
// parent pass's over the graph.
func runBFSChains(e *enactor, c *convert.Chains) error {
	cs, err := newChainSearch(e, c, false)
	if err != nil {
		return err
	}
	d, pp, err := cs.parentPass(e, ssspUnit)
	if err != nil {
		return err
	}
	search, _, err := cs.timed(e, d, pp)
	if err != nil {
		return err
	}
	levels, err := readU32(e.s, cs.levels, 0) // the deepest depth + 1
	if err != nil {
		return err
	}
	return bfsResult(e, cs.dist, pp.parent, cs.describe(search), int(levels))
}

// runSSSPChains runs the persistent SSSP as a search of the chains'
// contraction c, by weight for prog ssspU32, by hops for ssspUnit.
func runSSSPChains(e *enactor, c *convert.Chains, prog Program) error {
	cs, err := newChainSearch(e, c, prog == ssspU32)
	if err != nil {
		return err
	}
	d, pp, err := cs.parentPass(e, prog)
	if err != nil {
		return err
	}
	search, ran, err := cs.timed(e, d, pp)
	if err != nil {
		return err
	}
	return ssspPersistResult(e, d, pp, ran, cs.describe(search))
}

// parentPass is the parent pass of prog over the run's graph from the
// distances cs fills in.
func (cs *chainSearch) parentPass(e *enactor, prog Program) (*vpDevice, *parentPass, error) {
	csr, err := e.csrLayouts(e.g, prog)
	if err != nil {
		return nil, nil, err
	}
	return persistParentPass(e, prog, cs.dist, csr)
}

// timed runs the search and then d's parent pass pp in the run's timer,
// and describes what the search ran: its description, and its counts
// (Bellman-Ford's rounds as near steps).
func (cs *chainSearch) timed(e *enactor, d *vpDevice, pp *parentPass) (string, ssspRan, error) {
	var host *Counters
	var start, most float64 // the near-far search's Δ
	if cs.nf != nil {
		var err error
		if host, err = NewCounters(e.b, ssspStateBytes); err != nil {
			return "", ssspRan{}, err
		}
		e.done.Add(host.Free)
		start, most = persistDeltas(cs.c.Graph, e.p)
	}
	if err := e.start(); err != nil {
		return "", ssspRan{}, err
	}
	if err := cs.run(e, start, most); err != nil {
		return "", ssspRan{}, err
	}
	if err := d.resolveParents(e.ctx, pp); err != nil {
		return "", ssspRan{}, err
	}
	if err := e.stop(); err != nil {
		return "", ssspRan{}, err
	}
	if cs.bf != nil {
		rounds, err := readU32(e.s, cs.bf.state, chainBFBarrierBytes/4)
		return cs.bf.describe(rounds), ssspRan{near: rounds}, err
	}
	raw, err := host.read(e.s, cs.nf.bufs[8])
	if err != nil {
		return "", ssspRan{}, err
	}
	ran := parseSSSPState(raw, cs.nf.grid, start, most)
	ran.span = e.b.ssspSpan()
	return ran.String(), ran, nil
}

// chainBF is a Bellman-Ford search of a small contraction (chain_bf): a
// round a barrier, every vertex that improved pushing its edges.
type chainBF struct {
	seed, search        *Kernel
	grid, threads       uint32
	parts               []*gpu.DeviceBuffer // the contraction's offsets, targets, weights
	n                   int64               // the contraction's vertices
	dist, pushed, state *gpu.DeviceBuffer   // state: the barrier, then the rounds
}

// chainBFSweeps is the sweeps a block of chain_bf runs between barriers
// by default: luxembourg_osm's junctions are numbered along its roads, so
// a block's vertices are in part each other's neighbors, and a sweep
// (a few hundred ns) passes a distance on where a barrier round costs
// about 2 µs. On the H200 its BFS took 0.58 ms at 1 sweep, 0.45 at 2,
// 0.40 at 4, 0.39 at 8, 0.50 at 32; its SSSP 0.57, 0.39 (4), 0.37 (8),
// 0.40 (16), 0.48 (32), 0.66 (64).
const chainBFSweeps = 8

// chainBFBarrierBytes is kernels/persist.cu's GridBarrier; the rounds
// follow it in the state.
const chainBFBarrierBytes = 256

// chainBFArgs mirrors kernels/persist.cu's ChainBF.
type chainBFArgs struct {
	_                structs.HostLayout
	offsets, targets gpu.DevicePtr
	weights, dist    gpu.DevicePtr
	pushed, bar      gpu.DevicePtr
	rounds           gpu.DevicePtr
	n                uint64
	span             uint32
}

// newChainBF is a Bellman-Ford search of c's contraction where it has at
// most two vertices a thread of the persistent grid (a round sweeps them
// all; on luxembourg_osm 16,905 against 33,792 threads), else nil (the
// near-far search), as it is under tuning's noChainBF.
func newChainBF(e *enactor, c *convert.Chains) (*chainBF, error) {
	if e.b.tune.noChainBF {
		return nil, nil
	}
	ks, err := e.kernels(kernels.Persist, "chain_seed", "chain_bf")
	if err != nil {
		return nil, err
	}
	bf := &chainBF{seed: ks[0], search: ks[1], threads: uint32(e.b.persistBlock(persistBFSThreads, persistThreads))}
	if bf.grid, err = e.b.persistGrid(ks[1].Fn, int(bf.threads)); err != nil {
		return nil, err
	}
	n := int64(c.Graph.NumVertices())
	if n > 2*int64(bf.grid)*int64(bf.threads) {
		return nil, nil
	}
	bf.n = n
	if bf.parts, err = e.layoutsOf(c.Graph, OutOffsets, OutTargets, outWeightsU32); err != nil {
		return nil, err
	}
	bufs, err := e.buffers(4*max(n, 1), 4*max(n, 1), chainBFBarrierBytes+4)
	if err != nil {
		return nil, err
	}
	bf.dist, bf.pushed, bf.state = bufs[0], bufs[1], bufs[2]
	return bf, nil
}

// run clears the distances and the barrier, sets the seeds' distances and
// runs the rounds.
func (bf *chainBF) run(e *enactor, seeds chainSeeds) error {
	for _, c := range []struct {
		buf  *gpu.DeviceBuffer
		fill byte
	}{{bf.dist, 0xff}, {bf.pushed, 0xff}, {bf.state, 0}} {
		if err := c.buf.Memset8(e.s, c.fill); err != nil {
			return err
		}
	}
	if err := gpu.Launch(bf.seed.Fn, gpu.Dim(1), gpu.Dim(1), 0, e.s, bf.dist, gpu.Args(&seeds)); err != nil {
		return err
	}
	a := chainBFArgs{offsets: bf.parts[0].Ptr(), targets: bf.parts[1].Ptr(), weights: bf.parts[2].Ptr(),
		dist: bf.dist.Ptr(), pushed: bf.pushed.Ptr(), bar: bf.state.Ptr(), rounds: bf.state.Ptr() + chainBFBarrierBytes,
		n: uint64(bf.n), span: e.b.chainBFSpan()}
	return gpu.LaunchCooperative(bf.search.Fn, gpu.Dim(bf.grid), gpu.Dim(bf.threads), 0, e.s, gpu.Args(&a))
}

// chainBFSpan is the sweeps a block of chain_bf runs between barriers:
// tuning's persistSpan when set, else chainBFSweeps.
func (b *GPU) chainBFSpan() uint32 {
	if b.tune.persistSpan > 0 {
		return b.tune.persistSpan
	}
	return chainBFSweeps
}

// describe is the search's part of the result's strategy.
func (bf *chainBF) describe(rounds uint32) string {
	return fmt.Sprintf("persist (%d blocks, Bellman-Ford: %d rounds)", bf.grid, rounds)
}
