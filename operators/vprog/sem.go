package vprog

import (
	"math"
)

// The scalar semantics both backends share: integers wrap at their
// width, float32 values are rounded to float32 after every operation,
// division by zero and a NaN are faults, min and max compare and select
// (a < b ? a : b), float-to-integer conversions truncate and saturate.
// The PTX generator (ptx.go) emits the same operations, so that CPU and
// GPU agree bit for bit but for the order of atomicAdd's sums.

// fault is a run-time error of a program: what went wrong where.
type fault struct {
	pos  Pos
	what string
}

func wrap(t Type, i int64) int64 {
	switch t {
	case TInt32:
		return int64(int32(i))
	case TUint32:
		return int64(uint32(i))
	}
	return i
}

func round(t Type, f float64) float64 {
	if t == TFloat32 {
		return float64(float32(f))
	}
	return f
}

// intArith is a op b on integers of type t; ok false for division by zero.
func intArith(op Op, t Type, a, b int64) (int64, bool) {
	switch op {
	case OpAdd:
		return wrap(t, a+b), true
	case OpSub:
		return wrap(t, a-b), true
	case OpMul:
		return wrap(t, a*b), true
	case OpDiv:
		if b == 0 {
			return 0, false
		}
		if b == -1 { // MinInt / -1 wraps to MinInt, as Go's does
			return wrap(t, -a), true
		}
		return wrap(t, a/b), true
	case OpRem:
		if b == 0 {
			return 0, false
		}
		if b == -1 {
			return 0, true
		}
		return wrap(t, a%b), true
	case OpMin:
		if a < b {
			return a, true
		}
		return b, true
	case OpMax:
		if a > b {
			return a, true
		}
		return b, true
	}
	panic("vprog: bad integer operation")
}

// floatArith is a op b on floats of type t; the string says what went
// wrong (division by zero, NaN), empty when nothing did.
func floatArith(op Op, t Type, a, b float64) (float64, string) {
	var r float64
	switch op {
	case OpAdd:
		r = a + b
	case OpSub:
		r = a - b
	case OpMul:
		r = a * b
	case OpDiv:
		if b == 0 {
			return 0, "division by zero"
		}
		r = a / b
	case OpMin:
		if a < b {
			return a, ""
		}
		return b, ""
	case OpMax:
		if a > b {
			return a, ""
		}
		return b, ""
	default:
		panic("vprog: bad float operation")
	}
	r = round(t, r)
	if r != r {
		return r, "the result is NaN"
	}
	return r, ""
}

// compare is a comparison op of two numbers of one kind (int64 or
// float64: NaN compares as Go compares it).
func compare[T int64 | float64](op Op, a, b T) bool {
	switch op {
	case OpEq:
		return a == b
	case OpNe:
		return a != b
	case OpLt:
		return a < b
	case OpLe:
		return a <= b
	case OpGt:
		return a > b
	}
	return a >= b
}

// typeRange is the smallest and largest value of an integer type.
func typeRange(t Type) (int64, int64) {
	switch t {
	case TInt32:
		return math.MinInt32, math.MaxInt32
	case TUint32:
		return 0, math.MaxUint32
	}
	return math.MinInt64, math.MaxInt64
}

// floatToInt truncates f toward zero and saturates at t's range.
func floatToInt(t Type, f float64) int64 {
	lo, hi := typeRange(t)
	switch {
	case f <= float64(lo):
		return lo
	case f >= float64(hi):
		return hi
	}
	return int64(f)
}

// intToFloat converts an integer of type from to float type t, rounded
// once (as cvt.rn does).
func intToFloat(t, from Type, i int64) float64 {
	if t == TFloat32 {
		return float64(float32(i))
	}
	return float64(i)
}

// unaryFloat is abs, sqrt, exp or tanh of a float of type t.
func unaryFloat(op Op, t Type, a float64) (float64, string) {
	var r float64
	switch op {
	case OpAbs:
		return math.Abs(a), ""
	case OpNeg:
		return -a, ""
	case OpSqrt:
		r = math.Sqrt(a)
	case OpExp:
		r = expF64(a)
	case OpTanh:
		r = tanhF64(a)
	}
	r = round(t, r)
	if r != r {
		return r, "the result is NaN"
	}
	return r, ""
}

// The constants of expF64, written as bits so that the PTX generator
// emits exactly the same.
const (
	expOverflow  = 709.782712893384
	expUnderflow = -745.1332191019412
	invLn2       = 1.4426950408889634
	ln2Hi        = 6.93147180369123816490e-01
	ln2Lo        = 1.90821492927058770002e-10
	tanhLarge    = 22.0
	tanhSmall    = 0.0625
)

// expCoeffs are 1/k! for k = 13 down to 0, for Horner's rule.
var expCoeffs = [...]float64{
	1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
	1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, 1,
}

// tanhCoeffs are the odd series' coefficients of x^9 down to x^3 (their
// Horner form in x²), for |x| below tanhSmall.
var tanhCoeffs = [...]float64{62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3}

// expF64 is e^x: Cody and Waite's reduction by ln 2 and a Taylor
// polynomial of degree 13 (within a few units in the last place). Every
// product is rounded on its own (float64(...)), never fused, as the PTX
// emits mul.rn and add.rn.
func expF64(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > expOverflow:
		return math.Inf(1)
	case x < expUnderflow:
		return 0
	}
	k := math.RoundToEven(float64(x * invLn2))
	r := float64(x-float64(k*ln2Hi)) - float64(k*ln2Lo)
	p := expCoeffs[0]
	for _, c := range expCoeffs[1:] {
		p = float64(p*r) + c
	}
	ki := int64(k)
	k1 := ki >> 1
	k2 := ki - k1
	return float64(p*math.Float64frombits(uint64(k1+1023)<<52)) * math.Float64frombits(uint64(k2+1023)<<52)
}

// tanhF64 is tanh(x) from expF64, with an odd series near 0.
func tanhF64(x float64) float64 {
	a := math.Abs(x)
	var t float64
	switch {
	case x != x:
		return x
	case a > tanhLarge:
		t = 1
	case a < tanhSmall:
		x2 := float64(a * a)
		s := tanhCoeffs[0]
		for _, c := range tanhCoeffs[1:] {
			s = float64(s*x2) + c
		}
		t = a + float64(float64(a*x2)*s)
	default:
		e := expF64(float64(2 * a))
		t = 1 - 2/(e+1)
	}
	if x < 0 {
		return -t
	}
	return t
}
