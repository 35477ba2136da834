package edges

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// echoLen is the most characters of an input's content a message echoes.
const echoLen = 60

// Echo is s as a message shows it: at most echoLen characters, quoted (Go
// syntax) when it holds characters that are not printable or was cut.
func Echo(s string) string {
	cut := false
	if utf8.RuneCountInString(s) > echoLen {
		n := 0
		for i := range s {
			if n == echoLen {
				s, cut = s[:i], true
				break
			}
			n++
		}
	}
	if !cut && utf8.ValidString(s) && !hasNonPrint(s) {
		return s
	}
	q := strconv.Quote(s)
	if cut {
		q += "..."
	}
	return q
}

// QuoteToken is a token of the input quoted (Go syntax) for a message: its
// first echoLen bytes, and "..." inside the quotes where it was longer, as
// the edge list parser cuts its tokens.
func QuoteToken(s string) string {
	if len(s) > echoLen {
		s = s[:echoLen] + "..."
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
