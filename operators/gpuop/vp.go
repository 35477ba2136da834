package gpuop

import (
	"context"
	"fmt"
	"math"
	"strings"
	"structs"
	"unsafe"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// The vertex-program engine on the GPU (kernels/vertex_program.cuh): SSSP,
// SSWP and CC are monotone vertex programs that run, unchanged, in three
// layouts, each a strategy:
//
//	vwc      the CSR, pushed along out-edges by virtual warps, driven by a
//	         frontier of flagged groups, near-far ordered (kernels/vp_vwc.cu)
//	gshards  CuSha's G-Shards: one block a shard, four steps (kernels/shards.cuh)
//	cw       CuSha's Concatenated Windows: G-Shards with step 4 through the Mapper
//
// PageRank is the sum program, in the same three layouts (pagerank.go).
// A run's state lives on the device (vpState) and its last block advances
// it, so the host queues iterations in growing batches and reads the state
// once per batch.

// Program is a vertex program as the host sees it: the suffix of its
// kernels' names, its value width, the weights it reads and the bytes of
// its "no value".
type Program struct {
	Name     string
	Wide     bool   // 8-byte values, else 4
	Weights  Layout // the CSR's weights in the program's type, or noWeights
	shardW   Layout // the shards' weights, or noWeights
	None     byte   // every byte of the value "none" (unreached)
	priority bool   // near-far ordered
}

// NoWeights is the weights part of an unweighted program.
const NoWeights Layout = -1

// tree says whether the program's operator also finds a shortest-path tree
// from the final values (SSSP's parent pass over the CSR).
func (p Program) tree() bool { return strings.HasPrefix(p.Name, "sssp") }

func (p Program) ValueBytes() int64 {
	if p.Wide {
		return 8
	}
	return 4
}

// csrParts are the layout parts a push over the CSR reads with p: the
// offsets, the targets and, where p has weights, p's copy of them.
func (p Program) csrParts() []Layout {
	if p.Weights == NoWeights {
		return []Layout{OutOffsets, OutTargets}
	}
	return []Layout{OutOffsets, OutTargets, p.Weights}
}

// The programs' instances, as kernels/vp_*.cu name them.
var (
	ssspUnit = Program{Name: "sssp_u32u", Weights: NoWeights, shardW: NoWeights, None: 0xff, priority: true}
	ssspU32  = Program{Name: "sssp_u32", Weights: outWeightsU32, shardW: shardWeightsU32, None: 0xff, priority: true}
	ssspF64  = Program{Name: "sssp_f64", Wide: true, Weights: outWeights, shardW: shardWeightsF64, None: 0xff, priority: true}
	sswpUnit = Program{Name: "sswp_k32u", Weights: NoWeights, shardW: NoWeights, None: 0, priority: true}
	sswpK32  = Program{Name: "sswp_k32", Weights: outWeightsKey32, shardW: shardWeightsKey32, None: 0, priority: true}
	sswpK64  = Program{Name: "sswp_k64", Wide: true, Weights: outWeightsKey64, shardW: shardWeightsKey64, None: 0, priority: true}
	CCLabels = Program{Name: "cc", Weights: NoWeights, shardW: NoWeights, None: 0xff}
)

// ---- the device state of a run ----

// vpState mirrors kernels/vertex_program.cuh's VPState.
type vpState struct {
	Threshold  float64
	FarMin     uint64
	Delta      float64
	Top        float64
	Active     uint32
	Done       uint32
	Iteration  uint32
	Worked     uint32
	BlocksDone uint32
	Counter    uint32
	Outliers   [2]uint32
	Examined   uint64
	Walked     uint64
	Rounds     [2]uint32
}

const vpStateBytes = int64(unsafe.Sizeof(vpState{}))

func (s *vpState) words() []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(s)), vpStateBytes/8)
}

// ---- a run of a monotone program ----

// vpRun says what to run: the program, the strategy, how it starts.
type vpRun struct {
	prog     Program
	strategy string
	cfg      vwcConfig // vwc only
	delta    float64   // near-far step in priority units; +Inf: none
	top      float64   // SSWP: the largest weight
	source   uint32
	seed     uint64 // the source's value
	labels   bool   // CC: every vertex starts as its own label, and none has a source
	// both pushes along in-edges too (vwc), uses the symmetric shards, or
	// pulls and activates both ways (warpseg, kites): CC on a directed graph.
	both bool
	// group is the --vertex-group asked for (0: kites chooses), logR the
	// grouping's log2 that runs (prepareVP sets it).
	group int
	logR  uint
}

// vpDevice is a run's device side: its layouts, buffers and kernels,
// taken from the run's enactor (and freed with it).
type vpDevice struct {
	e *enactor
	b *GPU
	s *gpu.Stream
	g *convert.Graph
	r vpRun
	n int64

	values, state *gpu.DeviceBuffer
	// vwc
	offs, targets, weights, inOffs, inSrcs *gpu.DeviceBuffer
	expanded, flags, queue                 *gpu.DeviceBuffer
	groups, queueCap                       int64
	iterate, outliers                      *Kernel
	// shards
	start, windows, src, dest, cwStart, cwSrc, mapper *gpu.DeviceBuffer
	srcValue, dirty                                   *gpu.DeviceBuffer
	N, S                                              int
	shardKernel                                       *gpu.Function
	// warpseg and kites (vp_pull.go): the pull's weights, kites'
	// activation rows and masks; iterate and outliers are the rounds' and
	// the hubs' kernels, queue the hubs' segments.
	inWeights, actOffs, actAdj, actInOffs, actInAdj *gpu.DeviceBuffer
	mask, pending, sent, rounds, stamp, hubMask     *gpu.DeviceBuffer
	actWeights                                      *gpu.DeviceBuffer
	maskWords, firstRounds                          int64
	// last is the state the run ended in.
	last vpState
}

// vpGroup is the vertices a frontier flag covers (GROUP in vp_vwc.cu).
const vpGroup = 32

// vwcQueueCap is the room of the deferred-outlier queue, per parity: at
// most one entry per segment of every vertex of more than threshold edges.
func vwcQueueCap(m, threshold int64) int64 {
	if threshold <= 0 {
		return 1
	}
	return m/threshold + m/outlierSegment + 1
}

// vpBytes is the device memory of a run of prog with strategy on g,
// layouts included (the parent pass of sssp adds its own, sssp.go).
func vpBytes(b *GPU, g *convert.Graph, prog Program, strategy string, both bool, p operators.Params) int64 {
	n, m := int64(g.NumVertices()), g.NumEdges()
	V := prog.ValueBytes()
	sym := Layout(0)
	if both {
		sym = symmetric
	}
	switch strategy {
	case strategyVWC:
		parts := prog.csrParts()
		edges := m
		if both && g.Directed {
			parts = append(parts, InOffsets, InSources)
			edges *= 2
		}
		groups := (n + vpGroup - 1) / vpGroup
		return layoutBytes(g, parts...) + 2*n*V + 2*groups + 2*vwcQueueCap(edges, outlierDegree(p))*8 + vpStateBytes
	case strategyGShards, strategyCW:
		parts := []Layout{shardStart | sym, shardDest | sym}
		if strategy == strategyGShards {
			parts = append(parts, shardWindows|sym, shardSrc|sym)
		} else {
			parts = append(parts, cwStart|sym, cwSrc|sym, cwMapper|sym)
		}
		if prog.shardW != NoWeights {
			parts = append(parts, prog.shardW)
		}
		entries := convert.ShardEntries(g, both)
		S := (shardStart|sym).Bytes(g)/4 - 1
		return layoutBytes(g, parts...) + entries*V + n*V + S*4 + vpStateBytes
	case strategyWarpSeg, strategyKiTES:
		return pullBytes(b, g, prog, strategy, both, groupLog(p.VertexGroup))
	}
	panic("operators: no strategy " + strategy)
}

// prepareVP uploads the layouts the run reads and allocates its buffers,
// on the enactor's stream.
func (e *enactor) prepareVP(r vpRun) (*vpDevice, error) {
	if r.strategy == strategyKiTES {
		r.logR = e.b.kitesGroupLog(e.g, r.prog, r.both, r.group)
	}
	s, err := e.stream()
	if err != nil {
		return nil, err
	}
	d := &vpDevice{e: e, b: e.b, s: s, g: e.g, r: r, n: int64(e.g.NumVertices())}
	switch r.strategy {
	case strategyVWC:
		err = d.prepareVWC()
	case strategyGShards, strategyCW:
		err = d.prepareShards()
	case strategyWarpSeg, strategyKiTES:
		err = d.preparePull()
	default:
		err = fmt.Errorf("gpuop: no strategy %q", r.strategy)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *vpDevice) prepareVWC() error {
	b, g, r := d.b, d.g, d.r
	parts := r.prog.csrParts()
	both := r.both && g.Directed
	if both {
		parts = append(parts, InOffsets, InSources)
	}
	bufs, err := d.e.layouts(parts...)
	if err != nil {
		return err
	}
	d.offs, d.targets = bufs[0], bufs[1]
	if r.prog.Weights != NoWeights {
		d.weights = bufs[2]
	}
	if both {
		d.inOffs, d.inSrcs = bufs[len(bufs)-2], bufs[len(bufs)-1]
	}
	if d.iterate, err = b.Kernel(kernels.VPVWC, fmt.Sprintf("vwc_%s_k%d", r.prog.Name, r.cfg.k)); err != nil {
		return err
	}
	if d.hasOutliers() {
		if d.outliers, err = b.Kernel(kernels.VPVWC, "vwc_"+r.prog.Name+"_outliers"); err != nil {
			return err
		}
	}
	edges := g.NumEdges()
	if both {
		edges *= 2
	}
	d.groups = (d.n + vpGroup - 1) / vpGroup
	d.queueCap = vwcQueueCap(edges, r.cfg.outlierDegree)
	V := r.prog.ValueBytes()
	work, err := d.e.buffers(d.n*V, d.n*V, 2*d.groups, 2*d.queueCap*8, vpStateBytes)
	if err != nil {
		return err
	}
	d.values, d.expanded, d.flags, d.queue, d.state = work[0], work[1], work[2], work[3], work[4]
	return nil
}

// hasOutliers says whether any vertex has more edges than the deferring
// threshold, so that the outlier kernel has work at all.
func (d *vpDevice) hasOutliers() bool {
	t := d.r.cfg.outlierDegree
	if t <= 0 {
		return false
	}
	if d.g.Stats.MaxDegree > t {
		return true
	}
	if !d.r.both || !d.g.Directed {
		return false
	}
	in := d.g.In()
	for v := range uint32(in.NumVertices()) {
		if in.Degree(v) > t {
			return true
		}
	}
	return false
}

func (d *vpDevice) prepareShards() error {
	b, g, r := d.b, d.g, d.r
	sym := Layout(0)
	if r.both {
		sym = symmetric
	}
	parts := []Layout{shardStart | sym, shardDest | sym}
	if r.strategy == strategyGShards {
		parts = append(parts, shardWindows|sym, shardSrc|sym)
	} else {
		parts = append(parts, cwStart|sym, cwSrc|sym, cwMapper|sym)
	}
	if r.prog.shardW != NoWeights {
		parts = append(parts, r.prog.shardW)
	}
	bufs, err := d.e.layouts(parts...)
	if err != nil {
		return err
	}
	d.start, d.dest = bufs[0], bufs[1]
	if r.strategy == strategyGShards {
		d.windows, d.src = bufs[2], bufs[3]
	} else {
		d.cwStart, d.cwSrc, d.mapper = bufs[2], bufs[3], bufs[4]
	}
	if r.prog.shardW != NoWeights {
		d.weights = bufs[len(bufs)-1]
	}
	sh, err := g.Shards(r.both)
	if err != nil {
		return err
	}
	d.N, d.S = sh.N, sh.Count
	prefix := "gs_"
	module := kernels.VPGShards
	if r.strategy == strategyCW {
		prefix, module = "cw_", kernels.VPCW
	}
	k, err := b.Kernel(module, prefix+r.prog.Name)
	if err != nil {
		return err
	}
	d.shardKernel = k.Fn
	V := r.prog.ValueBytes()
	// At least one value of SrcValue, so that a graph without edges has a
	// buffer to fill.
	work, err := d.e.buffers(max(int64(len(sh.SrcIndex)), 1)*V, d.n*V, int64(d.S)*4, vpStateBytes)
	if err != nil {
		return err
	}
	d.srcValue, d.values, d.dirty, d.state = work[0], work[1], work[2], work[3]
	return nil
}

// run runs the program to its fixed point and returns the iterations that
// changed something.
func (d *vpDevice) run(ctx context.Context) (int, error) {
	flags, dirty, err := d.clear()
	if err != nil {
		return 0, err
	}
	if err := d.seed(flags, dirty); err != nil {
		return 0, err
	}
	r := d.r
	st := vpState{Threshold: math.Inf(1), FarMin: math.Float64bits(math.Inf(1)), Delta: r.delta, Top: r.top}
	st.Rounds[0] = uint32(d.firstRounds)
	if r.prog.priority {
		st.Threshold = r.delta
	}
	if err := gpu.Upload(d.s, d.state, st.words()); err != nil {
		return 0, err
	}
	// Iterate in batches of growing length: a launch after the run is done
	// returns at once. The progress hook hears of each batch, as far as
	// the state the host reads says.
	report := operators.ProgressOf(ctx, d.e.res.Op)
	for batch := 1; ; batch = min(2*batch, 64) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		for i := 0; i < batch; i++ {
			if err := d.launchIteration(); err != nil {
				return 0, err
			}
		}
		if err := gpu.Download(d.s, st.words(), d.state); err != nil {
			return 0, err
		}
		if st.Done != 0 {
			d.last = st
			return int(st.Worked), nil
		}
		report(operators.Progress{Iteration: int(st.Iteration), Change: math.NaN(), Active: int64(st.Active)})
		if int64(st.Iteration) > VPMaxIterations(d.n) {
			return 0, fmt.Errorf("operators: %s on the GPU (%s) did not settle in %d iterations (a bug; use --backend cpu)", r.prog.Name, r.strategy, st.Iteration)
		}
	}
}

// clear sets every value none and clears what the layout keeps of what
// must run: the push's flags, the pull's masks, the shards' dirty marks
// (which it returns, the seed's to set).
func (d *vpDevice) clear() (flags, dirty *gpu.DeviceBuffer, err error) {
	s, r := d.s, d.r
	if err := d.values.Memset8(s, r.prog.None); err != nil {
		return nil, nil, err
	}
	switch {
	case r.strategy == strategyVWC:
		if err := d.expanded.Memset8(s, r.prog.None); err != nil {
			return nil, nil, err
		}
		return d.flags, nil, d.flags.Memset8(s, 0)
	case isPull(r.strategy):
		return nil, nil, d.startPull()
	}
	if err := d.srcValue.Memset8(s, r.prog.None); err != nil {
		return nil, nil, err
	}
	// -1: clean until written into; 0: runs at iteration 0.
	fill := byte(0xff)
	if r.labels {
		fill = 0
	}
	return nil, d.dirty, d.dirty.Memset8(s, fill)
}

// seed starts the run: every vertex its own label (CC), or the source's
// value, and marks what runs first in flags or dirty.
func (d *vpDevice) seed(flags, dirty *gpu.DeviceBuffer) error {
	s, r := d.s, d.r
	if r.labels {
		iota, err := d.b.Kernel(kernels.VPCommon, "vp_iota")
		if err != nil {
			return err
		}
		if err := iota.Launch(s, d.values, d.n); err != nil {
			return err
		}
		if flags == nil {
			return nil
		}
		first, _ := flags.Slice(0, d.groups)
		return first.Memset8(s, 1)
	}
	name := "vp_seed32"
	var value any = uint32(r.seed)
	if r.prog.Wide {
		name, value = "vp_seed64", r.seed
	}
	seed, err := d.b.Kernel(kernels.VPCommon, name)
	if err != nil {
		return err
	}
	return gpu.Launch(seed.Fn, gpu.Dim(1), gpu.Dim(1), 0, s, d.values, r.source, value,
		PtrOf(flags), PtrOf(dirty), uint32(max(d.N, 1)))
}

// VPMaxIterations bounds a run, so that a bug cannot hang it: far more
// than the iterations of any run measured (a Bellman-Ford bound of n
// rounds, near-far steps and batches on top).
func VPMaxIterations(n int64) int64 { return 1<<20 + 16*n }

// vwcPushArgs mirrors kernels/vp_vwc.cu's VWCPushArgs, field by field: an
// iteration of the vwc push (vwc_*_k*, vwc_*_outliers).
type vwcPushArgs struct {
	_                       structs.HostLayout
	offs, targets, weights  gpu.DevicePtr
	inOffs, inSrcs          gpu.DevicePtr
	values, expanded, flags gpu.DevicePtr
	queue, st               gpu.DevicePtr
	groups, queueCap, n     int64
	outlierDegree           int64
	chunk                   uint32
}

// launchIteration queues one iteration.
func (d *vpDevice) launchIteration() error {
	r, s := d.r, d.s
	switch r.strategy {
	case strategyWarpSeg, strategyKiTES:
		return d.launchPull()
	case strategyVWC:
		chunk := uint32(0)
		if r.cfg.dynamic {
			chunk = uint32(max(1, r.cfg.chunk/vpGroup))
		}
		a := vwcPushArgs{
			offs: d.offs.Ptr(), targets: d.targets.Ptr(), weights: PtrOf(d.weights), inOffs: PtrOf(d.inOffs), inSrcs: PtrOf(d.inSrcs),
			values: d.values.Ptr(), expanded: d.expanded.Ptr(), flags: d.flags.Ptr(), queue: d.queue.Ptr(), st: d.state.Ptr(),
			groups: d.groups, queueCap: d.queueCap, n: d.n, outlierDegree: r.cfg.outlierDegree, chunk: chunk,
		}
		if err := d.iterate.Launch(s, gpu.Args(&a)); err != nil {
			return err
		}
		if d.outliers != nil {
			return d.outliers.Launch(s, gpu.Args(&a))
		}
		return nil
	}
	a := d.shardArgs()
	return gpu.Launch(d.shardKernel, gpu.Dim(uint32(d.S)), gpu.Dim(BlockSize), d.shardSmem(), s, gpu.Args(&a))
}

// shardArgs mirrors kernels/shards.cuh's ShardArgs, field by field: the
// argument of the G-Shards and Concatenated Windows kernels (gs_*, cw_*)
// and of their parent passes (parent, round, r, source).
type shardArgs struct {
	_                               structs.HostLayout
	start, windows, srcIndex        gpu.DevicePtr
	cwStart, cwSrc, mapper          gpu.DevicePtr
	dest, weights, srcValue, values gpu.DevicePtr
	dirty, st, parent, round        gpu.DevicePtr
	n, N, S, r                      uint32
	source                          uint32
}

// shardArgs is the shards' layouts and the run's buffers as the kernels
// take them: G-Shards' windows, or Concatenated Windows' (the buffers of
// the other are nil).
func (d *vpDevice) shardArgs() shardArgs {
	return shardArgs{
		start: d.start.Ptr(), windows: PtrOf(d.windows), srcIndex: PtrOf(d.src),
		cwStart: PtrOf(d.cwStart), cwSrc: PtrOf(d.cwSrc), mapper: PtrOf(d.mapper),
		dest: d.dest.Ptr(), weights: PtrOf(d.weights), srcValue: PtrOf(d.srcValue), values: d.values.Ptr(),
		dirty: PtrOf(d.dirty), st: PtrOf(d.state),
		n: uint32(d.n), N: uint32(d.N), S: uint32(d.S), source: d.r.source,
	}
}

// shardSmem is a shard block's dynamic shared memory: N values and N flags.
func (d *vpDevice) shardSmem() uint32 {
	return uint32(int64(d.N) * (d.r.prog.ValueBytes() + 1))
}

// describe names what ran, for Result.Strategy.
func (d *vpDevice) describe() string {
	switch d.r.strategy {
	case strategyVWC:
		s := fmt.Sprintf("vwc push k=%d", d.r.cfg.k)
		if d.r.cfg.dynamic {
			s += fmt.Sprintf(" dynamic chunk=%d", max(1, d.r.cfg.chunk/vpGroup)*vpGroup)
		}
		if d.r.cfg.outlierDegree > 0 {
			s += fmt.Sprintf(" defer>%d", d.r.cfg.outlierDegree)
		}
		if d.r.prog.priority && !math.IsInf(d.r.delta, 1) {
			s += fmt.Sprintf(", near-far delta=%.4g", d.r.delta)
		}
		return s
	case strategyGShards:
		return fmt.Sprintf("gshards N=%d shards=%d", d.N, d.S)
	case strategyWarpSeg, strategyKiTES:
		return d.describePull()
	}
	return fmt.Sprintf("cw N=%d shards=%d", d.N, d.S)
}

// download copies the values to the host: V is uint32 or uint64, as the
// program's width.
func download[V uint32 | uint64](d *vpDevice) ([]V, error) {
	out := make([]V, d.n)
	PoisonHost(d.b, out, V(0xdeadbeef))
	if err := d.b.DownloadAll(d.s, HostCopyOf(out, d.values)); err != nil {
		return nil, err
	}
	return out, nil
}

// downloadFloats copies the values to the host as float64, converting each
// from the program's width: from64 for a wide program, from32 otherwise.
func downloadFloats(d *vpDevice, from64 func(uint64) float64, from32 func(uint32) float64) ([]float64, error) {
	out := make([]float64, d.n)
	if d.r.prog.Wide {
		values, err := download[uint64](d)
		if err != nil {
			return nil, err
		}
		for v, x := range values {
			out[v] = from64(x)
		}
		return out, nil
	}
	values, err := download[uint32](d)
	if err != nil {
		return nil, err
	}
	for v, x := range values {
		out[v] = from32(x)
	}
	return out, nil
}

// ---- order keys (kernels/vertex_program.cuh) ----

// Key32 is the order key of w as a float32: unsigned integers ordered as
// the floats are.
func Key32(w float64) uint32 {
	b := math.Float32bits(float32(w))
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
}

func Key64(w float64) uint64 {
	b := math.Float64bits(w)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

func fromKey32(k uint32) float64 {
	if k&(1<<31) != 0 {
		return float64(math.Float32frombits(k &^ (1 << 31)))
	}
	return float64(math.Float32frombits(^k))
}

func fromKey64(k uint64) float64 {
	if k&(1<<63) != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
