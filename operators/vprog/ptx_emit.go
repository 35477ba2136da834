package vprog

// Emitters the edge-parallel strategies share (ptx_strategies.go,
// ptx_kites.go): the vertex's registers, the vertex passes around compute
// (init_compute into a store of local copies, update_condition out of
// it), the sweep of a range of in-edges 32 at a time with the warp's
// segmented reduction by destination, and the atomic combination of a
// partial reduction into memory.

// noVertex is the key of a lane without an edge that counts: no vertex
// has it (a GPU run has fewer than 2^32 - 1 vertices).
const noVertex = 0xFFFFFFFF

// fieldRegs allocates the registers of the vertex's local, old and
// partial values and of the program's variables.
func (g *ptxGen) fieldRegs() {
	prog := g.prog
	g.local, g.old, g.partial = nil, nil, nil
	for _, f := range prog.Vertex {
		g.local = append(g.local, g.regOf(f.Type))
		g.old = append(g.old, g.regOf(f.Type))
		g.partial = append(g.partial, g.regOf(f.Type))
	}
	g.vars = nil
	for _, t := range prog.Vars {
		g.vars = append(g.vars, g.regOf(t))
	}
}

// resetPartials sets the reduced fields' partials to their identities.
func (g *ptxGen) resetPartials() {
	for i, f := range g.prog.Vertex {
		if a := g.prog.Atomics[i]; a != AtomicNone {
			g.emit("mov.%s %s, %s", bitType(f.Type), g.partial[i], constant(f.Type, a.identity(f.Type)))
		}
	}
}

// localStore is where a pass keeps the vertices' local copies between
// init_compute, the reductions and update_condition: the next arrays
// (global) or a shard's window (shared).
type localStore struct {
	space string
	// addr is the address of field i of the vertex in g.vertex.
	addr func(i int) string
}

// nextStore keeps the local copies in the next arrays.
func (g *ptxGen) nextStore(next []string) localStore {
	return localStore{space: "global", addr: func(i int) string {
		return g.elementAddr(next[i], g.vertex, g.prog.Vertex[i].Type.Size())
	}}
}

// loadOld reads the vertex's stored values (cur, which no kernel of an
// iteration before vp_commit writes).
func (g *ptxGen) loadOld() {
	for i, f := range g.prog.Vertex {
		addr := g.elementAddr(g.cur[i], g.vertex, f.Type.Size())
		g.emit("ld.global.nc.%s %s, [%s]", bitType(f.Type), g.old[i], addr)
	}
}

// initVertex runs init_compute on the vertex's stored values and keeps
// the local copy in st, where the reductions combine into it.
func (g *ptxGen) initVertex(st localStore) {
	g.loadOld()
	for i, f := range g.prog.Vertex {
		g.emit("mov.%s %s, %s", bitType(f.Type), g.local[i], g.old[i])
	}
	g.block(g.prog.InitCompute)
	for i, f := range g.prog.Vertex {
		g.emit("st.%s.%s [%s], %s", st.space, bitType(f.Type), st.addr(i), g.local[i])
	}
}

// updateVertex reads the vertex's local copy back from st, runs
// update_condition and, where it holds, keeps the new values in next and
// marks the vertex changed; the vertex is no longer active. A float sum
// that came out NaN faults at its atomicAdd, as vwc's does.
func (g *ptxGen) updateVertex(st localStore, next []string, act, chg string) {
	g.loadOld()
	for i, f := range g.prog.Vertex {
		g.emit("ld.%s.%s %s, [%s]", st.space, bitType(f.Type), g.local[i], st.addr(i))
		if g.prog.Atomics[i] == AtomicAdd && f.Type.IsFloat() {
			g.checkNaN(f.Type, g.local[i], g.atomicPos(i))
		}
	}
	g.retPred, g.retLabel = g.reg("p"), g.newLabel()
	g.emit("mov.pred %s, 0", g.retPred)
	g.block(g.prog.Update)
	g.place(g.retLabel)
	g.emit("st.global.u8 [%s], 0", g.elementAddr(act, g.vertex, 1))
	skip := g.newLabel()
	g.emit("@!%s bra %s", g.retPred, skip)
	for i, f := range g.prog.Vertex {
		g.emit("st.global.%s [%s], %s", bitType(f.Type), g.elementAddr(next[i], g.vertex, f.Type.Size()), g.local[i])
	}
	g.emit("st.global.u8 [%s], 1", g.elementAddr(chg, g.vertex, 1))
	g.emit("red.global.add.u32 [%s+%d], 1", g.state, 4*stateFired)
	g.place(skip)
}

// sweep is a range of in-edges that a group of warps reduces, 32
// consecutive ones a round: the edges of a destination are consecutive
// (sorted by destination, or laid out by the active list), so a warp's
// lanes hold runs of equal destinations.
type sweep struct {
	lo, hi      string // %rd: the edges [lo, hi)
	warp, warps string // the warp's index among the group's, and their number
	lane        string
	// locate sets g.vertex (the destination), g.edge and g.src for edge
	// i, and returns whether the edge counts (its destination is active).
	locate func(i string) string
	// into holds the destinations' local copies.
	into localStore
}

// edgeSweep runs compute for each edge of s that counts into the lane's
// partials, reduces them by destination across the warp and combines
// each run's reduction into its destination atomically.
func (g *ptxGen) edgeSweep(s sweep) {
	base, step, lane64, i := g.reg("rd"), g.reg("rd"), g.reg("rd"), g.reg("rd")
	g.emit("mul.wide.u32 %s, %s, 32", base, s.warp)
	g.emit("add.s64 %s, %s, %s", base, base, s.lo)
	g.emit("mul.wide.u32 %s, %s, 32", step, s.warps)
	g.emit("cvt.u64.u32 %s, %s", lane64, s.lane)
	g.vertex, g.edge, g.src = g.reg("r"), g.reg("rd"), g.reg("r")
	key := g.reg("r")
	top, out, skip, next := g.newLabel(), g.newLabel(), g.newLabel(), g.newLabel()
	past, valid := g.reg("p"), g.reg("p")
	g.place(top)
	g.emit("setp.ge.s64 %s, %s, %s", past, base, s.hi) // the same for the warp's lanes
	g.emit("@%s bra %s", past, out)
	g.emit("add.s64 %s, %s, %s", i, base, lane64)
	g.emit("mov.u32 %s, %d", key, uint32(noVertex))
	g.resetPartials()
	g.emit("setp.lt.s64 %s, %s, %s", valid, i, s.hi)
	g.emit("@!%s bra %s", valid, skip)
	counts := s.locate(i)
	g.emit("@!%s bra %s", counts, skip)
	g.emit("mov.u32 %s, %s", key, g.vertex)
	g.loadLocals(s.into)
	g.block(g.prog.Compute)
	g.place(skip)
	g.segmentedReduce(key)
	tail := g.segmentEnd(key, s.lane)
	g.emit("@!%s bra %s", tail, next)
	for f, a := range g.prog.Atomics {
		if a != AtomicNone {
			g.reduceInto(s.into.space, s.into.addr(f), f, g.partial[f])
		}
	}
	g.place(next)
	g.emit("add.s64 %s, %s, %s", base, base, step)
	g.emit("bra %s", top)
	g.place(out)
}

// loadLocals reads the local fields compute reads (those it does not
// reduce: init_compute set them) from st.
func (g *ptxGen) loadLocals(st localStore) {
	reads := map[int]bool{}
	walkLoads(g.prog.Compute, func(e *Expr) {
		if e.Space == SpaceLocal {
			reads[e.Slot] = true
		}
	})
	for i, f := range g.prog.Vertex {
		if reads[i] {
			g.emit("ld.%s.%s %s, [%s]", st.space, bitType(f.Type), g.local[i], st.addr(i))
		}
	}
}

// walkLoads calls fn for every load of the statements' expressions.
func walkLoads(body []*Stmt, fn func(*Expr)) {
	var expr func(*Expr)
	expr = func(e *Expr) {
		if e == nil {
			return
		}
		if e.Op == OpLoad {
			fn(e)
		}
		for _, a := range e.Args {
			expr(a)
		}
	}
	for _, s := range body {
		expr(s.X)
		walkLoads(s.Then, fn)
		walkLoads(s.Else, fn)
	}
}

// shfl is x of another lane (mode up, down or idx, c the shuffle's clamp
// operand), 64-bit values in two halves; in, unless "", says whether
// that lane exists.
func (g *ptxGen) shfl(mode string, t Type, x string, off, c int, in string) string {
	pred := ""
	if in != "" {
		pred = "|" + in
	}
	r := g.regOf(t)
	if t.Size() == 4 {
		g.emit("shfl.sync.%s.b32 %s%s, %s, %d, %d, -1", mode, r, pred, x, off, c)
		return r
	}
	lo, hi := g.reg("r"), g.reg("r")
	g.emit("mov.b64 {%s, %s}, %s", lo, hi, x)
	g.emit("shfl.sync.%s.b32 %s%s, %s, %d, %d, -1", mode, lo, pred, lo, off, c)
	g.emit("shfl.sync.%s.b32 %s, %s, %d, %d, -1", mode, hi, hi, off, c)
	g.emit("mov.b64 %s, {%s, %s}", r, lo, hi)
	return r
}

// segmentedReduce is an inclusive scan of the partials over each run of
// equal keys in the warp: the run's last lane ends with its reduction,
// the lanes' partials combined in lane order.
func (g *ptxGen) segmentedReduce(key string) {
	for off := 1; off < 32; off *= 2 {
		in, same := g.reg("p"), g.reg("p")
		okey := g.shfl("up", TUint32, key, off, 0, in)
		g.emit("setp.eq.and.u32 %s, %s, %s, %s", same, okey, key, in)
		other := make([]string, len(g.prog.Vertex))
		for i, f := range g.prog.Vertex {
			if g.prog.Atomics[i] != AtomicNone {
				other[i] = g.shfl("up", f.Type, g.partial[i], off, 0, "")
			}
		}
		skip := g.newLabel()
		g.emit("@!%s bra %s", same, skip)
		for i, f := range g.prog.Vertex {
			if a := g.prog.Atomics[i]; a != AtomicNone {
				r := g.binop(atomicOp(a), f.Type, other[i], g.partial[i], g.atomicPos(i))
				g.emit("mov.%s %s, %s", bitType(f.Type), g.partial[i], r)
			}
		}
		g.place(skip)
	}
}

// segmentEnd is whether the lane ends a run of a vertex's edges.
func (g *ptxGen) segmentEnd(key, lane string) string {
	nk := g.shfl("down", TUint32, key, 1, 31, "")
	tail := g.reg("p")
	g.emit("setp.ne.u32 %s, %s, %s", tail, nk, key)
	g.emit("setp.eq.or.u32 %s, %s, 31, %s", tail, lane, tail)
	g.emit("setp.ne.and.u32 %s, %s, %d, %s", tail, key, uint32(noVertex), tail)
	return tail
}

// reduceInto combines x into field i's value at addr (in space)
// atomically, by the field's reduction: integer add, min and max and
// float add are the hardware's atomics; float min and max a
// compare-and-swap loop on the bits, with sem.go's compare-select.
func (g *ptxGen) reduceInto(space, addr string, i int, x string) {
	t, a := g.prog.Vertex[i].Type, g.prog.Atomics[i]
	switch {
	case a == AtomicAdd && t.IsFloat():
		g.emit("red.%s.add.%s [%s], %s", space, ptxType(t), addr, x)
	case a == AtomicAdd:
		g.emit("red.%s.add.u%d [%s], %s", space, 8*t.Size(), addr, x)
	case !t.IsFloat():
		op := "min"
		if a == AtomicMax {
			op = "max"
		}
		g.emit("red.%s.%s.%s [%s], %s", space, op, ptxType(t), addr, x)
	default:
		g.casLoop(space, addr, a, t, x)
	}
}

// casLoop is mem = mem op x for a float min or max: the new bits are
// swapped in unless another thread changed them first.
func (g *ptxGen) casLoop(space, addr string, a Atomic, t Type, x string) {
	bt, cls := bitType(t), "r"
	if t.Size() == 8 {
		cls = "rd"
	}
	old, got, nb, cur := g.reg(cls), g.reg(cls), g.reg(cls), g.regOf(t)
	same := g.reg("p")
	top, done := g.newLabel(), g.newLabel()
	g.emit("ld.%s.%s %s, [%s]", space, bt, old, addr)
	g.place(top)
	g.emit("mov.%s %s, %s", bt, cur, old)
	n := g.binop(atomicOp(a), t, cur, x, Pos{}) // min and max do not fault
	g.emit("mov.%s %s, %s", bt, nb, n)
	g.emit("setp.eq.%s %s, %s, %s", bt, same, nb, old)
	g.emit("@%s bra %s", same, done)
	g.emit("atom.%s.cas.%s %s, [%s], %s, %s", space, bt, got, addr, old, nb)
	g.emit("setp.ne.%s %s, %s, %s", bt, same, got, old)
	g.emit("mov.%s %s, %s", bt, old, got)
	g.emit("@%s bra %s", same, top)
	g.place(done)
}

// exitIfDone jumps to exit when the run is over (kernels queued past the
// run's end return at once).
func (g *ptxGen) exitIfDone(exit string) {
	done, pdone := g.reg("r"), g.reg("p")
	g.emit("ld.global.u32 %s, [%s+%d]", done, g.state, 4*stateDone)
	g.emit("setp.ne.u32 %s, %s, 0", pdone, done)
	g.emit("@%s bra %s", pdone, exit)
}

// threadIndex is the thread's index in the grid and the grid's threads.
func (g *ptxGen) threadIndex() (i, stride string) {
	tid, ntid, ctaid, nctaid := g.reg("r"), g.reg("r"), g.reg("r"), g.reg("r")
	g.emit("mov.u32 %s, %%tid.x", tid)
	g.emit("mov.u32 %s, %%ntid.x", ntid)
	g.emit("mov.u32 %s, %%ctaid.x", ctaid)
	g.emit("mov.u32 %s, %%nctaid.x", nctaid)
	i, stride = g.reg("r"), g.reg("r")
	g.emit("mad.lo.u32 %s, %s, %s, %s", i, ctaid, ntid, tid)
	g.emit("mul.lo.u32 %s, %s, %s", stride, nctaid, ntid)
	return i, stride
}
