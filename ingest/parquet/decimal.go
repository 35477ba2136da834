package parquet

import (
	"fmt"
	"math/big"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
)

// DECIMAL(p,s) weights, in each of the physical types the format allows:
// INT32 and INT64 (the unscaled value), FIXED_LEN_BYTE_ARRAY and
// BYTE_ARRAY (big-endian two's complement). The pages are decoded as for
// any column of the physical type: integers into the weight column's own
// float64 slots (as int64 bits, 8 bytes each), byte arrays as a string
// key column's are; decimalRows then turns each row group's values into
// float64 in place, counting those a float64 rounds (edges.DecimalLoss).

// decimalType is a decimal weight column's type.
type decimalType struct {
	kind             valKind // valInt32, valInt64, valFixed or valBytes
	width            int     // bytes of a valFixed value
	precision, scale int32
}

func (d *decimalType) String() string { return fmt.Sprintf("decimal(%d,%d)", d.precision, d.scale) }

// decimalOf is the decimal type of a top-level column of schema element
// el (annotated DECIMAL, as a logical or a converted type), nil for
// others.
func decimalOf(el *format.SchemaElement, c *parquet.Column) *decimalType {
	if el == nil || !c.Leaf() || c.Repeated() {
		return nil
	}
	var d decimalType
	if lt, ok := el.LogicalType.Value.(*format.DecimalType); ok {
		d.precision, d.scale = lt.Precision, lt.Scale
	} else if el.ConvertedType.Valid && el.ConvertedType.V == deprecated.Decimal {
		d.precision, d.scale = el.Precision.V, el.Scale.V
	} else {
		return nil
	}
	switch typ := c.Type(); typ.Kind() {
	case parquet.Int32:
		d.kind = valInt32
	case parquet.Int64:
		d.kind = valInt64
	case parquet.ByteArray:
		d.kind = valBytes
	case parquet.FixedLenByteArray:
		if typ.Length() < 1 {
			return nil
		}
		d.kind, d.width = valFixed, typ.Length()
	default:
		return nil
	}
	return &d
}

// size is the width in bytes of the column's fixed-width values.
func (c *column) size() int {
	if c.kind == valFixed {
		return c.dec.width
	}
	return c.kind.size()
}

// fixedOffsets are the offsets of n values of width bytes each, as a byte
// array column's (which the string decoding takes).
func fixedOffsets(buf []uint32, n, width int) []uint32 {
	buf = buf[:0]
	for i := 0; i <= n; i++ {
		buf = append(buf, uint32(i*width))
	}
	return buf
}

// pageData is a data page's values as pageValues decoded them: raw (with
// offs for byte arrays), or with dictionary the indexes idx; def its
// definition levels (nil: no nulls).
type pageData struct {
	raw        []byte
	offs       []uint32
	idx        []int32
	dictionary bool
	def        []byte
}

// decimalPage decodes a page of a decimal weight column into rows
// [pos, pos+rows) of its row group, the file's rows from lo: integers into
// the column's slots, byte arrays into sd.
func decimalPage(c *column, sd *stringCol, s *pageBuffers, pos, rows int, lo int64, p pageData) error {
	switch hi := lo + int64(rows); c.kind {
	case valInt32:
		return fixed[int32](intDecimalDst(c, lo, hi), p.raw, s.dict, p.idx, p.dictionary, p.def, c.maxDef)
	case valInt64:
		return fixed[int64](intDecimalDst(c, lo, hi), p.raw, s.dict, p.idx, p.dictionary, p.def, c.maxDef)
	}
	return sd.page(pos, rows, p, s.dict, s.dictOffs, c.maxDef)
}

// fixedValues are the offsets of a page's n FIXED_LEN_BYTE_ARRAY values
// raw, as a byte array column's, checked to fill raw.
func (s *pageBuffers) fixedValues(c *column, raw []byte, n int) ([]uint32, error) {
	if len(raw) != n*c.size() {
		return nil, fmt.Errorf("a page has %d bytes of values where %d values need %d", len(raw), n, n*c.size())
	}
	s.offs = fixedOffsets(s.offs, n, c.size())
	return s.offs, nil
}

// deltaFixed decodes a DELTA_BYTE_ARRAY page of n FIXED_LEN_BYTE_ARRAY
// values: their bytes and offsets.
func (s *pageBuffers) deltaFixed(c *column, data []byte, n int) ([]byte, []uint32, error) {
	var err error
	if s.vals, err = parquet.LookupEncoding(format.DeltaByteArray).DecodeFixedLenByteArray(s.vals[:0], data, c.size()); err != nil {
		return nil, nil, err
	}
	offs, err := s.fixedValues(c, s.vals, n)
	return s.vals, offs, err
}

// intDecimalDst is where an INT32 or INT64 decimal page's values go: the
// weight column's float64 slots for rows [lo, hi), seen as int64.
func intDecimalDst(c *column, lo, hi int64) []int64 {
	return castSlice[int64](alloc.Bytes(c.f64[lo:hi]))
}

// decimalRows converts row group g's decimal weights, decoded as they were
// stored (ints into the column's slots, byte arrays into sd), to float64 in
// place, and records those a float64 does not hold.
func (r *reader) decimalRows(c *column, g int, st *chunkState, sd *stringCol) {
	grp := &r.groups[g]
	lo, hi := grp.first, grp.first+int64(grp.rows)
	dst := c.f64[lo:hi]
	scale := c.dec.scale
	if c.kind == valInt32 || c.kind == valInt64 {
		u := intDecimalDst(c, lo, hi)
		for i, v := range u {
			f, exact := edges.DecimalInt64(v, scale)
			if !exact {
				st.loss.Add(lo+int64(i), edges.DecimalString(big.NewInt(v), scale), f)
			}
			dst[i] = f
		}
		return
	}
	str := sd.strings()
	for i := range dst {
		b := str.At(i)
		f, exact := edges.DecimalBytes(b, scale)
		if !exact {
			st.loss.Add(lo+int64(i), edges.DecimalString(edges.BytesInt(b), scale), f)
		}
		dst[i] = f
	}
	sd.data, sd.offsets = nil, nil // the strings served their turn
}

// decimalNote is the table's note on the column's rounded weights, "" for
// none.
func (r *reader) decimalNote(ci int) string {
	c := &r.cols[ci]
	var loss edges.DecimalLoss
	for g := range r.groups {
		loss.Merge(r.groups[g].cols[ci].loss)
	}
	return loss.Note(c.name, c.dec.String())
}
