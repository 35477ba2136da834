package vprog

// The CPU backend compiles a program to Go closures over typed slices:
// integers as int64 (wrapped to their width), floats as float64 (float32
// ones rounded after every operation), with the semantics of sem.go. A
// fault panics with a fault value, which the engine recovers in its
// workers and turns into an error naming the program's line.

type (
	intFn   func(*frame) int64
	floatFn func(*frame) float64
	boolFn  func(*frame) bool
	stmtFn  func(*frame) bool // true once a return has run
)

// compiled is an expression compiled for its type's class.
type compiled struct {
	i intFn
	f floatFn
	b boolFn
}

// store is a field's values, one per vertex (or edge): ints or floats.
type store struct {
	i []int64
	f []float64
}

// frame is one worker's state: the vertex, the in-edge and its source
// being computed, the local copy, the variables and update_condition's
// result.
type frame struct {
	v, u int
	e    int64
	li   [MaxFields]int64
	lf   [MaxFields]float64
	vi   [MaxVars]int64
	vf   [MaxVars]float64
	ret  bool
}

// env is what compiled code reads besides the frame: the stores of the
// vertex, static and edge fields, and the builtins of initial values.
type env struct {
	cur, static, edge []store
	numVertices       int64
	source            int
	outDeg, inDeg     func(v int) int64
	column            []float64
}

type compiler struct {
	prog *Program
	env  *env
}

func (c *compiler) expr(e *Expr) compiled {
	switch {
	case e.T == TBool:
		return compiled{b: c.boolExpr(e)}
	case e.T.IsFloat():
		return compiled{f: c.floatExpr(e)}
	}
	return compiled{i: c.intExpr(e)}
}

func raise(pos Pos, what string) { panic(fault{pos, what}) }

func (c *compiler) loadInt(e *Expr) intFn {
	slot, env := e.Slot, c.env
	switch e.Space {
	case SpaceLocal:
		return func(fr *frame) int64 { return fr.li[slot] }
	case SpaceVar:
		return func(fr *frame) int64 { return fr.vi[slot] }
	case SpaceOld:
		return func(fr *frame) int64 { return env.cur[slot].i[fr.v] }
	case SpaceSrc:
		return func(fr *frame) int64 { return env.cur[slot].i[fr.u] }
	case SpaceSrcStatic:
		return func(fr *frame) int64 { return env.static[slot].i[fr.u] }
	case SpaceEdge:
		return func(fr *frame) int64 { return env.edge[slot].i[fr.e] }
	}
	switch slot {
	case BuiltinID:
		return func(fr *frame) int64 { return int64(fr.v) }
	case BuiltinOutDegree:
		return func(fr *frame) int64 { return env.outDeg(fr.v) }
	case BuiltinInDegree:
		return func(fr *frame) int64 { return env.inDeg(fr.v) }
	}
	return func(*frame) int64 { return env.numVertices }
}

func (c *compiler) loadFloat(e *Expr) floatFn {
	slot, env := e.Slot, c.env
	switch e.Space {
	case SpaceLocal:
		return func(fr *frame) float64 { return fr.lf[slot] }
	case SpaceVar:
		return func(fr *frame) float64 { return fr.vf[slot] }
	case SpaceOld:
		return func(fr *frame) float64 { return env.cur[slot].f[fr.v] }
	case SpaceSrc:
		return func(fr *frame) float64 { return env.cur[slot].f[fr.u] }
	case SpaceSrcStatic:
		return func(fr *frame) float64 { return env.static[slot].f[fr.u] }
	case SpaceEdge:
		return func(fr *frame) float64 { return env.edge[slot].f[fr.e] }
	}
	if env.column == nil { // a graph without weights: every weight is 1
		return func(*frame) float64 { return 1 }
	}
	return func(fr *frame) float64 { return env.column[fr.e] }
}

func (c *compiler) intExpr(e *Expr) intFn {
	t, pos := e.T, e.Pos
	switch e.Op {
	case OpConst:
		v := e.Val.i
		return func(*frame) int64 { return v }
	case OpLoad:
		return c.loadInt(e)
	case OpNeg:
		x := c.intExpr(e.Args[0])
		return func(fr *frame) int64 { return wrap(t, -x(fr)) }
	case OpAbs:
		x := c.intExpr(e.Args[0])
		return func(fr *frame) int64 {
			if v := x(fr); v < 0 {
				return wrap(t, -v)
			} else {
				return v
			}
		}
	case OpConv:
		return c.intConv(e)
	case OpCond:
		cond, x, y := c.boolExpr(e.Args[0]), c.intExpr(e.Args[1]), c.intExpr(e.Args[2])
		return func(fr *frame) int64 {
			if cond(fr) {
				return x(fr)
			}
			return y(fr)
		}
	}
	op, x, y := e.Op, c.intExpr(e.Args[0]), c.intExpr(e.Args[1])
	switch op {
	case OpAdd:
		return func(fr *frame) int64 { return wrap(t, x(fr)+y(fr)) }
	case OpSub:
		return func(fr *frame) int64 { return wrap(t, x(fr)-y(fr)) }
	case OpMul:
		return func(fr *frame) int64 { return wrap(t, x(fr)*y(fr)) }
	}
	return func(fr *frame) int64 {
		r, ok := intArith(op, t, x(fr), y(fr))
		if !ok {
			raise(pos, "division by zero")
		}
		return r
	}
}

func (c *compiler) intConv(e *Expr) intFn {
	t, a := e.T, e.Args[0]
	if a.T.IsFloat() {
		x := c.floatExpr(a)
		return func(fr *frame) int64 { return floatToInt(t, x(fr)) }
	}
	x := c.intExpr(a)
	return func(fr *frame) int64 { return wrap(t, x(fr)) }
}

func (c *compiler) floatExpr(e *Expr) floatFn {
	t, pos := e.T, e.Pos
	switch e.Op {
	case OpConst:
		v := e.Val.f
		return func(*frame) float64 { return v }
	case OpLoad:
		return c.loadFloat(e)
	case OpConv:
		return c.floatConv(e)
	case OpCond:
		cond, x, y := c.boolExpr(e.Args[0]), c.floatExpr(e.Args[1]), c.floatExpr(e.Args[2])
		return func(fr *frame) float64 {
			if cond(fr) {
				return x(fr)
			}
			return y(fr)
		}
	case OpNeg, OpAbs, OpSqrt, OpExp, OpTanh:
		op, x := e.Op, c.floatExpr(e.Args[0])
		return func(fr *frame) float64 {
			r, problem := unaryFloat(op, t, x(fr))
			if problem != "" {
				raise(pos, problem)
			}
			return r
		}
	}
	return c.floatBinary(e)
}

func (c *compiler) floatBinary(e *Expr) floatFn {
	t, pos, op := e.T, e.Pos, e.Op
	x, y := c.floatExpr(e.Args[0]), c.floatExpr(e.Args[1])
	if t == TFloat64 {
		// The common cases, without floatArith's switch.
		switch op {
		case OpAdd:
			return func(fr *frame) float64 { return notNaN(pos, x(fr)+y(fr)) }
		case OpSub:
			return func(fr *frame) float64 { return notNaN(pos, x(fr)-y(fr)) }
		case OpMul:
			return func(fr *frame) float64 { return notNaN(pos, x(fr)*y(fr)) }
		}
	}
	return func(fr *frame) float64 {
		r, problem := floatArith(op, t, x(fr), y(fr))
		if problem != "" {
			raise(pos, problem)
		}
		return r
	}
}

func (c *compiler) floatConv(e *Expr) floatFn {
	t, a := e.T, e.Args[0]
	if a.T.IsFloat() {
		x := c.floatExpr(a)
		return func(fr *frame) float64 { return round(t, x(fr)) }
	}
	from, x := a.T, c.intExpr(a)
	return func(fr *frame) float64 { return intToFloat(t, from, x(fr)) }
}

func (c *compiler) boolExpr(e *Expr) boolFn {
	switch e.Op {
	case OpConst:
		v := e.Val.i != 0
		return func(*frame) bool { return v }
	case OpLoad:
		if e.Space == SpaceVar {
			slot := e.Slot
			return func(fr *frame) bool { return fr.vi[slot] != 0 }
		}
		src := c.env.source
		return func(fr *frame) bool { return fr.v == src }
	case OpNot:
		x := c.boolExpr(e.Args[0])
		return func(fr *frame) bool { return !x(fr) }
	case OpCond:
		cond, x, y := c.boolExpr(e.Args[0]), c.boolExpr(e.Args[1]), c.boolExpr(e.Args[2])
		return func(fr *frame) bool {
			if cond(fr) {
				return x(fr)
			}
			return y(fr)
		}
	case OpAnd:
		x, y := c.boolExpr(e.Args[0]), c.boolExpr(e.Args[1])
		return func(fr *frame) bool { return x(fr) && y(fr) }
	case OpOr:
		x, y := c.boolExpr(e.Args[0]), c.boolExpr(e.Args[1])
		return func(fr *frame) bool { return x(fr) || y(fr) }
	}
	return c.compare(e)
}

func (c *compiler) compare(e *Expr) boolFn {
	op, a := e.Op, e.Args[0]
	switch {
	case a.T == TBool:
		x, y := c.boolExpr(a), c.boolExpr(e.Args[1])
		if op == OpEq {
			return func(fr *frame) bool { return x(fr) == y(fr) }
		}
		return func(fr *frame) bool { return x(fr) != y(fr) }
	case a.T.IsFloat():
		x, y := c.floatExpr(a), c.floatExpr(e.Args[1])
		return func(fr *frame) bool { return compare(op, x(fr), y(fr)) }
	}
	x, y := c.intExpr(a), c.intExpr(e.Args[1])
	return func(fr *frame) bool { return compare(op, x(fr), y(fr)) }
}

// block compiles statements; the closure reports whether a return ran.
func (c *compiler) block(body []*Stmt) stmtFn {
	fns := make([]stmtFn, len(body))
	for i, s := range body {
		fns[i] = c.stmt(s)
	}
	return func(fr *frame) bool {
		for _, f := range fns {
			if f(fr) {
				return true
			}
		}
		return false
	}
}

func (c *compiler) stmt(s *Stmt) stmtFn {
	switch s.Kind {
	case StmtReturn:
		x := c.boolExpr(s.X)
		return func(fr *frame) bool { fr.ret = x(fr); return true }
	case StmtIf:
		cond, then, els := c.boolExpr(s.X), c.block(s.Then), c.block(s.Else)
		return func(fr *frame) bool {
			if cond(fr) {
				return then(fr)
			}
			return els(fr)
		}
	case StmtAtomic:
		return c.atomic(s)
	}
	return c.assign(s)
}

func (c *compiler) assign(s *Stmt) stmtFn {
	slot, x := s.Slot, c.expr(s.X)
	local := s.Space == SpaceLocal
	switch {
	case x.f != nil && local:
		return func(fr *frame) bool { fr.lf[slot] = x.f(fr); return false }
	case x.f != nil:
		return func(fr *frame) bool { fr.vf[slot] = x.f(fr); return false }
	case x.b != nil:
		return func(fr *frame) bool {
			fr.vi[slot] = 0
			if x.b(fr) {
				fr.vi[slot] = 1
			}
			return false
		}
	case local:
		return func(fr *frame) bool { fr.li[slot] = x.i(fr); return false }
	}
	return func(fr *frame) bool { fr.vi[slot] = x.i(fr); return false }
}

// atomic is a reduction into the local copy, which the CPU engine's
// worker owns alone (it pulls the vertex's in-edges): a plain update.
func (c *compiler) atomic(s *Stmt) stmtFn {
	slot, t, pos, x := s.Slot, c.prog.Vertex[s.Slot].Type, s.Pos, c.expr(s.X)
	if x.i != nil {
		xi := x.i
		switch s.Atomic {
		case AtomicMin:
			return func(fr *frame) bool { fr.li[slot] = min(fr.li[slot], xi(fr)); return false }
		case AtomicMax:
			return func(fr *frame) bool { fr.li[slot] = max(fr.li[slot], xi(fr)); return false }
		}
		return func(fr *frame) bool { fr.li[slot] = wrap(t, fr.li[slot]+xi(fr)); return false }
	}
	xf := x.f
	op := map[Atomic]Op{AtomicMin: OpMin, AtomicMax: OpMax, AtomicAdd: OpAdd}[s.Atomic]
	return func(fr *frame) bool {
		r, problem := floatArith(op, t, fr.lf[slot], xf(fr))
		if problem != "" {
			raise(pos, problem)
		}
		fr.lf[slot] = r
		return false
	}
}

func notNaN(pos Pos, r float64) float64 {
	if r != r {
		raise(pos, "the result is NaN")
	}
	return r
}
