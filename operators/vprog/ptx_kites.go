package vprog

import "strings"

// KiTES' compaction of the active vertices, in three launches that do
// not depend on the program: vp_ks_count (each of KitesThreads threads
// counts the active vertices of its range of vertices and their
// in-edges), vp_ks_scan (one block of KitesScanThreads turns the counts
// into exclusive prefix sums and writes the totals: the list's length as
// a u32 at byte 0 of the counts buffer ks, its in-edges as a u64 at byte
// 8), vp_ks_fill (each thread writes its active vertices, in order, into
// the list, with the prefix sums of their in-degrees, the list's end
// after the last). The list is in vertex order.

// The compaction's geometry.
const (
	KitesThreads     = 32768 // vp_ks_count and vp_ks_fill: 128 blocks of 256
	KitesScanThreads = 1024  // vp_ks_scan: one block
	kitesPerScan     = KitesThreads / KitesScanThreads
)

func kitesKernels() string {
	return kitesCount() + kitesScan() + kitesFill()
}

// kitesRange is the thread's range of vertices [v, end): KitesThreads
// ranges of ceil(n / KitesThreads).
func (g *ptxGen) kitesRange(n string) (gid, v, end string) {
	tid, ntid, ctaid, chunk := g.reg("r"), g.reg("r"), g.reg("r"), g.reg("r")
	gid, v, end = g.reg("r"), g.reg("r"), g.reg("r")
	g.emit("mov.u32 %s, %%tid.x", tid)
	g.emit("mov.u32 %s, %%ntid.x", ntid)
	g.emit("mov.u32 %s, %%ctaid.x", ctaid)
	g.emit("mad.lo.u32 %s, %s, %s, %s", gid, ctaid, ntid, tid)
	g.emit("add.u32 %s, %s, %d", chunk, n, KitesThreads-1)
	g.emit("div.u32 %s, %s, %d", chunk, chunk, KitesThreads)
	g.emit("mul.lo.u32 %s, %s, %s", v, gid, chunk)
	g.emit("min.u32 %s, %s, %s", v, v, n)
	g.emit("add.u32 %s, %s, %s", end, v, chunk)
	g.emit("min.u32 %s, %s, %s", end, end, n)
	return gid, v, end
}

// kitesVisit runs body for each active vertex of [v, end) (in g.vertex)
// with the vertex's in-degree.
func (g *ptxGen) kitesVisit(act, inOff, v, end string, body func(deg string)) {
	top, out, skip := g.newLabel(), g.newLabel(), g.newLabel()
	past := g.reg("p")
	g.vertex = v
	g.place(top)
	g.emit("setp.ge.u32 %s, %s, %s", past, v, end)
	g.emit("@%s bra %s", past, out)
	g.emit("@!%s bra %s", g.flagSet(act)(), skip)
	a, lo, hi := g.elementAddr(inOff, v, 8), g.reg("rd"), g.reg("rd")
	g.emit("ld.global.nc.u64 %s, [%s]", lo, a)
	g.emit("ld.global.nc.u64 %s, [%s+8]", hi, a)
	g.emit("sub.s64 %s, %s, %s", hi, hi, lo)
	body(hi)
	g.place(skip)
	g.emit("add.u32 %s, %s, 1", v, v)
	g.emit("bra %s", top)
	g.place(out)
}

// kitesGen starts kernel name of the active list, whose first parameters
// are (state, act, inOff, cnt, deg): the flags, the in-edge offsets, and
// each thread's count of active vertices and of their in-edges.
func kitesGen(name string) (g *ptxGen, act, inOff, cnt, deg string) {
	g = &ptxGen{}
	g.state = g.param(name, 0, "u64")
	act, inOff = g.param(name, 1, "u64"), g.param(name, 2, "u64")
	cnt, deg = g.param(name, 3, "u64"), g.param(name, 4, "u64")
	return g, act, inOff, cnt, deg
}

// kitesCount is vp_ks_count(state, act, inOff, cnt, deg, n).
func kitesCount() string {
	const name = KernelCount
	g, act, inOff, cnt, deg := kitesGen(name)
	n := g.param(name, 5, "u32")
	exit := g.newLabel()
	g.exitIfDone(exit)
	gid, v, end := g.kitesRange(n)
	c, d := g.reg("r"), g.reg("rd")
	g.emit("mov.u32 %s, 0", c)
	g.emit("mov.u64 %s, 0", d)
	g.kitesVisit(act, inOff, v, end, func(k string) {
		g.emit("add.u32 %s, %s, 1", c, c)
		g.emit("add.s64 %s, %s, %s", d, d, k)
	})
	g.emit("st.global.u32 [%s], %s", g.elementAddr(cnt, gid, 4), c)
	g.emit("st.global.u64 [%s], %s", g.elementAddr(deg, gid, 8), d)
	g.place(exit)
	g.emit("ret")
	return entry(name, []string{"u64", "u64", "u64", "u64", "u64", "u32"}, g, g.b.String())
}

// kitesFill is vp_ks_fill(state, act, inOff, cnt, deg, list, prefix, ks, n).
func kitesFill() string {
	const name = KernelFill
	g, act, inOff, cnt, deg := kitesGen(name)
	list, prefix, ks := g.param(name, 5, "u64"), g.param(name, 6, "u64"), g.param(name, 7, "u64")
	n := g.param(name, 8, "u32")
	exit := g.newLabel()
	g.exitIfDone(exit)
	gid, v, end := g.kitesRange(n)
	pos, e := g.reg("r"), g.reg("rd")
	g.emit("ld.global.u32 %s, [%s]", pos, g.elementAddr(cnt, gid, 4))
	g.emit("ld.global.u64 %s, [%s]", e, g.elementAddr(deg, gid, 8))
	g.kitesVisit(act, inOff, v, end, func(k string) {
		g.emit("st.global.u32 [%s], %s", g.elementAddr(list, pos, 4), v)
		g.emit("st.global.u64 [%s], %s", g.elementAddr(prefix, pos, 8), e)
		g.emit("add.u32 %s, %s, 1", pos, pos)
		g.emit("add.s64 %s, %s, %s", e, e, k)
	})
	first, total, count := g.reg("p"), g.reg("rd"), g.reg("r")
	g.emit("setp.eq.u32 %s, %s, 0", first, gid)
	g.emit("@!%s bra %s", first, exit)
	g.emit("ld.global.u32 %s, [%s]", count, ks)
	g.emit("ld.global.u64 %s, [%s+8]", total, ks)
	g.emit("st.global.u64 [%s], %s", g.elementAddr(prefix, count, 8), total)
	g.place(exit)
	g.emit("ret")
	return entry(name, []string{"u64", "u64", "u64", "u64", "u64", "u64", "u64", "u64", "u32"}, g, g.b.String())
}

// kitesScan is vp_ks_scan(state, cnt, deg, ks): thread t sums entries
// [t·k, (t+1)·k), the block scans the sums (a warp's by shuffles, the
// warps' totals by warp 0 through shared memory), and each thread
// rewrites its entries as exclusive prefix sums.
func kitesScan() string {
	const name = KernelScan
	g := &ptxGen{}
	g.state = g.param(name, 0, "u64")
	cnt, deg, ks := g.param(name, 1, "u64"), g.param(name, 2, "u64"), g.param(name, 3, "u64")
	exit := g.newLabel()
	g.exitIfDone(exit)
	tid, first := g.reg("r"), g.reg("r")
	g.emit("mov.u32 %s, %%tid.x", tid)
	g.emit("mul.lo.u32 %s, %s, %d", first, tid, kitesPerScan)
	c, d := g.reg("r"), g.reg("rd")
	g.emit("mov.u32 %s, 0", c)
	g.emit("mov.u64 %s, 0", d)
	g.kitesEntries(cnt, deg, first, func(ca, da, x, y string) {
		g.emit("add.u32 %s, %s, %s", c, c, x)
		g.emit("add.s64 %s, %s, %s", d, d, y)
	})
	ci, di := g.blockScan(tid, c, d)
	// Exclusive: the inclusive sums less the thread's own.
	g.emit("sub.u32 %s, %s, %s", c, ci, c)
	g.emit("sub.s64 %s, %s, %s", d, di, d)
	last := g.reg("p")
	g.emit("setp.eq.u32 %s, %s, %d", last, tid, KitesScanThreads-1)
	g.emit("@%s st.global.u32 [%s], %s", last, ks, ci)
	g.emit("@%s st.global.u64 [%s+8], %s", last, ks, di)
	g.kitesEntries(cnt, deg, first, func(ca, da, x, y string) {
		g.emit("st.global.u32 [%s], %s", ca, c)
		g.emit("st.global.u64 [%s], %s", da, d)
		g.emit("add.u32 %s, %s, %s", c, c, x)
		g.emit("add.s64 %s, %s, %s", d, d, y)
	})
	g.place(exit)
	g.emit("ret")
	body := g.b.String()
	decl := "\t.shared .align 8 .b8 vp_ks_sums[384];\n" // the warps' totals: 32 u64 edges, then 32 u32 counts
	out := entry(name, []string{"u64", "u64", "u64", "u64"}, g, body)
	return strings.Replace(out, "{\n", "{\n"+decl, 1)
}

// kitesEntries runs body over the thread's kitesPerScan entries of cnt
// and deg: their addresses and values.
func (g *ptxGen) kitesEntries(cnt, deg, first string, body func(ca, da, x, y string)) {
	for k := 0; k < kitesPerScan; k++ {
		i := g.reg("r")
		g.emit("add.u32 %s, %s, %d", i, first, k)
		ca, da := g.elementAddr(cnt, i, 4), g.elementAddr(deg, i, 8)
		x, y := g.reg("r"), g.reg("rd")
		g.emit("ld.global.u32 %s, [%s]", x, ca)
		g.emit("ld.global.u64 %s, [%s]", y, da)
		body(ca, da, x, y)
	}
}

// blockScan is the inclusive sums over the block's threads of c and d.
func (g *ptxGen) blockScan(tid, c, d string) (ci, di string) {
	lane, warp := g.reg("r"), g.reg("r")
	g.emit("and.b32 %s, %s, 31", lane, tid)
	g.emit("shr.u32 %s, %s, 5", warp, tid)
	ci, di = g.warpScan(lane, c, d)
	base := g.reg("rd")
	g.emit("mov.u64 %s, vp_ks_sums", base)
	dAt, cAt := g.reg("rd"), g.reg("rd")
	g.emit("mad.wide.u32 %s, %s, 8, %s", dAt, warp, base)
	g.emit("mad.wide.u32 %s, %s, 4, %s", cAt, warp, base)
	g.emit("add.s64 %s, %s, 256", cAt, cAt)
	lastLane, warp0 := g.reg("p"), g.reg("p")
	g.emit("setp.eq.u32 %s, %s, 31", lastLane, lane)
	g.emit("@%s st.shared.u64 [%s], %s", lastLane, dAt, di)
	g.emit("@%s st.shared.u32 [%s], %s", lastLane, cAt, ci)
	g.emit("bar.sync 0")
	g.emit("setp.eq.u32 %s, %s, 0", warp0, warp)
	skip := g.newLabel()
	g.emit("@!%s bra %s", warp0, skip)
	wc, wd := g.reg("r"), g.reg("rd")
	lAt, lcAt := g.reg("rd"), g.reg("rd")
	g.emit("mad.wide.u32 %s, %s, 8, %s", lAt, lane, base)
	g.emit("mad.wide.u32 %s, %s, 4, %s", lcAt, lane, base)
	g.emit("add.s64 %s, %s, 256", lcAt, lcAt)
	g.emit("ld.shared.u64 %s, [%s]", wd, lAt)
	g.emit("ld.shared.u32 %s, [%s]", wc, lcAt)
	sc, sd := g.warpScan(lane, wc, wd)
	g.emit("st.shared.u64 [%s], %s", lAt, sd)
	g.emit("st.shared.u32 [%s], %s", lcAt, sc)
	g.place(skip)
	g.emit("bar.sync 0")
	// Add the totals of the warps before this one.
	later := g.reg("p")
	g.emit("setp.ne.u32 %s, %s, 0", later, warp)
	pc, pd := g.reg("r"), g.reg("rd")
	g.emit("@%s ld.shared.u64 %s, [%s+-8]", later, pd, dAt)
	g.emit("@%s ld.shared.u32 %s, [%s+-4]", later, pc, cAt)
	g.emit("@%s add.s64 %s, %s, %s", later, di, di, pd)
	g.emit("@%s add.u32 %s, %s, %s", later, ci, ci, pc)
	return ci, di
}

// warpScan is the inclusive sums of c and d over the warp's lanes.
func (g *ptxGen) warpScan(lane, c, d string) (ci, di string) {
	ci, di = g.reg("r"), g.reg("rd")
	g.emit("mov.u32 %s, %s", ci, c)
	g.emit("mov.u64 %s, %s", di, d)
	for off := 1; off < 32; off *= 2 {
		in := g.reg("p")
		oc := g.shfl("up", TUint32, ci, off, 0, in)
		od := g.shfl("up", TInt64, di, off, 0, "")
		g.emit("@%s add.u32 %s, %s, %s", in, ci, ci, oc)
		g.emit("@%s add.s64 %s, %s, %s", in, di, di, od)
	}
	return ci, di
}
