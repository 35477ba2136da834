package vprog

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/par"
)

// Semantics of a run (the engines on every backend compute the same):
// iteration k computes, for every vertex v, local = init_compute(V_k[v]),
// then compute(V_k[u], S[u], E[e], local) for each in-edge e = u→v, then
// update_condition(local, V_k[v]); where it returns true V_{k+1}[v] =
// local, else V_{k+1}[v] = V_k[v]. The run stops after the first
// iteration where no update_condition returns true (converged), or after
// MaxIterations. Only a vertex that changed, or one of whose in-neighbours
// changed, can change next: the engines compute those alone (the result
// is the same, since a program is deterministic).

// Input is what a run reads besides the program.
type Input struct {
	Graph *convert.Graph
	// Source is the source vertex's dense id, or -1 for none.
	Source int64
}

// Outcome is a run's result: every vertex field's final values.
type Outcome struct {
	Vertex     []Values
	Iterations int
	Converged  bool
}

// Values are a field's values, one per vertex: Int for integer fields,
// Float for float ones (float32 values exactly).
type Values struct {
	Int   []int64
	Float []float64
}

// cpuRun is one run on the CPU.
type cpuRun struct {
	prog    *Program
	g       *convert.Graph
	in      *convert.CSR
	out     *convert.CSR
	env     *env
	next    []store
	init    stmtFn
	compute stmtFn
	update  stmtFn
	active  []uint32
	changed []uint8
	frames  []frame
	failed  atomic.Pointer[faultAt]
}

type faultAt struct {
	fault
	vertex int
}

// RunCPU runs p on the CPU cores.
func RunCPU(ctx context.Context, p *Program, in Input) (*Outcome, error) {
	r, err := newCPURun(p, in)
	if err != nil {
		return nil, err
	}
	out := &Outcome{}
	for it := 0; it < p.MaxIterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fired := r.step(it == 0)
		if err := r.fault(); err != nil {
			return nil, err
		}
		out.Iterations = it + 1
		if fired == 0 {
			out.Converged = true
			break
		}
		r.commit()
	}
	for _, s := range r.env.cur {
		out.Vertex = append(out.Vertex, Values{Int: s.i, Float: s.f})
	}
	return out, nil
}

func newCPURun(p *Program, in Input) (*cpuRun, error) {
	g := in.Graph
	n := g.NumVertices()
	r := &cpuRun{prog: p, g: g, in: g.In(), out: &g.Out, frames: make([]frame, par.Workers())}
	r.env = &env{numVertices: int64(n), source: int(in.Source), column: r.in.Weights,
		outDeg: func(v int) int64 { return g.Out.Degree(uint32(v)) },
		inDeg:  func(v int) int64 { return r.in.Degree(uint32(v)) }}
	if in.Source < 0 {
		r.env.source = -1
	}
	c := &compiler{prog: p, env: r.env}
	r.env.cur = r.initStores(c, p.Vertex, n, false)
	r.env.static = r.initStores(c, p.Static, n, false)
	r.env.edge = r.initStores(c, p.Edge, int(r.in.NumEdges()), true)
	if err := r.fault(); err != nil {
		return nil, err
	}
	r.next = make([]store, len(p.Vertex))
	for k, f := range p.Vertex {
		r.next[k] = newStore(f.Type, n)
	}
	r.init, r.compute, r.update = c.block(p.InitCompute), c.block(p.Compute), c.block(p.Update)
	r.active = make([]uint32, n)
	r.changed = make([]uint8, n)
	return r, nil
}

func newStore(t Type, n int) store {
	if t.IsFloat() {
		return store{f: make([]float64, n)}
	}
	return store{i: make([]int64, n)}
}

// initStores evaluates the fields' initial values, per vertex or (edges)
// per in-edge.
func (r *cpuRun) initStores(c *compiler, fields []Field, n int, edges bool) []store {
	stores := make([]store, len(fields))
	for k, f := range fields {
		s, x := newStore(f.Type, n), c.expr(f.Init)
		stores[k] = s
		r.parallel(r.g.NumVertices(), func(fr *frame, v int) {
			fr.v = v
			if !edges {
				setStore(s, v, x, fr)
				return
			}
			for e := r.in.Offsets[v]; e < r.in.Offsets[v+1]; e++ {
				fr.e = e
				setStore(s, int(e), x, fr)
			}
		})
	}
	return stores
}

func setStore(s store, i int, x compiled, fr *frame) {
	if s.f != nil {
		s.f[i] = x.f(fr)
	} else {
		s.i[i] = x.i(fr)
	}
}

// parallel calls fn for every vertex from the workers, each with its
// frame; a fault stops the worker's chunk and is kept (the first).
func (r *cpuRun) parallel(n int, fn func(fr *frame, v int)) {
	forVertices(n, func(w, lo, hi int) {
		if r.failed.Load() != nil {
			return
		}
		fr := &r.frames[w%len(r.frames)]
		defer r.recover(fr)
		for v := lo; v < hi; v++ {
			fn(fr, v)
		}
	})
}

func (r *cpuRun) recover(fr *frame) {
	x := recover()
	if x == nil {
		return
	}
	f, ok := x.(fault)
	if !ok {
		panic(x)
	}
	r.failed.CompareAndSwap(nil, &faultAt{f, fr.v})
}

func (r *cpuRun) fault() error {
	f := r.failed.Load()
	if f == nil {
		return nil
	}
	return r.prog.FaultError(r.g, f.pos, f.what, uint32(f.vertex))
}

// step computes every active vertex (all at the first iteration) and
// returns how many changed.
func (r *cpuRun) step(first bool) int64 {
	var fired atomic.Int64
	p := r.prog
	r.parallel(r.g.NumVertices(), func(fr *frame, v int) {
		if !first && r.active[v] == 0 {
			return
		}
		r.active[v] = 0
		if !r.vertex(fr, v) {
			return
		}
		r.changed[v] = 1
		fired.Add(1)
		for k, f := range p.Vertex {
			if f.Type.IsFloat() {
				r.next[k].f[v] = fr.lf[k]
			} else {
				r.next[k].i[v] = fr.li[k]
			}
		}
	})
	return fired.Load()
}

// vertex runs the three functions for v; true when it changed.
func (r *cpuRun) vertex(fr *frame, v int) bool {
	fr.v = v
	for k, s := range r.env.cur {
		if s.f != nil {
			fr.lf[k] = s.f[v]
		} else {
			fr.li[k] = s.i[v]
		}
	}
	r.init(fr)
	src := r.in.Targets
	for e := r.in.Offsets[v]; e < r.in.Offsets[v+1]; e++ {
		fr.e, fr.u = e, int(src[e])
		r.compute(fr)
	}
	fr.ret = false
	r.update(fr)
	return fr.ret
}

// commit makes the changed vertices' new values current and activates
// them and their out-neighbours for the next iteration.
func (r *cpuRun) commit() {
	cur, next := r.env.cur, r.next
	forVertices(r.g.NumVertices(), func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			if r.changed[v] == 0 {
				continue
			}
			r.changed[v] = 0
			for k, s := range cur {
				if s.f != nil {
					s.f[v] = next[k].f[v]
				} else {
					s.i[v] = next[k].i[v]
				}
			}
			atomic.StoreUint32(&r.active[v], 1)
			for _, w := range r.out.Neighbors(uint32(v)) {
				atomic.StoreUint32(&r.active[w], 1)
			}
		}
	})
}

// serialBelow is the fewest vertices a parallel loop spreads over the
// workers: below it, waking them costs more than the loop (a small graph
// iterated hundreds of times).
const serialBelow = 4096

func forVertices(n int, fn func(w, lo, hi int)) {
	if n < serialBelow {
		fn(0, 0, n)
		return
	}
	par.ForWorker(n, 1024, fn)
}

// Initial is every field's initial values: what a run starts from, on any
// backend.
type Initial struct {
	Vertex, Static, Edge []Values
}

// InitialValues evaluates the fields' initial values on the CPU cores
// (the edge fields' in the in-edge layout's order).
func InitialValues(p *Program, in Input) (*Initial, error) {
	r, err := newCPURun(p, in)
	if err != nil {
		return nil, err
	}
	out := &Initial{}
	for _, set := range []struct {
		from []store
		to   *[]Values
	}{{r.env.cur, &out.Vertex}, {r.env.static, &out.Static}, {r.env.edge, &out.Edge}} {
		for _, s := range set.from {
			*set.to = append(*set.to, Values{Int: s.i, Float: s.f})
		}
	}
	return out, nil
}

// FaultError is the error of a run that faulted at pos (what went wrong)
// at vertex v of g.
func (p *Program) FaultError(g *convert.Graph, pos Pos, what string, v uint32) error {
	return errAt(p.File, pos, fmt.Sprintf("%s at vertex %s", what, g.Keys.Format(v)),
		"the program must not divide by zero or make a NaN: guard the operation with if")
}
