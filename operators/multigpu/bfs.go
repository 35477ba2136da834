package multigpu

import (
	"context"
	"errors"
	"fmt"
	"structs"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// BFS over several GPUs, after Enterprise §4.4, on the partition of
// multigpu.go. Each GPU runs a level of Enterprise (gpuop/enterprise.go) on
// its part: top-down it expands the whole frontier along the edges into its
// vertices, bottom-up it checks its unvisited vertices' in-edges against the
// whole frontier's bitmap; either way it visits only its own vertices, and
// sets their bits in the next frontier's bitmap (the status compressed to a
// bit a vertex). Then every GPU gets every other's words, so each holds the
// whole next frontier, from which ent_queue builds the next top-down
// queues; bottom-up, each part's queue is its own unvisited vertices. The
// status array of a part is only ever read for its own vertices, so the
// others' visits are never written into it. Direction switching decides on
// the sums over the parts: by peer stores, on the counts the stores make of
// each part's own words, before any queue pass, so that the level the
// search turns bottom-up at queues no top-down frontier only to drop it.
// Each vertex's depth and parent come from its owner.
//
// The words travel one of two ways. Where every GPU reaches every other's
// memory (MultiGPU.PeerStores, reachesPeers), each part's mg_push_clear
// stores its nonzero words straight into the others' bitmaps, which were
// cleared before the level: a small frontier's exchange is then a kernel of
// a few µs where a collective (about 70 µs at Kronecker 26 through NCCL)
// moves the part's whole range. Otherwise the transport gathers the ranges
// (gatherRanges). Since the parts store into each other's next bitmap, no
// part clears its next bitmap as the level starts (another part may have
// stored into it already); each clears this level's, which nothing reads
// or writes any more, as the level ends: in the same launch as its stores.
// A level's driver calls are few on purpose, at 3 to 5 µs each: on four
// GPUs a small level's time was mostly those calls (BENCHMARKS.md). For the
// same reason each part's calls are issued by a worker of par's team, the
// parts side by side (eachPart), in one round a bottom-up level and two a
// top-down one (one where it finds nothing). A top-down level whose
// frontier holds many hubs, and so likely turns the search bottom-up,
// speculates: its first round also queues each part's unvisited vertices
// and lists the next frontier's hubs into every part's hub list (the
// turn's work, which needs no other part's words), so that where it turns
// it is one round too; where it does not, the queue pass counts afresh.

// mgBFSPart is one part's search.
type mgBFSPart struct {
	*gpuop.EntSearch
	part convert.Partition
	// Where the parts store into each other's bitmaps: mg_push_clear, and
	// the device addresses of the other parts' bitmaps q at peers[q].
	push   *gpuop.Kernel
	peers  [2]*gpu.DeviceBuffer
	npeers int32
	// Every part's hub list q and its count (stats q's hub_list), by
	// part, this one's included: where the stores list the hubs.
	hubLists, hubCounts [2]*gpu.DeviceBuffer
	nparts              int32
}

// pushClear stores the part's nonzero words of bitmap q into the others'
// bitmaps q, counts the part's vertices and hubs in them into stats q
// (ownFound, ownHubs), copies stats q to the host (wait reads them), and
// clears its level buffer done (stats and bitmap), which the next level
// writes. zeros stores its zero words too (the warm-up); listHubs adds the
// hubs among them to every part's hub list q.
func (p *mgBFSPart) pushClear(q, done int, zeros, listHubs bool) error {
	lo, hi := p.OwnWords[0], p.OwnWords[1]
	clearWords := p.Buf.Level[done].Size() / 4
	a := pushClearArgs{
		bits: p.Buf.Bits[q].Ptr(), peers: p.peers[q].Ptr(), hubBits: p.HubMask.Ptr(), stats: p.Buf.Stats[q].Ptr(),
		hostStats: p.HostStats, done: p.Buf.Level[done].Ptr(), hubLists: p.hubLists[q].Ptr(), hubCounts: p.hubCounts[q].Ptr(),
		lo: lo, hi: hi, clearWords: clearWords,
		npeers: p.npeers, zeros: gpuop.Flag(zeros), nparts: p.nparts, listHubs: gpuop.Flag(listHubs), hubCap: p.HubCap(),
	}
	return p.push.LaunchFor(p.Stream, max(hi-lo, clearWords), gpuop.BlockSize, gpu.Args(&a))
}

// pushClearArgs mirrors kernels/mgpu.cu's PushClearArgs, field by field.
type pushClearArgs struct {
	_                               structs.HostLayout
	bits, peers, hubBits, stats     gpu.DevicePtr
	hostStats, done                 gpu.DevicePtr
	hubLists, hubCounts             gpu.DevicePtr
	lo, hi, clearWords              int64
	npeers, zeros, nparts, listHubs int32
	hubCap                          uint32
}

// listPeers gives every part the device addresses of the others' bitmaps,
// and of every part's hub lists and their counts.
func listPeers(ps []*mgBFSPart) error {
	upload := func(p *mgBFSPart, addrs []uint64) (*gpu.DeviceBuffer, error) {
		if len(addrs) == 0 {
			addrs = append(addrs, 0) // one part: no peers, but a buffer to point at
		}
		buf, err := gpu.UploadNew(p.GPU.Context(), p.Stream, addrs)
		if err != nil {
			return nil, err
		}
		p.Add(func() { buf.Free() })
		return buf, nil
	}
	for i, p := range ps {
		for q := range 2 {
			var bitmaps, lists, counts []uint64
			for r, to := range ps {
				if r != i {
					bitmaps = append(bitmaps, uint64(to.Buf.Bits[q].Ptr()))
				}
				lists = append(lists, uint64(to.Buf.Hubs[q].Ptr()))
				counts = append(counts, uint64(to.Field(q, gpuop.EntHubListAt)))
			}
			p.npeers, p.nparts = int32(len(bitmaps)), int32(len(ps))
			var err error
			if p.peers[q], err = upload(p, bitmaps); err != nil {
				return err
			}
			if p.hubLists[q], err = upload(p, lists); err != nil {
				return err
			}
			if p.hubCounts[q], err = upload(p, counts); err != nil {
				return err
			}
		}
	}
	return nil
}

// speculates says whether a top-down level whose frontier holds
// frontierHubs of the graph's hubTotal hubs queues the part's unvisited
// vertices and lists the next frontier's hubs in its first round, before
// the parts' counts say whether the search turns bottom-up: where it does
// (a frontier with this many hubs usually leads to one with more than
// gammaPercent of them: Kronecker's levels 1 and 2), the level needs no
// second round; where it does not, the second round's queue pass redoes
// the counts (mode: 1 always, -1 never, 0 by the rule; the tests vary it).
func speculates(mode int, frontierHubs uint32, hubTotal int64) bool {
	switch {
	case mode != 0:
		return mode > 0
	case hubTotal == 0:
		return false
	}
	return int64(frontierHubs) >= max(1, hubTotal/speculateHubShare)
}

// speculateHubShare: a frontier with a 128th of the hubs speculates. On
// Kronecker 26 (2,048 hubs) the frontiers of 21 and 47 hubs led to the
// turn; a source alone (one hub at most) does not speculate.
const speculateHubShare = 128

// mgSearch is one BFS over the parts: the parts' searches and what a
// level's steps share.
type mgSearch struct {
	m       *MultiGPU
	g       *convert.Graph
	n       int64
	parts   []convert.Partition
	ps      []*mgBFSPart
	streams []*gpu.Stream
	// stores says the parts store their words into each other's bitmaps
	// (else the transport gathers them); cuts are the bitmap's words by
	// owner, in bytes.
	stores   bool
	cuts     []int64
	hubTotal int64 // the whole graph's hubs
	transfer time.Duration
	// A level's per-part state: errors, stats, queue counts.
	errs   []error
	stats  []gpuop.EntStats
	counts [][gpuop.Classes]uint32
	calls  *roundTrace
	trace  *gpuop.LevelTrace
}

func runBFSMulti(ctx context.Context, m *MultiGPU, in operators.Input, _ float64) (*operators.Result, error) {
	s := &mgSearch{m: m, g: in.Graph, n: int64(in.Graph.NumVertices())}
	defer s.close()
	if err := s.setUp(); err != nil {
		return nil, err
	}
	calls, err := newRoundTrace(s.ps, s.stores)
	if err != nil {
		return nil, err
	}
	defer calls.destroy()
	s.calls = calls
	return s.search(ctx, in.Source)
}

// setUp makes the parts' searches, their peers' addresses, the bitmap's
// cuts, and the first stores into every peer.
func (s *mgSearch) setUp() error {
	parts, err := s.m.partitions(s.g, 0)
	if err != nil {
		return err
	}
	k := len(parts)
	s.parts, s.ps, s.streams = parts, make([]*mgBFSPart, k), make([]*gpu.Stream, k)
	s.errs, s.stats, s.counts = make([]error, k), make([]gpuop.EntStats, k), make([][gpuop.Classes]uint32, k)
	s.stores = s.m.PeerStores && s.m.reachesPeers()
	for i, part := range parts {
		if err := s.addPart(i, part); err != nil {
			return err
		}
	}
	if s.stores {
		if err := listPeers(s.ps); err != nil {
			return err
		}
	}
	s.cutWords()
	s.hubTotal = s.ps[0].HubCount
	if err := s.clearLevels(); err != nil {
		return err
	}
	// The set-up's wait is a round too: it wakes the team's workers,
	// which then spin for the first level rather than sleep through it
	// (waking them there cost level 0 about 100 µs on four GPUs).
	return s.eachPart(func(p *mgBFSPart, _ int) error { return p.Stream.Synchronize() })
}

// addPart makes part i's search on the i-th GPU.
func (s *mgSearch) addPart(i int, part convert.Partition) error {
	b := s.m.gpus[i]
	e, err := gpuop.NewEntSearch(b, part.Graph, s.g)
	if err != nil {
		return err
	}
	p := &mgBFSPart{EntSearch: e, part: part}
	s.ps[i], s.streams[i] = p, e.Stream
	s.transfer += e.Transfer
	if s.stores {
		if p.push, err = b.Kernel(kernels.MultiGPU, "mg_push_clear"); err != nil {
			return err
		}
	}
	return nil
}

// cutWords cuts the bitmap's words by owner: part r's from word ⌈Lo/32⌉ (a
// part's Lo is a multiple of 32 unless it owns nothing) to the next
// part's.
func (s *mgSearch) cutWords() {
	k := len(s.parts)
	s.cuts = make([]int64, k+1)
	for r, part := range s.parts {
		s.cuts[r] = 4 * ((int64(part.Lo) + 31) / 32)
	}
	s.cuts[k] = 4 * ((s.n + 31) / 32)
	for r, p := range s.ps {
		p.Lo, p.Hi = int64(p.part.Lo), int64(p.part.Hi)
		p.OwnWords = [2]int64{s.cuts[r] / 4, s.cuts[r+1] / 4}
	}
}

// clearLevels clears both levels' buffers (level 0 writes 1, and the
// warm-up reads both bitmaps, after these clears, on the same stream);
// by peer stores, it then touches both bitmaps of every peer: the first
// stores into another GPU's fresh allocation cost about 100 µs on the GPU
// (four H200s: levels 0 and 1 of every search, BENCHMARKS.md), so that
// cost is the set-up's, as allocating them is: zeros, each part's bitmap q
// read while the launch clears the other level's buffer.
func (s *mgSearch) clearLevels() error {
	for _, p := range s.ps {
		for q := range 2 {
			if err := p.ClearLevel(q); err != nil {
				return err
			}
		}
	}
	if !s.stores {
		return nil
	}
	for _, p := range s.ps {
		for q := range 2 {
			if err := p.pushClear(q, q^1, true, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachPart runs f for every part at once, a part a worker of par's team:
// the host's driver calls for the GPUs go out side by side rather than
// part after part (a small level is a few calls a part, at 3 to 5 µs
// each). Where the transport gathers the bitmaps, its collectives are
// queued between two such rounds, from the caller's goroutine.
func (s *mgSearch) eachPart(f func(p *mgBFSPart, i int) error) error {
	par.ForWorker(len(s.ps), 1, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			s.errs[i] = f(s.ps[i], i)
		}
	})
	return errors.Join(s.errs...)
}

// read reads part i's stats q.
func (s *mgSearch) read(p *mgBFSPart, i, q int) (err error) {
	s.stats[i], err = p.Read(q)
	return err
}

// close waits for every part's stream, then frees the parts: a part's
// kernels may still store into another part's bitmap when a level fails
// midway.
func (s *mgSearch) close() {
	for _, st := range s.streams {
		if st != nil {
			_ = st.Synchronize() // the run's own error is the one to report
		}
	}
	for _, p := range s.ps {
		if p != nil {
			p.Free()
		}
	}
}

// level is what one level of the search found and did: the whole search's
// stats, and whether the stores' counts decided the direction (decided)
// and turned it bottom-up (turned).
type level struct {
	st              gpuop.EntStats
	decided, turned bool
}

// search runs the levels from source, timed from the search's start as one
// GPU's search is: each part marks its own vertices unvisited and queues
// the source.
func (s *mgSearch) search(ctx context.Context, source uint32) (*operators.Result, error) {
	start := time.Now()
	err := s.eachPart(func(p *mgBFSPart, i int) error {
		c := gpuop.DegreeClass(p.part.Graph.Out.Degree(source))
		s.counts[i][c] = 1
		return p.Start(source, c)
	})
	if err != nil {
		return nil, err
	}
	s.trace = gpuop.NewLevelTrace("enterprise, multi-GPU")
	cur, topDown := 0, true
	var directions gpuop.LevelDirections
	var frontierHubs uint32 // the hubs in the frontier a level expands
	for lv := int32(0); ; lv++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		directions.Note(topDown)
		next := cur ^ 1
		l, err := s.level(lv, cur, next, topDown, frontierHubs)
		if err != nil {
			return nil, err
		}
		if l.st.Found == 0 {
			return s.result(int(lv)+1, time.Since(start), directions)
		}
		if topDown, err = s.direction(&l, next, topDown); err != nil {
			return nil, err
		}
		for i := range s.ps {
			s.counts[i] = s.stats[i].Count
		}
		frontierHubs = l.st.Hubs
		cur = next
	}
}

// level runs level lv from bitmap and queues cur into next: the expansion
// (and by peer stores the stores, in the same round), then the exchange or
// the queue pass, and says what the level found.
func (s *mgSearch) level(lv int32, cur, next int, topDown bool, frontierHubs uint32) (level, error) {
	// Where the level may turn the search bottom-up, each part also queues
	// its unvisited vertices once its visits are in, and its stores list
	// the hubs into every part's hub list (atomics into the peers' memory,
	// so only where they are native: peerAtomics): the turn's second
	// round, made in the first, so that a level that turns is one round
	// too.
	spec := s.stores && topDown && s.m.peerAtomics() && speculates(s.m.speculate, frontierHubs, s.hubTotal)
	if err := s.expandRound(lv, cur, next, topDown, spec); err != nil {
		return level{}, err
	}
	var l level
	var err error
	switch {
	case s.stores && topDown:
		l, err = s.storesTopDown(next, spec)
	case s.stores:
		s.trace.Phase("expand, stores", s.streams...)
		l.st = combineStats(s.stats, false)
	default:
		l, err = s.gathered(cur, next, topDown)
	}
	if err != nil {
		return level{}, err
	}
	s.trace.Level("level %d %s: next %v, %d hubs, %d found", lv, gpuop.Direction(topDown), l.st.Count, l.st.Hubs, l.st.Found)
	if l.turned {
		s.trace.Level("bottom-up queues %v", l.st.Count)
	}
	return l, nil
}

// expandRound is a level's first round: by peer stores, a part's
// expansion and its stores (which also count its part of the next
// frontier, copy the counters to the host and clear this level's buffer,
// cur), so that the round ends once every part's stores are done; spec
// also queues the part's unvisited vertices and lists the hubs.
func (s *mgSearch) expandRound(lv int32, cur, next int, topDown, spec bool) error {
	s.calls.begin()
	err := s.eachPart(func(p *mgBFSPart, i int) error {
		s.calls.mark(i, 0, p.Stream)
		if err := p.Expand(cur, next, s.counts[i], topDown, lv); err != nil {
			return err
		}
		s.calls.mark(i, 1, p.Stream)
		if !s.stores {
			return nil
		}
		if spec {
			if err := p.QueueUnvisited(next); err != nil { // its counts are clear: cleared with the level
				return err
			}
		}
		if err := p.pushClear(next, cur, false, spec); err != nil {
			return err
		}
		s.calls.mark(i, 2, p.Stream)
		var err error
		s.stats[i], err = p.Wait(next) // the stores' kernel copied them
		s.calls.mark(i, 3, nil)
		return err
	})
	s.calls.print(lv)
	return err
}

// storesTopDown is a top-down level by peer stores after its first round:
// bottom-up nothing reads the stores until the next level, but top-down a
// second round reads every part's words: the queue pass, or, where the
// stores' counts turn the search bottom-up, the hub list and the unvisited
// vertices' queues (the top-down queues would be dropped: on one GPU,
// which learns the count from the queue pass, that pass is 84 µs of
// Kronecker 26's switch level). A speculating level that turns needs no
// second round.
func (s *mgSearch) storesTopDown(next int, spec bool) (level, error) {
	s.trace.Phase("expand, stores", s.streams...)
	own := ownStats(s.stats)
	if own.Found == 0 {
		return level{st: own}, nil
	}
	l := level{decided: true, turned: gpuop.SwitchesDirection(true, own, s.hubTotal, s.n)}
	if l.turned && spec {
		// The first round queued the unvisited and listed the hubs; no
		// queue pass counted the frontier's vertices and hubs (0 in
		// stats), which the stores' own counts sum up.
		l.st = combineStats(s.stats, false)
		l.st.Found, l.st.Hubs = own.Found, own.Hubs
		if s.m.afterTurn != nil {
			if err := s.m.afterTurn(s.ps, next); err != nil {
				return level{}, err
			}
		}
		return l, nil
	}
	err := s.eachPart(func(p *mgBFSPart, i int) (err error) {
		if l.turned {
			if err := p.BottomUpFrom(next); err != nil {
				return err
			}
			return s.read(p, i, next)
		}
		if spec {
			// The queue pass counts afresh what the first round's
			// bottom-up queues and hub lists counted.
			if err := p.ClearQueueCounts(next); err != nil {
				return err
			}
		}
		if err := p.TopDownQueues(next); err != nil {
			return err
		}
		s.stats[i], err = p.Wait(next) // the queue pass copied them
		return err
	})
	if err != nil {
		return level{}, err
	}
	if l.turned {
		s.trace.Phase("hub list, bottom-up queues", s.streams...)
	} else {
		s.trace.Phase("queue and counters", s.streams...)
	}
	l.st = combineStats(s.stats, !l.turned)
	return l, nil
}

// gathered is a level whose bitmaps the transport gathers: after the
// expansion, the gather, then each part's queue pass and the clearing of
// this level's buffer.
func (s *mgSearch) gathered(cur, next int, topDown bool) (level, error) {
	s.trace.Phase("expand", s.streams...)
	bufs := make([]*gpu.DeviceBuffer, len(s.ps))
	for i, p := range s.ps {
		bufs[i] = p.Buf.Bits[next]
	}
	if err := gatherRanges(s.m.link, s.streams, bufs, s.cuts); err != nil {
		return level{}, err
	}
	s.trace.Phase("gather", s.streams...)
	err := s.eachPart(func(p *mgBFSPart, i int) error {
		if topDown {
			if err := p.TopDownQueues(next); err != nil {
				return err
			}
		}
		if err := p.ClearLevel(cur); err != nil {
			return err
		}
		return s.read(p, i, next)
	})
	if err != nil {
		return level{}, err
	}
	s.trace.Phase("queue and counters", s.streams...)
	return level{st: combineStats(s.stats, topDown)}, nil
}

// direction is the direction of the level after l, turning the parts'
// queues (next) where the rule says so. Turning back top-down, the turn's
// queue pass counted the frontier's hubs, which the bottom-up level's
// stats do not: l's hubs become those.
func (s *mgSearch) direction(l *level, next int, topDown bool) (bool, error) {
	switch {
	case l.turned:
		return false, nil
	case l.decided: // top-down on, by the stores' counts before the queue pass
		return topDown, nil
	case !gpuop.SwitchesDirection(topDown, l.st, s.hubTotal, s.n):
		return topDown, nil
	}
	err := s.eachPart(func(p *mgBFSPart, i int) error {
		if err := p.Turn(next, topDown); err != nil {
			return err
		}
		return s.read(p, i, next)
	})
	if err == nil && !topDown {
		l.st.Hubs = combineStats(s.stats, true).Hubs
	}
	return !topDown, err
}

// result gathers the search's depths and parents after levels levels.
func (s *mgSearch) result(levels int, compute time.Duration, directions gpuop.LevelDirections) (*operators.Result, error) {
	res, err := mgBFSResult(s.ps, s.n, levels, compute, s.transfer)
	if err != nil {
		return nil, err
	}
	bitmaps, how := "gathered", "gathered by "+s.m.link.name()
	if s.stores {
		bitmaps, how = "by peer stores", "stored by the kernels into the other GPUs' memory"
	}
	res.Strategy = fmt.Sprintf("enterprise multi-GPU (%v; %s; bitmaps %s)", directions, s.m.describe(s.parts), bitmaps)
	res.StrategyReason = fmt.Sprintf("%d GPUs: Enterprise's 1-D partition (§4.4), the status exchanged as bitmaps, %s", len(s.ps), how)
	return res, nil
}

// ownStats is what the parts' stores counted of the next frontier: its
// vertices and its hubs, each part's own, which add up.
func ownStats(parts []gpuop.EntStats) gpuop.EntStats {
	var sum gpuop.EntStats
	for _, st := range parts {
		sum.Found += st.OwnFound
		sum.Hubs += st.OwnHubs
	}
	return sum
}

// combineStats is what the parts' stats of a level say of the whole
// search, as one GPU's would, their queues being top-down ones (the next
// level's frontier) where queuedTopDown is set, else bottom-up ones (the
// unvisited): the hubs of the next frontier are every part's (each queue
// pass reads the whole frontier, by the whole graph's degrees), so the most
// any part counts; found adds up (each part counts its own vertices). The
// queues: top-down each part's is the whole frontier (the frontier's
// vertices with edges into the part), so the longest stands for it;
// bottom-up each part's is its own unvisited vertices, so they add up, and
// the turn back top-down sees all of them.
func combineStats(parts []gpuop.EntStats, queuedTopDown bool) gpuop.EntStats {
	var sum gpuop.EntStats
	for _, st := range parts {
		sum.Hubs = max(sum.Hubs, st.Hubs)
		sum.Found += st.Found
		switch {
		case !queuedTopDown:
			for c := range sum.Count {
				sum.Count[c] += st.Count[c]
			}
		case st.Total() > sum.Total():
			sum.Count = st.Count
		}
	}
	return sum
}

// mgBFSResult gathers each vertex's depth and parent from its owner.
func mgBFSResult(ps []*mgBFSPart, n int64, levels int, compute, transfer time.Duration) (*operators.Result, error) {
	depth := make([]int32, n)
	parent := make([]uint32, n)
	gpuop.PoisonHost(ps[0].GPU, depth, -7)
	gpuop.PoisonHost(ps[0].GPU, parent, 0xdeadbeef)
	for _, p := range ps {
		lo, hi := int64(p.part.Lo), int64(p.part.Hi)
		if lo == hi {
			continue
		}
		d, _ := p.Buf.Depth.Slice(4*lo, 4*(hi-lo))
		par, _ := p.Buf.Parent.Slice(4*lo, 4*(hi-lo))
		if err := p.GPU.DownloadAll(p.Stream, gpuop.HostCopyOf(depth[lo:hi], d), gpuop.HostCopyOf(parent[lo:hi], par)); err != nil {
			return nil, err
		}
	}
	return &operators.Result{
		Op: "bfs", Backend: "gpu", Iterations: levels, Compute: compute, Transfer: transfer,
		Columns: []operators.Column{
			{Name: "depth", Type: operators.Int32Column, Int32: depth},
			{Name: "parent", Type: operators.VertexColumn, Vertex: parent},
		},
	}, nil
}
