package vprog

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// The GPU backend: ptx.go turns a program's expressions and statements
// into PTX (the instructions of sem.go's semantics: wrapping integer
// arithmetic, .rn float operations never fused, faults recorded in the
// run's state), ptx_kernels.go wraps them in the engine's kernels. The
// driver compiles the text itself (package vpgpu loads it): no CUDA
// toolkit, no NVRTC.

// ptxGen writes one kernel's body.
type ptxGen struct {
	prog  *Program
	b     strings.Builder
	regs  map[string]int // registers used, by class
	label int
	// faults are the places a run can fault, by code-1.
	faults *[]fault
	// Registers the program's loads read, set by the kernel being built.
	local, old, partial, vars []string
	vertex                    string   // the vertex (%r, u32)
	src                       string   // the in-edge's source (%r, u32)
	edge                      string   // the in-edge (%rd)
	cur, static, edges        []string // field arrays' base addresses (%rd)
	numVertices               string   // %rd
	state                     string   // the run's state (%rd)
	retPred, retLabel         string   // update_condition's result and end
}

// regClass is the register class of a type.
func regClass(t Type) string {
	switch t {
	case TInt32, TUint32:
		return "r"
	case TInt64:
		return "rd"
	case TFloat32:
		return "f"
	case TFloat64:
		return "fd"
	}
	return "p"
}

// ptxType is the instruction type of t's arithmetic.
func ptxType(t Type) string {
	switch t {
	case TInt32:
		return "s32"
	case TUint32:
		return "u32"
	case TInt64:
		return "s64"
	case TFloat32:
		return "f32"
	case TFloat64:
		return "f64"
	}
	return "pred"
}

// bitType is the untyped load/store type of t.
func bitType(t Type) string {
	if t.Size() == 8 {
		return "b64"
	}
	return "b32"
}

func (g *ptxGen) reg(class string) string {
	if g.regs == nil {
		g.regs = map[string]int{}
	}
	g.regs[class]++
	return fmt.Sprintf("%%%s%d", class, g.regs[class])
}

func (g *ptxGen) regOf(t Type) string { return g.reg(regClass(t)) }

func (g *ptxGen) newLabel() string {
	g.label++
	return fmt.Sprintf("$L%d", g.label)
}

func (g *ptxGen) emit(format string, args ...any) {
	g.b.WriteString("\t")
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteString(";\n")
}

func (g *ptxGen) place(label string) { g.b.WriteString(label + ":\n") }

// declarations are the register declarations of what the kernel used.
func (g *ptxGen) declarations() string {
	var b strings.Builder
	for _, c := range []struct{ class, typ string }{{"p", "pred"}, {"r", "b32"}, {"rd", "b64"}, {"f", "f32"}, {"fd", "f64"}} {
		if n := g.regs[c.class]; n > 0 {
			fmt.Fprintf(&b, "\t.reg .%s %%%s<%d>;\n", c.typ, c.class, n+1)
		}
	}
	return b.String()
}

// constant is a constant operand of type t.
func constant(t Type, v value) string {
	switch t {
	case TFloat32:
		return fmt.Sprintf("0f%08X", math.Float32bits(float32(v.f)))
	case TFloat64:
		return fmt.Sprintf("0d%016X", math.Float64bits(v.f))
	case TUint32:
		return fmt.Sprintf("%d", uint32(v.i))
	}
	return fmt.Sprintf("%d", v.i)
}

func f64const(f float64) string { return constant(TFloat64, value{f: f}) }

// fault records a fault at pos when pred holds: the first fault of the
// run wins the state's error word, and its vertex is kept beside it. The
// thread goes on (every lane must reach the warp's shuffles); the host
// reports the fault after the launch.
func (g *ptxGen) fault(pred string, pos Pos, what string) {
	*g.faults = append(*g.faults, fault{pos, what})
	code := len(*g.faults)
	ok := g.newLabel()
	old := g.reg("r")
	won := g.reg("p")
	addr := g.reg("rd")
	g.emit("@!%s bra %s", pred, ok)
	g.emit("add.s64 %s, %s, %d", addr, g.state, stateErr*4)
	g.emit("atom.global.cas.b32 %s, [%s], 0, %d", old, addr, code)
	g.emit("setp.eq.u32 %s, %s, 0", won, old)
	g.emit("@%s st.global.u32 [%s+4], %s", won, addr, g.vertex)
	g.place(ok)
}

// checkNaN faults when r (a float of type t) is NaN.
func (g *ptxGen) checkNaN(t Type, r string, pos Pos) {
	p := g.reg("p")
	g.emit("testp.notanumber.%s %s, %s", ptxType(t), p, r)
	g.fault(p, pos, "the result is NaN")
}

// expr emits e and returns the register (or constant) holding its value.
func (g *ptxGen) expr(e *Expr) string {
	switch e.Op {
	case OpConst:
		if e.T == TBool {
			r := g.reg("p")
			g.emit("setp.ne.u32 %s, %d, 0", r, e.Val.i)
			return r
		}
		r := g.regOf(e.T)
		g.emit("mov.%s %s, %s", ptxType(e.T), r, constant(e.T, e.Val))
		return r
	case OpLoad:
		return g.load(e)
	case OpNot:
		x := g.expr(e.Args[0])
		r := g.reg("p")
		g.emit("not.pred %s, %s", r, x)
		return r
	case OpAnd, OpOr:
		return g.logic(e)
	case OpCond:
		return g.cond(e)
	case OpConv:
		return g.conv(e)
	case OpNeg, OpAbs, OpSqrt, OpExp, OpTanh:
		return g.unary(e)
	}
	if e.Op >= OpEq && e.Op <= OpGe {
		return g.compare(e)
	}
	return g.arith(e)
}

// load reads a field, a variable or a builtin.
func (g *ptxGen) load(e *Expr) string {
	switch e.Space {
	case SpaceLocal:
		return g.local[e.Slot]
	case SpaceOld:
		return g.old[e.Slot]
	case SpaceVar:
		return g.vars[e.Slot]
	case SpaceSrc:
		return g.gather(e.T, g.cur[e.Slot], g.src, false)
	case SpaceSrcStatic:
		return g.gather(e.T, g.static[e.Slot], g.src, false)
	case SpaceEdge:
		return g.gather(e.T, g.edges[e.Slot], g.edge, true)
	}
	return g.numVertices // the only builtin a function reads
}

// gather loads element i (u32, or u64 when wide) of the array at base.
func (g *ptxGen) gather(t Type, base, i string, wide bool) string {
	addr := g.reg("rd")
	if wide {
		g.emit("shl.b64 %s, %s, %d", addr, i, log2(t.Size()))
	} else {
		g.emit("mul.wide.u32 %s, %s, %d", addr, i, t.Size())
	}
	g.emit("add.s64 %s, %s, %s", addr, addr, base)
	r := g.regOf(t)
	g.emit("ld.global.nc.%s %s, [%s]", bitType(t), r, addr)
	return r
}

// log2 is the exponent of n, a power of two (a lane count, an element's
// bytes).
func log2(n int) int { return bits.TrailingZeros(uint(n)) }

func (g *ptxGen) logic(e *Expr) string {
	r := g.reg("p")
	end := g.newLabel()
	x := g.expr(e.Args[0])
	g.emit("mov.pred %s, %s", r, x)
	if e.Op == OpAnd {
		g.emit("@!%s bra %s", r, end)
	} else {
		g.emit("@%s bra %s", r, end)
	}
	y := g.expr(e.Args[1])
	g.emit("mov.pred %s, %s", r, y)
	g.place(end)
	return r
}

func (g *ptxGen) cond(e *Expr) string {
	r := g.regOf(e.T)
	els, end := g.newLabel(), g.newLabel()
	c := g.expr(e.Args[0])
	g.emit("@!%s bra %s", c, els)
	x := g.expr(e.Args[1])
	g.emit("mov.%s %s, %s", movType(e.T), r, x)
	g.emit("bra %s", end)
	g.place(els)
	y := g.expr(e.Args[2])
	g.emit("mov.%s %s, %s", movType(e.T), r, y)
	g.place(end)
	return r
}

func movType(t Type) string {
	if t == TBool {
		return "pred"
	}
	return bitType(t)
}

func (g *ptxGen) compare(e *Expr) string {
	a, b := e.Args[0], e.Args[1]
	x, y := g.expr(a), g.expr(b)
	r := g.reg("p")
	if a.T == TBool {
		g.emit("xor.pred %s, %s, %s", r, x, y)
		if e.Op == OpEq {
			g.emit("not.pred %s, %s", r, r)
		}
		return r
	}
	cmp := map[Op]string{OpEq: "eq", OpNe: "ne", OpLt: "lt", OpLe: "le", OpGt: "gt", OpGe: "ge"}[e.Op]
	if a.T.IsFloat() && e.Op == OpNe {
		cmp = "neu" // Go's != holds for NaN
	}
	g.emit("setp.%s.%s %s, %s, %s", cmp, ptxType(a.T), r, x, y)
	return r
}

func (g *ptxGen) arith(e *Expr) string {
	x, y := g.expr(e.Args[0]), g.expr(e.Args[1])
	return g.binop(e.Op, e.T, x, y, e.Pos)
}

// binop is x op y of type t, with sem.go's faults.
func (g *ptxGen) binop(op Op, t Type, x, y string, pos Pos) string {
	r := g.regOf(t)
	pt := ptxType(t)
	switch op {
	case OpMin, OpMax:
		p := g.reg("p")
		cmp := "lt"
		if op == OpMax {
			cmp = "gt"
		}
		g.emit("setp.%s.%s %s, %s, %s", cmp, pt, p, x, y)
		g.emit("selp.%s %s, %s, %s, %s", bitType(t), r, x, y, p)
		return r
	}
	if t.IsFloat() {
		return g.floatOp(op, t, x, y, pos)
	}
	switch op {
	case OpAdd:
		g.emit("add.%s %s, %s, %s", pt, r, x, y)
	case OpSub:
		g.emit("sub.%s %s, %s, %s", pt, r, x, y)
	case OpMul:
		g.emit("mul.lo.%s %s, %s, %s", pt, r, x, y)
	default:
		return g.intDiv(op, t, x, y, pos)
	}
	return r
}

// intDiv is x / y or x % y: a zero divisor faults, -1 gives -x (or 0),
// as Go's division does for the most negative value.
func (g *ptxGen) intDiv(op Op, t Type, x, y string, pos Pos) string {
	pt := ptxType(t)
	zero, minus := g.reg("p"), g.reg("p")
	r := g.regOf(t)
	g.emit("setp.eq.%s %s, %s, 0", pt, zero, y)
	g.fault(zero, pos, "division by zero")
	safe := g.regOf(t)
	g.emit("selp.%s %s, 1, %s, %s", bitType(t), safe, y, zero)
	name := "div"
	if op == OpRem {
		name = "rem"
	}
	g.emit("%s.%s %s, %s, %s", name, pt, r, x, safe)
	if t == TUint32 {
		return r
	}
	g.emit("setp.eq.%s %s, %s, -1", pt, minus, y)
	if op == OpRem {
		g.emit("@%s mov.%s %s, 0", minus, pt, r)
	} else {
		g.emit("@%s neg.%s %s, %s", minus, pt, r, x)
	}
	return r
}

func (g *ptxGen) floatOp(op Op, t Type, x, y string, pos Pos) string {
	pt := ptxType(t)
	r := g.regOf(t)
	switch op {
	case OpAdd:
		g.emit("add.rn.%s %s, %s, %s", pt, r, x, y)
	case OpSub:
		g.emit("sub.rn.%s %s, %s, %s", pt, r, x, y)
	case OpMul:
		g.emit("mul.rn.%s %s, %s, %s", pt, r, x, y)
	case OpDiv:
		zero := g.reg("p")
		g.emit("setp.eq.%s %s, %s, %s", pt, zero, y, constant(t, value{}))
		g.fault(zero, pos, "division by zero")
		g.emit("div.rn.%s %s, %s, %s", pt, r, x, y)
	}
	g.checkNaN(t, r, pos)
	return r
}

func (g *ptxGen) conv(e *Expr) string {
	a := e.Args[0]
	x := g.expr(a)
	t, from := e.T, a.T
	r := g.regOf(t)
	switch {
	case t.IsFloat() && from.IsFloat():
		if t == TFloat32 {
			g.emit("cvt.rn.f32.f64 %s, %s", r, x)
		} else {
			g.emit("cvt.f64.f32 %s, %s", r, x)
		}
	case t.IsFloat():
		g.emit("cvt.rn.%s.%s %s, %s", ptxType(t), ptxType(from), r, x)
	case from.IsFloat():
		g.emit("cvt.rzi.%s.%s %s, %s", ptxType(t), ptxType(from), r, x)
	case t.Size() == from.Size():
		g.emit("mov.b32 %s, %s", r, x)
	case t == TInt64:
		g.emit("cvt.%s.%s %s, %s", "s64", ptxType(from), r, x)
	default:
		g.emit("cvt.u32.u64 %s, %s", r, x)
	}
	return r
}

func (g *ptxGen) unary(e *Expr) string {
	x := g.expr(e.Args[0])
	t := e.T
	pt := ptxType(t)
	r := g.regOf(t)
	switch {
	case e.Op == OpNeg:
		g.emit("neg.%s %s, %s", pt, r, x)
		return r
	case e.Op == OpAbs && t == TUint32:
		return x
	case e.Op == OpAbs:
		g.emit("abs.%s %s, %s", pt, r, x)
		return r
	case e.Op == OpSqrt:
		g.emit("sqrt.rn.%s %s, %s", pt, r, x)
		g.checkNaN(t, r, e.Pos)
		return r
	}
	wide := x
	if t == TFloat32 {
		wide = g.reg("fd")
		g.emit("cvt.f64.f32 %s, %s", wide, x)
	}
	var y string
	if e.Op == OpExp {
		y = g.exp(wide)
	} else {
		y = g.tanh(wide)
	}
	if t == TFloat32 {
		g.emit("cvt.rn.f32.f64 %s, %s", r, y)
	} else {
		r = y
	}
	g.checkNaN(t, r, e.Pos)
	return r
}

// exp is expF64 (sem.go), instruction for instruction.
func (g *ptxGen) exp(x string) string {
	over, under := g.reg("p"), g.reg("p")
	g.emit("setp.gt.f64 %s, %s, %s", over, x, f64const(expOverflow))
	g.emit("setp.lt.f64 %s, %s, %s", under, x, f64const(expUnderflow))
	k, t, r := g.reg("fd"), g.reg("fd"), g.reg("fd")
	g.emit("mul.rn.f64 %s, %s, %s", t, x, f64const(invLn2))
	g.emit("cvt.rni.f64.f64 %s, %s", k, t)
	t1, t2 := g.reg("fd"), g.reg("fd")
	g.emit("mul.rn.f64 %s, %s, %s", t1, k, f64const(ln2Hi))
	g.emit("sub.rn.f64 %s, %s, %s", t2, x, t1)
	g.emit("mul.rn.f64 %s, %s, %s", t1, k, f64const(ln2Lo))
	g.emit("sub.rn.f64 %s, %s, %s", r, t2, t1)
	p := g.reg("fd")
	g.emit("mov.f64 %s, %s", p, f64const(expCoeffs[0]))
	for _, c := range expCoeffs[1:] {
		g.emit("mul.rn.f64 %s, %s, %s", p, p, r)
		g.emit("add.rn.f64 %s, %s, %s", p, p, f64const(c))
	}
	ki, k1, k2 := g.reg("r"), g.reg("r"), g.reg("r")
	g.emit("cvt.rzi.s32.f64 %s, %s", ki, k)
	g.emit("shr.s32 %s, %s, 1", k1, ki)
	g.emit("sub.s32 %s, %s, %s", k2, ki, k1)
	for _, kk := range []string{k1, k2} {
		bits, s := g.reg("rd"), g.reg("fd")
		g.emit("add.s32 %s, %s, 1023", kk, kk)
		g.emit("cvt.u64.u32 %s, %s", bits, kk)
		g.emit("shl.b64 %s, %s, 52", bits, bits)
		g.emit("mov.b64 %s, %s", s, bits)
		g.emit("mul.rn.f64 %s, %s, %s", p, p, s)
	}
	g.emit("@%s mov.f64 %s, %s", over, p, f64const(math.Inf(1)))
	g.emit("@%s mov.f64 %s, 0d0000000000000000", under, p)
	return p
}

// tanh is tanhF64 (sem.go): every branch computed, the right one kept.
func (g *ptxGen) tanh(x string) string {
	a := g.reg("fd")
	g.emit("abs.f64 %s, %s", a, x)
	large, small, neg := g.reg("p"), g.reg("p"), g.reg("p")
	g.emit("setp.gt.f64 %s, %s, %s", large, a, f64const(tanhLarge))
	g.emit("setp.lt.f64 %s, %s, %s", small, a, f64const(tanhSmall))
	g.emit("setp.lt.f64 %s, %s, 0d0000000000000000", neg, x)
	two := g.reg("fd")
	g.emit("mul.rn.f64 %s, %s, 0d4000000000000000", two, a)
	e := g.exp(two)
	t := g.reg("fd")
	g.emit("add.rn.f64 %s, %s, 0d3FF0000000000000", e, e)
	g.emit("div.rn.f64 %s, 0d4000000000000000, %s", t, e)
	g.emit("sub.rn.f64 %s, 0d3FF0000000000000, %s", t, t)
	x2, s, u := g.reg("fd"), g.reg("fd"), g.reg("fd")
	g.emit("mul.rn.f64 %s, %s, %s", x2, a, a)
	g.emit("mov.f64 %s, %s", s, f64const(tanhCoeffs[0]))
	for _, c := range tanhCoeffs[1:] {
		g.emit("mul.rn.f64 %s, %s, %s", s, s, x2)
		g.emit("add.rn.f64 %s, %s, %s", s, s, f64const(c))
	}
	g.emit("mul.rn.f64 %s, %s, %s", u, a, x2)
	g.emit("mul.rn.f64 %s, %s, %s", u, u, s)
	g.emit("add.rn.f64 %s, %s, %s", u, a, u)
	g.emit("@%s mov.f64 %s, %s", small, t, u)
	g.emit("@%s mov.f64 %s, 0d3FF0000000000000", large, t)
	g.emit("@%s neg.f64 %s, %s", neg, t, t)
	nan := g.reg("p")
	g.emit("testp.notanumber.f64 %s, %s", nan, x)
	g.emit("@%s mov.f64 %s, %s", nan, t, x)
	return t
}

// block emits statements.
func (g *ptxGen) block(body []*Stmt) {
	for _, s := range body {
		g.stmt(s)
	}
}

func (g *ptxGen) stmt(s *Stmt) {
	switch s.Kind {
	case StmtReturn:
		x := g.expr(s.X)
		g.emit("mov.pred %s, %s", g.retPred, x)
		g.emit("bra %s", g.retLabel)
	case StmtIf:
		els, end := g.newLabel(), g.newLabel()
		c := g.expr(s.X)
		g.emit("@!%s bra %s", c, els)
		g.block(s.Then)
		g.emit("bra %s", end)
		g.place(els)
		g.block(s.Else)
		g.place(end)
	case StmtAtomic:
		x := g.expr(s.X)
		t := g.prog.Vertex[s.Slot].Type
		to := g.partial[s.Slot]
		r := g.binop(atomicOp(s.Atomic), t, to, x, s.Pos)
		g.emit("mov.%s %s, %s", bitType(t), to, r)
	default:
		x := g.expr(s.X)
		to := g.local
		if s.Space == SpaceVar {
			to = g.vars
		}
		t := s.X.T
		g.emit("mov.%s %s, %s", movType(t), to[s.Slot], x)
	}
}

func atomicOp(a Atomic) Op {
	switch a {
	case AtomicMin:
		return OpMin
	case AtomicMax:
		return OpMax
	}
	return OpAdd
}
