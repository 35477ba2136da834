package operators

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
	"github.com/gpipe/gpipe/internal/par"
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
		cols, waited, ok := up.take(t, opts.Weighted)
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

// columns are the edge columns on the device.
type columns struct{ src, dst, w *gpu.DeviceBuffer }

func (d *devBuild) run(ctx context.Context) (*convert.Graph, error) {
	b := d.b
	var err error
	if d.s, err = b.ctx.NewStream(); err != nil {
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
	rn, err := d.renumber(ctx, cols, lo, hi)
	if err != nil {
		return nil, err
	}
	keys, err := d.downloadKeys(rn.keys, rn.n, lo)
	if err != nil {
		return nil, err
	}
	if rn.keys != rn.distinct {
		d.free(rn.keys)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.rep.DeviceBytes = buildBytes(d.m, d.keySize, d.opts.Weighted, d.opts.Undirected, d.opts.BuildIn, rn.tableBytes(), rn.n)
	if why := b.memoryRefusal(d.rep.DeviceBytes - d.bytesHeld()); why != "" {
		return nil, &hostFallback{why}
	}

	// The entries, sorted and merged into the CSR.
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
	if err := d.b.poison(d.s, buf); err != nil {
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
	k, err := d.b.kernel(kernels.GraphBuild, name)
	if err != nil {
		return err
	}
	return k.launchFor(d.s, items, blockSize, args...)
}

// launchTiles queues a kernel with a block per tile.
func (d *devBuild) launchTiles(name string, tiles int64, args ...any) error {
	k, err := d.b.kernel(kernels.GraphBuild, name)
	if err != nil {
		return err
	}
	if tiles < 1 || tiles > 1<<31-1 {
		return fmt.Errorf("operators: %s over %d tiles", name, tiles)
	}
	return gpu.Launch(k.fn, gpu.Dim(uint32(tiles)), gpu.Dim(blockSize), 0, d.s, args...)
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
	view, err := buf.Slice(i*4, 4)
	if err != nil {
		return 0, err
	}
	out := make([]uint32, 1)
	if err := gpu.Download(d.s, out, view); err != nil {
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

// upload copies the edge columns to the device, chunk by chunk, through the
// backend's stager.
func (d *devBuild) upload(ctx context.Context) (columns, error) {
	if c := d.uploaded; c != nil {
		for _, buf := range []*gpu.DeviceBuffer{c.src, c.dst, c.w} {
			if buf != nil {
				d.owned[buf] = true
			}
		}
		return *c, nil
	}
	start := time.Now()
	var c columns
	var err error
	if c.src, err = d.alloc(d.m * d.keySize); err != nil {
		return c, err
	}
	if c.dst, err = d.alloc(d.m * d.keySize); err != nil {
		return c, err
	}
	if d.opts.Weighted {
		if c.w, err = d.alloc(d.m * 8); err != nil {
			return c, err
		}
	}
	st, err := d.b.stager()
	if err != nil {
		return c, err
	}
	var row int64
	for i := range d.t.Chunks {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		ch := &d.t.Chunks[i]
		n := int64(ch.Len())
		if err := st.copy(d.s, c.src, row*d.keySize, keyBytes(&ch.Src)); err != nil {
			return c, err
		}
		if err := st.copy(d.s, c.dst, row*d.keySize, keyBytes(&ch.Dst)); err != nil {
			return c, err
		}
		if c.w != nil {
			if int64(len(ch.Weight)) != n {
				return c, fmt.Errorf("operators: chunk %d has %d weights for %d edges", i, len(ch.Weight), n)
			}
			if err := st.copy(d.s, c.w, row*8, alloc.Bytes(ch.Weight)); err != nil {
				return c, err
			}
		}
		row += n
	}
	if err := d.s.Synchronize(); err != nil {
		return c, err
	}
	d.rep.Upload = time.Since(start)
	return c, nil
}

// keyBytes is a chunk's integer key column as bytes.
func keyBytes(k *edges.Keys) []byte {
	switch {
	case k.Int32 != nil:
		return alloc.Bytes(k.Int32)
	case k.Int64 != nil:
		return alloc.Bytes(k.Int64)
	case k.Uint32 != nil:
		return alloc.Bytes(k.Uint32)
	case k.Uint64 != nil:
		return alloc.Bytes(k.Uint64)
	}
	return nil
}

// checkWeights sends the build to the host when a weight breaks the rule:
// there it fails naming the row, or with SkipInvalid drops and counts the
// rows, as a host build does.
func (d *devBuild) checkWeights(w, scalars *gpu.DeviceBuffer) error {
	if w == nil || d.m == 0 {
		return nil
	}
	if err := setU64s(d.s, scalars, scalarBadWeight, 1, 0xff); err != nil {
		return err
	}
	nonneg := int32(0)
	if d.opts.Weights == convert.NonNegativeWeights {
		nonneg = 1
	}
	if err := d.launch("gb_bad_weight", d.m, w, uint64(d.m), nonneg, gpu.DevicePtr(scalars.Ptr()+scalarBadWeight*8)); err != nil {
		return err
	}
	first, err := d.readU64s(scalars, scalarBadWeight, 1)
	if err != nil {
		return err
	}
	if first[0] == ^uint64(0) {
		return nil
	}
	if d.opts.SkipInvalid {
		return &hostFallback{"rows with weights the operator refuses are dropped on the host"}
	}
	return &hostFallback{fmt.Sprintf("edge %d has a weight the operator refuses; the host build reports it", first[0])}
}

// keyRange is the smallest and largest key ordinal of both columns.
func (d *devBuild) keyRange(c columns, scalars *gpu.DeviceBuffer) (lo, hi uint64, err error) {
	if err := setU64s(d.s, scalars, scalarLo, 1, 0xff); err != nil {
		return 0, 0, err
	}
	if err := setU64s(d.s, scalars, scalarHi, 1, 0); err != nil {
		return 0, 0, err
	}
	if err := d.launch("gb_range_"+d.suffix, d.m, c.src, c.dst, uint64(d.m), scalars); err != nil {
		return 0, 0, err
	}
	r, err := d.readU64s(scalars, scalarLo, 2)
	if err != nil {
		return 0, 0, err
	}
	if r[0] > r[1] {
		return 0, 0, fmt.Errorf("operators: GPU key range [%#x, %#x] of %d edges is empty", r[0], r[1], d.m)
	}
	return r[0], r[1], nil
}

// renumbering is the renumbered keys: n vertices, keys[id] their
// ordinals less lo, and the table the entries look ids up in (a ranked
// bitmap, or the distinct ordinals).
type renumbering struct {
	n           int64
	keys        *gpu.DeviceBuffer
	words, rank *gpu.DeviceBuffer // the bitmap path's
	distinct    *gpu.DeviceBuffer // the sort path's
}

func (r *renumbering) tableBytes() int64 {
	var n int64
	for _, b := range []*gpu.DeviceBuffer{r.words, r.rank, r.distinct} {
		if b != nil {
			n += b.Size()
		}
	}
	return n
}

// renumber gives every key its rank among the distinct keys: through a
// presence bitmap where the keys' range is within convert.DirectLimit, as
// the host does, else by sorting the endpoints.
func (d *devBuild) renumber(ctx context.Context, c columns, lo, hi uint64) (renumbering, error) {
	var r renumbering
	if d.m == 0 {
		var err error
		r.keys, err = d.alloc(0)
		d.rep.Renumber = "bitmap"
		return r, err
	}
	if hi-lo < convert.DirectLimit(2*d.m) {
		d.rep.Renumber = "bitmap"
		return d.renumberBitmap(c, lo, hi)
	}
	d.rep.Renumber = "sort"
	return d.renumberSorted(ctx, c, lo, hi)
}

func (d *devBuild) renumberBitmap(c columns, lo, hi uint64) (renumbering, error) {
	var r renumbering
	nw := int64((hi-lo)/64 + 1)
	if why := d.b.memoryRefusal(renumberBytes(d.m, d.keySize, d.opts.Weighted, nw, 2*d.m, true) - d.bytesHeld()); why != "" {
		return r, &hostFallback{why}
	}
	var err error
	if r.words, err = d.alloc(nw * 8); err != nil {
		return r, err
	}
	if err := r.words.Memset8(d.s, 0); err != nil {
		return r, err
	}
	if err := d.launch("gb_mark_"+d.suffix, d.m, c.src, c.dst, uint64(d.m), lo, r.words); err != nil {
		return r, err
	}
	if r.rank, err = d.alloc((nw + 1) * 4); err != nil {
		return r, err
	}
	if err := r.rank.Memset32(d.s, 0); err != nil {
		return r, err
	}
	if err := d.launch("gb_popc", nw, r.words, uint64(nw), r.rank); err != nil {
		return r, err
	}
	if err := d.scan(r.rank, nw+1); err != nil {
		return r, err
	}
	n, err := d.readU32(r.rank, nw)
	if err != nil {
		return r, err
	}
	r.n = int64(n)
	if r.keys, err = d.alloc(r.n * 8); err != nil {
		return r, err
	}
	return r, d.launch("gb_bits_to_keys", nw, r.words, r.rank, uint64(nw), r.keys)
}

func (d *devBuild) renumberSorted(ctx context.Context, c columns, lo, hi uint64) (renumbering, error) {
	var r renumbering
	ends := 2 * d.m
	if why := d.b.memoryRefusal(renumberBytes(d.m, d.keySize, d.opts.Weighted, 0, ends, false) - d.bytesHeld()); why != "" {
		return r, &hostFallback{why}
	}
	a, err := d.alloc(ends * 8)
	if err != nil {
		return r, err
	}
	if err := d.launch("gb_endpoints_"+d.suffix, d.m, c.src, c.dst, uint64(d.m), lo, a); err != nil {
		return r, err
	}
	scratch, err := d.alloc(ends * 8)
	if err != nil {
		return r, err
	}
	sorted, _, err := d.radixSort(a, scratch, nil, nil, ends, bits.Len64(hi-lo))
	if err != nil {
		return r, err
	}
	d.free(otherOf(sorted, a, scratch))
	if err := ctx.Err(); err != nil {
		return r, err
	}
	flags, err := d.runStarts(sorted, ends)
	if err != nil {
		return r, err
	}
	n, err := d.readU32(flags, ends)
	if err != nil {
		return r, err
	}
	r.n = int64(n)
	if r.distinct, err = d.alloc(r.n * 8); err != nil {
		return r, err
	}
	if err := d.launch("gb_compact", ends, sorted, flags, uint64(ends), r.distinct); err != nil {
		return r, err
	}
	d.free(sorted, flags)
	r.keys = r.distinct // the keys in id order are the distinct ordinals
	return r, nil
}

// otherOf is whichever of a and b is not x.
func otherOf(x, a, b *gpu.DeviceBuffer) *gpu.DeviceBuffer {
	if x == a {
		return b
	}
	return a
}

// runStarts flags the starts of runs of equal values among the count
// sorted values at keys and scans the flags: flags[i] is then the number of
// runs before i, and flags[count] the number of runs.
func (d *devBuild) runStarts(keys *gpu.DeviceBuffer, count int64) (*gpu.DeviceBuffer, error) {
	flags, err := d.alloc((count + 1) * 4)
	if err != nil {
		return nil, err
	}
	if err := d.launch("gb_heads", count, keys, uint64(count), flags); err != nil {
		return nil, err
	}
	return flags, d.scan(flags, count+1)
}

// downloadKeys is the vertex keys, from their ordinals less lo on the
// device.
func (d *devBuild) downloadKeys(ords *gpu.DeviceBuffer, n int64, lo uint64) (*convert.VertexKeys, error) {
	k := &convert.VertexKeys{Type: d.t.KeyType, ArrowType: convert.KeyArrowType(d.t)}
	if n == 0 {
		return k, nil
	}
	host := make([]uint64, n)
	if err := gpu.Download(d.s, host, ords); err != nil {
		return nil, err
	}
	switch d.t.KeyType {
	case edges.KeyInt32:
		k.Int32 = fromOrds(host, lo, func(o uint64) int32 { return int32(int64(o ^ 1<<63)) })
	case edges.KeyInt64:
		k.Int64 = fromOrds(host, lo, func(o uint64) int64 { return int64(o ^ 1<<63) })
	case edges.KeyUint32:
		k.Uint32 = fromOrds(host, lo, func(o uint64) uint32 { return uint32(o) })
	default:
		k.Uint64 = fromOrds(host, lo, func(o uint64) uint64 { return o })
	}
	return k, nil
}

// fromOrds maps ordinals less lo back to keys, on all cores.
func fromOrds[T any](ords []uint64, lo uint64, key func(uint64) T) []T {
	out := make([]T, len(ords))
	par.For(len(ords), 1<<16, func(a, z int) {
		for i := a; i < z; i++ {
			out[i] = key(ords[i] + lo)
		}
	})
	return out
}

// entryBuffers are the edge entries (2^bits-wide ends) and their weights.
type entryBuffers struct {
	count      int64 // entries, sentinels included
	keys, vals *gpu.DeviceBuffer
}

// entries makes every edge an entry (both directions for an undirected
// graph), self loops the sentinel; it returns them and the self loops.
func (d *devBuild) entries(c columns, rn renumbering, lo uint64, idBits int, scalars *gpu.DeviceBuffer) (entryBuffers, int64, error) {
	e := entryBuffers{count: d.m}
	if d.opts.Undirected {
		e.count *= 2
	}
	var err error
	if e.keys, err = d.alloc(e.count * 8); err != nil {
		return e, 0, err
	}
	vals := gpu.DevicePtr(0)
	if d.opts.Weighted {
		if e.vals, err = d.alloc(e.count * 8); err != nil {
			return e, 0, err
		}
		vals = e.vals.Ptr()
	}
	if d.m == 0 {
		return e, 0, nil
	}
	w := gpu.DevicePtr(0)
	if c.w != nil {
		w = c.w.Ptr()
	}
	undirected := int32(0)
	if d.opts.Undirected {
		undirected = 1
	}
	self := gpu.DevicePtr(scalars.Ptr() + scalarSelfLoops*8)
	if rn.words != nil {
		err = d.launch("gb_entries_bitmap_"+d.suffix, d.m, c.src, c.dst, w, uint64(d.m), lo, rn.words, rn.rank,
			uint32(idBits), undirected, e.keys, vals, self)
	} else {
		err = d.launch("gb_entries_sorted_"+d.suffix, d.m, c.src, c.dst, w, uint64(d.m), lo, rn.distinct, uint64(rn.n),
			uint32(idBits), undirected, e.keys, vals, self)
	}
	if err != nil {
		return e, 0, err
	}
	loops, err := d.readU64s(scalars, scalarSelfLoops, 1)
	if err != nil {
		return e, 0, err
	}
	return e, int64(loops[0]), nil
}

// deviceCSR is a layout on the device.
type deviceCSR struct {
	offsets, targets, weights *gpu.DeviceBuffer
	edges                     int64
	merged                    int64 // entries merged into another
}

// csr sorts the entries, merges equal ones (the minimum weight kept) and
// cuts them into the out-edge layout. It also returns the merged entries
// (for the in-edge layout), which the caller frees.
func (d *devBuild) csr(e entryBuffers, n int64, idBits int, self int64) (*deviceCSR, *gpu.DeviceBuffer, error) {
	scratch, err := d.alloc(e.count * 8)
	if err != nil {
		return nil, nil, err
	}
	var vscratch *gpu.DeviceBuffer
	if e.vals != nil {
		if vscratch, err = d.alloc(e.count * 8); err != nil {
			return nil, nil, err
		}
	}
	keys, vals, err := d.radixSort(e.keys, scratch, e.vals, vscratch, e.count, 2*idBits)
	if err != nil {
		return nil, nil, err
	}
	merged := otherOf(keys, e.keys, scratch)
	if vals != nil {
		d.free(otherOf(vals, e.vals, vscratch))
	}
	valid := e.count - self
	if d.opts.Undirected {
		valid -= self
	}
	flags, err := d.runStarts(keys, valid)
	if err != nil {
		return nil, nil, err
	}
	k32, err := d.readU32(flags, valid)
	if err != nil {
		return nil, nil, err
	}
	k := int64(k32)
	c := &deviceCSR{edges: k, merged: valid - k}
	if c.targets, err = d.alloc(k * 4); err != nil {
		return nil, nil, err
	}
	mask := uint64(1)<<idBits - 1
	if err := d.launch("gb_merge", valid, keys, flags, uint64(valid), mask, merged, c.targets); err != nil {
		return nil, nil, err
	}
	if vals != nil {
		if c.weights, err = d.alloc(k * 8); err != nil {
			return nil, nil, err
		}
		if err := c.weights.Memset8(d.s, 0xff); err != nil {
			return nil, nil, err
		}
		if err := d.launch("gb_merge_weights", valid, vals, flags, uint64(valid), c.weights); err != nil {
			return nil, nil, err
		}
		if err := d.launch("gb_weights_from_keys", k, c.weights, uint64(k)); err != nil {
			return nil, nil, err
		}
	}
	d.free(keys, vals, flags)
	if c.offsets, err = d.offsets(merged, k, idBits, n); err != nil {
		return nil, nil, err
	}
	return c, merged, nil
}

// offsets is the layout's offsets over the k sorted entries at keys.
func (d *devBuild) offsets(keys *gpu.DeviceBuffer, k int64, idBits int, n int64) (*gpu.DeviceBuffer, error) {
	off, err := d.alloc((n + 1) * 8)
	if err != nil {
		return nil, err
	}
	return off, d.launch("gb_offsets", n+1, keys, uint64(k), uint32(idBits), uint64(n), off)
}

// csc is the in-edge layout of out, from its merged entries: their ends
// swapped and sorted again (there is nothing left to merge).
func (d *devBuild) csc(out *deviceCSR, merged *gpu.DeviceBuffer, n int64, idBits int) (*deviceCSR, error) {
	k := out.edges
	swapped, err := d.alloc(k * 8)
	if err != nil {
		return nil, err
	}
	if err := d.launch("gb_swap_ends", k, merged, uint64(k), uint32(idBits), swapped); err != nil {
		return nil, err
	}
	d.free(merged)
	scratch, err := d.alloc(k * 8)
	if err != nil {
		return nil, err
	}
	var vals, vscratch *gpu.DeviceBuffer
	if out.weights != nil {
		if vals, err = d.alloc(k * 8); err != nil {
			return nil, err
		}
		if err := vals.CopyFromDevice(d.s, out.weights); err != nil {
			return nil, err
		}
		if vscratch, err = d.alloc(k * 8); err != nil {
			return nil, err
		}
	}
	keys, sortedVals, err := d.radixSort(swapped, scratch, vals, vscratch, k, 2*idBits)
	if err != nil {
		return nil, err
	}
	d.free(otherOf(keys, swapped, scratch))
	if sortedVals != nil {
		d.free(otherOf(sortedVals, vals, vscratch))
	}
	in := &deviceCSR{edges: k, weights: sortedVals}
	if in.targets, err = d.alloc(k * 4); err != nil {
		return nil, err
	}
	if err := d.launch("gb_low_ends", k, keys, uint64(k), uint64(1)<<idBits-1, in.targets); err != nil {
		return nil, err
	}
	if in.offsets, err = d.offsets(keys, k, idBits, n); err != nil {
		return nil, err
	}
	d.free(keys)
	return in, nil
}

// degreeStats is the out-degree statistics (convert.DegreeStats) of the
// layouts, worked out on the device.
func (d *devBuild) degreeStats(out, in *deviceCSR, n int64, scalars *gpu.DeviceBuffer) (convert.DegreeStats, error) {
	deg := convert.DegreeStats{Vertices: int(n), Edges: out.edges}
	if n == 0 {
		return deg, nil
	}
	deg.Average = float64(out.edges) / float64(n)
	inOffs, marks := gpu.DevicePtr(0), gpu.DevicePtr(0)
	if !d.opts.Undirected {
		if in != nil {
			inOffs = in.offsets.Ptr()
		} else {
			buf, err := d.alloc((n + 31) / 32 * 4)
			if err != nil {
				return deg, err
			}
			defer d.free(buf)
			if err := buf.Memset32(d.s, 0); err != nil {
				return deg, err
			}
			if err := d.launch("gb_mark_targets", out.edges, out.targets, uint64(out.edges), buf); err != nil {
				return deg, err
			}
			marks = buf.Ptr()
		}
	}
	if err := setU64s(d.s, scalars, scalarStats, 66, 0); err != nil {
		return deg, err
	}
	if err := d.launch("gb_degree_stats", n, out.offsets, uint64(n), inOffs, marks, gpu.DevicePtr(scalars.Ptr()+scalarStats*8)); err != nil {
		return deg, err
	}
	st, err := d.readU64s(scalars, scalarStats, 66)
	if err != nil {
		return deg, err
	}
	deg.Max, deg.Isolated = int64(st[64]), int64(st[65])
	if deg.Max > 0 {
		for _, c := range st[:bits.Len64(uint64(deg.Max))] {
			deg.Log2 = append(deg.Log2, int64(c))
		}
	}
	return deg, nil
}

// graph assembles the graph: the offsets downloaded into the build's
// allocator, the layouts handed to the backend's cache.
func (d *devBuild) graph(keys *convert.VertexKeys, n, self int64, out, in *deviceCSR, deg convert.DegreeStats) (*convert.Graph, error) {
	a := d.opts.Alloc
	download := func(c *deviceCSR) ([]int64, error) {
		off := alloc.Slice[int64](a, int(n+1))
		poisonHost(d.b, off, -1)
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
	parts := map[layout]*gpu.DeviceBuffer{outOffsets: out.offsets, outTargets: out.targets}
	if out.weights != nil {
		parts[outWeights] = out.weights
	}
	if in != nil {
		remote.inSources, remote.inWeights = in.targets, in.weights
		parts[inOffsets], parts[inSources] = in.offsets, in.targets
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
	d.b.adopt(g, parts)
	return g, nil
}

// adopt puts layouts built on the device into g's entry of the cache.
func (b *GPU) adopt(g *convert.Graph, parts map[layout]*gpu.DeviceBuffer) {
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
	_, err = b.kernel(kernels.GraphBuild, "gb_popc") // the whole module, JIT-compiled
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

// scan turns the count uint32 at buf into their exclusive prefix sums, in
// place: per tile sums, their scan (recursively), then each tile's scan
// from its sum's.
func (d *devBuild) scan(buf *gpu.DeviceBuffer, count int64) error {
	if count <= 0 {
		return nil
	}
	tiles := (count + scanTile - 1) / scanTile
	if tiles == 1 {
		return d.launchTiles("scan_down", 1, buf, uint64(count), gpu.DevicePtr(0))
	}
	partial, err := d.alloc(tiles * 4)
	if err != nil {
		return err
	}
	defer d.free(partial)
	if err := d.launchTiles("scan_reduce", tiles, buf, uint64(count), partial); err != nil {
		return err
	}
	if err := d.scan(partial, tiles); err != nil {
		return err
	}
	return d.launchTiles("scan_down", tiles, buf, uint64(count), partial)
}

// radixSort sorts the count keys at a (with their values at va, or none)
// by their low keyBits bits, stably, 8 bits a pass, b and vb being scratch
// of the same sizes. It returns the buffers that hold the result: a and
// va, or b and vb.
func (d *devBuild) radixSort(a, b, va, vb *gpu.DeviceBuffer, count int64, keyBits int) (*gpu.DeviceBuffer, *gpu.DeviceBuffer, error) {
	if count <= 1 || keyBits == 0 {
		return a, va, nil
	}
	tiles := (count + rsTile - 1) / rsTile
	counts, err := d.alloc(256 * tiles * 4)
	if err != nil {
		return nil, nil, err
	}
	defer d.free(counts)
	for shift := 0; shift < keyBits; shift += 8 {
		if err := d.launchTiles("rs_hist", tiles, a, uint64(count), uint32(shift), counts, uint32(tiles)); err != nil {
			return nil, nil, err
		}
		if err := d.scan(counts, 256*tiles); err != nil {
			return nil, nil, err
		}
		if err := d.launchTiles("rs_scatter", tiles, a, devicePtr(va), uint64(count), uint32(shift), counts, uint32(tiles), b, devicePtr(vb)); err != nil {
			return nil, nil, err
		}
		a, b, va, vb = b, a, vb, va
	}
	return a, va, nil
}

// hostEdgeReader is a GPU operator that knows which runs read the graph's
// edge arrays on the host.
type hostEdgeReader interface {
	readsHostEdges(p Params) bool
}

// readsHostEdges says whether a GPU run of op reads the graph's edge arrays
// (targets, weights) on the host, so that a graph built on the GPU must be
// copied back first: every operator does unless it says otherwise.
func readsHostEdges(op Operator, p Params) bool {
	h, ok := op.(hostEdgeReader)
	return !ok || h.readsHostEdges(p)
}

// readsHostEdges: the three BFS strategies read on the host only the
// degree statistics (chooseBFS, enterpriseHubs), the source's degree and
// the layouts' sizes (vwcConfigFor, outlierQueueBytes): offsets and counts,
// which a graph built on the GPU has on the host.
func (BFS) readsHostEdges(Params) bool { return false }

// readsHostEdges: Afforest reads on the host only the layouts' sizes; the
// other strategies (and auto, which may choose them) read more.
func (CC) readsHostEdges(p Params) bool { return p.Strategy != strategyAfforest }
