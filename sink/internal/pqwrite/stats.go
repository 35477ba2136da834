package pqwrite

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/parquet-go/parquet-go/format"
)

// maxStatBytes is the longest byte array min or max written; a chunk whose
// min or max is longer gets only its null count, as in Arrow's writer.
const maxStatBytes = 4096

// stats gathers a column chunk's statistics: min and max by the order of
// the column's type (signed, unsigned, IEEE without NaN, bytewise) and the
// null count.
type stats struct {
	kind  kind
	nulls int64
	has   bool // min and max hold a value
	imin  int64
	imax  int64
	umin  uint64
	umax  uint64
	fmin  float64
	fmax  float64
	bmin  []byte // byte arrays: views of the values, copied by thrift
	bmax  []byte
}

func newStats(k kind) stats { return stats{kind: k} }

// addFixed takes fixed-width values, packed (no nulls among them).
func (s *stats) addFixed(b []byte) {
	if len(b) == 0 {
		return
	}
	switch s.kind {
	case kindInt32:
		lo, hi := minMax(castSlice[int32](b))
		s.addInt(int64(lo), int64(hi))
	case kindInt64:
		lo, hi := minMax(castSlice[int64](b))
		s.addInt(lo, hi)
	case kindUint32:
		lo, hi := minMax(castSlice[uint32](b))
		s.addUint(uint64(lo), uint64(hi))
	case kindUint64:
		lo, hi := minMax(castSlice[uint64](b))
		s.addUint(lo, hi)
	case kindFloat32:
		if lo, hi, ok := minMaxFloat(castSlice[float32](b)); ok {
			s.addFloat(float64(lo), float64(hi))
		}
	case kindFloat64:
		if lo, hi, ok := minMaxFloat(castSlice[float64](b)); ok {
			s.addFloat(lo, hi)
		}
	}
}

func (s *stats) addInt(lo, hi int64) {
	if !s.has || lo < s.imin {
		s.imin = lo
	}
	if !s.has || hi > s.imax {
		s.imax = hi
	}
	s.has = true
}

func (s *stats) addUint(lo, hi uint64) {
	if !s.has || lo < s.umin {
		s.umin = lo
	}
	if !s.has || hi > s.umax {
		s.umax = hi
	}
	s.has = true
}

func (s *stats) addFloat(lo, hi float64) {
	if !s.has || lo < s.fmin {
		s.fmin = lo
	}
	if !s.has || hi > s.fmax {
		s.fmax = hi
	}
	s.has = true
}

// addBytes takes one byte array value.
func (s *stats) addBytes(v []byte) {
	if !s.has {
		s.bmin, s.bmax, s.has = v, v, true
		return
	}
	if bytes.Compare(v, s.bmin) < 0 {
		s.bmin = v
	} else if bytes.Compare(v, s.bmax) > 0 {
		s.bmax = v
	}
}

func minMax[T int32 | int64 | uint32 | uint64](v []T) (T, T) {
	lo, hi := v[0], v[0]
	for _, x := range v[1:] {
		lo = min(lo, x)
		hi = max(hi, x)
	}
	return lo, hi
}

// minMaxFloat is the min and max of v without its NaNs; ok is false when
// every value is NaN.
func minMaxFloat[T float32 | float64](v []T) (lo, hi T, ok bool) {
	for _, x := range v {
		if x != x {
			continue
		}
		if !ok {
			lo, hi, ok = x, x, true
			continue
		}
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
	}
	return lo, hi, ok
}

// thrift is the statistics as the footer holds them: PLAIN-encoded min and
// max in min_value and max_value, and in the deprecated min and max too
// where the order is signed, so that older readers use them.
func (s *stats) thrift() format.Statistics {
	st := format.Statistics{NullCount: s.nulls}
	if !s.has {
		return st
	}
	var lo, hi []byte
	switch s.kind {
	case kindInt32:
		lo = binary.LittleEndian.AppendUint32(nil, uint32(int32(s.imin)))
		hi = binary.LittleEndian.AppendUint32(nil, uint32(int32(s.imax)))
	case kindInt64:
		lo = binary.LittleEndian.AppendUint64(nil, uint64(s.imin))
		hi = binary.LittleEndian.AppendUint64(nil, uint64(s.imax))
	case kindUint32:
		lo = binary.LittleEndian.AppendUint32(nil, uint32(s.umin))
		hi = binary.LittleEndian.AppendUint32(nil, uint32(s.umax))
	case kindUint64:
		lo = binary.LittleEndian.AppendUint64(nil, s.umin)
		hi = binary.LittleEndian.AppendUint64(nil, s.umax)
	case kindFloat32, kindFloat64:
		// The format's rule for zeros: a min of zero is written -0, a max
		// of zero +0, so that a reader's filter cannot skip either zero.
		fmin, fmax := s.fmin, s.fmax
		if fmin == 0 {
			fmin = math.Copysign(0, -1)
		}
		if fmax == 0 {
			fmax = 0
		}
		if s.kind == kindFloat32 {
			lo = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(fmin)))
			hi = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(fmax)))
		} else {
			lo = binary.LittleEndian.AppendUint64(nil, math.Float64bits(fmin))
			hi = binary.LittleEndian.AppendUint64(nil, math.Float64bits(fmax))
		}
	case kindBytes:
		if len(s.bmin) > maxStatBytes || len(s.bmax) > maxStatBytes {
			return st
		}
		lo, hi = append([]byte{}, s.bmin...), append([]byte{}, s.bmax...)
	}
	st.MinValue, st.MaxValue = lo, hi
	if s.kind.signedOrder() {
		st.Min, st.Max = lo, hi
	}
	return st
}
