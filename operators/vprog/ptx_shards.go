package vprog

import "sort"

// G-Shards for programs (CuSha §3.1). Shard j is the in-edges of the
// window of destinations [j·N, (j+1)·N): with the in-edges sorted by
// destination (the in-CSR), a shard is a contiguous range of them and
// needs no layout of its own. CuSha sorts a shard by source and keeps a
// copy of each source's value in the shard (SrcValue), so that a block
// reads its sources coalesced and writes the changed values back into
// the windows of the other shards (§3.1 step 4; Concatenated Windows,
// §3.2, make that write-back coalesced). Here the sources are read from
// the vertex arrays instead: a program has up to 16 vertex fields of any
// type, and the copies would cost a write-back pass an iteration and as
// many copies of every field as it has in-edges; reading cur keeps the
// iteration Jacobi's (cur changes only in vp_commit) and one copy of the
// values. Without the copies there is no write-back, which is all that
// Concatenated Windows changes, so CW is not a strategy of programs: it
// would be G-Shards under another name.

// shardRecord is a window vertex's record in shared memory: its fields'
// local values (the 8-byte ones first, so that each is aligned) and its
// activeness flag.
type shardRecord struct {
	off        []int // by field
	flag, size int
}

func (p *Program) shardRecord() shardRecord {
	order := make([]int, len(p.Vertex))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p.Vertex[order[a]].Type.Size() > p.Vertex[order[b]].Type.Size() })
	r := shardRecord{off: make([]int, len(p.Vertex))}
	at, align := 0, 4
	for _, i := range order {
		r.off[i] = at
		at += p.Vertex[i].Type.Size()
		align = max(align, p.Vertex[i].Type.Size())
	}
	r.flag = at
	r.size = (at + 1 + align - 1) / align * align
	return r
}

// ShardBytes is the shared memory one vertex of a shard's window takes:
// a G-Shards launch asks N times that.
func (p *Program) ShardBytes() int { return p.shardRecord().size }

// shardKernel is vp_shard: block j takes window j, its N vertices' local
// copies in shared memory (init_compute of the active ones), the
// shard's in-edges swept by the block's warps into them with shared
// atomics, then update_condition and the write-back. A window without an
// active vertex skips its edges.
// Parameters: the field table, the state, the flags, the changed flags,
// the in-edges' offsets, sources and destinations, n, N, num_vertices.
func (p *Program) shardKernel(faults *[]fault) string {
	const name = KernelShard
	g := &ptxGen{prog: p, faults: faults}
	params := []string{"u64", "u64", "u64", "u64", "u64", "u64", "u64", "u32", "u32", "u64"}
	tab := g.param(name, 0, "u64")
	g.state = g.param(name, 1, "u64")
	act, chg := g.param(name, 2, "u64"), g.param(name, 3, "u64")
	inOff, inSrc, inDst := g.param(name, 4, "u64"), g.param(name, 5, "u64"), g.param(name, 6, "u64")
	n, N := g.param(name, 7, "u32"), g.param(name, 8, "u32")
	g.numVertices = g.param(name, 9, "s64")
	exit, next := g.openProgram(tab)
	g.fieldRegs()
	w0, count := g.window(n, N)
	rec := p.shardRecord()
	shm := g.reg("rd")
	g.emit("mov.u64 %s, vp_shm", shm)
	slot := func(off int) string { // g.vertex's record, at off
		j, a := g.reg("r"), g.reg("rd")
		g.emit("sub.u32 %s, %s, %s", j, g.vertex, w0)
		g.emit("mad.wide.u32 %s, %s, %d, %s", a, j, rec.size, shm)
		g.emit("add.s64 %s, %s, %d", a, a, off)
		return a
	}
	st := localStore{space: "shared", addr: func(i int) string { return slot(rec.off[i]) }}
	anyActive := g.reg("p")
	g.emit("mov.pred %s, 0", anyActive)
	g.windowLoop(w0, count, func() {
		f, on := g.reg("r"), g.reg("p")
		g.emit("ld.global.u8 %s, [%s]", f, g.elementAddr(act, g.vertex, 1))
		g.emit("st.shared.u8 [%s], %s", slot(rec.flag), f)
		g.emit("setp.ne.u32 %s, %s, 0", on, f)
		g.emit("or.pred %s, %s, %s", anyActive, anyActive, on)
		skip := g.newLabel()
		g.emit("@!%s bra %s", on, skip)
		g.initVertex(st)
		g.place(skip)
	})
	g.emit("bar.red.or.pred %s, 0, %s", anyActive, anyActive)
	g.emit("@!%s bra %s", anyActive, exit)
	g.shardEdges(w0, count, inOff, inSrc, inDst, st, func() string {
		f, on := g.reg("r"), g.reg("p")
		g.emit("ld.shared.u8 %s, [%s]", f, slot(rec.flag))
		g.emit("setp.ne.u32 %s, %s, 0", on, f)
		return on
	})
	g.emit("bar.sync 0")
	g.windowLoop(w0, count, func() {
		f, on := g.reg("r"), g.reg("p")
		skip := g.newLabel()
		g.emit("ld.shared.u8 %s, [%s]", f, slot(rec.flag))
		g.emit("setp.ne.u32 %s, %s, 0", on, f)
		g.emit("@!%s bra %s", on, skip)
		g.updateVertex(st, next, act, chg)
		g.place(skip)
	})
	g.place(exit)
	g.emit("ret")
	return ".extern .shared .align 8 .b8 vp_shm[];\n\n" + entry(name, params, g, g.b.String())
}

// window is the block's first vertex and its vertices (at most N).
func (g *ptxGen) window(n, N string) (w0, count string) {
	ctaid, end := g.reg("r"), g.reg("r")
	w0, count = g.reg("r"), g.reg("r")
	g.emit("mov.u32 %s, %%ctaid.x", ctaid)
	g.emit("mul.lo.u32 %s, %s, %s", w0, ctaid, N)
	g.emit("add.u32 %s, %s, %s", end, w0, N)
	g.emit("min.u32 %s, %s, %s", end, end, n)
	g.emit("sub.u32 %s, %s, %s", count, end, w0)
	return w0, count
}

// windowLoop runs body for each vertex of the window (g.vertex), a
// thread of the block a vertex.
func (g *ptxGen) windowLoop(w0, count string, body func()) {
	j, ntid := g.reg("r"), g.reg("r")
	g.emit("mov.u32 %s, %%tid.x", j)
	g.emit("mov.u32 %s, %%ntid.x", ntid)
	top, out := g.newLabel(), g.newLabel()
	past := g.reg("p")
	g.vertex = g.reg("r")
	g.place(top)
	g.emit("setp.ge.u32 %s, %s, %s", past, j, count)
	g.emit("@%s bra %s", past, out)
	g.emit("add.u32 %s, %s, %s", g.vertex, w0, j)
	body()
	g.emit("add.u32 %s, %s, %s", j, j, ntid)
	g.emit("bra %s", top)
	g.place(out)
}

// shardEdges sweeps the window's in-edges with the block's warps into
// the shared records.
func (g *ptxGen) shardEdges(w0, count, inOff, inSrc, inDst string, st localStore, active func() string) {
	tid, ntid := g.reg("r"), g.reg("r")
	g.emit("mov.u32 %s, %%tid.x", tid)
	g.emit("mov.u32 %s, %%ntid.x", ntid)
	lane, warp, warps := g.reg("r"), g.reg("r"), g.reg("r")
	g.emit("and.b32 %s, %s, 31", lane, tid)
	g.emit("shr.u32 %s, %s, 5", warp, tid)
	g.emit("shr.u32 %s, %s, 5", warps, ntid)
	end := g.reg("r")
	g.emit("add.u32 %s, %s, %s", end, w0, count)
	lo, hi := g.reg("rd"), g.reg("rd")
	g.emit("ld.global.nc.u64 %s, [%s]", lo, g.elementAddr(inOff, w0, 8))
	g.emit("ld.global.nc.u64 %s, [%s]", hi, g.elementAddr(inOff, end, 8))
	g.edgeSweep(sweep{lo: lo, hi: hi, warp: warp, warps: warps, lane: lane, into: st,
		locate: g.byDestination(inSrc, inDst, active)})
}
