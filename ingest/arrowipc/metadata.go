package arrowipc

import (
	"encoding/binary"
	"fmt"

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

	headerSchema      = 1 // MessageHeader union: Schema=1, DictionaryBatch=2, RecordBatch=3
	headerRecordBatch = 3
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
	layout    *schemaLayout
}

// Field numbers of the tables a file's check reads beyond those above.
const (
	footerDictionaries = 2
	headerDictionary   = 2
	dictBatchData      = 1
)

// The shapes of the Arrow IPC metadata tables (File.fbs, Schema.fbs,
// Message.fbs), as far as arrow's readers read them: flatbuf.Check walks a
// footer or a message by them before arrow's reader, whose generated
// accessors do not check bounds, sees it. A field's index is its number.
var (
	keyValueShape = &flatbuf.Shape{Fields: []flatbuf.Slot{{Kind: flatbuf.String}, {Kind: flatbuf.String}}}
	intShape      = &flatbuf.Shape{Fields: []flatbuf.Slot{scalar(4), scalar(1)}} // bitWidth, is_signed
	dictEncShape  = &flatbuf.Shape{Fields: []flatbuf.Slot{
		scalar(8), {Kind: flatbuf.TableRef, Table: intShape, Required: true}, scalar(1), scalar(2), // id, indexType, isOrdered, dictionaryKind
	}}
	fieldShape  = &flatbuf.Shape{}
	schemaShape = &flatbuf.Shape{Fields: []flatbuf.Slot{
		scalar(2), {Kind: flatbuf.TableVector, Table: fieldShape}, // endianness, fields
		{Kind: flatbuf.TableVector, Table: keyValueShape}, {Kind: flatbuf.StructVector, Size: 8}, // custom_metadata, features
	}}
	footerShape = &flatbuf.Shape{Fields: []flatbuf.Slot{
		scalar(2), {Kind: flatbuf.TableRef, Table: schemaShape, Required: true}, // version, schema
		{Kind: flatbuf.StructVector, Size: 24}, {Kind: flatbuf.StructVector, Size: 24}, // dictionaries, recordBatches
		{Kind: flatbuf.TableVector, Table: keyValueShape}, // custom_metadata
	}}
	recordBatchShape = &flatbuf.Shape{Fields: []flatbuf.Slot{
		scalar(8), {Kind: flatbuf.StructVector, Size: 16}, {Kind: flatbuf.StructVector, Size: 16}, // length, nodes, buffers
		{Kind: flatbuf.TableRef, Table: &flatbuf.Shape{Fields: []flatbuf.Slot{scalar(1), scalar(1)}}}, // compression: codec, method
		{Kind: flatbuf.StructVector, Size: 8}, // variadicBufferCounts
	}}
	dictBatchShape = &flatbuf.Shape{Fields: []flatbuf.Slot{
		scalar(8), {Kind: flatbuf.TableRef, Table: recordBatchShape, Required: true}, scalar(1), // id, data, isDelta
	}}
	messageShape = &flatbuf.Shape{Fields: []flatbuf.Slot{
		scalar(2), scalar(1), {Kind: flatbuf.Union, Tag: messageHeaderType, Union: headerShape, Required: true}, // version, header_type, header
		scalar(8), {Kind: flatbuf.TableVector, Table: keyValueShape}, // bodyLength, custom_metadata
	}}
)

func init() {
	// A field's children are fields: the shape refers to itself.
	fieldShape.Fields = []flatbuf.Slot{
		{Kind: flatbuf.String}, scalar(1), scalar(1), // name, nullable, type_type
		{Kind: flatbuf.Union, Tag: fieldTypeType, Union: typeShape},                                   // type
		{Kind: flatbuf.TableRef, Table: dictEncShape}, {Kind: flatbuf.TableVector, Table: fieldShape}, // dictionary, children
		{Kind: flatbuf.TableVector, Table: keyValueShape}, // custom_metadata
	}
}

func scalar(size int) flatbuf.Slot { return flatbuf.Slot{Kind: flatbuf.Scalar, Size: size} }

// fieldTypeType is Field's type_type: the tag of its type union.
const fieldTypeType = 2

// typeShapes are the shapes of the type tables by their tag in the Type
// union (Null=1, Int=2, FloatingPoint=3, ... LargeListView=26); the tables
// without fields are not listed.
var typeShapes = map[uint8]*flatbuf.Shape{
	2:  intShape,
	3:  {Fields: []flatbuf.Slot{scalar(2)}},                                        // FloatingPoint: precision
	7:  {Fields: []flatbuf.Slot{scalar(4), scalar(4), scalar(4)}},                  // Decimal: precision, scale, bitWidth
	8:  {Fields: []flatbuf.Slot{scalar(2)}},                                        // Date: unit
	9:  {Fields: []flatbuf.Slot{scalar(2), scalar(4)}},                             // Time: unit, bitWidth
	10: {Fields: []flatbuf.Slot{scalar(2), {Kind: flatbuf.String}}},                // Timestamp: unit, timezone
	11: {Fields: []flatbuf.Slot{scalar(2)}},                                        // Interval: unit
	14: {Fields: []flatbuf.Slot{scalar(2), {Kind: flatbuf.StructVector, Size: 4}}}, // Union: mode, typeIds
	15: {Fields: []flatbuf.Slot{scalar(4)}},                                        // FixedSizeBinary: byteWidth
	16: {Fields: []flatbuf.Slot{scalar(4)}},                                        // FixedSizeList: listSize
	17: {Fields: []flatbuf.Slot{scalar(1)}},                                        // Map: keysSorted
	18: {Fields: []flatbuf.Slot{scalar(2)}},                                        // Duration: unit
}

func typeShape(tag uint8) *flatbuf.Shape { return typeShapes[tag] }

// headerShape is the shape of a message's header by its type.
func headerShape(tag uint8) *flatbuf.Shape {
	switch tag {
	case headerSchema:
		return schemaShape
	case headerDictionary:
		return dictBatchShape
	case headerRecordBatch:
		return recordBatchShape
	}
	return nil
}

// checkFile checks a whole IPC file's footer, schema and the metadata of
// every dictionary and record batch it lists, so that arrow's reader, which
// trusts them (it allocates what lengths in them say, reads fields where
// their offsets point, and recurses into the schema without a limit), only
// ever sees metadata that is consistent with the file. It returns the
// footer, or what is wrong.
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
	if !flatbuf.Check(root, footerShape) {
		return ft, "its footer (the schema, or the list of batches) is damaged"
	}
	endian, _ := schema.Int16(schemaEndianness, 0)
	ft.bigEndian = endian == endianBig
	var ok bool
	if ft.layout, ok = layoutOf(schema); !ok {
		return ft, "its schema has a field of a type the Arrow format does not have"
	}
	dicts, _ := root.Vector(footerDictionaries, 24)
	batches, _ := root.Vector(footerRecordBatches, 24)
	body := int64(n - 10 - int(size))
	for i := 0; i < dicts.N; i++ {
		blk := fileBlock{offset: dicts.I64(i, 0), meta: dicts.I32(i, 8), body: dicts.I64(i, 16)}
		if _, problem := checkMessage(data[:body], blk, headerDictionary, ft.layout); problem != "" {
			return ft, fmt.Sprintf("dictionary batch %d is damaged: %s", i, problem)
		}
	}
	ft.batches = make([]fileBlock, batches.N)
	for i := range ft.batches {
		ft.batches[i] = fileBlock{offset: batches.I64(i, 0), meta: batches.I32(i, 8), body: batches.I64(i, 16)}
	}
	return ft, ""
}

// checkMessage checks a message block of the file: that the block lies in
// data (the file before its footer) and agrees with the message's own
// lengths, that its metadata is a flatbuffer with a header of the type
// wanted, and that its batch is what the schema's layout says (checkBatch).
func checkMessage(data []byte, blk fileBlock, header uint8, layout *schemaLayout) (batchMeta, string) {
	var b batchMeta
	size := int64(len(data))
	if blk.offset < 8 || blk.offset%8 != 0 || blk.meta < 8 || blk.meta%8 != 0 || blk.body < 0 || blk.body%8 != 0 ||
		blk.offset > size || int64(blk.meta) > size-blk.offset || blk.body > size-blk.offset-int64(blk.meta) {
		return b, fmt.Sprintf("the footer places it at bytes %d to %d of %d", blk.offset, blk.offset+int64(blk.meta)+blk.body, size)
	}
	meta := data[blk.offset : blk.offset+int64(blk.meta)]
	prefix := 4
	if binary.LittleEndian.Uint32(meta) == 0xFFFFFFFF {
		prefix = 8
	}
	// The metadata is padded to 8 bytes; its length says so.
	fbLen := int64(binary.LittleEndian.Uint32(meta[prefix-4:]))
	if fbLen > int64(len(meta)-prefix) || int64(len(meta)-prefix)-fbLen >= 8 {
		return b, fmt.Sprintf("its metadata has %d bytes in a block of %d", fbLen, len(meta))
	}
	b, problem := parseBatch(meta[prefix:int64(prefix)+fbLen], header)
	if problem != "" {
		return b, problem
	}
	if b.bodyLength != blk.body {
		return b, fmt.Sprintf("its body has %d bytes where the footer says %d", b.bodyLength, blk.body)
	}
	b.body = data[blk.offset+int64(blk.meta) : blk.offset+int64(blk.meta)+blk.body]
	return b, b.check(layout)
}

// check checks a batch against its body and the schema's layout: its
// buffers lie in the body, one after the other as the format lays them out,
// compressed ones do not claim to grow beyond reason, its field nodes'
// counts are sane, and it has the nodes and buffers its columns take.
func (b *batchMeta) check(layout *schemaLayout) string {
	body := b.body
	var declared int64
	for i := 0; i < b.buffers.N; i++ {
		off, length := b.buffers.I64(i, 0), b.buffers.I64(i, 8)
		if off < 0 || length < 0 || off > int64(len(body)) || length > int64(len(body))-off {
			return fmt.Sprintf("buffer %d lies at bytes %d to %d of a body of %d", i, off, off+length, len(body))
		}
		if !b.compressed || length == 0 {
			continue
		}
		if length < 8 {
			return fmt.Sprintf("compressed buffer %d has %d bytes, too few for its length prefix", i, length)
		}
		if u := int64(binary.LittleEndian.Uint64(body[off:])); u != -1 {
			if u < 0 {
				return fmt.Sprintf("compressed buffer %d claims %d bytes", i, u)
			}
			declared += min(u, 1<<50)
		}
	}
	// A batch that claims to decompress to more than this is damaged: arrow
	// would allocate whatever it says.
	if limit := 256*int64(len(body)) + 64<<20; declared > limit {
		return fmt.Sprintf("its compressed buffers claim %d bytes uncompressed from a body of %d", declared, len(body))
	}
	if problem := b.checkBufferLayout(); problem != "" {
		return problem
	}
	for i := 0; i < b.nodes.N; i++ {
		if n, nulls := b.nodes.I64(i, 0), b.nodes.I64(i, 8); n < 0 || nulls < 0 || nulls > n || n > 1<<40 {
			return fmt.Sprintf("field node %d claims %d values, %d null", i, n, nulls)
		}
	}
	for i := 0; i < b.variadic.N; i++ {
		if c := b.variadic.I64(i, 0); c < 0 || c > int64(b.buffers.N) {
			return fmt.Sprintf("it claims %d variadic buffers", c)
		}
	}
	columns := layout.columns
	if b.dictionary {
		values, ok := layout.dicts[b.dictID]
		if !ok {
			return fmt.Sprintf("it is dictionary %d, which no column of the schema has", b.dictID)
		}
		columns = []columnLayout{values}
	}
	return b.place(columns)
}

// batchMeta is a record (or dictionary) batch message's metadata.
type batchMeta struct {
	version    int16
	length     int64
	bodyLength int64
	compressed bool
	dictionary bool           // a dictionary batch
	dictID     int64          // its dictionary's id
	nodes      flatbuf.Vector // FieldNode
	buffers    flatbuf.Vector // Buffer
	variadic   flatbuf.Vector // long
	body       []byte
	starts     []columnStart // where each top-level column starts (place)
}

// parseBatch reads a record (or dictionary) batch message's flatbuffer.
func parseBatch(fb []byte, header uint8) (batchMeta, string) {
	var b batchMeta
	msg := flatbuf.Root(fb)
	if !msg.OK {
		return b, "its metadata is not a flatbuffer"
	}
	if !flatbuf.Check(msg, messageShape) {
		return b, "its metadata is damaged"
	}
	ht, _ := msg.Uint8(messageHeaderType, 0)
	if ht != header {
		return b, fmt.Sprintf("it is a message of type %d where type %d belongs", ht, header)
	}
	b.version, _ = msg.Int16(messageVersion, 0)
	b.bodyLength, _ = msg.Int64(messageBodyLength, 0)
	if b.bodyLength < 0 {
		return b, fmt.Sprintf("its body has %d bytes", b.bodyLength)
	}
	rb, present := msg.Table(messageHeader)
	if !present {
		return b, "its batch header is missing"
	}
	if header == headerDictionary {
		b.dictionary = true
		b.dictID, _ = rb.Int64(dictID, 0)
		if rb, present = rb.Table(dictBatchData); !present {
			return b, "its dictionary batch header is missing"
		}
	}
	b.length, _ = rb.Int64(batchLength, 0)
	var comp flatbuf.Table
	if comp, b.compressed = rb.Table(batchCompression); b.compressed {
		// The codecs: LZ4_FRAME 0, ZSTD 1; the methods: BUFFER 0. arrow's
		// reader has no decompressor for others (and dereferences none).
		codec, _ := comp.Uint8(0, 0)
		method, _ := comp.Uint8(1, 0)
		if codec > 1 || method != 0 {
			return b, fmt.Sprintf("it is compressed with codec %d, method %d, which the Arrow format does not have", codec, method)
		}
	}
	b.nodes, _ = rb.Vector(batchNodes, 16)
	b.buffers, _ = rb.Vector(batchBuffers, 16)
	b.variadic, _ = rb.Vector(batchVariadic, 8)
	if b.length < 0 {
		return b, fmt.Sprintf("it claims %d rows", b.length)
	}
	return b, ""
}
