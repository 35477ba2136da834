package pqwrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// pageBytes is the size a data page's values are cut at (before
// compression), as in Arrow's writers: big enough for the codec to find
// its matches, small enough for readers to stream pages.
const pageBytes = 1 << 20

// maxPageRows bounds the rows of a page of byte arrays or dictionary
// indexes: 1 MiB of 4-byte values.
const maxPageRows = pageBytes / 4

// errStopped is the error of a chunk whose writer was aborted.
var errStopped = errors.New("pqwrite: writer aborted")

// chunk is one column chunk's encoded pages and what the footer says of it.
type chunk struct {
	buf          []byte // the pages, the dictionary page first if there is one
	dictLen      int64  // bytes of the dictionary page, header included; 0: none
	uncompressed int64  // the pages' bytes before compression, headers included
	values       int64  // rows, nulls included
	encodings    []format.Encoding
	pages        []format.PageEncodingStats
	stats        format.Statistics
}

// encoder encodes column chunks. Each worker has one, for its scratch
// buffers; chunks own their output.
type encoder struct {
	codec compress.Codec // nil: uncompressed
	stop  *atomic.Bool
	proto thrift.CompactProtocol

	page []byte  // a page before compression
	comp []byte  // a page after compression
	idx  []int32 // dictionary indexes of the chunk's non-null values
	rle  rle.Encoding

	fixed fixedDict
	bytes bytesDict
}

// encoders keeps encoders, with their scratch buffers and dictionary
// tables, from one file to the next.
var encoders sync.Pool

func getEncoder(codec compress.Codec, stop *atomic.Bool) *encoder {
	e, _ := encoders.Get().(*encoder)
	if e == nil {
		e = new(encoder)
	}
	e.codec, e.stop = codec, stop
	return e
}

func putEncoder(e *encoder) {
	e.codec, e.stop = nil, nil
	encoders.Put(e)
}

// buffers keeps the chunks' output buffers once written, for later chunks.
var buffers sync.Pool

func getBuffer() []byte {
	if b, ok := buffers.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return nil
}

func putBuffer(b []byte) {
	if cap(b) > 0 {
		buffers.Put(&b)
	}
}

// encode encodes c's rows in parts (rows in all) as one column chunk: the
// dictionary page where a dictionary pays, the data pages, then what the
// footer says of them.
func (e *encoder) encode(c *column, parts []part, rows int) (chunk, error) {
	// The byte array dictionary views the records' buffers: forgotten after
	// the chunk, so that a pooled encoder pins no caller's memory.
	defer e.bytes.reset()
	out := chunk{values: int64(rows), buf: getBuffer()}
	st := newStats(c.kind)
	if err := countNulls(c, parts, &st); err != nil {
		return out, err
	}
	dictSize, useDict := e.dictionary(c.kind, parts)
	if useDict {
		if err := e.dictionaryPage(&out, c.kind, dictSize, &st); err != nil {
			return out, err
		}
	} else {
		dictSize = 0
	}
	dataPages, err := e.dataPages(&out, c, parts, rows, dictSize, &st)
	if err != nil {
		return out, err
	}
	out.stats = st.thrift()
	valueEnc := format.Plain
	out.encodings = []format.Encoding{format.Plain}
	if useDict {
		valueEnc = format.RLEDictionary
		out.encodings = append(out.encodings, valueEnc)
	}
	out.pages = append(out.pages, format.PageEncodingStats{PageType: format.DataPage, Encoding: valueEnc, Count: int32(dataPages)})
	if c.optional {
		out.encodings = append(out.encodings, format.RLE)
	}
	return out, nil
}

// countNulls adds the nulls of c's parts to st; they are an error in a
// column that is not nullable.
func countNulls(c *column, parts []part, st *stats) error {
	for i := range parts {
		st.nulls += int64(parts[i].nulls)
	}
	if !c.optional && st.nulls > 0 {
		nulls := "a null"
		if st.nulls > 1 {
			nulls = fmt.Sprintf("%d nulls", st.nulls)
		}
		return fmt.Errorf("column %q is not nullable but has %s", c.name, nulls)
	}
	return nil
}

// dataPages appends the data pages of c's rows in parts to out, values
// indexed into the dictionary of dictSize entries (e.idx) or, where
// dictSize is 0, PLAIN and added to st. It returns the number of pages.
func (e *encoder) dataPages(out *chunk, c *column, parts []part, rows, dictSize int, st *stats) (int, error) {
	pageRows := pageRowsOf(c.kind, parts, rows, dictSize > 0)
	cur := cursor{parts: parts}
	vi := 0 // next dictionary index
	dataPages := 0
	for lo := 0; lo < rows; lo += pageRows {
		if e.stop.Load() {
			return dataPages, errStopped
		}
		n := min(pageRows, rows-lo)
		pieces := cur.take(n)
		page := e.page[:0]
		nulls := 0
		if c.optional {
			page, nulls = appendLevels(page, pieces, n)
		}
		var enc format.Encoding
		switch {
		case dictSize > 0:
			enc = format.RLEDictionary
			k := n - nulls
			page = e.appendIndexes(page, e.idx[vi:vi+k], bitWidth(dictSize))
			vi += k
		case c.kind == kindBytes:
			enc = format.Plain
			page = appendPlainBytes(page, pieces, st)
		default:
			enc = format.Plain
			page = appendPlainFixed(page, pieces, c.kind.width(), st)
		}
		e.page = page
		hdr := dataPageHeader(n, nulls, enc)
		if err := e.appendPage(out, &hdr, page); err != nil {
			return dataPages, err
		}
		dataPages++
	}
	return dataPages, nil
}

// dataPageHeader is the header of a data page of n rows, nulls of them
// null, its values in enc and its levels in RLE.
func dataPageHeader(n, nulls int, enc format.Encoding) format.PageHeader {
	return format.PageHeader{
		Type: format.DataPage,
		DataPageHeader: thrift.New(format.DataPageHeader{
			NumValues:               int32(n),
			Encoding:                enc,
			DefinitionLevelEncoding: format.RLE,
			RepetitionLevelEncoding: format.RLE,
			Statistics:              format.Statistics{NullCount: int64(nulls)},
		}),
	}
}

// appendPage compresses page and appends it, after its header, to the
// chunk's output.
func (e *encoder) appendPage(out *chunk, hdr *format.PageHeader, page []byte) error {
	if len(page) > math.MaxInt32 {
		// Pages are cut at 1 MiB on average; only values of gigabytes get here.
		return fmt.Errorf("a page of %d bytes is over Parquet's limit of 2 GiB", len(page))
	}
	comp := page
	if e.codec != nil {
		var err error
		if e.comp, err = e.codec.Encode(e.comp[:0], page); err != nil {
			return fmt.Errorf("cannot compress a page: %w", err)
		}
		comp = e.comp
	}
	hdr.UncompressedPageSize = int32(len(page))
	hdr.CompressedPageSize = int32(len(comp))
	// The page's checksum (the format's CRC-32 of the bytes after the
	// header, as stored), so that readers that verify it (gpipe's,
	// parquet-go's, pyarrow's, parquet-java's) refuse a page damaged on
	// its way to them instead of reading changed values.
	hdr.CRC = int32(crc32.ChecksumIEEE(comp))
	h, err := thrift.Marshal(&e.proto, hdr)
	if err != nil {
		return fmt.Errorf("cannot encode a page header: %w", err)
	}
	out.buf = append(out.buf, h...)
	out.buf = append(out.buf, comp...)
	out.uncompressed += int64(len(h) + len(page))
	return nil
}

// dictionary tries dictionary encoding: it fills e.idx with the index of
// each non-null value and says whether the dictionary, of size entries,
// stayed small enough to use (and has an entry: a chunk of nulls only is
// written plain).
func (e *encoder) dictionary(k kind, parts []part) (size int, ok bool) {
	e.idx = e.idx[:0]
	switch k.width() {
	case 4:
		return fixedDictionary[uint32](e, parts, 4)
	case 8:
		return fixedDictionary[uint64](e, parts, 8)
	}
	d := &e.bytes
	d.reset()
	for pi := range parts {
		p := &parts[pi]
		for i := 0; i < p.n; i++ {
			if !p.isValid(i) {
				continue
			}
			e.idx = append(e.idx, d.indexOf(p.bytesAt(i)))
			if d.size > dictLimit || (len(e.idx) == dictProbe && 8*len(d.vals) > 7*dictProbe) {
				return 0, false
			}
		}
	}
	return len(d.vals), len(d.vals) > 0
}

// fixedDictionary is dictionary for values of width bytes, held as T.
func fixedDictionary[T uint32 | uint64](e *encoder, parts []part, width int) (int, bool) {
	d := &e.fixed
	d.reset()
	limit := dictLimit / width
	for pi := range parts {
		p := &parts[pi]
		vals := castSlice[T](p.fixed)
		for i, v := range vals {
			if p.valid != nil && !bitutil.BitIsSet(p.valid, p.vbit+i) {
				continue
			}
			e.idx = append(e.idx, d.index(uint64(v)))
			if len(d.keys) > limit || (len(e.idx) == dictProbe && 8*len(d.keys) > 7*dictProbe) {
				return 0, false
			}
		}
	}
	return len(d.keys), len(d.keys) > 0
}

// dictionaryPage appends the dictionary page (PLAIN values) to the chunk
// and takes the chunk's min and max from the dictionary, which holds
// exactly the chunk's distinct non-null values.
func (e *encoder) dictionaryPage(out *chunk, k kind, size int, st *stats) error {
	page := e.page[:0]
	if w := k.width(); w > 0 {
		for _, key := range e.fixed.keys {
			if w == 4 {
				page = binary.LittleEndian.AppendUint32(page, uint32(key))
			} else {
				page = binary.LittleEndian.AppendUint64(page, key)
			}
		}
		st.addFixed(page)
	} else {
		for _, v := range e.bytes.vals {
			page = binary.LittleEndian.AppendUint32(page, uint32(len(v)))
			page = append(page, v...)
			st.addBytes(v)
		}
	}
	e.page = page
	hdr := format.PageHeader{
		Type:                 format.DictionaryPage,
		DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: int32(size), Encoding: format.Plain}),
	}
	if err := e.appendPage(out, &hdr, page); err != nil {
		return err
	}
	out.dictLen = int64(len(out.buf))
	out.pages = append(out.pages, format.PageEncodingStats{PageType: format.DictionaryPage, Encoding: format.Plain, Count: 1})
	return nil
}

// bitWidth is the bit width of the indexes into a dictionary of size
// entries: at least 1, which every reader decodes.
func bitWidth(size int) int {
	return max(1, bits.Len(uint(size-1)))
}

// appendIndexes appends a dictionary-indexed page's values: the bit width,
// then the indexes in the RLE / bit-packed hybrid (parquet-go's encoder).
func (e *encoder) appendIndexes(page []byte, idx []int32, width int) []byte {
	page = append(page, byte(width))
	e.rle.BitWidth = width
	enc, _ := e.rle.EncodeInt32(page[len(page):], idx) // cannot fail: every index fits width
	return append(page, enc...)
}

// pageRowsOf is the number of rows in each data page of a chunk.
func pageRowsOf(k kind, parts []part, rows int, dict bool) int {
	if w := k.width(); w > 0 {
		return pageBytes / w
	}
	if dict || rows == 0 {
		return maxPageRows
	}
	var size int64
	for i := range parts {
		size += parts[i].valueBytes(0, parts[i].n) + 4*int64(parts[i].n)
	}
	perRow := max(1, size/int64(rows))
	return int(min(maxPageRows, max(1, pageBytes/perRow)))
}

// piece is rows [lo, hi) of a part: the share of one page in one part.
type piece struct {
	p      *part
	lo, hi int
}

// cursor hands out a chunk's rows page by page, as pieces of its parts.
type cursor struct {
	parts  []part
	pi, at int // next row: row at of part pi
	pieces []piece
}

// take is the pieces of the next n rows.
func (c *cursor) take(n int) []piece {
	c.pieces = c.pieces[:0]
	for n > 0 {
		p := &c.parts[c.pi]
		k := min(n, p.n-c.at)
		c.pieces = append(c.pieces, piece{p, c.at, c.at + k})
		n -= k
		if c.at += k; c.at == p.n {
			c.pi, c.at = c.pi+1, 0
		}
	}
	return c.pieces
}

// appendLevels appends the definition levels of a page of n rows of an
// optional column (null 0, valid 1): their length (4 bytes), then a single
// RLE run where every row is valid or every row null, else one bit-packed
// run, which at bit width 1 is the validity bitmap itself. It returns the
// page and the number of nulls.
func appendLevels(page []byte, pieces []piece, n int) ([]byte, int) {
	nulls := 0
	for _, pc := range pieces {
		if pc.p.valid != nil {
			nulls += (pc.hi - pc.lo) - bitutil.CountSetBits(pc.p.valid, pc.p.vbit+pc.lo, pc.hi-pc.lo)
		}
	}
	start := len(page)
	page = append(page, 0, 0, 0, 0)
	switch nulls {
	case 0, n:
		valid := byte(1)
		if nulls == n {
			valid = 0
		}
		page = binary.AppendUvarint(page, uint64(n)<<1)
		page = append(page, valid)
	default:
		groups := (n + 7) / 8
		page = binary.AppendUvarint(page, uint64(groups)<<1|1)
		at := len(page)
		page = append(page, make([]byte, groups)...)
		bitmap := page[at:]
		r := 0
		for _, pc := range pieces {
			k := pc.hi - pc.lo
			if pc.p.valid == nil {
				bitutil.SetBitsTo(bitmap, int64(r), int64(k), true)
			} else {
				bitutil.CopyBitmap(pc.p.valid, pc.p.vbit+pc.lo, k, bitmap, r)
			}
			r += k
		}
	}
	binary.LittleEndian.PutUint32(page[start:], uint32(len(page)-start-4))
	return page, nulls
}

// appendPlainFixed appends the non-null values of the pieces, PLAIN
// (little-endian, as Arrow holds them), and adds them to st.
func appendPlainFixed(page []byte, pieces []piece, w int, st *stats) []byte {
	for _, pc := range pieces {
		p := pc.p
		start := len(page)
		if p.valid == nil {
			page = append(page, p.fixed[pc.lo*w:pc.hi*w]...)
		} else {
			page = appendValid(page, p, pc.lo, pc.hi, w)
		}
		st.addFixed(page[start:])
	}
	return page
}

// appendValid appends the values of rows [lo, hi) of p that are not null,
// eight rows at a time where the bitmap's byte says all or none are.
func appendValid(page []byte, p *part, lo, hi, w int) []byte {
	for i := lo; i < hi; {
		b := p.vbit + i
		if b&7 == 0 && i+8 <= hi {
			switch p.valid[b>>3] {
			case 0xFF:
				page = append(page, p.fixed[i*w:(i+8)*w]...)
				i += 8
				continue
			case 0:
				i += 8
				continue
			}
		}
		if bitutil.BitIsSet(p.valid, b) {
			page = append(page, p.fixed[i*w:(i+1)*w]...)
		}
		i++
	}
	return page
}

// appendPlainBytes appends the non-null values of the pieces, PLAIN (a
// 4-byte length, then the bytes), and adds them to st.
func appendPlainBytes(page []byte, pieces []piece, st *stats) []byte {
	for _, pc := range pieces {
		p := pc.p
		for i := pc.lo; i < pc.hi; i++ {
			if !p.isValid(i) {
				continue
			}
			v := p.bytesAt(i)
			page = binary.LittleEndian.AppendUint32(page, uint32(len(v)))
			page = append(page, v...)
			st.addBytes(v)
		}
	}
	return page
}
