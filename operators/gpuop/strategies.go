package gpuop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

// The registry: one table per operator, a row per GPU strategy. Everything
// that names, checks, sizes, chooses or runs a strategy reads it: the
// command line's help and errors (Strategies, Check), the plan (plan.go:
// sizing and auto's choice), the run (the row's run, given the plan), gpipe
// bench --strategy, the Flight service and --json. Adding a strategy is a
// row here, its run (a function of an enactor) and its kernels.

// strategy is one way an operator runs on the GPU.
type strategy struct {
	name string
	// seed is the paper, and its section, the strategy implements.
	seed string
	// reads are the tuning options of operators.Params it reads; an
	// option given to a strategy that does not read it is an error.
	reads options
	// layouts names the layouts a run reads (docs, --json): csr (the
	// out-edges), csc (the in-edges), hub-csc (the in-edges numbered hubs
	// first), shards, cw (Concatenated Windows), grouped (KiTES' groups).
	layouts []string
	// hostEdges says a run builds a layout on the host from the graph's
	// edge arrays, which a graph built on the GPU fetches first.
	hostEdges bool
	// bytes is the device memory a run on g takes: its layouts and its
	// workspace. b keeps what it derived from g before (nil: derived
	// afresh).
	bytes func(b *GPU, g *convert.Graph, p operators.Params) int64
	// applies, where set, says why the strategy cannot run g on b (nil:
	// it can); auto passes over it then, a named one fails as its run would.
	applies func(b *GPU, g *convert.Graph) error
	// run runs it, filling the enactor's result.
	run func(e *enactor) error
}

// options are tuning options of operators.Params, as a set.
type options uint8

const (
	// optVWarp is --vwarp: the virtual warp size.
	optVWarp options = 1 << iota
	// optVWC are --defer-outliers, --dynamic and --chunk-size: the rest of
	// the virtual warp-centric options (PPoPP'11 §3.2).
	optVWC
	// optGroup is --vertex-group: KiTES' Vertex Grouping.
	optGroup
	// optWeighted is --weighted: weighted PageRank, which the pulls run.
	optWeighted
)

// given is the set of options p sets.
func given(p operators.Params) options {
	var o options
	if p.VWarp != 0 {
		o |= optVWarp
	}
	if p.DeferOutliers != 0 || p.Dynamic || p.ChunkSize != 0 {
		o |= optVWC
	}
	if p.VertexGroup != 0 {
		o |= optGroup
	}
	if p.Weighted {
		o |= optWeighted
	}
	return o
}

// choice is a strategy auto may take, with why.
type choice struct {
	s   *strategy
	why string
}

// table is an operator's strategies, and auto's order of them for a
// graph: fastest first, by the measurements in BENCHMARKS.md. The plan
// takes the first that reads every option given and fits in the GPU's free
// memory.
type table struct {
	strategies []*strategy
	order      func(t *table, b *GPU, g *convert.Graph, p operators.Params) []choice
}

// tableOf is the table of the operator called op, nil where it has no GPU
// strategy.
func tableOf(op string) *table {
	switch op {
	case "bfs":
		return bfsTable
	case "sssp":
		return ssspTable
	case "sswp":
		return sswpTable
	case "pagerank":
		return pageRankTable
	case "cc":
		return ccTable
	}
	return nil
}

// lookup is the strategy called name.
func (t *table) lookup(name string) *strategy {
	for _, s := range t.strategies {
		if s.name == name {
			return s
		}
	}
	return nil
}

// Strategies lists the GPU strategies of the operator called op, in auto's
// order on a large graph; none when it has no GPU implementation.
func Strategies(op string) []string {
	t := tableOf(op)
	if t == nil {
		return nil
	}
	names := make([]string, len(t.strategies))
	for i, s := range t.strategies {
		names[i] = s.name
	}
	return names
}

// Seed is the paper and section the strategy of op called name implements,
// "" for an unknown one.
func Seed(op, name string) string {
	if t := tableOf(op); t != nil {
		if s := t.lookup(name); s != nil {
			return s.seed
		}
	}
	return ""
}

// Check checks the GPU parameters of p for op, so that a typo fails before
// any input is read: a strategy op has, the options it reads, values in
// range.
func Check(op operators.Operator, p operators.Params) error {
	t := tableOf(op.Spec().Name)
	if t == nil {
		return nil
	}
	if named(p) {
		s := t.lookup(p.Strategy)
		if s == nil {
			return usererr.New(usererr.Usage, fmt.Sprintf("operator %s has no GPU strategy %s", op.Spec().Name, echo.Quote(p.Strategy)),
				"use one of "+strings.Join(Strategies(op.Spec().Name), ", ")+" (or auto)")
		}
		if err := s.check(op.Spec().Name, p); err != nil {
			return err
		}
	}
	return checkValues(p)
}

// named says p names a strategy (not auto).
func named(p operators.Params) bool { return p.Strategy != "" && p.Strategy != "auto" }

// checkValues checks the tuning options' values.
func checkValues(p operators.Params) error {
	if p.VWarp != 0 && (p.VWarp < 1 || p.VWarp > 32 || p.VWarp&(p.VWarp-1) != 0) {
		return usererr.Newf(usererr.Usage, "vwarp (the virtual warp size) %d is not 1, 2, 4, 8, 16 or 32", p.VWarp)
	}
	if p.DeferOutliers < -1 {
		return usererr.Newf(usererr.Usage, "defer-outliers %d must be a degree > 0, 0 for the default (%d) or -1 for off",
			p.DeferOutliers, defaultOutlierDegree)
	}
	if p.ChunkSize < 0 {
		return usererr.Newf(usererr.Usage, "chunk size %d must be >= 0 (0 picks one)", p.ChunkSize)
	}
	return checkVertexGroup(p.VertexGroup)
}

// check refuses the options p gives that s does not read, rather than
// ignoring them.
func (s *strategy) check(op string, p operators.Params) error {
	extra := given(p) &^ s.reads
	if extra == 0 {
		return nil
	}
	if extra&optWeighted != 0 {
		return usererr.New(usererr.Usage, fmt.Sprintf("operator %s: GPU strategy %s does not run weighted PageRank", op, s.name),
			"pick --strategy "+strings.ReplaceAll(prWeightedStrategies, " and ", " or ")+" (the strategies that do) or auto, or run without --weighted")
	}
	var names []string
	if extra&optVWarp != 0 {
		names = append(names, "vwarp")
	}
	if extra&optGroup != 0 {
		names = append(names, "vertex-group")
	}
	if extra&optVWC != 0 {
		if p.DeferOutliers != 0 {
			names = append(names, "defer-outliers")
		}
		if p.Dynamic {
			names = append(names, "dynamic")
		}
		if p.ChunkSize != 0 {
			names = append(names, "chunk-size")
		}
	}
	fix := "leave it out, or pick --strategy vwc"
	if extra == optGroup {
		fix = "leave it out, or pick --strategy kites"
	}
	return usererr.New(usererr.Usage, fmt.Sprintf("operator %s: %s does not apply to GPU strategy %s", op, strings.Join(names, ", "), s.name), fix)
}

// candidates are the choices of auto's order that read every option p
// gives (an option is meant for the strategies that read it), or the
// options' error where none does.
func candidates(op string, order []choice, p operators.Params) ([]choice, error) {
	var take []choice
	var first error
	for _, c := range order {
		if err := c.s.check(op, p); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		take = append(take, c)
	}
	if len(take) == 0 {
		return nil, first
	}
	return take, nil
}

// The vertex-program strategies' names, which several tables share.
const (
	strategyVWC      = "vwc"
	strategyGShards  = "gshards"
	strategyCW       = "cw"
	strategyWarpSeg  = "warpseg"
	strategyKiTES    = "kites"
	strategyAfforest = "afforest"
	// strategyPersist is bfs's and sssp's persistent search (persist.go).
	strategyPersist = "persist"
)

// The seeds' sections.
const (
	seedVWC     = "Hong et al., virtual warp-centric, PPoPP'11 §3"
	seedGShards = "Khorasani et al., CuSha: G-Shards, HPDC'14 §3.1"
	seedCW      = "Khorasani et al., CuSha: Concatenated Windows, HPDC'14 §3.2"
	seedWarpSeg = "Khorasani, dissertation 2016: Warp Segmentation, §2.1–2.2"
	seedKiTES   = "Khorasani, dissertation 2016: KiTES, §3.1–3.4"
	// The persistent searches: BFS-4K's single-block kernel widened to
	// every SM, and near-far Δ-stepping with ADDS's device-side buckets.
	seedPersistBFS  = "Busato and Bombieri, BFS-4K §5.5, over every SM with a grid barrier"
	seedPersistSSSP = "near-far Δ-stepping (Davidson et al., IPDPS'14) with ADDS's device-side buckets and dynamic Δ (Wang et al., PPoPP'21)"
)

// vpStrategies are the rows of the five layouts of a vertex program whose
// memory is bytes and whose run is run.
func vpStrategies(bytes func(b *GPU, g *convert.Graph, strategy string, p operators.Params) int64, run func(e *enactor) error) []*strategy {
	row := func(name, seed string, reads options, layouts ...string) *strategy {
		return &strategy{name: name, seed: seed, reads: reads, layouts: layouts, hostEdges: true, run: run,
			bytes: func(b *GPU, g *convert.Graph, p operators.Params) int64 { return bytes(b, g, name, p) }}
	}
	return []*strategy{
		row(strategyVWC, seedVWC, optVWarp|optVWC, "csr"),
		row(strategyGShards, seedGShards, 0, "shards"),
		row(strategyCW, seedCW, 0, "shards", "cw"),
		row(strategyKiTES, seedKiTES, optGroup, "csc", "grouped"),
		row(strategyWarpSeg, seedWarpSeg, 0, "csc"),
	}
}

// orderOf is t's strategies as choices, the names given first in that
// order with their whys (pairs of name and why), then the rest in the
// table's order, each named by its seed: those an option or the memory
// leaves to auto when it rules the first out.
func orderOf(t *table, namesWhys ...string) []choice {
	var out []choice
	for i := 0; i+1 < len(namesWhys); i += 2 {
		out = append(out, choice{s: t.lookup(namesWhys[i]), why: namesWhys[i+1]})
	}
	for _, s := range t.strategies {
		if !slices.ContainsFunc(out, func(c choice) bool { return c.s == s }) {
			out = append(out, choice{s: s, why: s.seed})
		}
	}
	return out
}

// ---- the tables ----

// bfsTable: Enterprise and BFS-4K are frontier searches with kernels of
// their own (enterprise.go, bfs4k.go), vwc the level-synchronous search over
// the status array (bfs.go). auto chooses by the degrees and the depth
// seen before (bfsOrder).
var bfsTable = &table{
	strategies: []*strategy{
		{name: "enterprise", seed: "Liu and Huang, Enterprise, SC'15 §4", layouts: []string{"csr", "csc"},
			bytes: bfsStrategyBytes("enterprise"), run: runEnterprise},
		{name: "bfs4k", seed: "Busato and Bombieri, BFS-4K, §5", layouts: []string{"csr"},
			bytes: bfsStrategyBytes("bfs4k"), run: runBFS4K},
		{name: strategyVWC, seed: seedVWC, reads: optVWarp | optVWC, layouts: []string{"csr"},
			bytes: bfsStrategyBytes(strategyVWC), run: runBFSVWC},
		{name: strategyPersist, seed: seedPersistBFS, layouts: []string{"csr"}, bytes: persistBFSBytes,
			applies: persistApplies("bfs"), run: runBFSPersist},
	},
	order: bfsOrder,
}

// ssspTable: the vertex program SSSP in the engine's five layouts, then the
// parent pass (sssp.go), and the persistent near-far search
// (persist_sssp.go).
var ssspTable = &table{
	strategies: append(vpStrategies(func(b *GPU, g *convert.Graph, name string, p operators.Params) int64 {
		return vpBytes(b, g, b.SSSPProgram(g), name, false, p) + parentBytes(g)
	}, runSSSP), &strategy{name: strategyPersist, seed: seedPersistSSSP, layouts: []string{"csr"}, bytes: persistSSSPBytes,
		applies: persistApplies("sssp"), run: runSSSPPersist}),
	order: func(t *table, _ *GPU, g *convert.Graph, _ operators.Params) []choice {
		return monotoneOrder(t, g, true)
	},
}

// sswpTable: the vertex program SSWP in the engine's five layouts.
var sswpTable = &table{
	strategies: vpStrategies(func(b *GPU, g *convert.Graph, name string, p operators.Params) int64 {
		return vpBytes(b, g, b.SSWPProgram(g), name, false, p)
	}, runSSWP),
	// kites measured slower than vwc for sswp on the grid (273 against 233
	// ms, BENCHMARKS.md): widths settle in fewer, wider waves.
	order: func(t *table, _ *GPU, g *convert.Graph, _ operators.Params) []choice {
		return monotoneOrder(t, g, false)
	},
}

// pageRankTable: the sum program's pulls over the CSC (vwc, warpseg) and
// CuSha's two layouts (pagerank.go); only the pulls run weighted PageRank
// (they read optWeighted), so auto passes the others over for it.
var pageRankTable = &table{
	strategies: []*strategy{
		{name: strategyWarpSeg, seed: seedWarpSeg, reads: optWeighted, hostEdges: true, layouts: []string{"hub-csc"}, bytes: prWarpSegBytes, run: runPageRankPull},
		{name: strategyVWC, seed: seedVWC, reads: optVWarp | optVWC | optWeighted, hostEdges: true, layouts: []string{"hub-csc"}, bytes: prVWCBytes, run: runPageRankPull},
		{name: strategyGShards, seed: seedGShards, hostEdges: true, layouts: []string{"shards"}, bytes: prShardBytes(strategyGShards), run: runPageRankShards},
		{name: strategyCW, seed: seedCW, hostEdges: true, layouts: []string{"shards", "cw"}, bytes: prShardBytes(strategyCW), run: runPageRankShards},
	},
	order: func(t *table, _ *GPU, _ *convert.Graph, _ operators.Params) []choice {
		return orderOf(t,
			strategyWarpSeg, "Warp Segmentation's pull over the CSC (a warp's 32 vertices' in-edges end to end, no lane idle on a short row) measured fastest on every graph measured (BENCHMARKS.md: Kronecker 22 1.17 ms an iteration against vwc's 1.30, the grid 0.29 against cw's 0.48, the road and social graphs)",
			strategyVWC, "the pull over the CSC reads 4 bytes an edge and gathers the contributions from cache, where G-Shards and CW read and write 22 to 24 bytes an edge an iteration: auto's choice where warpseg does not fit",
			strategyGShards, "G-Shards", strategyCW, "Concatenated Windows")
	},
}

// ccTable: Afforest (cc.go), and label propagation to the smallest id as a
// vertex program in the engine's five layouts.
var ccTable = &table{
	strategies: append([]*strategy{
		// Afforest's last phase is virtual warp-centric: it reads --vwarp.
		{name: strategyAfforest, seed: "Sutton et al., Afforest, IPDPS'18", reads: optVWarp, layouts: []string{"csr", "csc"},
			bytes: func(_ *GPU, g *convert.Graph, p operators.Params) int64 { return afforestBytes(g, p) }, run: runAfforest},
	}, vpStrategies(func(b *GPU, g *convert.Graph, name string, p operators.Params) int64 {
		return vpBytes(b, g, CCLabels, name, true, p)
	}, runCCLabels)...),
	order: func(t *table, _ *GPU, _ *convert.Graph, _ operators.Params) []choice {
		return orderOf(t,
			strategyAfforest, "Afforest links two neighbours a vertex, then only the edges of vertices outside the largest component: a few passes over the vertices where label propagation sweeps the edges once a diameter step; measured fastest for cc on every graph (BENCHMARKS.md)",
			strategyVWC, "label propagation, CSR push", strategyGShards, "label propagation, G-Shards",
			strategyCW, "label propagation, Concatenated Windows", strategyKiTES, "label propagation, KiTES",
			strategyWarpSeg, "label propagation, Warp Segmentation")
	},
}
