package edges

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// String keys must be UTF-8 in every format: the result's vertex column is
// Arrow utf8, which stricter readers (pyarrow, DuckDB) refuse otherwise, and
// a Flight client's JSON could not name such a key. Parquet's STRING and
// Arrow's string types promise UTF-8, but no writer is made to keep the
// promise, and their readers do not check: the Parquet and Arrow readers
// call ValidUTF8 on each chunk's keys, as the text readers check each key.

// ValidUTF8 says whether every string of a column is valid UTF-8: the
// strings are data[offsets[i]:offsets[i+1]], lying one after another. It
// takes one pass over their bytes and, unless they are ASCII, one over the
// offsets: the strings are valid exactly when their bytes are, as a whole,
// and no offset falls inside a character. A valid string's bytes that do
// not start a character are continuation bytes (10xxxxxx), and no valid
// character starts with one, so a string cut there ends too soon and the
// next starts wrong. ASCII (numeric ids, most names) has no continuation
// bytes, so its offsets need no look.
func ValidUTF8(data []byte, offsets []int64) bool {
	n := len(offsets) - 1
	if n <= 0 {
		return true
	}
	end := offsets[n]
	bytes := data[offsets[0]:end]
	if isASCII(bytes) {
		return true
	}
	if !utf8.Valid(bytes) {
		return false
	}
	for _, o := range offsets[1:n] {
		if o < end && data[o]&0xC0 == 0x80 {
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

// ErrBadUTF8 reports a string key that is not valid UTF-8, in every
// reader's words; format names what the input is ("a Parquet string",
// "an Arrow string"), which must be UTF-8. SkipBadUTF8 is the reason
// --skip-invalid counts.
func ErrBadUTF8(file, column string, row int64, key []byte, format string) error {
	return usererr.AtRow(file, column, row, fmt.Sprintf("vertex key %s is not valid UTF-8", echo.Quote(string(key))),
		fmt.Sprintf("write the key as UTF-8 where the input is made (%s must be UTF-8), or pass --skip-invalid to drop such rows", format))
}
