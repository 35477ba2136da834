package ingest

import (
	"encoding/binary"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/apache/arrow/go/v17/arrow"
)

// Minimal, bounds-checked accessors for the Arrow IPC metadata the
// memory-mapped reader needs, after the Arrow format's File.fbs, Message.fbs
// and Schema.fbs:
//
//	table Footer { version: short; schema: Schema; dictionaries: [Block]; recordBatches: [Block]; ... }
//	struct Block { offset: long; metaDataLength: int; (pad 4) bodyLength: long; }       // 24 bytes
//	table Schema { endianness: short = Little; ... }
//	table Message { version: short; header_type: ubyte; header: (union); bodyLength: long; ... }
//	table RecordBatch { length: long; nodes: [FieldNode]; buffers: [Buffer];
//	                    compression: BodyCompression; variadicBufferCounts: [long]; }
//	struct FieldNode { length: long; null_count: long; }                                // 16 bytes
//	struct Buffer { offset: long; length: long; }                                       // 16 bytes
//
// A field's slot in its table's vtable is at byte 4+2·k. Every read checks
// its bounds, so a damaged file gives ok == false, never a panic.

// Field numbers.
const (
	fbFooterSchema        = 1
	fbFooterRecordBatches = 3
	fbSchemaEndianness    = 0
	fbMessageVersion      = 0
	fbMessageHeaderType   = 1
	fbMessageHeader       = 2
	fbBatchLength         = 0
	fbBatchNodes          = 1
	fbBatchBuffers        = 2
	fbBatchCompression    = 3
	fbBatchVariadic       = 4
	fbMessageBodyLength   = 3

	fbHeaderRecordBatch = 3 // MessageHeader union: Schema=1, DictionaryBatch=2, RecordBatch=3
	fbMetadataV5        = 4 // MetadataVersion: V1=0 ... V5=4
	fbEndianBig         = 1
)

// fbTable is a flatbuffers table whose reads are checked against its bytes.
type fbTable struct {
	t  flatbuffers.Table
	ok bool
}

func fbIn(b []byte, pos, size uint64) bool {
	return pos <= uint64(len(b)) && size <= uint64(len(b))-pos
}

// fbRoot is the root table of a flatbuffer.
func fbRoot(b []byte) fbTable {
	if !fbIn(b, 0, 4) {
		return fbTable{}
	}
	return fbAt(b, uint64(binary.LittleEndian.Uint32(b)))
}

// fbAt is the table at pos, with its vtable checked.
func fbAt(b []byte, pos uint64) fbTable {
	if !fbIn(b, pos, 4) {
		return fbTable{}
	}
	vt := int64(pos) - int64(int32(binary.LittleEndian.Uint32(b[pos:])))
	if vt < 0 || !fbIn(b, uint64(vt), 4) {
		return fbTable{}
	}
	vtLen := uint64(binary.LittleEndian.Uint16(b[vt:]))
	if vtLen < 4 || !fbIn(b, uint64(vt), vtLen) {
		return fbTable{}
	}
	return fbTable{t: flatbuffers.Table{Bytes: b, Pos: flatbuffers.UOffsetT(pos)}, ok: true}
}

// field is the position of field k's value holding size bytes, 0 when absent.
func (f fbTable) field(k int, size uint64) (uint64, bool) {
	if !f.ok {
		return 0, false
	}
	o := uint64(f.t.Offset(flatbuffers.VOffsetT(4 + 2*k)))
	if o == 0 {
		return 0, true
	}
	pos := uint64(f.t.Pos) + o
	return pos, fbIn(f.t.Bytes, pos, size)
}

func (f fbTable) int64(k int, def int64) (int64, bool) {
	pos, ok := f.field(k, 8)
	if !ok || pos == 0 {
		return def, ok
	}
	return int64(binary.LittleEndian.Uint64(f.t.Bytes[pos:])), true
}

func (f fbTable) int16(k int, def int16) (int16, bool) {
	pos, ok := f.field(k, 2)
	if !ok || pos == 0 {
		return def, ok
	}
	return int16(binary.LittleEndian.Uint16(f.t.Bytes[pos:])), true
}

func (f fbTable) uint8(k int, def uint8) (uint8, bool) {
	pos, ok := f.field(k, 1)
	if !ok || pos == 0 {
		return def, ok
	}
	return f.t.Bytes[pos], true
}

// table is the table field k points to; present is false when absent.
func (f fbTable) table(k int) (tab fbTable, present bool) {
	pos, ok := f.field(k, 4)
	if !ok || pos == 0 {
		return fbTable{ok: ok}, false
	}
	return fbAt(f.t.Bytes, pos+uint64(binary.LittleEndian.Uint32(f.t.Bytes[pos:]))), true
}

// fbVector is a vector of structs of a fixed size.
type fbVector struct {
	b    []byte // the elements
	pos  uint64 // where they start in the flatbuffer
	size int
	n    int
}

// vector is field k as a vector of elem-byte structs (empty when absent).
func (f fbTable) vector(k, elem int) (fbVector, bool) {
	pos, ok := f.field(k, 4)
	if !ok || pos == 0 {
		return fbVector{size: elem}, ok
	}
	b := f.t.Bytes
	start := pos + uint64(binary.LittleEndian.Uint32(b[pos:]))
	if !fbIn(b, start, 4) {
		return fbVector{}, false
	}
	n := uint64(binary.LittleEndian.Uint32(b[start:]))
	if !fbIn(b, start+4, n*uint64(elem)) {
		return fbVector{}, false
	}
	return fbVector{b: b[start+4 : start+4+n*uint64(elem)], pos: start + 4, size: elem, n: int(n)}, true
}

// i64 is the 8-byte integer at byte off of element i.
func (v fbVector) i64(i, off int) int64 {
	return int64(binary.LittleEndian.Uint64(v.b[i*v.size+off:]))
}

// i32 is the 4-byte integer at byte off of element i.
func (v fbVector) i32(i, off int) int32 {
	return int32(binary.LittleEndian.Uint32(v.b[i*v.size+off:]))
}

// ipcBlock is a Block of the footer: where a message is in the file.
type ipcBlock struct {
	offset int64
	meta   int32
	body   int64
}

// ipcFooter is what the mapped reader takes from the footer.
type ipcFooter struct {
	bigEndian bool
	batches   []ipcBlock
}

// Field numbers of the Schema.fbs tables the schema check walks.
const (
	fbFooterDictionaries = 2
	fbSchemaFields       = 1
	fbSchemaMetadata     = 2
	fbSchemaFeatures     = 3
	fbFieldName          = 0
	fbFieldTypeType      = 2
	fbFieldType          = 3
	fbTypeUnion          = 14 // Type union: Null=1, Int=2, ... Struct_=13, Union=14
	fbFieldDictionary    = 4
	fbFieldChildren      = 5
	fbFieldMetadata      = 6
	fbDictIndexType      = 1
	fbUnionTypeIDs       = 1
	fbKeyValueKey        = 0
	fbKeyValueValue      = 1
	fbHeaderDictionary   = 2
	fbDictBatchData      = 1
)

// checkIPCFile checks a whole IPC file's footer, schema and the metadata of
// every dictionary and record batch it lists, so that arrow's reader, which
// trusts them (it allocates what lengths in them say, and recurses into the
// schema without a limit), only ever sees metadata that is consistent with
// the file. It returns the footer, or what is wrong.
func checkIPCFile(data []byte) (ipcFooter, string) {
	var ft ipcFooter
	n := len(data)
	size := int64(int32(binary.LittleEndian.Uint32(data[n-10:])))
	if size <= 0 || size > int64(n-10-8) {
		return ft, "its footer length is wrong"
	}
	fb := data[int64(n-10)-size : n-10]
	root := fbRoot(fb)
	schema, present := root.table(fbFooterSchema)
	if !root.ok || !present || !schema.ok {
		return ft, "its footer is not a flatbuffer with a schema"
	}
	budget := 1 << 20
	if !fbCheckSchema(schema, &budget) {
		return ft, "its schema is damaged"
	}
	endian, _ := schema.int16(fbSchemaEndianness, 0)
	ft.bigEndian = endian == fbEndianBig
	dicts, ok1 := root.vector(fbFooterDictionaries, 24)
	batches, ok2 := root.vector(fbFooterRecordBatches, 24)
	if !ok1 || !ok2 {
		return ft, "its footer's block lists are damaged"
	}
	body := int64(n - 10 - int(size))
	for i := 0; i < dicts.n; i++ {
		blk := ipcBlock{offset: dicts.i64(i, 0), meta: dicts.i32(i, 8), body: dicts.i64(i, 16)}
		if _, problem := checkIPCMessage(data[:body], blk, fbHeaderDictionary); problem != "" {
			return ft, fmt.Sprintf("dictionary batch %d is damaged: %s", i, problem)
		}
	}
	ft.batches = make([]ipcBlock, batches.n)
	for i := range ft.batches {
		ft.batches[i] = ipcBlock{offset: batches.i64(i, 0), meta: batches.i32(i, 8), body: batches.i64(i, 16)}
	}
	return ft, ""
}

// fbString checks the string field k of t (absent is fine).
func fbString(t fbTable, k int) bool {
	pos, ok := t.field(k, 4)
	if !ok || pos == 0 {
		return ok
	}
	b := t.t.Bytes
	start := pos + uint64(binary.LittleEndian.Uint32(b[pos:]))
	if !fbIn(b, start, 4) {
		return false
	}
	return fbIn(b, start+4, uint64(binary.LittleEndian.Uint32(b[start:])))
}

// fbTables calls f on each table of the vector of tables in field k.
func fbTables(t fbTable, k int, f func(fbTable) bool) bool {
	vec, ok := t.vector(k, 4)
	if !ok {
		return false
	}
	for i := 0; i < vec.n; i++ {
		// Each element is an offset from its own position.
		elem := vec.pos + uint64(4*i)
		child := fbAt(t.t.Bytes, elem+uint64(binary.LittleEndian.Uint32(vec.b[4*i:])))
		if !child.ok || !f(child) {
			return false
		}
	}
	return true
}

func fbCheckMetadata(t fbTable, k int, budget *int) bool {
	return fbTables(t, k, func(kv fbTable) bool {
		*budget--
		return *budget > 0 && fbString(kv, fbKeyValueKey) && fbString(kv, fbKeyValueValue)
	})
}

func fbCheckSchema(s fbTable, budget *int) bool {
	if _, ok := s.vector(fbSchemaFeatures, 8); !ok {
		return false
	}
	return fbCheckMetadata(s, fbSchemaMetadata, budget) &&
		fbTables(s, fbSchemaFields, func(f fbTable) bool { return fbCheckField(f, 0, budget) })
}

func fbCheckField(f fbTable, depth int, budget *int) bool {
	*budget--
	if *budget <= 0 || depth > 64 || !fbString(f, fbFieldName) || !fbCheckMetadata(f, fbFieldMetadata, budget) {
		return false
	}
	if typ, present := f.table(fbFieldType); present {
		if !typ.ok {
			return false
		}
		// Of the type tables only Union holds a vector (typeIds).
		if tt, _ := f.uint8(fbFieldTypeType, 0); tt == fbTypeUnion {
			if _, ok := typ.vector(fbUnionTypeIDs, 4); !ok {
				return false
			}
		}
	}
	if dict, present := f.table(fbFieldDictionary); present {
		if !dict.ok {
			return false
		}
		if it, present := dict.table(fbDictIndexType); present && !it.ok {
			return false
		}
	}
	return fbTables(f, fbFieldChildren, func(c fbTable) bool { return fbCheckField(c, depth+1, budget) })
}

// checkIPCMessage checks a message block of the file: that the block lies
// in data (the file before its footer), its metadata is a flatbuffer with a
// header of the type wanted, and (for batches) that its buffers lie in its
// body and, compressed, do not claim to grow beyond reason.
func checkIPCMessage(data []byte, blk ipcBlock, header uint8) (ipcBatch, string) {
	var b ipcBatch
	size := int64(len(data))
	if blk.offset < 8 || blk.offset%8 != 0 || blk.meta < 8 || blk.body < 0 || blk.body%8 != 0 ||
		blk.offset > size || int64(blk.meta) > size-blk.offset || blk.body > size-blk.offset-int64(blk.meta) {
		return b, fmt.Sprintf("the footer places it at bytes %d to %d of %d", blk.offset, blk.offset+int64(blk.meta)+blk.body, size)
	}
	meta := data[blk.offset : blk.offset+int64(blk.meta)]
	prefix := 4
	if binary.LittleEndian.Uint32(meta) == 0xFFFFFFFF {
		prefix = 8
	}
	fbLen := int64(binary.LittleEndian.Uint32(meta[prefix-4:]))
	if fbLen > int64(len(meta)-prefix) {
		return b, "its metadata is longer than its block"
	}
	b, problem := parseIPCBatch(meta[prefix:int64(prefix)+fbLen], header)
	if problem != "" {
		return b, problem
	}
	if bl, ok := fbRoot(meta[prefix:int64(prefix)+fbLen]).int64(fbMessageBodyLength, 0); !ok || bl > blk.body || bl < 0 {
		return b, "its body is longer than its block"
	}
	body := data[blk.offset+int64(blk.meta) : blk.offset+int64(blk.meta)+blk.body]
	b.body = body
	var declared int64
	for i := 0; i < b.buffers.n; i++ {
		off, length := b.buffers.i64(i, 0), b.buffers.i64(i, 8)
		if off < 0 || length < 0 || off > int64(len(body)) || length > int64(len(body))-off {
			return b, fmt.Sprintf("buffer %d lies at bytes %d to %d of a body of %d", i, off, off+length, len(body))
		}
		if !b.compressed || length == 0 {
			continue
		}
		if length < 8 {
			return b, fmt.Sprintf("compressed buffer %d has %d bytes, too few for its length prefix", i, length)
		}
		if u := int64(binary.LittleEndian.Uint64(body[off:])); u != -1 {
			if u < 0 {
				return b, fmt.Sprintf("compressed buffer %d claims %d bytes", i, u)
			}
			declared += min(u, 1<<50)
		}
	}
	// A batch that claims to decompress to more than this is damaged: arrow
	// would allocate whatever it says.
	if limit := 256*int64(len(body)) + 64<<20; declared > limit {
		return b, fmt.Sprintf("its compressed buffers claim %d bytes uncompressed from a body of %d", declared, len(body))
	}
	for i := 0; i < b.nodes.n; i++ {
		if n, nulls := b.nodes.i64(i, 0), b.nodes.i64(i, 8); n < 0 || nulls < 0 || nulls > n || n > 1<<40 {
			return b, fmt.Sprintf("field node %d claims %d values, %d null", i, n, nulls)
		}
	}
	for i := 0; i < b.variadic.n; i++ {
		if c := b.variadic.i64(i, 0); c < 0 || c > int64(b.buffers.n) {
			return b, fmt.Sprintf("it claims %d variadic buffers", c)
		}
	}
	return b, ""
}

// ipcBatch is a record batch message's metadata.
type ipcBatch struct {
	version    int16
	length     int64
	compressed bool
	nodes      fbVector // FieldNode
	buffers    fbVector // Buffer
	variadic   fbVector // long
	body       []byte
}

// parseIPCBatch reads a record (or dictionary) batch message's flatbuffer.
func parseIPCBatch(fb []byte, header uint8) (ipcBatch, string) {
	var b ipcBatch
	msg := fbRoot(fb)
	if !msg.ok {
		return b, "its metadata is not a flatbuffer"
	}
	ht, ok := msg.uint8(fbMessageHeaderType, 0)
	if !ok {
		return b, "its message header is damaged"
	}
	if ht != header {
		return b, fmt.Sprintf("it is a message of type %d where type %d belongs", ht, header)
	}
	if b.version, ok = msg.int16(fbMessageVersion, 0); !ok {
		return b, "its message header is damaged"
	}
	rb, present := msg.table(fbMessageHeader)
	if !present || !rb.ok {
		return b, "its batch header is damaged"
	}
	if header == fbHeaderDictionary {
		if rb, present = rb.table(fbDictBatchData); !present || !rb.ok {
			return b, "its dictionary batch header is damaged"
		}
	}
	b.length, ok = rb.int64(fbBatchLength, 0)
	if comp, present := rb.table(fbBatchCompression); present {
		if !comp.ok {
			return b, "its compression header is damaged"
		}
		b.compressed = true
	}
	var ok1, ok2, ok3 bool
	b.nodes, ok1 = rb.vector(fbBatchNodes, 16)
	b.buffers, ok2 = rb.vector(fbBatchBuffers, 16)
	b.variadic, ok3 = rb.vector(fbBatchVariadic, 8)
	if !ok || !ok1 || !ok2 || !ok3 || b.length < 0 {
		return b, "its batch header is damaged"
	}
	return b, ""
}

// ipcCursor walks a record batch's field nodes and buffers in schema order.
type ipcCursor struct {
	node, buf, variadic int
	v5                  bool
	variadicCounts      fbVector
}

// skip moves the cursor over one field of type dt (and its children), as
// the IPC format lays them out. It returns false for a type it does not know
// (or a damaged batch), which sends the batch to arrow's reader.
func (c *ipcCursor) skip(dt arrow.DataType, depth int) bool {
	if depth > 64 {
		return false
	}
	c.node++
	validity := 1
	switch dt.ID() {
	case arrow.NULL:
		return true
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64,
		arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO,
		arrow.DURATION, arrow.FIXED_SIZE_BINARY, arrow.DICTIONARY:
		c.buf += 2
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		c.buf += 3
	case arrow.STRING_VIEW, arrow.BINARY_VIEW:
		if c.variadic >= c.variadicCounts.n {
			return false
		}
		n := c.variadicCounts.i64(c.variadic, 0)
		c.variadic++
		if n < 0 || n > 1<<30 {
			return false
		}
		c.buf += 2 + int(n)
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.FIXED_SIZE_LIST:
		switch dt.ID() {
		case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
			c.buf += 2
		case arrow.FIXED_SIZE_LIST:
			c.buf++
		default:
			c.buf += 3
		}
		elem, ok := dt.(interface{ Elem() arrow.DataType })
		return ok && c.skip(elem.Elem(), depth+1)
	case arrow.STRUCT:
		c.buf++
		for _, f := range dt.(*arrow.StructType).Fields() {
			if !c.skip(f.Type, depth+1) {
				return false
			}
		}
	case arrow.SPARSE_UNION, arrow.DENSE_UNION:
		if !c.v5 {
			c.buf += validity
		}
		c.buf++
		if dt.ID() == arrow.DENSE_UNION {
			c.buf++
		}
		for _, f := range dt.(arrow.UnionType).Fields() {
			if !c.skip(f.Type, depth+1) {
				return false
			}
		}
	case arrow.RUN_END_ENCODED:
		ree := dt.(*arrow.RunEndEncodedType)
		return c.skip(ree.RunEnds(), depth+1) && c.skip(ree.Encoded(), depth+1)
	case arrow.EXTENSION:
		c.node--
		return c.skip(dt.(arrow.ExtensionType).StorageType(), depth+1)
	default:
		return false
	}
	return true
}
