package gpipe

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpipe/gpipe/convert"
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
	}
	panic(fmt.Sprintf("gpipe: result column %q has no type", c.Name))
}

// Record is the result as one Arrow record, one row per vertex in id order
// (ascending key order). Numeric columns without nulls share the result's
// memory; the caller releases the record.
func (r *Result) Record(mem memory.Allocator) arrow.Record {
	return r.Rows(mem, 0, r.Graph.NumVertices())
}

// Rows is the rows of Record for the vertices with ids [lo, hi): what a
// writer takes a batch at a time, so that the whole table is never built
// at once (and a canceled write stops between batches).
func (r *Result) Rows(mem memory.Allocator, lo, hi int) arrow.Record {
	cols := []arrow.Array{r.Graph.Keys.Range(mem, lo, hi)}
	for _, c := range r.Columns {
		switch c.Type {
		case operators.Int32Column:
			cols = append(cols, primitive(mem, arrow.PrimitiveTypes.Int32, c.Int32[lo:hi], func(v int32) bool { return v >= 0 }))
		case operators.Float64Column:
			cols = append(cols, primitive(mem, arrow.PrimitiveTypes.Float64, c.Float64[lo:hi], func(v float64) bool { return !math.IsNaN(v) }))
		case operators.VertexColumn:
			cols = append(cols, r.Graph.Keys.Array(mem, c.Vertex[lo:hi]))
		}
	}
	rec := array.NewRecord(r.Schema(), cols, int64(hi-lo))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// primitive wraps values as an Arrow array without copying them, with a
// validity bitmap where valid says some value is null.
func primitive[T int32 | float64](mem memory.Allocator, dt arrow.DataType, values []T, valid func(T) bool) arrow.Array {
	n := len(values)
	var nulls int
	for _, v := range values {
		if !valid(v) {
			nulls++
		}
	}
	var validity *memory.Buffer
	if nulls > 0 {
		validity = memory.NewResizableBuffer(mem)
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		bits := validity.Bytes()
		clear(bits)
		for i, v := range values {
			if valid(v) {
				bitutil.SetBit(bits, i)
			}
		}
	}
	var zero T
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), n*int(unsafe.Sizeof(zero)))
	data := array.NewData(dt, n, []*memory.Buffer{validity, memory.NewBufferBytes(raw)}, nil, nulls, 0)
	defer data.Release()
	if validity != nil {
		validity.Release()
	}
	return array.MakeFromData(data)
}

// Unreached counts the vertices whose first result column is null: for the
// traversals, the vertices the source does not reach.
func (r *Result) Unreached() int {
	if len(r.Columns) == 0 {
		return 0
	}
	c := r.Columns[0]
	n := 0
	switch c.Type {
	case operators.Int32Column:
		for _, v := range c.Int32 {
			if v < 0 {
				n++
			}
		}
	case operators.Float64Column:
		for _, v := range c.Float64 {
			if math.IsNaN(v) {
				n++
			}
		}
	case operators.VertexColumn:
		for _, v := range c.Vertex {
			if v == convert.NoVertex {
				n++
			}
		}
	}
	return n
}
