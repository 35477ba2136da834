package edges

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/gpipe/gpipe/internal/echo"
)

// Decimal weights: DECIMAL(p,s) columns (DuckDB's type for a literal such
// as 1.5, and what Spark and warehouses export) are read as float64, the
// nearest double to unscaled × 10^-scale. A float64 holds any decimal of up
// to 15 significant digits exactly enough that printing it with those
// digits gives the decimal back; a value with more may be rounded, and the
// read says so in a note (DecimalLoss), never silently.

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// DecimalInt64 is the float64 nearest the decimal unscaled × 10^-scale,
// and whether the decimal is recovered from it (printed with the
// decimal's significant digits).
func DecimalInt64(unscaled int64, scale int32) (float64, bool) {
	u := unscaled
	if u < 0 {
		u = -u // MinInt64 stays negative and takes the slow path
	}
	if u >= 0 && u < 1e15 && scale >= 0 && int(scale) < len(pow10) {
		// Both exact, so the quotient is correctly rounded; 15 digits
		// survive the round trip.
		return float64(unscaled) / pow10[scale], true
	}
	return decimalText(strconv.FormatInt(unscaled, 10), scale)
}

// DecimalBytes is DecimalInt64 for an unscaled value in big-endian two's
// complement of any length (Parquet's FIXED_LEN_BYTE_ARRAY and BYTE_ARRAY
// decimals); no bytes is 0.
func DecimalBytes(b []byte, scale int32) (float64, bool) {
	if len(b) <= 8 {
		var v int64
		if len(b) > 0 && b[0]&0x80 != 0 {
			v = -1
		}
		for _, x := range b {
			v = v<<8 | int64(x)
		}
		return DecimalInt64(v, scale)
	}
	return DecimalBig(BytesInt(b), scale)
}

// DecimalBig is DecimalInt64 for an unscaled value of any size (Arrow's
// decimal128 and decimal256).
func DecimalBig(unscaled *big.Int, scale int32) (float64, bool) {
	if unscaled.IsInt64() {
		return DecimalInt64(unscaled.Int64(), scale)
	}
	return decimalText(unscaled.Text(10), scale)
}

// decimalText converts the decimal digits × 10^-scale (digits an integer
// in base 10, with its sign) exactly rounded, and checks that the decimal
// comes back from the float64.
func decimalText(digits string, scale int32) (float64, bool) {
	f, err := strconv.ParseFloat(digits+"e"+strconv.Itoa(-int(scale)), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return math.NaN(), false // digits is an integer's text: not reached
	}
	mant := strings.TrimLeft(digits, "-0")
	exp := len(mant) - 1 - int(scale)
	mant = strings.TrimRight(mant, "0")
	if mant == "" {
		return f, true // zero
	}
	want := mant[:1]
	if len(mant) > 1 {
		want += "." + mant[1:]
	}
	want += fmt.Sprintf("e%+03d", exp)
	if strings.HasPrefix(digits, "-") {
		want = "-" + want
	}
	return f, strconv.FormatFloat(f, 'e', len(mant)-1, 64) == want
}

// DecimalString is the decimal unscaled × 10^-scale as text, for messages.
func DecimalString(unscaled *big.Int, scale int32) string {
	s := unscaled.Text(10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	switch {
	case scale < 0:
		s += strings.Repeat("0", int(-scale))
	case scale > 0:
		if len(s) <= int(scale) {
			s = strings.Repeat("0", int(scale)-len(s)+1) + s
		}
		s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// BytesInt is a big-endian two's complement integer as a big.Int.
func BytesInt(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}

// DecimalLoss counts the decimal weights of a column that a float64 does
// not hold, and keeps the first (lowest row) for the note.
type DecimalLoss struct {
	Count int64
	Row   int64  // input row of the first; valid when Count > 0
	Value string // the first as the input wrote it
	Float float64
}

// Add records a rounded weight at row.
func (l *DecimalLoss) Add(row int64, value string, f float64) {
	if l.Count == 0 || row < l.Row {
		l.Row, l.Value, l.Float = row, value, f
	}
	l.Count++
}

// Merge adds another part's losses.
func (l *DecimalLoss) Merge(o DecimalLoss) {
	if o.Count == 0 {
		return
	}
	n := l.Count
	l.Add(o.Row, o.Value, o.Float)
	l.Count = n + o.Count
}

// Note is the table's note for the losses of the weight column named
// column, of type typ (as "decimal(38,10)"); "" when there are none.
func (l *DecimalLoss) Note(column, typ string) string {
	if l.Count == 0 {
		return ""
	}
	what := "1 weight has"
	if l.Count > 1 {
		what = fmt.Sprintf("%d weights have", l.Count)
	}
	return fmt.Sprintf("weight column %s is %s, read as float64: %s more significant digits than a float64 holds (15 to 17) and %s rounded (the first, row %d: %s became %s)",
		echo.Quote(column), typ, what, map[bool]string{true: "was", false: "were"}[l.Count == 1], l.Row, echo.Text(l.Value), strconv.FormatFloat(l.Float, 'g', -1, 64))
}
