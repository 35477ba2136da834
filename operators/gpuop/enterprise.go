package gpuop

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"structs"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/kernels"
)

// BFS after Enterprise (SC'15 §4; kernels/bfs_enterprise.cu): per level,
// the frontier's four degree classes expand concurrently on four streams,
// setting the next frontier's bitmap; the next queues come from a pass over
// that bitmap; the search goes bottom-up when γ, the share of hub vertices
// in the frontier, passes 30%.

// Classes is CLASSES in kernels/frontier.cuh: small, middle, large, extreme.
const Classes = 4

// LevelStats in kernels/frontier.cuh, padded to 64 bytes.
const (
	EntStatsBytes = 64
	entCountAt    = 0
	entHubsAt     = 16
	entFoundAt    = 20
	EntHubListAt  = 24
	entOwnFoundAt = 28 // own_found, then own_hubs
	entOwnHubsAt  = 32
)

// EntStats is what a level leaves for the host.
type EntStats struct {
	Count [Classes]uint32 // the next queue, per class
	Hubs  uint32          // hub vertices in the next top-down frontier
	// Found is the vertices a bottom-up level visited, or those in the
	// frontier a top-down queue pass read (queued or not: a vertex without
	// edges is not queued), counting only the search's own (a part's, on
	// several GPUs): either way, 0 over all parts ends the search.
	Found uint32
	// OwnFound and OwnHubs are a part's own vertices in the next frontier
	// and the hubs among them, counted by its stores (multigpu/bfs.go) before
	// any queue pass.
	OwnFound, OwnHubs uint32
}

func parseEntStats(b []byte) EntStats {
	var st EntStats
	for c := range st.Count {
		st.Count[c] = binary.LittleEndian.Uint32(b[entCountAt+4*c:])
	}
	st.Hubs = binary.LittleEndian.Uint32(b[entHubsAt:])
	st.Found = binary.LittleEndian.Uint32(b[entFoundAt:])
	st.OwnFound = binary.LittleEndian.Uint32(b[entOwnFoundAt:])
	st.OwnHubs = binary.LittleEndian.Uint32(b[entOwnHubsAt:])
	return st
}

func (st EntStats) Total() int64 {
	var t int64
	for _, c := range st.Count {
		t += int64(c)
	}
	return t
}

// Direction switching: bottom-up when more than gammaPercent of the hub
// vertices are in the frontier (§4.3); top-down again when a bottom-up
// level visits fewer than n/entBeta vertices (Beamer's β, as on the CPU)
// while more than that many remain unvisited: a bottom-up level costs the
// edges of its queue, and a top-down one a scan of the status array, so a
// small queue stays bottom-up to the end.
const (
	gammaPercent = 30
	entBeta      = 24
)

// hubCacheTarget is about how many hub vertices Enterprise tracks: the
// shared-memory cache has 2,048 slots (HUB_CACHE_SLOTS).
const hubCacheTarget = 2048

// EnterpriseHubs is the hub threshold τ (a hub has more than degree
// out-edges) and the number of hubs T_h: the smallest power of two, at least
// 32, above which at most hubCacheTarget vertices lie. The paper calls τ
// graph specific; this makes the hubs the few thousand vertices of highest
// degree, the ones a cache of that size can hold. degree is 0 when the
// graph has no vertex of 32 edges or more (no hubs: never bottom-up).
func EnterpriseHubs(d convert.DegreeStats) (degree, hubs int64) {
	above := int64(0) // vertices in buckets k and up
	for k := len(d.Log2) - 1; k >= 5; k-- {
		if above+d.Log2[k] > hubCacheTarget {
			return int64(1)<<(k+1) - 1, above
		}
		above += d.Log2[k]
	}
	if above == 0 {
		return 0, 0
	}
	return 31, above
}

// enterpriseKernels are the module's kernels, the four top-down ones by
// class.
type enterpriseKernels struct {
	init, queue, unvisited *Kernel
	classes, hubBits       *Kernel // the layouts outClasses, inClasses and hubBits
	topDown                [Classes]*Kernel
	bottomUp               [3]*Kernel // small (4 lanes a vertex), middle (16), wide (32: large and extreme)
}

func (b *GPU) enterpriseKernels() (*enterpriseKernels, error) {
	k := &enterpriseKernels{}
	err := b.KernelsOf(kernels.BFSEnterprise, map[string]**Kernel{
		"ent_init": &k.init, "ent_queue": &k.queue, "ent_unvisited": &k.unvisited,
		"ent_classes": &k.classes, "ent_hub_bits": &k.hubBits,
		"ent_bu_small": &k.bottomUp[0], "ent_bu_middle": &k.bottomUp[1], "ent_bu_wide": &k.bottomUp[2],
		"ent_td_thread": &k.topDown[0], "ent_td_warp": &k.topDown[1], "ent_td_block": &k.topDown[2], "ent_td_grid": &k.topDown[3],
	})
	return k, err
}

// tdItems is how many work items a class's queue entries make for its
// top-down kernel (a large vertex is largeSegments segments), and
// tdPerBlock how many items a block takes: 256 threads, 8 warps, a segment;
// the grid kernel runs on the full grid (0).
var (
	tdItems    = [Classes]int64{1, 1, largeSegments, 1}
	tdPerBlock = [Classes]int64{BlockSize, BlockSize / 32, 1, 0}
)

// buPerBlock is how many vertices a block of each bottom-up kernel takes at
// a time: groups of 4, 16 and 32 lanes.
var buPerBlock = [3]int64{BlockSize / 4, BlockSize / 16, BlockSize / 32}

// largeSegments is LARGE_SEGMENTS in kernels/bfs_enterprise.cu.
const largeSegments = 32

// EntBuffers are a search's device buffers, the queues and hub lists
// double-buffered (this level's, the next's).
type EntBuffers struct {
	Depth, Parent *gpu.DeviceBuffer
	queues        [2]*gpu.DeviceBuffer // classes × n vertices each
	Hubs          [2]*gpu.DeviceBuffer
	Level         [2]*gpu.DeviceBuffer // a level's stats, then its bitmap
	Bits          [2]*gpu.DeviceBuffer // the frontier as a bitmap
	Stats         [2]*gpu.DeviceBuffer
}

// EntSearch is one search's state on one GPU, over a whole graph or over
// one part of a partitioned graph (multigpu/bfs.go), whose layouts hold the
// whole graph's vertex ids.
type EntSearch struct {
	GPU    *GPU
	Stream *gpu.Stream
	fan    *streamFan
	k      *enterpriseKernels
	n      int64
	// Lo and Hi bound the vertices the search owns: all, or a part's; the
	// bottom-up queues hold its unvisited ones. found counts the frontier's
	// vertices in the bitmap's words [ownWords[0], ownWords[1]): all, or
	// the part's words of the exchange (multigpu/bfs.go).
	Lo, Hi         int64
	OwnWords       [2]int64
	outOff, outTgt *gpu.DeviceBuffer
	inOff, inSrc   *gpu.DeviceBuffer
	// outClass and inClass are the vertices' degree classes (class_nibble
	// in kernels/bfs_enterprise.cu) by the rows a level walks; HubMask
	// marks the hubs, by the whole graph's degrees for a part of a
	// partitioned graph (a hub is one everywhere), of which there are
	// hubCount.
	outClass, inClass, HubMask *gpu.DeviceBuffer
	HubCount                   int64
	Buf                        EntBuffers
	// host is where a level's stats reach the host: copied by fetch, or
	// by the level's last kernel (ent_queue, mg_push_clear) through
	// hostStats, its device address.
	host      *Counters
	HostStats gpu.DevicePtr
	Transfer  time.Duration
	Releases
}

// NewEntSearch copies g's layouts to b (where they are not there yet) and
// allocates a search's buffers, poisoned when b.Poison is set. whole is the
// graph whose out-degrees make hubs: g, or the graph g is a part of.
func NewEntSearch(b *GPU, g, whole *convert.Graph) (e *EntSearch, err error) {
	n := int64(g.NumVertices())
	e = &EntSearch{GPU: b, n: n, Hi: n, OwnWords: [2]int64{0, (n + 31) / 32}}
	defer func() {
		if err != nil {
			e.Free()
		}
	}()
	if e.k, err = b.enterpriseKernels(); err != nil {
		return nil, err
	}
	if e.Stream, err = b.ctx.NewStream(); err != nil {
		return nil, err
	}
	e.Add(func() { e.Stream.Destroy() })
	if e.fan, err = newStreamFan(b.ctx, e.Stream, Classes); err != nil {
		return nil, err
	}
	e.Add(e.fan.destroy)
	parts, transfer, err := b.Layouts(g, e.Stream, OutOffsets, OutTargets, InOffsets, InSources)
	if err != nil {
		return nil, err
	}
	e.Transfer = transfer
	e.outOff, e.outTgt, e.inOff, e.inSrc = parts[0], parts[1], parts[2], parts[3]
	if err := e.vertexBits(g, whole); err != nil {
		return nil, err
	}
	bufs, free, err := b.Buffers(entBufferSizes(n, e.HubCount)...)
	if err != nil {
		return nil, err
	}
	e.Add(free)
	eb := &e.Buf
	eb.Depth, eb.Parent = bufs[0], bufs[1]
	eb.queues = [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}
	eb.Hubs = [2]*gpu.DeviceBuffer{bufs[4], bufs[5]}
	eb.Level = [2]*gpu.DeviceBuffer{bufs[6], bufs[7]}
	for q := range 2 {
		eb.Stats[q], _ = eb.Level[q].Slice(0, EntStatsBytes)
		eb.Bits[q], _ = eb.Level[q].Slice(EntStatsBytes, eb.Level[q].Size()-EntStatsBytes)
	}
	if err := b.PoisonBuffers(e.Stream, bufs...); err != nil {
		return nil, err
	}
	if e.host, err = NewCounters(b, EntStatsBytes); err != nil {
		return nil, err
	}
	e.Add(e.host.Free)
	if e.HostStats, err = e.host.host.DevicePtr(); err != nil {
		return nil, err
	}
	// The kernels write into host's memory: the search's work ends before
	// it goes back to the pool (a level that failed midway may have left a
	// queue pass running).
	e.Add(func() { _ = e.Stream.Synchronize() }) // a failed search reports its own error
	return e, nil
}

// entBufferSizes are the sizes of a search's buffers (entBuffers) over n
// vertices with hubs hubs, in newEntSearch's order: depth, parent, the
// queues twice (classes × n), the hub lists twice, and each level's
// counters and frontier bitmap, which lie together so that a level clears
// both with one memset.
func entBufferSizes(n, hubs int64) []int64 {
	queueBytes := Classes * 4 * n
	levelBytes := EntStatsBytes + 4*((n+31)/32)
	return []int64{4 * n, 4 * n, queueBytes, queueBytes, 4 * (hubs + 1), 4 * (hubs + 1), levelBytes, levelBytes}
}

// EntBufferBytes is the device memory of a search's buffers.
func EntBufferBytes(n, hubs int64) int64 {
	var sum int64
	for _, b := range entBufferSizes(n, hubs) {
		sum += b
	}
	return sum
}

// vertexBits finds or makes on the GPU g's degree classes, out and in, and
// whole's hubs, from the offsets there (a graph built on the GPU has
// nothing else on the host to make them from).
func (e *EntSearch) vertexBits(g, whole *convert.Graph) error {
	words := (e.n + 31) / 32
	classesOf := func(offs *gpu.DeviceBuffer) func(*gpu.DeviceBuffer) error {
		return func(buf *gpu.DeviceBuffer) error {
			return e.k.classes.LaunchFor(e.Stream, 4*words, BlockSize, offs, e.n, buf, 4*words)
		}
	}
	var err error
	if e.outClass, err = e.GPU.deviceLayout(g, e.Stream, OutClasses, classesOf(e.outOff)); err != nil {
		return err
	}
	if e.inClass, err = e.GPU.deviceLayout(g, e.Stream, InClasses, classesOf(e.inOff)); err != nil {
		return err
	}
	degree, hubs := EnterpriseHubs(whole.Degrees())
	e.HubCount = hubs
	e.HubMask, err = e.GPU.deviceLayout(whole, e.Stream, HubBits, func(buf *gpu.DeviceBuffer) error {
		if whole != g {
			// A part: the whole graph's degrees are on the host only (its
			// offsets would take 8 bytes a vertex on every GPU).
			return gpu.Upload(e.Stream, buf, hubBitmap(whole.Out.Offsets, degree))
		}
		return e.k.hubBits.LaunchFor(e.Stream, words, BlockSize, e.outOff, e.n, degree, buf, words)
	})
	return err
}

// hubBitmap has a bit set for every vertex of the rows offs with more than
// degree rows (none when degree is 0), as ent_hub_bits makes it on the GPU.
func hubBitmap(offs []int64, degree int64) []uint32 {
	n := len(offs) - 1
	out := make([]uint32, (n+31)/32)
	if degree == 0 {
		return out
	}
	par.For(len(out), 1<<12, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var word uint32
			for j, v := 0, 32*i; j < 32 && v < n; j, v = j+1, v+1 {
				if offs[v+1]-offs[v] > degree {
					word |= 1 << j
				}
			}
			out[i] = word
		}
	})
	return out
}

// queue is the device address of class c's queue in buffer q.
func (e *EntSearch) queue(q, c int) gpu.DevicePtr {
	return e.Buf.queues[q].Ptr() + gpu.DevicePtr(int64(c)*4*e.n)
}

// Field is the device address of the stats Field at off in buffer q.
func (e *EntSearch) Field(q int, off int64) gpu.DevicePtr {
	return e.Buf.Stats[q].Ptr() + gpu.DevicePtr(off)
}

// Read waits for the level and returns what it left in stats q, copied
// after it.
func (e *EntSearch) Read(q int) (EntStats, error) {
	raw, err := e.host.read(e.Stream, e.Buf.Stats[q])
	if err != nil {
		return EntStats{}, err
	}
	return parseEntStats(raw), nil
}

// Wait is read where the level's last kernel copied stats q to the host
// itself (ent_queue, mg_push_clear): a driver call and a DMA less a level,
// 10–25 µs of a small one on four GPUs.
func (e *EntSearch) Wait(q int) (EntStats, error) {
	raw, err := e.host.Wait(e.Stream, e.Buf.Stats[q])
	if err != nil {
		return EntStats{}, err
	}
	return parseEntStats(raw), nil
}

// Start queues the search from source: its own vertices unvisited (a
// part's: the others' are never read), the source at depth 0 in its
// class's queue of buffer 0, the first level top-down.
func (e *EntSearch) Start(source uint32, srcClass int) error {
	ownDepth, err := e.Buf.Depth.Slice(4*e.Lo, 4*(e.Hi-e.Lo))
	if err != nil {
		return err
	}
	ownParent, err := e.Buf.Parent.Slice(4*e.Lo, 4*(e.Hi-e.Lo))
	if err != nil {
		return err
	}
	return startSearch(e.Stream, ownDepth, ownParent, e.k.init, e.Buf.Depth, e.Buf.Parent, source, e.queue(0, srcClass))
}

// TopDownQueues queues the frontier in bitmap q into buffer q: classes by
// out-degree, hubs listed, the search's own vertices among them counted.
// Stats q must be zero (the counts, hubs, found, hub list, and the count of
// finished blocks with which ent_queue's last block copies them to the
// host): cleared with the bitmap before the level (clearLevel, or on
// several GPUs the previous level's mg_push_clear; the top-down kernels
// write none), or by turn before it requeues.
func (e *EntSearch) TopDownQueues(q int) error { return e.queuePass(q, true) }

// listHubs is topDownQueues without the queues: the frontier's hubs listed
// for the bottom-up level's cache, and its hubs and own vertices counted.
func (e *EntSearch) listHubs(q int) error { return e.queuePass(q, false) }

// queuePass is ent_queue over bitmap q: the top-down queues dealt out by
// class where deal is set; the hubs listed and counted, and the own
// vertices counted, either way; stats q copied to the host (wait).
func (e *EntSearch) queuePass(q int, deal bool) error {
	eb := &e.Buf
	words := (e.n + 31) / 32
	a := queueArgs{
		classes: e.outClass.Ptr(), hubBits: e.HubMask.Ptr(), bits: eb.Bits[q].Ptr(), queues: PtrOf(eb.queues[q]),
		stats: eb.Stats[q].Ptr(), hubs: eb.Hubs[q].Ptr(), hostStats: e.HostStats,
		words: words, ownLo: e.OwnWords[0], ownHi: e.OwnWords[1], cap: e.n, hubCap: e.HubCap(), deal: Flag(deal),
	}
	return e.k.queue.LaunchFor(e.Stream, words, BlockSize, gpu.Args(&a))
}

// queueArgs mirrors kernels/bfs_enterprise.cu's QueueArgs, field by field.
type queueArgs struct {
	_                              structs.HostLayout
	classes, hubBits, bits, queues gpu.DevicePtr
	stats, hubs, hostStats         gpu.DevicePtr
	words, ownLo, ownHi, cap       int64
	hubCap                         uint32
	deal                           int32
}

// HubCap is the room of a hub list, in vertices.
func (e *EntSearch) HubCap() uint32 { return uint32(e.HubCount + 1) }

// bottomUpQueues replaces the queues of buffer q by the search's unvisited
// vertices, by in-degree; the hub list and bitmap stay.
func (e *EntSearch) bottomUpQueues(q int) error {
	counts, _ := e.Buf.Stats[q].Slice(entCountAt, 4*Classes)
	if err := counts.Memset8(e.Stream, 0); err != nil {
		return err
	}
	return e.QueueUnvisited(q)
}

// QueueUnvisited queues the search's unvisited vertices into the queues of
// buffer q, by in-degree, counting them into stats q's counts, which must
// be clear.
func (e *EntSearch) QueueUnvisited(q int) error {
	if e.Lo == e.Hi {
		return nil
	}
	eb := &e.Buf
	return e.k.unvisited.LaunchFor(e.Stream, e.Hi-e.Lo, BlockSize, e.inClass, eb.Depth, e.Lo, e.Hi,
		eb.queues[q], e.n, eb.Stats[q])
}

// ClearQueueCounts clears what a queue pass counts into stats q (the
// queues' counts, the hubs, the vertices found, the hub list's length),
// for one to count afresh; the stores' own counts stay.
func (e *EntSearch) ClearQueueCounts(q int) error {
	counts, _ := e.Buf.Stats[q].Slice(0, entOwnFoundAt)
	return counts.Memset8(e.Stream, 0)
}

// ClearLevel clears stats q and bitmap q, for a level to write.
func (e *EntSearch) ClearLevel(q int) error { return e.Buf.Level[q].Memset8(e.Stream, 0) }

// Expand queues level's kernels over the queues of buffer cur (count
// vertices by class), writing the next level's stats (and, bottom-up, its
// queues) and its bitmap into buffer next, which must be clear
// (clearLevel): either direction sets the visits' bits and adds to the
// counters.
func (e *EntSearch) Expand(cur, next int, count [Classes]uint32, topDown bool, level int32) error {
	eb, k, s := &e.Buf, e.k, e.Stream
	// Classes with enough vertices between them run concurrently on their
	// streams (§4.2); otherwise one after another on the main stream,
	// without the events of a fork and join: a small level's kernels take
	// a few µs each on the GPU, and each event as long on the host (on
	// several GPUs, where a small level is mostly the host's calls, for
	// every part).
	var used uint32
	var vertices int64
	for c, n := range count {
		if n > 0 {
			used |= 1 << c
			vertices += int64(n)
		}
	}
	fan := bits.OnesCount32(used) > 1 && vertices >= fanMinVertices
	stream := func(c int) *gpu.Stream { return s }
	if fan {
		stream = e.fan.stream
		if err := e.fan.begin(used); err != nil {
			return err
		}
	}
	for c := range Classes {
		if count[c] == 0 {
			continue
		}
		var err error
		if topDown {
			err = k.topDown[c].LaunchFor(stream(c), int64(count[c])*tdItems[c], tdPerBlock[c],
				e.outOff, e.outTgt, eb.Depth, eb.Parent, e.queue(cur, c), count[c], level, eb.Bits[next])
		} else {
			bu, perBlock := k.bottomUp[min(c, 2)], buPerBlock[min(c, 2)]
			a := bottomUpArgs{
				inOffsets: e.inOff.Ptr(), inSources: e.inSrc.Ptr(), hubBits: e.HubMask.Ptr(),
				depth: eb.Depth.Ptr(), parent: eb.Parent.Ptr(), queue: e.queue(cur, c),
				hubs: eb.Hubs[cur].Ptr(), hubCount: e.Field(cur, EntHubListAt), bits: eb.Bits[cur].Ptr(),
				nextQueue: e.queue(next, c), nextCount: e.Field(next, entCountAt+4*int64(c)),
				stats: eb.Stats[next].Ptr(), nextHubs: eb.Hubs[next].Ptr(), nextBits: eb.Bits[next].Ptr(),
				count: count[c], level: level, hubCap: e.HubCap(),
			}
			err = bu.LaunchFor(stream(c), int64(count[c]), perBlock, gpu.Args(&a))
		}
		if err != nil {
			if fan {
				// The main stream waits for what the side streams run, so
				// that the caller's wait for it covers their kernels
				// before the search's memory goes back.
				_ = e.fan.end(used) // the launch's error is the one to report
			}
			return err
		}
	}
	if fan {
		return e.fan.end(used)
	}
	return nil
}

// bottomUpArgs mirrors kernels/bfs_enterprise.cu's BottomUpArgs, field by
// field: the arguments of a bottom-up step (ent_bu_*).
type bottomUpArgs struct {
	_                             structs.HostLayout
	inOffsets, inSources, hubBits gpu.DevicePtr
	depth, parent, queue          gpu.DevicePtr
	hubs, hubCount, bits          gpu.DevicePtr
	nextQueue, nextCount, stats   gpu.DevicePtr
	nextHubs, nextBits            gpu.DevicePtr
	count                         uint32
	level                         int32
	hubCap                        uint32
}

// fanMinVertices is the fewest queued vertices whose classes run
// concurrently. (Kronecker 26 on one H200: 3.52 ms a search with it, 3.48
// with every level's classes concurrent, 3.50 before the fork left out
// idle streams: alike. On four GPUs the host's calls are what counts.)
const fanMinVertices = 4096

// runEnterprise runs Enterprise's search: levels top-down while few hubs
// are in the frontier, bottom-up from the explosion, top-down again once
// the frontier thins.
func runEnterprise(en *enactor) error {
	g := en.g
	e, err := NewEntSearch(en.b, g, g)
	if err != nil {
		return err
	}
	en.done.Add(e.Free)
	en.adopt(e.Stream)
	en.res.Transfer += e.Transfer
	began := time.Now()
	if err := en.start(); err != nil {
		return err
	}
	levels, directions, err := e.levels(en.ctx, en.in.Source, DegreeClass(g.Out.Degree(en.in.Source)))
	if err != nil {
		return err
	}
	if err := en.stop(); err != nil {
		return err
	}
	// Events time the search from when the GPU reached the start, the
	// host's clock (as on several GPUs) from before the first call.
	if trace := NewLevelTrace("enterprise"); trace != nil {
		trace.Level("search: %.1f µs by the events, %.1f by the host's clock", Micros(en.res.Compute), Micros(time.Since(began)))
	}
	return bfsResult(en, e.Buf.Depth, e.Buf.Parent, fmt.Sprintf("enterprise (%v)", directions), levels)
}

// levels runs the search's levels from source, of degree class srcClass,
// and returns how many there were and in which directions.
func (e *EntSearch) levels(ctx context.Context, source uint32, srcClass int) (int, LevelDirections, error) {
	var directions LevelDirections
	var count [Classes]uint32
	count[srcClass] = 1
	if err := e.Start(source, srcClass); err != nil {
		return 0, directions, err
	}
	trace := NewLevelTrace("enterprise")
	cur, topDown := 0, true
	for level := int32(0); ; level++ {
		if err := ctx.Err(); err != nil {
			return 0, directions, err
		}
		directions.Note(topDown)
		next := cur ^ 1
		st, err := e.level(cur, next, count, topDown, level, trace)
		if err != nil {
			return 0, directions, err
		}
		trace.Level("level %d %s, queues %v: next %v, %d hubs, %d found", level, Direction(topDown), count, st.Count, st.Hubs, st.Found)
		switch {
		case st.Found == 0:
			return int(level) + 1, directions, nil
		case SwitchesDirection(topDown, st, e.HubCount, e.n):
			if err := e.Turn(next, topDown); err != nil {
				return 0, directions, err
			}
			topDown = !topDown
			if st, err = e.Read(next); err != nil {
				return 0, directions, err
			}
			trace.Level("%s queues %v", Direction(topDown), st.Count)
		}
		count = st.Count
		cur = next
	}
}

// level runs one level from queues cur (count vertices a class) into next,
// and returns what it found.
func (e *EntSearch) level(cur, next int, count [Classes]uint32, topDown bool, level int32, trace *LevelTrace) (EntStats, error) {
	if err := e.ClearLevel(next); err != nil {
		return EntStats{}, err
	}
	if err := e.Expand(cur, next, count, topDown, level); err != nil {
		return EntStats{}, err
	}
	trace.Phase("expand", e.Stream)
	if !topDown {
		return e.Read(next)
	}
	if err := e.TopDownQueues(next); err != nil {
		return EntStats{}, err
	}
	trace.Phase("queue", e.Stream)
	return e.Wait(next) // the queue pass copied them
}

// SwitchesDirection is the rule of switching above, after a level that
// left st, on a graph of n vertices and hubTotal hubs.
func SwitchesDirection(topDown bool, st EntStats, hubTotal, n int64) bool {
	if topDown {
		return hubTotal > 0 && int64(st.Hubs)*100 > gammaPercent*hubTotal
	}
	return int64(st.Found) < n/entBeta && st.Total() > n/entBeta
}

// Turn replaces the queues of buffer q, made for the direction topDown,
// by the other direction's: at the explosion level the unvisited vertices
// replace the frontier; going back top-down, the frontier in bitmap q
// replaces the unvisited.
func (e *EntSearch) Turn(q int, topDown bool) error {
	if topDown {
		return e.bottomUpQueues(q)
	}
	if err := e.Buf.Stats[q].Memset8(e.Stream, 0); err != nil {
		return err
	}
	return e.TopDownQueues(q)
}

// BottomUpFrom turns bottom-up at the frontier in bitmap q without its
// top-down queues: its hubs listed (the bottom-up level's cache), the
// unvisited vertices queued into buffer q.
func (e *EntSearch) BottomUpFrom(q int) error {
	if err := e.listHubs(q); err != nil {
		return err
	}
	return e.bottomUpQueues(q)
}

// LevelDirections counts a search's levels run top-down and bottom-up.
type LevelDirections [2]int

func (d *LevelDirections) Note(topDown bool) {
	if topDown {
		d[0]++
	} else {
		d[1]++
	}
}

func (d LevelDirections) String() string {
	return fmt.Sprintf("%d top-down, %d bottom-up levels", d[0], d[1])
}

func Direction(topDown bool) string {
	if topDown {
		return "top-down"
	}
	return "bottom-up"
}

// DegreeClass is degree_class in kernels/frontier.cuh.
func DegreeClass(degree int64) int {
	switch {
	case degree < 32:
		return 0
	case degree < 256:
		return 1
	case degree < 65536:
		return 2
	}
	return 3
}
