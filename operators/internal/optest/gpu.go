package optest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
)

// What the GPU tests share: fresh random graphs, the engine's graph list,
// and comparisons of GPU results with the CPU's.

// FreshSeed is a new seed each run, logged so that a failure can be
// replayed with GPIPE_TEST_SEED.
func FreshSeed(t *testing.T) uint64 {
	if s := os.Getenv("GPIPE_TEST_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GPIPE_TEST_SEED=%q: %v", s, err)
		}
		return seed
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random graphs drawn with GPIPE_TEST_SEED=%d", seed)
	return seed
}

// GPUShapes are the CPU tests' shapes plus graphs drawn fresh for this run:
// Kronecker graphs, a hub of huge degree among random edges (for the
// deferred outliers), long chains and scattered components.
func GPUShapes(t *testing.T) []Shape {
	seed := FreshSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	list := Shapes(t)
	list = append(list, Shape{Name: "fresh-kronecker-14", Edges: KroneckerEdges(t, 14, 16, seed)})
	list = append(list, Shape{Name: "fresh-kronecker-12-ef4", Edges: KroneckerEdges(t, 12, 4, seed+1)})
	var hub []Edge
	for i := 0; i < 20000; i++ {
		hub = append(hub, Edge{U: 0, V: int64(1 + rng.IntN(9000)), W: 1}, Edge{U: int64(1 + rng.IntN(9000)), V: int64(1 + rng.IntN(9000)), W: 1})
	}
	list = append(list, Shape{Name: "fresh-hub", Edges: hub})
	var chains []Edge
	for c := int64(0); c < 8; c++ {
		length := int64(500 + rng.IntN(2000))
		for i := int64(0); i < length; i++ {
			chains = append(chains, Edge{U: c<<20 + i, V: c<<20 + i + 1, W: 1})
		}
	}
	list = append(list, Shape{Name: "fresh-chains", Edges: chains})
	var parts []Edge
	for i := 0; i < 5000; i++ {
		base := int64(rng.IntN(50)) * 1000
		parts = append(parts, Edge{U: base + int64(rng.IntN(200)), V: base + int64(rng.IntN(200)), W: 1})
	}
	list = append(list, Shape{Name: "fresh-components", Edges: parts})
	return list
}

// VPGraph is a test graph for the engine, with what its weights allow.
type VPGraph struct {
	Name     string
	G        *convert.Graph
	Integers bool // distances must be exact
	Negative bool // sssp does not apply
}

// The real graphs, read once for all the engine's tests.
var (
	realOnce  sync.Once
	realCache []RealGraph
	// realLoaded stays false when the load stopped its test (a file that
	// does not read): every later caller fails too, rather than run
	// without the real graphs.
	realLoaded bool
)

// VPGraphs are the shapes, grids, roads and real graphs, directed and
// undirected, unweighted and weighted.
func VPGraphs(t *testing.T) []VPGraph {
	var list []VPGraph
	seed := FreshSeed(t)
	shapes := append(GPUShapes(t), GridShapes(seed)...)
	for _, s := range append(shapes, RoadShapes(t, seed)...) {
		integers := true
		for _, e := range s.Edges {
			integers = integers && e.W == math.Trunc(e.W) && e.W >= 0
		}
		for _, directed := range []bool{true, false} {
			for _, weighted := range []bool{false, true} {
				name := fmt.Sprintf("%s/directed=%v/weighted=%v", s.Name, directed, weighted)
				list = append(list, VPGraph{Name: name, G: BuildGraph(t, s, directed, weighted, edges.KeyInt64),
					Integers: integers || !weighted, Negative: s.Negative && weighted})
			}
		}
	}
	realOnce.Do(func() { realCache, realLoaded = RealGraphs(t), true })
	if !realLoaded {
		t.Fatal("the real graphs did not load (the first test that loaded them says why)")
	}
	for _, rg := range realCache {
		integers := true
		for _, w := range rg.G.Out.Weights {
			integers = integers && w == math.Trunc(w) && w >= 0
		}
		list = append(list, VPGraph{Name: rg.Name, G: rg.G, Integers: integers})
	}
	return list
}

// UnreachedInf is the CPU's distances with unreached vertices (NaN) at
// +Inf, as ValidateSSSP takes them.
func UnreachedInf(dist []float64) []float64 {
	ref := slices.Clone(dist)
	for v, d := range ref {
		if math.IsNaN(d) {
			ref[v] = math.Inf(1)
		}
	}
	return ref
}

// SameWidths compares GPU widths with the CPU's: equal, or both unreached.
func SameWidths(got, want []float64) error {
	for v := range got {
		if !(got[v] == want[v] || math.IsNaN(got[v]) && math.IsNaN(want[v])) {
			return fmt.Errorf("vertex %d width %v, the CPU's %v", v, got[v], want[v])
		}
	}
	return nil
}

// Ranks are a PageRank result as SameRanks compares it: the ranks, their
// validity bitmap (nil: none), whether contributions were float32, the
// iterations.
type Ranks struct {
	Values     []float64
	Valid      []byte
	Float32    bool
	Iterations int
}

// SameRanks compares GPU ranks with the CPU's: within 1e-6 in L1, summing
// to 1 (within 1e-9, or 1e-7 with float32 contributions, whose rounding
// the CPU's ranks carry too), iteration counts within one.
func SameRanks(got, want Ranks, n int) error {
	var l1, sum float64
	for v, x := range got.Values {
		if math.IsNaN(x) {
			return fmt.Errorf("rank of vertex %d is NaN (unwritten?)", v)
		}
		l1 += math.Abs(x - want.Values[v])
		sum += x
	}
	if l1 > 1e-6 {
		return fmt.Errorf("L1 distance to the CPU ranks %g > 1e-6", l1)
	}
	slack := 1e-9
	if got.Float32 {
		// Storing a rank in float32 alone may move the sum by up to 2^-24
		// (6e-8); the float32 iterations' sums add a few roundings more a
		// vertex (1.08e-7 seen on the H200 with four parts on a chain
		// graph), so eight times the storage bound.
		slack = 8 * 0x1p-24
	}
	if n > 0 && math.Abs(sum-1) > slack {
		return fmt.Errorf("ranks sum to %v", sum)
	}
	if d := got.Iterations - want.Iterations; d < -1 || d > 1 {
		return fmt.Errorf("%d iterations on the GPU, %d on the CPU", got.Iterations, want.Iterations)
	}
	if got.Valid != nil {
		return AllValidBits(got.Valid, n)
	}
	return nil
}

// AllValidBits says whether valid is the bitmap of n valid rows in
// Column.Valid's Layout: whole words, the bits past n clear.
func AllValidBits(valid []byte, n int) error {
	if want := 4 * ((n + 31) / 32); len(valid) != want {
		return fmt.Errorf("bitmap of %d bytes for %d rows, want %d", len(valid), n, want)
	}
	for i := 0; i < 8*len(valid); i++ {
		if got := valid[i/8]>>(i%8)&1 == 1; got != (i < n) {
			return fmt.Errorf("bit %d of the bitmap of %d rows is %v", i, n, got)
		}
	}
	return nil
}

// StrategyCount is the number before label in a strategy's description
// ("enterprise (3 top-down, 4 bottom-up levels)"), or 0.
func StrategyCount(strategy, label string) int {
	m := regexp.MustCompile(`(\d+) ` + regexp.QuoteMeta(label)).FindStringSubmatch(strategy)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
