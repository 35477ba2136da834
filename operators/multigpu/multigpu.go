package multigpu

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// Several GPUs of one host (docs/multi-gpu.md). A graph is cut into one
// part per GPU by vertex range (convert.Partitions): part p owns [Lo, Hi)
// and holds only the edges into it, so no GPU holds the whole graph. Every
// GPU keeps full-length vertex arrays and writes only its own vertices';
// between levels or iterations the owners' entries travel to the others:
//
//	bfs       Enterprise's multi-GPU scheme (§4.4), bfs.go
//	pagerank  the owned contributions, every iteration, pagerank.go
//	sssp, sswp, cc
//	          Vertex Refinement (khorasani-dissertation §2.3): only the
//	          updated boundary vertices, vp.go
//
// One process drives all the GPUs (one goroutine issuing every GPU's
// launches, which are asynchronous, and waiting on them together), and the
// transport is NCCL where libnccl loads, else peer copies through the
// driver (the fallback, and what tests with several parts on one GPU use).

// MultiGPU runs operators over several GPUs (or several parts on fewer
// GPUs: gpus may repeat one). It keeps each graph's partition, and each GPU
// keeps its part's device copies.
type MultiGPU struct {
	gpus []*gpuop.GPU
	link transport
	// Permissive is how much more than its own range each part holds for
	// the vertex programs (Permissive Partitioning: about this many times
	// its own edges on each side, where the GPU's memory allows; 0: none).
	Permissive float64
	// PeerStores lets BFS's kernels store each level's frontier words
	// straight into the other GPUs' bitmaps (mg_push_clear) where every GPU
	// reaches every other's memory, rather than gather them through the
	// transport (bfs.go). On by default; GPIPE_TRANSPORT=nccl turns it
	// off, so that NCCL carries everything.
	PeerStores bool
	// speculate says when a top-down level by peer stores makes the
	// bottom-up queues and hub lists in its first round (speculates in
	// bfs.go): 0 by the rule, 1 always, -1 never (the tests vary it).
	speculate int
	// afterTurn, where set (tests), runs after a level that turned the
	// search bottom-up in its speculative first round, q the buffer of the
	// next level: the hub lists the stores built are a cache the results
	// never show, so a test reads them here.
	afterTurn func(ps []*mgBFSPart, q int) error
	markers   *markerPool

	mu    sync.Mutex
	parts map[partitionKey][]convert.Partition

	reachOnce sync.Once
	reach     bool
	// atomics: every pair of the parts' GPUs has native atomics between
	// them (or shares a GPU); made with reach.
	atomics bool
}

// partitionKey names a cached partition: the graph, and how permissive.
type partitionKey struct {
	g     *convert.Graph
	extra float64
}

// defaultPermissive is MultiGPU.Permissive's default: each part holds a
// quarter of its edges more on each side, so that borders can slide by
// that much.
const defaultPermissive = 0.25

// NewMultiGPU returns a backend over gpus, part p on gpus[p], exchanging
// through NCCL's communicators comms (comms[p] on gpus[p]), or through peer
// copies when comms is nil (noNCCL says why, for the reports).
func NewMultiGPU(gpus []*gpuop.GPU, comms []*gpu.Comm, noNCCL string) *MultiGPU {
	markers := &markerPool{free: map[*gpu.Context][]*gpu.Event{}}
	var link transport = peerCopies{why: noNCCL, markers: markers}
	if comms != nil {
		link = ncclLink{comms: comms}
	}
	return &MultiGPU{gpus: gpus, link: link, Permissive: defaultPermissive, PeerStores: true, markers: markers,
		parts: map[partitionKey][]convert.Partition{}}
}

// reachesPeers reports whether every part's GPU can write into every other
// part's memory: the parts share a GPU, or peer access is on between theirs
// (NVLink, or PCIe where the platform allows it).
func (m *MultiGPU) reachesPeers() bool {
	m.reachOnce.Do(func() {
		m.reach, m.atomics = true, true
		for _, a := range m.gpus {
			for _, b := range m.gpus {
				if a.Context() == b.Context() {
					continue
				}
				ok, err := gpu.CanAccessPeer(a.Context().Device(), b.Context().Device())
				if err != nil || !ok || a.Context().EnablePeerAccess(b.Context()) != nil {
					m.reach = false
				}
				if link, err := gpu.P2PLink(a.Context().Device(), b.Context().Device()); err != nil || !link.Atomics {
					m.atomics = false
				}
			}
		}
	})
	return m.reach
}

// peerAtomics reports whether a kernel's atomics on another part's memory
// are native wherever it reaches it (reachesPeers): NVLink's are, PCIe's
// may not be.
func (m *MultiGPU) peerAtomics() bool { return m.reachesPeers() && m.atomics }

// Name is "gpu".
func (*MultiGPU) Name() string { return "gpu" }

// GPUs is the number of parts a graph is cut into.
func (m *MultiGPU) GPUs() int { return len(m.gpus) }

// Transport names how the parts exchange values: "nccl" or "peer copies".
func (m *MultiGPU) Transport() string { return m.link.name() }

// First is the backend of the first GPU, which runs what the parts do not.
func (m *MultiGPU) First() *gpuop.GPU { return m.gpus[0] }

// Run runs op over the GPUs: bfs, pagerank, sssp, sswp and cc partitioned;
// a strategy of one GPU, asked for by name, on the first GPU alone.
func (m *MultiGPU) Run(ctx context.Context, op operators.Operator, in operators.Input) (*operators.Result, error) {
	if err := gpuop.Check(op, in.Params); err != nil {
		return nil, err
	}
	strategy := in.Params.Strategy
	auto := strategy == "" || strategy == "auto"
	// Options only one GPU's strategies read (the virtual warps', kites'
	// grouping, the near-far step, weighted PageRank) keep the run on one
	// GPU, where they mean something.
	var oneGPU []string
	if p := in.Params; p.VWarp != 0 || p.DeferOutliers != 0 || p.Dynamic || p.ChunkSize != 0 {
		oneGPU = append(oneGPU, "virtual-warp options")
	}
	if in.Params.VertexGroup != 0 {
		oneGPU = append(oneGPU, "--vertex-group")
	}
	if in.Params.Delta != 0 {
		oneGPU = append(oneGPU, "--delta")
	}
	if in.Params.Weighted {
		// The partitioned pull (mg_pr_ws_*) has no weighted kernels.
		oneGPU = append(oneGPU, "--weighted")
	}
	path, partitioned := paths[op.Spec().Name]
	if partitioned && path.prepare {
		if err := op.Prepare(&in.Params); err != nil {
			return nil, err
		}
	}
	if !partitioned || !auto || len(oneGPU) > 0 {
		res, err := m.gpus[0].Run(ctx, op, in)
		if err == nil && partitioned {
			asked := strategy + " asked for"
			if auto {
				asked = strings.Join(oneGPU, " and ") + " given"
			}
			res.StrategyReason = fmt.Sprintf("%s: read by strategies of one GPU, so run on GPU %d alone (without them --strategy auto spreads %s over %d GPUs); %s",
				asked, m.gpus[0].Device().Ordinal, op.Spec().Name, len(m.gpus), res.StrategyReason)
		}
		return res, err
	}
	extra := m.extraFor(op, in.Graph, in.Params)
	if err := m.fits(op, in.Graph, in.Params, extra); err != nil {
		return nil, err
	}
	res, err := path.run(ctx, m, in, extra)
	if err != nil {
		return nil, err
	}
	res.GPUs = len(m.gpus)
	return res, nil
}

// path is an operator's run over several GPUs.
type path struct {
	// run runs it, each part holding extra more (see extraFor).
	run func(ctx context.Context, m *MultiGPU, in operators.Input, extra float64) (*operators.Result, error)
	// prepare says run reads the parameters' defaults (Operator.Prepare).
	prepare bool
	// permissive says the parts may hold more than their own vertices'
	// edges (the vertex programs: MultiGPU.Permissive).
	permissive bool
	// bytes is what a part's run allocates on its GPU beyond the part's
	// layouts.
	bytes func(g *convert.Graph, part convert.Partition, p operators.Params) int64
}

// paths are the operators with a run over several GPUs, by name; any other
// runs on the first GPU.
var paths = map[string]path{
	"bfs":      {run: runBFSMulti, bytes: bfsPartBytes},
	"pagerank": {run: runPageRankMulti, prepare: true, bytes: pageRankPartBytes},
	"sssp":     {run: vpRun(mgSSSP), permissive: true, bytes: vpPartBytes},
	"sswp":     {run: vpRun(mgSSWP), permissive: true, bytes: vpPartBytes},
	"cc":       {run: vpRun(mgCC), permissive: true, bytes: vpPartBytes},
}

// vpRun is the run of the vertex program which.
func vpRun(which mgProgram) func(context.Context, *MultiGPU, operators.Input, float64) (*operators.Result, error) {
	return func(ctx context.Context, m *MultiGPU, in operators.Input, extra float64) (*operators.Result, error) {
		return runVPMulti(ctx, m, in, which, extra)
	}
}

// Partitioned says whether op has a path over several GPUs.
func Partitioned(op operators.Operator) bool {
	_, ok := paths[op.Spec().Name]
	return ok
}

// partitions is g's partition into one part per GPU, each holding extra
// more (convert.Partitions), cut on first use.
func (m *MultiGPU) partitions(g *convert.Graph, extra float64) ([]convert.Partition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := partitionKey{g, extra}
	if parts, ok := m.parts[key]; ok {
		return parts, nil
	}
	parts, err := g.Partitions(len(m.gpus), extra)
	if err != nil {
		return nil, err
	}
	m.parts[key] = parts
	return parts, nil
}

// extraFor is how permissive op's partition is: m.Permissive for the
// vertex programs (cc only on an undirected graph: it runs on one GPU
// otherwise) where that fits the GPUs, else 0.
func (m *MultiGPU) extraFor(op operators.Operator, g *convert.Graph, p operators.Params) float64 {
	name := op.Spec().Name
	if !paths[name].permissive || name == "cc" && g.Directed {
		return 0
	}
	if m.Permissive > 0 && m.fits(op, g, p, m.Permissive) == nil {
		return m.Permissive
	}
	return 0
}

// Fits says whether each part of a run of op on g fits its GPU's memory:
// the part's layouts and the run's full-length vertex arrays.
func (m *MultiGPU) Fits(op operators.Operator, g *convert.Graph, p operators.Params) error {
	return m.fits(op, g, p, m.extraFor(op, g, p))
}

func (m *MultiGPU) fits(op operators.Operator, g *convert.Graph, p operators.Params, extra float64) error {
	parts, err := m.partitions(g, extra)
	if err != nil {
		return err
	}
	need := make(map[*gpuop.GPU]int64)
	for i, part := range parts {
		need[m.gpus[i]] += mgBytes(op, g, part, p)
	}
	for b, bytes := range need {
		if err := b.Device().MemoryFits(bytes + bytes/50 + 64<<20); err != nil {
			return usererr.New(usererr.Backend, fmt.Sprintf("%s over %d GPUs: %v", op.Spec().Name, len(m.gpus), err),
				"use more GPUs (--gpus), or --backend cpu")
		}
	}
	return nil
}

// mgBytes is about what a part's run of op allocates on its GPU: the
// part's layouts and the run's own arrays.
func mgBytes(op operators.Operator, g *convert.Graph, part convert.Partition, p operators.Params) int64 {
	n := int64(g.NumVertices())
	layouts := (n+1)*8*2 + part.Edges()*4*2
	if g.Weighted {
		layouts += part.Edges() * 8
	}
	return layouts + paths[op.Spec().Name].bytes(g, part, p)
}

// bfsPartBytes: the classes by out- and in-degree, the whole graph's hubs,
// the frontiers.
func bfsPartBytes(g *convert.Graph, _ convert.Partition, _ operators.Params) int64 {
	vertexBits := gpuop.OutClasses.Bytes(g) + gpuop.InClasses.Bytes(g) + gpuop.HubBits.Bytes(g)
	_, hubs := gpuop.EnterpriseHubs(g.Degrees())
	return vertexBits + gpuop.EntBufferBytes(int64(g.NumVertices()), hubs)
}

// pageRankPartBytes: ranks, out-degrees, sums and the contributions.
func pageRankPartBytes(g *convert.Graph, _ convert.Partition, p operators.Params) int64 {
	n := int64(g.NumVertices())
	return (n+1)*8 + n*4 + n*8*3 + 2*n*gpuop.PRContribBytes(p)
}

// vpPartBytes: the values, the active bitmaps, the held vertices' copies
// and the boundary's exchange buffers.
func vpPartBytes(g *convert.Graph, part convert.Partition, _ operators.Params) int64 {
	n := int64(g.NumVertices())
	held := int64(part.HoldHi) - int64(part.HoldLo)
	return n*8 + n/8*2 + held*8 + part.Boundary*12 + n*12
}

// Forget frees g's partitions and their parts' device copies.
func (m *MultiGPU) Forget(g *convert.Graph) {
	m.mu.Lock()
	var forget [][]convert.Partition
	for key, parts := range m.parts {
		if key.g == g {
			forget = append(forget, parts)
			delete(m.parts, key)
		}
	}
	m.mu.Unlock()
	for _, parts := range forget {
		for i, part := range parts {
			m.gpus[i].Forget(part.Graph)
		}
	}
	for _, b := range m.gpus {
		b.Forget(g)
	}
}

// describe names the run's GPUs and transport.
func (m *MultiGPU) describe(parts []convert.Partition) string {
	var cuts []string
	for _, p := range parts {
		cuts = append(cuts, fmt.Sprintf("%d", p.Edges()))
	}
	return fmt.Sprintf("%d GPUs over %s, edges per part %s", len(m.gpus), m.link.name(), strings.Join(cuts, "/"))
}

// ---- the exchange ----

// transport moves bytes between the parts' GPUs.
type transport interface {
	name() string
	// broadcast copies, for every root r with bytes[r] > 0, the bytes at
	// src[r] on part r's GPU to dst[p][r] on every other part p. Each copy
	// is ordered after the work queued so far on its root's stream, and
	// before the work queued after it on its receiver's stream and on its
	// root's (which may then overwrite what it read). The host does not
	// wait.
	broadcast(streams []*gpu.Stream, src []gpu.DevicePtr, dst [][]gpu.DevicePtr, bytes []int64) error
}

// gatherRanges makes every part's buffer hold every part's range: the
// bytes [cuts[r], cuts[r+1]) of bufs[r] go to the same place in the others.
func gatherRanges(link transport, streams []*gpu.Stream, bufs []*gpu.DeviceBuffer, cuts []int64) error {
	k := len(bufs)
	src := make([]gpu.DevicePtr, k)
	dst := make([][]gpu.DevicePtr, k)
	bytes := make([]int64, k)
	for r := range k {
		src[r] = bufs[r].Ptr() + gpu.DevicePtr(cuts[r])
		bytes[r] = cuts[r+1] - cuts[r]
	}
	for p := range k {
		dst[p] = make([]gpu.DevicePtr, k)
		for r := range k {
			dst[p][r] = bufs[p].Ptr() + gpu.DevicePtr(cuts[r])
		}
	}
	return link.broadcast(streams, src, dst, bytes)
}

// readParts reads every part's counters: fetch(i) queues part i's copy to
// the host, wait(i) waits for it and takes it; every copy is queued before
// the first wait, so the GPUs' copies go at once rather than each after the
// previous GPU's wait. On an error it waits for every stream before it
// returns: a copy still in flight would write into pinned memory that the
// caller's deferred frees give back to the pool.
func readParts(streams []*gpu.Stream, fetch, wait func(i int) error) error {
	fail := func(err error) error {
		for _, s := range streams {
			_ = s.Synchronize() // the first error is the one to report
		}
		return err
	}
	for i := range streams {
		if err := fetch(i); err != nil {
			return fail(err)
		}
	}
	for i := range streams {
		if err := wait(i); err != nil {
			return fail(err)
		}
	}
	return nil
}

// peerCopies is the transport of the driver's peer copies: over the link
// between GPUs with peer access (NVLink or PCIe), through the host
// without, or within one GPU for parts that share it. Like NCCL's calls,
// the copies are ordered by the streams alone, with events, so the host
// never waits: each receiver's stream waits for its roots' work, then
// pulls their bytes; each root's stream waits for those copies before its
// later work may overwrite what they read.
type peerCopies struct {
	why     string // why not NCCL, when NCCL was wanted
	markers *markerPool
}

func (c peerCopies) name() string {
	if c.why == "" {
		return "peer copies"
	}
	return "peer copies (no NCCL: " + c.why + ")"
}

func (c peerCopies) broadcast(streams []*gpu.Stream, src []gpu.DevicePtr, dst [][]gpu.DevicePtr, bytes []int64) error {
	var held []*gpu.Event
	// A wait takes the event's record at the time of the call, so the
	// events are free again once every wait is queued.
	defer func() { c.markers.put(held...) }()
	ready := make([]*gpu.Event, len(streams))
	done := make([]*gpu.Event, len(streams))
	for _, st := range peerCopyPlan(bytes) {
		s := streams[st.stream]
		var err error
		switch st.op {
		case markReady, markDone:
			var e *gpu.Event
			if e, err = c.markers.get(s.Context()); err != nil {
				return err
			}
			held = append(held, e)
			if st.op == markReady {
				ready[st.stream] = e
			} else {
				done[st.stream] = e
			}
			err = e.Record(s)
		case waitReady:
			err = s.WaitEvent(ready[st.of])
		case waitDone:
			err = s.WaitEvent(done[st.of])
		case copyFrom:
			err = gpu.CopyPeer(s, dst[st.stream][st.of], s.Context(), src[st.of], streams[st.of].Context(), bytes[st.of])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// peerStep is one call of a broadcast by peer copies, queued on the
// stream of part stream; of is the part whose event it waits for or whose
// bytes it copies.
type peerStep struct {
	op         peerOp
	stream, of int
}

type peerOp int

const (
	markReady peerOp = iota // a root's bytes are complete
	waitReady               // a receiver waits for a root's bytes
	copyFrom                // a receiver copies a root's bytes
	markDone                // a receiver's copies are done
	waitDone                // a root waits for a receiver's copies
)

// peerCopyPlan is the order of a broadcast's calls, for the roots r with
// bytes[r] > 0: every root marks its bytes ready; every receiver waits for
// each root's mark and copies, then marks its copies done; then every root
// waits for each receiver's mark. Every copy is queued before any root
// waits: a root's wait queued ahead of its own copies (as a receiver)
// would hold them behind the others'.
func peerCopyPlan(bytes []int64) []peerStep {
	var plan []peerStep
	k := len(bytes)
	for r := range k {
		if bytes[r] > 0 {
			plan = append(plan, peerStep{markReady, r, r})
		}
	}
	copied := make([]bool, k)
	for p := range k {
		for r := range k {
			if r != p && bytes[r] > 0 {
				plan = append(plan, peerStep{waitReady, p, r}, peerStep{copyFrom, p, r})
				copied[p] = true
			}
		}
		if copied[p] {
			plan = append(plan, peerStep{markDone, p, p})
		}
	}
	for r := range k {
		for p := range k {
			if bytes[r] > 0 && p != r && copied[p] {
				plan = append(plan, peerStep{waitDone, r, p})
			}
		}
	}
	return plan
}

// markerPool keeps the events (markers, without timing) that order peer
// copies, by GPU, for the backend's life: a few per GPU.
type markerPool struct {
	mu   sync.Mutex
	free map[*gpu.Context][]*gpu.Event
}

func (m *markerPool) get(c *gpu.Context) (*gpu.Event, error) {
	m.mu.Lock()
	if free := m.free[c]; len(free) > 0 {
		e := free[len(free)-1]
		m.free[c] = free[:len(free)-1]
		m.mu.Unlock()
		return e, nil
	}
	m.mu.Unlock()
	return c.NewMarker()
}

func (m *markerPool) put(events ...*gpu.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range events {
		m.free[e.Context()] = append(m.free[e.Context()], e)
	}
}

// ncclLink is the transport over NCCL: one communicator a GPU, a group of
// broadcasts (one per root) for each exchange.
type ncclLink struct {
	comms []*gpu.Comm
}

func (ncclLink) name() string { return "nccl" }

func (l ncclLink) broadcast(streams []*gpu.Stream, src []gpu.DevicePtr, dst [][]gpu.DevicePtr, bytes []int64) error {
	return gpu.NCCLGroup(func() error {
		for r := range streams {
			if bytes[r] == 0 {
				continue
			}
			for p, s := range streams {
				// In place on the root; elsewhere NCCL reads no send buffer.
				buf := dst[p][r]
				if p == r {
					buf = src[r]
				}
				if err := l.comms[p].Broadcast(s, buf, buf, bytes[r], gpu.NCCLUint8, r); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
