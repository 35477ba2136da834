package ingest

import (
	"bytes"
	"context"
	"testing"
)

// readMTXBytes reads data as a Matrix Market file named m.mtx.
func readMTXBytes(data []byte, opts Options) (*EdgeTable, error) {
	return readMatrixMarket(context.Background(), "m.mtx", bytes.NewReader(data), opts)
}

// An entry with the wrong number of fields says how many it has: "1 field",
// and "more than 3 fields" where the parser stopped counting at 4 (found by
// FuzzMatrixMarket: 5 fields were reported as 4).
func TestMatrixMarketEntryFields(t *testing.T) {
	const real = "%%MatrixMarket matrix coordinate real general\n2 2 1\n"
	const pattern = "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 1\n"
	for _, tc := range []struct {
		data string
		line int64
		want string
	}{
		{real + "1 2 3 4 5\n", 3, "line 3: entry has more than 3 fields where this matrix's entries have 3 (row column value)"},
		{real + "1 2 3 4\n", 3, "line 3: entry has more than 3 fields where this matrix's entries have 3"},
		{real + "% c\n1\n", 4, "line 4: entry has 1 field where this matrix's entries have 3"},
		{real + "1 2\n", 3, "line 3: entry has 2 fields where this matrix's entries have 3 (row column value)"},
		{pattern + "1 2 3\n", 3, "line 3: entry has 3 fields where this matrix's entries have 2 (row column)"},
		{pattern + "1 2 3 4 5 6\n", 3, "line 3: entry has more than 3 fields where this matrix's entries have 2 (row column)"},
	} {
		_, err := readMTXBytes([]byte(tc.data), Options{Columns: Columns{ReadWeight: true}})
		if ue := userErr(t, err, "m.mtx", tc.want); ue.Line != tc.line {
			t.Errorf("%q: line %d, want %d", tc.data, ue.Line, tc.line)
		}
	}
}
