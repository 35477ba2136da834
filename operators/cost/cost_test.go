package cost

import (
	"math"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/convert"
)

// Shapes of the benchmark's graphs (stored edges, undirected where run so).
var (
	grid2048 = Shape{Vertices: 1 << 22, Edges: 16_760_832, AvgDegree: 4, MaxDegree: 4}
	kron22   = Shape{Vertices: 2_395_814, Edges: 128_000_000, AvgDegree: 53, MaxDegree: 200_000}
	rome99   = Shape{Vertices: 3353, Edges: 8870, AvgDegree: 2.6, MaxDegree: 6}
	wikiVote = Shape{Vertices: 7115, Edges: 100_762, AvgDegree: 14, MaxDegree: 893}
)

func TestLevels(t *testing.T) {
	if got := grid2048.Levels(); math.Abs(got-4096) > 1 {
		t.Errorf("grid levels %v, want 2·2048", got)
	}
	if got := kron22.Levels(); got < 3 || got > 10 {
		t.Errorf("Kronecker 22 levels %v, want a handful", got)
	}
	seen := grid2048
	seen.SeenLevels = 17
	if seen.Levels() != 17 {
		t.Errorf("levels seen before ignored: %v", seen.Levels())
	}
	if !grid2048.HighDiameter() || kron22.HighDiameter() || wikiVote.HighDiameter() {
		t.Error("HighDiameter: want the grid only")
	}
}

func TestShapeOf(t *testing.T) {
	s := ShapeOf(convert.DegreeStats{Vertices: 10, Edges: 40, Average: 4, Max: 9}, 3)
	if s != (Shape{Vertices: 10, Edges: 40, AvgDegree: 4, MaxDegree: 9, SeenLevels: 3}) {
		t.Errorf("ShapeOf = %+v", s)
	}
}

// The fitted H200 table ranks the strategies the benchmarks measured
// fastest first: bfs4k for a road-like graph on its first search (persist
// where it is a candidate, for bfs and sssp), enterprise (vwc for sssp)
// for a small-world one; afforest for cc; warpseg for pagerank.
func TestRankH200(t *testing.T) {
	m := Default(16, "NVIDIA H200", 0)
	for _, c := range []struct {
		op    string
		s     Shape
		names []string
		first string
	}{
		{"bfs", grid2048, []string{"enterprise", "bfs4k", "vwc"}, "bfs4k"},
		{"bfs", kron22, []string{"bfs4k", "vwc", "enterprise"}, "enterprise"},
		{"bfs", grid2048, []string{"enterprise", "bfs4k", "vwc", "persist"}, "persist"},
		{"bfs", kron22, []string{"persist", "bfs4k", "vwc", "enterprise"}, "enterprise"},
		{"bfs", Shape{Vertices: 1 << 18, Edges: 8 << 20, AvgDegree: 32, MaxDegree: 1 << 14}, []string{"persist", "enterprise"}, "enterprise"},
		{"sssp", grid2048, []string{"vwc", "kites", "warpseg", "persist"}, "persist"},
		{"sssp", kron22, []string{"persist", "vwc"}, "vwc"},
		{"cc", kron22, []string{"vwc", "afforest", "cw"}, "afforest"},
		{"pagerank", kron22, []string{"vwc", "gshards", "cw", "warpseg"}, "warpseg"},
	} {
		r := m.Rank(c.op, c.names, c.s, 1)
		if r[0].Strategy != c.first || !r[0].Known {
			t.Errorf("%s on %+v: ranked %+v, want %s first", c.op, c.s, r, c.first)
		}
	}
}

// A strategy without a row ranks after those with one, in the order given.
func TestRankUnknownLast(t *testing.T) {
	m := Default(16, "NVIDIA H200", 0)
	r := m.Rank("bfs", []string{"newcomer", "vwc", "other", "enterprise"}, kron22, 1)
	got := []string{r[0].Strategy, r[1].Strategy, r[2].Strategy, r[3].Strategy}
	if got[2] != "newcomer" || got[3] != "other" || r[2].Known || !r[0].Known {
		t.Errorf("ranked %v", got)
	}
}

// The model picks the class of the nearest core count and scales its CPU
// rows to the cores at hand, and the GPU rows by memory bandwidth.
func TestNewScales(t *testing.T) {
	small := Class{Name: "2 cores", Cores: 2, Rows: []Row{{Op: "bfs", Strategy: CPU, PerEdge: 1}}}
	big := Class{Name: "big", Cores: 16, GPU: "H200", GPUBandwidth: 4e12, Setup: 0.3,
		Rows: []Row{{Op: "bfs", Strategy: CPU, PerEdge: 0.1}, {Op: "bfs", Strategy: "x", PerEdge: 0.01}}}
	s := Shape{Vertices: 1, Edges: 10}
	m := New([]Class{small, big}, 4, "NVIDIA H100", 2e12)
	if got, _ := m.CPU("bfs", s, 1); math.Abs(got-5) > 1e-9 {
		t.Errorf("4 cores from the 2-core class: %v, want 10·1·2/4", got)
	}
	if got, _ := m.GPU("bfs", "x", s, 1); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("half the bandwidth: %v, want 0.1·2", got)
	}
	m = New([]Class{small, big}, 32, "", 0)
	if got, _ := m.CPU("bfs", s, 1); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("32 cores from the 16-core class: %v, want 1·16/32", got)
	}
	if !strings.Contains(m.Name(), "scaled to 32 cores") {
		t.Errorf("name %q", m.Name())
	}
	if _, ok := m.GPU("bfs", "y", s, 1); ok {
		t.Error("a row for a strategy the table does not have")
	}
}

func TestIterations(t *testing.T) {
	if got := Iterations("pagerank", 1e-9, 0.85, 1000); got < 30 || got > 80 {
		t.Errorf("pagerank 1e-9: %v iterations, want about 50", got)
	}
	if got := Iterations("pagerank", 1e-9, 0.85, 10); got != 10 {
		t.Errorf("capped at 10: %v", got)
	}
	if got := Iterations("bfs", 1e-9, 0.85, 10); got != 1 {
		t.Errorf("bfs: %v", got)
	}
}

// Skewed models make each side win: what tests of auto's two choices pass.
func TestSkewed(t *testing.T) {
	toCPU, toGPU := Skewed(16, "H200", 0, 1e-6, 1e6), Skewed(16, "H200", 0, 1e6, 1e-6)
	c1, _ := toCPU.CPU("bfs", kron22, 1)
	g1, _ := toCPU.GPU("bfs", "enterprise", kron22, 1)
	c2, _ := toGPU.CPU("bfs", rome99, 1)
	g2, _ := toGPU.GPU("bfs", "enterprise", rome99, 1)
	if c1 >= g1+toCPU.Setup() || c2 <= g2+toGPU.Setup() {
		t.Errorf("skews do not decide: %v %v, %v %v", c1, g1, c2, g2)
	}
	if base := Default(16, "H200", 0); base.Setup() != Skewed(16, "H200", 0, 1, 1).Setup() {
		t.Error("a skew of 1 changed the model")
	}
}

func TestMillis(t *testing.T) {
	for s, want := range map[float64]string{0.25: "250 ms", 0.0123: "12.3 ms", 0.00042: "0.42 ms"} {
		if got := Millis(s); got != want {
			t.Errorf("Millis(%v) = %q, want %q", s, got, want)
		}
	}
}
