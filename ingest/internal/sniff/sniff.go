// Package sniff tells what an input is from its first bytes: the byte order
// mark of a text input (skipped when it is UTF-8's, refused when it is
// UTF-16's), the binary formats a file named or declared as text may really
// be, and what an input that is not the format it was read as looks like
// instead. It also names the formats, for the messages that suggest one.
package sniff

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gpipe/gpipe/internal/usererr"
)

// The formats an input can have, by the names --input-format takes, for the
// messages that suggest one; ingest.FormatParquet and the others are the
// same names.
const (
	Parquet     = "parquet"
	ArrowFile   = "arrow"  // Arrow IPC file (.arrow, .feather)
	ArrowStream = "arrows" // Arrow IPC stream (.arrows, and "-")
	CSV         = "csv"    // CSV (and TSV: --input-format tsv)
	Text        = "text"   // whitespace-separated edge list (.txt, .el, .wel, .edges)
	MTX         = "mtx"    // Matrix Market coordinate format
)

// Ext is the extension of each format's files, for messages.
var Ext = map[string]string{
	Parquet: ".parquet", ArrowFile: ".arrow", ArrowStream: ".arrows",
	CSV: ".csv", Text: ".txt", MTX: ".mtx",
}

// utf8BOM is the UTF-8 byte order mark, which Excel ("CSV UTF-8") and
// Windows tools write at the start of text files.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Len is how many bytes of an input sniffing looks at.
const Len = 16

// Binary says which binary format head (an input's first bytes) starts
// with, as "a Parquet file", and what to do about it; "" when it is none
// gpipe knows of. Magic numbers that text could start with are checked
// with the bytes that follow them.
func Binary(head []byte) (what, fix string) {
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

// TextStart checks the start of a text input (CSV, edge list, Matrix
// Market: what says which, as "CSV text") and returns how many bytes to
// skip: those of a UTF-8 byte order mark. A UTF-16 or UTF-32 byte order
// mark, or the magic number of a binary format, is an error that says
// what the file is and how to convert it.
func TextStart(name, what string, head []byte) (int, error) {
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
	if kind, fix := Binary(head); kind != "" {
		return 0, usererr.InFile(name, fmt.Sprintf("%s is not %s: it looks like %s", file, what, kind), fix)
	}
	return 0, nil
}

// Guess says what an input that is not an Arrow IPC stream looks
// like from its first bytes, and the format to read it as ("" when gpipe
// reads no such format): a Parquet or Arrow IPC file, compressed data, CSV,
// a Matrix Market file or an edge list. It returns "", "" for inputs it
// cannot tell (a stream written before Arrow 0.15 starts without a marker).
func Guess(head []byte) (what, format string) {
	switch kind, _ := Binary(head); {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "a Parquet file", Parquet
	case bytes.HasPrefix(head, []byte("ARROW1")):
		return "an Arrow IPC file", ArrowFile
	case kind != "":
		return kind, ""
	}
	text := bytes.TrimPrefix(head, utf8BOM)
	if len(head) == 1024 {
		// Cut, maybe inside a character.
		for k := 0; k < 3 && len(text) > 0 && !utf8.Valid(text); k++ {
			text = text[:len(text)-1]
		}
	}
	if len(text) == 0 || !utf8.Valid(text) || bytes.ContainsFunc(text, func(r rune) bool {
		return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7F
	}) {
		return "", ""
	}
	first, _, _ := bytes.Cut(text, []byte("\n"))
	switch {
	case len(first) >= 14 && strings.EqualFold(string(first[:14]), "%%MatrixMarket"):
		return "a Matrix Market file", MTX
	case bytes.IndexByte(first, ',') >= 0:
		return "CSV text", CSV
	}
	return "text (an edge list?)", Text
}

// ErrLooksLike is the error for an input that is not want (as "a Parquet
// file") but, from its first bytes, looks like another format; nil when
// head does not tell.
func ErrLooksLike(name, want string, head []byte) error {
	what, format := Guess(head)
	if what == "" && bytes.HasPrefix(head, []byte{0xFF, 0xFF, 0xFF, 0xFF}) {
		what, format = "an Arrow IPC stream", ArrowStream
	}
	if what == "" {
		return nil
	}
	_, fix := Binary(head)
	if format != "" {
		fix = fmt.Sprintf("name it %s or pass --input-format %s", Ext[format], format)
		if name == "-" {
			fix = "pass --input-format " + format
		}
	}
	return usererr.InFile(name, fmt.Sprintf("not %s: it looks like %s", want, what), fix)
}
