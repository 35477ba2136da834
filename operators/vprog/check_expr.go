package vprog

import (
	"math"
	"strconv"
)

// builtinFuncs are the functions a program calls, with their IR op.
var builtinFuncs = map[string]Op{"min": OpMin, "max": OpMax, "abs": OpAbs, "sqrt": OpSqrt, "exp": OpExp, "tanh": OpTanh}

var binaryOps = map[string]Op{
	"+": OpAdd, "-": OpSub, "*": OpMul, "/": OpDiv, "%": OpRem, "==": OpEq, "!=": OpNe,
	"<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe, "&&": OpAnd, "||": OpOr,
}

func (c *checker) expr(n node) (*Expr, error) {
	switch e := n.(type) {
	case *litExpr:
		return c.literal(e)
	case *nameExpr:
		return c.name(e)
	case *fieldExpr:
		return c.field(e)
	case *unaryExpr:
		x, err := c.expr(e.x)
		if err != nil {
			return nil, err
		}
		return c.unary(e, x)
	case *binaryExpr:
		x, err := c.expr(e.x)
		if err != nil {
			return nil, err
		}
		y, err := c.expr(e.y)
		if err != nil {
			return nil, err
		}
		return c.binary(binaryOps[e.op], x, y, e.p)
	case *condExpr:
		return c.cond(e)
	case *callExpr:
		return c.call(e)
	}
	return nil, c.errf(n.at(), "not an expression")
}

func (c *checker) literal(e *litExpr) (*Expr, error) {
	if e.kind == tInt {
		i, ok := parseInt(e.text)
		if !ok {
			return nil, c.errf(e.p, "the integer %s is too large (at most %d)", e.text, int64(math.MaxInt64))
		}
		return &Expr{Op: OpConst, T: tUntypedInt, Pos: e.p, Val: value{i: i}}, nil
	}
	f, err := strconv.ParseFloat(e.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, c.errf(e.p, "the number %s is out of float64's range", e.text)
	}
	return &Expr{Op: OpConst, T: tUntypedFloat, Pos: e.p, Val: value{f: f}}, nil
}

func (c *checker) name(e *nameExpr) (*Expr, error) {
	if k := c.consts[e.name]; k != nil {
		return &Expr{Op: OpConst, T: k.t, Pos: e.p, Val: k.v}, nil
	}
	if e.name == "true" || e.name == "false" {
		v := value{}
		if e.name == "true" {
			v.i = 1
		}
		return &Expr{Op: OpConst, T: TBool, Pos: e.p, Val: v}, nil
	}
	if slot, ok := c.lookupVar(e.name); ok {
		return &Expr{Op: OpLoad, T: c.prog.Vars[slot], Pos: e.p, Space: SpaceVar, Slot: slot}, nil
	}
	return c.builtin(e)
}

var builtinNames = map[string]struct {
	slot int
	t    Type
}{
	"id": {BuiltinID, TInt64}, "is_source": {BuiltinIsSource, TBool}, "num_vertices": {BuiltinNumVertices, TInt64},
	"out_degree": {BuiltinOutDegree, TInt64}, "in_degree": {BuiltinInDegree, TInt64},
}

func (c *checker) builtin(e *nameExpr) (*Expr, error) {
	b, ok := builtinNames[e.name]
	switch {
	case !ok && e.name == "TOLERANCE":
		return nil, c.fixf(e.p, "declare it: tolerance 1e-6", "TOLERANCE is used, but the program declares no tolerance")
	case !ok:
		return nil, c.errf(e.p, "undefined: %s", e.name)
	case c.ctx == ctxConst:
		return nil, c.errf(e.p, "%s is not a constant", e.name)
	case e.name != "num_vertices" && c.ctx != ctxVertexInit && c.ctx != ctxEdgeInit:
		return nil, c.errf(e.p, "%s is for initial values; a function reads fields (old.FIELD, src.FIELD, ...)", e.name)
	case e.name != "num_vertices" && c.ctx == ctxEdgeInit:
		return nil, c.errf(e.p, "%s is a vertex's; an edge field's initial value is a constant or column()", e.name)
	}
	if e.name == "is_source" {
		c.prog.NeedsSource = true
	}
	return &Expr{Op: OpLoad, T: b.t, Pos: e.p, Space: SpaceBuiltin, Slot: b.slot}, nil
}

// field resolves obj.name for the function being checked.
func (c *checker) field(e *fieldExpr) (*Expr, error) {
	var allowed []string
	switch c.ctx {
	case ctxInitCompute, ctxUpdate:
		allowed = []string{"local", "old"}
	case ctxCompute:
		allowed = []string{"src", "src_static", "edge", "local"}
	default:
		return nil, c.errf(e.p, "%s.%s: an initial value or a constant reads no fields", e.obj, e.name)
	}
	if !contains(allowed, e.obj) {
		return nil, c.errf(e.p, "%s is not readable here: this function reads %s", e.obj, joinOr(allowed))
	}
	space, fs, what := map[string]Space{"local": SpaceLocal, "old": SpaceOld, "src": SpaceSrc, "src_static": SpaceSrcStatic, "edge": SpaceEdge}[e.obj], c.prog.Vertex, "vertex"
	switch space {
	case SpaceSrcStatic:
		fs, what = c.prog.Static, "static"
	case SpaceEdge:
		fs, what = c.prog.Edge, "edge"
	}
	for i, f := range fs {
		if f.Name != e.name {
			continue
		}
		if space == SpaceLocal && c.ctx == ctxCompute && c.prog.Atomics[i] != AtomicNone {
			return nil, c.errf(e.p, "compute reads local.%s, which it reduces with %s: its value depends on the edges reduced so far", e.name, c.prog.Atomics[i])
		}
		return &Expr{Op: OpLoad, T: f.Type, Pos: e.p, Space: space, Slot: i}, nil
	}
	return nil, c.unknownField(e, what, fs)
}

func joinOr(xs []string) string {
	s := ""
	for i, x := range xs {
		switch {
		case i == 0:
		case i == len(xs)-1:
			s += " and "
		default:
			s += ", "
		}
		s += x
	}
	return s
}

func (c *checker) unary(e *unaryExpr, x *Expr) (*Expr, error) {
	if e.op == "!" {
		if x.T != TBool {
			return nil, c.errf(e.p, "! applies to bool, not %s", x.T)
		}
		return fold(&Expr{Op: OpNot, T: TBool, Pos: e.p, Args: []*Expr{x}})
	}
	if !x.T.numeric() {
		return nil, c.errf(e.p, "- applies to numbers, not %s", x.T)
	}
	return c.foldAt(&Expr{Op: OpNeg, T: x.T, Pos: e.p, Args: []*Expr{x}})
}

// binary checks x op y: the operands must have one type (an untyped
// constant takes the other's), as in Go.
func (c *checker) binary(op Op, x, y *Expr, pos Pos) (*Expr, error) {
	if op == OpAnd || op == OpOr {
		if x.T != TBool || y.T != TBool {
			return nil, c.errf(pos, "&& and || apply to bools, not %s and %s", x.T, y.T)
		}
		return fold(&Expr{Op: op, T: TBool, Pos: pos, Args: []*Expr{x, y}})
	}
	x, y, err := c.unify(x, y, pos)
	if err != nil {
		return nil, err
	}
	t := x.T
	switch {
	case op >= OpEq && op <= OpGe:
		if t == TBool && op != OpEq && op != OpNe {
			return nil, c.errf(pos, "bools are compared with == and != only")
		}
		return c.foldAt(&Expr{Op: op, T: TBool, Pos: pos, Args: []*Expr{x, y}})
	case !t.numeric():
		return nil, c.errf(pos, "arithmetic applies to numbers, not %s", t)
	case op == OpRem && t.IsFloat():
		return nil, c.errf(pos, "%% applies to integers, not %s", t)
	case (op == OpDiv || op == OpRem) && y.Op == OpConst && y.Val.i == 0 && y.Val.f == 0:
		return nil, c.errf(pos, "division by zero")
	}
	return c.foldAt(&Expr{Op: op, T: t, Pos: pos, Args: []*Expr{x, y}})
}

// unify gives x and y one type.
func (c *checker) unify(x, y *Expr, pos Pos) (*Expr, *Expr, error) {
	var err error
	switch {
	case x.T == y.T:
	case isUntyped(x.T) && isUntyped(y.T):
		// An untyped integer meets an untyped float: both floats.
		if x.T == tUntypedInt {
			x = &Expr{Op: OpConst, T: tUntypedFloat, Pos: x.Pos, Val: value{f: float64(x.Val.i)}}
		} else {
			y = &Expr{Op: OpConst, T: tUntypedFloat, Pos: y.Pos, Val: value{f: float64(y.Val.i)}}
		}
	case isUntyped(x.T):
		x, err = c.convertTo(x, y.T, "the constant")
	case isUntyped(y.T):
		y, err = c.convertTo(y, x.T, "the constant")
	default:
		err = c.fixf(pos, "convert one of them: float64(x), uint32(x), ...", "mismatched types %s and %s", x.T, y.T)
	}
	return x, y, err
}

func isUntyped(t Type) bool { return t == tUntypedInt || t == tUntypedFloat }

// convertTo gives an expression type t where the language converts
// implicitly: an untyped constant that t holds exactly (an integer) or
// that rounds into it (a float); a typed value only if it already is t.
func (c *checker) convertTo(e *Expr, t Type, what string) (*Expr, error) {
	switch {
	case e.T == t:
		return e, nil
	case isUntyped(e.T) && e.Op != OpConst && !isUntyped(t):
		return c.retype(e, t, what)
	case !isUntyped(e.T):
		return nil, c.fixf(e.Pos, "convert it: "+t.String()+"(x)", "%s is %s, not %s", what, e.T, t)
	case t == TBool:
		return nil, c.errf(e.Pos, "%s is a number, not bool", what)
	case t.IsFloat():
		f := e.Val.f
		if e.T == tUntypedInt {
			f = float64(e.Val.i)
		}
		if t == TFloat32 && math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
			return nil, c.errf(e.Pos, "%s %v overflows float32", what, f)
		}
		return &Expr{Op: OpConst, T: t, Pos: e.Pos, Val: value{f: round(t, f)}}, nil
	case isUntyped(t):
		return e, nil
	}
	i := e.Val.i
	if e.T == tUntypedFloat {
		if e.Val.f != math.Trunc(e.Val.f) || math.Abs(e.Val.f) >= 1<<63 {
			return nil, c.fixf(e.Pos, "write a whole number, or convert: "+t.String()+"(x)", "%s %v is not an integer, and %s is", what, e.Val.f, t)
		}
		i = int64(e.Val.f)
	}
	if lo, hi := typeRange(t); i < lo || i > hi {
		return nil, c.errf(e.Pos, "%s %d overflows %s", what, i, t)
	}
	return &Expr{Op: OpConst, T: t, Pos: e.Pos, Val: value{i: i}}, nil
}

func (c *checker) cond(e *condExpr) (*Expr, error) {
	cond, err := c.expr(e.c)
	if err != nil {
		return nil, err
	}
	if cond.T != TBool {
		return nil, c.errf(e.c.at(), "the condition of ?: is %s, not bool", cond.T)
	}
	x, err := c.expr(e.x)
	if err != nil {
		return nil, err
	}
	y, err := c.expr(e.y)
	if err != nil {
		return nil, err
	}
	if x, y, err = c.unify(x, y, e.p); err != nil {
		return nil, err
	}
	if cond.Op == OpConst {
		if cond.Val.i != 0 {
			return x, nil
		}
		return y, nil
	}
	return &Expr{Op: OpCond, T: x.T, Pos: e.p, Args: []*Expr{cond, x, y}}, nil
}

func (c *checker) call(e *callExpr) (*Expr, error) {
	if e.fun == "column" {
		return c.column(e)
	}
	if len(e.strs) > 0 {
		return nil, c.errf(e.p, "%s takes no string", e.fun)
	}
	if t := typeNames[e.fun]; t != TInvalid && t != TBool {
		return c.conversion(e, t)
	}
	op, ok := builtinFuncs[e.fun]
	if !ok {
		return nil, c.errf(e.p, "unknown function %s: the functions are min, max, abs, sqrt, exp, tanh and the conversions int32, uint32, int64, float32, float64", e.fun)
	}
	args := make([]*Expr, len(e.args))
	for i, a := range e.args {
		x, err := c.expr(a)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	if op == OpMin || op == OpMax {
		if len(args) != 2 {
			return nil, c.errf(e.p, "%s takes two arguments, not %d", e.fun, len(args))
		}
		x, y, err := c.unify(args[0], args[1], e.p)
		if err != nil {
			return nil, err
		}
		if !x.T.numeric() {
			return nil, c.errf(e.p, "%s applies to numbers, not %s", e.fun, x.T)
		}
		return c.foldAt(&Expr{Op: op, T: x.T, Pos: e.p, Args: []*Expr{x, y}})
	}
	if len(args) != 1 {
		return nil, c.errf(e.p, "%s takes one argument, not %d", e.fun, len(args))
	}
	x := args[0]
	switch {
	case op == OpAbs && !x.T.numeric(), op != OpAbs && !x.T.IsFloat() && x.T != tUntypedInt:
		return nil, c.errf(e.p, "%s applies to floats, not %s", e.fun, x.T)
	case x.T == tUntypedInt && op != OpAbs:
		x = &Expr{Op: OpConst, T: tUntypedFloat, Pos: x.Pos, Val: value{f: float64(x.Val.i)}}
	}
	return c.foldAt(&Expr{Op: op, T: x.T, Pos: e.p, Args: []*Expr{x}})
}

func (c *checker) conversion(e *callExpr, t Type) (*Expr, error) {
	if len(e.args) != 1 {
		return nil, c.errf(e.p, "%s(x) takes one argument", e.fun)
	}
	x, err := c.expr(e.args[0])
	if err != nil {
		return nil, err
	}
	if !x.T.numeric() {
		return nil, c.errf(e.p, "cannot convert %s to %s", x.T, t)
	}
	if isUntyped(x.T) {
		if x.T == tUntypedFloat && t.IsInt() {
			return c.foldAt(&Expr{Op: OpConv, T: t, Pos: e.p, Args: []*Expr{c.typedConst(x)}})
		}
		return c.convertTo(x, t, "the constant")
	}
	if x.T == t {
		return x, nil
	}
	return c.foldAt(&Expr{Op: OpConv, T: t, Pos: e.p, Args: []*Expr{x}})
}

func (c *checker) typedConst(x *Expr) *Expr {
	return &Expr{Op: OpConst, T: TFloat64, Pos: x.Pos, Val: x.Val}
}

// column is an edge field's value from the program's edge column:
// column() reads the weight column the run names, column("G") the
// column G.
func (c *checker) column(e *callExpr) (*Expr, error) {
	if c.ctx != ctxEdgeInit {
		return nil, c.errf(e.p, "column() is an edge field's initial value: edge w float64 = column(\"weight\")")
	}
	if len(e.args) > 0 || len(e.strs) > 1 {
		return nil, c.errf(e.p, "column takes one column name in quotes, or none for the weight column")
	}
	name := ""
	if len(e.strs) == 1 {
		name = e.strs[0]
		if name == "" {
			return nil, c.errf(e.p, "column(\"\") names no column")
		}
	}
	if c.colSeen && name != c.colName {
		return nil, c.fixf(e.p, "read one column in every edge field", "a second edge column %q (the first, %q, is at %s): a graph keeps one value per edge", name, c.colName, c.colPos)
	}
	c.colName, c.colPos, c.colSeen = name, e.p, true
	c.prog.Column, c.prog.UsesColumn = name, true
	return &Expr{Op: OpLoad, T: TFloat64, Pos: e.p, Space: SpaceBuiltin, Slot: BuiltinColumn}, nil
}

// foldAt folds a constant expression, turning a fault (a constant
// division by zero) into an error at its place.
func (c *checker) foldAt(e *Expr) (*Expr, error) {
	out, err := fold(e)
	if err != nil {
		return nil, c.errf(e.Pos, "%v", err)
	}
	return out, nil
}

// retype gives an untyped expression that is not a constant (c ? 1 : 2,
// and what is made of it) type t: its untyped operands are converted.
func (c *checker) retype(e *Expr, t Type, what string) (*Expr, error) {
	out := *e
	out.Args = append([]*Expr(nil), e.Args...)
	for i, a := range out.Args {
		if !isUntyped(a.T) {
			continue
		}
		x, err := c.convertTo(a, t, what)
		if err != nil {
			return nil, err
		}
		out.Args[i] = x
	}
	if out.Op >= OpEq && out.Op <= OpGe || out.Op == OpAnd || out.Op == OpOr {
		return &out, nil
	}
	if out.Op == OpRem && t.IsFloat() {
		return nil, c.errf(e.Pos, "%% applies to integers, and %s is %s", what, t)
	}
	out.T = t
	return &out, nil
}
