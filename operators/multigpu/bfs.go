package multigpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// BFS over several GPUs, after Enterprise §4.4, on the partition of
// mgpu.go. Each GPU runs a level of Enterprise (gpu_bfs_enterprise.go) on
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
	return p.push.LaunchFor(p.Stream, max(hi-lo, clearWords), gpuop.BlockSize, p.Buf.Bits[q], lo, hi,
		p.peers[q], p.npeers, p.HubMask, p.Buf.Stats[q], p.HostStats, p.Buf.Level[done], clearWords, gpuop.Flag(zeros), p.hubLists[q], p.hubCounts[q], p.nparts, p.HubCap(), gpuop.Flag(listHubs))
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

func runBFSMulti(ctx context.Context, m *MultiGPU, in operators.Input, _ float64) (*operators.Result, error) {
	g := in.Graph
	n := int64(g.NumVertices())
	parts, err := m.partitions(g, 0)
	if err != nil {
		return nil, err
	}
	k := len(parts)
	ps := make([]*mgBFSPart, k)
	streams := make([]*gpu.Stream, k)
	defer func() {
		// A part's kernels may still store into another part's bitmap
		// when a level fails midway: every stream finishes before any
		// part's memory goes back.
		for _, s := range streams {
			if s != nil {
				_ = s.Synchronize() // the run's own error is the one to report
			}
		}
		for _, p := range ps {
			if p != nil {
				p.Free()
			}
		}
	}()
	stores := m.PeerStores && m.reachesPeers()
	var transfer time.Duration
	for i, part := range parts {
		b := m.gpus[i]
		e, err := gpuop.NewEntSearch(b, part.Graph, g)
		if err != nil {
			return nil, err
		}
		p := &mgBFSPart{EntSearch: e, part: part}
		ps[i], streams[i] = p, e.Stream
		transfer += e.Transfer
		if stores {
			if p.push, err = b.Kernel(kernels.MultiGPU, "mg_push_clear"); err != nil {
				return nil, err
			}
		}
	}
	if stores {
		if err := listPeers(ps); err != nil {
			return nil, err
		}
	}
	// The bitmap's words by owner: part r's from word ⌈Lo/32⌉ (a part's Lo
	// is a multiple of 32 unless it owns nothing) to the next part's.
	words := (n + 31) / 32
	cuts := make([]int64, k+1)
	for r, part := range parts {
		cuts[r] = 4 * ((int64(part.Lo) + 31) / 32)
	}
	cuts[k] = 4 * words
	for r, p := range ps {
		p.Lo, p.Hi = int64(p.part.Lo), int64(p.part.Hi)
		p.OwnWords = [2]int64{cuts[r] / 4, cuts[r+1] / 4}
	}
	hubTotal := ps[0].HubCount // the whole graph's hubs
	for _, p := range ps {
		// Both levels clear: level 0 writes 1, and the warm-up below reads
		// both bitmaps (after these clears, on the same stream).
		for q := range 2 {
			if err := p.ClearLevel(q); err != nil {
				return nil, err
			}
		}
	}
	if stores {
		// The first stores into another GPU's fresh allocation cost about
		// 100 µs on the GPU (four H200s: levels 0 and 1 of every search,
		// BENCHMARKS.md), so the set-up touches both bitmaps of every
		// peer, as allocating them is set-up: zeros, each part's bitmap q
		// read while the launch clears the other level's buffer.
		for _, p := range ps {
			for q := range 2 {
				if err := p.pushClear(q, q^1, true, false); err != nil {
					return nil, err
				}
			}
		}
	}
	errs := make([]error, k)
	// eachPart runs f for every part at once, a part a worker of par's
	// team: the host's driver calls for the GPUs go out side by side
	// rather than part after part (a small level is a few calls a part, at
	// 3 to 5 µs each). Where the transport gathers the bitmaps, its
	// collectives are queued between two such rounds, from this goroutine.
	eachPart := func(f func(p *mgBFSPart, i int) error) error {
		par.ForWorker(k, 1, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				errs[i] = f(ps[i], i)
			}
		})
		return errors.Join(errs...)
	}
	// The set-up's wait is a round too: it wakes the team's workers,
	// which then spin for the first level rather than sleep through it
	// (waking them there cost level 0 about 100 µs on four GPUs).
	if err := eachPart(func(p *mgBFSPart, _ int) error { return p.Stream.Synchronize() }); err != nil {
		return nil, err
	}
	calls, err := newRoundTrace(ps, stores)
	if err != nil {
		return nil, err
	}
	defer calls.destroy()
	// Timed from the search's start, as one GPU's search is: each part
	// marks its own vertices unvisited and queues the source.
	start := time.Now()
	counts := make([][gpuop.Classes]uint32, k)
	err = eachPart(func(p *mgBFSPart, i int) error {
		c := gpuop.DegreeClass(p.part.Graph.Out.Degree(in.Source))
		counts[i][c] = 1
		return p.Start(in.Source, c)
	})
	if err != nil {
		return nil, err
	}
	trace := gpuop.NewLevelTrace("enterprise, multi-GPU")
	cur, topDown := 0, true
	var directions gpuop.LevelDirections
	stats := make([]gpuop.EntStats, k)
	// frontierHubs is the hubs in the frontier a level expands.
	var frontierHubs uint32
	read := func(p *mgBFSPart, i, q int) (err error) {
		stats[i], err = p.Read(q)
		return err
	}
	for level := int32(0); ; level++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		directions.Note(topDown)
		next := cur ^ 1
		// By peer stores, a part's level is its expansion and its stores
		// (which also count its part of the next frontier, copy the
		// counters to the host and clear this level's buffer, cur): the
		// round ends once every part's stores are done. Bottom-up nothing
		// reads them until the next level: one round a level. Top-down a
		// second round reads every part's words: the queue pass, or, where
		// the stores' counts turn the search bottom-up, the hub list and
		// the unvisited vertices' queues (the top-down queues would be
		// dropped: on one GPU, which learns the count from the queue pass,
		// that pass is 84 µs of Kronecker 26's switch level). Where the
		// level may turn the search bottom-up, each part also queues its
		// unvisited vertices once its visits are in, and its stores list
		// the hubs into every part's hub list (atomics into the peers'
		// memory, so only where they are native: peerAtomics): the turn's
		// second round, made in the first, so that a level that turns is
		// one round too.
		spec := stores && topDown && m.peerAtomics() && speculates(m.speculate, frontierHubs, hubTotal)
		calls.begin()
		err := eachPart(func(p *mgBFSPart, i int) error {
			calls.mark(i, 0, p.Stream)
			if err := p.Expand(cur, next, counts[i], topDown, level); err != nil {
				return err
			}
			calls.mark(i, 1, p.Stream)
			if !stores {
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
			calls.mark(i, 2, p.Stream)
			var err error
			stats[i], err = p.Wait(next) // the stores' kernel copied them
			calls.mark(i, 3, nil)
			return err
		})
		if err != nil {
			return nil, err
		}
		calls.print(level)
		var st gpuop.EntStats
		decided, turned := false, false
		switch {
		case stores && topDown:
			trace.Phase("expand, stores", streams...)
			own := ownStats(stats)
			if own.Found == 0 {
				st = own
				break
			}
			decided, turned = true, gpuop.SwitchesDirection(true, own, hubTotal, n)
			if turned && spec {
				// The first round queued the unvisited and listed the hubs;
				// no queue pass counted the frontier's vertices and hubs
				// (0 in stats), which the stores' own counts sum up.
				st = combineStats(stats, false)
				st.Found, st.Hubs = own.Found, own.Hubs
				if m.afterTurn != nil {
					if err := m.afterTurn(ps, next); err != nil {
						return nil, err
					}
				}
				break
			}
			err := eachPart(func(p *mgBFSPart, i int) (err error) {
				if turned {
					if err := p.BottomUpFrom(next); err != nil {
						return err
					}
					return read(p, i, next)
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
				stats[i], err = p.Wait(next) // the queue pass copied them
				return err
			})
			if err != nil {
				return nil, err
			}
			if turned {
				trace.Phase("hub list, bottom-up queues", streams...)
			} else {
				trace.Phase("queue and counters", streams...)
			}
			st = combineStats(stats, !turned)
		case stores:
			trace.Phase("expand, stores", streams...)
			st = combineStats(stats, false)
		default:
			trace.Phase("expand", streams...)
			bufs := make([]*gpu.DeviceBuffer, k)
			for i, p := range ps {
				bufs[i] = p.Buf.Bits[next]
			}
			if err := gatherRanges(m.link, streams, bufs, cuts); err != nil {
				return nil, err
			}
			trace.Phase("gather", streams...)
			err := eachPart(func(p *mgBFSPart, i int) error {
				if topDown {
					if err := p.TopDownQueues(next); err != nil {
						return err
					}
				}
				if err := p.ClearLevel(cur); err != nil {
					return err
				}
				return read(p, i, next)
			})
			if err != nil {
				return nil, err
			}
			trace.Phase("queue and counters", streams...)
			st = combineStats(stats, topDown)
		}
		trace.Level("level %d %s: next %v, %d hubs, %d found", level, gpuop.Direction(topDown), st.Count, st.Hubs, st.Found)
		if turned {
			trace.Level("bottom-up queues %v", st.Count)
		}
		switch {
		case st.Found == 0:
			compute := time.Since(start)
			res, err := mgBFSResult(ps, n, int(level)+1, compute, transfer)
			if err != nil {
				return nil, err
			}
			bitmaps, how := "gathered", "gathered by "+m.link.name()
			if stores {
				bitmaps, how = "by peer stores", "stored by the kernels into the other GPUs' memory"
			}
			res.Strategy = fmt.Sprintf("enterprise multi-GPU (%v; %s; bitmaps %s)", directions, m.describe(parts), bitmaps)
			res.StrategyReason = fmt.Sprintf("%d GPUs: Enterprise's 1-D partition (§4.4), the status exchanged as bitmaps, %s", k, how)
			return res, nil
		case turned:
			topDown = false
		case decided: // top-down on, by the stores' counts before the queue pass
		case gpuop.SwitchesDirection(topDown, st, hubTotal, n):
			err := eachPart(func(p *mgBFSPart, i int) error {
				if err := p.Turn(next, topDown); err != nil {
					return err
				}
				return read(p, i, next)
			})
			if err != nil {
				return nil, err
			}
			topDown = !topDown
			if topDown {
				// The turn's queue pass counted the frontier's hubs, which
				// the bottom-up level's stats do not.
				st.Hubs = combineStats(stats, true).Hubs
			}
		}
		for i := range ps {
			counts[i] = stats[i].Count
		}
		frontierHubs = st.Hubs
		cur = next
	}
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
