package vprog

import (
	"fmt"
)

// parser is a recursive-descent parser over the tokens; it counts the
// nodes it makes and the depth it reaches, both bounded (a program is
// untrusted input).
type parser struct {
	file  string
	toks  []token
	i     int
	nodes int
	depth int
}

// parse turns a program's text into its syntax tree.
func parse(fileName, src string) (*file, error) {
	if len(src) > MaxBytes {
		return nil, errAt(fileName, Pos{}, fmt.Sprintf("the program is %d bytes (at most %d)", len(src), MaxBytes), "a vertex program is a few dozen lines")
	}
	toks, err := lex(fileName, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: fileName, toks: toks}
	return p.program()
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) take() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return (t.kind == tOp || t.kind == tIdent) && t.text == text
}

func (p *parser) accept(text string) bool {
	if p.is(text) {
		p.take()
		return true
	}
	return false
}

func (p *parser) expect(text, what string) (token, error) {
	t := p.peek()
	if !p.is(text) {
		return t, p.errf(t.pos, "expected %q %s, found %s", text, what, t)
	}
	return p.take(), nil
}

func (p *parser) ident(what string) (token, error) {
	t := p.peek()
	if t.kind != tIdent {
		return t, p.errf(t.pos, "expected %s, found %s", what, t)
	}
	return p.take(), nil
}

func (p *parser) errf(pos Pos, format string, args ...any) error {
	return errAt(p.file, pos, fmt.Sprintf(format, args...), "")
}

// count charges one node against MaxNodes.
func (p *parser) count(pos Pos) error {
	p.nodes++
	if p.nodes > MaxNodes {
		return errAt(p.file, pos, fmt.Sprintf("the program has more than %d expressions and statements", MaxNodes), "a vertex program is a few dozen lines")
	}
	return nil
}

func (p *parser) enter(pos Pos) error {
	p.depth++
	if p.depth > MaxDepth {
		return errAt(p.file, pos, fmt.Sprintf("expressions or blocks nested more than %d deep", MaxDepth), "split the expression with local variables")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) program() (*file, error) {
	f := &file{}
	for p.accept(";") {
	}
	for p.peek().kind != tEOF {
		if err := p.decl(f); err != nil {
			return nil, err
		}
		for p.accept(";") {
		}
	}
	return f, nil
}

func (p *parser) decl(f *file) error {
	t := p.peek()
	if t.kind != tIdent {
		return p.errf(t.pos, "expected a declaration (program, const, tolerance, max_iterations, vertex, static, edge, init_compute, compute, update_condition), found %s", t)
	}
	switch t.text {
	case "program":
		p.take()
		if f.name != "" {
			return p.errf(t.pos, "a second program line (the first is at %s)", f.namePos)
		}
		name, err := p.ident("the program's name")
		if err != nil {
			return err
		}
		f.name, f.namePos = name.text, t.pos
	case "const":
		p.take()
		c, err := p.constDecl(t.pos)
		if err != nil {
			return err
		}
		f.consts = append(f.consts, c)
	case "tolerance", "max_iterations":
		return p.setting(f, t)
	case "vertex", "static", "edge":
		p.take()
		d, err := p.fieldDecl(t)
		if err != nil {
			return err
		}
		f.fields = append(f.fields, d)
	case "init_compute", "compute", "update_condition":
		p.take()
		for _, g := range f.funcs {
			if g.name == t.text {
				return p.errf(t.pos, "a second %s (the first is at %s)", t.text, g.p)
			}
		}
		body, err := p.block()
		if err != nil {
			return err
		}
		f.funcs = append(f.funcs, &funcDecl{p: t.pos, name: t.text, body: body})
	default:
		return p.errf(t.pos, "unknown declaration %q: expected program, const, tolerance, max_iterations, vertex, static, edge, init_compute, compute or update_condition", t.text)
	}
	return nil
}

// setting is "tolerance EXPR" or "max_iterations EXPR".
func (p *parser) setting(f *file, t token) error {
	p.take()
	p.accept("=")
	e, err := p.expr()
	if err != nil {
		return err
	}
	if t.text == "tolerance" {
		if f.tolerance != nil {
			return p.errf(t.pos, "a second tolerance (the first is at %s)", f.tolerancePos)
		}
		f.tolerance, f.tolerancePos = e, t.pos
		return nil
	}
	if f.maxIter != nil {
		return p.errf(t.pos, "a second max_iterations (the first is at %s)", f.maxIterPos)
	}
	f.maxIter, f.maxIterPos = e, t.pos
	return nil
}

func (p *parser) constDecl(pos Pos) (*constDecl, error) {
	name, err := p.ident("the constant's name")
	if err != nil {
		return nil, err
	}
	c := &constDecl{p: pos, name: name.text}
	if p.peek().kind == tIdent {
		ty := p.take()
		c.typ, c.typPos = ty.text, ty.pos
	}
	if _, err := p.expect("=", "after the constant's name and type"); err != nil {
		return nil, err
	}
	if c.value, err = p.expr(); err != nil {
		return nil, err
	}
	return c, nil
}

// fieldDecl is "NAME TYPE = INIT [output [NAME] [null EXPR] [key]]".
func (p *parser) fieldDecl(space token) (*fieldDecl, error) {
	name, err := p.ident("the field's name")
	if err != nil {
		return nil, err
	}
	ty, err := p.ident("the field's type (int32, uint32, int64, float32 or float64)")
	if err != nil {
		return nil, err
	}
	d := &fieldDecl{p: name.pos, space: space.text, name: name.text, typ: ty.text, typPos: ty.pos}
	if _, err := p.expect("=", "and the field's initial value"); err != nil {
		return nil, err
	}
	if d.init, err = p.expr(); err != nil {
		return nil, err
	}
	if !p.is("output") {
		return d, nil
	}
	d.outPos = p.take().pos
	d.output = true
	if p.peek().kind == tString {
		d.outName = p.take().text
	}
	if p.accept("null") {
		if d.null, err = p.expr(); err != nil {
			return nil, err
		}
	}
	d.key = p.accept("key")
	return d, nil
}

// block is "{ statements }".
func (p *parser) block() ([]node, error) {
	open, err := p.expect("{", "to open the block")
	if err != nil {
		return nil, err
	}
	if err := p.enter(open.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	var body []node
	for {
		for p.accept(";") {
		}
		if p.accept("}") {
			return body, nil
		}
		if p.peek().kind == tEOF {
			return nil, p.errf(open.pos, "this block has no closing }")
		}
		s, err := p.stmt()
		if err != nil {
			return nil, err
		}
		body = append(body, s)
	}
}

func (p *parser) stmt() (node, error) {
	t := p.peek()
	if err := p.count(t.pos); err != nil {
		return nil, err
	}
	if t.kind != tIdent {
		return nil, p.errf(t.pos, "expected a statement (an assignment, if, return or atomicMin/atomicMax/atomicAdd), found %s", t)
	}
	switch t.text {
	case "if":
		return p.ifStmt()
	case "return":
		p.take()
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		return &returnStmt{p: t.pos, value: v}, nil
	case "atomicMin", "atomicMax", "atomicAdd":
		return p.atomic()
	case "for", "while", "goto", "break", "continue", "func":
		return nil, p.errf(t.pos, "%s: a vertex program has no loops or functions (the engine loops over the edges)", t.text)
	}
	target, err := p.primary()
	if err != nil {
		return nil, err
	}
	op := p.peek()
	switch op.text {
	case "=", ":=", "+=", "-=", "*=", "/=":
		if op.kind != tOp {
			break
		}
		p.take()
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		return &assignStmt{p: op.pos, target: target, op: op.text, value: v}, nil
	}
	return nil, p.errf(op.pos, "expected =, :=, +=, -=, *= or /= after %s, found %s", describe(target), op)
}

func (p *parser) atomic() (node, error) {
	t := p.take()
	if _, err := p.expect("(", "after "+t.text); err != nil {
		return nil, err
	}
	target, err := p.primary()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(",", "between "+t.text+"'s field and value"); err != nil {
		return nil, err
	}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(")", "to close "+t.text); err != nil {
		return nil, err
	}
	return &atomicStmt{p: t.pos, fun: t.text, target: target, value: v}, nil
}

func (p *parser) ifStmt() (node, error) {
	t := p.take()
	cond, err := p.expr()
	if err != nil {
		return nil, err
	}
	then, err := p.block()
	if err != nil {
		return nil, err
	}
	s := &ifStmt{p: t.pos, cond: cond, then: then}
	if !p.accept("else") {
		return s, nil
	}
	if p.is("if") {
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		elif, err := p.ifStmt()
		if err != nil {
			return nil, err
		}
		s.els, s.elseIsElif = []node{elif}, true
		return s, nil
	}
	if s.els, err = p.block(); err != nil {
		return nil, err
	}
	return s, nil
}

// Binary operators by precedence, loosest first.
var precedence = [][]string{
	{"||"}, {"&&"}, {"==", "!=", "<", "<=", ">", ">="}, {"+", "-"}, {"*", "/", "%"},
}

// expr parses a conditional expression c ? x : y, or a binary one.
func (p *parser) expr() (node, error) {
	t := p.peek()
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.is("?") {
		return c, nil
	}
	q := p.take()
	if err := p.count(q.pos); err != nil {
		return nil, err
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(":", "in c ? x : y"); err != nil {
		return nil, err
	}
	y, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &condExpr{p: q.pos, c: c, x: x, y: y}, nil
}

func (p *parser) binary(level int) (node, error) {
	if level == len(precedence) {
		return p.unary()
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp || !contains(precedence[level], t.text) {
			return x, nil
		}
		p.take()
		if err := p.count(t.pos); err != nil {
			return nil, err
		}
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{p: t.pos, op: t.text, x: x, y: y}
	}
}

func (p *parser) unary() (node, error) {
	t := p.peek()
	if t.kind == tOp && (t.text == "-" || t.text == "!" || t.text == "+") {
		p.take()
		if err := p.count(t.pos); err != nil {
			return nil, err
		}
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return x, nil
		}
		return &unaryExpr{p: t.pos, op: t.text, x: x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t := p.take()
	if err := p.count(t.pos); err != nil {
		return nil, err
	}
	switch {
	case t.kind == tInt || t.kind == tFloat:
		return &litExpr{p: t.pos, kind: t.kind, text: t.text}, nil
	case t.kind == tOp && t.text == "(":
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(")", "to close the parenthesis"); err != nil {
			return nil, err
		}
		return x, nil
	case t.kind != tIdent:
		return nil, p.errf(t.pos, "expected an expression, found %s", t)
	}
	if p.accept(".") {
		f, err := p.ident("a field name after " + t.text + ".")
		if err != nil {
			return nil, err
		}
		return &fieldExpr{p: t.pos, obj: t.text, name: f.text}, nil
	}
	if p.is("(") {
		return p.call(t)
	}
	return &nameExpr{p: t.pos, name: t.text}, nil
}

func (p *parser) call(fun token) (node, error) {
	p.take()
	c := &callExpr{p: fun.pos, fun: fun.text}
	for !p.is(")") {
		if len(c.args)+len(c.strs) > 0 {
			if _, err := p.expect(",", "between arguments"); err != nil {
				return nil, err
			}
		}
		if p.peek().kind == tString {
			c.strs = append(c.strs, p.take().text)
			continue
		}
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.args = append(c.args, a)
	}
	p.take()
	return c, nil
}

func describe(n node) string {
	switch e := n.(type) {
	case *fieldExpr:
		return e.obj + "." + e.name
	case *nameExpr:
		return e.name
	case *callExpr:
		return e.fun + "(...)"
	}
	return "an expression"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
