package arrowipc

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// String keys must be UTF-8, as they are in CSV and text inputs: the
// result's vertex column is Arrow utf8, which stricter readers (pyarrow,
// DuckDB) refuse otherwise, and a Flight client's JSON could not name such a
// key. Arrow's utf8, large_utf8 and string_view types promise UTF-8, but no
// writer is made to keep the promise, and arrow-go's readers do not check.
// Every Arrow source (files, streams, Flight) goes through the Appender, so
// the check is here, on each chunk's keys once they are made.

// checkUTF8 checks the string keys of ch, a chunk of the Appender's: a key
// that is not valid UTF-8 is an error naming its column and input row, or
// with SkipInvalid its row is dropped and counted (edges.SkipBadUTF8, the
// CSV reader's reason). It says whether any row is left.
func (a *Appender) checkUTF8(ch *edges.Chunk) (bool, error) {
	if ch.Src.Str == nil || (validStrings(ch.Src.Str) && validStrings(ch.Dst.Str)) {
		return true, nil
	}
	// Rare: find the rows, one by one.
	n := ch.Len()
	var keep []int32
	for i := range n {
		col, key := roleSrc, ch.Src.Str.At(i)
		if utf8.Valid(key) {
			col, key = roleDst, ch.Dst.Str.At(i)
		}
		if utf8.Valid(key) {
			keep = append(keep, int32(i))
			continue
		}
		if !a.opts.SkipInvalid {
			return false, errBadUTF8(a.name, a.cols.names[col], ch.Row(i), key)
		}
	}
	a.t.Skipped.Add(edges.SkipBadUTF8, int64(n-len(keep)))
	a.keepRows(ch, keep)
	return len(keep) > 0, nil
}

// keepRows cuts ch, a chunk of string keys, down to its positions keep, in
// new buffers.
func (a *Appender) keepRows(ch *edges.Chunk, keep []int32) {
	m := len(keep)
	ch.Src.Str = a.gatherStrings(ch.Src.Str.Offsets, ch.Src.Str.Data, keep, nil, m)
	ch.Dst.Str = a.gatherStrings(ch.Dst.Str.Offsets, ch.Dst.Str.Data, keep, nil, m)
	if ch.Weight != nil {
		w := allocate[float64](a, m)
		for k, i := range keep {
			w[k] = ch.Weight[i]
		}
		ch.Weight = w
	}
	rows := make([]int64, m)
	for k, i := range keep {
		rows[k] = ch.Row(int(i))
	}
	ch.Rows = rows
}

// validStrings says whether every string of s is valid UTF-8, in one pass
// over its bytes (and, unless they are ASCII, one over its offsets). The
// strings lie one after another in s.Data; they are valid exactly when
// their bytes are, as a whole, and no offset falls inside a character: a
// valid string's bytes that do not start a character are continuation
// bytes (10xxxxxx), and no valid character starts with one, so a string cut
// there ends too soon and the next starts wrong. ASCII has no continuation
// bytes, so for ASCII bytes (numeric ids, most names) the offsets need no
// look.
func validStrings(s *edges.Strings) bool {
	n := s.Len()
	if n == 0 {
		return true
	}
	offs := s.Offsets
	end := offs[n]
	data := s.Data[offs[0]:end]
	if isASCII(data) {
		return true
	}
	if !utf8.Valid(data) {
		return false
	}
	for _, o := range offs[1:n] {
		if o < end && s.Data[o]&0xC0 == 0x80 {
			return false
		}
	}
	return true
}

// isASCII says whether every byte of b is below 0x80, 32 bytes a step:
// faster than utf8.Valid, which looks at 8 at a time.
func isASCII(b []byte) bool {
	var acc uint64
	for len(b) >= 32 {
		acc |= binary.LittleEndian.Uint64(b) | binary.LittleEndian.Uint64(b[8:]) |
			binary.LittleEndian.Uint64(b[16:]) | binary.LittleEndian.Uint64(b[24:])
		b = b[32:]
	}
	for _, c := range b {
		acc |= uint64(c)
	}
	return acc&0x8080808080808080 == 0
}

// errBadUTF8 reports a string key that is not valid UTF-8, in the CSV
// reader's words.
func errBadUTF8(file, column string, row int64, key []byte) error {
	return usererr.AtRow(file, column, row, fmt.Sprintf("vertex key %s is not valid UTF-8", echo.Quote(string(key))),
		"write the key as UTF-8 where the input is made (an Arrow string must be UTF-8), or pass --skip-invalid to drop such rows")
}
