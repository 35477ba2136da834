package vprog

// body checks a function's statements in a new scope.
func (c *checker) body(nodes []node) ([]*Stmt, error) {
	c.scopes = append(c.scopes, map[string]int{})
	defer func() { c.scopes = c.scopes[:len(c.scopes)-1] }()
	var out []*Stmt
	for i, n := range nodes {
		s, err := c.stmt(n)
		if err != nil {
			return nil, err
		}
		if s.Kind == StmtReturn && i < len(nodes)-1 {
			return nil, c.errf(nodes[i+1].at(), "unreachable: a statement after return")
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *checker) stmt(n node) (*Stmt, error) {
	switch s := n.(type) {
	case *assignStmt:
		return c.assign(s)
	case *atomicStmt:
		return c.atomic(s)
	case *ifStmt:
		return c.ifStmt(s)
	case *returnStmt:
		if c.ctx != ctxUpdate {
			return nil, c.errf(s.p, "return is for update_condition, which returns whether the vertex changed")
		}
		x, err := c.expr(s.value)
		if err != nil {
			return nil, err
		}
		if x.T != TBool {
			return nil, c.errf(s.value.at(), "update_condition returns a bool (whether the vertex changed), not %s", x.T)
		}
		return &Stmt{Kind: StmtReturn, Pos: s.p, X: x}, nil
	}
	return nil, c.errf(n.at(), "not a statement")
}

func (c *checker) ifStmt(s *ifStmt) (*Stmt, error) {
	cond, err := c.expr(s.cond)
	if err != nil {
		return nil, err
	}
	if cond.T != TBool {
		return nil, c.errf(s.cond.at(), "the condition of if is %s, not bool", cond.T)
	}
	out := &Stmt{Kind: StmtIf, Pos: s.p, X: cond}
	if out.Then, err = c.body(s.then); err != nil {
		return nil, err
	}
	if out.Else, err = c.body(s.els); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *checker) atomic(s *atomicStmt) (*Stmt, error) {
	if c.ctx != ctxCompute {
		return nil, c.errf(s.p, "%s is for compute, which reduces the in-edges' values into the local vertex; elsewhere assign with =", s.fun)
	}
	f := s.target.(*fieldExpr) // atomics() checked it
	i := c.vertexField(f.name)
	t := c.prog.Vertex[i].Type
	x, err := c.expr(s.value)
	if err != nil {
		return nil, err
	}
	if x, err = c.convertTo(x, t, s.fun+"'s value"); err != nil {
		return nil, err
	}
	return &Stmt{Kind: StmtAtomic, Pos: s.p, Space: SpaceLocal, Slot: i, Atomic: c.prog.Atomics[i], X: x}, nil
}

var compound = map[string]Op{"+=": OpAdd, "-=": OpSub, "*=": OpMul, "/=": OpDiv}

func (c *checker) assign(s *assignStmt) (*Stmt, error) {
	if s.op == ":=" {
		return c.define(s)
	}
	space, slot, t, err := c.target(s.target)
	if err != nil {
		return nil, err
	}
	x, err := c.expr(s.value)
	if err != nil {
		return nil, err
	}
	if op, ok := compound[s.op]; ok {
		cur := &Expr{Op: OpLoad, T: t, Pos: s.target.at(), Space: space, Slot: slot}
		if x, err = c.binary(op, cur, x, s.p); err != nil {
			return nil, err
		}
	}
	if x, err = c.convertTo(x, t, "the assigned value"); err != nil {
		return nil, err
	}
	return &Stmt{Kind: StmtAssign, Pos: s.p, Space: space, Slot: slot, X: x}, nil
}

// target resolves what an assignment writes: a local field or a variable.
func (c *checker) target(n node) (Space, int, Type, error) {
	switch t := n.(type) {
	case *nameExpr:
		slot, ok := c.lookupVar(t.name)
		if !ok {
			if c.consts[t.name] != nil {
				return 0, 0, 0, c.errf(t.p, "%s is a constant; it cannot be assigned", t.name)
			}
			return 0, 0, 0, c.errf(t.p, "undefined: %s (declare a variable with %s := value)", t.name, t.name)
		}
		return SpaceVar, slot, c.prog.Vars[slot], nil
	case *fieldExpr:
		switch t.obj {
		case "local":
			i := c.vertexField(t.name)
			if i < 0 {
				return 0, 0, 0, c.unknownField(t, "vertex", c.prog.Vertex)
			}
			if c.ctx == ctxCompute {
				return 0, 0, 0, c.fixf(t.p, "reduce into it with atomicMin, atomicMax or atomicAdd",
					"compute runs once per in-edge, in any order and at once: it may not assign local.%s", t.name)
			}
			return SpaceLocal, i, c.prog.Vertex[i].Type, nil
		case "src_static", "old", "src", "edge":
			return 0, 0, 0, c.errf(t.p, "%s.%s is read-only: a program writes only its local vertex (local.FIELD)", t.obj, t.name)
		}
		return 0, 0, 0, c.errf(t.p, "unknown %s: a program writes local.FIELD or its variables", t.obj)
	}
	return 0, 0, 0, c.errf(n.at(), "cannot assign to %s", describe(n))
}

func (c *checker) lookupVar(name string) (int, bool) {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if slot, ok := c.scopes[i][name]; ok {
			return slot, true
		}
	}
	return 0, false
}

func (c *checker) define(s *assignStmt) (*Stmt, error) {
	n, ok := s.target.(*nameExpr)
	if !ok {
		return nil, c.errf(s.p, ":= declares a variable: name := value")
	}
	if err := c.newName(n.name, n.p); err != nil {
		return nil, err
	}
	if _, dup := c.scopes[len(c.scopes)-1][n.name]; dup {
		return nil, c.errf(n.p, "%s is already declared in this block; assign it with =", n.name)
	}
	if len(c.prog.Vars) >= MaxVars {
		return nil, c.errf(n.p, "more than %d variables", MaxVars)
	}
	x, err := c.expr(s.value)
	if err != nil {
		return nil, err
	}
	if x, err = c.convertTo(x, defaultType(x.T), "the variable's value"); err != nil {
		return nil, err
	}
	slot := len(c.prog.Vars)
	c.prog.Vars = append(c.prog.Vars, x.T)
	c.scopes[len(c.scopes)-1][n.name] = slot
	return &Stmt{Kind: StmtAssign, Pos: s.p, Space: SpaceVar, Slot: slot, X: x}, nil
}

// defaultType is the type an untyped constant takes in a variable.
func defaultType(t Type) Type {
	switch t {
	case tUntypedInt:
		return TInt64
	case tUntypedFloat:
		return TFloat64
	}
	return t
}
