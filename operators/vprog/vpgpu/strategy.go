package vpgpu

import (
	"fmt"
	"slices"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators/vprog"
)

// The strategies' host side: the kernels each launches, the buffers each
// reads besides vwc's, an iteration's launches, and auto's choice.

// kernelsOf are the kernels strategy launches.
func kernelsOf(strategy string) []string {
	k := []string{vprog.KernelCheck, vprog.KernelCommit}
	switch strategy {
	case "vwc":
		return append(k, vprog.KernelCompute)
	case "gshards":
		return append(k, vprog.KernelShard)
	case "kites":
		k = append(k, vprog.KernelCount, vprog.KernelScan, vprog.KernelFill)
	}
	return append(k, vprog.KernelInit, vprog.KernelEdges, vprog.KernelUpdate)
}

// sharedBytes is the dynamic shared memory a block may take without
// asking the driver for more.
const sharedBytes = 48 << 10

// skewed is the in-degree, as a multiple of the average, past which auto
// calls a graph's in-degrees skewed (hubs).
const skewed = 32

// choose is auto's strategy for p on g, and why: warpseg for a program
// that sums (atomicAdd: a sweep such as PageRank, NN, HS, CS, where most
// vertices stay active) on a graph whose largest in-degree is many times
// the average (a power law: Kronecker, social graphs), whose hubs vwc
// leaves to one vertex's K lanes while warpseg spreads every in-edge over
// the grid; vwc otherwise. Measured on the H200 (docs/vertex-programs.md):
// NN, HS and CS ran 1.2-2.8x faster with warpseg than with vwc on
// Kronecker 22, PageRank 1.05-1.4x on four of the five skewed social
// graphs (5% slower on wiki-Vote); the traversals (min and max: bfs,
// sssp, sswp, cc) were faster with vwc in 15 of 20 cases there (all
// within 30%), and vwc was fastest on the roads. kites (three more
// launches an iteration for its compaction) and gshards were never the
// fastest, so auto does not pick them.
func choose(p *vprog.Program, g *convert.Graph) (string, string) {
	n := max(g.NumVertices(), 1)
	in := g.In()
	avg := float64(in.NumEdges()) / float64(n)
	var top int64
	for v := 0; v < g.NumVertices(); v++ {
		top = max(top, in.Offsets[v+1]-in.Offsets[v])
	}
	hubs := avg >= 1 && float64(top) > skewed*avg
	switch {
	case hubs && slices.Contains(p.Atomics, vprog.AtomicAdd):
		return "warpseg", fmt.Sprintf("auto: a sum (atomicAdd) over skewed in-degrees (largest %d, average %.1f): every in-edge spread over the warps", top, avg)
	case hubs:
		return "vwc", fmt.Sprintf("auto: min/max reductions (a traversal) over skewed in-degrees (largest %d, average %.1f): K lanes a vertex, the active ones only", top, avg)
	}
	return "vwc", fmt.Sprintf("auto: in-degrees even (largest %d, average %.1f): K lanes a vertex", top, avg)
}

// strategyBuffers uploads what the strategy reads besides vwc's layouts.
func (r *run) strategyBuffers() error {
	var err error
	switch r.st.Strategy {
	case "gshards":
		if r.st.ShardVertices == 0 {
			r.st.ShardVertices = shardVertices(r.prog, r.g)
		}
		r.st.ShardVertices = min(r.st.ShardVertices, sharedBytes/r.prog.ShardBytes())
		fallthrough
	case "warpseg":
		r.inDst, err = r.put(destinations(r.g.In()))
	case "kites":
		err = r.kitesBuffers()
	}
	return err
}

// shardVertices is gshards' window: CuSha's N (32 edges a window on
// average, convert.ShardVertices), at most what a block's shared memory
// holds of the program's vertex records.
func shardVertices(p *vprog.Program, g *convert.Graph) int {
	N := convert.ShardVertices(g.NumVertices(), g.In().NumEdges())
	return max(1, min(N, sharedBytes/p.ShardBytes()))
}

// destinations is each in-edge's destination, in the in-edges' order.
func destinations(in *convert.CSR) []byte {
	n := len(in.Offsets) - 1
	out := make([]byte, 4*in.NumEdges())
	for v := 0; v < n; v++ {
		for e := in.Offsets[v]; e < in.Offsets[v+1]; e++ {
			putUint32(out[4*e:], uint32(v))
		}
	}
	return out
}

func putUint32(b []byte, x uint32) {
	b[0], b[1], b[2], b[3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
}

func (r *run) kitesBuffers() error {
	k := &r.ks
	for _, a := range []struct {
		to    **gpu.DeviceBuffer
		bytes int64
	}{
		{&k.cnt, 4 * vprog.KitesThreads}, {&k.deg, 8 * vprog.KitesThreads},
		{&k.list, 4 * int64(r.n)}, {&k.prefix, 8 * (int64(r.n) + 1)}, {&k.totals, 16},
	} {
		var err error
		if *a.to, err = r.alloc(a.bytes); err != nil {
			return err
		}
	}
	return k.totals.Memset8(r.s, 0)
}

// strategyIteration queues the strategy's kernels of one iteration.
func (r *run) strategyIteration(parity int) error {
	switch r.st.Strategy {
	case "vwc":
		return r.vwcIteration(parity)
	case "gshards":
		return r.shardIteration(parity)
	case "kites":
		if err := r.compact(parity); err != nil {
			return err
		}
	}
	return r.edgeIteration(parity)
}

// edgeIteration is warpseg's and kites' vp_init, vp_edges, vp_update.
func (r *run) edgeIteration(parity int) error {
	act, k := r.act[parity], r.ks
	m := r.g.In().NumEdges()
	vgrid := gpu.Dim(min(gpu.BlocksFor(int(r.n), blockSize), maxBlocks))
	egrid := gpu.Dim(min(gpu.BlocksFor(int(max(m, 1)), blockSize), maxBlocks))
	block := gpu.Dim(blockSize)
	if err := gpu.Launch(r.fns[vprog.KernelInit], vgrid, block, 0, r.s, r.tab, r.state, act, r.chg, r.n, int64(r.n), k.list, k.totals); err != nil {
		return err
	}
	if err := gpu.Launch(r.fns[vprog.KernelEdges], egrid, block, 0, r.s, r.tab, r.state, act, r.inOff, r.inSrc, r.inDst, m, int64(r.n), k.list, k.prefix, k.totals); err != nil {
		return err
	}
	return gpu.Launch(r.fns[vprog.KernelUpdate], vgrid, block, 0, r.s, r.tab, r.state, act, r.chg, r.n, int64(r.n), k.list, k.totals)
}

// compact is KiTES' active list of the iteration.
func (r *run) compact(parity int) error {
	k, act := r.ks, r.act[parity]
	grid, block := gpu.Dim(vprog.KitesThreads/blockSize), gpu.Dim(blockSize)
	if err := gpu.Launch(r.fns[vprog.KernelCount], grid, block, 0, r.s, r.state, act, r.inOff, k.cnt, k.deg, r.n); err != nil {
		return err
	}
	if err := gpu.Launch(r.fns[vprog.KernelScan], gpu.Dim(1), gpu.Dim(vprog.KitesScanThreads), 0, r.s, r.state, k.cnt, k.deg, k.totals); err != nil {
		return err
	}
	return gpu.Launch(r.fns[vprog.KernelFill], grid, block, 0, r.s, r.state, act, r.inOff, k.cnt, k.deg, k.list, k.prefix, k.totals, r.n)
}

// shardIteration is vp_shard: a block a window of N destinations.
func (r *run) shardIteration(parity int) error {
	N := uint32(r.st.ShardVertices)
	grid := gpu.Dim((r.n + N - 1) / N)
	shared := N * uint32(r.prog.ShardBytes())
	return gpu.Launch(r.fns[vprog.KernelShard], grid, gpu.Dim(blockSize), shared, r.s, r.tab, r.state, r.act[parity], r.chg, r.inOff, r.inSrc, r.inDst, r.n, N, int64(r.n))
}

// Need is the device memory a run of p on g takes with strategy (auto,
// or none named: the most a strategy takes).
func Need(p *vprog.Program, g *convert.Graph, strategy string) int64 {
	n, m := int64(g.NumVertices()), g.NumEdges() // as many in-edges as out-edges
	b := 2*8*(n+1) + 2*4*m                       // in- and out-edge offsets, sources, targets
	for _, f := range p.Vertex {
		b += 2 * int64(f.Type.Size()) * n // cur and next
	}
	for _, f := range p.Static {
		b += int64(f.Type.Size()) * n
	}
	for _, f := range p.Edge {
		b += int64(f.Type.Size()) * m
	}
	b += 3*n + 4*vprog.StateWords + 8*int64(p.FieldTable()) // flags, state, table
	dst := 4 * m
	kites := 4*n + 8*(n+1) + 12*vprog.KitesThreads + 16
	switch strategy {
	case "vwc":
	case "warpseg", "gshards":
		b += dst
	case "kites":
		b += kites
	default:
		b += max(dst, kites)
	}
	return b
}
