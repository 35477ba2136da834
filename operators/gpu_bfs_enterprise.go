package operators

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
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

// classes is CLASSES in kernels/frontier.cuh: small, middle, large, extreme.
const classes = 4

// LevelStats in kernels/frontier.cuh, padded to 64 bytes.
const (
	entStatsBytes = 64
	entCountAt    = 0
	entHubsAt     = 16
	entFoundAt    = 20
	entHubListAt  = 24
	entOwnFoundAt = 28 // own_found, then own_hubs
	entOwnHubsAt  = 32
)

// entStats is what a level leaves for the host.
type entStats struct {
	count [classes]uint32 // the next queue, per class
	hubs  uint32          // hub vertices in the next top-down frontier
	// found is the vertices a bottom-up level visited, or those in the
	// frontier a top-down queue pass read (queued or not: a vertex without
	// edges is not queued), counting only the search's own (a part's, on
	// several GPUs): either way, 0 over all parts ends the search.
	found uint32
	// ownFound and ownHubs are a part's own vertices in the next frontier
	// and the hubs among them, counted by its stores (mgpu_bfs.go) before
	// any queue pass.
	ownFound, ownHubs uint32
}

func parseEntStats(b []byte) entStats {
	var st entStats
	for c := range st.count {
		st.count[c] = binary.LittleEndian.Uint32(b[entCountAt+4*c:])
	}
	st.hubs = binary.LittleEndian.Uint32(b[entHubsAt:])
	st.found = binary.LittleEndian.Uint32(b[entFoundAt:])
	st.ownFound = binary.LittleEndian.Uint32(b[entOwnFoundAt:])
	st.ownHubs = binary.LittleEndian.Uint32(b[entOwnHubsAt:])
	return st
}

func (st entStats) total() int64 {
	var t int64
	for _, c := range st.count {
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

// enterpriseHubs is the hub threshold τ (a hub has more than degree
// out-edges) and the number of hubs T_h: the smallest power of two, at least
// 32, above which at most hubCacheTarget vertices lie. The paper calls τ
// graph specific; this makes the hubs the few thousand vertices of highest
// degree, the ones a cache of that size can hold. degree is 0 when the
// graph has no vertex of 32 edges or more (no hubs: never bottom-up).
func enterpriseHubs(d convert.DegreeStats) (degree, hubs int64) {
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
	init, queue, unvisited *launchable
	classes, hubBits       *launchable // the layouts outClasses, inClasses and hubBits
	topDown                [classes]*launchable
	bottomUp               [3]*launchable // small (4 lanes a vertex), middle (16), wide (32: large and extreme)
}

func (b *GPU) enterpriseKernels() (*enterpriseKernels, error) {
	k := &enterpriseKernels{}
	err := b.kernelsOf(kernels.BFSEnterprise, map[string]**launchable{
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
	tdItems    = [classes]int64{1, 1, largeSegments, 1}
	tdPerBlock = [classes]int64{blockSize, blockSize / 32, 1, 0}
)

// buPerBlock is how many vertices a block of each bottom-up kernel takes at
// a time: groups of 4, 16 and 32 lanes.
var buPerBlock = [3]int64{blockSize / 4, blockSize / 16, blockSize / 32}

// largeSegments is LARGE_SEGMENTS in kernels/bfs_enterprise.cu.
const largeSegments = 32

// entBuffers are a search's device buffers, the queues and hub lists
// double-buffered (this level's, the next's).
type entBuffers struct {
	depth, parent *gpu.DeviceBuffer
	queues        [2]*gpu.DeviceBuffer // classes × n vertices each
	hubs          [2]*gpu.DeviceBuffer
	level         [2]*gpu.DeviceBuffer // a level's stats, then its bitmap
	bits          [2]*gpu.DeviceBuffer // the frontier as a bitmap
	stats         [2]*gpu.DeviceBuffer
}

// entSearch is one search's state on one GPU, over a whole graph or over
// one part of a partitioned graph (mgpu_bfs.go), whose layouts hold the
// whole graph's vertex ids.
type entSearch struct {
	b   *GPU
	s   *gpu.Stream
	fan *streamFan
	k   *enterpriseKernels
	n   int64
	// lo and hi bound the vertices the search owns: all, or a part's; the
	// bottom-up queues hold its unvisited ones. found counts the frontier's
	// vertices in the bitmap's words [ownWords[0], ownWords[1]): all, or
	// the part's words of the exchange (mgpu_bfs.go).
	lo, hi         int64
	ownWords       [2]int64
	outOff, outTgt *gpu.DeviceBuffer
	inOff, inSrc   *gpu.DeviceBuffer
	// outClass and inClass are the vertices' degree classes (class_nibble
	// in kernels/bfs_enterprise.cu) by the rows a level walks; hubBits
	// marks the hubs, by the whole graph's degrees for a part of a
	// partitioned graph (a hub is one everywhere), of which there are
	// hubCount.
	outClass, inClass, hubBits *gpu.DeviceBuffer
	hubCount                   int64
	eb                         entBuffers
	// host is where a level's stats reach the host: copied by fetch, or
	// by the level's last kernel (ent_queue, mg_push_clear) through
	// hostStats, its device address.
	host      *counters
	hostStats gpu.DevicePtr
	transfer  time.Duration
	releases
}

// newEntSearch copies g's layouts to b (where they are not there yet) and
// allocates a search's buffers, poisoned when b.Poison is set. whole is the
// graph whose out-degrees make hubs: g, or the graph g is a part of.
func newEntSearch(b *GPU, g, whole *convert.Graph) (e *entSearch, err error) {
	n := int64(g.NumVertices())
	e = &entSearch{b: b, n: n, hi: n, ownWords: [2]int64{0, (n + 31) / 32}}
	defer func() {
		if err != nil {
			e.free()
		}
	}()
	if e.k, err = b.enterpriseKernels(); err != nil {
		return nil, err
	}
	if e.s, err = b.ctx.NewStream(); err != nil {
		return nil, err
	}
	e.add(func() { e.s.Destroy() })
	if e.fan, err = newStreamFan(b.ctx, e.s, classes); err != nil {
		return nil, err
	}
	e.add(e.fan.destroy)
	parts, transfer, err := b.layouts(g, e.s, outOffsets, outTargets, inOffsets, inSources)
	if err != nil {
		return nil, err
	}
	e.transfer = transfer
	e.outOff, e.outTgt, e.inOff, e.inSrc = parts[0], parts[1], parts[2], parts[3]
	if err := e.vertexBits(g, whole); err != nil {
		return nil, err
	}
	bufs, free, err := b.buffers(entBufferSizes(n, e.hubCount)...)
	if err != nil {
		return nil, err
	}
	e.add(free)
	eb := &e.eb
	eb.depth, eb.parent = bufs[0], bufs[1]
	eb.queues = [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}
	eb.hubs = [2]*gpu.DeviceBuffer{bufs[4], bufs[5]}
	eb.level = [2]*gpu.DeviceBuffer{bufs[6], bufs[7]}
	for q := range 2 {
		eb.stats[q], _ = eb.level[q].Slice(0, entStatsBytes)
		eb.bits[q], _ = eb.level[q].Slice(entStatsBytes, eb.level[q].Size()-entStatsBytes)
	}
	if err := b.poison(e.s, bufs...); err != nil {
		return nil, err
	}
	if e.host, err = newCounters(b, entStatsBytes); err != nil {
		return nil, err
	}
	e.add(e.host.free)
	if e.hostStats, err = e.host.host.DevicePtr(); err != nil {
		return nil, err
	}
	// The kernels write into host's memory: the search's work ends before
	// it goes back to the pool (a level that failed midway may have left a
	// queue pass running).
	e.add(func() { _ = e.s.Synchronize() }) // a failed search reports its own error
	return e, nil
}

// entBufferSizes are the sizes of a search's buffers (entBuffers) over n
// vertices with hubs hubs, in newEntSearch's order: depth, parent, the
// queues twice (classes × n), the hub lists twice, and each level's
// counters and frontier bitmap, which lie together so that a level clears
// both with one memset.
func entBufferSizes(n, hubs int64) []int64 {
	queueBytes := classes * 4 * n
	levelBytes := entStatsBytes + 4*((n+31)/32)
	return []int64{4 * n, 4 * n, queueBytes, queueBytes, 4 * (hubs + 1), 4 * (hubs + 1), levelBytes, levelBytes}
}

// entBufferBytes is the device memory of a search's buffers.
func entBufferBytes(n, hubs int64) int64 {
	var sum int64
	for _, b := range entBufferSizes(n, hubs) {
		sum += b
	}
	return sum
}

// vertexBits finds or makes on the GPU g's degree classes, out and in, and
// whole's hubs, from the offsets there (a graph built on the GPU has
// nothing else on the host to make them from).
func (e *entSearch) vertexBits(g, whole *convert.Graph) error {
	words := (e.n + 31) / 32
	classesOf := func(offs *gpu.DeviceBuffer) func(*gpu.DeviceBuffer) error {
		return func(buf *gpu.DeviceBuffer) error {
			return e.k.classes.launchFor(e.s, 4*words, blockSize, offs, e.n, buf, 4*words)
		}
	}
	var err error
	if e.outClass, err = e.b.deviceLayout(g, e.s, outClasses, classesOf(e.outOff)); err != nil {
		return err
	}
	if e.inClass, err = e.b.deviceLayout(g, e.s, inClasses, classesOf(e.inOff)); err != nil {
		return err
	}
	degree, hubs := enterpriseHubs(whole.Degrees())
	e.hubCount = hubs
	e.hubBits, err = e.b.deviceLayout(whole, e.s, hubBits, func(buf *gpu.DeviceBuffer) error {
		if whole != g {
			// A part: the whole graph's degrees are on the host only (its
			// offsets would take 8 bytes a vertex on every GPU).
			return gpu.Upload(e.s, buf, hubBitmap(whole.Out.Offsets, degree))
		}
		return e.k.hubBits.launchFor(e.s, words, blockSize, e.outOff, e.n, degree, buf, words)
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
func (e *entSearch) queue(q, c int) gpu.DevicePtr {
	return e.eb.queues[q].Ptr() + gpu.DevicePtr(int64(c)*4*e.n)
}

// field is the device address of the stats field at off in buffer q.
func (e *entSearch) field(q int, off int64) gpu.DevicePtr {
	return e.eb.stats[q].Ptr() + gpu.DevicePtr(off)
}

// read waits for the level and returns what it left in stats q, copied
// after it.
func (e *entSearch) read(q int) (entStats, error) {
	raw, err := e.host.read(e.s, e.eb.stats[q])
	if err != nil {
		return entStats{}, err
	}
	return parseEntStats(raw), nil
}

// wait is read where the level's last kernel copied stats q to the host
// itself (ent_queue, mg_push_clear): a driver call and a DMA less a level,
// 10–25 µs of a small one on four GPUs.
func (e *entSearch) wait(q int) (entStats, error) {
	raw, err := e.host.wait(e.s, e.eb.stats[q])
	if err != nil {
		return entStats{}, err
	}
	return parseEntStats(raw), nil
}

// start queues the search from source: its own vertices unvisited (a
// part's: the others' are never read), the source at depth 0 in its
// class's queue of buffer 0, the first level top-down.
func (e *entSearch) start(source uint32, srcClass int) error {
	ownDepth, err := e.eb.depth.Slice(4*e.lo, 4*(e.hi-e.lo))
	if err != nil {
		return err
	}
	ownParent, err := e.eb.parent.Slice(4*e.lo, 4*(e.hi-e.lo))
	if err != nil {
		return err
	}
	return startSearch(e.s, ownDepth, ownParent, e.k.init, e.eb.depth, e.eb.parent, source, e.queue(0, srcClass))
}

// topDownQueues queues the frontier in bitmap q into buffer q: classes by
// out-degree, hubs listed, the search's own vertices among them counted.
// Stats q must be zero (the counts, hubs, found, hub list, and the count of
// finished blocks with which ent_queue's last block copies them to the
// host): cleared with the bitmap before the level (clearLevel, or on
// several GPUs the previous level's mg_push_clear; the top-down kernels
// write none), or by turn before it requeues.
func (e *entSearch) topDownQueues(q int) error { return e.queuePass(q, true) }

// listHubs is topDownQueues without the queues: the frontier's hubs listed
// for the bottom-up level's cache, and its hubs and own vertices counted.
func (e *entSearch) listHubs(q int) error { return e.queuePass(q, false) }

// queuePass is ent_queue over bitmap q: the top-down queues dealt out by
// class where deal is set; the hubs listed and counted, and the own
// vertices counted, either way; stats q copied to the host (wait).
func (e *entSearch) queuePass(q int, deal bool) error {
	eb := &e.eb
	words := (e.n + 31) / 32
	return e.k.queue.launchFor(e.s, words, blockSize, e.outClass, e.hubBits, eb.bits[q], words, e.ownWords[0], e.ownWords[1],
		eb.queues[q], e.n, eb.stats[q], eb.hubs[q], e.hubCap(), kernelFlag(deal), e.hostStats)
}

// hubCap is the room of a hub list, in vertices.
func (e *entSearch) hubCap() uint32 { return uint32(e.hubCount + 1) }

// bottomUpQueues replaces the queues of buffer q by the search's unvisited
// vertices, by in-degree; the hub list and bitmap stay.
func (e *entSearch) bottomUpQueues(q int) error {
	counts, _ := e.eb.stats[q].Slice(entCountAt, 4*classes)
	if err := counts.Memset8(e.s, 0); err != nil {
		return err
	}
	return e.queueUnvisited(q)
}

// queueUnvisited queues the search's unvisited vertices into the queues of
// buffer q, by in-degree, counting them into stats q's counts, which must
// be clear.
func (e *entSearch) queueUnvisited(q int) error {
	if e.lo == e.hi {
		return nil
	}
	eb := &e.eb
	return e.k.unvisited.launchFor(e.s, e.hi-e.lo, blockSize, e.inClass, eb.depth, e.lo, e.hi,
		eb.queues[q], e.n, eb.stats[q])
}

// clearQueueCounts clears what a queue pass counts into stats q (the
// queues' counts, the hubs, the vertices found, the hub list's length),
// for one to count afresh; the stores' own counts stay.
func (e *entSearch) clearQueueCounts(q int) error {
	counts, _ := e.eb.stats[q].Slice(0, entOwnFoundAt)
	return counts.Memset8(e.s, 0)
}

// clearLevel clears stats q and bitmap q, for a level to write.
func (e *entSearch) clearLevel(q int) error { return e.eb.level[q].Memset8(e.s, 0) }

// expand queues level's kernels over the queues of buffer cur (count
// vertices by class), writing the next level's stats (and, bottom-up, its
// queues) and its bitmap into buffer next, which must be clear
// (clearLevel): either direction sets the visits' bits and adds to the
// counters.
func (e *entSearch) expand(cur, next int, count [classes]uint32, topDown bool, level int32) error {
	eb, k, s := &e.eb, e.k, e.s
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
	for c := range classes {
		if count[c] == 0 {
			continue
		}
		var err error
		if topDown {
			err = k.topDown[c].launchFor(stream(c), int64(count[c])*tdItems[c], tdPerBlock[c],
				e.outOff, e.outTgt, eb.depth, eb.parent, e.queue(cur, c), count[c], level, eb.bits[next])
		} else {
			bu, perBlock := k.bottomUp[min(c, 2)], buPerBlock[min(c, 2)]
			err = bu.launchFor(stream(c), int64(count[c]), perBlock,
				e.inOff, e.inSrc, e.hubBits, eb.depth, eb.parent, e.queue(cur, c), count[c], level,
				eb.hubs[cur], e.field(cur, entHubListAt), eb.bits[cur], e.queue(next, c), e.field(next, entCountAt+4*int64(c)),
				eb.stats[next], eb.hubs[next], e.hubCap(), eb.bits[next])
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

// fanMinVertices is the fewest queued vertices whose classes run
// concurrently. (Kronecker 26 on one H200: 3.52 ms a search with it, 3.48
// with every level's classes concurrent, 3.50 before the fork left out
// idle streams: alike. On four GPUs the host's calls are what counts.)
const fanMinVertices = 4096

func runEnterprise(ctx context.Context, b *GPU, in Input) (*Result, error) {
	g := in.Graph
	n := int64(g.NumVertices())
	e, err := newEntSearch(b, g, g)
	if err != nil {
		return nil, err
	}
	defer e.free()
	began := time.Now()
	t, err := newTimer(b.ctx, e.s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	var count [classes]uint32
	srcClass := degreeClass(g.Out.Degree(in.Source))
	count[srcClass] = 1
	if err := e.start(in.Source, srcClass); err != nil {
		return nil, err
	}
	trace := newLevelTrace("enterprise")
	cur, topDown := 0, true
	var directions levelDirections
	for level := int32(0); ; level++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		directions.note(topDown)
		next := cur ^ 1
		if err := e.clearLevel(next); err != nil {
			return nil, err
		}
		if err := e.expand(cur, next, count, topDown, level); err != nil {
			return nil, err
		}
		trace.phase("expand", e.s)
		var st entStats
		if topDown {
			if err := e.topDownQueues(next); err != nil {
				return nil, err
			}
			trace.phase("queue", e.s)
			st, err = e.wait(next) // the queue pass copied them
		} else {
			st, err = e.read(next)
		}
		if err != nil {
			return nil, err
		}
		trace.level("level %d %s, queues %v: next %v, %d hubs, %d found", level, direction(topDown), count, st.count, st.hubs, st.found)
		switch {
		case st.found == 0:
			compute, err := t.elapsed(e.s)
			if err != nil {
				return nil, err
			}
			// Events time the search from when the GPU reached the start,
			// the host's clock (as on several GPUs) from before the first
			// call: the trace shows both.
			trace.level("search: %.1f µs by the events, %.1f by the host's clock", micros(compute), micros(time.Since(began)))
			strategy := fmt.Sprintf("enterprise (%v)", directions)
			return bfsResult(ctx, b, e.s, g, e.eb.depth, e.eb.parent, strategy, int(level)+1, compute, e.transfer)
		case switchesDirection(topDown, st, e.hubCount, n):
			if err := e.turn(next, topDown); err != nil {
				return nil, err
			}
			topDown = !topDown
			if st, err = e.read(next); err != nil {
				return nil, err
			}
			trace.level("%s queues %v", direction(topDown), st.count)
		}
		count = st.count
		cur = next
	}
}

// switchesDirection is the rule of switching above, after a level that
// left st, on a graph of n vertices and hubTotal hubs.
func switchesDirection(topDown bool, st entStats, hubTotal, n int64) bool {
	if topDown {
		return hubTotal > 0 && int64(st.hubs)*100 > gammaPercent*hubTotal
	}
	return int64(st.found) < n/entBeta && st.total() > n/entBeta
}

// turn replaces the queues of buffer q, made for the direction topDown,
// by the other direction's: at the explosion level the unvisited vertices
// replace the frontier; going back top-down, the frontier in bitmap q
// replaces the unvisited.
func (e *entSearch) turn(q int, topDown bool) error {
	if topDown {
		return e.bottomUpQueues(q)
	}
	if err := e.eb.stats[q].Memset8(e.s, 0); err != nil {
		return err
	}
	return e.topDownQueues(q)
}

// bottomUpFrom turns bottom-up at the frontier in bitmap q without its
// top-down queues: its hubs listed (the bottom-up level's cache), the
// unvisited vertices queued into buffer q.
func (e *entSearch) bottomUpFrom(q int) error {
	if err := e.listHubs(q); err != nil {
		return err
	}
	return e.bottomUpQueues(q)
}

// levelDirections counts a search's levels run top-down and bottom-up.
type levelDirections [2]int

func (d *levelDirections) note(topDown bool) {
	if topDown {
		d[0]++
	} else {
		d[1]++
	}
}

func (d levelDirections) String() string {
	return fmt.Sprintf("%d top-down, %d bottom-up levels", d[0], d[1])
}

func direction(topDown bool) string {
	if topDown {
		return "top-down"
	}
	return "bottom-up"
}

// degreeClass is degree_class in kernels/frontier.cuh.
func degreeClass(degree int64) int {
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
