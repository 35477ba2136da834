package vprog

import "errors"

// fold replaces an operation whose operands are all constants by its
// value. Short-circuit and conditional operations fold only on constant
// conditions (check.go's cond).
func fold(e *Expr) (*Expr, error) {
	for _, a := range e.Args {
		if a.Op != OpConst {
			return e, nil
		}
	}
	if e.Op == OpCond {
		return e, nil
	}
	v, problem := evalOp(e.Op, e.T, e.Args)
	if problem != "" {
		return nil, errors.New(problem)
	}
	return &Expr{Op: OpConst, T: e.T, Pos: e.Pos, Val: v}, nil
}

// evalOp is op on constant operands, with the run-time semantics (sem.go).
func evalOp(op Op, t Type, args []*Expr) (value, string) {
	a := args[0]
	at := a.T
	switch op {
	case OpNot:
		return value{i: 1 - a.Val.i}, ""
	case OpAnd:
		return value{i: a.Val.i & args[1].Val.i}, ""
	case OpOr:
		return value{i: a.Val.i | args[1].Val.i}, ""
	case OpConv:
		return convertValue(t, at, a.Val), ""
	case OpNeg:
		if at.IsInt() {
			return value{i: wrap(t, -a.Val.i)}, ""
		}
		return value{f: -a.Val.f}, ""
	case OpAbs:
		if at.IsInt() {
			if a.Val.i < 0 {
				return value{i: wrap(t, -a.Val.i)}, ""
			}
			return a.Val, ""
		}
		f, p := unaryFloat(op, t, a.Val.f)
		return value{f: f}, p
	case OpSqrt, OpExp, OpTanh:
		f, p := unaryFloat(op, t, a.Val.f)
		return value{f: f}, p
	}
	b := args[1]
	if op >= OpEq && op <= OpGe {
		if at.IsFloat() {
			return boolValue(compare(op, a.Val.f, b.Val.f)), ""
		}
		return boolValue(compare(op, a.Val.i, b.Val.i)), ""
	}
	if t.IsFloat() {
		f, p := floatArith(op, t, a.Val.f, b.Val.f)
		return value{f: f}, p
	}
	i, ok := intArith(op, t, a.Val.i, b.Val.i)
	if !ok {
		return value{}, "division by zero"
	}
	return value{i: i}, ""
}

func boolValue(b bool) value {
	if b {
		return value{i: 1}
	}
	return value{}
}

// convertValue is a value of type from as type t.
func convertValue(t, from Type, v value) value {
	switch {
	case t.IsFloat() && from.IsFloat():
		return value{f: round(t, v.f)}
	case t.IsFloat():
		return value{f: intToFloat(t, from, v.i)}
	case from.IsFloat():
		return value{i: floatToInt(t, v.f)}
	}
	return value{i: wrap(t, v.i)}
}
