package gpuop

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/kernels"
)

// The graph built on the GPU (kernels/graph_build.cu; docs/architecture.md,
// "The device build"). The edge columns go to the device, the keys are
// renumbered there in convert's order, every edge becomes a 64-bit entry
// (source id << bits | target id), the entries are radix sorted, merged
// and cut into the CSR (and the CSC by a second sort with the ends
// swapped). The layouts stay on the device, adopted by the layout cache;
// the host gets the keys, the offsets and the statistics, and the rest only
// when something on the host reads it (convert.Graph.Materialize).

// BuildReport says where a graph was built and what the GPU's build cost.
type BuildReport struct {
	// Device is "gpu" for a graph built on the GPU, "cpu" for one built on
	// the host.
	Device string
	// Reason says why the host built a graph the GPU was asked to build.
	Reason string
	// Renumber is how the GPU renumbered the keys: "bitmap" (a presence
	// bitmap over a small key range, ranked by popcounts) or "sort".
	Renumber string
	// Upload is the time the copies of the edge columns to the GPU took;
	// it is part of the build's time. Where they were copied during the
	// read (DuringRead), it is the build's wait for the last copies.
	Upload     time.Duration
	DuringRead bool
	// DeviceBytes is the most GPU memory the build held at once (as
	// estimated before it, and checked against the free memory).
	DeviceBytes int64
}

// maxDeviceEndpoints bounds the tables the GPU builds: its sorts and scans
// count in 32 bits, and a table's endpoints (twice its rows) are the most
// items any of them counts.
const maxDeviceEndpoints = 1<<32 - 2

// Radix sort and scan tiles: RS_TILE and SCAN_TILE in graph_build.cu.
const (
	rsTile   = 256 * 16
	scanTile = 256 * 16
)

// BuildGraph builds t's graph on the GPU, giving exactly what convert.Build
// gives on the host (the same ids, layouts, weights and statistics), with
// the layouts on the device, in the backend's cache for the graph. Where the
// GPU cannot build it (string keys, too little free memory, more than 2^31
// rows, a weight the operator's rule refuses), the host builds it, and the
// report says why. The table may be released once BuildGraph returns.
func (b *GPU) BuildGraph(ctx context.Context, t *edges.Table, opts convert.BuildOptions) (*convert.Graph, BuildReport, error) {
	return b.BuildGraphFrom(ctx, t, opts, nil)
}

// BuildGraphFrom is BuildGraph starting from the columns an upload copied
// while t was read (up may be nil); an upload that missed rows is freed
// and the table uploaded again.
func (b *GPU) BuildGraphFrom(ctx context.Context, t *edges.Table, opts convert.BuildOptions, up *ColumnUpload) (*convert.Graph, BuildReport, error) {
	if why := b.deviceBuildRefusal(t, opts); why != "" {
		if up != nil {
			up.Release()
		}
		return hostBuild(ctx, t, opts, why)
	}
	d := &devBuild{b: b, t: t, opts: opts, m: t.NumEdges(), owned: map[*gpu.DeviceBuffer]bool{}, rep: BuildReport{Device: "gpu"}}
	d.suffix, d.keySize = keyKernel(t.KeyType)
	if up != nil {
		// Before the lock: the upload holds it until its last copy.
		cols, waited, ok := up.take(b, t, opts.Weighted)
		if ok {
			d.uploaded, d.rep.Upload, d.rep.DuringRead = &cols, waited, true
		}
	}
	b.buildMu.Lock()
	g, err := d.run(ctx)
	d.release()
	b.buildMu.Unlock()
	var fallback *hostFallback
	if errors.As(err, &fallback) {
		return hostBuild(ctx, t, opts, fallback.reason)
	}
	if err != nil {
		return nil, BuildReport{}, err
	}
	return g, d.rep, nil
}

// hostBuild is convert.Build, reported as the host's for the reason why.
func hostBuild(ctx context.Context, t *edges.Table, opts convert.BuildOptions, why string) (*convert.Graph, BuildReport, error) {
	g, err := convert.Build(ctx, t, opts)
	return g, BuildReport{Device: "cpu", Reason: why}, err
}

// hostFallback ends a GPU build that the host must do instead.
type hostFallback struct{ reason string }

func (h *hostFallback) Error() string { return h.reason }

// deviceBuildRefusal says why the GPU will not try to build t, or "".
func (b *GPU) deviceBuildRefusal(t *edges.Table, opts convert.BuildOptions) string {
	if t.KeyType == edges.KeyString {
		return "string keys are renumbered on the host"
	}
	if opts.Weighted && !t.HasWeight {
		return "the input has no weight column" // convert.Build says so
	}
	m := t.NumEdges()
	if 2*m > maxDeviceEndpoints {
		return fmt.Sprintf("%d rows are more than the GPU build's %d", m, int64(maxDeviceEndpoints/2))
	}
	_, keySize := keyKernel(t.KeyType)
	need := buildBytes(m, keySize, opts.Weighted, opts.Undirected, opts.BuildIn, 0, 0)
	return b.memoryRefusal(need)
}

// memoryRefusal says why need bytes do not fit the GPU's free memory (with
// the layout cache's margin), or "".
func (b *GPU) memoryRefusal(need int64) string {
	free, _, err := b.ctx.MemInfo()
	if err != nil {
		return fmt.Sprintf("the GPU's free memory is unknown (%v)", err)
	}
	if want := need + need/50 + 64<<20; want > free {
		return fmt.Sprintf("the GPU build needs %s of GPU memory and %s has %s free", bytesize.Format(want), b.Device().Name, bytesize.Format(free))
	}
	return ""
}

// keyKernel is the suffix of the kernels for keys of type kt, and the
// keys' size in bytes.
func keyKernel(kt edges.KeyType) (string, int64) {
	switch kt {
	case edges.KeyInt32:
		return "i32", 4
	case edges.KeyInt64:
		return "i64", 8
	case edges.KeyUint32:
		return "u32", 4
	}
	return "u64", 8
}

// buildBytes is the most GPU memory the build of m rows holds at once, in
// the order of devBuild.run's phases, with table bytes for the renumbering
// and n vertices (0 for a lower bound before they are known).
func buildBytes(m, keySize int64, weighted, undirected, in bool, table, n int64) int64 {
	w := int64(0)
	if weighted {
		w = 1
	}
	e := m
	if undirected {
		e = 2 * m
	}
	counts := func(c int64) int64 { return 2 * (c/rsTile + 2) * 256 * 4 } // the sort's tile counts and their scan
	cols := 2*m*keySize + 8*m*w
	phases := []int64{
		cols + table + 8*e + 8*e*w,                 // the entries
		16*e + 16*e*w + counts(e),                  // their sort
		24*e + 16*e*w + 8*(n+1) + 16,               // the merge
		12*e + 8*e*w + 8*(n+1) + 8*((n+63)/64+1)*2, // the CSR and the degree statistics
	}
	if in && !undirected {
		phases = append(phases, 20*e+24*e*w+16*(n+1)+counts(e)) // the CSC's sort
	}
	most := int64(0)
	for _, p := range phases {
		most = max(most, p)
	}
	return most
}

// renumberBytes is the GPU memory the renumbering holds at once, with m
// rows of keySize bytes and n vertices: through the bitmap, nw words; by
// sorting, the endpoints twice over, then their distinct values.
func renumberBytes(m, keySize int64, weighted bool, nw, n int64, bitmap bool) int64 {
	cols := 2 * m * keySize
	if weighted {
		cols += 8 * m
	}
	if bitmap {
		return cols + 8*nw + 4*(nw+1) + 8*n + scanTile
	}
	return cols + max(32*m+2*(2*m/rsTile+2)*256*4, 16*m+8*m+4+8*n)
}

// devBuild is one build on the GPU.
type devBuild struct {
	b       *GPU
	s       *gpu.Stream
	t       *edges.Table
	opts    convert.BuildOptions
	m       int64  // rows
	suffix  string // of the key type's kernels
	keySize int64
	// owned are the device buffers the build allocated and has not freed
	// or handed to the layout cache.
	owned map[*gpu.DeviceBuffer]bool
	rep   BuildReport
	// uploaded are the columns an upload copied during the read, if they
	// are the whole table's.
	uploaded *columns
}

// Where run keeps its counters, in the scalars buffer (uint64 each).
const (
	scalarLo = iota
	scalarHi
	scalarBadWeight
	scalarSelfLoops
	scalarStats // 66: the degree histogram, the largest degree, the isolated vertices
	scalarCount = scalarStats + 66
)

func (d *devBuild) run(ctx context.Context) (*convert.Graph, error) {
	var err error
	if d.s, err = d.b.ctx.NewStream(); err != nil {
		return nil, err
	}
	defer d.s.Destroy()
	scalars, err := d.alloc(scalarCount * 8)
	if err != nil {
		return nil, err
	}
	if err := scalars.Memset8(d.s, 0); err != nil {
		return nil, err
	}
	cols, err := d.upload(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.checkWeights(cols.w, scalars); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The keys' range, and the renumbering it allows.
	lo, hi := uint64(0), uint64(0)
	if d.m > 0 {
		if lo, hi, err = d.keyRange(cols, scalars); err != nil {
			return nil, err
		}
	}
	rn, keys, err := d.renumbered(ctx, cols, lo, hi)
	if err != nil {
		return nil, err
	}
	return d.layout(ctx, cols, rn, keys, lo, scalars)
}

// renumbered renumbers the keys of the columns in [lo, hi] and downloads
// them, then checks the rest of the build fits on the GPU (else the host
// builds: hostFallback).
func (d *devBuild) renumbered(ctx context.Context, cols columns, lo, hi uint64) (renumbering, *convert.VertexKeys, error) {
	rn, err := d.renumber(ctx, cols, lo, hi)
	if err != nil {
		return rn, nil, err
	}
	keys, err := d.downloadKeys(rn.keys, rn.n, lo)
	if err != nil {
		return rn, nil, err
	}
	if rn.keys != rn.distinct {
		d.free(rn.keys)
	}
	if err := ctx.Err(); err != nil {
		return rn, nil, err
	}
	d.rep.DeviceBytes = buildBytes(d.m, d.keySize, d.opts.Weighted, d.opts.Undirected, d.opts.BuildIn, rn.tableBytes(), rn.n)
	if why := d.b.memoryRefusal(d.rep.DeviceBytes - d.bytesHeld()); why != "" {
		return rn, nil, &hostFallback{why}
	}
	return rn, keys, nil
}

// layout sorts and merges the renumbered entries into the CSR (and the
// CSC where asked), and makes the graph.
func (d *devBuild) layout(ctx context.Context, cols columns, rn renumbering, keys *convert.VertexKeys, lo uint64, scalars *gpu.DeviceBuffer) (*convert.Graph, error) {
	idBits := max(bits.Len64(uint64(max(rn.n, 1)-1)), 1)
	ent, self, err := d.entries(cols, rn, lo, idBits, scalars)
	if err != nil {
		return nil, err
	}
	d.free(cols.src, cols.dst, cols.w, rn.words, rn.rank, rn.distinct)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, merged, err := d.csr(ent, rn.n, idBits, self)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in *deviceCSR
	if d.opts.BuildIn && !d.opts.Undirected {
		if in, err = d.csc(out, merged, rn.n, idBits); err != nil {
			return nil, err
		}
	}
	d.free(merged)
	deg, err := d.degreeStats(out, in, rn.n, scalars)
	if err != nil {
		return nil, err
	}
	return d.graph(keys, rn.n, self, out, in, deg)
}

// alloc allocates device memory the build owns (poisoned when the backend
// poisons); running out of memory sends the build to the host.
func (d *devBuild) alloc(bytes int64) (*gpu.DeviceBuffer, error) {
	buf, err := d.b.ctx.Alloc(max(bytes, 8))
	if err != nil {
		if gpu.IsCode(err, gpu.CodeOutOfMemory) {
			return nil, &hostFallback{fmt.Sprintf("the GPU ran out of memory during the build (%v)", err)}
		}
		return nil, err
	}
	d.owned[buf] = true
	if err := d.b.PoisonBuffers(d.s, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// free frees those of bufs the build owns (nil ones are skipped).
func (d *devBuild) free(bufs ...*gpu.DeviceBuffer) {
	for _, buf := range bufs {
		if buf != nil && d.owned[buf] {
			delete(d.owned, buf)
			buf.Free()
		}
	}
}

// release frees everything the build still owns.
func (d *devBuild) release() {
	for buf := range d.owned {
		buf.Free()
	}
	clear(d.owned)
}

// bytesHeld is the device memory the build holds now.
func (d *devBuild) bytesHeld() int64 {
	var n int64
	for buf := range d.owned {
		n += buf.Size()
	}
	return n
}

// launch queues a grid-stride kernel over items.
func (d *devBuild) launch(name string, items int64, args ...any) error {
	k, err := d.b.Kernel(kernels.GraphBuild, name)
	if err != nil {
		return err
	}
	return k.LaunchFor(d.s, items, BlockSize, args...)
}

// launchTiles queues a kernel with a block per tile.
func (d *devBuild) launchTiles(name string, tiles int64, args ...any) error {
	k, err := d.b.Kernel(kernels.GraphBuild, name)
	if err != nil {
		return err
	}
	if tiles < 1 || tiles > 1<<31-1 {
		return fmt.Errorf("operators: %s over %d tiles", name, tiles)
	}
	return gpu.Launch(k.Fn, gpu.Dim(uint32(tiles)), gpu.Dim(BlockSize), 0, d.s, args...)
}

// readU64s waits for the stream and reads n uint64 from buf at element i.
func (d *devBuild) readU64s(buf *gpu.DeviceBuffer, i, n int64) ([]uint64, error) {
	view, err := buf.Slice(i*8, n*8)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, n)
	if err := gpu.Download(d.s, out, view); err != nil { // Go memory: synchronous
		return nil, err
	}
	return out, nil
}

// readU32 waits for the stream and reads the uint32 at element i of buf.
func (d *devBuild) readU32(buf *gpu.DeviceBuffer, i int64) (uint32, error) {
	return readU32(d.s, buf, i)
}

// readU32 waits for s and reads the uint32 at element i of buf.
func readU32(s *gpu.Stream, buf *gpu.DeviceBuffer, i int64) (uint32, error) {
	view, err := buf.Slice(i*4, 4)
	if err != nil {
		return 0, err
	}
	out := make([]uint32, 1)
	if err := gpu.Download(s, out, view); err != nil {
		return 0, err
	}
	return out[0], nil
}

// setU64s sets n uint64 of buf from element i to v (all ones or zero).
func setU64s(s *gpu.Stream, buf *gpu.DeviceBuffer, i, n int64, v byte) error {
	view, err := buf.Slice(i*8, n*8)
	if err != nil {
		return err
	}
	return view.Memset8(s, v)
}

// graph assembles the graph: the offsets downloaded into the build's
// allocator, the layouts handed to the backend's cache.
func (d *devBuild) graph(keys *convert.VertexKeys, n, self int64, out, in *deviceCSR, deg convert.DegreeStats) (*convert.Graph, error) {
	a := d.opts.Alloc
	download := func(c *deviceCSR) ([]int64, error) {
		off := alloc.Slice[int64](a, int(n+1))
		PoisonHost(d.b, off, -1)
		if err := gpu.Download(d.s, off, c.offsets); err != nil {
			alloc.Free(a, off)
			return nil, err
		}
		return off, nil
	}
	outOffs, err := download(out)
	if err != nil {
		return nil, err
	}
	var inOffs []int64
	if in != nil {
		if inOffs, err = download(in); err != nil {
			alloc.Free(a, outOffs)
			return nil, err
		}
	}
	if err := d.s.Synchronize(); err != nil {
		alloc.Free(a, outOffs)
		alloc.Free(a, inOffs)
		return nil, err
	}
	remote := &deviceEdges{ctx: d.b.ctx, outTargets: out.targets, outWeights: out.weights}
	parts := map[Layout]*gpu.DeviceBuffer{OutOffsets: out.offsets, OutTargets: out.targets}
	if out.weights != nil {
		parts[outWeights] = out.weights
	}
	if in != nil {
		remote.inSources, remote.inWeights = in.targets, in.weights
		parts[InOffsets], parts[InSources] = in.offsets, in.targets
		if in.weights != nil {
			parts[inWeights] = in.weights
		}
	}
	g := convert.NewRemote(convert.RemoteParts{
		Keys: keys, OutOffsets: outOffs, InOffsets: inOffs,
		Directed: !d.opts.Undirected, Weighted: d.opts.Weighted,
		Stats: convert.Stats{
			InputEdges: d.m, SelfLoops: self, Merged: out.merged, MaxDegree: deg.Max,
			Skipped: edges.Skips{},
		},
		Degrees: deg, Alloc: a, Remote: remote,
	})
	for _, buf := range parts {
		delete(d.owned, buf)
	}
	if keys := d.uploadKeys(g); keys != nil {
		parts[vertexKeys] = keys
	}
	d.b.adopt(g, parts)
	return g, nil
}

// uploadKeys copies g's integer keys to the device beside the layouts the
// build leaves there, for the results that map ids to keys on the device
// (columns.go), so that a query copies nothing. Where that fails (too
// little memory) it returns nil: a query copies them then, or maps its ids
// on the host.
func (d *devBuild) uploadKeys(g *convert.Graph) *gpu.DeviceBuffer {
	keys := integerKeys(g)
	if len(keys) == 0 {
		return nil
	}
	buf, err := d.b.ctx.Alloc(int64(len(keys)))
	if err != nil {
		return nil
	}
	if err := buf.CopyFromHost(d.s, keys); err != nil {
		buf.Free()
		return nil
	}
	if err := d.s.Synchronize(); err != nil {
		buf.Free()
		return nil
	}
	return buf
}

// adopt puts layouts built on the device into g's entry of the cache.
func (b *GPU) adopt(g *convert.Graph, parts map[Layout]*gpu.DeviceBuffer) {
	dg := b.deviceGraph(g)
	dg.mu.Lock()
	defer dg.mu.Unlock()
	for part, buf := range parts {
		if old := dg.parts[part]; old != nil {
			dg.bytes -= old.Size()
			old.Free()
		}
		dg.parts[part] = buf
		dg.bytes += buf.Size()
	}
}

// deviceEdges serves a device-built graph's edge arrays to the host
// (convert.Remote), from the buffers the layout cache holds: after
// Backend.Release they are gone, and Fetch fails.
type deviceEdges struct {
	ctx                    *gpu.Context
	outTargets, outWeights *gpu.DeviceBuffer
	inSources, inWeights   *gpu.DeviceBuffer
}

func (e *deviceEdges) Fetch(out, in *convert.CSR) error {
	s, err := e.ctx.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()
	type copyTo struct {
		dst []byte
		src *gpu.DeviceBuffer
	}
	copies := []copyTo{{alloc.Bytes(out.Targets), e.outTargets}, {alloc.Bytes(out.Weights), e.outWeights}}
	if in != nil {
		copies = append(copies, copyTo{alloc.Bytes(in.Targets), e.inSources}, copyTo{alloc.Bytes(in.Weights), e.inWeights})
	}
	for _, c := range copies {
		if len(c.dst) == 0 {
			continue
		}
		if c.src == nil {
			return errors.New("operators: the GPU build kept no copy of an edge array the host asked for")
		}
		if err := c.src.CopyToHost(s, c.dst); err != nil {
			return err
		}
	}
	return s.Synchronize()
}

// PrepareBuild loads the build's kernels and pins its staging ring, so
// that a build soon after finds them ready: gpipe.Load calls it while it
// reads the table. An error here is the build's to report (it tries
// again), so it is only returned.
func (b *GPU) PrepareBuild() error {
	b.buildMu.Lock()
	_, err := b.stager()
	b.buildMu.Unlock()
	if err != nil {
		return err
	}
	_, err = b.Kernel(kernels.GraphBuild, "gb_popc") // the whole module, JIT-compiled
	return err
}

// stager is the backend's pinned staging ring, made on first use; the
// caller holds buildMu.
func (b *GPU) stager() (*stager, error) {
	if b.stage == nil {
		st, err := newStager(b.ctx, stageSlots, stageSlotBytes)
		if err != nil {
			return nil, err
		}
		b.stage = st
	}
	return b.stage, nil
}
