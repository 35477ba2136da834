// Package parquet reads the edge columns of Parquet files.
//
// parquet-go reads the footer: schema, row groups, column chunk metadata.
// Then every (row group, edge column) pair is a task, run on all cores
// (internal/par), that reads the column chunk's pages (thrift headers as
// parquet-go's format package defines them) and decodes them straight into
// the destination slices at the row group's offset. PLAIN fixed-width pages
// without nulls are decompressed into the destination itself where the
// codec allows, else copied (or converted to float64 for weights) from the
// decompressed page; dictionary indexes are decoded and gathered from the
// dictionary; there is no parquet.Value in between and no allocation per
// row. Only pages with nulls (counted from their definition levels) scatter
// by level. Columns that are not edge columns are never read. A page that
// carries a CRC-32 is verified before it is decoded; string keys are
// checked to be UTF-8, a row group's column at a time (utf8.go).
//
// parquet-go provides the codecs (snappy, gzip, brotli, zstd) and the delta
// byte array decoders; the RLE / bit-packed hybrid, DELTA_BINARY_PACKED,
// BYTE_STREAM_SPLIT and LZ4 (raw and Hadoop-framed) are decoded here. The
// pages are not read through parquet-go's Page API, because in v0.32.0 it
//   - decodes LZ4_RAW pages into a buffer it then drops (they read as
//     garbage or fail),
//   - sizes a data page v2's values by the header's null count, which some
//     writers get wrong (Arrow's dictionary writer; parquet-java writes -1
//     when statistics are off), so that values shift or a null is missed,
//   - decodes INT32 DELTA_BINARY_PACKED with 32-bit deltas, which gives
//     wrong values for files whose writer used 64-bit deltas (Arrow's Go
//     writer, on keys spread over the whole int32 range),
//   - decodes every chunk of a column with the codec of its first chunk,
//   - sizes allocations by lengths read from the file (RLE runs, thrift
//     binary fields) without bound.
package parquet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// fixIncomplete is what to do about a file that is cut short or damaged.
const fixIncomplete = "the file is not a complete Parquet file; re-export it (or copy it again)"

// codecs are the compression codecs the reader decodes: parquet-go's
// codecs, and LZ4 (raw blocks, and the legacy Hadoop-framed LZ4) directly.
var codecs = map[format.CompressionCodec]bool{
	format.Uncompressed: true,
	format.Snappy:       true,
	format.Gzip:         true,
	format.Brotli:       true,
	format.Zstd:         true,
	format.Lz4Raw:       true,
	format.Lz4:          true,
}

// valKind is the type a column's page values have, as decoded: the physical
// type with the signedness its annotation gives.
type valKind uint8

const (
	valInt32 valKind = iota + 1
	valUint32
	valInt64
	valUint64
	valFloat
	valDouble
	valBytes
	valHalf  // FIXED_LEN_BYTE_ARRAY(2) annotated FLOAT16, little-endian IEEE half
	valFixed // FIXED_LEN_BYTE_ARRAY of the column's width (decimals)
)

// size is the width in bytes of a fixed-width value.
func (k valKind) size() int {
	switch k {
	case valHalf:
		return 2
	case valInt32, valUint32, valFloat:
		return 4
	case valInt64, valUint64, valDouble:
		return 8
	}
	return 0
}

// Column roles, in the order errors are reported within a row group.
const (
	roleSrc = iota
	roleDst
	roleWeight
)

// column is one edge column to read.
type column struct {
	name   string
	role   int
	leaf   int // index of the column chunk in each row group
	kind   valKind
	maxDef byte
	// dec is a DECIMAL weight column's type (nil for others): its values
	// are decoded as they are stored, then converted to float64.
	dec *decimalType
	// Destinations for the whole file, one per kind; row group g owns
	// [first, first+rows) of the one in use. Strings go per row group.
	i32 []int32
	u32 []uint32
	i64 []int64
	u64 []uint64
	f64 []float64
}

// chunkState is what a task leaves for the assembly of its row group.
type chunkState struct {
	err       error
	firstNull int           // row within the row group of the first null (errors mode); -1 if none
	firstBad  int           // row of the first string key that is not UTF-8 (errors mode); -1 if none
	nulls     []uint64      // bitmap of null rows (SkipInvalid), nil if none
	bad       []uint64      // bitmap of rows whose key is not UTF-8 (SkipInvalid), nil if none
	str       edges.Strings // string keys
	hint      int64         // the chunk's uncompressed size, for string buffers
	codec     format.CompressionCodec
	start     int64 // the chunk's bytes in the file
	end       int64
	// loss counts the decimal weights a float64 rounds.
	loss edges.DecimalLoss
}

type group struct {
	first   int64
	rows    int
	cols    [3]chunkState
	kept    []int64 // input rows kept, when rows were dropped
	skips   [3]int64
	badUTF8 int64 // rows dropped for a key that is not UTF-8
}

type reader struct {
	ctx    context.Context
	name   string
	file   io.ReaderAt
	size   int64
	opts   edges.Options
	cols   []column
	groups []group
	// base is the table's number of the file's first row (a file of a
	// dataset: files.go), and rows its rows.
	base, rows int64
	// weightUnread says the file has the weight column the read leaves
	// out (edges.Table.WeightUnread).
	weightUnread bool
	// failed is the lowest row group index whose reading failed; tasks of
	// later row groups stop early, since their error would not be reported.
	failed atomic.Int64
}

var (
	// errBadRow ends a task that found a row in error (a null, or a key
	// that is not UTF-8, when these are errors), recorded in its chunkState.
	errBadRow = errors.New("a row in error")
	// errAborted stops a task because an earlier row group failed.
	errAborted = errors.New("aborted")
)

// Read reads the edge columns of the Parquet file f, named name in
// messages: one chunk per row group.
func Read(ctx context.Context, name string, f *os.File, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	st, err := f.Stat()
	if err != nil {
		return nil, usererr.InFile(name, "cannot read: "+err.Error(), "check the path").Because(err)
	}
	if st.IsDir() {
		return nil, usererr.InFile(name, "is a directory, not a Parquet file", "name a file")
	}
	return ReadAt(ctx, name, f, st.Size(), opts)
}

// ReadAt reads the Parquet file of size bytes that f reads.
func ReadAt(ctx context.Context, name string, f io.ReaderAt, size int64, opts edges.Options) (*edges.Table, error) {
	return ReadFiles(ctx, name, []File{{Name: name, R: f, Size: size}}, opts)
}

// checkFrame checks the magic bytes at both ends and the footer
// length, so that a file that is not Parquet, or is cut short, gets a
// message that says so (and a corrupt footer length no huge allocation).
func checkFrame(name string, r io.ReaderAt, size int64) error {
	if size == 0 {
		return usererr.InFile(name, "the file is empty, not a Parquet file", "check the path, or re-export the file")
	}
	head := make([]byte, min(size, 1024))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return errRead(name, err)
	}
	if err := sniff.ErrLooksLike(name, "a Parquet file", head); err != nil && !bytes.HasPrefix(head, []byte("PAR")) && !bytes.HasPrefix([]byte("PAR1"), head) {
		return err
	}
	head = head[:min(len(head), 4)]
	switch {
	case string(head) == "PARE":
		return errEncrypted(name)
	case string(head) != "PAR1":
		if strings.HasPrefix("PAR1", string(head)) {
			return usererr.InFile(name, fmt.Sprintf("the file is truncated: %d bytes, too short for a Parquet file", size), fixIncomplete)
		}
		return usererr.InFile(name, "not a Parquet file (it does not start with the Parquet magic bytes PAR1)",
			"check the path, or name the input's format with --input-format")
	}
	if size < 12 {
		return usererr.InFile(name, fmt.Sprintf("the file is truncated: %d bytes, too short for a Parquet file", size), fixIncomplete)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil && err != io.EOF {
		return errRead(name, err)
	}
	switch string(tail[4:]) {
	case "PAR1":
	case "PARE":
		return errEncrypted(name)
	default:
		return usererr.InFile(name, "the file is truncated: it does not end with a Parquet footer", fixIncomplete)
	}
	if footer := int64(binary.LittleEndian.Uint32(tail[:4])); footer > size-12 || footer == 0 {
		return usererr.InFile(name, fmt.Sprintf("the Parquet footer is corrupt: it claims %d bytes in a file of %d", footer, size), fixIncomplete)
	}
	return nil
}

// checkSchemaTree decodes the footer (checkFrame checked its length) and
// checks that its schema elements form the tree their child counts say:
// counts that are not negative, leaves (elements with a type) without
// children, a tree from the root that spans every element, and as many
// leaves as each row group has column chunks. parquet-go's OpenFile cuts
// its slabs by these counts, and panics where they lie. A footer that does
// not decode is left to OpenFile to report, as is an encrypted one.
func checkSchemaTree(name string, r io.ReaderAt, size int64) error {
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil && err != io.EOF {
		return nil
	}
	if string(tail[4:]) != "PAR1" {
		return nil
	}
	footer := make([]byte, binary.LittleEndian.Uint32(tail[:4]))
	if _, err := r.ReadAt(footer, size-8-int64(len(footer))); err != nil && err != io.EOF {
		return nil
	}
	var meta format.FileMetaData
	if thrift.Unmarshal(new(thrift.CompactProtocol), footer, &meta) != nil {
		return nil
	}
	schema := meta.Schema
	next, leaves := 0, 0
	var walk func(depth int) bool
	walk = func(depth int) bool {
		if next >= len(schema) || depth > parquet.MaxColumnDepth+1 {
			return false
		}
		el := &schema[next]
		next++
		children := 0
		if el.NumChildren.Valid {
			children = int(el.NumChildren.V)
		}
		if el.Type.Valid {
			leaves++
			return children == 0
		}
		if children < 0 || children > len(schema)-next {
			return false
		}
		for range children {
			if !walk(depth + 1) {
				return false
			}
		}
		return true
	}
	if len(schema) > 0 && (!walk(0) || next != len(schema)) {
		return errFooter(name, fmt.Sprintf("its schema's %d elements do not form the tree their child counts say", len(schema)))
	}
	for g := range meta.RowGroups {
		if n := len(meta.RowGroups[g].Columns); n != leaves {
			return errFooter(name, fmt.Sprintf("row group %d has %d column chunks where the schema has %d columns", g, n, leaves))
		}
	}
	return nil
}

// errRead reports a read that failed; an object store's error (a user
// error already, naming the object) is passed on as it is.
func errRead(name string, err error) error {
	var ue *usererr.Error
	if errors.As(err, &ue) {
		return err
	}
	return usererr.InFile(name, "cannot read: "+err.Error(), "check the path").Because(err)
}

func errEncrypted(name string) error {
	return usererr.InFile(name, "the file is an encrypted Parquet file, which gpipe cannot read",
		"decrypt it or re-export it without encryption")
}

func errFooter(name, detail string) error {
	return usererr.InFile(name, "the Parquet footer is corrupt ("+detail+")", fixIncomplete)
}

// openFile reads the footer, turning parquet-go's errors into one-line
// user errors. checkSchemaTree has checked what it panicked on in flipped
// footers; a panic that is left is an error still, in a user's words.
func openFile(name string, f io.ReaderAt, size int64) (pf *parquet.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			pf, err = nil, errFooter(name, panicCause(p, "its metadata does not hold together"))
		}
	}()
	pf, err = parquet.OpenFile(f, size,
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.FileReadMode(parquet.ReadModeSync),
	)
	if ue := (*usererr.Error)(nil); errors.As(err, &ue) {
		return nil, err // a read of an object store that failed
	}
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "encrypt") || strings.Contains(msg, "signed footer") || strings.Contains(msg, "Decryption") {
			return nil, errEncrypted(name)
		}
		return nil, errFooter(name, msg)
	}
	return pf, nil
}

// keyPair is the key types of a file's source and destination columns:
// one type, or integers of two widths, which the read unifies (edges.UnifyKeys).
type keyPair struct{ src, dst edges.KeyType }

// resolve finds the edge columns in the file's schema and checks their
// types; it returns the key types.
func (r *reader) resolve(pf *parquet.File) (keyPair, error) {
	cols := r.opts.Columns
	top := pf.Root().Columns()
	names := make([]string, len(top))
	for i, c := range top {
		names[i] = c.Name()
	}
	find := func(name string) *parquet.Column {
		for _, c := range top {
			if c.Name() == name {
				return c
			}
		}
		return nil
	}

	src, dst := find(cols.Src), find(cols.Dst)
	if src == nil {
		return keyPair{}, edges.ErrMissingColumn(r.name, cols.Src, "source", "--src-col", names)
	}
	if dst == nil {
		return keyPair{}, edges.ErrMissingColumn(r.name, cols.Dst, "destination", "--dst-col", names)
	}
	if err := edges.CheckUnique(r.name, cols, names); err != nil {
		return keyPair{}, err
	}
	srcKey, srcKind, ok := keyTypeOf(src)
	if !ok {
		return keyPair{}, edges.ErrKeyType(r.name, cols.Src, typeName(src))
	}
	dstKey, dstKind, ok := keyTypeOf(dst)
	if !ok {
		return keyPair{}, edges.ErrKeyType(r.name, cols.Dst, typeName(dst))
	}
	if _, _, ok := edges.CommonKeyType(srcKey, dstKey); !ok {
		return keyPair{}, edges.ErrKeyTypesDiffer(r.name, cols.Src, typeName(src), cols.Dst, typeName(dst))
	}
	r.cols = []column{
		{name: cols.Src, role: roleSrc, leaf: src.Index(), kind: srcKind, maxDef: byte(src.MaxDefinitionLevel())},
		{name: cols.Dst, role: roleDst, leaf: dst.Index(), kind: dstKind, maxDef: byte(dst.MaxDefinitionLevel())},
	}
	// A weight column the user named must be there, read or not (a
	// misspelt name would go unnoticed with an operator that uses none).
	r.weightUnread = !cols.ReadWeight && find(cols.Weight) != nil
	if w := find(cols.Weight); w == nil && cols.WeightExplicit {
		return keyPair{}, edges.ErrMissingColumn(r.name, cols.Weight, "weight", "--weight-col", names)
	} else if cols.ReadWeight && w != nil {
		kind, ok := weightTypeOf(w)
		el := schemaElement(pf, w)
		if !ok && isFloat16(el, w) {
			kind, ok = valHalf, true
		}
		dec := decimalOf(el, w)
		if dec != nil {
			kind, ok = dec.kind, true
		}
		if !ok {
			return keyPair{}, edges.ErrWeightType(r.name, cols.Weight, typeName(w))
		}
		r.cols = append(r.cols, column{name: cols.Weight, role: roleWeight, leaf: w.Index(), kind: kind, maxDef: byte(w.MaxDefinitionLevel()), dec: dec})
	}
	return keyPair{srcKey, dstKey}, nil
}

// planGroups lists the row groups with their first rows and checks what the
// footer says about the edge columns' chunks.
func (r *reader) planGroups(pf *parquet.File) (int64, error) {
	meta := pf.Metadata()
	r.groups = make([]group, len(meta.RowGroups))
	var total int64
	for g := range meta.RowGroups {
		rg := &meta.RowGroups[g]
		n := rg.NumRows
		if n < 0 || n > math.MaxInt32*int64(1024) {
			return 0, errFooter(r.name, fmt.Sprintf("row group %d claims %d rows", g, n))
		}
		r.groups[g] = group{first: total, rows: int(n)}
		total += n
		for i := range r.cols {
			c := &r.cols[i]
			if c.leaf < 0 || c.leaf >= len(rg.Columns) {
				return 0, errFooter(r.name, fmt.Sprintf("row group %d has no chunk for column %s", g, echo.Quote(c.name)))
			}
			cc := &rg.Columns[c.leaf]
			md := &cc.MetaData
			if len(cc.EncryptedColumnMetadata) > 0 || cc.CryptoMetadata.Value != nil {
				return 0, errEncrypted(r.name)
			}
			if cc.FilePath != "" {
				return 0, &usererr.Error{Kind: usererr.Input, File: r.name, Column: c.name, Row: -1,
					Problem: fmt.Sprintf("row group %d of the column is stored in another file (%s), which gpipe does not follow", g, echo.Quote(cc.FilePath)),
					Fix:     "rewrite the data as one self-contained Parquet file"}
			}
			if !codecs[md.Codec] {
				return 0, &usererr.Error{Kind: usererr.Input, File: r.name, Column: c.name, Row: -1,
					Problem: fmt.Sprintf("the column is compressed with %s, which gpipe's Parquet reader does not decode", md.Codec),
					Fix:     "re-export the file with zstd, snappy, gzip, brotli, lz4_raw or no compression"}
			}
			if md.NumValues != n {
				return 0, errFooter(r.name, fmt.Sprintf("row group %d has %d rows but %d values in column %s", g, n, md.NumValues, echo.Quote(c.name)))
			}
			start := md.DataPageOffset
			if d := md.DictionaryPageOffset; d > 0 && d < start {
				start = d
			}
			end := start + md.TotalCompressedSize
			if n > 0 && (start < 4 || md.TotalCompressedSize < 0 || end > r.size) {
				return 0, errFooter(r.name, fmt.Sprintf("row group %d places column %s at bytes %d to %d of %d", g, echo.Quote(c.name), start, end, r.size))
			}
			st := &r.groups[g].cols[i]
			st.codec, st.start, st.end = md.Codec, start, end
			st.hint = md.TotalUncompressedSize
		}
	}
	return total, nil
}

// decodedWhole says whether every column of row group g was decoded
// without an error or a null (all its tasks have finished).
func (r *reader) decodedWhole(g int) bool {
	for c := range r.cols {
		if r.groups[g].cols[c].err != nil {
			return false
		}
	}
	return true
}

func (r *reader) fail(g int) {
	for {
		cur := r.failed.Load()
		if int64(g) >= cur || r.failed.CompareAndSwap(cur, int64(g)) {
			return
		}
	}
}

// firstError is the error of the lowest row group that has one: a decoding
// error (columns in src, dst, weight order), else its first row in error.
func (r *reader) firstError() error {
	for g := range r.groups {
		grp := &r.groups[g]
		for c := range r.cols {
			if err := grp.cols[c].err; err != nil && err != errBadRow {
				if err == errAborted {
					// Only tasks after a failed row group abort.
					return usererr.Newf(usererr.Internal, "%s: parquet reader aborted row group %d without a cause", r.name, g)
				}
				return err
			}
		}
		if err := r.firstBadRow(g); err != nil {
			return err
		}
	}
	return nil
}

// firstBadRow is the error of row group g's first row in error: of its
// lowest row, a null before a key that is not UTF-8 (as the CSV reader
// checks a row), then columns in src, dst, weight order.
func (r *reader) firstBadRow(g int) error {
	grp := &r.groups[g]
	best, bestCol, bestUTF8 := -1, -1, false
	for c := range r.cols {
		st := &grp.cols[c]
		if st.err != errBadRow {
			continue
		}
		if row := st.firstNull; row >= 0 && (best < 0 || row < best || row == best && bestUTF8) {
			best, bestCol, bestUTF8 = row, c, false
		}
		if row := st.firstBad; row >= 0 && (best < 0 || row < best) {
			best, bestCol, bestUTF8 = row, c, true
		}
	}
	if bestCol < 0 {
		return nil
	}
	col := &r.cols[bestCol]
	row := grp.first + int64(best)
	switch {
	case bestUTF8:
		str := &grp.cols[bestCol].str
		return edges.ErrBadUTF8(r.name, col.name, row, str.Data[str.Offsets[best]:str.Offsets[best+1]], "a Parquet string")
	case col.role == roleWeight:
		return edges.ErrNullWeight(r.name, col.name, row)
	}
	return edges.ErrNullKey(r.name, col.name, row)
}

// panicCause is what a recovered panic says, for a message: its value, or
// words where it is the runtime's (an index out of range says nothing to a
// user).
func panicCause(p any, words string) string {
	if _, ok := p.(runtime.Error); ok {
		return words
	}
	return fmt.Sprint(p)
}

// errPage reports a page that cannot be decoded.
func (r *reader) errPage(c *column, g int, row int, cause any) error {
	grp := &r.groups[g]
	return &usererr.Error{Kind: usererr.Input, File: r.name, Column: c.name, Row: grp.first + int64(row),
		Problem: fmt.Sprintf("cannot decode the Parquet data of row group %d (%v)", g, cause),
		Fix:     fixIncomplete}
}

// keyTypeOf says whether a top-level column can hold vertex keys, and
// as which type.
func keyTypeOf(c *parquet.Column) (edges.KeyType, valKind, bool) {
	if !c.Leaf() || c.Repeated() {
		return 0, 0, false
	}
	typ := c.Type()
	lt := logicalOf(typ)
	switch typ.Kind() {
	case parquet.Int32:
		switch t := lt.(type) {
		case nil:
			return edges.KeyInt32, valInt32, true
		case *format.IntType:
			switch {
			case t.BitWidth == 8 || t.BitWidth == 16:
				// Stored as INT32, signed or not, in int32's range.
				return edges.KeyInt32, valInt32, true
			case t.BitWidth != 32:
			case t.IsSigned:
				return edges.KeyInt32, valInt32, true
			default:
				return edges.KeyUint32, valUint32, true
			}
		}
	case parquet.Int64:
		switch t := lt.(type) {
		case nil:
			return edges.KeyInt64, valInt64, true
		case *format.IntType:
			switch {
			case t.BitWidth != 64:
			case t.IsSigned:
				return edges.KeyInt64, valInt64, true
			default:
				return edges.KeyUint64, valUint64, true
			}
		}
	case parquet.ByteArray:
		switch lt.(type) {
		case nil, *format.StringType, *format.EnumType:
			return edges.KeyString, valBytes, true
		}
	}
	return 0, 0, false
}

// weightTypeOf says whether a top-level column can hold edge weights,
// and with which values.
func weightTypeOf(c *parquet.Column) (valKind, bool) {
	if !c.Leaf() || c.Repeated() {
		return 0, false
	}
	typ := c.Type()
	lt := logicalOf(typ)
	signed := true
	switch t := lt.(type) {
	case nil:
	case *format.IntType:
		signed = t.IsSigned
	default:
		return 0, false
	}
	switch typ.Kind() {
	case parquet.Int32:
		if signed {
			return valInt32, true
		}
		return valUint32, true
	case parquet.Int64:
		if signed {
			return valInt64, true
		}
		return valUint64, true
	case parquet.Float:
		if lt == nil {
			return valFloat, true
		}
	case parquet.Double:
		if lt == nil {
			return valDouble, true
		}
	}
	return 0, false
}

// schemaElement is the schema element of top-level column c: parquet-go's
// column type does not carry every annotation (FLOAT16; the decimal
// of a FIXED_LEN_BYTE_ARRAY), so they are read from the file's schema.
func schemaElement(pf *parquet.File, c *parquet.Column) *format.SchemaElement {
	schema := pf.Metadata().Schema
	if len(schema) == 0 {
		return nil
	}
	// The elements are the schema tree depth first; the root's children are
	// the top-level columns, each followed by its subtree.
	for i, children := 1, int(schema[0].NumChildren.V); children > 0 && i < len(schema); children-- {
		el := &schema[i]
		if el.Name == c.Name() {
			return el
		}
		i += subtreeSize(schema, i)
	}
	return nil
}

// isFloat16 says whether top-level column c, of schema element el, is
// FIXED_LEN_BYTE_ARRAY(2) annotated FLOAT16 (as Arrow writes float16).
func isFloat16(el *format.SchemaElement, c *parquet.Column) bool {
	typ := c.Type()
	if el == nil || !c.Leaf() || c.Repeated() || typ.Kind() != parquet.FixedLenByteArray || typ.Length() != 2 {
		return false
	}
	_, half := el.LogicalType.Value.(*format.Float16Type)
	return half
}

// subtreeSize counts the schema elements of the subtree at schema[i].
func subtreeSize(schema []format.SchemaElement, i int) int {
	n := 1
	for k := int(schema[i].NumChildren.V); k > 0 && i+n < len(schema); k-- {
		n += subtreeSize(schema, i+n)
	}
	return n
}

// logicalOf is the logical type annotation of typ (converted types mapped to
// logical ones by parquet-go), nil if none.
func logicalOf(typ parquet.Type) format.LogicalTypeValue {
	if lt := typ.LogicalType(); lt != nil {
		return lt.Value
	}
	return nil
}

// typeName names a column's type as a user would say it: int16,
// double, timestamp, decimal(10,2), fixed_len_byte_array(16).
func typeName(c *parquet.Column) string {
	name := baseTypeName(c)
	if c.Repeated() {
		return "repeated " + name
	}
	return name
}

func baseTypeName(c *parquet.Column) string {
	typ := c.Type()
	lt := logicalOf(typ)
	if !c.Leaf() {
		switch lt.(type) {
		case *format.ListType:
			return "list"
		case *format.MapType:
			return "map"
		case *format.VariantType:
			return "variant"
		}
		if ct := typ.ConvertedType(); ct != nil {
			switch *ct {
			case deprecated.List:
				return "list"
			case deprecated.Map, deprecated.MapKeyValue:
				return "map"
			}
		}
		return "struct"
	}
	switch t := lt.(type) {
	case *format.StringType, *format.EnumType:
		return "string"
	case *format.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case *format.DateType:
		return "date"
	case *format.TimeType:
		return "time"
	case *format.TimestampType:
		return "timestamp"
	case *format.IntType:
		if t.IsSigned {
			return fmt.Sprintf("int%d", t.BitWidth)
		}
		return fmt.Sprintf("uint%d", t.BitWidth)
	case *format.NullType:
		return "null"
	case *format.JsonType:
		return "json"
	case *format.BsonType:
		return "bson"
	case *format.UUIDType:
		return "uuid"
	case *format.Float16Type:
		return "float16"
	case *format.GeometryType:
		return "geometry"
	case *format.GeographyType:
		return "geography"
	}
	if ct := typ.ConvertedType(); ct != nil && *ct == deprecated.Interval {
		return "interval"
	}
	switch typ.Kind() {
	case parquet.Boolean:
		return "boolean"
	case parquet.Int32:
		return "int32"
	case parquet.Int64:
		return "int64"
	case parquet.Int96:
		return "int96 (legacy timestamp)"
	case parquet.Float:
		return "float"
	case parquet.Double:
		return "double"
	case parquet.ByteArray:
		return "binary"
	case parquet.FixedLenByteArray:
		return fmt.Sprintf("fixed_len_byte_array(%d)", typ.Length())
	}
	return typ.String()
}
