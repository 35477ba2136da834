package pqwrite

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// part is the rows of a column chunk that one record slice holds, as the
// encoder reads them: Arrow's buffers, without a copy.
type part struct {
	n, nulls int
	valid    []byte // validity bitmap; nil when no row is null
	vbit     int    // bit of the part's first row in valid
	fixed    []byte // fixed-width values, n × width bytes
	off32    []int32
	off64    []int64 // byte arrays: n+1 offsets into data (one of the two)
	data     []byte
	decoded  arrow.Array // a decoded dictionary column, released with the part
}

// isValid says whether row i is not null.
func (p *part) isValid(i int) bool {
	return p.valid == nil || bitutil.BitIsSet(p.valid, p.vbit+i)
}

// bytesAt is the value of row i of a byte array part.
func (p *part) bytesAt(i int) []byte {
	if p.off32 != nil {
		return p.data[p.off32[i]:p.off32[i+1]]
	}
	return p.data[p.off64[i]:p.off64[i+1]]
}

// valueBytes is the size of rows [lo, hi) of a byte array part's values.
func (p *part) valueBytes(lo, hi int) int64 {
	if p.off32 != nil {
		return int64(p.off32[hi] - p.off32[lo])
	}
	return p.off64[hi] - p.off64[lo]
}

// release frees what the part made for itself.
func (p *part) release() {
	if p.decoded != nil {
		p.decoded.Release()
		p.decoded = nil
	}
}

// partsOf is column col's parts in the record slices of a row group, empty
// slices left out.
func partsOf(recs []arrow.RecordBatch, col int, c *column) ([]part, error) {
	parts := make([]part, 0, len(recs))
	for _, rec := range recs {
		arr := rec.Column(col)
		if arr.Len() == 0 {
			continue
		}
		if c.dict != nil {
			d, ok := arr.(*array.Dictionary)
			if !ok {
				return nil, fmt.Errorf("column %q holds %s, not its type %s", c.name, arr.DataType(), c.dict)
			}
			arr = decodeDictionary(d)
			p, err := partOf(arr, c)
			p.decoded = arr
			if err != nil {
				p.release()
				return nil, err
			}
			parts = append(parts, p)
			continue
		}
		p, err := partOf(arr, c)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// partOf reads the buffers of arr, an array of c's value type.
func partOf(arr arrow.Array, c *column) (part, error) {
	if k, _, ok := kindOf(arr.DataType()); !ok || k != c.kind {
		return part{}, fmt.Errorf("column %q holds %s, which does not match the schema", c.name, arr.DataType())
	}
	data := arr.Data()
	off, n := data.Offset(), data.Len()
	p := part{n: n, vbit: off}
	bufs := data.Buffers()
	if bufs[0] != nil {
		p.valid = bufs[0].Bytes()
		// A slice's null count is computed on demand; counted here, since
		// the array caches it and may sit in another column too.
		if p.nulls = data.NullN(); p.nulls < 0 {
			p.nulls = n - bitutil.CountSetBits(p.valid, off, n)
		}
	} else if data.NullN() > 0 {
		return part{}, fmt.Errorf("column %q: %d nulls but no validity bitmap", c.name, data.NullN())
	}
	if p.nulls == 0 {
		p.valid = nil
	}
	if w := c.kind.width(); w > 0 {
		p.fixed = bufs[1].Bytes()[off*w : (off+n)*w]
		return p, nil
	}
	switch arr.DataType().ID() {
	case arrow.STRING, arrow.BINARY:
		p.off32 = castSlice[int32](bufs[1].Bytes())[off : off+n+1]
	default:
		p.off64 = castSlice[int64](bufs[1].Bytes())[off : off+n+1]
	}
	if bufs[2] != nil {
		p.data = bufs[2].Bytes()
	}
	return p, nil
}

// decodeDictionary is the values of a dictionary array, dense: null where
// the index or the value it points at is null.
func decodeDictionary(d *array.Dictionary) arrow.Array {
	dict := d.Dictionary()
	b := array.NewBuilder(memory.DefaultAllocator, dict.DataType())
	defer b.Release()
	b.Reserve(d.Len())
	for i := 0; i < d.Len(); i++ {
		if d.IsNull(i) || dict.IsNull(d.GetValueIndex(i)) {
			b.AppendNull()
			continue
		}
		j := d.GetValueIndex(i)
		switch bb := b.(type) {
		case *array.Int32Builder:
			bb.Append(dict.(*array.Int32).Value(j))
		case *array.Uint32Builder:
			bb.Append(dict.(*array.Uint32).Value(j))
		case *array.Int64Builder:
			bb.Append(dict.(*array.Int64).Value(j))
		case *array.Uint64Builder:
			bb.Append(dict.(*array.Uint64).Value(j))
		case *array.Float32Builder:
			bb.Append(dict.(*array.Float32).Value(j))
		case *array.Float64Builder:
			bb.Append(dict.(*array.Float64).Value(j))
		case *array.StringBuilder:
			bb.Append(dict.(*array.String).Value(j))
		case *array.LargeStringBuilder:
			bb.Append(dict.(*array.LargeString).Value(j))
		case *array.BinaryBuilder:
			bb.Append(dict.(interface{ Value(int) []byte }).Value(j))
		}
	}
	return b.NewArray()
}

// castSlice views b as a slice of T (a fixed-width number type).
func castSlice[T any](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}
