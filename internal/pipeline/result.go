package pipeline

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/operators"
)

// Result is an operator's output on a graph.
type Result struct {
	*operators.Result
	Graph *Graph
}

// VertexColumn is the name of the key column every result starts with.
const VertexColumn = "vertex"

// Schema is the result's Arrow schema: the vertex key, then the operator's
// columns, all nullable.
func (r *Result) Schema() *arrow.Schema {
	fields := []arrow.Field{{Name: VertexColumn, Type: r.Graph.Keys.ArrowType}}
	for _, c := range r.Columns {
		fields = append(fields, arrow.Field{Name: c.Name, Type: r.arrowType(c), Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

func (r *Result) arrowType(c operators.Column) arrow.DataType {
	switch c.Type {
	case operators.Int32Column:
		return arrow.PrimitiveTypes.Int32
	case operators.Float64Column:
		return arrow.PrimitiveTypes.Float64
	case operators.VertexColumn:
		return r.Graph.Keys.ArrowType
	case operators.Int64Column:
		return arrow.PrimitiveTypes.Int64
	}
	panic(fmt.Sprintf("gpipe: result column %q has no type", c.Name))
}

// Record is the result as one Arrow record, one row per vertex in id order
// (ascending key order). Numeric columns share the result's memory, and a
// vertex column of integer keys the graph's; the caller releases the
// record.
func (r *Result) Record(mem memory.Allocator) arrow.RecordBatch {
	return r.Rows(mem, 0, r.Graph.NumVertices())
}

// Rows is the rows of Record for the vertices with ids [lo, hi): what a
// writer takes a batch at a time, so that the whole table is never built
// at once (and a canceled write stops between batches). Only what must
// change is written: a vertex column of integer keys and the numeric
// columns point into the graph's keys and the result's values (with a
// validity bitmap where some are null), and a column of vertices (parents,
// components) maps ids to integer keys in parallel; string keys are
// gathered into new arrays.
func (r *Result) Rows(mem memory.Allocator, lo, hi int) arrow.RecordBatch {
	keys := r.Graph.Keys
	cols := []arrow.Array{keyRange(mem, keys, lo, hi)}
	for _, c := range r.Columns {
		switch c.Type {
		case operators.Int32Column:
			values := c.Int32[lo:hi]
			if a := madeOnDevice(mem, arrow.PrimitiveTypes.Int32, alloc.Bytes(values), c.Valid, lo, hi); a != nil {
				cols = append(cols, a)
				continue
			}
			cols = append(cols, wrap(mem, arrow.PrimitiveTypes.Int32, values, func(bits []byte, lo, hi int) int {
				return nonNegative(bits[lo/8:], values[lo:hi])
			}))
		case operators.Float64Column:
			values := c.Float64[lo:hi]
			if a := madeOnDevice(mem, arrow.PrimitiveTypes.Float64, alloc.Bytes(values), c.Valid, lo, hi); a != nil {
				cols = append(cols, a)
				continue
			}
			cols = append(cols, wrap(mem, arrow.PrimitiveTypes.Float64, values, func(bits []byte, lo, hi int) int {
				return notNaN(bits[lo/8:], values[lo:hi])
			}))
		case operators.VertexColumn:
			if c.Keys != nil {
				w := len(c.Keys) / max(len(c.Vertex), 1)
				if a := madeOnDevice(mem, keys.ArrowType, c.Keys[lo*w:hi*w], c.Valid, lo, hi); a != nil {
					cols = append(cols, a)
					continue
				}
			}
			cols = append(cols, keysOf(mem, keys, c.Vertex[lo:hi]))
		case operators.Int64Column:
			cols = append(cols, int64Rows(mem, c, lo, hi))
		}
	}
	rec := array.NewRecordBatch(r.Schema(), cols, int64(hi-lo))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// madeOnDevice is rows [lo, hi) of a column whose values (raw, already
// cut to the rows) and validity bitmap valid a GPU run made or knows
// (operators.Column's Keys and Valid), without copying the values; nil
// where valid is nil or lo does not start a byte of it (the caller then
// fills the bitmap from the values). The rows' bits are copied into memory
// from mem with the bits past hi cleared.
func madeOnDevice(mem memory.Allocator, dt arrow.DataType, raw, valid []byte, lo, hi int) arrow.Array {
	if valid == nil || lo%8 != 0 {
		return nil
	}
	n := hi - lo
	nbytes := int(bitutil.BytesForBits(int64(n)))
	bitmap := memory.NewResizableBuffer(mem)
	defer bitmap.Release()
	bitmap.Resize(nbytes)
	bits := bitmap.Bytes()
	copy(bits, valid[lo/8:lo/8+nbytes])
	if n%8 != 0 {
		bits[nbytes-1] &= byte(1)<<(n%8) - 1
	}
	nulls := n - bitutil.CountSetBits(bits, 0, n)
	buffers := []*memory.Buffer{bitmap, memory.NewBufferBytes(raw)}
	if nulls == 0 {
		buffers[0] = nil
	}
	data := array.NewData(dt, n, buffers, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// keyRange is the key column of the vertices [lo, hi): integer keys as they
// are, without a copy; string keys gathered by convert.
func keyRange(mem memory.Allocator, k *convert.VertexKeys, lo, hi int) arrow.Array {
	switch k.Type {
	case edges.KeyInt32:
		return wrap(mem, k.ArrowType, k.Int32[lo:hi], nil)
	case edges.KeyInt64:
		return wrap(mem, k.ArrowType, k.Int64[lo:hi], nil)
	case edges.KeyUint32:
		return wrap(mem, k.ArrowType, k.Uint32[lo:hi], nil)
	case edges.KeyUint64:
		return wrap(mem, k.ArrowType, k.Uint64[lo:hi], nil)
	}
	return k.Range(mem, lo, hi)
}

// keysOf is the key column of ids, null where an id is NoVertex.
func keysOf(mem memory.Allocator, k *convert.VertexKeys, ids []uint32) arrow.Array {
	switch k.Type {
	case edges.KeyInt32:
		return mapKeys(mem, k.ArrowType, k.Int32, ids)
	case edges.KeyInt64:
		return mapKeys(mem, k.ArrowType, k.Int64, ids)
	case edges.KeyUint32:
		return mapKeys(mem, k.ArrowType, k.Uint32, ids)
	case edges.KeyUint64:
		return mapKeys(mem, k.ArrowType, k.Uint64, ids)
	}
	return k.Array(mem, ids)
}

// mapKeys is the column keys[ids[i]], null (and 0) where ids[i] is
// NoVertex, in memory from mem.
func mapKeys[T int32 | int64 | uint32 | uint64](mem memory.Allocator, dt arrow.DataType, keys []T, ids []uint32) arrow.Array {
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(len(ids) * int(unsafe.Sizeof(T(0))))
	out := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(values.Bytes()))), len(ids))
	return withValidity(mem, dt, values, len(ids), func(bits []byte, lo, hi int) int {
		return gather(bits[lo/8:], out[lo:hi], keys, ids[lo:hi])
	})
}

// The loops that write a column's values and validity bitmap (from its
// first bit) take whole bytes of 8 rows, on slices of 8 so that the
// compiler drops the bounds checks, then the rows left.

// gather writes out[i] = keys[ids[i]], 0 where ids[i] is NoVertex, and the
// validity bits; it returns the nulls.
func gather[T int32 | int64 | uint32 | uint64](bits []byte, out, keys []T, ids []uint32) (nulls int) {
	n := len(ids)
	out = out[:n]
	for i := 0; i < n; i += 8 {
		k := min(8, n-i)
		id, o := ids[i:i+k:i+k], out[i:i+k:i+k]
		var b byte
		for j, v := range id {
			if v == convert.NoVertex {
				o[j] = 0
				nulls++
				continue
			}
			o[j] = keys[v]
			b |= 1 << j
		}
		bits[i>>3] = b
	}
	return nulls
}

// nonNegative writes the validity bits of values (valid: >= 0) and
// returns the nulls.
func nonNegative(bits []byte, values []int32) (nulls int) {
	n := len(values)
	for i := 0; i < n; i += 8 {
		k := min(8, n-i)
		var b byte
		for j, v := range values[i : i+k : i+k] {
			if v >= 0 {
				b |= 1 << j
			} else {
				nulls++
			}
		}
		bits[i>>3] = b
	}
	return nulls
}

// notNaN writes the validity bits of values (valid: not NaN) and returns
// the nulls.
func notNaN(bits []byte, values []float64) (nulls int) {
	n := len(values)
	for i := 0; i < n; i += 8 {
		k := min(8, n-i)
		var b byte
		for j, v := range values[i : i+k : i+k] {
			if v == v {
				b |= 1 << j
			} else {
				nulls++
			}
		}
		bits[i>>3] = b
	}
	return nulls
}

// fillGrain is the rows a worker fills at a time: a multiple of 8, so that
// workers write whole bytes of a validity bitmap.
const fillGrain = 1 << 15

// parallelFill is the fewest rows whose validity bitmap is filled on all
// cores (a whole result converted at once, not a Flight batch).
const parallelFill = 1 << 20

// withValidity is an array over values, whose validity bitmap fill writes
// for the rows [lo, hi) (several ranges in parallel), saying how many are
// null; the bitmap is dropped when none is. fill nil: no nulls.
func withValidity(mem memory.Allocator, dt arrow.DataType, values *memory.Buffer, n int, fill func(bits []byte, lo, hi int) int) arrow.Array {
	var bitmap *memory.Buffer
	var nulls atomic.Int64
	if fill != nil {
		bitmap = memory.NewResizableBuffer(mem)
		defer bitmap.Release()
		bitmap.Resize(int(bitutil.BytesForBits(int64(n))))
		bits := bitmap.Bytes()
		if n < parallelFill {
			// A batch (Rows of a slice): the encoders already run side by
			// side, and a parallel loop per batch would keep the par team
			// spinning through a whole result.
			nulls.Add(int64(fill(bits, 0, n)))
		} else {
			par.For(n, fillGrain, func(lo, hi int) { nulls.Add(int64(fill(bits, lo, hi))) })
		}
		if nulls.Load() == 0 {
			bitmap = nil
		}
	}
	data := array.NewData(dt, n, []*memory.Buffer{bitmap, values}, nil, int(nulls.Load()), 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// wrap is an Arrow array over values, without copying them, with a validity
// bitmap as fill writes it (nil: no nulls).
func wrap[T any](mem memory.Allocator, dt arrow.DataType, values []T, fill func(bits []byte, lo, hi int) int) arrow.Array {
	var zero T
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), len(values)*int(unsafe.Sizeof(zero)))
	return withValidity(mem, dt, memory.NewBufferBytes(raw), len(values), fill)
}

// countPiece is the fewest rows Unreached gives a goroutine.
const countPiece = 1 << 18

// Unreached counts the vertices whose first result column is null: for the
// traversals, the vertices the source does not reach.
func (r *Result) Unreached() int {
	if len(r.Columns) == 0 {
		return 0
	}
	c := r.Columns[0]
	rows := c.Len()
	if c.Valid != nil {
		return rows - bitutil.CountSetBits(c.Valid, 0, rows)
	}
	// On a few goroutines of its own (par.Goroutines): the count comes
	// before a Flight result's first byte (its metadata), where one core
	// took 1.8 ms of Kronecker 22's 2.4 M rows, and a loop on internal/par's
	// team would grow it to every core, whose helpers then spin between the
	// small loops that follow (each batch's validity bitmap), taking the
	// cores from gRPC's writer and a client on the same host (DoGet bfs 48
	// → 64 ms on the GPU machine, BENCHMARKS.md issue 17).
	var n atomic.Int64
	count := func(unset func(lo, hi int) int) {
		pieces := min((rows+countPiece-1)/countPiece, par.Workers(), 8)
		if pieces <= 1 {
			n.Add(int64(unset(0, rows)))
			return
		}
		par.Goroutines(pieces, func(p int) { n.Add(int64(unset(rows*p/pieces, rows*(p+1)/pieces))) })
	}
	switch c.Type {
	case operators.Int32Column:
		count(func(lo, hi int) (k int) {
			for _, v := range c.Int32[lo:hi] {
				k += int(uint32(v) >> 31)
			}
			return k
		})
	case operators.Float64Column:
		count(func(lo, hi int) (k int) {
			for _, v := range c.Float64[lo:hi] {
				if math.IsNaN(v) {
					k++
				}
			}
			return k
		})
	case operators.VertexColumn:
		count(func(lo, hi int) (k int) {
			for _, v := range c.Vertex[lo:hi] {
				if v == convert.NoVertex {
					k++
				}
			}
			return k
		})
	case operators.Int64Column:
		if c.Valid != nil {
			count(func(lo, hi int) int { return hi - lo - bitutil.CountSetBits(c.Valid, lo, hi-lo) })
		}
	}
	return int(n.Load())
}

// int64Rows is rows [lo, hi) of an Int64Column: its values, and its
// validity bitmap where it has one (a vertex program's output with a null
// value).
func int64Rows(mem memory.Allocator, c operators.Column, lo, hi int) arrow.Array {
	values := c.Int64[lo:hi]
	if c.Valid == nil {
		return wrap(mem, arrow.PrimitiveTypes.Int64, values, nil)
	}
	return wrap(mem, arrow.PrimitiveTypes.Int64, values, func(bits []byte, l, h int) (nulls int) {
		for i := l; i < h; i++ {
			if bitutil.BitIsSet(c.Valid, lo+i) {
				bitutil.SetBit(bits, i)
			} else {
				bitutil.ClearBit(bits, i)
				nulls++
			}
		}
		return nulls
	})
}
