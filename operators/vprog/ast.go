package vprog

// The syntax tree the parser makes; check.go turns it into the typed IR
// (ir.go) that the backends compile.

type node interface{ at() Pos }

type (
	litExpr struct {
		p    Pos
		kind tokKind // tInt or tFloat
		text string
	}
	nameExpr struct {
		p    Pos
		name string
	}
	fieldExpr struct {
		p         Pos
		obj, name string // local.level: obj "local"
	}
	unaryExpr struct {
		p  Pos
		op string
		x  node
	}
	binaryExpr struct {
		p    Pos
		op   string
		x, y node
	}
	condExpr struct {
		p       Pos
		c, x, y node
	}
	callExpr struct {
		p    Pos
		fun  string
		args []node
		strs []string // string arguments (column("name")), in place of args
	}
)

func (e *litExpr) at() Pos    { return e.p }
func (e *nameExpr) at() Pos   { return e.p }
func (e *fieldExpr) at() Pos  { return e.p }
func (e *unaryExpr) at() Pos  { return e.p }
func (e *binaryExpr) at() Pos { return e.p }
func (e *condExpr) at() Pos   { return e.p }
func (e *callExpr) at() Pos   { return e.p }

type (
	// assignStmt is target = value, target op= value, or name := value.
	assignStmt struct {
		p      Pos
		target node // *fieldExpr or *nameExpr
		op     string
		value  node
	}
	// atomicStmt is atomicMin(local.f, value) and its kin.
	atomicStmt struct {
		p      Pos
		fun    string
		target node
		value  node
	}
	ifStmt struct {
		p          Pos
		cond       node
		then, els  []node
		elseIsElif bool
	}
	returnStmt struct {
		p     Pos
		value node
	}
)

func (s *assignStmt) at() Pos { return s.p }
func (s *atomicStmt) at() Pos { return s.p }
func (s *ifStmt) at() Pos     { return s.p }
func (s *returnStmt) at() Pos { return s.p }

// fieldDecl is "vertex level uint32 = expr output ...".
type fieldDecl struct {
	p       Pos
	space   string // "vertex", "static" or "edge"
	name    string
	typ     string
	typPos  Pos
	init    node
	output  bool
	outName string
	null    node
	key     bool
	outPos  Pos
}

type constDecl struct {
	p      Pos
	name   string
	typ    string // "" for untyped
	typPos Pos
	value  node
}

type funcDecl struct {
	p    Pos
	name string
	body []node
}

// file is a parsed program.
type file struct {
	name         string
	namePos      Pos
	consts       []*constDecl
	fields       []*fieldDecl
	funcs        []*funcDecl
	tolerance    node
	tolerancePos Pos
	maxIter      node
	maxIterPos   Pos
}
