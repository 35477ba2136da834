package edges

import (
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Writing an edge table back out as Arrow records: what `gpipe gen` writes,
// and what tests use to round-trip tables through every format. The records
// alias the table's memory, so they are valid until Table.Release.

// Schema is the table's columns in Arrow: the source and destination keys
// (strings as large_utf8, since the table keeps 64-bit offsets) and the
// weight as float64 when the table has one.
func (t *Table) Schema() *arrow.Schema {
	cols := t.Columns.WithDefaults()
	kt := t.exportKeyType()
	fields := []arrow.Field{{Name: cols.Src, Type: kt}, {Name: cols.Dst, Type: kt}}
	if t.HasWeight {
		fields = append(fields, arrow.Field{Name: cols.Weight, Type: arrow.PrimitiveTypes.Float64})
	}
	return arrow.NewSchema(fields, nil)
}

func (t *Table) exportKeyType() arrow.DataType {
	switch t.KeyType {
	case KeyInt32:
		return arrow.PrimitiveTypes.Int32
	case KeyUint32:
		return arrow.PrimitiveTypes.Uint32
	case KeyUint64:
		return arrow.PrimitiveTypes.Uint64
	case KeyString:
		return arrow.BinaryTypes.LargeString
	}
	return arrow.PrimitiveTypes.Int64
}

// RecordReader yields one record per chunk, without copying.
func (t *Table) RecordReader() array.RecordReader {
	return &tableReader{t: t, schema: t.Schema(), refs: 1}
}

type tableReader struct {
	t      *Table
	schema *arrow.Schema
	next   int
	rec    arrow.RecordBatch
	refs   int64
}

func (r *tableReader) Schema() *arrow.Schema          { return r.schema }
func (r *tableReader) RecordBatch() arrow.RecordBatch { return r.rec }

// Record is RecordBatch under the name arrow-go deprecated, which its
// RecordReader interface still lists.
func (r *tableReader) Record() arrow.RecordBatch { return r.rec }
func (r *tableReader) Err() error                { return nil }
func (r *tableReader) Retain()                   { atomic.AddInt64(&r.refs, 1) }

func (r *tableReader) Release() {
	if atomic.AddInt64(&r.refs, -1) == 0 && r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}

func (r *tableReader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	for r.next < len(r.t.Chunks) {
		c := &r.t.Chunks[r.next]
		r.next++
		n := c.Len()
		if n == 0 {
			continue
		}
		cols := []arrow.Array{keysArray(&c.Src), keysArray(&c.Dst)}
		if r.t.HasWeight {
			cols = append(cols, fixedArray(arrow.PrimitiveTypes.Float64, c.Weight))
		}
		r.rec = array.NewRecordBatch(r.schema, cols, int64(n))
		for _, a := range cols {
			a.Release()
		}
		return true
	}
	return false
}

func keysArray(k *Keys) arrow.Array {
	switch {
	case k.Int32 != nil:
		return fixedArray(arrow.PrimitiveTypes.Int32, k.Int32)
	case k.Uint32 != nil:
		return fixedArray(arrow.PrimitiveTypes.Uint32, k.Uint32)
	case k.Uint64 != nil:
		return fixedArray(arrow.PrimitiveTypes.Uint64, k.Uint64)
	case k.Str != nil:
		s := k.Str
		data := array.NewData(arrow.BinaryTypes.LargeString, s.Len(),
			[]*memory.Buffer{nil, memory.NewBufferBytes(sliceBytes(s.Offsets)), memory.NewBufferBytes(s.Data)}, nil, 0, 0)
		defer data.Release()
		return array.MakeFromData(data)
	}
	return fixedArray(arrow.PrimitiveTypes.Int64, k.Int64)
}

func fixedArray[T any](dt arrow.DataType, v []T) arrow.Array {
	data := array.NewData(dt, len(v), []*memory.Buffer{nil, memory.NewBufferBytes(sliceBytes(v))}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

func sliceBytes[T any](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z)))
}
