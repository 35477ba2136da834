package ingest

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gpipe/gpipe/internal/usererr"
)

// Telling what an input is from its first bytes: the byte order mark of a
// text input (skipped when it is UTF-8's, refused when it is UTF-16's), and
// the binary formats a file named or declared as text may really be.

// utf8BOM is the UTF-8 byte order mark, which Excel ("CSV UTF-8") and
// Windows tools write at the start of text files.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// sniffLen is how many bytes of an input sniffing looks at.
const sniffLen = 16

// looksLike says which binary format head (an input's first bytes) starts
// with, as "a Parquet file", and what to do about it; "" when it is none
// gpipe knows of. Magic numbers that text could start with are checked
// with the bytes that follow them.
func looksLike(head []byte) (what, fix string) {
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")) && (len(head) == 4 || !isTextByte(head[4])):
		return "a Parquet file", "name it .parquet or pass --input-format parquet"
	case bytes.HasPrefix(head, []byte("PARE")) && len(head) > 4 && !isTextByte(head[4]):
		return "an encrypted Parquet file", "decrypt it or re-export it without encryption"
	case bytes.HasPrefix(head, []byte("ARROW1\x00\x00")):
		return "an Arrow IPC file", "name it .arrow or pass --input-format arrow"
	case bytes.HasPrefix(head, []byte{0xFF, 0xFF, 0xFF, 0xFF}):
		return "an Arrow IPC stream", "name it .arrows or pass --input-format arrows"
	case bytes.HasPrefix(head, []byte{0x1F, 0x8B}):
		return "a gzip-compressed file", "decompress it first (gunzip it, or pipe zcat's output to --input - with --input-format)"
	case bytes.HasPrefix(head, []byte{0x28, 0xB5, 0x2F, 0xFD}):
		return "a zstd-compressed file", "decompress it first (zstd -d it, or pipe zstdcat's output to --input - with --input-format)"
	case bytes.HasPrefix(head, []byte{0xFD, '7', 'z', 'X', 'Z', 0}):
		return "an xz-compressed file", "decompress it first (unxz it, or pipe xzcat's output to --input - with --input-format)"
	case len(head) >= 10 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9' && string(head[4:10]) == "1AY&SY":
		return "a bzip2-compressed file", "decompress it first (bunzip2 it, or pipe bzcat's output to --input - with --input-format)"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return "a ZIP archive (an Excel workbook is one)", "extract the file from the archive, or export the sheet as CSV"
	}
	return "", ""
}

// isTextByte says whether b can appear in text: printable ASCII, blanks and
// line ends, and the bytes of multi-byte UTF-8.
func isTextByte(b byte) bool {
	return b >= 0x20 && b != 0x7F || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// textStart checks the start of a text input (CSV, edge list, Matrix
// Market: what says which, as "CSV text") and returns how many bytes to
// skip: those of a UTF-8 byte order mark. A UTF-16 or UTF-32 byte order
// mark, or the magic number of a binary format, is an error that says
// what the file is and how to convert it.
func textStart(name, what string, head []byte) (int, error) {
	file := "the file"
	if name == "-" {
		file = "the input"
	}
	switch {
	case bytes.HasPrefix(head, utf8BOM):
		return len(utf8BOM), nil
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE, 0, 0}), bytes.HasPrefix(head, []byte{0, 0, 0xFE, 0xFF}):
		return 0, usererr.InFile(name, file+" is UTF-32 text (it starts with a UTF-32 byte order mark); gpipe reads UTF-8",
			"convert it to UTF-8 first: iconv -f utf-32 -t utf-8 < IN > OUT")
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}), bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		return 0, usererr.InFile(name, file+" is UTF-16 text (it starts with a UTF-16 byte order mark); gpipe reads UTF-8",
			"convert it to UTF-8 first: iconv -f utf-16 -t utf-8 < IN > OUT")
	}
	if kind, fix := looksLike(head); kind != "" {
		return 0, usererr.InFile(name, fmt.Sprintf("%s is not %s: it looks like %s", file, what, kind), fix)
	}
	return 0, nil
}

// looksBinary says whether s holds bytes text does not: a NUL, or many
// control characters or bytes that are not UTF-8 (a Latin-1 name or two
// is still text, and so is a short line).
func looksBinary(s string) bool {
	if strings.IndexByte(s, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 && r != '\t' && r != '\r' && r != '\n' || r == 0x7F {
			bad++
		}
		i += n
	}
	return len(s) >= 16 && bad*8 > len(s)
}

// errLooksLike is the error for an input that is not want (as "a Parquet
// file") but, from its first bytes, looks like another format; nil when
// head does not tell.
func errLooksLike(name, want string, head []byte) error {
	what, format := sniffNotStream(head)
	if what == "" && bytes.HasPrefix(head, []byte{0xFF, 0xFF, 0xFF, 0xFF}) {
		what, format = "an Arrow IPC stream", FormatArrowStream
	}
	if what == "" {
		return nil
	}
	_, fix := looksLike(head)
	if format != "" {
		fix = fmt.Sprintf("name it %s or pass --input-format %s", formatExt[format], format)
		if name == "-" {
			fix = "pass --input-format " + format
		}
	}
	return usererr.InFile(name, fmt.Sprintf("not %s: it looks like %s", want, what), fix)
}
