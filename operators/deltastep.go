package operators

import (
	"context"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gpipe/gpipe/internal/par"
)

// The Δ-stepping driver shared by sssp and sswp, after GAP's sssp.cc: every
// worker keeps its own buckets; a phase relaxes the current bucket's
// vertices (shared out in chunks of up to 64 from one frontier, hubs' edges
// in pieces), then each worker keeps relaxing its own copy of the current
// bucket while it stays small (bucket fusion, kBinSizeThreshold in GAP),
// and the smallest non-empty bucket over all workers becomes the next
// frontier.
//
// Buckets live in a ring (see bins); a relaxation that lands further ahead
// than the ring reaches goes to the worker's far list, whose vertices move
// into the ring before the ring reaches their buckets. So any Δ works,
// however the weights spread, with memory bounded by the ring.

// fuseLimit is GAP's kBinSizeThreshold: a worker goes on with its own share
// of the current bucket while it holds fewer vertices than this, and (unlike
// GAP) while their out-edges number fewer than fuseEdges.
const fuseLimit = 1000

// fuseEdges bounds the work of a fused round, which one worker does while
// the others wait at the phase's end: about what a phase boundary costs on
// 16 cores (tens of µs), where GAP's bound of 1,000 vertices, meant for road
// networks, lets a worker take a hub's tens of thousands of edges alone. On
// Kronecker 20 with Δ = 2 (weight-1 edges land in the current bucket), 16
// workers fused 3.3–5.1 M of the 31.4 M edges a run, up to 1.6 M edges by
// one worker in one phase; a model of the phases' schedule (greedy chunks
// to the least-loaded of 16 workers, then each worker's fused rounds) put
// the relaxations' critical path at 1.2–2.2 times the even share, 1.07 with
// this bound (tuning.fuseEdges, 2^14), at one or two more phases a run.

// shareChunk is how many frontier vertices a worker takes at a time: GAP's
// 64, fewer where the frontier has under 8 chunks a worker, so that every
// worker gets a part. Small frontiers are where the hubs are (a Kronecker
// graph reaches them within a few hops): 148 vertices with 2.4 M edges in
// chunks of 64 kept 3 of 16 workers busy.
func shareChunk(total, workers int) int { return max(1, min(64, total/(8*workers))) }

// relaxer is what an algorithm gives the driver. Calls are per vertex, never
// per edge.
type relaxer interface {
	// relax relaxes the edges of each vertex of us that still belongs to
	// bucket cur (is not a stale entry), pushing improved vertices through
	// d.push.
	relax(d *deltaStepper, w int, us []uint32, cur uint64)
	// relaxEdges is relax for vertex u's out-edges [lo, hi) alone (offsets
	// into the graph's targets): a piece of a hub's.
	relaxEdges(d *deltaStepper, w int, u uint32, lo, hi int64, cur uint64)
	// bucket is vertex v's bucket under its current value.
	bucket(v uint32) uint64
}

// Hubs in the frontier are relaxed in pieces by all workers: a worker that
// takes a vertex of at least splitEdges (tuning: 2^12) out-edges from the
// frontier publishes it (hubs), and every worker takes pieceEdges (2^11) of a published
// hub's edges at a time before its next chunk of the frontier. A Kronecker
// graph's first phases are a few hubs: on Kronecker 20 a frontier of 148
// vertices held one of 64,637 edges, which one worker relaxed while 15
// waited.

// maxHubs is the most hubs published in a phase; a worker relaxes any
// further one whole.
const maxHubs = 256

// hub is a published hub: u's edges [next, end) are yet to be handed out.
type hub struct {
	u     uint32
	end   int64
	next  atomic.Int64
	phase atomic.Int64 // the phase that published it; set last
	_     [32]byte     // keeps hubs apart on cache lines
}

// deltaStepper holds the workers' buckets and the frontier.
type deltaStepper struct {
	bins     []*bins
	far      [][]uint32 // per worker: vertices pushed beyond the ring
	farMin   []uint64   // per worker: the smallest bucket pushed far
	frontier frontier
	offs     []int64    // the graph's offsets: a vertex's out-degree
	marks    []uint64   // a bitmap of vertices, zero between gathers
	sortBufs [][]uint32 // per worker: storage for its range of a sorted frontier
	takeBufs [][]uint32 // per worker: its share of an unsorted frontier
	srcBuf   []uint32   // the first frontier
	span     uint64     // ring length: pushes at cur+span or beyond go far
	next     []uint64
	hasNext  []bool
	cursor   atomic.Int64
	hubs     [maxHubs]hub
	tune     tuning       // the run's thresholds
	numHubs  atomic.Int64 // slots of hubs taken this phase
	phase    int64        // the phase being run
}

// noBucket is larger than any bucket bucketOf returns.
const noBucket = ^uint64(0)

// stepperPool keeps the buckets of finished runs (empty, with their
// capacity) for the next run with the same ring length.
var stepperPool sync.Pool

// getDeltaStepper is a stepper with a ring of at least span buckets, from
// the pool where one fits.
func getDeltaStepper(span uint64, t tuning) *deltaStepper {
	d, ok := stepperPool.Get().(*deltaStepper)
	if !ok || d.span != ringLength(span) || len(d.bins) != par.Workers() {
		d = newDeltaStepper(span)
	}
	d.tune = t
	return d
}

// release returns d to the pool; only after run finished, when every bucket
// and far list is empty.
func (d *deltaStepper) release() { stepperPool.Put(d) }

func newDeltaStepper(span uint64) *deltaStepper {
	workers := par.Workers()
	d := &deltaStepper{
		bins:    make([]*bins, workers),
		far:     make([][]uint32, workers),
		farMin:  make([]uint64, workers),
		next:    make([]uint64, workers),
		hasNext: make([]bool, workers),
		tune:    defaultTuning(),
	}
	for w := range d.bins {
		d.bins[w] = newBins(span)
		d.farMin[w] = noBucket
	}
	d.span = d.bins[0].mask + 1
	return d
}

// push puts v in bucket b on behalf of worker w, where cur is the bucket
// being processed (b >= cur).
func (d *deltaStepper) push(w int, b, cur uint64, v uint32) {
	if b-cur < d.span {
		d.bins[w].push(b, v)
		return
	}
	d.far[w] = append(d.far[w], v)
	d.farMin[w] = min(d.farMin[w], b)
}

// run processes buckets from the one holding src until all are empty and
// returns the number of phases, telling ctx's progress hook (WithProgress)
// of each, as a run of op.
// offs are the graph's offsets. Workers check ctx between their chunks of
// the frontier and their fused rounds; after a canceled run d holds
// vertices, so it must not go back to the pool.
func (d *deltaStepper) run(ctx context.Context, op string, r relaxer, src uint32, offs []int64) (int, error) {
	report := ProgressOf(ctx, op)
	n := len(offs) - 1
	d.offs = offs
	defer func() { d.offs = nil }() // the pool keeps no graph alive
	cur := r.bucket(src)
	d.srcBuf = append(d.srcBuf[:0], src)
	d.frontier.reset()
	d.frontier.add(d.srcBuf)
	phases := 0
	for {
		if err := ctx.Err(); err != nil {
			return phases, err
		}
		phases++
		d.cursor.Store(0)
		d.numHubs.Store(0)
		d.phase++
		f, total := &d.frontier, d.frontier.len()
		c := cur
		chunk := shareChunk(total, len(d.bins))
		split := len(d.bins) > 1
		onWorkers(func(w int) {
			part := 0
			for ctx.Err() == nil {
				i := int(d.cursor.Add(int64(chunk))) - chunk
				end := min(i+chunk, total)
				if i >= end {
					break
				}
				for i < end {
					us := f.slice(i, end, &part)
					if split {
						d.relaxSplitting(r, w, us, c)
					} else {
						r.relax(d, w, us, c)
					}
					i += len(us)
				}
				if split {
					d.relaxHubs(r, w, c) // others' hubs before the next chunk
				}
			}
			bs := d.bins[w]
			for d.fuses(bs.peek(c)) && ctx.Err() == nil {
				r.relax(d, w, bs.take(c), c)
			}
			d.next[w], d.hasNext[w] = bs.next(c)
		})
		if err := ctx.Err(); err != nil {
			return phases, err
		}
		report(Progress{Iteration: phases, Change: math.NaN(), Active: int64(total)})
		var ok bool
		if cur, ok = d.advance(r, cur); !ok {
			return phases, nil
		}
		d.gather(r, cur, n)
	}
}

// relaxSplitting relaxes us on behalf of worker w: it publishes the hubs
// among them first, so that the workers start on those, then relaxes the
// others.
func (d *deltaStepper) relaxSplitting(r relaxer, w int, us []uint32, cur uint64) {
	// A hub the phase has no room for (more than maxHubs) is relaxed here
	// whole, and skipped below with the published ones.
	hubs, published := false, false
	for j, u := range us {
		if d.offs[u+1]-d.offs[u] < d.tune.splitEdges {
			continue
		}
		hubs = true
		if d.publish(u) {
			published = true
		} else {
			r.relax(d, w, us[j:j+1], cur)
		}
	}
	if !hubs {
		r.relax(d, w, us, cur)
		return
	}
	if published {
		d.relaxHubs(r, w, cur)
	}
	start := 0
	for j, u := range us {
		if d.offs[u+1]-d.offs[u] >= d.tune.splitEdges {
			r.relax(d, w, us[start:j], cur)
			start = j + 1
		}
	}
	r.relax(d, w, us[start:], cur)
}

// publish makes u a hub of this phase; false when the phase has maxHubs.
func (d *deltaStepper) publish(u uint32) bool {
	k := d.numHubs.Add(1) - 1
	if k >= maxHubs {
		return false
	}
	h := &d.hubs[k]
	h.u, h.end = u, d.offs[u+1]
	h.next.Store(d.offs[u])
	h.phase.Store(d.phase)
	return true
}

// relaxHubs relaxes pieces of this phase's published hubs on behalf of
// worker w until none is left to hand out.
func (d *deltaStepper) relaxHubs(r relaxer, w int, cur uint64) {
	n := min(d.numHubs.Load(), maxHubs)
	for k := range n {
		h := &d.hubs[k]
		if h.phase.Load() != d.phase || h.next.Load() >= h.end {
			continue // not yet filled in (its worker will take it), or handed out
		}
		for {
			lo := h.next.Add(d.tune.pieceEdges) - d.tune.pieceEdges
			if lo >= h.end {
				break
			}
			r.relaxEdges(d, w, h.u, lo, min(lo+d.tune.pieceEdges, h.end), cur)
		}
	}
}

// fuses says whether a worker relaxes us, its share of the current bucket,
// in the same phase: us is not empty and small by fuseLimit and fuseEdges.
func (d *deltaStepper) fuses(us []uint32) bool {
	if len(us) == 0 || len(us) >= fuseLimit {
		return false
	}
	var edges int64
	for _, u := range us {
		if edges += d.offs[u+1] - d.offs[u]; edges >= d.tune.fuseEdges {
			return false
		}
	}
	return true
}

// Frontiers of at least tuning.sortMin (1024) vertices are put in vertex order before a
// phase, so that the vertices' offsets, adjacency lists and values are read
// in address order rather than at random: a pass over all vertices of
// Kronecker 20 in order takes 35 ms, in random order 120. Measured on
// Kronecker 20, sssp: 130 -> 121 ms.
//
// The sort goes through one bitmap of the vertices that all workers share:
// each worker sets the bits of its share of the bucket (atomically: shares
// overlap), then each scans its own range of the bitmap's words into a part
// of the frontier. So the frontier is sorted and holds each vertex once,
// which matters beyond order: a vertex that two workers lowered into the
// same bucket before it came up (to d + 1, then to d) sits in both shares,
// and its second relaxation, at the same distance, would read all its
// edges for nothing. On Kronecker 20 at 16 workers 3–8% of the edges
// relaxed were such repeats, most of them hubs', when each worker sorted
// its own share (by comparison, or through a bitmap of its own that it
// scanned whole): that dropped repeats only within a share, and pdqsort
// took 8% of a run on 16 cores.
//
// Stale entries (vertices lowered into an earlier bucket since they were
// pushed here, and relaxed there) are dropped before their bits are set:
// on Kronecker 20 they are 59% of the entries (940 k of 1.59 M a run, at 1
// and 16 workers alike), each a locked OR, which waits for its cache line
// and keeps the next from starting, where the load of the vertex's
// distance that tells a stale entry overlaps with the next ones.

// gather makes the workers' bucket cur the frontier; n is the number of
// vertices. The frontier is their shares as they are where it is small, and
// the workers' ranges of the shared bitmap, without r's stale entries,
// where not; the parts are not
// copied together (on 16 cores the caller copying the shares of small
// frontiers cost microseconds a phase, in misses on the other cores'
// caches).
func (d *deltaStepper) gather(r relaxer, cur uint64, n int) {
	total := 0
	for _, bs := range d.bins {
		total += bs.size(cur)
	}
	workers := len(d.bins)
	if len(d.sortBufs) != workers {
		d.sortBufs = make([][]uint32, workers)
		d.takeBufs = make([][]uint32, workers)
	}
	d.frontier.reset()
	if total < d.tune.sortMin {
		for w, bs := range d.bins {
			if bs.size(cur) > 0 {
				d.takeBufs[w] = bs.swap(cur, d.takeBufs[w])
				d.frontier.add(d.takeBufs[w])
			}
		}
		return
	}
	words := (n + 63) / 64
	if len(d.marks) < words {
		d.marks = make([]uint64, words) // zero, and left zero below
	}
	marks := d.marks[:words]
	if workers == 1 {
		for _, v := range d.bins[0].take(cur) {
			if r.bucket(v) >= cur { // not stale (as relax tells)
				marks[v>>6] |= 1 << (v & 63) // a locked OR costs 5% of a run on one core
			}
		}
	} else {
		onWorkers(func(w int) {
			for _, v := range d.bins[w].take(cur) {
				if r.bucket(v) >= cur { // not stale (as relax tells)
					atomic.OrUint64(&marks[v>>6], 1<<(v&63))
				}
			}
		})
	}
	onWorkers(func(w int) {
		out := d.sortBufs[w][:0]
		for i := words * w / workers; i < words*(w+1)/workers; i++ {
			x := marks[i]
			if x == 0 {
				continue
			}
			marks[i] = 0
			for x != 0 {
				out = append(out, uint32(i<<6+bits.TrailingZeros64(x)))
				x &= x - 1
			}
		}
		d.sortBufs[w] = out
	})
	for _, out := range d.sortBufs {
		d.frontier.add(out)
	}
}

// frontier is the vertices of the bucket being processed: the
// concatenation of its parts, which are read where they are.
type frontier struct {
	parts [][]uint32
	ends  []int // where each part ends in the concatenation
}

func (f *frontier) reset() { f.parts, f.ends = f.parts[:0], f.ends[:0] }

// add appends part p (kept, not copied) unless it is empty.
func (f *frontier) add(p []uint32) {
	if len(p) > 0 {
		f.parts = append(f.parts, p)
		f.ends = append(f.ends, f.len()+len(p))
	}
}

func (f *frontier) len() int {
	if len(f.ends) == 0 {
		return 0
	}
	return f.ends[len(f.ends)-1]
}

// slice is the vertices at [i, end) of the concatenation, cut where the
// part holding i ends. part is where the search for that part starts: a
// caller whose i only grows passes the same variable each time.
func (f *frontier) slice(i, end int, part *int) []uint32 {
	p := *part
	for f.ends[p] <= i {
		p++
	}
	*part = p
	start := f.ends[p] - len(f.parts[p])
	return f.parts[p][i-start : min(end, f.ends[p])-start]
}

// advance finds the next non-empty bucket after a phase at cur, from the
// workers' next buckets (d.next) and the far lists. Far vertices move into
// the ring before the ring could run past them. ok is false when no vertex
// is left anywhere.
func (d *deltaStepper) advance(r relaxer, cur uint64) (next uint64, ok bool) {
	for {
		ringNext, found := noBucket, false
		for w := range d.next {
			if d.hasNext[w] && d.next[w] < ringNext {
				ringNext, found = d.next[w], true
			}
		}
		farMin := slices.Min(d.farMin)
		if !found && farMin == noBucket {
			return 0, false
		}
		c := min(ringNext, farMin)
		if farMin-c >= d.span {
			return ringNext, true
		}
		// Some far vertex may belong in [c, c+span): sort the far lists.
		d.refill(r, c)
		for w, bs := range d.bins {
			d.next[w], d.hasNext[w] = bs.next(c)
		}
	}
}

// refill moves the far vertices whose buckets (under their current values)
// lie in [c, c+span) into the ring. Entries whose value has since improved
// into a bucket before c were pushed again then and processed; they are
// dropped.
func (d *deltaStepper) refill(r relaxer, c uint64) {
	for w, f := range d.far {
		keep := f[:0]
		low := noBucket
		for _, v := range f {
			b := r.bucket(v)
			switch {
			case b < c:
			case b-c < d.span:
				d.bins[w].push(b, v)
			default:
				keep = append(keep, v)
				low = min(low, b)
			}
		}
		d.far[w], d.farMin[w] = keep, low
	}
}

// bucketOf is ⌊x·inv⌋ as a bucket number, saturating far beyond any ring.
func bucketOf(x, inv float64) uint64 {
	b := x * inv
	if b >= 1<<62 {
		return 1 << 62
	}
	return uint64(b)
}
