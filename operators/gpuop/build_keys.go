package gpuop

// The first steps of the GPU build (build.go): the edge columns to the
// device, the weights' check, the keys renumbered, the edges as entries.

import (
	"context"
	"fmt"
	"math/bits"
	"structs"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
)

// columns are the edge columns on the device.
type columns struct{ src, dst, w *gpu.DeviceBuffer }

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
	nonneg := Flag(d.opts.Weights == convert.NonNegativeWeights)
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
	undirected := Flag(d.opts.Undirected)
	self := gpu.DevicePtr(scalars.Ptr() + scalarSelfLoops*8)
	a := entriesArgs{
		src: c.src.Ptr(), dst: c.dst.Ptr(), w: w, keys: e.keys.Ptr(), vals: vals, self: self,
		m: uint64(d.m), lo: lo, bits: uint32(idBits), undirected: undirected,
	}
	name := "gb_entries_sorted_" + d.suffix
	if rn.words != nil {
		name, a.table, a.rank = "gb_entries_bitmap_"+d.suffix, rn.words.Ptr(), rn.rank.Ptr()
	} else {
		a.table, a.n = rn.distinct.Ptr(), uint64(rn.n)
	}
	err = d.launch(name, d.m, gpu.Args(&a))
	if err != nil {
		return e, 0, err
	}
	loops, err := d.readU64s(scalars, scalarSelfLoops, 1)
	if err != nil {
		return e, 0, err
	}
	return e, int64(loops[0]), nil
}

// entriesArgs mirrors kernels/graph_build.cu's EntriesArgs, field by field:
// the arguments of gb_entries_* (table: the bitmap's words with rank, or
// the n sorted distinct keys).
type entriesArgs struct {
	_                        structs.HostLayout
	src, dst, w, table, rank gpu.DevicePtr
	keys, vals, self         gpu.DevicePtr
	m, lo, n                 uint64
	bits                     uint32
	undirected               int32
}
