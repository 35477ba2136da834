package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Reading and decoding the pages of one column chunk.

// maxPage bounds the size of one page, so that a corrupt header cannot
// make the reader allocate without bound.
const maxPage = 1 << 30

// pageBuffers is one worker's buffers, reused from chunk to chunk.
type pageBuffers struct {
	win      window
	proto    thrift.CompactProtocol
	unz      []byte   // decompressed page
	levels   []byte   // definition levels
	idx      []int32  // dictionary indexes
	vals     []byte   // values decoded from encodings other than PLAIN
	offs     []uint32 // their offsets (byte arrays)
	dict     []byte   // the chunk's dictionary: fixed-width values, or byte array data
	dictOffs []uint32 // byte array dictionary offsets
	dictN    int      // number of dictionary values; -1 when none was read
}

// decodeChunk reads column ci of row group g into its destination.
func (r *reader) decodeChunk(g, ci int, s *pageBuffers) (err error) {
	grp := &r.groups[g]
	c := &r.cols[ci]
	st := &grp.cols[ci]
	st.firstNull, st.firstBad = -1, -1
	pos := 0
	var sd *stringCol
	if c.kind == valBytes || c.kind == valFixed {
		sd = newStringCol(grp.rows, st.hint)
		defer func() { st.str = sd.strings() }()
	}
	defer func() {
		if p := recover(); p != nil {
			err = r.errPage(c, g, pos, panicCause(p, "a page does not match its header"))
		}
	}()
	if grp.rows == 0 {
		return nil
	}
	s.win.reset(r.file, st.start, st.end)
	defer s.win.release()
	s.dictN = -1
	for page := 0; pos < grp.rows; page++ {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if int64(g) > r.failed.Load() {
			return errAborted
		}
		at := s.win.offset()
		n, err := r.readPage(c, grp, st, sd, s, pos)
		if err != nil {
			if ce, ok := err.(*checksumError); ok {
				return r.errChecksum(c, g, pos, page, at, ce.typ)
			}
			if ue := (*usererr.Error)(nil); errors.As(err, &ue) {
				return err // a read of an object store that failed
			}
			return r.errPage(c, g, pos, err)
		}
		pos += n
		if st.firstNull >= 0 {
			break // nulls are errors: the rows after this page do not matter
		}
	}
	if sd != nil && c.role != roleWeight {
		r.checkUTF8(st, sd, grp.rows, pos)
	}
	if c.dec != nil && st.firstNull < 0 {
		r.decimalRows(c, g, st, sd)
	}
	if st.firstNull >= 0 || st.firstBad >= 0 {
		return errBadRow
	}
	return nil
}

// checksumError is a page whose bytes do not match the CRC-32 in its header.
type checksumError struct{ typ format.PageType }

func (e *checksumError) Error() string { return "page checksum mismatch" }

// errChecksum reports page (counted from 0 in its column chunk) of row
// group g, whose header is at byte at of the file, failing its checksum:
// its rows start at row pos of the row group.
func (r *reader) errChecksum(c *column, g, pos, page int, at int64, typ format.PageType) error {
	kind := "data page"
	if typ == format.DictionaryPage {
		kind = "dictionary page"
	}
	return &usererr.Error{Kind: usererr.Input, File: r.name, Column: c.name, Row: r.groups[g].first + int64(pos),
		Problem: fmt.Sprintf("page %d of row group %d (a %s at byte %d) does not match its CRC-32 checksum: the file was damaged after it was written", page, g, kind, at),
		Fix:     "re-export the file (or copy it again)"}
}

// readPage reads the next page of the chunk and decodes it into rows
// [pos, pos+n) of the row group, returning n (0 for a dictionary page).
func (r *reader) readPage(c *column, grp *group, st *chunkState, sd *stringCol, s *pageBuffers, pos int) (int, error) {
	var h format.PageHeader
	if err := s.win.header(&s.proto, &h); err != nil {
		if err == io.EOF {
			return 0, fmt.Errorf("the column chunk ends after %d of the row group's %d rows", pos, grp.rows)
		}
		return 0, fmt.Errorf("reading a page header: %w", err)
	}
	if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPage {
		return 0, fmt.Errorf("a page header gives sizes %d and %d", h.CompressedPageSize, h.UncompressedPageSize)
	}
	body, err := s.win.take(int(h.CompressedPageSize))
	if err != nil {
		return 0, fmt.Errorf("the column chunk ends inside a page: %w", err)
	}
	// Every page that carries a checksum is verified (the format makes it
	// optional; gpipe's writer puts one on every page). parquet-go's format
	// cannot tell an absent CRC from a CRC of 0, so such pages, one in 2^32,
	// go unchecked.
	if h.CRC != 0 && crc32.ChecksumIEEE(body) != uint32(h.CRC) {
		return 0, &checksumError{typ: h.Type}
	}
	switch h.Type {
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid {
			return 0, errors.New("a dictionary page without its header")
		}
		data, err := s.decompress(st.codec, body, int(h.UncompressedPageSize))
		if err != nil {
			return 0, err
		}
		return 0, s.readDictionary(c, int(h.DictionaryPageHeader.V.NumValues), data)

	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return 0, errors.New("a data page without its header")
		}
		hd := &h.DataPageHeader.V
		rows := int(hd.NumValues)
		if rows < 0 || rows > grp.rows-pos {
			return 0, fmt.Errorf("a page holds %d rows where %d remain in the row group", rows, grp.rows-pos)
		}
		if c.maxDef == 0 && hd.Encoding == format.Plain && inPlace[st.codec] {
			// A REQUIRED column's page is its values alone.
			if d := c.direct(grp.first+int64(pos), grp.first+int64(pos+rows)); d != nil && len(d) == int(h.UncompressedPageSize) {
				return rows, s.decompressInto(st.codec, body, d)
			}
		}
		data, err := s.decompress(st.codec, body, int(h.UncompressedPageSize))
		if err != nil {
			return 0, err
		}
		var def []byte
		if c.maxDef > 0 {
			if def, data, err = s.levelsV1(hd.DefinitionLevelEncoding, data, rows, c.maxDef); err != nil {
				return 0, err
			}
		}
		return rows, r.pageValues(c, pageAt{grp, st, pos, rows}, sd, s, hd.Encoding, def, data)

	case format.DataPageV2:
		if !h.DataPageHeaderV2.Valid {
			return 0, errors.New("a data page v2 without its header")
		}
		hd := &h.DataPageHeaderV2.V
		rows := int(hd.NumValues)
		if rows < 0 || rows > grp.rows-pos {
			return 0, fmt.Errorf("a page holds %d rows where %d remain in the row group", rows, grp.rows-pos)
		}
		rl, dl := int(hd.RepetitionLevelsByteLength), int(hd.DefinitionLevelsByteLength)
		if rl < 0 || dl < 0 || rl+dl > len(body) {
			return 0, fmt.Errorf("a page's levels take %d and %d of its %d bytes", rl, dl, len(body))
		}
		levels, data := body[rl:rl+dl], body[rl+dl:]
		var def []byte
		if c.maxDef > 0 {
			def = s.levelBuf(rows)
			if err := rleHybrid(def, levels, uint(bits.Len8(c.maxDef))); err != nil {
				return 0, fmt.Errorf("definition levels: %w", err)
			}
		}
		codec := st.codec
		if hd.IsCompressed.Valid && !hd.IsCompressed.V { // absent means compressed
			codec = format.Uncompressed
		}
		size := int(h.UncompressedPageSize) - rl - dl
		if hd.Encoding == format.Plain && inPlace[codec] && (def == nil || countNot(def, c.maxDef) == 0) {
			// Without nulls, the values go straight to their destination.
			if d := c.direct(grp.first+int64(pos), grp.first+int64(pos+rows)); d != nil && len(d) == size {
				return rows, s.decompressInto(codec, data, d)
			}
		}
		if data, err = s.decompress(codec, data, size); err != nil {
			return 0, err
		}
		return rows, r.pageValues(c, pageAt{grp, st, pos, rows}, sd, s, hd.Encoding, def, data)
	}
	return 0, nil // index pages and pages of types to come: skipped
}

// pageAt is where a data page goes: rows [pos, pos+rows) of row group grp,
// whose column chunk's state is st.
type pageAt struct {
	grp       *group
	st        *chunkState
	pos, rows int
}

// pageValues decodes the values of a data page into its rows (at). def are
// its definition levels (nil for a REQUIRED column), data its values.
func (r *reader) pageValues(c *column, at pageAt, sd *stringCol, s *pageBuffers, enc format.Encoding, def, data []byte) error {
	if at.rows == 0 {
		return nil
	}
	nonNull := at.rows
	if def != nil {
		// Nulls are counted from the levels, whatever the page header says.
		if nulls := countNot(def, c.maxDef); nulls == 0 {
			def = nil
		} else {
			nonNull -= nulls
			if err := r.pageNulls(c, at.st, at.grp.rows, at.pos, def); err != nil {
				return err
			}
		}
	}
	if c.kind == valBytes && enc == format.Plain {
		return sd.pagePlain(at.pos, at.rows, data, def, c.maxDef)
	}
	p, err := s.pageData(c, enc, data, nonNull)
	if err != nil {
		return err
	}
	p.def = def
	lo, hi := at.grp.first+int64(at.pos), at.grp.first+int64(at.pos+at.rows)
	switch {
	case c.role == roleWeight && c.dec != nil:
		return decimalPage(c, sd, s, at.pos, at.rows, lo, p)
	case c.role == roleWeight:
		return weightValues(c, c.f64[lo:hi], s.dict, p)
	case c.kind == valBytes:
		return sd.page(at.pos, at.rows, p, s.dict, s.dictOffs, c.maxDef)
	}
	return keyValues(c, lo, hi, s.dict, p)
}

// pageData decodes a page's nonNull values as they are stored: dictionary
// indexes, byte arrays with their offsets, or fixed-width values.
func (s *pageBuffers) pageData(c *column, enc format.Encoding, data []byte, nonNull int) (p pageData, err error) {
	//lint:ignore SA1019 writers of format 1.0 still use PLAIN_DICTIONARY in data pages
	p.dictionary = enc == format.RLEDictionary || enc == format.PlainDictionary
	switch {
	case p.dictionary:
		if s.dictN < 0 {
			return p, errors.New("a dictionary-encoded page, but the chunk has no dictionary page")
		}
		p.idx, err = s.indexes(data, nonNull)
		return p, err
	case c.kind == valBytes:
		e := parquet.LookupEncoding(enc)
		if s.vals, s.offs, err = e.DecodeByteArray(s.vals[:0], data, s.offs[:0]); err != nil {
			return p, err
		}
		if len(s.offs) != nonNull+1 {
			return p, fmt.Errorf("a page has %d values where its levels say %d", len(s.offs)-1, nonNull)
		}
		p.raw, p.offs = s.vals, s.offs
		return p, nil
	case c.kind == valFixed && enc == format.DeltaByteArray:
		p.raw, p.offs, err = s.deltaFixed(c, data, nonNull)
		return p, err
	case enc == format.Plain:
		n := nonNull * c.size()
		if len(data) < n {
			return p, fmt.Errorf("a page has %d bytes of values where %d values need %d", len(data), nonNull, n)
		}
		p.raw = data[:n]
	default:
		if p.raw, err = s.decodeFixed(c.size(), enc, data, nonNull); err != nil {
			return p, err
		}
	}
	if c.kind == valFixed {
		p.offs, err = s.fixedValues(c, p.raw, nonNull)
	}
	return p, err
}

// weightValues stores a page's weights, as float64, in dst.
func weightValues(c *column, dst []float64, dict []byte, p pageData) error {
	switch c.kind {
	case valInt32:
		return fixed[int32](dst, p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valUint32:
		return fixed[uint32](dst, p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valInt64:
		return fixed[int64](dst, p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valUint64:
		return fixed[uint64](dst, p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valFloat:
		return fixed[float32](dst, p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valDouble:
		return fixed[float64](dst, p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valHalf:
		// The halves' bits land in dst as numbers (exactly: they are
		// below 2^16), then become the values they encode.
		if err := fixed[uint16](dst, p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef); err != nil {
			return err
		}
		for i, b := range dst {
			dst[i] = float64(float16.FromBits(uint16(b)).Float32())
		}
	}
	return nil
}

// keyValues stores a page's integer keys in rows [lo, hi) of the column.
func keyValues(c *column, lo, hi int64, dict []byte, p pageData) error {
	switch c.kind {
	case valInt32:
		return fixed[int32](c.i32[lo:hi], p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valUint32:
		return fixed[uint32](c.u32[lo:hi], p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valInt64:
		return fixed[int64](c.i64[lo:hi], p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valUint64:
		return fixed[uint64](c.u64[lo:hi], p.raw, dict, p.idx, p.dictionary, p.def, c.maxDef)
	}
	return nil
}

// pageNulls records the null rows of a page: with SkipInvalid in the chunk's
// bitmap, else the first null, which stops the task after this page (whose
// rows before the null are decoded, so that a key that is not UTF-8 before
// it is the error reported, as a CSV reader, going row by row, reports it).
func (r *reader) pageNulls(c *column, st *chunkState, groupRows, pos int, def []byte) error {
	for i, d := range def {
		if d == c.maxDef {
			continue
		}
		if !r.opts.SkipInvalid {
			if st.firstNull < 0 {
				st.firstNull = pos + i
			}
			return nil
		}
		if st.nulls == nil {
			st.nulls = make([]uint64, (groupRows+63)/64)
		}
		row := pos + i
		st.nulls[row>>6] |= 1 << (row & 63)
	}
	return nil
}

// readDictionary keeps the chunk's dictionary of n values.
func (s *pageBuffers) readDictionary(c *column, n int, data []byte) error {
	if n < 0 {
		return fmt.Errorf("a dictionary of %d values", n)
	}
	if c.kind == valBytes {
		var err error
		if s.dict, s.dictOffs, err = plainByteArrays(s.dict[:0], s.dictOffs[:0], data, n); err != nil {
			return fmt.Errorf("dictionary page: %w", err)
		}
	} else {
		size := n * c.size()
		if len(data) < size {
			return fmt.Errorf("a dictionary page of %d bytes for %d values", len(data), n)
		}
		s.dict = append(s.dict[:0], data[:size]...)
		if c.kind == valFixed {
			s.dictOffs = fixedOffsets(s.dictOffs, n, c.size())
		}
	}
	s.dictN = n
	return nil
}

// indexes decodes n dictionary indexes: a bit width byte, then the RLE /
// bit-packed hybrid. Their users check them against the dictionary.
func (s *pageBuffers) indexes(data []byte, n int) ([]int32, error) {
	if cap(s.idx) < n {
		s.idx = make([]int32, n+n/4)
	}
	idx := s.idx[:n]
	if n == 0 {
		return idx, nil
	}
	if len(data) == 0 {
		return nil, errors.New("a dictionary-encoded page without indexes")
	}
	if err := rleHybrid(idx, data[1:], uint(data[0])); err != nil {
		return nil, fmt.Errorf("dictionary indexes: %w", err)
	}
	return idx, nil
}

// decodeFixed decodes n fixed-width values in an encoding other than PLAIN
// or a dictionary into scratch: DELTA_BINARY_PACKED or BYTE_STREAM_SPLIT,
// the others the format allows for these types.
func (s *pageBuffers) decodeFixed(size int, enc format.Encoding, data []byte, n int) ([]byte, error) {
	if cap(s.vals) < n*size {
		s.vals = make([]byte, 0, n*size+n*size/4)
	}
	out := s.vals[:n*size]
	switch {
	case enc == format.DeltaBinaryPacked && size == 4:
		return out, deltaBinaryPacked(castSlice[int32](out), data)
	case enc == format.DeltaBinaryPacked && size == 8:
		return out, deltaBinaryPacked(castSlice[int64](out), data)
	case enc == format.ByteStreamSplit:
		if len(data) < len(out) {
			return nil, fmt.Errorf("a page has %d bytes of values where %d values need %d", len(data), n, len(out))
		}
		// Byte j of value i is at data[j*n+i].
		stride := len(data) / size
		for j := 0; j < size; j++ {
			plane := data[j*stride : j*stride+n]
			for i, b := range plane {
				out[i*size+j] = b
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("values in encoding %s", enc)
}

// levelBuf is the scratch for n definition levels.
func (s *pageBuffers) levelBuf(n int) []byte {
	if cap(s.levels) < n {
		s.levels = make([]byte, n+n/4)
	}
	return s.levels[:n]
}

// levelsV1 decodes the definition levels at the start of a data page v1 and
// returns them with the rest of the page.
func (s *pageBuffers) levelsV1(enc format.Encoding, data []byte, rows int, maxDef byte) ([]byte, []byte, error) {
	bw := uint(bits.Len8(maxDef))
	def := s.levelBuf(rows)
	switch enc {
	case format.RLE:
		if len(data) < 4 {
			return nil, nil, errors.New("definition levels cut short")
		}
		n := uint64(binary.LittleEndian.Uint32(data))
		if n > uint64(len(data)-4) {
			return nil, nil, fmt.Errorf("definition levels of %d bytes in a page of %d", n, len(data))
		}
		if err := rleHybrid(def, data[4:4+n], bw); err != nil {
			return nil, nil, fmt.Errorf("definition levels: %w", err)
		}
		return def, data[4+n:], nil
	case format.BitPacked:
		n := (rows*int(bw) + 7) / 8
		if n > len(data) {
			return nil, nil, errors.New("definition levels cut short")
		}
		bitPackedMSB(def, data[:n], bw)
		return def, data[n:], nil
	}
	return nil, nil, fmt.Errorf("definition levels in encoding %s", enc)
}

// decompress decompresses a page (or a data page v2's values) that holds
// size bytes uncompressed.
func (s *pageBuffers) decompress(codec format.CompressionCodec, src []byte, size int) ([]byte, error) {
	if codec == format.Uncompressed {
		return src, nil
	}
	if size < 0 || size > maxPage {
		return nil, fmt.Errorf("a page of %d bytes uncompressed", size)
	}
	// Room past size, so that streaming decoders that fill their buffer
	// before they see the end do not grow it.
	if cap(s.unz) <= size {
		s.unz = make([]byte, size+size/8+4096)
	}
	out, err := decompress(codec, src, s.unz[:size])
	if err != nil {
		return nil, err
	}
	if cap(out) > cap(s.unz) {
		s.unz = out[:0]
	}
	return out, nil
}

// inPlace are the codecs that decompress into a buffer of the exact size.
var inPlace = map[format.CompressionCodec]bool{
	format.Uncompressed: true,
	format.Snappy:       true,
	format.Zstd:         true,
	format.Lz4Raw:       true,
	format.Lz4:          true,
}

// decompressInto decompresses src, which holds len(dst) bytes uncompressed,
// into dst.
func (s *pageBuffers) decompressInto(codec format.CompressionCodec, src, dst []byte) error {
	if codec == format.Uncompressed {
		if len(src) != len(dst) {
			return fmt.Errorf("a page of %d bytes where its header says %d", len(src), len(dst))
		}
		copy(dst, src)
		return nil
	}
	out, err := decompress(codec, src, dst)
	if err != nil {
		return err
	}
	if len(dst) > 0 && unsafe.SliceData(out) != unsafe.SliceData(dst) {
		copy(dst, out)
	}
	return nil
}

// decompress decompresses src into dst (len(dst) bytes, its size
// uncompressed) where the codec can, returning the bytes.
func decompress(codec format.CompressionCodec, src, dst []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch codec {
	case format.Lz4Raw:
		var n int
		n, err = lz4.UncompressBlock(src, dst)
		out = dst[:max(n, 0)]
	case format.Lz4:
		out, err = hadoopLZ4(dst, src)
	default:
		out, err = parquet.LookupCompressionCodec(codec).Decode(dst, src)
	}
	if err != nil {
		return nil, fmt.Errorf("decompressing %s: %w", codec, err)
	}
	if len(out) != len(dst) {
		return nil, fmt.Errorf("a page decompressed to %d bytes where its header says %d", len(out), len(dst))
	}
	return out, nil
}

// direct is the destination of rows [lo, hi) of the file as bytes, where
// PLAIN page values can be decompressed straight into it: key columns, and
// DOUBLE weights.
func (c *column) direct(lo, hi int64) []byte {
	switch {
	case c.role == roleWeight:
		if c.kind == valDouble {
			return alloc.Bytes(c.f64[lo:hi])
		}
	case c.kind == valInt32:
		return alloc.Bytes(c.i32[lo:hi])
	case c.kind == valUint32:
		return alloc.Bytes(c.u32[lo:hi])
	case c.kind == valInt64:
		return alloc.Bytes(c.i64[lo:hi])
	case c.kind == valUint64:
		return alloc.Bytes(c.u64[lo:hi])
	}
	return nil
}

// window reads a column chunk's bytes through a window that holds at
// least the page at hand.
type window struct {
	f         io.ReaderAt
	stream    io.ReadCloser // the chunk's bytes from next on, where f is a ranger
	next, end int64         // file offsets: the next byte to read, the chunk's end
	buf       []byte
	lo, hi    int // the window is buf[lo:hi]
}

// ranger is an io.ReaderAt that can also stream a range of its bytes in
// one request (an object in a store, objstore.Object): a column chunk is
// read through one such stream rather than a request per window fill.
type ranger interface {
	RangeReader(off, n int64) io.ReadCloser
}

func (w *window) reset(f io.ReaderAt, start, end int64) {
	w.release()
	w.f, w.next, w.end, w.lo, w.hi = f, start, end, 0, 0
	if rg, ok := f.(ranger); ok {
		w.stream = rg.RangeReader(start, end-start)
	}
	if w.buf == nil {
		w.buf = make([]byte, 256<<10)
	}
}

// fill makes n bytes available in the window, or all that remain of the
// chunk; it reports whether n are.
func (w *window) fill(n int) (bool, error) {
	if w.hi-w.lo >= n {
		return true, nil
	}
	full := true
	if remain := int64(w.hi-w.lo) + (w.end - w.next); int64(n) > remain {
		n, full = int(remain), false
	}
	if w.lo > 0 {
		copy(w.buf, w.buf[w.lo:w.hi])
		w.hi -= w.lo
		w.lo = 0
	}
	if len(w.buf) < n {
		buf := make([]byte, max(n, 2*len(w.buf)))
		copy(buf, w.buf[:w.hi])
		w.buf = buf
	}
	for w.hi < n {
		want := int(min(int64(len(w.buf)-w.hi), w.end-w.next))
		got, err := w.read(w.buf[w.hi : w.hi+want])
		w.hi += got
		w.next += int64(got)
		if w.hi >= n {
			break
		}
		if err == nil && got == 0 || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return false, err
		}
	}
	return full, nil
}

// read reads the chunk's next bytes into p.
func (w *window) read(p []byte) (int, error) {
	if w.stream != nil {
		return io.ReadFull(w.stream, p)
	}
	return w.f.ReadAt(p, w.next)
}

// release ends the window's stream, if any.
func (w *window) release() {
	if w.stream != nil {
		w.stream.Close()
		w.stream = nil
	}
}

// offset is the file offset of the next byte take or header reads.
func (w *window) offset() int64 { return w.next - int64(w.hi-w.lo) }

// take returns the next n bytes of the chunk, valid until the next call.
func (w *window) take(n int) ([]byte, error) {
	full, err := w.fill(n)
	if err != nil {
		return nil, err
	}
	if !full {
		return nil, io.ErrUnexpectedEOF
	}
	b := w.buf[w.lo : w.lo+n]
	w.lo += n
	return b, nil
}

// header decodes the next page header; io.EOF at the end of the chunk.
func (w *window) header(proto *thrift.CompactProtocol, h *format.PageHeader) error {
	for size := 16 << 10; ; size *= 4 {
		full, err := w.fill(size)
		if err != nil {
			return err
		}
		if w.hi == w.lo {
			return io.EOF
		}
		pr := proto.NewReaderFromBytes(w.buf[w.lo:w.hi])
		*h = format.PageHeader{}
		err = thrift.NewDecoder(pr).Decode(h)
		if err == nil {
			w.lo += pr.BytesRead()
			return nil
		}
		if !full || size >= 16<<20 {
			return err
		}
	}
}

type number interface {
	~uint16 | ~int32 | ~int64 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// castSlice views b as a slice of T.
func castSlice[T any](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// fixed decodes a page of fixed-width values into dst (one element per
// row). raw holds the page's non-null values, or with dictionary the
// dictionary's values (dictRaw) that idx names. Without def, every row has
// a value, copied or converted; with def, rows whose definition level is
// below maxDef are null and get 0.
func fixed[S, D number](dst []D, raw, dictRaw []byte, idx []int32, dictionary bool, def []byte, maxDef byte) error {
	if dictionary {
		dict := castSlice[S](dictRaw)
		if def == nil {
			return gather(dst, dict, idx)
		}
		return gatherScatter(dst, dict, idx, def, maxDef)
	}
	vals := castSlice[S](raw)
	if def == nil {
		if len(vals) != len(dst) {
			return fmt.Errorf("a page has %d values for %d rows", len(vals), len(dst))
		}
		if d, ok := any(dst).([]S); ok {
			copy(d, vals)
			return nil
		}
		for i, v := range vals {
			dst[i] = D(v)
		}
		return nil
	}
	return scatter(dst, vals, def, maxDef)
}

func errDictIndex(x int32, n int) error {
	return fmt.Errorf("dictionary index %d out of range (dictionary of %d values)", x, n)
}

var (
	errFewer = errors.New("a page has fewer values than its definition levels say")
	errMore  = errors.New("a page has more values than its definition levels say")
)

func gather[S, D number](dst []D, dict []S, idx []int32) error {
	if len(idx) != len(dst) {
		return fmt.Errorf("a page has %d values for %d rows", len(idx), len(dst))
	}
	n := uint32(len(dict))
	for i, x := range idx {
		if uint32(x) >= n {
			return errDictIndex(x, len(dict))
		}
		dst[i] = D(dict[x])
	}
	return nil
}

func scatter[S, D number](dst []D, vals []S, def []byte, maxDef byte) error {
	dst = dst[:len(def)]
	k := 0
	for i, d := range def {
		if d != maxDef {
			dst[i] = 0
			continue
		}
		if k >= len(vals) {
			return errFewer
		}
		dst[i] = D(vals[k])
		k++
	}
	if k != len(vals) {
		return errMore
	}
	return nil
}

func gatherScatter[S, D number](dst []D, dict []S, idx []int32, def []byte, maxDef byte) error {
	dst = dst[:len(def)]
	n := uint32(len(dict))
	k := 0
	for i, d := range def {
		if d != maxDef {
			dst[i] = 0
			continue
		}
		if k >= len(idx) {
			return errFewer
		}
		x := idx[k]
		if uint32(x) >= n {
			return errDictIndex(x, len(dict))
		}
		dst[i] = D(dict[x])
		k++
	}
	if k != len(idx) {
		return errMore
	}
	return nil
}

// stringCol collects one row group's strings.
type stringCol struct {
	offsets []int64 // rows+1; offsets[0] == 0
	data    []byte
}

func newStringCol(rows int, sizeHint int64) *stringCol {
	// The hint is the chunk's uncompressed size, which holds the strings
	// (plus 4-byte lengths) of plain pages; dictionary pages expand.
	hint := max(min(sizeHint, int64(rows)*64+4096, 1<<30), 0)
	return &stringCol{offsets: make([]int64, rows+1), data: make([]byte, 0, hint)}
}

func (s *stringCol) strings() edges.Strings { return edges.Strings{Offsets: s.offsets, Data: s.data} }

// pagePlain decodes a PLAIN page of strings (each a 4-byte length and its
// bytes) for rows [pos, pos+rows).
func (s *stringCol) pagePlain(pos, rows int, src []byte, def []byte, maxDef byte) error {
	out := s.offsets[pos+1 : pos+1+rows]
	p := 0
	for i := range out {
		if def != nil && def[i] != maxDef {
			out[i] = int64(len(s.data))
			continue
		}
		if len(src)-p < 4 {
			return errFewer
		}
		l := uint64(binary.LittleEndian.Uint32(src[p:]))
		p += 4
		if l > uint64(len(src)-p) {
			return errors.New("a string runs past the end of its page")
		}
		s.data = append(s.data, src[p:p+int(l)]...)
		p += int(l)
		out[i] = int64(len(s.data))
	}
	return nil
}

// page appends one page's strings for rows [pos, pos+rows): p's values
// raw with offsets offs, or with p.dictionary those of the dictionary
// (dictRaw, dictOffs) that p.idx names.
func (s *stringCol) page(pos, rows int, p pageData, dictRaw []byte, dictOffs []uint32, maxDef byte) error {
	out := s.offsets[pos+1 : pos+1+rows]
	if p.dictionary {
		return s.pageDict(out, p, dictRaw, dictOffs, maxDef)
	}
	raw, offs, def := p.raw, p.offs, p.def
	k := 0
	for i := range out {
		if def != nil && def[i] != maxDef {
			out[i] = int64(len(s.data))
			continue
		}
		if k+1 >= len(offs) {
			return errFewer
		}
		lo, hi := offs[k], offs[k+1]
		k++
		if lo > hi || int(hi) > len(raw) {
			return errors.New("byte array offsets out of range")
		}
		s.data = append(s.data, raw[lo:hi]...)
		out[i] = int64(len(s.data))
	}
	if k+1 != len(offs) {
		return errMore
	}
	return nil
}

// pageDict appends a dictionary-encoded page's strings, ending at out.
func (s *stringCol) pageDict(out []int64, p pageData, dictRaw []byte, dictOffs []uint32, maxDef byte) error {
	idx, def := p.idx, p.def
	nd := max(len(dictOffs)-1, 0)
	k := 0
	for i := range out {
		if def != nil && def[i] != maxDef {
			out[i] = int64(len(s.data))
			continue
		}
		if k >= len(idx) {
			return errFewer
		}
		x := idx[k]
		k++
		if uint32(x) >= uint32(nd) {
			return errDictIndex(x, nd)
		}
		lo, hi := dictOffs[x], dictOffs[x+1]
		if lo > hi || int(hi) > len(dictRaw) {
			return fmt.Errorf("dictionary entry %d has bad offsets", x)
		}
		s.data = append(s.data, dictRaw[lo:hi]...)
		out[i] = int64(len(s.data))
	}
	if k != len(idx) {
		return errMore
	}
	return nil
}

// compact drops the row group's rows that have a null in any edge column
// or a key that is not UTF-8, counting each by its first reason in the
// order the CSV reader checks them (a null key, a key not UTF-8, a null
// weight), and records the rows kept.
func (r *reader) compact(grp *group) {
	has := false
	for c := range r.cols {
		has = has || grp.cols[c].nulls != nil || grp.cols[c].bad != nil
	}
	if !has {
		return
	}
	kept := make([]int64, 0, grp.rows)
	for i := 0; i < grp.rows; i++ {
		if !r.dropRow(grp, i) {
			kept = append(kept, grp.first+int64(i))
		}
	}
	grp.kept = kept
	lo, hi := grp.first, grp.first+int64(grp.rows)
	for ci := range r.cols {
		c := &r.cols[ci]
		switch {
		case c.role == roleWeight:
			compactKept(c.f64[lo:hi], grp.first, kept)
		case c.kind == valInt32:
			compactKept(c.i32[lo:hi], grp.first, kept)
		case c.kind == valUint32:
			compactKept(c.u32[lo:hi], grp.first, kept)
		case c.kind == valInt64:
			compactKept(c.i64[lo:hi], grp.first, kept)
		case c.kind == valUint64:
			compactKept(c.u64[lo:hi], grp.first, kept)
		case c.kind == valBytes:
			compactStrings(&grp.cols[ci].str, grp.first, kept)
		}
	}
}

// dropRow says whether row i of the row group is dropped, and counts it.
func (r *reader) dropRow(grp *group, i int) bool {
	has := func(bits []uint64) bool { return bits != nil && bits[i>>6]&(1<<(i&63)) != 0 }
	for c := range r.cols {
		if r.cols[c].role != roleWeight && has(grp.cols[c].nulls) {
			grp.skips[c]++
			return true
		}
	}
	for c := range r.cols {
		if has(grp.cols[c].bad) {
			grp.badUTF8++
			return true
		}
	}
	for c := range r.cols {
		if r.cols[c].role == roleWeight && has(grp.cols[c].nulls) {
			grp.skips[c]++
			return true
		}
	}
	return false
}

// compactKept moves the kept rows of s, a row group's values from input row
// first on, to its front.
func compactKept[T any](s []T, first int64, kept []int64) {
	for k, row := range kept {
		s[k] = s[row-first]
	}
}

func compactStrings(s *edges.Strings, first int64, kept []int64) {
	var end int64
	for k, row := range kept {
		i := row - first
		lo, hi := s.Offsets[i], s.Offsets[i+1]
		copy(s.Data[end:], s.Data[lo:hi]) // end <= lo: moves left
		end += hi - lo
		s.Offsets[k+1] = end
	}
	s.Offsets = s.Offsets[:len(kept)+1]
	s.Data = s.Data[:end]
}

// assemble adds one chunk per row group to t (their rows numbered from
// the file's base) and counts the skipped rows.
func (r *reader) assemble(t *edges.Table) {
	var skips [3]int64
	var badUTF8 int64
	t.Chunks = slices.Grow(t.Chunks, len(r.groups))
	for g := range r.groups {
		for ci := range r.cols {
			skips[ci] += r.groups[g].skips[ci]
		}
		badUTF8 += r.groups[g].badUTF8
		for i := range r.groups[g].kept {
			r.groups[g].kept[i] += r.base
		}
		t.Chunks = append(t.Chunks, r.chunk(g))
	}
	if badUTF8 > 0 {
		t.Skipped.Add(edges.SkipBadUTF8, badUTF8)
	}
	for ci := range r.cols {
		if r.cols[ci].dec != nil {
			if note := r.decimalNote(ci); note != "" {
				t.Notes = append(t.Notes, note)
			}
		}
	}
	for ci := range r.cols {
		if skips[ci] == 0 {
			continue
		}
		c := &r.cols[ci]
		if c.role == roleWeight {
			t.Skipped.Add(edges.SkipNullWeight(c.name), skips[ci])
		} else {
			t.Skipped.Add(edges.SkipNullKey(c.name), skips[ci])
		}
	}
}

// chunk is row group g's chunk of the table: its slices of the whole
// file's columns (its rows kept, when rows were dropped).
func (r *reader) chunk(g int) edges.Chunk {
	grp := &r.groups[g]
	n := int64(grp.rows)
	if grp.kept != nil {
		n = int64(len(grp.kept))
	}
	lo, hi, end := grp.first, grp.first+n, grp.first+int64(grp.rows)
	ch := edges.Chunk{FirstRow: r.base + grp.first, Rows: grp.kept}
	for ci := range r.cols {
		c := &r.cols[ci]
		var k edges.Keys
		switch {
		case c.role == roleWeight:
			ch.Weight = c.f64[lo:hi:end]
			continue
		case c.kind == valInt32:
			k.Int32 = c.i32[lo:hi:end]
		case c.kind == valUint32:
			k.Uint32 = c.u32[lo:hi:end]
		case c.kind == valInt64:
			k.Int64 = c.i64[lo:hi:end]
		case c.kind == valUint64:
			k.Uint64 = c.u64[lo:hi:end]
		case c.kind == valBytes:
			s := grp.cols[ci].str
			k.Str = &s
		}
		if c.role == roleSrc {
			ch.Src = k
		} else {
			ch.Dst = k
		}
	}
	return ch
}
