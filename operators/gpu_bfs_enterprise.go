package operators

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
)

// BFS after Enterprise (SC'15 §4; kernels/bfs_enterprise.cu): per level,
// the frontier's four degree classes expand concurrently on four streams;
// the next frontier's queues come from a scan of the status array; the
// search goes bottom-up when γ, the share of hub vertices in the frontier,
// passes 30%.

// classes is CLASSES in kernels/frontier.cuh: small, middle, large, extreme.
const classes = 4

// LevelStats in kernels/bfs_enterprise.cu, padded to 64 bytes.
const (
	entStatsBytes = 64
	entCountAt    = 0
	entHubsAt     = 16
	entFoundAt    = 20
	entHubListAt  = 24
)

// entStats is what a level leaves for the host.
type entStats struct {
	count [classes]uint32 // the next queue, per class
	hubs  uint32          // hub vertices in the next top-down frontier
	found uint32          // vertices a bottom-up level visited
}

func parseEntStats(b []byte) entStats {
	var st entStats
	for c := range st.count {
		st.count[c] = binary.LittleEndian.Uint32(b[entCountAt+4*c:])
	}
	st.hubs = binary.LittleEndian.Uint32(b[entHubsAt:])
	st.found = binary.LittleEndian.Uint32(b[entFoundAt:])
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
	init, queue *launchable
	topDown     [classes]*launchable
	bottomUp    [3]*launchable // small (4 lanes a vertex), middle (16), wide (32: large and extreme)
}

func (b *GPU) enterpriseKernels() (*enterpriseKernels, error) {
	k := &enterpriseKernels{}
	err := b.kernelsOf(kernels.BFSEnterprise, map[string]**launchable{
		"ent_init": &k.init, "ent_queue": &k.queue,
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

func runEnterprise(ctx context.Context, b *GPU, in Input) (*Result, error) {
	g := in.Graph
	n := int64(g.NumVertices())
	k, err := b.enterpriseKernels()
	if err != nil {
		return nil, err
	}
	s, err := b.ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	fan, err := newStreamFan(b.ctx, s, classes)
	if err != nil {
		return nil, err
	}
	defer fan.destroy()
	parts, transfer, err := b.layouts(g, s, outOffsets, outTargets, inOffsets, inSources)
	if err != nil {
		return nil, err
	}
	outOff, outTgt, inOff, inSrc := parts[0], parts[1], parts[2], parts[3]
	hubDegree, hubCount := enterpriseHubs(g.Degrees())
	queueBytes := classes * 4 * n
	// Each level's counters and frontier bitmap lie together, so that a
	// bottom-up level clears both with one memset.
	bitsBytes := 4 * ((n + 31) / 32)
	levelBytes := entStatsBytes + bitsBytes
	bufs, free, err := b.buffers(4*n, 4*n, queueBytes, queueBytes, 4*(hubCount+1), 4*(hubCount+1), levelBytes, levelBytes)
	if err != nil {
		return nil, err
	}
	defer free()
	var eb entBuffers
	eb.depth, eb.parent = bufs[0], bufs[1]
	eb.queues = [2]*gpu.DeviceBuffer{bufs[2], bufs[3]}
	eb.hubs = [2]*gpu.DeviceBuffer{bufs[4], bufs[5]}
	eb.level = [2]*gpu.DeviceBuffer{bufs[6], bufs[7]}
	for q := range 2 {
		eb.stats[q], _ = eb.level[q].Slice(0, entStatsBytes)
		eb.bits[q], _ = eb.level[q].Slice(entStatsBytes, bitsBytes)
	}
	if err := b.poison(s, bufs...); err != nil {
		return nil, err
	}
	host, err := newCounters(b.ctx, entStatsBytes)
	if err != nil {
		return nil, err
	}
	defer host.free()
	// The queue of class c of buffer q, and the stats field at off.
	queue := func(q, c int) gpu.DevicePtr { return eb.queues[q].Ptr() + gpu.DevicePtr(int64(c)*4*n) }
	field := func(q int, off int64) gpu.DevicePtr { return eb.stats[q].Ptr() + gpu.DevicePtr(off) }
	// read waits for the level and returns what it left in stats q.
	read := func(q int) (entStats, error) {
		raw, err := host.read(s, eb.stats[q])
		if err != nil {
			return entStats{}, err
		}
		return parseEntStats(raw), nil
	}
	// topDownQueues queues the frontier at level into buffer q: classes by
	// out-degree, hubs listed, and its bitmap.
	topDownQueues := func(q int, level int32) error {
		if err := eb.stats[q].Memset8(s, 0); err != nil {
			return err
		}
		return k.queue.launchFor(s, n, blockSize, outOff, outOff, eb.depth, n, level,
			eb.queues[q], n, eb.stats[q], hubDegree, eb.hubs[q], eb.bits[q])
	}
	// bottomUpQueues replaces the queues of buffer q by the unvisited
	// vertices, by in-degree; the hub list and bitmap stay.
	bottomUpQueues := func(q int) error {
		counts, _ := eb.stats[q].Slice(entCountAt, 4*classes)
		if err := counts.Memset8(s, 0); err != nil {
			return err
		}
		return k.queue.launchFor(s, n, blockSize, inOff, outOff, eb.depth, n, int32(-1),
			eb.queues[q], n, eb.stats[q], int64(0), gpu.DevicePtr(0), gpu.DevicePtr(0))
	}

	t, err := newTimer(b.ctx, s)
	if err != nil {
		return nil, err
	}
	defer t.destroy()
	var count [classes]uint32
	srcClass := degreeClass(g.Out.Degree(in.Source))
	count[srcClass] = 1
	if err := startSearch(s, eb.depth, eb.parent, k.init, eb.depth, eb.parent, in.Source, queue(0, srcClass)); err != nil {
		return nil, err
	}
	// The source's hub list is empty; the first level is top-down.
	if err := eb.stats[0].Memset8(s, 0); err != nil {
		return nil, err
	}
	trace := newLevelTrace("enterprise")
	cur, topDown, levels := 0, true, 0
	var directions [2]int // levels run top-down, bottom-up
	for level := int32(0); ; level++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		levels++
		if topDown {
			directions[0]++
		} else {
			directions[1]++
		}
		next := cur ^ 1
		// A top-down level's queue pass writes the whole bitmap; a
		// bottom-up level sets bits in a cleared one.
		clear := eb.stats[next]
		if !topDown {
			clear = eb.level[next]
		}
		if err := clear.Memset8(s, 0); err != nil {
			return nil, err
		}
		// Several classes run concurrently on their streams; one alone runs
		// on the main stream, without the events of a fork and join.
		active := 0
		for _, c := range count {
			if c > 0 {
				active++
			}
		}
		stream := func(c int) *gpu.Stream { return s }
		if active > 1 {
			stream = fan.stream
			if err := fan.begin(); err != nil {
				return nil, err
			}
		}
		for c := range classes {
			if count[c] == 0 {
				continue
			}
			var err error
			if topDown {
				err = k.topDown[c].launchFor(stream(c), int64(count[c])*tdItems[c], tdPerBlock[c],
					outOff, outTgt, eb.depth, eb.parent, queue(cur, c), count[c], level)
			} else {
				bu, perBlock := k.bottomUp[min(c, 2)], buPerBlock[min(c, 2)]
				err = bu.launchFor(stream(c), int64(count[c]), perBlock,
					inOff, inSrc, outOff, eb.depth, eb.parent, queue(cur, c), count[c], level,
					eb.hubs[cur], field(cur, entHubListAt), eb.bits[cur], queue(next, c), field(next, entCountAt+4*int64(c)),
					eb.stats[next], hubDegree, eb.hubs[next], eb.bits[next])
			}
			if err != nil {
				return nil, err
			}
		}
		if active > 1 {
			if err := fan.end(); err != nil {
				return nil, err
			}
		}
		if topDown {
			if err := topDownQueues(next, level+1); err != nil {
				return nil, err
			}
		}
		st, err := read(next)
		if err != nil {
			return nil, err
		}
		trace.level("level %d %s, queues %v: next %v, %d hubs, %d found", level, direction(topDown), count, st.count, st.hubs, st.found)
		switch {
		case topDown && st.total() == 0, !topDown && st.found == 0:
			compute, err := t.elapsed(s)
			if err != nil {
				return nil, err
			}
			strategy := fmt.Sprintf("enterprise (%d top-down, %d bottom-up levels)", directions[0], directions[1])
			return bfsResult(b, s, eb.depth, eb.parent, strategy, levels, compute, transfer)
		case topDown && hubCount > 0 && int64(st.hubs)*100 > gammaPercent*hubCount:
			// The explosion level: the bottom-up queue of every unvisited
			// vertex replaces the frontier's.
			if err := bottomUpQueues(next); err != nil {
				return nil, err
			}
			if st, err = read(next); err != nil {
				return nil, err
			}
			trace.level("bottom-up queues %v", st.count)
			topDown = false
		case !topDown && int64(st.found) < n/entBeta && st.total() > n/entBeta:
			if err := topDownQueues(next, level+1); err != nil {
				return nil, err
			}
			if st, err = read(next); err != nil {
				return nil, err
			}
			trace.level("top-down queues %v", st.count)
			topDown = true
		}
		count = st.count
		cur = next
	}
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
