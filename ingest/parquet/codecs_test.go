package parquet

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	pq "github.com/apache/arrow-go/v18/parquet"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// Codecs and encodings that Arrow's Go writer does not write (LZ4 in its
// raw and Hadoop forms, different codecs in different row groups, the
// deprecated BIT_PACKED levels) come from transcoding the pages of an
// uncompressed file it wrote; delta encodings it writes itself.

// lz4Block is an LZ4 block of src: compressed where LZ4 finds matches,
// else literals only.
func lz4Block(src []byte) []byte {
	dst := make([]byte, lz4.CompressBlockBound(len(src)))
	if n, err := lz4.CompressBlock(src, dst, nil); err == nil && n > 0 {
		return dst[:n]
	}
	var out []byte
	if n := len(src); n < 15 {
		out = append(out, byte(n<<4))
	} else {
		out = append(out, 0xf0)
		for m := n - 15; ; m -= 255 {
			if m < 255 {
				out = append(out, byte(m))
				break
			}
			out = append(out, 255)
		}
	}
	return append(out, src...)
}

// compressAs compresses a page body as codec; hadoop says whether LZ4 is
// Hadoop-framed (in two frames) or a raw block.
func compressAs(t *testing.T, codec format.CompressionCodec, hadoop bool, b []byte) []byte {
	var (
		out []byte
		err error
	)
	switch codec {
	case format.Uncompressed:
		return b
	case format.Lz4Raw:
		return lz4Block(b)
	case format.Lz4:
		if !hadoop {
			return lz4Block(b)
		}
		half := len(b) / 2
		for _, part := range [][]byte{b[:half], b[half:]} {
			block := lz4Block(part)
			out = binary.BigEndian.AppendUint32(out, uint32(len(part)))
			out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
			out = append(out, block...)
		}
		return out
	case format.Snappy:
		out, err = parquet.Snappy.Encode(nil, b)
	case format.Zstd:
		out, err = parquet.Zstd.Encode(nil, b)
	case format.Gzip:
		out, err = parquet.Gzip.Encode(nil, b)
	default:
		t.Fatalf("no encoder for %v", codec)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bitPackLevels rewrites a data page v1 body's RLE definition levels (of
// bit width 1) as the deprecated BIT_PACKED encoding.
func bitPackLevels(t *testing.T, body []byte, n int) []byte {
	l := binary.LittleEndian.Uint32(body)
	levels, err := (&rle.Encoding{BitWidth: 1}).DecodeLevels(nil, body[4:4+l])
	if err != nil || len(levels) < n {
		t.Fatalf("decoding levels: %v (%d of %d)", err, len(levels), n)
	}
	packed := make([]byte, (n+7)/8)
	for j, v := range levels[:n] {
		packed[j/8] |= (v & 1) << (7 - j%8)
	}
	return append(packed, body[4+l:]...)
}

type codecChoice struct {
	codec  format.CompressionCodec
	hadoop bool
}

// splitStreams rewrites PLAIN fixed-width values of size bytes as
// BYTE_STREAM_SPLIT.
func splitStreams(values []byte, size int) []byte {
	n := len(values) / size
	out := make([]byte, len(values))
	for i := 0; i < n; i++ {
		for j := 0; j < size; j++ {
			out[j*n+i] = values[i*size+j]
		}
	}
	return out
}

// transcode rewrites an uncompressed Parquet file with a flat schema,
// compressing row group g's pages as codecFor(g), optionally with BIT_PACKED
// definition levels in data pages v1, and with split set, PLAIN fixed-width
// values as BYTE_STREAM_SPLIT.
func transcode(t *testing.T, data []byte, codecFor func(g int) codecChoice, bitPacked, split bool) []byte {
	t.Helper()
	var proto thrift.CompactProtocol
	size := len(data)
	flen := int(binary.LittleEndian.Uint32(data[size-8:]))
	var meta format.FileMetaData
	if err := thrift.Unmarshal(&proto, data[size-8-flen:size-8], &meta); err != nil {
		t.Fatal(err)
	}
	out := []byte("PAR1")
	for g := range meta.RowGroups {
		rg := &meta.RowGroups[g]
		choice := codecFor(g)
		if len(meta.Schema) != 1+len(rg.Columns) {
			t.Fatal("the schema is not flat")
		}
		for ci := range rg.Columns {
			cc := &rg.Columns[ci]
			md := &cc.MetaData
			if md.Codec != format.Uncompressed {
				t.Fatal("the file is compressed")
			}
			optional := meta.Schema[1+ci].RepetitionType.V == format.Optional
			width := map[format.Type]int{format.Int32: 4, format.Int64: 8, format.Float: 4, format.Double: 8}[meta.Schema[1+ci].Type.V]
			start := md.DataPageOffset
			if d := md.DictionaryPageOffset; d > 0 && d < start {
				start = d
			}
			end := start + md.TotalCompressedSize
			newStart := int64(len(out))
			md.DictionaryPageOffset, md.DataPageOffset = 0, 0
			for p := start; p < end; {
				pr := proto.NewReaderFromBytes(data[p:end])
				var h format.PageHeader
				if err := thrift.NewDecoder(pr).Decode(&h); err != nil {
					t.Fatal(err)
				}
				p += int64(pr.BytesRead())
				body := data[p : p+int64(h.CompressedPageSize)]
				p += int64(h.CompressedPageSize)
				switch h.Type {
				case format.DictionaryPage:
					md.DictionaryPageOffset = int64(len(out))
					body = compressAs(t, choice.codec, choice.hadoop, body)
				case format.DataPage:
					if md.DataPageOffset == 0 {
						md.DataPageOffset = int64(len(out))
					}
					if split && width > 0 && h.DataPageHeader.V.Encoding == format.Plain {
						levels := 0
						if optional {
							levels = 4 + int(binary.LittleEndian.Uint32(body))
						}
						body = append(append([]byte(nil), body[:levels]...), splitStreams(body[levels:], width)...)
						h.DataPageHeader.V.Encoding = format.ByteStreamSplit
					}
					if bitPacked && optional {
						body = bitPackLevels(t, body, int(h.DataPageHeader.V.NumValues))
						h.DataPageHeader.V.DefinitionLevelEncoding = format.BitPacked
						h.UncompressedPageSize = int32(len(body))
					}
					body = compressAs(t, choice.codec, choice.hadoop, body)
				case format.DataPageV2:
					if md.DataPageOffset == 0 {
						md.DataPageOffset = int64(len(out))
					}
					hd := &h.DataPageHeaderV2.V
					levels := int(hd.RepetitionLevelsByteLength + hd.DefinitionLevelsByteLength)
					if split && width > 0 && hd.Encoding == format.Plain {
						body = append(append([]byte(nil), body[:levels]...), splitStreams(body[levels:], width)...)
						hd.Encoding = format.ByteStreamSplit
					}
					body = append(append([]byte(nil), body[:levels]...), compressAs(t, choice.codec, choice.hadoop, body[levels:])...)
					hd.IsCompressed = thrift.New(choice.codec != format.Uncompressed)
				}
				h.CompressedPageSize = int32(len(body))
				h.CRC = 0
				hb, err := thrift.Marshal(&proto, &h)
				if err != nil {
					t.Fatal(err)
				}
				out = append(append(out, hb...), body...)
			}
			md.Codec = choice.codec
			md.TotalCompressedSize = int64(len(out)) - newStart
			cc.FileOffset = newStart
			cc.ColumnIndexOffset, cc.ColumnIndexLength, cc.OffsetIndexOffset, cc.OffsetIndexLength = 0, 0, 0, 0
		}
	}
	footer, err := thrift.Marshal(&proto, &meta)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// TestParquetCodecs reads files whose row groups use LZ4_RAW, LZ4 (Hadoop
// framing and raw), snappy, zstd, gzip and no compression, one file mixing
// them all, with data pages v1 (RLE and BIT_PACKED levels) and v2, and
// fixed-width values PLAIN or BYTE_STREAM_SPLIT.
func TestParquetCodecs(t *testing.T) {
	dir := t.TempDir()
	choices := []codecChoice{
		{format.Lz4Raw, false}, {format.Lz4, true}, {format.Lz4, false},
		{format.Snappy, false}, {format.Zstd, false}, {format.Gzip, false}, {format.Uncompressed, false},
	}
	const rgRows = 150
	rows := rgRows*len(choices) - 40
	n := 0
	for _, v2 := range []bool{false, true} {
		for _, bitPacked := range []bool{false, true} {
			if v2 && bitPacked {
				continue
			}
			for _, kt := range []int{1, 4, 6} { // int64, string, dictionary
				n++
				key := keyTypes[kt]
				name := fmt.Sprintf("v2=%v-bitpacked=%v-%s", v2, bitPacked, key.name)
				t.Run(name, func(t *testing.T) {
					c := randomEdges(uint64(200+n), rows, rgRows, key.typ, arrow.PrimitiveTypes.Float64, false, 0.05, 0.05)
					w := edgetest.ParquetWrite{Codec: pqcompress.Codecs.Uncompressed, Dict: n%2 == 0, V2: v2, RowGroupRows: rgRows, PageSize: 300}
					src := c.write(t, dir, name+"-src.parquet", true, w)
					data, err := os.ReadFile(src)
					if err != nil {
						t.Fatal(err)
					}
					path := filepath.Join(dir, name+".parquet")
					writeBytes(t, path, transcode(t, data, func(g int) codecChoice { return choices[g%len(choices)] }, bitPacked, false))
					opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}
					readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, key.key, rgRows) })

					// Each codec throughout.
					for _, ch := range choices {
						one := transcode(t, data, func(int) codecChoice { return ch }, bitPacked, !bitPacked)
						writeBytes(t, path, one)
						readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, key.key, rgRows) })
					}
				})
			}
		}
	}
}

// TestParquetDeltaEncodings reads columns in the delta encodings, with and
// without nulls.
func TestParquetDeltaEncodings(t *testing.T) {
	dir := t.TempDir()
	const rows, rgRows = 900, 300
	for i, tc := range []struct {
		key     int
		keyEnc  pq.Encoding
		weight  arrow.DataType
		wEnc    pq.Encoding
		nulls   float64
		version bool
	}{
		{1, pq.Encodings.DeltaBinaryPacked, arrow.PrimitiveTypes.Int32, pq.Encodings.DeltaBinaryPacked, 0, false},
		{0, pq.Encodings.DeltaBinaryPacked, arrow.PrimitiveTypes.Int64, pq.Encodings.DeltaBinaryPacked, 0.05, true},
		{3, pq.Encodings.DeltaBinaryPacked, arrow.PrimitiveTypes.Float64, pq.Encodings.Plain, 0.05, false},
		{4, pq.Encodings.DeltaLengthByteArray, arrow.PrimitiveTypes.Uint32, pq.Encodings.DeltaBinaryPacked, 0, true},
		{5, pq.Encodings.DeltaByteArray, nil, pq.Encodings.Plain, 0.05, false},
		{4, pq.Encodings.DeltaByteArray, arrow.PrimitiveTypes.Float32, pq.Encodings.Plain, 0, true},
	} {
		key := keyTypes[tc.key]
		name := fmt.Sprintf("%d-%s-%v", i, key.name, tc.keyEnc)
		t.Run(name, func(t *testing.T) {
			c := randomEdges(uint64(300+i), rows, rgRows, key.typ, tc.weight, false, tc.nulls, tc.nulls)
			tbl := arrowTable(t, c.rows, c.cols, false)
			defer tbl.Release()
			props := []pq.WriterProperty{
				pq.WithDictionaryDefault(false),
				pq.WithEncodingFor("src", tc.keyEnc),
				pq.WithEncodingFor("dst", tc.keyEnc),
				pq.WithEncodingFor("weight", tc.wEnc),
				pq.WithMaxRowGroupLength(rgRows),
				pq.WithDataPageSize(700),
				pq.WithCompression(pqcompress.Codecs.Snappy),
			}
			if tc.version {
				props = append(props, pq.WithDataPageVersion(pq.DataPageV2))
			}
			path := filepath.Join(dir, name+".parquet")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := pqarrow.WriteTable(tbl, f, rgRows, pq.NewWriterProperties(props...), pqarrow.DefaultWriterProps()); err != nil {
				t.Fatal(err)
			}
			opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}
			readChecked(t, path, opts, func(tbl *edges.Table) { c.check(t, tbl, opts, key.key, rgRows) })
		})
	}
}
