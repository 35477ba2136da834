package ingest

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/float16"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Reading Arrow record batches: from any array.RecordReader, from an Arrow
// IPC stream, batch by batch from an Arrow Flight DoPut (Appender), and the
// batches of a memory-mapped IPC file (arrow.go).
//
// Every batch's edge columns are seen as raw Arrow buffers (rawCol): the
// buffers of an arrow.Array, or a column's place in a mapped file. A column
// that has no nulls to drop and the right type becomes the chunk's slice
// over those buffers (the array is retained until edges.Table.Release);
// otherwise it is converted or gathered into buffers from Options.Alloc.
// Large batches are cut into chunks of at most recChunkRows rows, so that a
// read checks its context between them and later stages get pieces to work
// on in parallel.

// recChunkRows is the most rows a chunk made from a record batch holds.
const recChunkRows = 1 << 22

// Edge column roles: index into the appender's columns.
const (
	recSrc = iota
	recDst
	recWeight
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

// recKeyType is the KeyType a column of Arrow type dt reads as, or 0 when
// it cannot hold vertex keys.
func recKeyType(dt arrow.DataType) edges.KeyType {
	switch dt.ID() {
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
			return recKeyType(v)
		}
	}
	return 0
}

// recKeyArrowType is the type edges.Table.KeyArrowType records for a key
// column of type dt: dictionaries by their value type, and string views as
// utf8 (the keys are held as offsets and data).
func recKeyArrowType(dt arrow.DataType) arrow.DataType {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	if dt.ID() == arrow.STRING_VIEW {
		return arrow.BinaryTypes.String
	}
	return dt
}

// recNumeric says whether Arrow type id is an integer or floating point type.
func recNumeric(id arrow.Type) bool {
	switch id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

// recWeightOK says whether a column of type dt can hold edge weights.
func recWeightOK(dt arrow.DataType) bool {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		return recNumeric(d.ValueType.ID())
	}
	return recNumeric(dt.ID())
}

// recColumns is where the edge columns are in a schema.
type recColumns struct {
	idx     [3]int // field index of src, dst, weight; weight -1 when not read
	names   [3]string
	types   [3]arrow.DataType
	keyType edges.KeyType
}

// resolveColumns finds the edge columns in a schema and checks their types.
func resolveColumns(name string, schema *arrow.Schema, cols edges.Columns) (recColumns, error) {
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
	rc := recColumns{idx: [3]int{find(cols.Src), find(cols.Dst), -1}, names: [3]string{cols.Src, cols.Dst, cols.Weight}}
	if rc.idx[recSrc] < 0 {
		return rc, edges.ErrMissingColumn(name, cols.Src, "source", "--src-col", names)
	}
	if rc.idx[recDst] < 0 {
		return rc, edges.ErrMissingColumn(name, cols.Dst, "destination", "--dst-col", names)
	}
	if err := edges.CheckUnique(name, cols, names); err != nil {
		return rc, err
	}
	st, dt := fields[rc.idx[recSrc]].Type, fields[rc.idx[recDst]].Type
	sk, dk := recKeyType(st), recKeyType(dt)
	if sk == 0 {
		return rc, edges.ErrKeyType(name, cols.Src, arrowTypeName(st))
	}
	if dk == 0 {
		return rc, edges.ErrKeyType(name, cols.Dst, arrowTypeName(dt))
	}
	if sk != dk {
		return rc, edges.ErrKeyTypesDiffer(name, cols.Src, arrowTypeName(st), cols.Dst, arrowTypeName(dt))
	}
	rc.keyType = sk
	rc.types[recSrc], rc.types[recDst] = st, dt
	if cols.ReadWeight {
		w := find(cols.Weight)
		switch {
		case w < 0 && cols.WeightExplicit:
			return rc, edges.ErrMissingColumn(name, cols.Weight, "weight", "--weight-col", names)
		case w >= 0:
			if !recWeightOK(fields[w].Type) {
				return rc, edges.ErrWeightType(name, cols.Weight, arrowTypeName(fields[w].Type))
			}
			rc.idx[recWeight] = w
			rc.types[recWeight] = fields[w].Type
		}
	}
	return rc, nil
}

// ncols is the number of edge columns read: 2, or 3 with weights.
func (rc *recColumns) ncols() int {
	if rc.idx[recWeight] >= 0 {
		return 3
	}
	return 2
}

// Appender builds an edges.Table from Arrow record batches as they arrive: an
// Arrow Flight DoPut, an IPC stream, any array.RecordReader. The schema is
// checked once, by NewAppender, and each batch by Append. Columns without
// nulls to drop and of the right type are not copied: the table keeps the
// batch's arrays (retained) and points into them. After an error from
// Append the Appender holds what it had; Release frees it.
type Appender struct {
	ctx    context.Context
	name   string
	opts   edges.Options
	schema *arrow.Schema
	cols   recColumns
	t      *edges.Table
	bytes  int64
	// held says which of the current batch's arrays the table retained.
	held [3]bool
	// mapAliased says a chunk points into a mapped file (arr == nil).
	mapAliased bool
	// copyRecords says records' buffers are copied, never aliased.
	copyRecords bool
	batches     int
	done        bool
	idx         []int64 // scratch: dictionary indices
}

// NewAppender starts a table from record batches of the given schema. name
// is the input as the user knows it, for messages.
func NewAppender(name string, schema *arrow.Schema, opts edges.Options) (*Appender, error) {
	return newAppender(context.Background(), name, schema, opts)
}

func newAppender(ctx context.Context, name string, schema *arrow.Schema, opts edges.Options) (*Appender, error) {
	opts.Columns = opts.Columns.WithDefaults()
	if schema == nil {
		return nil, usererr.InFile(name, "the input has no schema", "send an Arrow schema before the record batches")
	}
	rc, err := resolveColumns(name, schema, opts.Columns)
	if err != nil {
		return nil, err
	}
	a := &Appender{ctx: ctx, name: name, opts: opts, schema: schema, cols: rc}
	a.t = &edges.Table{
		Name:         name,
		Columns:      opts.Columns,
		KeyType:      rc.keyType,
		KeyArrowType: recKeyArrowType(rc.types[recSrc]),
		HasWeight:    rc.idx[recWeight] >= 0,
		Skipped:      edges.Skips{},
	}
	return a, nil
}

// Rows is the number of input rows appended so far, skipped ones included.
func (a *Appender) Rows() int64 { return a.t.RowsRead }

// Bytes is the memory the table holds so far: the buffers of the batches it
// retained and the buffers it allocated.
func (a *Appender) Bytes() int64 { return a.bytes }

// Release frees what the Appender holds, unless Finish handed it over.
func (a *Appender) Release() {
	if !a.done && a.t != nil {
		a.t.Release()
	}
	a.done = true
}

// Finish ends the table and hands it over: the caller releases it.
func (a *Appender) Finish() (*edges.Table, error) {
	if a.done {
		return nil, usererr.Newf(usererr.Internal, "%s: Appender.Finish after Finish or Release", a.name)
	}
	a.done = true
	return a.t, nil
}

// Append adds one record batch. The caller keeps its reference to rec and
// may release it as soon as Append returns.
func (a *Appender) Append(rec arrow.Record) error {
	if a.done {
		return usererr.Newf(usererr.Internal, "%s: Appender.Append after Finish or Release", a.name)
	}
	if err := a.ctx.Err(); err != nil {
		return err
	}
	rs := rec.Schema()
	var cols [3]rawCol
	nc := a.cols.ncols()
	for role := 0; role < nc; role++ {
		i := a.cols.idx[role]
		if !rs.Equal(a.schema) {
			// A batch of another schema must have the edge columns, by
			// name, with the same types.
			i = -1
			for j, f := range rs.Fields() {
				if f.Name == a.cols.names[role] {
					i = j
					break
				}
			}
			if i < 0 {
				return usererr.InFile(a.name, fmt.Sprintf("record batch %d has no column %q, which the schema announced", a.batches, a.cols.names[role]),
					"send batches of one schema")
			}
			if got := rs.Field(i).Type; !arrow.TypeEqual(got, a.cols.types[role]) {
				return &usererr.Error{Kind: usererr.Input, File: a.name, Column: a.cols.names[role], Row: -1,
					Problem: fmt.Sprintf("record batch %d has the column as %s where the schema announced %s", a.batches, arrowTypeName(got), arrowTypeName(a.cols.types[role])),
					Fix:     "send batches of one schema"}
			}
		}
		arr := rec.Column(i)
		if int64(arr.Len()) != rec.NumRows() {
			return a.corrupt(role, fmt.Sprintf("record batch %d has %d rows but %d values in the column", a.batches, rec.NumRows(), arr.Len()))
		}
		cols[role] = rawFromData(arr.Data(), arr, role)
	}
	return a.appendRaw(cols[:nc], int(rec.NumRows()))
}

// appendRaw adds a batch of n rows given as raw columns.
func (a *Appender) appendRaw(cols []rawCol, n int) error {
	a.held = [3]bool{}
	first := a.t.RowsRead
	var sub [3]rawCol
	for lo := 0; lo < n; lo += recChunkRows {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+recChunkRows, n)
		for c := range cols {
			sub[c] = cols[c].slice(lo, hi)
		}
		if err := a.appendChunk(sub[:len(cols)], hi-lo, first+int64(lo)); err != nil {
			return err
		}
	}
	a.t.RowsRead += int64(n)
	a.batches++
	return nil
}

// appendChunk makes one chunk of n rows, the first being input row first.
func (a *Appender) appendChunk(cols []rawCol, n int, first int64) error {
	if n == 0 {
		return nil
	}
	for c := range cols {
		if err := a.checkNulls(&cols[c]); err != nil {
			return err
		}
	}
	var sel []int32 // positions kept, when some were dropped
	var rows []int64
	anyNulls := false
	for c := range cols {
		anyNulls = anyNulls || cols[c].mayHaveNulls()
	}
	if anyNulls {
		var skips [3]int64
		for i := 0; i < n; i++ {
			null := -1
			for c := range cols {
				if cols[c].isNull(i) {
					null = c
					break
				}
			}
			if null < 0 {
				if sel != nil {
					sel = append(sel, int32(i))
					rows = append(rows, first+int64(i))
				}
				continue
			}
			if !a.opts.SkipInvalid {
				if null == recWeight {
					return edges.ErrNullWeight(a.name, a.cols.names[null], first+int64(i))
				}
				return edges.ErrNullKey(a.name, a.cols.names[null], first+int64(i))
			}
			skips[null]++
			if sel == nil {
				sel = make([]int32, i, n)
				rows = make([]int64, i, n)
				for k := range sel {
					sel[k] = int32(k)
					rows[k] = first + int64(k)
				}
			}
		}
		for c, k := range skips {
			if k == 0 {
				continue
			}
			if c == recWeight {
				a.t.Skipped.Add(edges.SkipNullWeight(a.cols.names[c]), k)
			} else {
				a.t.Skipped.Add(edges.SkipNullKey(a.cols.names[c]), k)
			}
		}
	}
	m := n
	if sel != nil {
		m = len(sel)
		if m == 0 {
			return nil
		}
	}
	ch := edges.Chunk{FirstRow: first, Rows: rows}
	var err error
	if ch.Src, err = a.keys(&cols[recSrc], sel, m); err != nil {
		return err
	}
	if ch.Dst, err = a.keys(&cols[recDst], sel, m); err != nil {
		return err
	}
	if len(cols) > recWeight {
		if ch.Weight, err = a.weights(&cols[recWeight], sel, m); err != nil {
			return err
		}
	}
	a.t.Chunks = append(a.t.Chunks, ch)
	return nil
}

// checkNulls checks that a column's validity bitmaps cover its rows.
func (a *Appender) checkNulls(c *rawCol) error {
	if c.nulls != 0 && c.valid != nil && len(c.valid)*8 < c.off+c.n {
		return a.corrupt(c.role, "the validity bitmap is shorter than the column")
	}
	if c.dict != nil {
		d := c.dict
		if d.nulls != 0 && d.valid != nil && len(d.valid)*8 < d.off+d.n {
			return a.corrupt(c.role, "the dictionary's validity bitmap is shorter than the dictionary")
		}
	}
	return nil
}

// corrupt reports a column whose buffers do not hold what its type says.
func (a *Appender) corrupt(role int, detail string) error {
	return &usererr.Error{Kind: usererr.Input, File: a.name, Column: a.cols.names[role], Row: -1,
		Problem: "the Arrow data is corrupt: " + detail,
		Fix:     "re-export the input; it is damaged or was cut short"}
}

// mayAlias says whether a chunk may point into c's buffers: those of a
// mapped file, or of a record unless the Appender copies records (they are
// in memory other than Options.Alloc's).
func (a *Appender) mayAlias(c *rawCol) bool {
	return c.arr == nil || !a.copyRecords
}

// hold keeps c's buffers alive as long as the table: the array is retained
// once per batch.
func (a *Appender) hold(c *rawCol) {
	if c.arr == nil {
		a.mapAliased = true
		return
	}
	if a.held[c.role] {
		return
	}
	a.held[c.role] = true
	arr := c.arr
	arr.Retain()
	a.t.OnRelease(arr.Release)
	for _, b := range arr.Data().Buffers() {
		if b != nil {
			a.bytes += int64(b.Len())
		}
	}
}

// recAlloc is a slice of n T from the table's allocator, freed with it.
func recAlloc[T any](a *Appender, n int) []T {
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
	v = recAlloc[T](a, c.n)
	copy(alloc.Bytes(v), raw)
	return v, false, nil
}

// recFixed is a fixed-width key column: c's own buffer when nothing is
// dropped, else the kept values gathered.
func recFixed[T any](a *Appender, c *rawCol, sel []int32, m int) ([]T, error) {
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
		out := recAlloc[T](a, m)
		copy(out, v)
		return out, nil
	}
	out := recAlloc[T](a, m)
	for k, i := range sel {
		out[k] = v[i]
	}
	return out, nil
}

// recNumber is a type weights convert from.
type recNumber interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// recToFloat converts src (or its positions sel) to float64.
func recToFloat[S recNumber](dst []float64, src []S, sel []int32) {
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

func recF16ToFloat(dst []float64, src []float16.Num, sel []int32) {
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
func convertWeights[S recNumber](a *Appender, c *rawCol, dst []float64, sel []int32) error {
	v, _, err := fixedView[S](a, c)
	if err != nil {
		return err
	}
	recToFloat(dst, v, sel)
	return nil
}

// weights is the weight column as float64.
func (a *Appender) weights(c *rawCol, sel []int32, m int) ([]float64, error) {
	id := c.typ.ID()
	if id == arrow.FLOAT64 {
		return recFixed[float64](a, c, sel, m)
	}
	if id == arrow.DICTIONARY {
		return a.dictWeights(c, sel, m)
	}
	out := recAlloc[float64](a, m)
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
			recF16ToFloat(out, v, sel)
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
		err = recIndices[int8](a, c, idx, sel)
	case arrow.UINT8:
		err = recIndices[uint8](a, c, idx, sel)
	case arrow.INT16:
		err = recIndices[int16](a, c, idx, sel)
	case arrow.UINT16:
		err = recIndices[uint16](a, c, idx, sel)
	case arrow.INT32:
		err = recIndices[int32](a, c, idx, sel)
	case arrow.UINT32:
		err = recIndices[uint32](a, c, idx, sel)
	case arrow.INT64:
		err = recIndices[int64](a, c, idx, sel)
	case arrow.UINT64:
		err = recIndices[uint64](a, c, idx, sel)
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

func recIndices[I int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64](a *Appender, c *rawCol, idx []int64, sel []int32) error {
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
	out := recAlloc[float64](a, m)
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

func dictToFloat[S recNumber](a *Appender, d *rawCol, out []float64, idx []int64) error {
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
	out := recAlloc[T](a, m)
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
	case arrow.INT32:
		k.Int32, err = recFixed[int32](a, c, sel, m)
	case arrow.INT64:
		k.Int64, err = recFixed[int64](a, c, sel, m)
	case arrow.UINT32:
		k.Uint32, err = recFixed[uint32](a, c, sel, m)
	case arrow.UINT64:
		k.Uint64, err = recFixed[uint64](a, c, sel, m)
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
		offs = recAlloc[int64](a, c.n+1)
		copy(alloc.Bytes(offs), raw)
	default:
		offs = recAlloc[int64](a, c.n+1)
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
	out := &edges.Strings{Offsets: recAlloc[int64](a, m+1), Data: recAlloc[byte](a, int(total))}
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
	var total int64
	for k := 0; k < m; k++ {
		total += int64(sv.ValueLen(at(k)))
	}
	out := &edges.Strings{Offsets: recAlloc[int64](a, m+1), Data: recAlloc[byte](a, int(total))}
	var end int64
	for k := 0; k < m; k++ {
		end += int64(copy(out.Data[end:], sv.Value(at(k))))
		out.Offsets[k+1] = end
	}
	return out, nil
}

// ReadRecords reads an edge table from a record reader. name is the input
// as the user knows it, for messages.
func ReadRecords(ctx context.Context, name string, rdr array.RecordReader, opts edges.Options) (*edges.Table, error) {
	return readRecords(ctx, name, "the Arrow data", rdr, opts)
}

// readRecords is ReadRecords; what names the input in messages ("the Arrow
// IPC stream").
func readRecords(ctx context.Context, name, what string, rdr array.RecordReader, opts edges.Options) (*edges.Table, error) {
	a, err := newAppender(ctx, name, rdr.Schema(), opts)
	if err != nil {
		return nil, err
	}
	if err := appendAll(a, what, rdr); err != nil {
		a.Release()
		return nil, err
	}
	return a.Finish()
}

// appendAll appends every record of rdr.
func appendAll(a *Appender, what string, rdr array.RecordReader) error {
	for rdr.Next() {
		if err := a.Append(rdr.Record()); err != nil {
			return err
		}
	}
	if err := a.ctx.Err(); err != nil {
		return err
	}
	if err := rdr.Err(); err != nil {
		return usererr.InFile(a.name, errBatch(what, a.batches, err), "the input is damaged or was cut short; re-export it")
	}
	return nil
}

// errBatch says what arrow's reader found wrong with record batch i of
// what ("the Arrow IPC stream"), in a user's words: its panics on damaged
// buffers (which it reports as "unknown error while reading: runtime
// error: slice bounds out of range") as buffers that do not match the
// batch's header, an end of input as a cut, and its other errors without
// the package prefixes.
func errBatch(what string, i int, err error) string {
	problem := fmt.Sprintf("%s is corrupt or truncated at record batch %d", what, i)
	s := err.Error()
	for _, p := range []string{"arrow/ipc: ", "unknown error while reading: ", "arrow/array: ", "arrow: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	switch {
	case strings.Contains(s, "runtime error") || strings.Contains(s, "out of range") || strings.Contains(s, "nil pointer"):
		return problem + " (its buffers do not match its header)"
	case strings.Contains(s, "EOF"):
		return problem + " (the input ends inside the batch)"
	}
	return problem + " (" + edges.Echo(s) + ")"
}
