package arrowipc

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
)

// The Arrow IPC metadata the memory-mapped reader needs, and the checks of a
// file's metadata before arrow's reader sees it, after the Arrow format's
// File.fbs, Message.fbs and Schema.fbs:
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
// The reads go through flatbuf, which checks their bounds, so that a damaged
// file gives an error, never a panic.

// Field numbers (a field's index in its table).
const (
	footerSchema        = 1
	footerRecordBatches = 3
	schemaEndianness    = 0
	messageVersion      = 0
	messageHeaderType   = 1
	messageHeader       = 2
	batchLength         = 0
	batchNodes          = 1
	batchBuffers        = 2
	batchCompression    = 3
	batchVariadic       = 4
	messageBodyLength   = 3

	headerRecordBatch = 3 // MessageHeader union: Schema=1, DictionaryBatch=2, RecordBatch=3
	metadataV5        = 4 // MetadataVersion: V1=0 ... V5=4
	endianBig         = 1
)

// fileBlock is a Block of the footer: where a message is in the file.
type fileBlock struct {
	offset int64
	meta   int32
	body   int64
}

// fileFooter is what the mapped reader takes from the footer.
type fileFooter struct {
	bigEndian bool
	batches   []fileBlock
}

// Field numbers of the Schema.fbs tables the schema check walks.
const (
	footerDictionaries = 2
	schemaFields       = 1
	schemaMetadata     = 2
	schemaFeatures     = 3
	fieldName          = 0
	fieldTypeType      = 2
	fieldType          = 3
	typeUnion          = 14 // Type union: Null=1, Int=2, ... Struct_=13, Union=14
	fieldDictionary    = 4
	fieldChildren      = 5
	fieldMetadata      = 6
	dictIndexType      = 1
	unionTypeIDs       = 1
	keyValueKey        = 0
	keyValueValue      = 1
	headerDictionary   = 2
	dictBatchData      = 1
)

// checkFile checks a whole IPC file's footer, schema and the metadata of
// every dictionary and record batch it lists, so that arrow's reader, which
// trusts them (it allocates what lengths in them say, and recurses into the
// schema without a limit), only ever sees metadata that is consistent with
// the file. It returns the footer, or what is wrong.
func checkFile(data []byte) (fileFooter, string) {
	var ft fileFooter
	n := len(data)
	size := int64(int32(binary.LittleEndian.Uint32(data[n-10:])))
	if size <= 0 || size > int64(n-10-8) {
		return ft, "its footer length is wrong"
	}
	fb := data[int64(n-10)-size : n-10]
	root := flatbuf.Root(fb)
	schema, present := root.Table(footerSchema)
	if !root.OK || !present || !schema.OK {
		return ft, "its footer is not a flatbuffer with a schema"
	}
	budget := 1 << 20
	if !checkSchema(schema, &budget) {
		return ft, "its schema is damaged"
	}
	endian, _ := schema.Int16(schemaEndianness, 0)
	ft.bigEndian = endian == endianBig
	dicts, ok1 := root.Vector(footerDictionaries, 24)
	batches, ok2 := root.Vector(footerRecordBatches, 24)
	if !ok1 || !ok2 {
		return ft, "its footer's block lists are damaged"
	}
	body := int64(n - 10 - int(size))
	for i := 0; i < dicts.N; i++ {
		blk := fileBlock{offset: dicts.I64(i, 0), meta: dicts.I32(i, 8), body: dicts.I64(i, 16)}
		if _, problem := checkMessage(data[:body], blk, headerDictionary); problem != "" {
			return ft, fmt.Sprintf("dictionary batch %d is damaged: %s", i, problem)
		}
	}
	ft.batches = make([]fileBlock, batches.N)
	for i := range ft.batches {
		ft.batches[i] = fileBlock{offset: batches.I64(i, 0), meta: batches.I32(i, 8), body: batches.I64(i, 16)}
	}
	return ft, ""
}

func checkMetadata(t flatbuf.Table, k int, budget *int) bool {
	return flatbuf.EachTable(t, k, func(kv flatbuf.Table) bool {
		*budget--
		return *budget > 0 && flatbuf.CheckString(kv, keyValueKey) && flatbuf.CheckString(kv, keyValueValue)
	})
}

func checkSchema(s flatbuf.Table, budget *int) bool {
	if _, ok := s.Vector(schemaFeatures, 8); !ok {
		return false
	}
	return checkMetadata(s, schemaMetadata, budget) &&
		flatbuf.EachTable(s, schemaFields, func(f flatbuf.Table) bool { return checkField(f, 0, budget) })
}

func checkField(f flatbuf.Table, depth int, budget *int) bool {
	*budget--
	if *budget <= 0 || depth > 64 || !flatbuf.CheckString(f, fieldName) || !checkMetadata(f, fieldMetadata, budget) {
		return false
	}
	if typ, present := f.Table(fieldType); present {
		if !typ.OK {
			return false
		}
		// Of the type tables only Union holds a vector (typeIds).
		if tt, _ := f.Uint8(fieldTypeType, 0); tt == typeUnion {
			if _, ok := typ.Vector(unionTypeIDs, 4); !ok {
				return false
			}
		}
	}
	if dict, present := f.Table(fieldDictionary); present {
		if !dict.OK {
			return false
		}
		if it, present := dict.Table(dictIndexType); present && !it.OK {
			return false
		}
	}
	return flatbuf.EachTable(f, fieldChildren, func(c flatbuf.Table) bool { return checkField(c, depth+1, budget) })
}

// checkMessage checks a message block of the file: that the block lies
// in data (the file before its footer), its metadata is a flatbuffer with a
// header of the type wanted, and (for batches) that its buffers lie in its
// body and, compressed, do not claim to grow beyond reason.
func checkMessage(data []byte, blk fileBlock, header uint8) (batchMeta, string) {
	var b batchMeta
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
	b, problem := parseBatch(meta[prefix:int64(prefix)+fbLen], header)
	if problem != "" {
		return b, problem
	}
	if bl, ok := flatbuf.Root(meta[prefix:int64(prefix)+fbLen]).Int64(messageBodyLength, 0); !ok || bl > blk.body || bl < 0 {
		return b, "its body is longer than its block"
	}
	body := data[blk.offset+int64(blk.meta) : blk.offset+int64(blk.meta)+blk.body]
	b.body = body
	var declared int64
	for i := 0; i < b.buffers.N; i++ {
		off, length := b.buffers.I64(i, 0), b.buffers.I64(i, 8)
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
	for i := 0; i < b.nodes.N; i++ {
		if n, nulls := b.nodes.I64(i, 0), b.nodes.I64(i, 8); n < 0 || nulls < 0 || nulls > n || n > 1<<40 {
			return b, fmt.Sprintf("field node %d claims %d values, %d null", i, n, nulls)
		}
	}
	for i := 0; i < b.variadic.N; i++ {
		if c := b.variadic.I64(i, 0); c < 0 || c > int64(b.buffers.N) {
			return b, fmt.Sprintf("it claims %d variadic buffers", c)
		}
	}
	return b, ""
}

// batchMeta is a record batch message's metadata.
type batchMeta struct {
	version    int16
	length     int64
	compressed bool
	nodes      flatbuf.Vector // FieldNode
	buffers    flatbuf.Vector // Buffer
	variadic   flatbuf.Vector // long
	body       []byte
}

// parseBatch reads a record (or dictionary) batch message's flatbuffer.
func parseBatch(fb []byte, header uint8) (batchMeta, string) {
	var b batchMeta
	msg := flatbuf.Root(fb)
	if !msg.OK {
		return b, "its metadata is not a flatbuffer"
	}
	ht, ok := msg.Uint8(messageHeaderType, 0)
	if !ok {
		return b, "its message header is damaged"
	}
	if ht != header {
		return b, fmt.Sprintf("it is a message of type %d where type %d belongs", ht, header)
	}
	if b.version, ok = msg.Int16(messageVersion, 0); !ok {
		return b, "its message header is damaged"
	}
	rb, present := msg.Table(messageHeader)
	if !present || !rb.OK {
		return b, "its batch header is damaged"
	}
	if header == headerDictionary {
		if rb, present = rb.Table(dictBatchData); !present || !rb.OK {
			return b, "its dictionary batch header is damaged"
		}
	}
	b.length, ok = rb.Int64(batchLength, 0)
	if comp, present := rb.Table(batchCompression); present {
		if !comp.OK {
			return b, "its compression header is damaged"
		}
		b.compressed = true
	}
	var ok1, ok2, ok3 bool
	b.nodes, ok1 = rb.Vector(batchNodes, 16)
	b.buffers, ok2 = rb.Vector(batchBuffers, 16)
	b.variadic, ok3 = rb.Vector(batchVariadic, 8)
	if !ok || !ok1 || !ok2 || !ok3 || b.length < 0 {
		return b, "its batch header is damaged"
	}
	return b, ""
}

// bufferCursor walks a record batch's field nodes and buffers in schema order.
type bufferCursor struct {
	node, buf, variadic int
	v5                  bool
	variadicCounts      flatbuf.Vector
}

// skip moves the cursor over one field of type dt (and its children), as
// the IPC format lays them out. It returns false for a type it does not know
// (or a damaged batch), which sends the batch to arrow's reader.
func (c *bufferCursor) skip(dt arrow.DataType, depth int) bool {
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
		if c.variadic >= c.variadicCounts.N {
			return false
		}
		n := c.variadicCounts.I64(c.variadic, 0)
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
