package vprog

import (
	"fmt"
	"strings"
)

// The run's state, in 32-bit words, as the kernels and the host
// (package vpgpu) read it.
const (
	stateFired      = iota // vertices whose update_condition held this iteration
	stateDone              // the run is over: converged, at its limit or faulted
	stateIterations        // iterations run
	stateConverged         // the last iteration changed nothing
	statePending           // the iteration's changes wait for vp_commit
	stateErr               // the first fault's code (Module.Faults[code-1]), 0 for none
	stateErrVertex         // its vertex
	StateWords             // the state's size
)

// Module is a program's kernels for the GPU: PTX text the driver
// compiles, and what the host needs to drive them.
type Module struct {
	PTX string
	// Strategy is the strategy whose kernels PTX holds.
	Strategy string
	// VWarp is the lanes that pull one vertex's in-edges (vp_compute).
	VWarp int
	// Faults are the places a run can fault, by the state's code - 1.
	Faults []fault
}

// Fault describes fault code c (1-based) of the state: the program's
// place and what went wrong.
func (m *Module) Fault(code uint32) (Pos, string) {
	if code == 0 || int(code) > len(m.Faults) {
		return Pos{}, "an unknown fault"
	}
	f := m.Faults[code-1]
	return f.pos, f.what
}

// The kernels' names.
const (
	KernelCompute = "vp_compute" // one iteration's pull, K lanes a vertex
	KernelCheck   = "vp_check"   // the iteration's end: done, converged, pending
	KernelCommit  = "vp_commit"  // the changed values made current, their out-neighbours activated
)

// FieldTable is the order of the device pointers the kernels read from
// their table: every vertex field's current values, then its next ones,
// then the static fields', then the edge fields'.
func (p *Program) FieldTable() int { return 2*len(p.Vertex) + len(p.Static) + len(p.Edge) }

// GeneratePTX writes the program's kernels, K = vwarp lanes a vertex (1,
// 2, 4, 8, 16 or 32).
func (p *Program) GeneratePTX(vwarp int) (*Module, error) {
	if vwarp < 1 || vwarp > 32 || vwarp&(vwarp-1) != 0 {
		return nil, fmt.Errorf("vprog: vwarp %d is not a power of two up to 32", vwarp)
	}
	m := &Module{VWarp: vwarp, Strategy: "vwc"}
	var b strings.Builder
	b.WriteString(ptxHeader(p))
	b.WriteString(p.computeKernel(vwarp, &m.Faults))
	b.WriteString(checkKernel)
	b.WriteString(p.commitKernel())
	m.PTX = b.String()
	return m, nil
}

// entry writes a kernel: its parameters, its registers, its body.
func entry(name string, params []string, g *ptxGen, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".visible .entry %s(\n", name)
	for i, prm := range params {
		sep := ","
		if i == len(params)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "\t.param .%s %s_p%d%s\n", prm, name, i, sep)
	}
	b.WriteString(")\n{\n")
	b.WriteString(g.declarations())
	b.WriteString(body)
	b.WriteString("}\n\n")
	return b.String()
}

// param loads kernel parameter i into a new register, converting a
// pointer to a global address.
func (g *ptxGen) param(kernel string, i int, typ string) string {
	switch typ {
	case "u64":
		r := g.reg("rd")
		g.emit("ld.param.u64 %s, [%s_p%d]", r, kernel, i)
		g.emit("cvta.to.global.u64 %s, %s", r, r)
		return r
	case "s64":
		r := g.reg("rd")
		g.emit("ld.param.u64 %s, [%s_p%d]", r, kernel, i)
		return r
	}
	r := g.reg("r")
	g.emit("ld.param.u32 %s, [%s_p%d]", r, kernel, i)
	return r
}

// tableEntry loads pointer i of the field table.
func (g *ptxGen) tableEntry(tab string, i int) string {
	r := g.reg("rd")
	g.emit("ld.global.nc.u64 %s, [%s+%d]", r, tab, 8*i)
	g.emit("cvta.to.global.u64 %s, %s", r, r)
	return r
}

// loadTable reads the field arrays' addresses.
func (g *ptxGen) loadTable(p *Program, tab string) (cur, next, static, edges []string) {
	nv, ns := len(p.Vertex), len(p.Static)
	for k := range p.Vertex {
		cur = append(cur, g.tableEntry(tab, k))
		next = append(next, g.tableEntry(tab, nv+k))
	}
	for k := range p.Static {
		static = append(static, g.tableEntry(tab, 2*nv+k))
	}
	for k := range p.Edge {
		edges = append(edges, g.tableEntry(tab, 2*nv+ns+k))
	}
	return
}

// openProgram starts a kernel of g.prog's fields: it exits at once where
// the run is done (the label it returns), and reads the field table tab
// into g.cur, g.static and g.edges; it returns the next values' arrays.
func (g *ptxGen) openProgram(tab string) (exit string, next []string) {
	exit = g.newLabel()
	g.exitIfDone(exit)
	g.cur, next, g.static, g.edges = g.loadTable(g.prog, tab)
	return exit, next
}

// elementAddr is the address of element i (u32) of an array of t at base.
func (g *ptxGen) elementAddr(base, i string, size int) string {
	a := g.reg("rd")
	g.emit("mul.wide.u32 %s, %s, %d", a, i, size)
	g.emit("add.s64 %s, %s, %s", a, a, base)
	return a
}

// computeKernel is vp_compute: K lanes a vertex, each pulling every K-th
// in-edge of the active vertices into partial reductions that a
// butterfly of shuffles combines; the vertex's first lane runs
// update_condition and keeps the new value where it holds.
func (p *Program) computeKernel(k int, faults *[]fault) string {
	const name = KernelCompute
	g := &ptxGen{prog: p, faults: faults}
	params := []string{"u64", "u64", "u64", "u64", "u64", "u64", "u32", "u64"}
	tab := g.param(name, 0, "u64")
	g.state = g.param(name, 1, "u64")
	inOff, inSrc := g.param(name, 2, "u64"), g.param(name, 3, "u64")
	act, chg := g.param(name, 4, "u64"), g.param(name, 5, "u64")
	n := g.param(name, 6, "u32")
	g.numVertices = g.param(name, 7, "s64")
	exit, next := g.openProgram(tab)
	lane, warp, warps := g.threadIDs()
	perWarp := 32 / k
	sub, row := g.reg("r"), g.reg("r")
	g.emit("and.b32 %s, %s, %d", sub, lane, k-1)
	g.emit("shr.u32 %s, %s, %d", row, lane, log2(k))
	base, step := g.reg("r"), g.reg("r")
	g.emit("mul.lo.u32 %s, %s, %d", base, warp, perWarp)
	g.emit("mul.lo.u32 %s, %s, %d", step, warps, perWarp)
	top, loopEnd := g.newLabel(), g.newLabel()
	g.place(top)
	pend := g.reg("p")
	g.emit("setp.ge.u32 %s, %s, %s", pend, base, n)
	g.emit("@%s bra %s", pend, loopEnd)
	g.vertex = g.reg("r")
	g.emit("add.u32 %s, %s, %s", g.vertex, base, row)
	valid := g.activeVertex(act, n)
	g.pull(k, valid, sub, inOff, inSrc)
	g.finish(valid, sub, act, chg, next)
	g.emit("add.u32 %s, %s, %s", base, base, step)
	g.emit("bra %s", top)
	g.place(loopEnd)
	g.place(exit)
	g.emit("ret")
	body := g.b.String()
	return entry(name, params, g, body)
}

// threadIDs are the lane, the warp and the number of warps of the grid.
func (g *ptxGen) threadIDs() (lane, warp, warps string) {
	tid, ntid, ctaid, nctaid := g.reg("r"), g.reg("r"), g.reg("r"), g.reg("r")
	g.emit("mov.u32 %s, %%tid.x", tid)
	g.emit("mov.u32 %s, %%ntid.x", ntid)
	g.emit("mov.u32 %s, %%ctaid.x", ctaid)
	g.emit("mov.u32 %s, %%nctaid.x", nctaid)
	gtid := g.reg("r")
	g.emit("mad.lo.u32 %s, %s, %s, %s", gtid, ctaid, ntid, tid)
	lane, warp, warps = g.reg("r"), g.reg("r"), g.reg("r")
	g.emit("and.b32 %s, %s, 31", lane, tid)
	g.emit("shr.u32 %s, %s, 5", warp, gtid)
	g.emit("mul.lo.u32 %s, %s, %s", warps, nctaid, ntid)
	g.emit("shr.u32 %s, %s, 5", warps, warps)
	return
}

// activeVertex is whether the lane's vertex exists and is active.
func (g *ptxGen) activeVertex(act, n string) string {
	valid := g.reg("p")
	skip := g.newLabel()
	g.emit("setp.lt.u32 %s, %s, %s", valid, g.vertex, n)
	g.emit("@!%s bra %s", valid, skip)
	a, flag := g.elementAddr(act, g.vertex, 1), g.reg("r")
	g.emit("ld.global.u8 %s, [%s]", flag, a)
	g.emit("setp.ne.u32 %s, %s, 0", valid, flag)
	g.place(skip)
	return valid
}

// pull runs init_compute and compute over the lane's share of the
// in-edges, then combines the lanes' partial reductions.
func (p *ptxGen) pull(k int, valid, sub, inOff, inSrc string) {
	g := p
	prog := g.prog
	g.fieldRegs()
	g.resetPartials()
	skip := g.newLabel()
	g.emit("@!%s bra %s", valid, skip)
	for i, f := range prog.Vertex {
		addr := g.elementAddr(g.cur[i], g.vertex, f.Type.Size())
		g.emit("ld.global.nc.%s %s, [%s]", bitType(f.Type), g.old[i], addr)
		g.emit("mov.%s %s, %s", bitType(f.Type), g.local[i], g.old[i])
	}
	g.block(prog.InitCompute)
	g.edgeLoop(k, sub, inOff, inSrc)
	g.place(skip)
	g.reduceLanes(k)
}

// edgeLoop runs compute for in-edges in[v][sub], in[v][sub+K], ...
func (g *ptxGen) edgeLoop(k int, sub, inOff, inSrc string) {
	a := g.reg("rd")
	g.emit("mul.wide.u32 %s, %s, 8", a, g.vertex)
	g.emit("add.s64 %s, %s, %s", a, a, inOff)
	g.edge = g.reg("rd")
	end, sub64 := g.reg("rd"), g.reg("rd")
	g.emit("ld.global.nc.u64 %s, [%s]", g.edge, a)
	g.emit("ld.global.nc.u64 %s, [%s+8]", end, a)
	g.emit("cvt.u64.u32 %s, %s", sub64, sub)
	g.emit("add.s64 %s, %s, %s", g.edge, g.edge, sub64)
	top, out := g.newLabel(), g.newLabel()
	more := g.reg("p")
	g.place(top)
	g.emit("setp.ge.s64 %s, %s, %s", more, g.edge, end)
	g.emit("@%s bra %s", more, out)
	sa := g.reg("rd")
	g.emit("shl.b64 %s, %s, 2", sa, g.edge)
	g.emit("add.s64 %s, %s, %s", sa, sa, inSrc)
	g.src = g.reg("r")
	g.emit("ld.global.nc.u32 %s, [%s]", g.src, sa)
	g.block(g.prog.Compute)
	g.emit("add.s64 %s, %s, %d", g.edge, g.edge, k)
	g.emit("bra %s", top)
	g.place(out)
}

// reduceLanes combines the K lanes' partials by a butterfly of shuffles
// (every lane of the warp takes part).
func (g *ptxGen) reduceLanes(k int) {
	for i, f := range g.prog.Vertex {
		a := g.prog.Atomics[i]
		if a == AtomicNone {
			continue
		}
		for off := k / 2; off >= 1; off /= 2 {
			other := g.shuffle(f.Type, g.partial[i], off)
			r := g.binop(atomicOp(a), f.Type, g.partial[i], other, g.atomicPos(i))
			g.emit("mov.%s %s, %s", bitType(f.Type), g.partial[i], r)
		}
	}
}

// atomicPos is the place of compute's first reduction into field i.
func (g *ptxGen) atomicPos(i int) Pos {
	var find func([]*Stmt) (Pos, bool)
	find = func(body []*Stmt) (Pos, bool) {
		for _, s := range body {
			if s.Kind == StmtAtomic && s.Slot == i {
				return s.Pos, true
			}
			if pos, ok := find(s.Then); ok {
				return pos, true
			}
			if pos, ok := find(s.Else); ok {
				return pos, true
			}
		}
		return Pos{}, false
	}
	pos, _ := find(g.prog.Compute)
	return pos
}

// shuffle is x of the lane off away (xor), 64-bit values in two halves.
func (g *ptxGen) shuffle(t Type, x string, off int) string {
	r := g.regOf(t)
	if t.Size() == 4 {
		g.emit("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", r, x, off)
		return r
	}
	lo, hi := g.reg("r"), g.reg("r")
	g.emit("mov.b64 {%s, %s}, %s", lo, hi, x)
	g.emit("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", lo, lo, off)
	g.emit("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", hi, hi, off)
	g.emit("mov.b64 %s, {%s, %s}", r, lo, hi)
	return r
}

// finish is the vertex's first lane: the reductions into the local copy,
// update_condition, and the new value kept where it holds.
func (g *ptxGen) finish(valid, sub, act, chg string, next []string) {
	prog := g.prog
	skip := g.newLabel()
	first := g.reg("p")
	g.emit("setp.eq.u32 %s, %s, 0", first, sub)
	g.emit("and.pred %s, %s, %s", first, first, valid)
	g.emit("@!%s bra %s", first, skip)
	for i, f := range prog.Vertex {
		if a := prog.Atomics[i]; a != AtomicNone {
			r := g.binop(atomicOp(a), f.Type, g.local[i], g.partial[i], g.atomicPos(i))
			g.emit("mov.%s %s, %s", bitType(f.Type), g.local[i], r)
		}
	}
	g.retPred, g.retLabel = g.reg("p"), g.newLabel()
	g.emit("mov.pred %s, 0", g.retPred)
	g.block(prog.Update)
	g.place(g.retLabel)
	aa := g.elementAddr(act, g.vertex, 1)
	g.emit("st.global.u8 [%s], 0", aa)
	g.emit("@!%s bra %s", g.retPred, skip)
	for i, f := range prog.Vertex {
		addr := g.elementAddr(next[i], g.vertex, f.Type.Size())
		g.emit("st.global.%s [%s], %s", bitType(f.Type), addr, g.local[i])
	}
	ca := g.elementAddr(chg, g.vertex, 1)
	g.emit("st.global.u8 [%s], 1", ca)
	g.emit("red.global.add.u32 [%s+%d], 1", g.state, 4*stateFired)
	g.place(skip)
}

// checkKernel is vp_check, one thread: the iteration's end.
const checkKernel = `.visible .entry vp_check(
	.param .u64 vp_check_p0,
	.param .u32 vp_check_p1
)
{
	.reg .pred %p<6>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [vp_check_p0];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u32 %r1, [vp_check_p1];
	ld.global.u32 %r2, [%rd1+4];
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra $Ldone;
	ld.global.u32 %r3, [%rd1+8];
	add.u32 %r3, %r3, 1;
	st.global.u32 [%rd1+8], %r3;
	ld.global.u32 %r4, [%rd1];
	st.global.u32 [%rd1], 0;
	setp.eq.u32 %p2, %r4, 0;
	selp.u32 %r5, 1, 0, %p2;
	st.global.u32 [%rd1+12], %r5;
	selp.u32 %r6, 0, 1, %p2;
	st.global.u32 [%rd1+16], %r6;
	setp.ge.u32 %p3, %r3, %r1;
	ld.global.u32 %r7, [%rd1+20];
	setp.ne.u32 %p4, %r7, 0;
	or.pred %p5, %p2, %p3;
	or.pred %p5, %p5, %p4;
	selp.u32 %r8, 1, 0, %p5;
	st.global.u32 [%rd1+4], %r8;
	ret;
$Ldone:
	st.global.u32 [%rd1+16], 0;
	ret;
}

`

// commitKernel is vp_commit: each lane takes a vertex; the changed ones'
// next values become current, and the warp marks their out-neighbours
// (and themselves) active for the next iteration, vertex by vertex of
// the ballot.
func (p *Program) commitKernel() string {
	const name = KernelCommit
	g := &ptxGen{prog: p}
	params := []string{"u64", "u64", "u64", "u64", "u64", "u64", "u32"}
	tab := g.param(name, 0, "u64")
	g.state = g.param(name, 1, "u64")
	outOff, outTgt := g.param(name, 2, "u64"), g.param(name, 3, "u64")
	act, chg := g.param(name, 4, "u64"), g.param(name, 5, "u64")
	n := g.param(name, 6, "u32")
	exit := g.newLabel()
	pending, pp := g.reg("r"), g.reg("p")
	g.emit("ld.global.u32 %s, [%s+%d]", pending, g.state, 4*statePending)
	g.emit("setp.eq.u32 %s, %s, 0", pp, pending)
	g.emit("@%s bra %s", pp, exit)
	cur, next, _, _ := g.loadTable(p, tab)
	lane, warp, warps := g.threadIDs()
	base, step := g.reg("r"), g.reg("r")
	g.emit("shl.b32 %s, %s, 5", base, warp)
	g.emit("shl.b32 %s, %s, 5", step, warps)
	top, loopEnd := g.newLabel(), g.newLabel()
	g.place(top)
	pend := g.reg("p")
	g.emit("setp.ge.u32 %s, %s, %s", pend, base, n)
	g.emit("@%s bra %s", pend, loopEnd)
	v := g.reg("r")
	g.emit("add.u32 %s, %s, %s", v, base, lane)
	changed := g.commitVertex(v, n, chg, act, cur, next)
	g.activate(changed, base, lane, outOff, outTgt, act)
	g.emit("add.u32 %s, %s, %s", base, base, step)
	g.emit("bra %s", top)
	g.place(loopEnd)
	g.place(exit)
	g.emit("ret")
	body := g.b.String()
	return entry(name, params, g, body)
}

// commitVertex makes v's next values current if it changed; the
// predicate says it did.
func (g *ptxGen) commitVertex(v, n, chg, act string, cur, next []string) string {
	changed := g.reg("p")
	skip := g.newLabel()
	g.emit("setp.lt.u32 %s, %s, %s", changed, v, n)
	g.emit("@!%s bra %s", changed, skip)
	ca, c := g.elementAddr(chg, v, 1), g.reg("r")
	g.emit("ld.global.u8 %s, [%s]", c, ca)
	g.emit("setp.ne.u32 %s, %s, 0", changed, c)
	g.emit("@!%s bra %s", changed, skip)
	g.emit("st.global.u8 [%s], 0", ca)
	for i, f := range g.prog.Vertex {
		from, to := g.elementAddr(next[i], v, f.Type.Size()), g.elementAddr(cur[i], v, f.Type.Size())
		x := g.regOf(f.Type)
		g.emit("ld.global.%s %s, [%s]", bitType(f.Type), x, from)
		g.emit("st.global.%s [%s], %s", bitType(f.Type), to, x)
	}
	aa := g.elementAddr(act, v, 1)
	g.emit("st.global.u8 [%s], 1", aa)
	g.place(skip)
	return changed
}

// activate marks the out-neighbours of the warp's changed vertices.
func (g *ptxGen) activate(changed, base, lane, outOff, outTgt, act string) {
	bits := g.reg("r")
	g.emit("vote.sync.ballot.b32 %s, %s, -1", bits, changed)
	top, out := g.newLabel(), g.newLabel()
	none := g.reg("p")
	g.place(top)
	g.emit("setp.eq.u32 %s, %s, 0", none, bits)
	g.emit("@%s bra %s", none, out)
	j, w, one := g.reg("r"), g.reg("r"), g.reg("r")
	g.emit("bfind.u32 %s, %s", j, bits)
	g.emit("shl.b32 %s, 1, %s", one, j)
	g.emit("xor.b32 %s, %s, %s", bits, bits, one)
	g.emit("add.u32 %s, %s, %s", w, base, j)
	a := g.elementAddr(outOff, w, 8)
	e, end, l64 := g.reg("rd"), g.reg("rd"), g.reg("rd")
	g.emit("ld.global.nc.u64 %s, [%s]", e, a)
	g.emit("ld.global.nc.u64 %s, [%s+8]", end, a)
	g.emit("cvt.u64.u32 %s, %s", l64, lane)
	g.emit("add.s64 %s, %s, %s", e, e, l64)
	inner, innerOut := g.newLabel(), g.newLabel()
	past := g.reg("p")
	g.place(inner)
	g.emit("setp.ge.s64 %s, %s, %s", past, e, end)
	g.emit("@%s bra %s", past, innerOut)
	ta, t := g.reg("rd"), g.reg("r")
	g.emit("shl.b64 %s, %s, 2", ta, e)
	g.emit("add.s64 %s, %s, %s", ta, ta, outTgt)
	g.emit("ld.global.nc.u32 %s, [%s]", t, ta)
	aa := g.elementAddr(act, t, 1)
	g.emit("st.global.u8 [%s], 1", aa)
	g.emit("add.s64 %s, %s, 32", e, e)
	g.emit("bra %s", inner)
	g.place(innerOut)
	g.emit("bra %s", top)
	g.place(out)
}
