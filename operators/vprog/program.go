// Package vprog is gpipe's language for vertex programs: CuSha's
// programming model (HPDC'14 §4, Table 3) as text a user writes or a
// pipeline sends. A program declares typed vertex, static-vertex and edge
// fields with their initial values, and three functions: init_compute
// (the vertex's local copy from its stored value), compute (applied to
// the local copy once per in-edge, through commutative and associative
// atomic reductions) and update_condition (whether the vertex changed,
// and so the run goes on). docs/vertex-programs.md is the language's
// manual.
//
// Parse checks a program (lex.go, parse.go, check.go) into a typed IR
// (ir.go) with the semantics of sem.go; cpu.go compiles it to Go closures
// run by the CPU engine (engine.go), ptx.go to GPU kernels (package
// vprog/vpgpu runs them). A program is untrusted input: its size is
// bounded, it has no loops and no pointers, and it reads and writes only
// its own vertex's, its in-edges' and their sources' fields.
package vprog

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gpipe/gpipe/internal/usererr"
)

// The bounds on a program's size.
const (
	MaxBytes  = 64 << 10 // the program's text
	MaxTokens = 8192
	MaxNodes  = 4096 // expressions and statements
	MaxDepth  = 32   // nesting of expressions and blocks
	MaxFields = 16   // of each of vertex, static and edge
	MaxVars   = 64   // local variables, over the three functions
	MaxConsts = 64
	MaxIdent  = 64 // characters of a name

	// DefaultMaxIterations is the iteration limit of a program that sets
	// none.
	DefaultMaxIterations = 10000
)

// Field is a vertex, static-vertex or edge field.
type Field struct {
	Name string
	Type Type
	Pos  Pos
	// Init is the initial value, an expression over the builtins id,
	// is_source, num_vertices, out_degree, in_degree and (edge fields)
	// column().
	Init *Expr
	// Output says the field is a result column, named OutName; HasNull
	// says the value Null is written as null; Key says the values are
	// vertex ids, written as the input's keys.
	Output  bool
	OutName string
	HasNull bool
	Null    value
	Key     bool
}

// Program is a checked vertex program.
type Program struct {
	Name string
	// File names the program in errors: the file it was read from, or
	// what the caller calls it (a Flight ticket's program).
	File string
	Text string

	Vertex, Static, Edge []Field
	// InitCompute, Compute and Update are the three functions' bodies.
	// Before InitCompute runs, the local copy holds the stored value.
	InitCompute, Compute, Update []*Stmt
	// Atomics is, for each vertex field, the reduction Compute applies to
	// it (AtomicNone: Compute does not write it).
	Atomics []Atomic
	// Vars are the local variables' types, by slot.
	Vars []Type

	Tolerance     float64
	HasTolerance  bool
	MaxIterations int
	// NeedsSource says an initial value reads is_source: the run needs a
	// source vertex.
	NeedsSource bool
	// Column is the edge column the edge fields read: "" for the weight
	// column the caller names (column()); UsesColumn says some edge field
	// reads one.
	Column     string
	UsesColumn bool

	syntax *file
}

// Options override a program's own settings.
type Options struct {
	// Tolerance replaces the program's tolerance (its TOLERANCE); 0 keeps it.
	Tolerance float64
	// MaxIterations replaces its iteration limit; 0 keeps it.
	MaxIterations int
}

// Parse reads and checks a program. name is what errors call it (the
// file's path). A program that does not parse or check is an Input error
// that names the file, the line and the column.
func Parse(name, text string) (*Program, error) {
	return ParseWith(name, text, Options{})
}

// ParseWith is Parse with settings that override the program's.
func ParseWith(name, text string, opts Options) (*Program, error) {
	f, err := parse(name, text)
	if err != nil {
		return nil, err
	}
	p, err := checkFile(name, f, opts)
	if err != nil {
		return nil, err
	}
	p.Text = text
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return p, nil
}

// With is the program checked again with settings that override its own.
func (p *Program) With(opts Options) (*Program, error) {
	if opts == (Options{}) {
		return p, nil
	}
	return ParseWith(p.File, p.Text, opts)
}

// Outputs are the vertex fields that are result columns, in order.
func (p *Program) Outputs() []int {
	var out []int
	for i, f := range p.Vertex {
		if f.Output {
			out = append(out, i)
		}
	}
	return out
}

// errAt is an Input error at pos of the program file.
func errAt(file string, pos Pos, problem, fix string) *usererr.Error {
	if file == "" {
		file = "vertex program"
	}
	if pos.Line > 0 {
		problem = fmt.Sprintf("column %d: %s", pos.Col, problem)
	}
	if fix == "" {
		fix = "see docs/vertex-programs.md"
	}
	e := usererr.AtLine(file, int64(pos.Line), problem, fix)
	return e
}
