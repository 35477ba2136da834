package gpuop

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
)

// GPU runs operators on one NVIDIA GPU. It keeps the modules it loaded and
// the device copies of the graphs it ran on, so a second query on a graph
// does not copy it again; Forget frees a graph's copies. It is safe for use
// from several goroutines: each run has its own stream and buffers.
type GPU struct {
	ctx *gpu.Context
	// Poison, when set, fills every output and workspace buffer with a
	// garbage pattern before each run, so that an element a kernel leaves
	// unwritten shows up in the result. Tests set it.
	Poison bool

	mu      sync.Mutex
	modules map[string]*moduleSlot
	funcs   map[string]*Kernel
	graphs  map[*convert.Graph]*deviceGraph

	// buildMu serializes the graph builds (build.go), which share the
	// pinned staging ring stage.
	buildMu sync.Mutex
	stage   *stager

	// pins keeps pinned host buffers between runs (pinned.go).
	pins pinnedPool

	// tune is what tests turn to reach rare paths on small graphs; its
	// zero value is what runs.
	tune tuning

	// model is the cost model auto's strategy choice reads.
	model *cost.Model
}

// tuning are a backend's test settings: each reaches, on small graphs, a
// path that only large ones take, or turns off an optimization a benchmark
// measures. Each is off at its zero value.
type tuning struct {
	// b4kCapacity, when positive, is the frontier room bfs4k's kernels
	// are told of (the buffers keep their size), and hubs start at degree
	// 16 with room for 3 segments: a frontier rebuilt, hubs deferred in
	// part.
	b4kCapacity int64
	// wideValues makes sssp and sswp keep 8-byte values whatever the
	// weights of a weighted graph: the wide kernels on integer weights.
	wideValues bool
	// hubDegree, when positive, replaces wsHubDegree: the pulls' hub path
	// on every row longer than it.
	hubDegree int64
	// noHubOrder and noStreamHint turn off pagerank's hubs-first CSC (vwc)
	// and the evict-first hint on its sources.
	noHubOrder, noStreamHint bool
	// columnsMaxBlocks, when positive, caps the blocks of the column
	// kernels: each warp takes several trips of their loops.
	columnsMaxBlocks int64
	// stageAll stages every download through pinned memory, in pieces of
	// at most stageMax bytes when that is positive.
	stageAll bool
	stageMax int
	// persistBlocks, when positive, is the persistent kernels' grid (at
	// most what a cooperative launch holds); persistSingle, when positive,
	// their single-block limit, when negative none (every level on every
	// block).
	persistBlocks int
	persistSingle int64
	// persistKeep, when positive, is what each block of a persistent BFS
	// keeps in shared memory from a level to the next (at most the
	// kernel's PERSIST_LOCAL; 1: nearly every push through the queue);
	// noPersistPrefetch turns off its L2 prefetch of the pushed vertices'
	// targets.
	persistKeep       uint32
	noPersistPrefetch bool
	// noChains makes the persistent searches search the whole graph where
	// they would search its chains' contraction (chains.go).
	noChains bool
	// noChainBF makes a search of a chains' contraction run the near-far
	// SSSP where it would run Bellman-Ford (chains.go's newChainBF).
	noChainBF bool
	// noPersistELL makes the persistent BFS read the CSR where it would
	// read an ELL copy (persistELLWidth).
	noPersistELL bool
	// persistThreads, when positive, is the persistent kernels' block
	// (at most their launch bounds).
	persistThreads int
	// persistSpan, when positive, is the levels a multi-block step of
	// the persistent BFS runs between barriers (persist.go's
	// persistBFSSpan), and the rounds of the persistent SSSP's
	// (persistSSSPSpan).
	persistSpan uint32
	// persistQueueCap, when positive, is the most entries the persistent
	// BFS's queue takes at its first try: a test forces its overflow and
	// the search again at span 1.
	persistQueueCap uint32
}

// SetWideValues makes sssp and sswp keep 8-byte values whatever the
// weights of a weighted graph (tuning's wideValues): what tests of several
// GPUs, outside this package, turn on to reach the wide kernels.
func (b *GPU) SetWideValues(on bool) { b.tune.wideValues = on }

// HubDegree is the longest row a warp's round of the pulls takes itself
// (wsHubDegree); longer rows go to the hubs' kernel.
func (b *GPU) HubDegree() int64 {
	if b != nil && b.tune.hubDegree > 0 {
		return b.tune.hubDegree
	}
	return wsHubDegree
}

// PageRankHubOrder says whether the pagerank pulls read the CSC numbered
// hubs first (convert.HubOrder).
func (b *GPU) PageRankHubOrder() bool { return b == nil || !b.tune.noHubOrder }

// NewGPU returns a backend on the context's device.
func NewGPU(c *gpu.Context) *GPU {
	return &GPU{
		ctx:     c,
		modules: map[string]*moduleSlot{},
		funcs:   map[string]*Kernel{},
		graphs:  map[*convert.Graph]*deviceGraph{},
		pins:    pinnedPool{keep: pinnedKeepBytes, lendMax: pinnedResultsMax},
		model:   defaultModel(c),
	}
}

// Name is "gpu".
func (*GPU) Name() string { return "gpu" }

// Context is the backend's CUDA context.
func (b *GPU) Context() *gpu.Context { return b.ctx }

// Device is the GPU the backend runs on.
func (b *GPU) Device() *gpu.Device { return b.ctx.Device() }

// Resident is the device memory g's copies hold.
func (b *GPU) Resident(g *convert.Graph) int64 { return b.resident(g) }

// fitsBytes says whether need bytes for a run on g fit in the GPU's free
// memory, counting g's copies already there.
func (b *GPU) fitsBytes(g *convert.Graph, need int64) error {
	return b.Device().MemoryFits(b.needBytes(g, need))
}

// needBytes is what a run on g that takes need bytes allocates, less g's
// copies already there, with a margin for allocation granularity: 2% and
// 64 MiB.
func (b *GPU) needBytes(g *convert.Graph, need int64) int64 {
	need -= b.resident(g)
	return need + need/50 + 64<<20
}

// Forget frees the device copies of g and of its chains' contractions.
func (b *GPU) Forget(g *convert.Graph) {
	b.mu.Lock()
	dg := b.graphs[g]
	delete(b.graphs, g)
	b.mu.Unlock()
	if dg != nil {
		dg.free()
	}
	for _, c := range g.BuiltChains() {
		b.Forget(c.Graph)
	}
}

// Close frees everything the backend holds on the device.
func (b *GPU) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for g, dg := range b.graphs {
		dg.free()
		delete(b.graphs, g)
	}
	var first error
	for name, slot := range b.modules {
		slot.mu.Lock()
		if slot.m != nil {
			if err := slot.m.Unload(); err != nil && first == nil {
				first = err
			}
			slot.m = nil
		}
		slot.mu.Unlock()
		delete(b.modules, name)
	}
	clear(b.funcs)
	b.buildMu.Lock()
	if b.stage != nil {
		b.stage.free()
		b.stage = nil
	}
	b.buildMu.Unlock()
	b.pins.close()
	return first
}

// Kernel is a kernel with the grid that fills the GPU with it.
type Kernel struct {
	Fn *gpu.Function
	// grid is the number of blocks of blockSize threads that the device
	// runs at once: the persistent grid of the grid-stride and chunked loops.
	grid uint32
}

// BlockSize is the threads per block of every gpipe kernel
// (__launch_bounds__(256) in kernels/).
const BlockSize = 256

// Flag is a kernel's int flag argument: 1 for true.
func Flag(on bool) int32 {
	if on {
		return 1
	}
	return 0
}

// Kernel returns the Kernel called name of module, loading the module on
// first use.
func (b *GPU) Kernel(module, name string) (*Kernel, error) {
	key := module + "." + name
	b.mu.Lock()
	k := b.funcs[key]
	b.mu.Unlock()
	if k != nil {
		return k, nil
	}
	m, err := b.module(module)
	if err != nil {
		return nil, err
	}
	fn, err := m.Function(name)
	if err != nil {
		return nil, err
	}
	perSM, err := fn.Occupancy(BlockSize, 0)
	if err != nil {
		return nil, err
	}
	k = &Kernel{Fn: fn, grid: uint32(max(perSM, 1) * b.Device().SMs)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if first := b.funcs[key]; first != nil {
		return first, nil // another goroutine looked it up meanwhile
	}
	b.funcs[key] = k
	return k, nil
}

// moduleSlot is one module, loaded on first use under its own lock: a
// module's load waits for nothing but an earlier load of the same module.
type moduleSlot struct {
	mu sync.Mutex
	m  *gpu.Module
}

// module is the module called name, loaded on first use from its fatbin
// (kernels.Image): the driver takes the SASS for the GPU at hand, so a
// load compiles nothing (a GPU newer than every SASS in the fatbin
// JIT-compiles its PTX). A load that fails is tried again on next use.
func (b *GPU) module(name string) (*gpu.Module, error) {
	b.mu.Lock()
	slot := b.modules[name]
	if slot == nil {
		slot = &moduleSlot{}
		b.modules[name] = slot
	}
	b.mu.Unlock()
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.m != nil {
		return slot.m, nil
	}
	img, err := kernels.Image(name)
	if err != nil {
		return nil, err
	}
	m, err := b.ctx.LoadModule(img)
	if err != nil {
		return nil, fmt.Errorf("loading kernel module %s: %w", name, err)
	}
	slot.m = m
	return m, nil
}

// LoadedModules lists the modules loaded so far, in byte order.
func (b *GPU) LoadedModules() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for name, slot := range b.modules {
		slot.mu.Lock()
		if slot.m != nil {
			names = append(names, name)
		}
		slot.mu.Unlock()
	}
	slices.Sort(names)
	return names
}

// LoadKernels loads the kernel modules named first, then every other, now
// rather than on first use. With fatbins a load is a copy of SASS the
// driver has compiled nothing for, milliseconds a module; gpipe serve still
// loads them all as it starts, so that no query waits for one. A module
// that fails to load does not stop the others; the errors come back
// joined.
func (b *GPU) LoadKernels(first ...string) error {
	names := append(slices.Clone(first), kernels.Modules()...)
	var errs []error
	for _, name := range names {
		if _, err := b.module(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// KernelsOf loads the kernels of module named by slots' keys into the
// slots.
func (b *GPU) KernelsOf(module string, slots map[string]**Kernel) error {
	for name, slot := range slots {
		k, err := b.Kernel(module, name)
		if err != nil {
			return err
		}
		*slot = k
	}
	return nil
}

// Launch queues k on s with its full grid.
func (k *Kernel) Launch(s *gpu.Stream, args ...any) error {
	return gpu.Launch(k.Fn, gpu.Dim(k.grid), gpu.Dim(BlockSize), 0, s, args...)
}

// LaunchFor queues k on s with enough blocks for work items of which each
// block takes perBlock, at most its full grid (the kernels loop over the
// rest). perBlock 0 asks for the full grid.
func (k *Kernel) LaunchFor(s *gpu.Stream, items, perBlock int64, args ...any) error {
	blocks := int64(k.grid)
	if perBlock > 0 {
		blocks = min((items+perBlock-1)/perBlock, blocks)
	}
	return gpu.Launch(k.Fn, gpu.Dim(uint32(max(blocks, 1))), gpu.Dim(BlockSize), 0, s, args...)
}

// deviceGraph holds the device copies of a graph's layouts, each part
// uploaded on first use.
type deviceGraph struct {
	mu    sync.Mutex
	parts map[Layout]*gpu.DeviceBuffer
	bytes int64
	// bfsLevels is the most levels a BFS on the graph has run: auto's
	// estimate of its diameter.
	bfsLevels int
	// outliers are the graph's in-edge outliers by threshold
	// (GPU.inOutliers), under their own lock: a query's plan bytes read
	// them while another's layouts copy.
	outMu    sync.Mutex
	outliers map[int64]prOutlierLists
}

func (dg *deviceGraph) free() {
	dg.mu.Lock()
	for part, buf := range dg.parts {
		buf.Free()
		delete(dg.parts, part)
	}
	dg.bytes = 0
	dg.mu.Unlock()
	dg.outMu.Lock()
	dg.outliers = nil
	dg.outMu.Unlock()
}

// seenLevels is the most levels a BFS on g has run on this GPU (0: none
// ran yet).
func (b *GPU) seenLevels(g *convert.Graph) int {
	dg := b.deviceGraph(g)
	dg.mu.Lock()
	defer dg.mu.Unlock()
	return dg.bfsLevels
}

// noteLevels records that a BFS on g ran levels levels.
func (b *GPU) noteLevels(g *convert.Graph, levels int) {
	dg := b.deviceGraph(g)
	dg.mu.Lock()
	dg.bfsLevels = max(dg.bfsLevels, levels)
	dg.mu.Unlock()
}

// deviceGraph is g's entry in the cache, made on first use.
func (b *GPU) deviceGraph(g *convert.Graph) *deviceGraph {
	b.mu.Lock()
	defer b.mu.Unlock()
	dg := b.graphs[g]
	if dg == nil {
		dg = &deviceGraph{parts: map[Layout]*gpu.DeviceBuffer{}}
		b.graphs[g] = dg
	}
	return dg
}

// resident is the device memory g's copies hold already.
func (b *GPU) resident(g *convert.Graph) int64 {
	b.mu.Lock()
	dg := b.graphs[g]
	b.mu.Unlock()
	if dg == nil {
		return 0
	}
	dg.mu.Lock()
	defer dg.mu.Unlock()
	return dg.bytes
}

// Layout names one array of a graph's layouts that kernels read.
type Layout int

const (
	OutOffsets Layout = iota
	OutTargets
	outWeights
	InOffsets
	InSources
	inWeights
	// The vertex-program engine's (vp.go): the CSR weights as the
	// programs keep them (integers; float order keys, sswp.go) ...
	outWeightsU32
	outWeightsKey32
	outWeightsKey64
	// ... the in-edges with sources numbered hubs first (convert.HubOrder)
	// and that numbering ...
	InSourcesHub
	HubIDs
	// ... and G-Shards and Concatenated Windows (convert.Shards).
	shardStart
	shardWindows
	shardSrc
	shardDest
	shardWeightsU32
	shardWeightsF64
	shardWeightsKey32
	shardWeightsKey64
	cwStart
	cwSrc
	cwMapper
	// ... the pull strategies' (vp_pull.go): the CSC's weights as the
	// programs keep them, and kites' vertex grouping (convert.Grouped),
	// whose ratio groupPart writes in the bits from groupShift.
	inWeightsU32
	inWeightsKey32
	inWeightsKey64
	groupOffsets
	groupTargets
	// ... the vertices' integer keys, which result columns map ids to
	// (columns.go) ...
	vertexKeys
	// ... and Enterprise's per-vertex degree classes (four bits a vertex,
	// by out- and in-degree) and hub bitmap (enterprise.go), made
	// by deviceLayout from the offsets.
	OutClasses
	InClasses
	HubBits
	// ... and the persistent searches' chains (chains.go,
	// convert.Chains), by hops or, with chainByWeight, by weight.
	chainRole
	chainFwd
	chainBwd
	chainEnds
)

// chainByWeight marks a chain part as the contraction's by weight.
const chainByWeight Layout = 1 << 12

// groupShift places the log2 of a grouping's ratio in a group part.
const (
	groupShift        = 9
	groupBits  Layout = 7 << groupShift
)

// symmetric marks a shard part as one of the symmetric shards (every edge
// both ways: weak connectivity on a directed graph).
const symmetric Layout = 1 << 8

// of is the part of g that holds part: for an undirected graph the in-edge
// layout is the out-edge one, and the symmetric shards are the shards.
func (part Layout) of(g *convert.Graph) Layout {
	if g.Directed {
		return part
	}
	switch part {
	case InOffsets:
		return OutOffsets
	case InSources:
		return OutTargets
	case inWeights:
		return outWeights
	case inWeightsU32:
		return outWeightsU32
	case inWeightsKey32:
		return outWeightsKey32
	case inWeightsKey64:
		return outWeightsKey64
	case InClasses:
		return OutClasses
	}
	return part &^ symmetric
}

// host is the host array the part is copied from, building the layout if
// need be.
func (part Layout) host(g *convert.Graph) ([]byte, error) {
	switch part {
	case vertexKeys: // on the host whoever built the graph
		return integerKeys(g), nil
	case OutClasses, InClasses, HubBits:
		return nil, fmt.Errorf("operators: layout %d is made on the GPU (deviceLayout)", part)
	}
	if err := g.Materialize(); err != nil { // a graph built on the GPU
		return nil, err
	}
	switch part {
	case OutOffsets:
		return alloc.Bytes(g.Out.Offsets), nil
	case OutTargets:
		return alloc.Bytes(g.Out.Targets), nil
	case outWeights:
		return alloc.Bytes(g.Out.Weights), nil
	case InOffsets:
		return alloc.Bytes(g.In().Offsets), nil
	case InSources:
		return alloc.Bytes(g.In().Targets), nil
	case inWeights:
		return alloc.Bytes(g.In().Weights), nil
	case outWeightsU32:
		return alloc.Bytes(convertWeights(g.Out.Weights, func(w float64) uint32 { return uint32(w) })), nil
	case outWeightsKey32:
		return alloc.Bytes(convertWeights(g.Out.Weights, Key32)), nil
	case outWeightsKey64:
		return alloc.Bytes(convertWeights(g.Out.Weights, Key64)), nil
	case InSourcesHub:
		return alloc.Bytes(g.HubOrder().InSources), nil
	case HubIDs:
		return alloc.Bytes(g.HubOrder().ID), nil
	case inWeightsU32:
		return alloc.Bytes(convertWeights(g.In().Weights, func(w float64) uint32 { return uint32(w) })), nil
	case inWeightsKey32:
		return alloc.Bytes(convertWeights(g.In().Weights, Key32)), nil
	case inWeightsKey64:
		return alloc.Bytes(convertWeights(g.In().Weights, Key64)), nil
	}
	if base := part &^ chainByWeight; base >= chainRole && base <= chainEnds {
		return chainHost(g, base, part&chainByWeight != 0)
	}
	if base := part &^ (symmetric | groupBits); base == groupOffsets || base == groupTargets {
		gr, err := g.Grouped(uint(part&groupBits>>groupShift), part&symmetric != 0)
		if err != nil {
			return nil, err
		}
		if base == groupOffsets {
			return alloc.Bytes(gr.Offsets), nil
		}
		return alloc.Bytes(gr.Targets), nil
	}
	sh, err := g.Shards(part&symmetric != 0)
	if err != nil {
		return nil, err
	}
	switch part &^ symmetric {
	case shardStart:
		return alloc.Bytes(sh.Start), nil
	case shardWindows:
		return alloc.Bytes(sh.Windows), nil
	case shardSrc:
		return alloc.Bytes(sh.SrcIndex), nil
	case shardDest:
		return alloc.Bytes(sh.DestIndex), nil
	case shardWeightsU32:
		return alloc.Bytes(convertWeights(sh.Weights, func(w float64) uint32 { return uint32(w) })), nil
	case shardWeightsF64:
		return alloc.Bytes(sh.Weights), nil
	case shardWeightsKey32:
		return alloc.Bytes(convertWeights(sh.Weights, Key32)), nil
	case shardWeightsKey64:
		return alloc.Bytes(convertWeights(sh.Weights, Key64)), nil
	case cwStart:
		return alloc.Bytes(sh.CW().Start), nil
	case cwSrc:
		return alloc.Bytes(sh.CW().SrcIndex), nil
	case cwMapper:
		return alloc.Bytes(sh.CW().Mapper), nil
	}
	panic(fmt.Sprintf("operators: no host array for layout part %d", part))
}

// Bytes is the device memory the part takes, without building it.
func (part Layout) Bytes(g *convert.Graph) int64 {
	n, m := int64(g.NumVertices()), g.NumEdges()
	weighted := func(size int64) int64 {
		if !g.Weighted {
			return 0
		}
		return size
	}
	switch part {
	case OutOffsets, InOffsets:
		return (n + 1) * 8
	case OutTargets, InSources, InSourcesHub:
		return m * 4
	case outWeights, inWeights, outWeightsKey64:
		return weighted(m * 8)
	case outWeightsU32, outWeightsKey32, inWeightsU32, inWeightsKey32:
		return weighted(m * 4)
	case inWeightsKey64:
		return weighted(m * 8)
	case HubIDs:
		return n * 4
	case OutClasses, InClasses:
		return 16 * ((n + 31) / 32)
	case HubBits:
		return 4 * ((n + 31) / 32)
	case vertexKeys:
		return n * keyWidth(g)
	}
	if base := part &^ chainByWeight; base >= chainRole && base <= chainEnds {
		return chainPartBytes(g, base)
	}
	if base := part &^ (symmetric | groupBits); base == groupOffsets || base == groupTargets {
		logR := uint(part & groupBits >> groupShift)
		groups := (n + 1<<logR - 1) >> logR
		if base == groupOffsets {
			return (groups + 1) * 8
		}
		return convert.GroupedBytes(g, logR, part&symmetric != 0) - (groups+1)*8
	}
	entries := convert.ShardEntries(g, part&symmetric != 0)
	S := int64(0)
	if n > 0 {
		N := int64(convert.ShardVertices(int(n), entries))
		S = (n + N - 1) / N
	}
	switch part &^ symmetric {
	case shardStart, cwStart:
		return (S + 1) * 4
	case shardWindows:
		return S * (S + 1) * 4
	case shardSrc, cwMapper:
		return entries * 4
	case shardDest, cwSrc:
		return entries * 2
	case shardWeightsU32, shardWeightsKey32:
		return weighted(entries * 4)
	case shardWeightsF64, shardWeightsKey64:
		return weighted(entries * 8)
	}
	panic(fmt.Sprintf("operators: no size for layout part %d", part))
}

// convertWeights is w with each weight converted by f, in parallel (nil for
// no weights).
func convertWeights[T any](w []float64, f func(float64) T) []T {
	if w == nil {
		return nil
	}
	out := make([]T, len(w))
	par.For(len(w), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = f(w[i])
		}
	})
	return out
}

// Layouts returns the device copies of the parts of g that a run needs,
// copying those not on the device yet, and the time the copies took. For an
// undirected graph the in-edge parts are the out-edge ones.
func (b *GPU) Layouts(g *convert.Graph, s *gpu.Stream, parts ...Layout) ([]*gpu.DeviceBuffer, time.Duration, error) {
	dg := b.deviceGraph(g)
	dg.mu.Lock()
	defer dg.mu.Unlock()
	start := time.Now()
	copied := false
	bufs := make([]*gpu.DeviceBuffer, len(parts))
	for i, part := range parts {
		part = part.of(g)
		if dg.parts[part] == nil {
			host, err := part.host(g)
			if err != nil {
				return nil, 0, err
			}
			buf, err := b.ctx.Alloc(max(int64(len(host)), 8))
			if err != nil {
				return nil, 0, err
			}
			if err := buf.CopyFromHost(s, host); err != nil {
				buf.Free()
				return nil, 0, err
			}
			dg.parts[part] = buf
			dg.bytes += buf.Size()
			copied = true
		}
		bufs[i] = dg.parts[part]
	}
	if !copied {
		return bufs, 0, nil
	}
	if err := s.Synchronize(); err != nil {
		return nil, 0, err
	}
	return bufs, time.Since(start), nil
}

// deviceLayout is g's layout part, filled by fill (work queued on s, into
// a buffer of part.bytes(g)) where it is not on the GPU yet: the layouts
// derived from others, made by a kernel from those already there or
// uploaded. Like layouts, it waits for the work before another search may
// use the buffer.
func (b *GPU) deviceLayout(g *convert.Graph, s *gpu.Stream, part Layout, fill func(buf *gpu.DeviceBuffer) error) (*gpu.DeviceBuffer, error) {
	part = part.of(g)
	dg := b.deviceGraph(g)
	dg.mu.Lock()
	defer dg.mu.Unlock()
	if buf := dg.parts[part]; buf != nil {
		return buf, nil
	}
	buf, err := b.ctx.Alloc(max(part.Bytes(g), 8))
	if err != nil {
		return nil, err
	}
	if err := b.PoisonBuffers(s, buf); err != nil { // tests: fill must write every word
		buf.Free()
		return nil, err
	}
	if err := fill(buf); err != nil {
		_ = s.Synchronize() // before the buffer goes back
		buf.Free()
		return nil, err
	}
	if err := s.Synchronize(); err != nil {
		buf.Free()
		return nil, err
	}
	dg.parts[part] = buf
	dg.bytes += buf.Size()
	return buf, nil
}

// vwcConfig is how a virtual warp-centric kernel runs (PPoPP'11 §3).
type vwcConfig struct {
	k             int   // virtual warp size
	chunk         int64 // vertices a virtual warp takes at a time
	dynamic       bool  // take chunks from a global counter
	outlierDegree int64 // defer vertices with more edges than this; 0: off
}

// String names the configuration as a strategy.
func (c vwcConfig) String() string {
	s := fmt.Sprintf("vwc k=%d chunk=%d", c.k, c.chunk)
	if c.dynamic {
		s += " dynamic"
	}
	if c.outlierDegree > 0 {
		s += fmt.Sprintf(" defer>%d", c.outlierDegree)
	}
	return s
}

// vwcConfigFor applies the parameters to a layout: K from the average degree
// when not given (the smallest power of two at least half the average
// degree, at most 32: lanes beyond the typical degree idle, and the paper
// found the best K near it), and a chunk of 8 virtual warps' width.
func vwcConfigFor(p operators.Params, c *convert.CSR) vwcConfig {
	cfg := vwcConfig{k: p.VWarp, chunk: int64(p.ChunkSize), dynamic: p.Dynamic, outlierDegree: outlierDegree(p)}
	if cfg.k == 0 {
		avg := 0.0
		if n := c.NumVertices(); n > 0 {
			avg = float64(c.NumEdges()) / float64(n)
		}
		cfg.k = 1
		for cfg.k < 32 && float64(cfg.k) < avg/2 {
			cfg.k *= 2
		}
	}
	if cfg.chunk == 0 {
		cfg.chunk = int64(8 * cfg.k)
	}
	return cfg
}

// defaultOutlierDegree is the degree above which a vertex is deferred to
// whole blocks unless the parameters say otherwise. On the H100 with a
// Kronecker scale-22 graph, deferring above 1024 halved BFS time (4.2 ms to
// 1.9 ms) and cut a PageRank iteration from 1.87 ms to 1.38 ms: without it
// one warp walks a hub's hundred thousand edges while the rest of its block
// waits (BENCHMARKS.md).
const defaultOutlierDegree = 1024

// outlierDegree is the deferring threshold the parameters ask for: 0 picks
// the default, -1 turns deferring off (0 to the kernels).
func outlierDegree(p operators.Params) int64 {
	switch {
	case p.DeferOutliers == 0:
		return defaultOutlierDegree
	case p.DeferOutliers < 0:
		return 0
	}
	return p.DeferOutliers
}

// PtrOf is buf's address, or null for no buffer.
func PtrOf(buf *gpu.DeviceBuffer) gpu.DevicePtr {
	if buf == nil {
		return 0
	}
	return buf.Ptr()
}

// PoisonBuffers fills bufs with a garbage pattern (all-ones bytes: NaN as a
// float64, -1 and NoVertex as integers) when the backend poisons.
func (b *GPU) PoisonBuffers(s *gpu.Stream, bufs ...*gpu.DeviceBuffer) error {
	if !b.Poison {
		return nil
	}
	for _, buf := range bufs {
		if buf == nil {
			continue
		}
		if err := buf.Memset8(s, 0xA5); err != nil {
			return err
		}
	}
	return nil
}

// PoisonHost fills a host result slice with v before a download, when the
// backend poisons, so that a short copy cannot pass for a result.
func PoisonHost[T any](b *GPU, xs []T, v T) {
	if b.Poison {
		for i := range xs {
			xs[i] = v
		}
	}
}

// timer times a run on a stream with CUDA events.
type timer struct{ start, stop *gpu.Event }

func newTimer(c *gpu.Context, s *gpu.Stream) (*timer, error) {
	start, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	stop, err := c.NewEvent()
	if err != nil {
		start.Destroy()
		return nil, err
	}
	if err := start.Record(s); err != nil {
		start.Destroy()
		stop.Destroy()
		return nil, err
	}
	return &timer{start: start, stop: stop}, nil
}

// elapsed records the stop event, waits for it and returns the time since
// the start event.
func (t *timer) elapsed(s *gpu.Stream) (time.Duration, error) {
	if err := t.stop.Record(s); err != nil {
		return 0, err
	}
	if err := t.stop.Synchronize(); err != nil {
		return 0, err
	}
	return gpu.Elapsed(t.start, t.stop)
}

func (t *timer) destroy() {
	t.start.Destroy()
	t.stop.Destroy()
}

// Buffers allocates device Buffers of the given sizes in bytes, all or none.
func (b *GPU) Buffers(sizes ...int64) ([]*gpu.DeviceBuffer, func(), error) {
	bufs := make([]*gpu.DeviceBuffer, len(sizes))
	free := func() {
		for _, buf := range bufs {
			if buf != nil {
				buf.Free()
			}
		}
	}
	for i, size := range sizes {
		if size == 0 {
			continue
		}
		buf, err := b.ctx.Alloc(size)
		if err != nil {
			free()
			return nil, nil, err
		}
		bufs[i] = buf
	}
	return bufs, free, nil
}

// outlierSegment is OUTLIER_SEGMENT in kernels/: the edges of a deferred
// outlier that one block processes.
const outlierSegment = 4096

// layoutBytes is the device memory of the given parts of g's layouts.
func layoutBytes(g *convert.Graph, parts ...Layout) int64 {
	var b int64
	seen := map[Layout]bool{}
	for _, part := range parts {
		part = part.of(g)
		if !seen[part] {
			seen[part] = true
			b += part.Bytes(g)
		}
	}
	return b
}
