package sink

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/gpipe/gpipe/internal/usererr"
)

// CSV output: a header row of column names, then one line per row ending in
// "\n". Integers are decimal; floats the shortest text that reads back to
// the same value, with inf, -inf and nan (which pandas, DuckDB and pyarrow
// all parse); booleans true and false; nulls empty fields. A string is
// quoted only when it must be (RFC 4180: a comma, quote, CR or LF; and
// leading or trailing white space, which readers may trim); the empty string
// is written as "" so that it differs from a null.

// csvEncoder checks the options and the column types and returns the
// constructor of a CSV encoder.
func csvEncoder(schema *arrow.Schema, compression string) (func(io.Writer) (encoder, error), error) {
	switch strings.ToLower(compression) {
	case "", CompressionNone, "uncompressed":
	default:
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("CSV output cannot be compressed (asked for %q)", compression), "leave the compression unset, or write Parquet")
	}
	for _, f := range schema.Fields() {
		if !csvSupported(f.Type) {
			return nil, &usererr.Error{Kind: usererr.Usage, Column: f.Name, Row: -1,
				Problem: fmt.Sprintf("cannot write type %s as CSV", f.Type), Fix: "write Parquet or Arrow IPC instead"}
		}
	}
	return func(w io.Writer) (encoder, error) {
		bw, ok := w.(*bufio.Writer)
		if !ok {
			bw = bufio.NewWriter(w)
		}
		e := &csvEnc{w: bw, cols: make([]csvColumn, schema.NumFields())}
		b := bw.AvailableBuffer()
		for i, f := range schema.Fields() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCSVString(b, f.Name)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return nil, err
		}
		return e, nil
	}, nil
}

// csvSupported says whether the CSV encoder can write a column of type dt.
func csvSupported(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.NULL,
		arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	case arrow.DICTIONARY:
		return csvSupported(dt.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// csvColumn appends the text of row i of one column to b.
type csvColumn func(b []byte, i int) []byte

// csvEnc writes rows straight into the bufio.Writer's free space.
type csvEnc struct {
	w    *bufio.Writer
	cols []csvColumn
}

func (e *csvEnc) write(rec arrow.RecordBatch) error {
	for j := range e.cols {
		e.cols[j] = newCSVColumn(rec.Column(j))
	}
	cols := e.cols
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		b := e.w.AvailableBuffer()
		for j, col := range cols {
			if j > 0 {
				b = append(b, ',')
			}
			b = col(b, i)
		}
		b = append(b, '\n')
		if _, err := e.w.Write(b); err != nil {
			return err
		}
	}
	clear(e.cols) // keep no reference to rec
	return nil
}

func (e *csvEnc) close() error { return nil }

func (e *csvEnc) abort() {}

// newCSVColumn returns the formatter of one column of one record; the types
// are those csvSupported accepts.
func newCSVColumn(a arrow.Array) csvColumn {
	switch a := a.(type) {
	case *array.Int8:
		return intColumn(a, a.Int8Values())
	case *array.Int16:
		return intColumn(a, a.Int16Values())
	case *array.Int32:
		return intColumn(a, a.Int32Values())
	case *array.Int64:
		return intColumn(a, a.Int64Values())
	case *array.Uint8:
		return uintColumn(a, a.Uint8Values())
	case *array.Uint16:
		return uintColumn(a, a.Uint16Values())
	case *array.Uint32:
		return uintColumn(a, a.Uint32Values())
	case *array.Uint64:
		return uintColumn(a, a.Uint64Values())
	case *array.Float32:
		return floatColumn(a, a.Float32Values(), 32)
	case *array.Float64:
		return floatColumn(a, a.Float64Values(), 64)
	case *array.Boolean:
		return withNulls(a, func(b []byte, i int) []byte {
			if a.Value(i) {
				return append(b, "true"...)
			}
			return append(b, "false"...)
		})
	case *array.String:
		return withNulls(a, func(b []byte, i int) []byte { return appendCSVString(b, a.Value(i)) })
	case *array.LargeString:
		return withNulls(a, func(b []byte, i int) []byte { return appendCSVString(b, a.Value(i)) })
	case *array.StringView:
		return withNulls(a, func(b []byte, i int) []byte { return appendCSVString(b, a.Value(i)) })
	case *array.Dictionary:
		values := newCSVColumn(a.Dictionary())
		return withNulls(a, func(b []byte, i int) []byte { return values(b, a.GetValueIndex(i)) })
	}
	// arrow.NULL, and anything csvSupported let through: empty fields.
	return func(b []byte, _ int) []byte { return b }
}

// withNulls wraps f to write an empty field for a null, where a has any.
func withNulls(a arrow.Array, f csvColumn) csvColumn {
	if a.NullN() == 0 {
		return f
	}
	return func(b []byte, i int) []byte {
		if a.IsNull(i) {
			return b
		}
		return f(b, i)
	}
}

func intColumn[T int8 | int16 | int32 | int64](a arrow.Array, v []T) csvColumn {
	return withNulls(a, func(b []byte, i int) []byte { return strconv.AppendInt(b, int64(v[i]), 10) })
}

func uintColumn[T uint8 | uint16 | uint32 | uint64](a arrow.Array, v []T) csvColumn {
	return withNulls(a, func(b []byte, i int) []byte { return strconv.AppendUint(b, uint64(v[i]), 10) })
}

func floatColumn[T float32 | float64](a arrow.Array, v []T, bits int) csvColumn {
	return withNulls(a, func(b []byte, i int) []byte { return appendCSVFloat(b, float64(v[i]), bits) })
}

// appendCSVFloat appends f in the shortest form that reads back to the same
// float of the given size: inf, -inf and nan for the special values, which
// pandas, DuckDB and pyarrow all read (strconv's +Inf and NaN they do not
// all take).
func appendCSVFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendCSVString appends s as a CSV field, quoted only when it must be: it
// is empty (so that it differs from a null), holds a comma, quote, CR or LF,
// or starts or ends with white space. Quotes inside are doubled.
func appendCSVString(b []byte, s string) []byte {
	if !csvNeedsQuotes(s) {
		return append(b, s...)
	}
	b = append(b, '"')
	for {
		k := strings.IndexByte(s, '"')
		if k < 0 {
			break
		}
		b = append(b, s[:k+1]...)
		b = append(b, '"')
		s = s[k+1:]
	}
	b = append(b, s...)
	return append(b, '"')
}

func csvNeedsQuotes(s string) bool {
	if s == "" || isCSVSpace(s[0]) || isCSVSpace(s[len(s)-1]) {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '"', '\r', '\n':
			return true
		}
	}
	return false
}

func isCSVSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f'
}
