package parquet

import (
	"unicode/utf8"

	"github.com/gpipe/gpipe/ingest/edges"
)

// String keys must be UTF-8 (edges.ValidUTF8 says why); BYTE_ARRAY keys
// without the STRING annotation are read as strings too, and checked.

// checkUTF8 checks rows [0, n) of a row group's string keys (of groupRows
// rows): with SkipInvalid it marks the rows whose key is not valid UTF-8 in
// st.bad, else it records the first in st.firstBad.
func (r *reader) checkUTF8(st *chunkState, sd *stringCol, groupRows, n int) {
	if n == 0 || edges.ValidUTF8(sd.data, sd.offsets[:n+1]) {
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
