package arrowipc

import (
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"

	"github.com/gpipe/gpipe/ingest/edges"
)

// Decimal weights (decimal32, decimal64, decimal128, decimal256: what
// DuckDB, Spark and warehouses hand to Arrow for DECIMAL columns) are read
// as float64, each the nearest double to its value; the ones a float64
// rounds are counted for the table's note (edges.DecimalLoss).

// decimalName names a decimal type as the note does: decimal(38,10).
func decimalName(dt arrow.DataType) string {
	if d, ok := dt.(arrow.DecimalType); ok {
		return fmt.Sprintf("decimal(%d,%d)", d.GetPrecision(), d.GetScale())
	}
	return arrowTypeName(dt)
}

// decimalWeights converts a decimal weight column's rows (the positions
// sel, or all) to float64; the chunk's rows start at input row first.
func (a *Appender) decimalWeights(c *rawCol, sel []int32, m int, first int64) ([]float64, error) {
	scale := c.typ.(arrow.DecimalType).GetScale()
	out := allocate[float64](a, m)
	row := func(k int) (int, int64) {
		if sel == nil {
			return k, first + int64(k)
		}
		return int(sel[k]), first + int64(sel[k])
	}
	convert := func(k int, unscaled func() *big.Int, f float64, exact bool) {
		out[k] = f
		if !exact {
			_, r := row(k)
			a.loss.Add(r, edges.DecimalString(unscaled(), scale), f)
		}
	}
	switch c.typ.ID() {
	case arrow.DECIMAL32:
		v, _, err := fixedView[int32](a, c)
		if err != nil {
			return nil, err
		}
		for k := range out {
			i, _ := row(k)
			f, exact := edges.DecimalInt64(int64(v[i]), scale)
			convert(k, func() *big.Int { return big.NewInt(int64(v[i])) }, f, exact)
		}
	case arrow.DECIMAL64:
		v, _, err := fixedView[int64](a, c)
		if err != nil {
			return nil, err
		}
		for k := range out {
			i, _ := row(k)
			f, exact := edges.DecimalInt64(v[i], scale)
			convert(k, func() *big.Int { return big.NewInt(v[i]) }, f, exact)
		}
	case arrow.DECIMAL128:
		v, _, err := fixedView[decimal128.Num](a, c)
		if err != nil {
			return nil, err
		}
		for k := range out {
			i, _ := row(k)
			n := v[i]
			f, exact := decimal128Float(n, scale)
			convert(k, n.BigInt, f, exact)
		}
	case arrow.DECIMAL256:
		v, _, err := fixedView[decimal256.Num](a, c)
		if err != nil {
			return nil, err
		}
		for k := range out {
			i, _ := row(k)
			n := v[i]
			f, exact := decimal256Float(n, scale)
			convert(k, n.BigInt, f, exact)
		}
	}
	return out, nil
}

// decimal128Float is n × 10^-scale as float64 (the 64-bit path where n
// fits one).
func decimal128Float(n decimal128.Num, scale int32) (float64, bool) {
	lo, hi := n.LowBits(), n.HighBits()
	if hi == int64(lo)>>63 {
		return edges.DecimalInt64(int64(lo), scale)
	}
	return edges.DecimalBig(n.BigInt(), scale)
}

// decimal256Float is n × 10^-scale as float64.
func decimal256Float(n decimal256.Num, scale int32) (float64, bool) {
	w := n.Array() // little-endian words
	sign := uint64(int64(w[0]) >> 63)
	if w[1] == sign && w[2] == sign && w[3] == sign {
		return edges.DecimalInt64(int64(w[0]), scale)
	}
	return edges.DecimalBig(n.BigInt(), scale)
}
