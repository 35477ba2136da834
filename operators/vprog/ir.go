package vprog

import "math"

// Type is a value's type.
type Type int

const (
	TInvalid Type = iota
	TInt32
	TUint32
	TInt64
	TFloat32
	TFloat64
	TBool
	tUntypedInt
	tUntypedFloat
)

var typeNames = map[string]Type{"int32": TInt32, "uint32": TUint32, "int64": TInt64, "float32": TFloat32, "float64": TFloat64, "bool": TBool}

func (t Type) String() string {
	switch t {
	case TInt32:
		return "int32"
	case TUint32:
		return "uint32"
	case TInt64:
		return "int64"
	case TFloat32:
		return "float32"
	case TFloat64:
		return "float64"
	case TBool:
		return "bool"
	case tUntypedInt:
		return "untyped integer constant"
	case tUntypedFloat:
		return "untyped float constant"
	}
	return "invalid"
}

// IsFloat says whether t is float32, float64 or an untyped float constant.
func (t Type) IsFloat() bool { return t == TFloat32 || t == TFloat64 || t == tUntypedFloat }

// IsInt says whether t is an integer type or an untyped integer constant.
func (t Type) IsInt() bool { return t == TInt32 || t == TUint32 || t == TInt64 || t == tUntypedInt }

// Size is the bytes a value of t takes in a field array.
func (t Type) Size() int {
	switch t {
	case TInt64, TFloat64:
		return 8
	}
	return 4
}

func (t Type) numeric() bool { return t.IsInt() || t.IsFloat() }

// value is a constant: integers (wrapped to their type) in i, floats
// (float32 ones rounded to float32) in f, bools as i = 0 or 1.
type value struct {
	i int64
	f float64
}

// Space is where a field or a variable lives.
type Space int

const (
	SpaceLocal     Space = iota // the vertex's local copy (CuSha's local_V)
	SpaceOld                    // the vertex's stored value (CuSha's V)
	SpaceSrc                    // the in-edge's source's value (SrcV)
	SpaceSrcStatic              // the source's static value (SrcV_static)
	SpaceEdge                   // the edge's value (E)
	SpaceVar                    // a local variable
	SpaceBuiltin                // an initial value's inputs, num_vertices
)

// The builtins an initial value reads (slot of a SpaceBuiltin load).
const (
	BuiltinID          = iota // the vertex's dense id (int64)
	BuiltinIsSource           // the vertex is the run's source (bool)
	BuiltinNumVertices        // the graph's vertices (int64); every function reads it
	BuiltinOutDegree          // the vertex's out-edges (int64)
	BuiltinInDegree           // the vertex's in-edges (int64)
	BuiltinColumn             // the edge's value in the program's edge column (float64)
)

// Op is an IR operation.
type Op int

const (
	OpConst Op = iota
	OpLoad
	OpNeg
	OpNot
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpRem
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpAnd
	OpOr
	OpCond
	OpConv
	OpMin
	OpMax
	OpAbs
	OpSqrt
	OpExp
	OpTanh
)

// Expr is a typed expression of the IR.
type Expr struct {
	Op    Op
	T     Type
	Pos   Pos
	Args  []*Expr
	Val   value // OpConst
	Space Space // OpLoad
	Slot  int   // OpLoad: the field, variable or builtin
}

// Atomic is the reduction an atomic statement applies.
type Atomic int

const (
	AtomicNone Atomic = iota
	AtomicMin
	AtomicMax
	AtomicAdd
)

func (a Atomic) String() string {
	switch a {
	case AtomicMin:
		return "atomicMin"
	case AtomicMax:
		return "atomicMax"
	case AtomicAdd:
		return "atomicAdd"
	}
	return "none"
}

// StmtKind is a statement's kind.
type StmtKind int

const (
	StmtAssign StmtKind = iota // Space/Slot = X
	StmtAtomic                 // local field Slot = Atomic(it, X)
	StmtIf                     // if X { Then } else { Else }
	StmtReturn                 // return X
)

// Stmt is a statement of the IR.
type Stmt struct {
	Kind       StmtKind
	Pos        Pos
	Space      Space
	Slot       int
	Atomic     Atomic
	X          *Expr
	Then, Else []*Stmt
}

// identity is the value an atomic reduction starts from, so that partial
// reductions over some of the edges combine with it.
func (a Atomic) identity(t Type) value {
	switch a {
	case AtomicAdd:
		return value{}
	case AtomicMin:
		switch t {
		case TInt32:
			return value{i: math.MaxInt32}
		case TUint32:
			return value{i: math.MaxUint32}
		case TInt64:
			return value{i: math.MaxInt64}
		}
		return value{f: math.Inf(1)}
	}
	switch t {
	case TInt32:
		return value{i: math.MinInt32}
	case TUint32:
		return value{i: 0}
	case TInt64:
		return value{i: math.MinInt64}
	}
	return value{f: math.Inf(-1)}
}
