package edges

import (
	"math"
	"math/big"
	"strconv"
	"testing"
)

// A decimal is read as the float64 nearest its value (strconv's rounding
// of its text), and said exact when printing that float64 with the
// decimal's significant digits gives it back.
func TestDecimalFloat(t *testing.T) {
	for _, tc := range []struct {
		unscaled string
		scale    int32
		exact    bool
	}{
		{"15", 1, true}, {"3", 1, true}, {"-225", 2, true}, {"0", 5, true}, {"7", 0, true},
		{"123456789012345", 3, true},       // 15 digits
		{"1234567890123456", 3, true},      // 16 digits that happen to survive
		{"12345678901234567", 0, false},    // 17 digits: ...568
		{"12345678901234567000", 3, false}, // trailing zeros count as nothing
		{"12345000000000000000", 3, true},
		{"-9223372036854775808", 0, true}, // MinInt64 is a power of two
		{"5", -3, true},                   // 5000
		{"99999999999999999999999999999999999999", 2, false},
		{"1", 76, true},
	} {
		u, _ := new(big.Int).SetString(tc.unscaled, 10)
		want, _ := strconv.ParseFloat(tc.unscaled+"e"+strconv.Itoa(-int(tc.scale)), 64)
		f, exact := DecimalBig(u, tc.scale)
		if f != want || exact != tc.exact {
			t.Errorf("%se-%d: %v, %v; want %v, %v", tc.unscaled, tc.scale, f, exact, want, tc.exact)
		}
		if u.IsInt64() {
			if f2, exact2 := DecimalInt64(u.Int64(), tc.scale); f2 != f || exact2 != exact {
				t.Errorf("DecimalInt64(%s, %d) = %v, %v", tc.unscaled, tc.scale, f2, exact2)
			}
		}
		b := u.Bytes()
		if u.Sign() < 0 {
			// Two's complement in one more byte than the magnitude.
			m := new(big.Int).Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*(len(b)+1))))
			b = m.FillBytes(make([]byte, len(b)+1))
		} else {
			b = append([]byte{0}, b...)
		}
		if f3, _ := DecimalBytes(b, tc.scale); f3 != f {
			t.Errorf("DecimalBytes(%x, %d) = %v", b, tc.scale, f3)
		}
	}
	if got := DecimalString(big.NewInt(-5), 3); got != "-0.005" {
		t.Errorf("DecimalString: %s", got)
	}
	if got := DecimalString(big.NewInt(12), -2); got != "1200" {
		t.Errorf("DecimalString: %s", got)
	}
	if f, _ := DecimalBytes(nil, 0); f != 0 || math.Signbit(f) {
		t.Errorf("no bytes: %v", f)
	}
}
