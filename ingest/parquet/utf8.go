package parquet

import (
	"fmt"
	"unicode/utf8"

	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// String keys must be UTF-8, as they are in CSV and text inputs: the result's
// vertex column is Arrow utf8, which stricter readers (pyarrow, DuckDB)
// refuse otherwise, and a Flight client's JSON could not name such a key.
// Parquet's STRING annotation promises UTF-8 but no writer is made to keep
// the promise, and BYTE_ARRAY keys without one are read as strings too.

// checkUTF8 checks rows [0, n) of a row group's string keys (of groupRows
// rows): with SkipInvalid it marks the rows whose key is not valid UTF-8 in
// st.bad, else it records the first in st.firstBad.
func (r *reader) checkUTF8(st *chunkState, sd *stringCol, groupRows, n int) {
	if n == 0 || validStrings(sd.data[:sd.offsets[n]], sd.offsets[1:n]) {
		return
	}
	// Rare: find the rows, one by one.
	for i := range n {
		if utf8.Valid(sd.data[sd.offsets[i]:sd.offsets[i+1]]) {
			continue
		}
		if !r.opts.SkipInvalid {
			st.firstBad = i
			return
		}
		if st.bad == nil {
			st.bad = make([]uint64, (groupRows+63)/64)
		}
		st.bad[i>>6] |= 1 << (i & 63)
	}
}

// validStrings says whether every string of a column is valid UTF-8, in one
// pass over its bytes and one over its offsets: data is the strings one
// after another, cut at cuts (where each string but the last ends). The
// strings are valid exactly when data is, as a whole, and no cut falls
// inside a character: a valid string's bytes that do not start a character
// are its continuation bytes (10xxxxxx), and no valid character starts
// with one, so a string cut there ends too soon and the next starts wrong.
func validStrings(data []byte, cuts []int64) bool {
	if !utf8.Valid(data) {
		return false
	}
	n := int64(len(data))
	for _, c := range cuts {
		if c < n && data[c]&0xC0 == 0x80 {
			return false
		}
	}
	return true
}

// errBadUTF8 reports a string key that is not valid UTF-8, in the CSV
// reader's words (edges.SkipBadUTF8 is the reason --skip-invalid counts).
func errBadUTF8(file, column string, row int64, key []byte) error {
	return usererr.AtRow(file, column, row, fmt.Sprintf("vertex key %s is not valid UTF-8", echo.Quote(string(key))),
		"write the key as UTF-8 where the file is made (a Parquet string must be UTF-8), or pass --skip-invalid to drop such rows")
}
