package vprog

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is a token's class.
type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tInt
	tFloat
	tString
	tOp // punctuation and operators; the text says which
)

// Pos is a place in a program: 1-based line and column (in characters).
type Pos struct{ Line, Col int }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

type token struct {
	kind tokKind
	text string
	pos  Pos
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "the end of the program"
	case tString:
		return "string " + t.text
	}
	return fmt.Sprintf("%q", t.text)
}

// operators, longest first so that "<=" is not read as "<" then "=".
var operatorTexts = []string{
	":=", "+=", "-=", "*=", "/=", "==", "!=", "<=", ">=", "&&", "||",
	"{", "}", "(", ")", ".", ",", "=", "+", "-", "*", "/", "%", "<", ">", "!", "?", ":", ";",
}

// lexer splits a program into tokens; comments run from # or // to the
// end of the line.
type lexer struct {
	src  string
	off  int
	pos  Pos
	file string
}

// lex returns every token of src, ending with tEOF, or the first error.
func lex(file, src string) ([]token, error) {
	lx := &lexer{src: src, pos: Pos{1, 1}, file: file}
	var toks []token
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		if t.kind == tEOF {
			return toks, nil
		}
		if len(toks) > MaxTokens {
			return nil, errAt(file, t.pos, fmt.Sprintf("the program has more than %d tokens", MaxTokens), "a vertex program is a few dozen lines")
		}
	}
}

func (lx *lexer) advance(n int) {
	for _, r := range lx.src[lx.off : lx.off+n] {
		if r == '\n' {
			lx.pos.Line++
			lx.pos.Col = 1
		} else {
			lx.pos.Col++
		}
	}
	lx.off += n
}

func (lx *lexer) skipSpace() {
	for lx.off < len(lx.src) {
		rest := lx.src[lx.off:]
		switch {
		case rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r':
			lx.advance(1)
		case rest[0] == '#' || strings.HasPrefix(rest, "//"):
			end := strings.IndexByte(rest, '\n')
			if end < 0 {
				end = len(rest)
			}
			lx.advance(end)
		default:
			return
		}
	}
}

func (lx *lexer) next() (token, error) {
	lx.skipSpace()
	start := lx.pos
	if lx.off >= len(lx.src) {
		return token{kind: tEOF, pos: start}, nil
	}
	rest := lx.src[lx.off:]
	c := rest[0]
	switch {
	case isLetter(c):
		n := 1
		for n < len(rest) && (isLetter(rest[n]) || isDigit(rest[n])) {
			n++
		}
		if n > MaxIdent {
			return token{}, errAt(lx.file, start, fmt.Sprintf("a name of %d characters (at most %d)", n, MaxIdent), "shorten it")
		}
		lx.advance(n)
		return token{tIdent, rest[:n], start}, nil
	case isDigit(c) || c == '.' && len(rest) > 1 && isDigit(rest[1]):
		return lx.number(start)
	case c == '"':
		end := strings.IndexAny(rest[1:], "\"\n")
		if end < 0 || rest[1+end] != '"' {
			return token{}, errAt(lx.file, start, "a string without its closing quote", "close it on the same line")
		}
		if end > MaxIdent*4 {
			return token{}, errAt(lx.file, start, "a string of more than 256 characters", "shorten it")
		}
		lx.advance(end + 2)
		return token{tString, rest[1 : 1+end], start}, nil
	}
	for _, op := range operatorTexts {
		if strings.HasPrefix(rest, op) {
			lx.advance(len(op))
			return token{tOp, op, start}, nil
		}
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return token{}, errAt(lx.file, start, fmt.Sprintf("unexpected character %q", r), "see docs/vertex-programs.md for the language")
}

// number reads 12, 0x1f, 1.5, 1e-9, .5.
func (lx *lexer) number(start Pos) (token, error) {
	rest := lx.src[lx.off:]
	n, float := 0, false
	if strings.HasPrefix(rest, "0x") || strings.HasPrefix(rest, "0X") {
		n = 2
		for n < len(rest) && isHex(rest[n]) {
			n++
		}
	} else {
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n < len(rest) && rest[n] == '.' {
			float = true
			n++
			for n < len(rest) && isDigit(rest[n]) {
				n++
			}
		}
		if n < len(rest) && (rest[n] == 'e' || rest[n] == 'E') {
			float = true
			n++
			if n < len(rest) && (rest[n] == '+' || rest[n] == '-') {
				n++
			}
			digits := n
			for n < len(rest) && isDigit(rest[n]) {
				n++
			}
			if n == digits {
				return token{}, errAt(lx.file, start, fmt.Sprintf("malformed number %q", rest[:n]), "write an exponent after e: 1e-9")
			}
		}
	}
	if n < len(rest) && (isLetter(rest[n]) || rest[n] == '.') {
		return token{}, errAt(lx.file, start, fmt.Sprintf("malformed number %q", rest[:n+1]), "separate the number from what follows")
	}
	lx.advance(n)
	if float {
		return token{tFloat, rest[:n], start}, nil
	}
	return token{tInt, rest[:n], start}, nil
}

func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isHex(c byte) bool    { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
