package arrowipc

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
)

// A chunk's keys and weights out of raw columns: viewed in place where the
// buffer already is what the chunk needs, converted or gathered otherwise.

// allocate is a slice of n T from the table's allocator, freed with it.
func allocate[T any](a *Appender, n int) []T {
	s := alloc.Slice[T](a.opts.Alloc, n)
	if mem := a.opts.Alloc; mem != nil && n > 0 {
		a.t.OnRelease(func() { alloc.Free(mem, s) })
	}
	var zero T
	a.bytes += int64(n) * int64(unsafe.Sizeof(zero))
	return s
}

// bytesAs views b as a slice of T; b must be aligned for T.
func bytesAs[T any](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// aligned says whether b's first byte is aligned to size.
func aligned(b []byte, size int) bool {
	return len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size) == 0
}

// fixedView is c's values [off, off+n) as T, viewed in place when aligned
// (inPlace), else copied to memory of the table's.
func fixedView[T any](a *Appender, c *rawCol) (v []T, inPlace bool, err error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	lo, hi := c.off*size, (c.off+c.n)*size
	if hi > len(c.buf1) || lo > hi {
		return nil, false, a.corrupt(c.role, fmt.Sprintf("the values buffer has %d bytes, too few for %d values", len(c.buf1), c.off+c.n))
	}
	raw := c.buf1[lo:hi]
	if aligned(raw, size) {
		return bytesAs[T](raw), true, nil
	}
	v = allocate[T](a, c.n)
	copy(alloc.Bytes(v), raw)
	return v, false, nil
}

// fixedKeys is a fixed-width key column: c's own buffer when nothing is
// dropped, else the kept values gathered.
func fixedKeys[T any](a *Appender, c *rawCol, sel []int32, m int) ([]T, error) {
	v, inPlace, err := fixedView[T](a, c)
	if err != nil {
		return nil, err
	}
	switch {
	case sel == nil && !inPlace:
		return v, nil // already a copy
	case sel == nil && a.mayAlias(c):
		a.hold(c)
		return v, nil
	case sel == nil:
		out := allocate[T](a, m)
		copy(out, v)
		return out, nil
	}
	out := allocate[T](a, m)
	for k, i := range sel {
		out[k] = v[i]
	}
	return out, nil
}

// narrowKeys is a key column of 8 or 16 bits widened to int32 (the
// positions sel, or all).
func narrowKeys[T int8 | int16 | uint8 | uint16](a *Appender, c *rawCol, sel []int32, m int) ([]int32, error) {
	v, _, err := fixedView[T](a, c)
	if err != nil {
		return nil, err
	}
	out := allocate[int32](a, m)
	if sel == nil {
		for i := range out {
			out[i] = int32(v[i])
		}
		return out, nil
	}
	for k, i := range sel {
		out[k] = int32(v[i])
	}
	return out, nil
}

// number is a type weights convert from.
type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// toFloat converts src (or its positions sel) to float64.
func toFloat[S number](dst []float64, src []S, sel []int32) {
	if sel == nil {
		for i, v := range src[:len(dst)] {
			dst[i] = float64(v)
		}
		return
	}
	for k, i := range sel {
		dst[k] = float64(src[i])
	}
}

func f16ToFloat(dst []float64, src []float16.Num, sel []int32) {
	if sel == nil {
		for i, v := range src[:len(dst)] {
			dst[i] = float64(v.Float32())
		}
		return
	}
	for k, i := range sel {
		dst[k] = float64(src[i].Float32())
	}
}

// convertWeights converts a numeric column's values to float64.
func convertWeights[S number](a *Appender, c *rawCol, dst []float64, sel []int32) error {
	v, _, err := fixedView[S](a, c)
	if err != nil {
		return err
	}
	toFloat(dst, v, sel)
	return nil
}

// weights is the weight column as float64; the chunk's rows start at input
// row first.
func (a *Appender) weights(c *rawCol, sel []int32, m int, first int64) ([]float64, error) {
	id := c.typ.ID()
	if id == arrow.FLOAT64 {
		return fixedKeys[float64](a, c, sel, m)
	}
	if id == arrow.DICTIONARY {
		return a.dictWeights(c, sel, m)
	}
	if isDecimal(c.typ) {
		return a.decimalWeights(c, sel, m, first)
	}
	out := allocate[float64](a, m)
	var err error
	switch id {
	case arrow.INT8:
		err = convertWeights[int8](a, c, out, sel)
	case arrow.INT16:
		err = convertWeights[int16](a, c, out, sel)
	case arrow.INT32:
		err = convertWeights[int32](a, c, out, sel)
	case arrow.INT64:
		err = convertWeights[int64](a, c, out, sel)
	case arrow.UINT8:
		err = convertWeights[uint8](a, c, out, sel)
	case arrow.UINT16:
		err = convertWeights[uint16](a, c, out, sel)
	case arrow.UINT32:
		err = convertWeights[uint32](a, c, out, sel)
	case arrow.UINT64:
		err = convertWeights[uint64](a, c, out, sel)
	case arrow.FLOAT32:
		err = convertWeights[float32](a, c, out, sel)
	case arrow.FLOAT16:
		var v []float16.Num
		if v, _, err = fixedView[float16.Num](a, c); err == nil {
			f16ToFloat(out, v, sel)
		}
	default:
		err = a.corrupt(c.role, "unexpected weight type "+arrowTypeName(c.typ))
	}
	return out, err
}

// dictIndices reads the dictionary indices of c's rows (or positions sel)
// into scratch and checks them against the dictionary's size.
func (a *Appender) dictIndices(c *rawCol, sel []int32, m int) ([]int64, error) {
	if cap(a.idx) < m {
		a.idx = make([]int64, m)
	}
	idx := a.idx[:m]
	dt := c.typ.(*arrow.DictionaryType)
	var err error
	switch dt.IndexType.ID() {
	case arrow.INT8:
		err = readIndices[int8](a, c, idx, sel)
	case arrow.UINT8:
		err = readIndices[uint8](a, c, idx, sel)
	case arrow.INT16:
		err = readIndices[int16](a, c, idx, sel)
	case arrow.UINT16:
		err = readIndices[uint16](a, c, idx, sel)
	case arrow.INT32:
		err = readIndices[int32](a, c, idx, sel)
	case arrow.UINT32:
		err = readIndices[uint32](a, c, idx, sel)
	case arrow.INT64:
		err = readIndices[int64](a, c, idx, sel)
	case arrow.UINT64:
		err = readIndices[uint64](a, c, idx, sel)
	default:
		return nil, a.corrupt(c.role, "dictionary index type "+arrowTypeName(dt.IndexType))
	}
	if err != nil {
		return nil, err
	}
	n := int64(c.dict.n)
	for k, x := range idx {
		if uint64(x) >= uint64(n) {
			return nil, a.corrupt(c.role, fmt.Sprintf("dictionary index %d at position %d is outside the dictionary of %d values", x, k, n))
		}
	}
	return idx, nil
}

func readIndices[I int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64](a *Appender, c *rawCol, idx []int64, sel []int32) error {
	v, _, err := fixedView[I](a, c)
	if err != nil {
		return err
	}
	if sel == nil {
		for i := range idx {
			idx[i] = int64(v[i]) // a uint64 beyond int64 turns negative: out of range
		}
		return nil
	}
	for k, i := range sel {
		idx[k] = int64(v[i])
	}
	return nil
}

// dictWeights gathers a dictionary-encoded weight column.
func (a *Appender) dictWeights(c *rawCol, sel []int32, m int) ([]float64, error) {
	idx, err := a.dictIndices(c, sel, m)
	if err != nil {
		return nil, err
	}
	d := c.dict
	out := allocate[float64](a, m)
	switch d.typ.ID() {
	case arrow.INT8:
		err = dictToFloat[int8](a, d, out, idx)
	case arrow.INT16:
		err = dictToFloat[int16](a, d, out, idx)
	case arrow.INT32:
		err = dictToFloat[int32](a, d, out, idx)
	case arrow.INT64:
		err = dictToFloat[int64](a, d, out, idx)
	case arrow.UINT8:
		err = dictToFloat[uint8](a, d, out, idx)
	case arrow.UINT16:
		err = dictToFloat[uint16](a, d, out, idx)
	case arrow.UINT32:
		err = dictToFloat[uint32](a, d, out, idx)
	case arrow.UINT64:
		err = dictToFloat[uint64](a, d, out, idx)
	case arrow.FLOAT32:
		err = dictToFloat[float32](a, d, out, idx)
	case arrow.FLOAT64:
		err = dictToFloat[float64](a, d, out, idx)
	case arrow.FLOAT16:
		var v []float16.Num
		if v, _, err = fixedView[float16.Num](a, d); err == nil {
			for k, i := range idx {
				out[k] = float64(v[i].Float32())
			}
		}
	default:
		err = a.corrupt(c.role, "unexpected weight type "+arrowTypeName(c.typ))
	}
	return out, err
}

func dictToFloat[S number](a *Appender, d *rawCol, out []float64, idx []int64) error {
	v, _, err := fixedView[S](a, d)
	if err != nil {
		return err
	}
	for k, i := range idx {
		out[k] = float64(v[i])
	}
	return nil
}

func dictGather[T any](a *Appender, c *rawCol, sel []int32, m int) ([]T, error) {
	idx, err := a.dictIndices(c, sel, m)
	if err != nil {
		return nil, err
	}
	v, _, err := fixedView[T](a, c.dict)
	if err != nil {
		return nil, err
	}
	out := allocate[T](a, m)
	for k, i := range idx {
		out[k] = v[i]
	}
	return out, nil
}

// keys is a key column of a chunk.
func (a *Appender) keys(c *rawCol, sel []int32, m int) (edges.Keys, error) {
	var k edges.Keys
	var err error
	switch c.typ.ID() {
	case arrow.INT8:
		k.Int32, err = narrowKeys[int8](a, c, sel, m)
	case arrow.INT16:
		k.Int32, err = narrowKeys[int16](a, c, sel, m)
	case arrow.UINT8:
		k.Int32, err = narrowKeys[uint8](a, c, sel, m)
	case arrow.UINT16:
		k.Int32, err = narrowKeys[uint16](a, c, sel, m)
	case arrow.INT32:
		k.Int32, err = fixedKeys[int32](a, c, sel, m)
	case arrow.INT64:
		k.Int64, err = fixedKeys[int64](a, c, sel, m)
	case arrow.UINT32:
		k.Uint32, err = fixedKeys[uint32](a, c, sel, m)
	case arrow.UINT64:
		k.Uint64, err = fixedKeys[uint64](a, c, sel, m)
	case arrow.STRING, arrow.LARGE_STRING:
		k.Str, err = a.strings(c, sel, m)
	case arrow.STRING_VIEW:
		k.Str, err = a.viewStrings(c, sel, m)
	case arrow.DICTIONARY:
		switch c.dict.typ.ID() {
		case arrow.INT32:
			k.Int32, err = dictGather[int32](a, c, sel, m)
		case arrow.INT64:
			k.Int64, err = dictGather[int64](a, c, sel, m)
		case arrow.UINT32:
			k.Uint32, err = dictGather[uint32](a, c, sel, m)
		case arrow.UINT64:
			k.Uint64, err = dictGather[uint64](a, c, sel, m)
		case arrow.STRING, arrow.LARGE_STRING:
			k.Str, err = a.dictStrings(c, sel, m)
		default:
			err = a.corrupt(c.role, "unexpected key type "+arrowTypeName(c.typ))
		}
	default:
		err = a.corrupt(c.role, "unexpected key type "+arrowTypeName(c.typ))
	}
	return k, err
}

// stringOffsets is c's offsets [off, off+n] as int64: in place for
// large_utf8 (inPlace), converted otherwise. They are checked to rise and
// to stay within the data.
func (a *Appender) stringOffsets(c *rawCol) (offs []int64, inPlace bool, err error) {
	large := c.typ.ID() == arrow.LARGE_STRING
	w := 4
	if large {
		w = 8
	}
	lo, hi := c.off*w, (c.off+c.n+1)*w
	if hi > len(c.buf1) {
		if c.n == 0 && len(c.buf1) == 0 {
			return []int64{0}, false, nil
		}
		return nil, false, a.corrupt(c.role, fmt.Sprintf("the offsets buffer has %d bytes, too few for %d strings", len(c.buf1), c.off+c.n))
	}
	raw := c.buf1[lo:hi]
	switch {
	case large && aligned(raw, 8):
		offs, inPlace = bytesAs[int64](raw), true
	case large:
		offs = allocate[int64](a, c.n+1)
		copy(alloc.Bytes(offs), raw)
	default:
		offs = allocate[int64](a, c.n+1)
		if aligned(raw, 4) {
			for i, o := range bytesAs[int32](raw) {
				offs[i] = int64(o)
			}
		} else {
			for i := range offs {
				offs[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
			}
		}
	}
	prev := offs[0]
	if prev < 0 {
		return nil, false, a.corrupt(c.role, fmt.Sprintf("string offset %d is negative", prev))
	}
	for i, o := range offs[1:] {
		if o < prev {
			return nil, false, a.corrupt(c.role, fmt.Sprintf("string offsets fall at position %d", i+1))
		}
		prev = o
	}
	if prev > int64(len(c.buf2)) {
		return nil, false, a.corrupt(c.role, fmt.Sprintf("string offset %d is beyond the %d bytes of string data", prev, len(c.buf2)))
	}
	return offs, inPlace, nil
}

// strings is a utf8 or large_utf8 key column. Without drops the data (and
// large_utf8 offsets) stay where they are.
func (a *Appender) strings(c *rawCol, sel []int32, m int) (*edges.Strings, error) {
	offs, _, err := a.stringOffsets(c)
	if err != nil {
		return nil, err
	}
	if sel == nil && a.mayAlias(c) {
		a.hold(c)
		return &edges.Strings{Offsets: offs, Data: c.buf2}, nil
	}
	return a.gatherStrings(offs, c.buf2, sel, nil, m), nil
}

// gatherStrings copies the strings offs/data names at positions sel (or,
// with idx, at positions idx; with neither, all of them) into new buffers.
func (a *Appender) gatherStrings(offs []int64, data []byte, sel []int32, idx []int64, m int) *edges.Strings {
	at := func(k int) int {
		switch {
		case idx != nil:
			return int(idx[k])
		case sel != nil:
			return int(sel[k])
		}
		return k
	}
	var total int64
	for k := 0; k < m; k++ {
		i := at(k)
		total += offs[i+1] - offs[i]
	}
	out := &edges.Strings{Offsets: allocate[int64](a, m+1), Data: allocate[byte](a, int(total))}
	var end int64
	for k := 0; k < m; k++ {
		i := at(k)
		end += int64(copy(out.Data[end:], data[offs[i]:offs[i+1]]))
		out.Offsets[k+1] = end
	}
	return out
}

// dictStrings materializes a dictionary-encoded string key column.
func (a *Appender) dictStrings(c *rawCol, sel []int32, m int) (*edges.Strings, error) {
	idx, err := a.dictIndices(c, sel, m)
	if err != nil {
		return nil, err
	}
	offs, _, err := a.stringOffsets(c.dict)
	if err != nil {
		return nil, err
	}
	return a.gatherStrings(offs, c.dict.buf2, nil, idx, m), nil
}

// viewStrings copies a string_view key column.
func (a *Appender) viewStrings(c *rawCol, sel []int32, m int) (*edges.Strings, error) {
	sv, ok := c.arr.(*array.StringView)
	if !ok {
		return nil, a.corrupt(c.role, "string views outside an array")
	}
	at := func(k int) int {
		if sel != nil {
			return c.off - c.base + int(sel[k])
		}
		return c.off - c.base + k
	}
	if err := a.checkViews(c, sv); err != nil {
		return nil, err
	}
	var total int64
	for k := 0; k < m; k++ {
		total += int64(sv.ValueLen(at(k)))
	}
	out := &edges.Strings{Offsets: allocate[int64](a, m+1), Data: allocate[byte](a, int(total))}
	var end int64
	for k := 0; k < m; k++ {
		end += int64(copy(out.Data[end:], sv.Value(at(k))))
		out.Offsets[k+1] = end
	}
	return out, nil
}

// checkViews checks that c's string views lie in their buffers: the views
// buffer holds the array's views, and each view that is not inline points
// into one of the data buffers (one pass over the views).
func (a *Appender) checkViews(c *rawCol, sv *array.StringView) error {
	if len(c.buf1)/arrow.ViewHeaderSizeBytes < c.base+sv.Len() {
		return a.corrupt(c.role, fmt.Sprintf("the views buffer has %d bytes, too few for %d string views", len(c.buf1), c.base+sv.Len()))
	}
	data := sv.Data().Buffers()[2:]
	for i := c.off - c.base; i < c.off-c.base+c.n; i++ {
		h := sv.ValueHeader(i)
		if h.IsInline() {
			continue
		}
		b, off, n := int(h.BufferIndex()), int64(h.BufferOffset()), int64(h.Len())
		if b < 0 || b >= len(data) || off < 0 || n < 0 || data[b] == nil || off+n > int64(data[b].Len()) {
			return a.corrupt(c.role, fmt.Sprintf("string view %d points to bytes %d to %d of data buffer %d, which it does not have", i, off, off+n, b))
		}
	}
	return nil
}
