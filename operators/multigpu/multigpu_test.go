package multigpu

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/gputest"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// multiSetups are the partitioned backends a test runs: 3 and 4 parts on
// the first GPU (peer copies within one device: the exchange logic without
// a second GPU), and, where there are two or more GPUs, one part on each,
// exchanging over NCCL and by peer copies (a failure instead of a skip
// with GPIPE_REQUIRE_GPU=2). BFS's bitmaps go by peer stores in one setup
// of each pair and by the transport in the other.
func multiSetups(t *testing.T) []*MultiGPU {
	t.Helper()
	first := gputest.GPU(t)
	// Static parts (Permissive 0) and parts that hold half their edges
	// more on each side.
	static := NewMultiGPU([]*gpuop.GPU{first, first, first}, nil, "")
	static.Permissive = 0
	static.PeerStores = false
	wide := NewMultiGPU([]*gpuop.GPU{first, first, first, first}, nil, "")
	wide.Permissive = 0.5
	setups := []*MultiGPU{static, wide}
	info, err := gpu.Available()
	if err != nil || len(info.Devices) < 2 {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "2" {
			t.Fatalf("GPIPE_REQUIRE_GPU=2 but fewer than two GPUs: %v", err)
		}
		t.Logf("one GPU: the parts share it")
		return setups
	}
	gpus := []*gpuop.GPU{first}
	ctxs := []*gpu.Context{}
	for _, d := range info.Devices {
		c, err := d.Context()
		if err != nil {
			t.Fatal(err)
		}
		ctxs = append(ctxs, c)
		if d.Ordinal != first.Device().Ordinal {
			b := gpuop.NewGPU(c)
			b.Poison = true
			t.Cleanup(func() { b.Close() })
			gpus = append(gpus, b)
		}
	}
	if _, err := gpu.LoadNCCL(); err != nil {
		if os.Getenv("GPIPE_REQUIRE_GPU") == "2" {
			t.Fatalf("GPIPE_REQUIRE_GPU=2 but NCCL does not load: %v", err)
		}
		t.Logf("no NCCL (%v): peer copies between the GPUs", err)
		return append(setups, NewMultiGPU(gpus, nil, err.Error()))
	}
	comms, err := gpu.NewComms(ctxs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range comms {
			c.Destroy()
		}
	})
	overNCCL := NewMultiGPU(gpus, comms, "")
	overNCCL.PeerStores = false // as GPIPE_TRANSPORT=nccl: NCCL carries everything
	across := []*MultiGPU{overNCCL, NewMultiGPU(gpus, nil, "")}
	if os.Getenv(multiAcrossOnlyEnv) != "" {
		return across
	}
	return append(setups, across...)
}

// mustStore says whether m's BFS must store its bitmaps peer to peer: it
// may, and its parts share one GPU (which always reaches its own memory) or
// GPIPE_REQUIRE_GPU=2 says the GPUs of the machine reach each other.
func mustStore(m *MultiGPU) bool {
	if !m.PeerStores {
		return false
	}
	return distinctGPUs(m) == 1 || os.Getenv("GPIPE_REQUIRE_GPU") == "2"
}

// multiAcrossOnlyEnv, set, keeps only the setups of one part a GPU (over
// NCCL, by peer copies): the run of the real graphs on a machine of several GPUs, where
// every setup takes longer than a device session's call.
const multiAcrossOnlyEnv = "GPIPE_TEST_MULTI_ACROSS_ONLY"

func runMulti(m *MultiGPU, op operators.Operator, g *convert.Graph, src uint32, p operators.Params) (*operators.Result, error) {
	if err := op.Prepare(&p); err != nil {
		return nil, err
	}
	r, err := m.Run(context.Background(), op, operators.Input{Graph: g, Source: src, Params: p})
	if err != nil {
		return nil, err
	}
	if r.Backend != "gpu" || r.GPUs != m.GPUs() && !strings.Contains(r.StrategyReason, "one GPU") || r.Strategy == "" {
		return nil, fmt.Errorf("result header backend=%q gpus=%d strategy=%q", r.Backend, r.GPUs, r.Strategy)
	}
	return r, nil
}

// TestMultiGPUMatchesCPU runs every partitioned operator on fresh graphs
// of every shape, directed and not, weighted and not, and compares with
// the CPU as the one-GPU tests do.
func TestMultiGPUMatchesCPU(t *testing.T) {
	for _, m := range multiSetups(t) {
		// A setup a subtest: -test.v reports each as it passes, which shows
		// how far a run cut by a device call's time limit got.
		name := fmt.Sprintf("%d parts on %d GPUs over %s, permissive %v, peer stores %v",
			m.GPUs(), distinctGPUs(m), m.Transport(), m.Permissive, m.PeerStores)
		t.Run(name, func(t *testing.T) {
			var dirs bfsDirections
			for _, vg := range optest.VPGraphs(t) {
				matchesCPU(t, m, vg, &dirs)
			}
			// A wrong Direction changes only the speed, so the searches
			// must reach both: bottom-up is where the decision from the
			// stores' counts, and the hub list it makes, take effect.
			if dirs.withHubs > 0 && dirs.bottomUp == 0 {
				t.Errorf("none of %d searches on graphs with hubs went bottom-up: the Direction switch went untested", dirs.withHubs)
			}
		})
	}
}

// distinctGPUs is the number of GPUs m's parts are on.
func distinctGPUs(m *MultiGPU) int {
	ctxs := map[*gpu.Context]bool{}
	for _, b := range m.gpus {
		ctxs[b.Context()] = true
	}
	return len(ctxs)
}

// matchesCPU runs every partitioned operator on m against the CPU on vg's
// graph, and forgets the graph's parts after, even when a check stops the
// test. A graph is a subtest, and an operator one within it, so that a
// device call can run one operator's (-test.run 'TestMultiGPUMatchesCPU/.*/.*/^bfs$').
func matchesCPU(t *testing.T, m *MultiGPU, vg optest.VPGraph, dirs *bfsDirections) {
	// A slash in the name would make it two levels of subtests.
	t.Run(strings.ReplaceAll(vg.Name, "/", ","), func(t *testing.T) {
		defer m.Forget(vg.G)
		if !vg.G.Weighted {
			t.Run("bfs", func(t *testing.T) { bfsMatchesCPU(t, m, vg, dirs) })
			t.Run("pagerank", func(t *testing.T) { pagerankMatchesCPU(t, m, vg) })
			t.Run("cc", func(t *testing.T) { ccMatchesCPU(t, m, vg) })
		}
		t.Run("sssp and sswp", func(t *testing.T) { pathsMatchCPU(t, m, vg) })
	})
}

// bfsDirections counts a setup's multi-GPU searches on graphs with hubs
// (Enterprise's, without which a search never goes bottom-up) and those
// that ran a level bottom-up.
type bfsDirections struct{ withHubs, bottomUp int }

// bfsMatchesCPU also checks that the parts switch Direction at the levels
// one GPU's enterprise does: they decide on the sums of the parts' counts
// (by peer stores, before the queue pass), which must be one GPU's.
func bfsMatchesCPU(t *testing.T, m *MultiGPU, vg optest.VPGraph, dirs *bfsDirections) {
	// By peer stores, a top-down level may make a turn's bottom-up queues
	// and hub lists before it knows whether it turns: by the rule, and
	// always and never, so that both outcomes follow both.
	modes := []int{0}
	if mustStore(m) {
		modes = []int{0, 1, -1}
	}
	defer func() { m.speculate, m.afterTurn = 0, nil }()
	for _, mode := range modes {
		m.speculate = mode
		checked := 0
		m.afterTurn = func(ps []*mgBFSPart, q int) error {
			checked++
			return checkTurnHubLists(ps, q)
		}
		before := dirs.bottomUp
		bfsSearchesMatchCPU(t, m, vg, dirs)
		// Always speculating, every search that went bottom-up turned in
		// a speculative round (where the stores' atomics may list hubs).
		if mode == 1 && m.peerAtomics() && dirs.bottomUp > before && checked == 0 {
			t.Errorf("%s: searches turned bottom-up, speculating always, but no turn's hub lists were checked", vg.Name)
		}
	}
}

// checkTurnHubLists checks what a speculative turn's stores left in every
// part: the same next frontier in each part's bitmap q, and in each part's
// hub list q (stats q's hub_list entries of it) each hub of that frontier
// once, in any order.
func checkTurnHubLists(ps []*mgBFSPart, q int) error {
	download := func(p *mgBFSPart, buf *gpu.DeviceBuffer, words int64) ([]uint32, error) {
		out := make([]uint32, words)
		if err := gpu.Download(p.Stream, out, buf); err != nil {
			return nil, err
		}
		return out, p.Stream.Synchronize()
	}
	words := ps[0].Buf.Bits[q].Size() / 4
	frontier, err := download(ps[0], ps[0].Buf.Bits[q], words)
	if err != nil {
		return err
	}
	hubMask, err := download(ps[0], ps[0].HubMask, words)
	if err != nil {
		return err
	}
	want := map[uint32]bool{}
	for w, x := range frontier {
		for h := x & hubMask[w]; h != 0; h &= h - 1 {
			want[uint32(w*32+bits.TrailingZeros32(h))] = true
		}
	}
	for r, p := range ps {
		mine, err := download(p, p.Buf.Bits[q], words)
		if err != nil {
			return err
		}
		if !slices.Equal(mine, frontier) {
			return fmt.Errorf("after the turn, part %d's next frontier differs from part 0's", r)
		}
		stats, err := download(p, p.Buf.Stats[q], gpuop.EntStatsBytes/4)
		if err != nil {
			return err
		}
		count := stats[gpuop.EntHubListAt/4]
		if int(count) != len(want) || count > p.HubCap() {
			return fmt.Errorf("after the turn, part %d's hub list holds %d hubs (room for %d), the frontier %d", r, count, p.HubCap(), len(want))
		}
		list, err := download(p, p.Buf.Hubs[q], int64(count))
		if err != nil {
			return err
		}
		seen := map[uint32]bool{}
		for _, v := range list {
			if !want[v] || seen[v] {
				return fmt.Errorf("after the turn, part %d's hub list holds %d, not a hub of the frontier or listed twice", r, v)
			}
			seen[v] = true
		}
	}
	return nil
}

func bfsSearchesMatchCPU(t *testing.T, m *MultiGPU, vg optest.VPGraph, dirs *bfsDirections) {
	g, name := vg.G, vg.Name
	for _, src := range optest.SourcesOf(g) {
		want := gputest.RunCPU(t, operators.BFS{}, g, src, operators.Params{}).Column("depth").Int32
		r, err := runMulti(m, operators.BFS{}, g, src, operators.Params{})
		if err == nil {
			err = optest.ValidateBFS(g, src, r.Column("depth").Int32, r.Column("parent").Vertex, want)
		}
		if err == nil && mustStore(m) && !strings.Contains(r.Strategy, "bitmaps by peer stores") {
			err = fmt.Errorf("the bitmaps did not go by peer stores: %s", r.Strategy)
		}
		if err == nil {
			var one *operators.Result
			if one, err = gputest.Run(m.gpus[0], operators.BFS{}, g, src, operators.Params{Strategy: "enterprise"}); err == nil {
				for _, dir := range []string{"top-down", "bottom-up"} {
					if a, b := optest.StrategyCount(r.Strategy, dir), optest.StrategyCount(one.Strategy, dir); a != b && err == nil {
						err = fmt.Errorf("%d %s levels, one GPU's enterprise %d (%s; %s)", a, dir, b, r.Strategy, one.Strategy)
					}
				}
			}
			if _, hubs := gpuop.EnterpriseHubs(g.Degrees()); hubs > 0 {
				dirs.withHubs++
			}
			if optest.StrategyCount(r.Strategy, "bottom-up") > 0 {
				dirs.bottomUp++
			}
		}
		if err != nil {
			t.Errorf("%s: bfs from %d (speculating %d): %v", name, src, m.speculate, err)
		}
	}
}

func pagerankMatchesCPU(t *testing.T, m *MultiGPU, vg optest.VPGraph) {
	g, name := vg.G, vg.Name
	for _, p := range []operators.Params{{}, {Tolerance: 1e-5}} {
		want := gputest.RunCPU(t, operators.PageRank{}, g, 0, p)
		r, err := runMulti(m, operators.PageRank{}, g, 0, p)
		if err == nil {
			err = optest.SameRanks(gputest.RanksOf(r), gputest.RanksOf(want), g.NumVertices())
		}
		if err != nil {
			t.Errorf("%s: pagerank %+v: %v", name, p, err)
		}
	}
}

func ccMatchesCPU(t *testing.T, m *MultiGPU, vg optest.VPGraph) {
	g, name := vg.G, vg.Name
	want := gputest.RunCPU(t, operators.CC{}, g, 0, operators.Params{}).Column("component").Vertex
	r, err := runMulti(m, operators.CC{}, g, 0, operators.Params{})
	if err == nil && !slices.Equal(r.Column("component").Vertex, want) {
		err = fmt.Errorf("components differ from the CPU's")
	}
	if err != nil {
		t.Errorf("%s: cc: %v", name, err)
	}
}

func pathsMatchCPU(t *testing.T, m *MultiGPU, vg optest.VPGraph) {
	g, name := vg.G, vg.Name
	for _, src := range optest.SourcesOf(g) {
		withWide(m, vg, func(wide bool) {
			if !vg.Negative {
				want := gputest.RunCPU(t, operators.SSSP{}, g, src, operators.Params{})
				ref := optest.UnreachedInf(want.Column("distance").Float64)
				r, err := runMulti(m, operators.SSSP{}, g, src, operators.Params{})
				if err == nil {
					dist := r.Column("distance").Float64
					err = optest.ValidateSSSP(g, src, dist, r.Column("parent").Vertex, ref)
					for v := range dist {
						if err == nil && vg.Integers && !(dist[v] == ref[v] || math.IsNaN(dist[v]) && math.IsInf(ref[v], 1)) {
							err = fmt.Errorf("vertex %d distance %v, the CPU's %v", v, dist[v], ref[v])
						}
					}
				}
				if err != nil {
					t.Errorf("%s: sssp from %d, wide %v: %v", name, src, wide, err)
				}
			}
			want := gputest.RunCPU(t, operators.SSWP{}, g, src, operators.Params{}).Column("width").Float64
			r, err := runMulti(m, operators.SSWP{}, g, src, operators.Params{})
			if err == nil {
				err = optest.SameWidths(r.Column("width").Float64, want)
			}
			if err != nil {
				t.Errorf("%s: sswp from %d, wide %v: %v", name, src, wide, err)
			}
		})
	}
}

// TestMultiGPUStrategyOfOneGPU: a one-GPU strategy asked for by name runs
// on the first GPU, and says so.
func TestMultiGPUStrategyOfOneGPU(t *testing.T) {
	m := multiSetups(t)[0]
	g := optest.BuildGraph(t, optest.Shapes(t)[2], false, false, edges.KeyInt64)
	r, err := runMulti(m, operators.BFS{}, g, 0, operators.Params{Strategy: "bfs4k"})
	if err != nil {
		t.Fatal(err)
	}
	if r.GPUs != 0 || !strings.Contains(r.StrategyReason, "one GPU") {
		t.Fatalf("bfs4k over several GPUs: gpus %d, reason %q", r.GPUs, r.StrategyReason)
	}
	// An option only one GPU's strategies read keeps the run there too.
	r, err = runMulti(m, operators.SSSP{}, g, 0, operators.Params{Delta: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.GPUs != 0 || !strings.Contains(r.StrategyReason, "--delta given") {
		t.Fatalf("sssp --delta over several GPUs: gpus %d, reason %q", r.GPUs, r.StrategyReason)
	}
}

// TestSlideCuts: the cuts follow the load, stay inside both neighbours'
// held ranges and their own ranges, and keep their order.
func TestSlideCuts(t *testing.T) {
	parts := []convert.Partition{
		{Lo: 0, Hi: 1024, HoldLo: 0, HoldHi: 1536},
		{Lo: 1024, Hi: 2048, HoldLo: 512, HoldHi: 2560},
		{Lo: 2048, Hi: 3072, HoldLo: 1536, HoldHi: 3072},
	}
	sections := 3072 / sectionVertices
	loadOf := func(weight func(s int) float64) []float64 {
		load := make([]float64, sections+1)
		for s := range sections {
			load[s+1] = load[s] + weight(s)
		}
		return load
	}
	for _, c := range []struct {
		name   string
		weight func(s int) float64
		want   []uint32
	}{
		{"even", func(int) float64 { return 1 }, []uint32{0, 1024, 2048, 3072}},
		{"nothing active", func(int) float64 { return 0 }, []uint32{0, 1024, 2048, 3072}},
		// All the work in the first part's range: the cuts move down as far
		// as the held ranges allow.
		{"front-loaded", func(s int) float64 {
			if s < 8 {
				return 1
			}
			return 0
		}, []uint32{0, 512, 1536, 3072}},
		// All of it at the end: the cuts move up, within the holds.
		{"back-loaded", func(s int) float64 {
			if s >= 20 {
				return 1
			}
			return 0
		}, []uint32{0, 1536, 2560, 3072}},
	} {
		cuts := []uint32{0, 1024, 2048, 3072}
		slideCuts(parts, loadOf(c.weight), cuts)
		if !slices.Equal(cuts, c.want) {
			t.Errorf("%s: cuts %v, want %v", c.name, cuts, c.want)
		}
		for p := range parts {
			if cuts[p] > cuts[p+1] || cuts[p] < parts[p].HoldLo || cuts[p+1] > parts[p].HoldHi {
				t.Errorf("%s: part %d gets [%d, %d), outside what it holds [%d, %d)", c.name, p, cuts[p], cuts[p+1], parts[p].HoldLo, parts[p].HoldHi)
			}
		}
	}
}

// TestPeerCopyPlan checks the order of a broadcast's calls by peer copies
// for every set of roots on 1 to 4 parts: each copy follows its root's mark
// on its own stream, each root waits for every receiver's copies before its
// later work, and no stream's copies queue behind that stream's waits.
func TestPeerCopyPlan(t *testing.T) {
	for k := 1; k <= 4; k++ {
		for roots := 0; roots < 1<<k; roots++ {
			bytes := make([]int64, k)
			for r := range k {
				if roots&(1<<r) != 0 {
					bytes[r] = int64(64 * (r + 1))
				}
			}
			if err := checkPeerCopyPlan(bytes, peerCopyPlan(bytes)); err != nil {
				t.Errorf("bytes %v: %v", bytes, err)
			}
		}
	}
}

func checkPeerCopyPlan(bytes []int64, plan []peerStep) error {
	k := len(bytes)
	readyAt, doneAt := make([]int, k), make([]int, k)
	for i := range k {
		readyAt[i], doneAt[i] = -1, -1
	}
	copies := map[[2]int]int{}    // (receiver, root) -> index
	waited := map[[2]int]bool{}   // (stream, root) waited ready
	lastCopy := make([]int, k)    // per stream
	firstWait := make([]int, k)   // per stream: first waitDone
	rootWaits := map[[2]int]int{} // (root, receiver) -> index
	for i := range k {
		lastCopy[i], firstWait[i] = -1, len(plan)
	}
	for i, st := range plan {
		switch st.op {
		case markReady:
			readyAt[st.stream] = i
		case waitReady:
			if readyAt[st.of] < 0 {
				return fmt.Errorf("step %d: stream %d waits for part %d's bytes before they are marked", i, st.stream, st.of)
			}
			waited[[2]int{st.stream, st.of}] = true
		case copyFrom:
			if !waited[[2]int{st.stream, st.of}] {
				return fmt.Errorf("step %d: stream %d copies part %d's bytes without waiting for them", i, st.stream, st.of)
			}
			copies[[2]int{st.stream, st.of}] = i
			lastCopy[st.stream] = i
		case markDone:
			doneAt[st.stream] = i
		case waitDone:
			at, ok := copies[[2]int{st.of, st.stream}]
			if !ok || doneAt[st.of] < at {
				return fmt.Errorf("step %d: root %d waits for part %d's mark before it marks its copy of the root's bytes done", i, st.stream, st.of)
			}
			rootWaits[[2]int{st.stream, st.of}] = i
			firstWait[st.stream] = min(firstWait[st.stream], i)
		}
	}
	for p := range k {
		for r := range k {
			_, copied := copies[[2]int{p, r}]
			if want := r != p && bytes[r] > 0; copied != want {
				return fmt.Errorf("part %d copies part %d's bytes: %v, want %v", p, r, copied, want)
			}
			if copied && doneAt[p] < copies[[2]int{p, r}] {
				return fmt.Errorf("part %d marks its copies done before copying part %d's", p, r)
			}
			if _, ok := rootWaits[[2]int{r, p}]; copied && !ok {
				return fmt.Errorf("root %d never waits for part %d's copy of its bytes", r, p)
			}
		}
		if lastCopy[p] > firstWait[p] {
			return fmt.Errorf("stream %d queues a copy (step %d) behind a root's wait (step %d)", p, lastCopy[p], firstWait[p])
		}
	}
	return nil
}

// TestCombineStats checks that the parts' stats make one GPU's: hubs the
// most any part lists, found the sum, the queues the longest top-down and
// the sum bottom-up, so that the turn back top-down (SwitchesDirection)
// counts every part's unvisited vertices.
func TestCombineStats(t *testing.T) {
	parts := []gpuop.EntStats{
		{Count: [gpuop.Classes]uint32{30, 20, 0, 1}, Hubs: 7, Found: 5},
		{Count: [gpuop.Classes]uint32{40, 5, 2, 0}, Hubs: 9, Found: 6},
	}
	td := combineStats(parts, true)
	if want := (gpuop.EntStats{Count: [gpuop.Classes]uint32{30, 20, 0, 1}, Hubs: 9, Found: 11}); td != want { // part 0 queues 51, part 1 47
		t.Errorf("top-down: %+v, want %+v", td, want)
	}
	bu := combineStats(parts, false)
	if want := (gpuop.EntStats{Count: [gpuop.Classes]uint32{70, 25, 2, 1}, Hubs: 9, Found: 11}); bu != want {
		t.Errorf("bottom-up: %+v, want %+v", bu, want)
	}
	// 2,400 vertices: a bottom-up level that found 10 while 160 remain
	// unvisited, 80 in each part, turns back top-down on one GPU (160 >
	// 2,400/24); so must the parts together.
	n := int64(2400)
	half := gpuop.EntStats{Count: [gpuop.Classes]uint32{80}, Found: 5}
	if !gpuop.SwitchesDirection(false, gpuop.EntStats{Count: [gpuop.Classes]uint32{160}, Found: 10}, 0, n) {
		t.Fatal("one GPU's search does not turn back: the case tests nothing")
	}
	if !gpuop.SwitchesDirection(false, combineStats([]gpuop.EntStats{half, half}, false), 0, n) {
		t.Error("the parts' search stays bottom-up where one GPU's turns back top-down")
	}
}

// TestSpeculates: a top-down level speculates on the turn where its
// frontier holds a 128th of the hubs (at least one), always or never where
// the mode says so, and never on a graph without hubs by the rule.
func TestSpeculates(t *testing.T) {
	for _, c := range []struct {
		mode         int
		frontierHubs uint32
		hubTotal     int64
		want         bool
	}{
		{0, 16, 2048, true},
		{0, 15, 2048, false},
		{0, 47, 2048, true},
		{0, 1, 2048, false},
		{0, 1, 100, true},
		{0, 0, 100, false},
		{0, 0, 0, false},
		{1, 0, 0, true},
		{-1, 2048, 2048, false},
	} {
		if got := speculates(c.mode, c.frontierHubs, c.hubTotal); got != c.want {
			t.Errorf("speculates(mode %d, %d of %d hubs) = %v, want %v", c.mode, c.frontierHubs, c.hubTotal, got, c.want)
		}
	}
}

// withWide runs fn with the GPUs' wide values on and off where the graph
// has weights.
func withWide(m *MultiGPU, vg optest.VPGraph, fn func(wide bool)) {
	fn(false)
	if vg.G.Weighted {
		for _, b := range m.gpus {
			b.SetWideValues(true)
		}
		defer func() {
			for _, b := range m.gpus {
				b.SetWideValues(false)
			}
		}()
		fn(true)
	}
}
