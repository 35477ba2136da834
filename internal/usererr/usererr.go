// Package usererr is the one error type that reaches a user: a single line
// that says what is wrong, where (file, column, row) and what to do about it,
// with a kind that the command line maps to its exit code.
package usererr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpipe/gpipe/internal/echo"
)

// Kind classifies an error by who can fix it; each kind has its exit code.
type Kind int

const (
	// Internal is a failure of gpipe itself or of the machine (I/O, memory).
	Internal Kind = iota
	// Usage is a bad flag, parameter or operator name.
	Usage
	// Input is bad input data: a file that cannot be read, a bad row or column.
	Input
	// Backend is a backend that cannot run the job: no usable GPU, a graph too
	// large for it, an operator it does not implement.
	Backend
	// NotFound is a named thing that does not exist: a source key, a graph.
	NotFound
	// Limit is a resource limit reached: a memory, upload, size or time
	// limit set by the user or the server.
	Limit
)

// String is the kind's name, as the error tables in the docs write it.
func (k Kind) String() string {
	switch k {
	case Usage:
		return "usage"
	case Input:
		return "input"
	case Backend:
		return "backend"
	case NotFound:
		return "not found"
	case Limit:
		return "limit"
	}
	return "internal"
}

// ExitCode is the process exit status for an error of this kind.
func (k Kind) ExitCode() int {
	switch k {
	case Usage:
		return 2
	case Input, NotFound:
		return 3
	case Backend:
		return 4
	case Limit:
		return 5
	default:
		return 1
	}
}

// Error is a user-facing error. Row is 0-based; a negative Row means no row.
type Error struct {
	Kind    Kind
	File    string // input name as the user gave it ("-" for stdin)
	Column  string
	Row     int64
	Line    int64  // 1-based line of a text input; 0 means none
	Problem string // what is wrong, e.g. `null vertex key`
	Fix     string // what to do, e.g. `pass --skip-invalid to drop such rows`
	Err     error  // an underlying cause, kept for errors.Is/As
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	}
	if e.Column != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString("column " + echo.Quote(e.Column))
	}
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "line %d", e.Line)
	} else if e.Row >= 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "row %d", e.Row)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	// Errors are printed on one line, whatever the cause carried.
	return strings.ReplaceAll(b.String(), "\n", " ")
}

func (e *Error) Unwrap() error { return e.Err }

// Is says that e is of the kind a sentinel stands for, so that callers can
// write errors.Is(err, ErrInput); causes are matched through Unwrap.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.kind == e.Kind
}

// Because sets e's cause (kept for errors.Is/As: fs.ErrNotExist for a
// missing file) and returns e.
func (e *Error) Because(cause error) *Error {
	e.Err = cause
	return e
}

// sentinel stands for every Error of one kind in errors.Is.
type sentinel struct {
	kind Kind
	text string
}

func (s *sentinel) Error() string { return s.text }

// The sentinels, one a kind but Internal: errors.Is(err, ErrInput) holds
// for every Error of kind Input in err's chain.
var (
	ErrUsage    error = &sentinel{Usage, "gpipe: bad usage"}
	ErrInput    error = &sentinel{Input, "gpipe: bad input data"}
	ErrNotFound error = &sentinel{NotFound, "gpipe: not found"}
	ErrBackend  error = &sentinel{Backend, "gpipe: backend unavailable"}
	ErrLimit    error = &sentinel{Limit, "gpipe: resource limit reached"}
)

// New returns an error without file, column or row.
func New(kind Kind, problem, fix string) *Error {
	return &Error{Kind: kind, Row: -1, Problem: problem, Fix: fix}
}

// Newf is New with a formatted problem and no fix.
func Newf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Row: -1, Problem: fmt.Sprintf(format, args...)}
}

// InFile returns an Input error about a whole file.
func InFile(file, problem, fix string) *Error {
	return &Error{Kind: Input, File: file, Row: -1, Problem: problem, Fix: fix}
}

// AtRow returns an Input error about one row of one column.
func AtRow(file, column string, row int64, problem, fix string) *Error {
	return &Error{Kind: Input, File: file, Column: column, Row: row, Problem: problem, Fix: fix}
}

// AtLine returns an Input error about one line of a text input.
func AtLine(file string, line int64, problem, fix string) *Error {
	return &Error{Kind: Input, File: file, Row: -1, Line: line, Problem: problem, Fix: fix}
}

// KindOf is the kind of err: that of the first *Error in its chain, else
// Internal. A canceled context is Internal too; callers check it first.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}
