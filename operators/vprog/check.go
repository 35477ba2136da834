package vprog

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// context says what an expression may read and a statement may do.
type ctxKind int

const (
	ctxConst       ctxKind = iota // constants only
	ctxVertexInit                 // a vertex or static field's initial value
	ctxEdgeInit                   // an edge field's initial value
	ctxInitCompute                // init_compute
	ctxCompute                    // compute
	ctxUpdate                     // update_condition
)

type constInfo struct {
	t   Type
	v   value
	pos Pos
}

type checker struct {
	file    string
	prog    *Program
	consts  map[string]*constInfo
	ctx     ctxKind
	scopes  []map[string]int
	colName string // the edge column named, with its place
	colPos  Pos
	colSeen bool
}

func checkFile(name string, f *file, opts Options) (*Program, error) {
	c := &checker{file: name, prog: &Program{File: name, Name: f.name, MaxIterations: DefaultMaxIterations, syntax: f}, consts: map[string]*constInfo{}}
	c.consts["inf"] = &constInfo{t: tUntypedFloat, v: value{f: math.Inf(1)}}
	if err := c.settings(f, opts); err != nil {
		return nil, err
	}
	for _, d := range f.consts {
		if err := c.constDecl(d); err != nil {
			return nil, err
		}
	}
	for _, d := range f.fields {
		if err := c.fieldDecl(d); err != nil {
			return nil, err
		}
	}
	if len(c.prog.Vertex) == 0 {
		return nil, errAt(name, Pos{1, 1}, "the program declares no vertex field", "declare one: vertex level uint32 = 0")
	}
	return c.prog, c.funcs(f)
}

func (c *checker) errf(pos Pos, format string, args ...any) error {
	return errAt(c.file, pos, fmt.Sprintf(format, args...), "")
}

func (c *checker) fixf(pos Pos, fix, format string, args ...any) error {
	return errAt(c.file, pos, fmt.Sprintf(format, args...), fix)
}

// settings reads tolerance and max_iterations (or the overrides).
func (c *checker) settings(f *file, opts Options) error {
	p := c.prog
	c.ctx = ctxConst
	if f.tolerance != nil {
		e, err := c.expr(f.tolerance)
		if err != nil {
			return err
		}
		if e.Op != OpConst || !e.T.numeric() {
			return c.errf(f.tolerancePos, "the tolerance must be a number")
		}
		p.Tolerance, p.HasTolerance = constFloat(e), true
	}
	if opts.Tolerance != 0 {
		if !p.HasTolerance {
			return errAt(c.file, Pos{}, "a tolerance was given, but the program declares none (its update_condition reads no TOLERANCE)", "leave the tolerance out, or declare one: tolerance 1e-6")
		}
		p.Tolerance = opts.Tolerance
	}
	if p.HasTolerance {
		if !(p.Tolerance >= 0) || math.IsInf(p.Tolerance, 0) {
			return c.errf(f.tolerancePos, "the tolerance %v is not a finite number >= 0", p.Tolerance)
		}
		c.consts["TOLERANCE"] = &constInfo{t: tUntypedFloat, v: value{f: p.Tolerance}, pos: f.tolerancePos}
	}
	if f.maxIter != nil {
		e, err := c.expr(f.maxIter)
		if err != nil {
			return err
		}
		if e.Op != OpConst || e.T != tUntypedInt || e.Val.i < 1 || e.Val.i > math.MaxInt32 {
			return c.errf(f.maxIterPos, "max_iterations must be a whole number from 1 to %d", math.MaxInt32)
		}
		p.MaxIterations = int(e.Val.i)
	}
	if opts.MaxIterations != 0 {
		p.MaxIterations = opts.MaxIterations
	}
	return nil
}

func constFloat(e *Expr) float64 {
	if e.T.IsInt() {
		return float64(e.Val.i)
	}
	return e.Val.f
}

func (c *checker) constDecl(d *constDecl) error {
	if len(c.consts) > MaxConsts {
		return c.errf(d.p, "more than %d constants", MaxConsts)
	}
	if err := c.newName(d.name, d.p); err != nil {
		return err
	}
	c.ctx = ctxConst
	e, err := c.expr(d.value)
	if err != nil {
		return err
	}
	if e.Op != OpConst {
		return c.errf(d.value.at(), "constant %s's value is not a constant expression", d.name)
	}
	if d.typ != "" {
		t, err := c.typeName(d.typ, d.typPos)
		if err != nil {
			return err
		}
		if e, err = c.convertTo(e, t, "constant "+d.name); err != nil {
			return err
		}
	}
	c.consts[d.name] = &constInfo{t: e.T, v: e.Val, pos: d.p}
	return nil
}

// reserved are the names a program may not declare.
var reserved = map[string]bool{
	"local": true, "old": true, "src": true, "src_static": true, "edge": true, "id": true, "is_source": true,
	"num_vertices": true, "out_degree": true, "in_degree": true, "inf": true, "TOLERANCE": true, "true": true, "false": true,
	"if": true, "else": true, "return": true, "output": true, "null": true, "key": true,
}

func (c *checker) newName(name string, pos Pos) error {
	switch {
	case reserved[name] || builtinFuncs[name] != 0 || typeNames[name] != TInvalid:
		return c.errf(pos, "%s is a name of the language; choose another", name)
	case c.consts[name] != nil:
		return c.errf(pos, "%s is already a constant (at %s)", name, c.consts[name].pos)
	}
	return nil
}

func (c *checker) typeName(name string, pos Pos) (Type, error) {
	t := typeNames[name]
	if t == TInvalid || t == TBool {
		return 0, c.errf(pos, "unknown type %q: a field is int32, uint32, int64, float32 or float64", name)
	}
	return t, nil
}

func (c *checker) fieldDecl(d *fieldDecl) error {
	t, err := c.typeName(d.typ, d.typPos)
	if err != nil {
		return err
	}
	list := c.fieldList(d.space)
	if len(*list) >= MaxFields {
		return c.errf(d.p, "more than %d %s fields", MaxFields, d.space)
	}
	if reserved[d.name] {
		return c.errf(d.p, "%s is a name of the language; choose another", d.name)
	}
	for _, f := range *list {
		if f.Name == d.name {
			return c.errf(d.p, "a second %s field %s (the first is at %s)", d.space, d.name, f.Pos)
		}
	}
	c.ctx = ctxVertexInit
	if d.space == "edge" {
		c.ctx = ctxEdgeInit
	}
	init, err := c.expr(d.init)
	if err != nil {
		return err
	}
	if init, err = c.convertTo(init, t, "field "+d.name+"'s initial value"); err != nil {
		return err
	}
	f := Field{Name: d.name, Type: t, Pos: d.p, Init: init}
	if err := c.output(d, &f); err != nil {
		return err
	}
	*list = append(*list, f)
	return nil
}

func (c *checker) fieldList(space string) *[]Field {
	switch space {
	case "static":
		return &c.prog.Static
	case "edge":
		return &c.prog.Edge
	}
	return &c.prog.Vertex
}

// output checks a field's output clause.
func (c *checker) output(d *fieldDecl, f *Field) error {
	if !d.output {
		return nil
	}
	if d.space != "vertex" {
		return c.errf(d.outPos, "only vertex fields are output columns, and %s is a %s field", d.name, d.space)
	}
	f.Output, f.OutName, f.Key = true, d.outName, d.key
	if f.OutName == "" {
		f.OutName = d.name
	}
	if f.OutName == "vertex" {
		return c.errf(d.outPos, "the output column \"vertex\" is the vertex keys' own; name this one otherwise")
	}
	for _, g := range c.prog.Vertex {
		if g.Output && g.OutName == f.OutName {
			return c.errf(d.outPos, "a second output column %q (the first is field %s)", f.OutName, g.Name)
		}
	}
	if d.key && f.Type != TUint32 {
		return c.errf(d.outPos, "an output of vertex keys must be a uint32 field of vertex ids, and %s is %s", d.name, f.Type)
	}
	if d.null != nil {
		c.ctx = ctxConst
		e, err := c.expr(d.null)
		if err != nil {
			return err
		}
		if e, err = c.convertTo(e, f.Type, "field "+d.name+"'s null value"); err != nil {
			return err
		}
		if e.Op != OpConst {
			return c.errf(d.null.at(), "the null value must be a constant")
		}
		f.HasNull, f.Null = true, e.Val
	}
	return nil
}

// funcs checks the three functions.
func (c *checker) funcs(f *file) error {
	have := map[string]*funcDecl{}
	for _, fn := range f.funcs {
		have[fn.name] = fn
	}
	for _, name := range []string{"compute", "update_condition"} {
		if have[name] == nil {
			return errAt(c.file, Pos{1, 1}, "the program has no "+name, "write one: "+name+" { ... } (docs/vertex-programs.md)")
		}
	}
	c.prog.Atomics = make([]Atomic, len(c.prog.Vertex))
	if err := c.atomics(have["compute"].body); err != nil {
		return err
	}
	var err error
	if fn := have["init_compute"]; fn != nil {
		c.ctx = ctxInitCompute
		if c.prog.InitCompute, err = c.body(fn.body); err != nil {
			return err
		}
	}
	c.ctx = ctxCompute
	if c.prog.Compute, err = c.body(have["compute"].body); err != nil {
		return err
	}
	c.ctx = ctxUpdate
	fn := have["update_condition"]
	if c.prog.Update, err = c.body(fn.body); err != nil {
		return err
	}
	if !terminates(c.prog.Update) {
		return c.fixf(fn.p, "end it with return: return local.level < old.level", "update_condition may end without returning whether the vertex changed")
	}
	return nil
}

// atomics records the reduction compute applies to each vertex field, so
// that reads of those fields in compute can be refused (their value is
// in flux while other edges reduce into them).
func (c *checker) atomics(body []node) error {
	for _, n := range body {
		switch s := n.(type) {
		case *atomicStmt:
			f, ok := s.target.(*fieldExpr)
			if !ok || f.obj != "local" {
				return c.errf(s.p, "%s reduces into a field of the local vertex: %s(local.FIELD, value)", s.fun, s.fun)
			}
			i := c.vertexField(f.name)
			if i < 0 {
				return c.unknownField(f, "vertex", c.prog.Vertex)
			}
			a := map[string]Atomic{"atomicMin": AtomicMin, "atomicMax": AtomicMax, "atomicAdd": AtomicAdd}[s.fun]
			if prev := c.prog.Atomics[i]; prev != AtomicNone && prev != a {
				return c.errf(s.p, "local.%s is reduced with both %s and %s; a field takes one reduction (they must commute)", f.name, prev, a)
			}
			c.prog.Atomics[i] = a
		case *ifStmt:
			if err := c.atomics(s.then); err != nil {
				return err
			}
			if err := c.atomics(s.els); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *checker) vertexField(name string) int {
	for i, f := range c.prog.Vertex {
		if f.Name == name {
			return i
		}
	}
	return -1
}

func terminates(body []*Stmt) bool {
	if len(body) == 0 {
		return false
	}
	last := body[len(body)-1]
	switch last.Kind {
	case StmtReturn:
		return true
	case StmtIf:
		return terminates(last.Then) && terminates(last.Else)
	}
	return false
}

func fieldNames(fs []Field) string {
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (c *checker) unknownField(f *fieldExpr, space string, fs []Field) error {
	return c.errf(f.p, "%s has no field %s (the %s fields are %s)", f.obj, f.name, space, fieldNames(fs))
}

// parseInt reads an integer literal (decimal or 0x hex).
func parseInt(text string) (int64, bool) {
	u, err := strconv.ParseUint(text, 0, 64)
	if err != nil || u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}
