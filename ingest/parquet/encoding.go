package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pierrec/lz4/v4"
)

// Encodings the Parquet reader decodes itself: the RLE / bit-packed hybrid
// (definition levels, dictionary indexes), the deprecated BIT_PACKED levels,
// DELTA_BINARY_PACKED, PLAIN byte arrays, and the Hadoop framing of LZ4.
// Each decodes into a buffer of the size the page's levels call for and
// checks every length it reads against its input.

// deltaBinaryPacked decodes len(out) values of the DELTA_BINARY_PACKED
// encoding. It adds in 64-bit two's complement, so that INT32 columns decode
// whether their writer computed deltas in 32 bits (bit widths up to 32) or
// in 64 (up to 33, as Arrow's Go writer does; parquet-go's decoder gets
// those wrong).
func deltaBinaryPacked[T int32 | int64](out []T, src []byte) error {
	if len(out) == 0 {
		return nil
	}
	var vals [4]uint64
	p := 0
	for i := range vals {
		var k int
		if i == 3 {
			var v int64
			v, k = binary.Varint(src[p:])
			vals[i] = uint64(v)
		} else {
			vals[i], k = binary.Uvarint(src[p:])
		}
		if k <= 0 {
			return errors.New("bad DELTA_BINARY_PACKED header")
		}
		p += k
	}
	blockSize, miniBlocks, total, last := vals[0], vals[1], vals[2], vals[3]
	if blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<16 || miniBlocks == 0 || blockSize%miniBlocks != 0 || (blockSize/miniBlocks)%32 != 0 {
		return fmt.Errorf("DELTA_BINARY_PACKED blocks of %d values in %d miniblocks", blockSize, miniBlocks)
	}
	if total < uint64(len(out)) {
		return fmt.Errorf("a page has %d values where its levels say %d", total, len(out))
	}
	perMini := int(blockSize / miniBlocks)
	out[0] = T(last)
	i := 1
	for i < len(out) {
		minDelta, k := binary.Varint(src[min(p, len(src)):])
		if k <= 0 {
			return errors.New("DELTA_BINARY_PACKED block cut short")
		}
		p += k
		if uint64(len(src)-p) < miniBlocks {
			return errors.New("DELTA_BINARY_PACKED block cut short")
		}
		widths := src[p : p+int(miniBlocks)]
		p += int(miniBlocks)
		for _, w := range widths {
			if i >= len(out) {
				break
			}
			if w > 64 {
				return fmt.Errorf("DELTA_BINARY_PACKED bit width %d", w)
			}
			count := min(perMini, len(out)-i)
			need := (count*int(w) + 7) / 8
			if need > len(src)-p {
				return errors.New("DELTA_BINARY_PACKED miniblock cut short")
			}
			mini := src[p:]
			mask := ^uint64(0)
			if w < 64 {
				mask = 1<<w - 1
			}
			for j := 0; j < count; j++ {
				bit := j * int(w)
				v := bits64(mini, bit>>3, uint(bit&7), uint(w)) & mask
				last += uint64(minDelta) + v
				out[i] = T(last)
				i++
			}
			p += perMini * int(w) / 8
		}
	}
	return nil
}

// bits64 reads up to 64 bits at byte b, bit shift s, of src, as far as
// src goes.
func bits64(src []byte, b int, s, width uint) uint64 {
	var lo uint64
	if b+8 <= len(src) {
		lo = binary.LittleEndian.Uint64(src[b:])
	} else {
		for k := 0; b+k < len(src) && k < 8; k++ {
			lo |= uint64(src[b+k]) << (8 * k)
		}
	}
	v := lo >> s
	if s+width > 64 && b+8 < len(src) {
		v |= uint64(src[b+8]) << (64 - s)
	}
	return v
}

// hadoopLZ4 decompresses the legacy LZ4 codec: Hadoop's framing (blocks
// of a big-endian uncompressed and compressed length, then an LZ4 block), as
// parquet-java writes it, or else a single raw LZ4 block, as some older
// writers did.
func hadoopLZ4(dst, src []byte) ([]byte, error) {
	out, in := 0, src
	ok := len(in) >= 8
	for ok && len(in) > 0 {
		if len(in) < 8 {
			ok = false
			break
		}
		ul, cl := uint64(binary.BigEndian.Uint32(in)), uint64(binary.BigEndian.Uint32(in[4:]))
		in = in[8:]
		if cl > uint64(len(in)) || ul > uint64(len(dst)-out) {
			ok = false
			break
		}
		n, err := lz4.UncompressBlock(in[:cl], dst[out:out+int(ul)])
		if err != nil || n != int(ul) {
			ok = false
			break
		}
		out += n
		in = in[cl:]
	}
	if ok && out == len(dst) {
		return dst, nil
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return nil, err
	}
	return dst[:n], nil
}

// rleHybrid decodes len(out) values of the RLE / bit-packed hybrid encoding
// (definition levels, dictionary indexes) of bitWidth bits from src.
func rleHybrid[T uint8 | int32](out []T, src []byte, bitWidth uint) error {
	if bitWidth > 32 {
		return fmt.Errorf("bit width %d", bitWidth)
	}
	byteWidth := int(bitWidth+7) / 8
	i, p := 0, 0
	for i < len(out) {
		if p >= len(src) {
			return fmt.Errorf("RLE data ends after %d of %d values", i, len(out))
		}
		h, k := binary.Uvarint(src[p:])
		if k <= 0 {
			return errors.New("bad RLE run header")
		}
		p += k
		left := uint64(len(out) - i)
		if h&1 == 0 { // a run of one value
			count := min(h>>1, left)
			if p+byteWidth > len(src) {
				return errors.New("RLE run cut short")
			}
			var v uint32
			for b := 0; b < byteWidth; b++ {
				v |= uint32(src[p+b]) << (8 * b)
			}
			p += byteWidth
			run := out[i : i+int(count)]
			for j := range run {
				run[j] = T(v)
			}
			i += int(count)
			continue
		}
		// Bit-packed groups of 8 values, bitWidth bytes each; a last run
		// cut short yields the values it holds.
		groups := h >> 1
		avail := uint64(len(src) - p)
		nbytes, count := groups*uint64(bitWidth), groups*8
		if bitWidth > 0 && groups > avail/uint64(bitWidth) {
			nbytes = avail
			count = avail * 8 / uint64(bitWidth)
		}
		count = min(count, left)
		unpack(out[i:i+int(count)], src[p:p+int(nbytes)], bitWidth)
		i += int(count)
		p += int(nbytes)
	}
	return nil
}

// unpack unpacks len(out) values of bitWidth bits, least significant bit
// first, from src.
func unpack[T uint8 | int32](out []T, src []byte, bitWidth uint) {
	if bitWidth == 0 {
		clear(out)
		return
	}
	mask := uint64(1)<<bitWidth - 1
	for j := range out {
		bit := uint(j) * bitWidth
		b := int(bit >> 3)
		var w uint64
		if b+8 <= len(src) {
			w = binary.LittleEndian.Uint64(src[b:])
		} else {
			for k := 0; b+k < len(src) && k < 8; k++ {
				w |= uint64(src[b+k]) << (8 * k)
			}
		}
		out[j] = T((w >> (bit & 7)) & mask)
	}
}

// bitPackedMSB decodes the deprecated BIT_PACKED level encoding: values
// of bitWidth bits, most significant bit first.
func bitPackedMSB(out []byte, src []byte, bitWidth uint) {
	bit := uint(0)
	for j := range out {
		var v byte
		for k := uint(0); k < bitWidth; k++ {
			v = v<<1 | (src[bit>>3]>>(7-bit&7))&1
			bit++
		}
		out[j] = v
	}
}

// countNot counts the levels other than v.
func countNot(levels []byte, v byte) int {
	n, i := 0, 0
	pattern := uint64(v) * 0x0101010101010101
	for ; i+8 <= len(levels); i += 8 {
		if binary.LittleEndian.Uint64(levels[i:]) != pattern {
			for _, l := range levels[i : i+8] {
				if l != v {
					n++
				}
			}
		}
	}
	for _, l := range levels[i:] {
		if l != v {
			n++
		}
	}
	return n
}

// plainByteArrays decodes n PLAIN byte arrays (each a 4-byte length and
// its bytes), appending their bytes to data and n+1 offsets to offs.
func plainByteArrays(data []byte, offs []uint32, src []byte, n int) ([]byte, []uint32, error) {
	offs = append(offs, uint32(len(data)))
	p := 0
	for range n {
		if len(src)-p < 4 {
			return data, offs, errors.New("byte arrays cut short")
		}
		l := uint64(binary.LittleEndian.Uint32(src[p:]))
		p += 4
		if l > uint64(len(src)-p) {
			return data, offs, errors.New("byte arrays cut short")
		}
		data = append(data, src[p:p+int(l)]...)
		p += int(l)
		if uint64(len(data)) > 1<<32-1 {
			return data, offs, errors.New("a dictionary over 4 GiB")
		}
		offs = append(offs, uint32(len(data)))
	}
	return data, offs, nil
}
