// Package echo cuts what a user sent (a token of an input file, a column
// name, a graph name in a request) to a short prefix before a message or a
// log line shows it, so that a 1 MiB value makes a short line, not a 1 MiB
// one.
package echo

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Len is the most characters (Text) or bytes (Quote) of a value a message
// shows.
const Len = 60

// Text is s as a message shows it: at most Len characters, quoted (Go
// syntax) when it holds characters that are not printable or was cut, with
// "..." after the quotes where it was cut.
func Text(s string) string {
	s, cut := prefix(s)
	if !cut && utf8.ValidString(s) && !hasNonPrint(s) {
		return s
	}
	q := strconv.Quote(s)
	if cut {
		q += "..."
	}
	return q
}

// Prefix is s cut to its first Len characters, with "..." where it was
// cut, unquoted: for a writer that quotes by itself, as a log handler does.
func Prefix(s string) string {
	s, cut := prefix(s)
	if cut {
		s += "..."
	}
	return s
}

// prefix is s's first Len characters, and whether that is less than s.
func prefix(s string) (string, bool) {
	n := 0
	for i := range s {
		if n == Len {
			return s[:i], true
		}
		n++
	}
	return s, false
}

// Quote is s quoted (Go syntax) for a message: its first Len bytes, and
// "..." inside the quotes where it was longer.
func Quote(s string) string {
	if len(s) > Len {
		s = s[:Len] + "..."
	}
	return strconv.Quote(s)
}

// hasNonPrint says whether s has a character that is not printable.
func hasNonPrint(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}
