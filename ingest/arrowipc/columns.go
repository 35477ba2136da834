package arrowipc

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/gpipe/gpipe/ingest/edges"
)

// The edge columns of a schema, and of each record batch seen as raw Arrow
// buffers, whatever they come from (an arrow.Array, a mapped file).

// Edge column roles: index into the appender's columns.
const (
	roleSrc = iota
	roleDst
	roleWeight
)

// rawCol is one edge column of one record batch as raw Arrow buffers.
type rawCol struct {
	typ   arrow.DataType
	role  int
	n     int    // rows
	off   int    // offset of row 0 in elements (and validity bits)
	base  int    // the array's own offset, for reads through arr
	nulls int    // null count (0: the validity bitmap is not looked at)
	valid []byte // validity bitmap; bit off+i is row i
	buf1  []byte // values, string offsets, or dictionary indices
	buf2  []byte // string data
	dict  *rawCol
	// arr is the array the buffers belong to (nil for a mapped file): it is
	// retained when a chunk aliases its buffers; string views read through it.
	arr arrow.Array
}

// slice is rows [lo, hi) of c.
func (c rawCol) slice(lo, hi int) rawCol {
	c.off += lo
	c.n = hi - lo
	return c
}

// mayHaveNulls says whether some row of c can be null.
func (c *rawCol) mayHaveNulls() bool {
	return (c.nulls != 0 && c.valid != nil) || (c.dict != nil && c.dict.mayHaveNulls())
}

// isNull says whether row i is null: not valid, or (dictionary) pointing at
// a null value.
func (c *rawCol) isNull(i int) bool {
	if c.nulls != 0 && c.valid != nil {
		if j := c.off + i; c.valid[j>>3]&(1<<(j&7)) == 0 {
			return true
		}
	}
	if c.dict != nil && c.dict.mayHaveNulls() {
		if k, ok := c.index(i); ok && k >= 0 && k < int64(c.dict.n) && c.dict.isNull(int(k)) {
			return true
		}
	}
	return false
}

// index is dictionary index i (unchecked against the dictionary).
func (c *rawCol) index(i int) (int64, bool) {
	dt := c.typ.(*arrow.DictionaryType)
	w := dt.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8
	j := (c.off + i) * w
	if j+w > len(c.buf1) {
		return 0, false
	}
	b := c.buf1[j:]
	switch dt.IndexType.ID() {
	case arrow.INT8:
		return int64(int8(b[0])), true
	case arrow.UINT8:
		return int64(b[0]), true
	case arrow.INT16:
		return int64(int16(binary.LittleEndian.Uint16(b))), true
	case arrow.UINT16:
		return int64(binary.LittleEndian.Uint16(b)), true
	case arrow.INT32:
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	case arrow.UINT32:
		return int64(binary.LittleEndian.Uint32(b)), true
	case arrow.INT64:
		return int64(binary.LittleEndian.Uint64(b)), true
	case arrow.UINT64:
		return int64(binary.LittleEndian.Uint64(b)), true
	}
	return 0, false
}

// rawFromData sees an array's data as a rawCol.
func rawFromData(d arrow.ArrayData, arr arrow.Array, role int) rawCol {
	c := rawCol{typ: d.DataType(), role: role, n: d.Len(), off: d.Offset(), base: d.Offset(), nulls: d.NullN(), arr: arr}
	bufs := d.Buffers()
	if len(bufs) > 0 && bufs[0] != nil {
		c.valid = bufs[0].Bytes()
	}
	if len(bufs) > 1 && bufs[1] != nil {
		c.buf1 = bufs[1].Bytes()
	}
	if len(bufs) > 2 && bufs[2] != nil {
		c.buf2 = bufs[2].Bytes()
	}
	if c.typ.ID() == arrow.DICTIONARY {
		if dict := d.Dictionary(); dict != nil {
			if dd, ok := dict.(*array.Data); !ok || dd != nil {
				dc := rawFromData(dict, nil, role)
				c.dict = &dc
			}
		}
	}
	return c
}

// arrowTypeName names an Arrow type as Arrow's documentation (and pyarrow)
// does: int64, double, string, large_string, timestamp, dictionary<string>.
func arrowTypeName(dt arrow.DataType) string {
	switch d := dt.(type) {
	case *arrow.DictionaryType:
		return "dictionary<" + arrowTypeName(d.ValueType) + ">"
	case arrow.ExtensionType:
		return d.ExtensionName()
	}
	switch dt.ID() {
	case arrow.FLOAT16:
		return "halffloat"
	case arrow.FLOAT32:
		return "float"
	case arrow.FLOAT64:
		return "double"
	case arrow.STRING:
		return "string"
	case arrow.LARGE_STRING:
		return "large_string"
	case arrow.STRING_VIEW:
		return "string_view"
	case arrow.BINARY_VIEW:
		return "binary_view"
	}
	return dt.Name()
}

// keyTypeOf is the KeyType a column of Arrow type dt reads as, or 0 when
// it cannot hold vertex keys.
func keyTypeOf(dt arrow.DataType) edges.KeyType {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16:
		return edges.KeyInt32 // widened as they are read
	case arrow.INT32:
		return edges.KeyInt32
	case arrow.INT64:
		return edges.KeyInt64
	case arrow.UINT32:
		return edges.KeyUint32
	case arrow.UINT64:
		return edges.KeyUint64
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return edges.KeyString
	case arrow.DICTIONARY:
		switch v := dt.(*arrow.DictionaryType).ValueType; v.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.INT32, arrow.INT64, arrow.UINT32, arrow.UINT64:
			return keyTypeOf(v)
		}
	}
	return 0
}

// keyArrowTypeOf is the type edges.Table.KeyArrowType records for a key
// column of type dt: dictionaries by their value type, and string views as
// utf8 (the keys are held as offsets and data).
func keyArrowTypeOf(dt arrow.DataType) arrow.DataType {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16:
		return arrow.PrimitiveTypes.Int32
	}
	if dt.ID() == arrow.STRING_VIEW {
		return arrow.BinaryTypes.String
	}
	return dt
}

// numeric says whether Arrow type id is an integer or floating point type.
func numeric(id arrow.Type) bool {
	switch id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

// weightOK says whether a column of type dt can hold edge weights.
func weightOK(dt arrow.DataType) bool {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		return numeric(d.ValueType.ID())
	}
	return numeric(dt.ID()) || isDecimal(dt)
}

// isDecimal says whether dt is one of Arrow's decimal types, whose values
// weights read as float64 (decimal.go).
func isDecimal(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// edgeColumns is where the edge columns are in a schema.
type edgeColumns struct {
	idx     [3]int // field index of src, dst, weight; weight -1 when not read
	names   [3]string
	types   [3]arrow.DataType
	keyType edges.KeyType
	// dstKey is the destination keys' type where it is not keyType's
	// (integers of other widths, unified by Appender.Finish); else 0.
	dstKey edges.KeyType
}

// resolveColumns finds the edge columns in a schema and checks their types.
func resolveColumns(name string, schema *arrow.Schema, cols edges.Columns) (edgeColumns, error) {
	fields := schema.Fields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	find := func(n string) int {
		for i, f := range fields {
			if f.Name == n {
				return i
			}
		}
		return -1
	}
	rc := edgeColumns{idx: [3]int{find(cols.Src), find(cols.Dst), -1}, names: [3]string{cols.Src, cols.Dst, cols.Weight}}
	if rc.idx[roleSrc] < 0 {
		return rc, edges.ErrMissingColumn(name, cols.Src, "source", "--src-col", names)
	}
	if rc.idx[roleDst] < 0 {
		return rc, edges.ErrMissingColumn(name, cols.Dst, "destination", "--dst-col", names)
	}
	if err := edges.CheckUnique(name, cols, names); err != nil {
		return rc, err
	}
	st, dt := fields[rc.idx[roleSrc]].Type, fields[rc.idx[roleDst]].Type
	sk, dk := keyTypeOf(st), keyTypeOf(dt)
	if sk == 0 {
		return rc, edges.ErrKeyType(name, cols.Src, arrowTypeName(st))
	}
	if dk == 0 {
		return rc, edges.ErrKeyType(name, cols.Dst, arrowTypeName(dt))
	}
	if _, _, ok := edges.CommonKeyType(sk, dk); !ok {
		return rc, edges.ErrKeyTypesDiffer(name, cols.Src, arrowTypeName(st), cols.Dst, arrowTypeName(dt))
	}
	rc.keyType = sk
	if dk != sk {
		rc.dstKey = dk
	}
	rc.types[roleSrc], rc.types[roleDst] = st, dt
	// A weight column the user named must be there, read or not (a
	// misspelt name would go unnoticed with an operator that uses none).
	if w := find(cols.Weight); w < 0 && cols.WeightExplicit {
		return rc, edges.ErrMissingColumn(name, cols.Weight, "weight", "--weight-col", names)
	} else if cols.ReadWeight && w >= 0 {
		if !weightOK(fields[w].Type) {
			return rc, edges.ErrWeightType(name, cols.Weight, arrowTypeName(fields[w].Type))
		}
		rc.idx[roleWeight] = w
		rc.types[roleWeight] = fields[w].Type
	}
	return rc, nil
}

// ncols is the number of edge columns read: 2, or 3 with weights.
func (rc *edgeColumns) ncols() int {
	if rc.idx[roleWeight] >= 0 {
		return 3
	}
	return 2
}
