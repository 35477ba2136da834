package convert

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/pollctx"
	"github.com/gpipe/gpipe/internal/usererr"
)

// edgeList is a test graph over vertex labels, before keys are chosen.
type edgeList struct {
	nv       int // labels are [0, nv)
	src, dst []int
	w        []float64
}

// keyMode says how labels become keys.
type keyMode int

const (
	denseKeys   keyMode = iota // consecutive (with a small stride) from a random start
	sparseKeys                 // random over the whole type
	extremeKeys                // half at the type's minimum end, half at its maximum
	nearMaxKeys                // counting down from the type's maximum
)

func (m keyMode) String() string {
	return [...]string{"dense", "sparse", "extreme", "nearmax"}[m]
}

// ordinals is nv distinct key ordinals (see ord) within [lo, hi], by mode.
func ordinals(r *rand.Rand, nv int, mode keyMode, lo, hi uint64) []uint64 {
	out := make([]uint64, nv)
	span := hi - lo // nv is far below it
	switch mode {
	case denseKeys:
		stride := uint64(1 + r.IntN(3))
		start := lo + r.Uint64N(span-uint64(nv)*stride)
		for i := range out {
			out[i] = start + uint64(i)*stride
		}
	case sparseKeys:
		seen := map[uint64]bool{}
		for i := range out {
			for {
				v := lo + r.Uint64N(span) + uint64(r.IntN(2))
				if !seen[v] {
					seen[v] = true
					out[i] = v
					break
				}
			}
		}
	case extremeKeys:
		for i := range out {
			if i%2 == 0 {
				out[i] = lo + uint64(i/2)
			} else {
				out[i] = hi - uint64(i/2)
			}
		}
	case nearMaxKeys:
		for i := range out {
			out[i] = hi - uint64(i)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// randomStrings is nv distinct strings, short, with shared prefixes, the
// empty string and bytes above 0x7f.
func randomStrings(r *rand.Rand, nv int) []string {
	seen := map[string]bool{}
	out := make([]string, 0, nv)
	alphabet := []byte{'a', 'b', 'c', 0, 0xff, 'z', '0'}
	for len(out) < nv {
		n := r.IntN(8)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if r.IntN(4) == 0 {
			b = fmt.Appendf(b, "%d", r.IntN(1<<30))
		}
		if s := string(b); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// randomEdges draws m edges over nv labels: skewed endpoints, some self
// loops, repeated edges (with another weight), integer weights.
func randomEdges(r *rand.Rand, nv, m int) edgeList {
	e := edgeList{nv: nv}
	pick := func() int { return int(float64(nv) * math.Pow(r.Float64(), 2.5)) }
	for len(e.src) < m {
		var u, v int
		switch k := r.IntN(20); {
		case k == 0:
			u = pick()
			v = u
		case k < 4 && len(e.src) > 0:
			i := r.IntN(len(e.src))
			u, v = e.src[i], e.dst[i]
			if r.IntN(2) == 0 {
				u, v = v, u
			}
		default:
			u, v = pick(), pick()
		}
		e.src = append(e.src, u)
		e.dst = append(e.dst, v)
		e.w = append(e.w, float64(r.IntN(10)-2)*0.5)
	}
	return e
}

// tableOf is the edge list as a table with keys of type kt (ordinals from
// mode, or strings), cut into random chunks, some with row maps.
func tableOf(r *rand.Rand, e edgeList, kt edges.KeyType, mode keyMode, chunks int) *edges.Table {
	t := &edges.Table{Name: "test.parquet", Columns: edges.Columns{}.WithDefaults(), KeyType: kt, HasWeight: true, Skipped: edges.Skips{}}
	var ords []uint64
	var strs []string
	switch kt {
	case edges.KeyInt32:
		ords = ordinals(r, e.nv, mode, ord(int32(math.MinInt32)), ord(int32(math.MaxInt32)))
	case edges.KeyInt64:
		ords = ordinals(r, e.nv, mode, ord(int64(math.MinInt64)), ord(int64(math.MaxInt64)))
	case edges.KeyUint32:
		ords = ordinals(r, e.nv, mode, 0, math.MaxUint32)
	case edges.KeyUint64:
		ords = ordinals(r, e.nv, mode, 0, math.MaxUint64)
	case edges.KeyString:
		strs = randomStrings(r, e.nv)
	}
	keys := func(labels []int) edges.Keys {
		var k edges.Keys
		switch kt {
		case edges.KeyInt32:
			k.Int32 = []int32{}
			for _, l := range labels {
				k.Int32 = append(k.Int32, unord[int32](ords[l]))
			}
		case edges.KeyInt64:
			k.Int64 = []int64{}
			for _, l := range labels {
				k.Int64 = append(k.Int64, unord[int64](ords[l]))
			}
		case edges.KeyUint32:
			k.Uint32 = []uint32{}
			for _, l := range labels {
				k.Uint32 = append(k.Uint32, unord[uint32](ords[l]))
			}
		case edges.KeyUint64:
			k.Uint64 = []uint64{}
			for _, l := range labels {
				k.Uint64 = append(k.Uint64, unord[uint64](ords[l]))
			}
		case edges.KeyString:
			k.Str = &edges.Strings{Offsets: []int64{0}}
			for _, l := range labels {
				k.Str.Data = append(k.Str.Data, strs[l]...)
				k.Str.Offsets = append(k.Str.Offsets, int64(len(k.Str.Data)))
			}
		}
		return k
	}
	// Chunk boundaries, an empty chunk among them now and then.
	m := len(e.src)
	cuts := []int{0, m}
	for i := 1; i < chunks; i++ {
		cuts = append(cuts, r.IntN(m+1))
	}
	slices.Sort(cuts)
	row := int64(0)
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		c := edges.Chunk{FirstRow: row, Src: keys(e.src[lo:hi]), Dst: keys(e.dst[lo:hi]), Weight: slices.Clone(e.w[lo:hi])}
		if r.IntN(2) == 0 { // rows were skipped inside the chunk
			c.Rows = make([]int64, hi-lo)
			for j := range c.Rows {
				row += 1 + int64(r.IntN(3))
				c.Rows[j] = row
			}
			row++
		} else {
			row += int64(hi - lo)
		}
		t.Chunks = append(t.Chunks, c)
	}
	t.RowsRead = row
	return t
}

// sameGraph fails unless got and want have the same keys, layout and stats.
func sameGraph(t *testing.T, name string, got, want *Graph) {
	t.Helper()
	if got.Directed != want.Directed || got.Weighted != want.Weighted {
		t.Fatalf("%s: directed/weighted %v/%v, want %v/%v", name, got.Directed, got.Weighted, want.Directed, want.Weighted)
	}
	sameKeys(t, name, got.Keys, want.Keys)
	sameCSR(t, name+" out", &got.Out, &want.Out)
	if got.Weighted != (got.Out.Weights != nil) {
		t.Fatalf("%s: weighted %v but weights %v", name, got.Weighted, got.Out.Weights != nil)
	}
	gs, ws := got.Stats, want.Stats
	if gs.InputEdges != ws.InputEdges || gs.SelfLoops != ws.SelfLoops || gs.Merged != ws.Merged || gs.MaxDegree != ws.MaxDegree {
		t.Fatalf("%s: stats %+v, want %+v", name, gs, ws)
	}
	if fmt.Sprint(gs.Skipped) != fmt.Sprint(ws.Skipped) {
		t.Fatalf("%s: skipped %v, want %v", name, gs.Skipped, ws.Skipped)
	}
}

func sameKeys(t *testing.T, name string, got, want *VertexKeys) {
	t.Helper()
	if got.Type != want.Type || !arrow.TypeEqual(got.ArrowType, want.ArrowType) || got.Len() != want.Len() {
		t.Fatalf("%s: keys %v/%v/%d, want %v/%v/%d", name, got.Type, got.ArrowType, got.Len(), want.Type, want.ArrowType, want.Len())
	}
	ok := true
	switch got.Type {
	case edges.KeyInt32:
		ok = slices.Equal(got.Int32, want.Int32)
	case edges.KeyInt64:
		ok = slices.Equal(got.Int64, want.Int64)
	case edges.KeyUint32:
		ok = slices.Equal(got.Uint32, want.Uint32)
	case edges.KeyUint64:
		ok = slices.Equal(got.Uint64, want.Uint64)
	case edges.KeyString:
		ok = slices.Equal(got.Str.Offsets, want.Str.Offsets) && string(got.Str.Data) == string(want.Str.Data)
	}
	if !ok {
		t.Fatalf("%s: keys differ from the reference's", name)
	}
}

func sameCSR(t *testing.T, name string, got, want *CSR) {
	t.Helper()
	if !slices.Equal(got.Offsets, want.Offsets) {
		t.Fatalf("%s: offsets differ (%d vs %d rows)", name, got.NumVertices(), want.NumVertices())
	}
	if !slices.Equal(got.Targets, want.Targets) {
		for i := range min(len(got.Targets), len(want.Targets)) {
			if got.Targets[i] != want.Targets[i] {
				t.Fatalf("%s: targets differ at %d: %d, want %d", name, i, got.Targets[i], want.Targets[i])
			}
		}
		t.Fatalf("%s: %d targets, want %d", name, len(got.Targets), len(want.Targets))
	}
	if (got.Weights == nil) != (want.Weights == nil) || !slices.Equal(got.Weights, want.Weights) {
		t.Fatalf("%s: weights differ", name)
	}
}

// check builds t with opts, compares with the reference (errors included)
// and with the reference's transposition, at several core counts.
func check(t *testing.T, name string, tab *edges.Table, opts BuildOptions) *Graph {
	t.Helper()
	ctx := context.Background()
	want, werr := refBuild(ctx, tab, opts)
	var first *Graph
	for _, procs := range []int{1, 2, 5} {
		old := runtime.GOMAXPROCS(procs)
		got, err := Build(ctx, tab, opts)
		runtime.GOMAXPROCS(old)
		pname := fmt.Sprintf("%s procs=%d", name, procs)
		if werr != nil || err != nil {
			if werr == nil || err == nil || werr.Error() != err.Error() {
				t.Fatalf("%s: error %v, want %v", pname, err, werr)
			}
			var ue *usererr.Error
			if !errors.As(err, &ue) {
				t.Fatalf("%s: error %v is not a usererr", pname, err)
			}
			continue
		}
		sameGraph(t, pname, got, want)
		if got.Directed {
			wantIn := refTranspose(&want.Out, nil)
			sameCSR(t, pname+" in", got.In(), &wantIn)
		} else if got.In() != &got.Out {
			t.Fatalf("%s: undirected In is not Out", pname)
		}
		if first == nil {
			first = got
		}
	}
	return first
}

var keyTypes = []edges.KeyType{edges.KeyInt32, edges.KeyInt64, edges.KeyUint32, edges.KeyUint64, edges.KeyString}

func TestBuildRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 120; i++ {
		kt := keyTypes[i%len(keyTypes)]
		mode := keyMode(i / len(keyTypes) % 4)
		nv := 1 + r.IntN(300)
		m := r.IntN(2000)
		e := randomEdges(r, nv, m)
		tab := tableOf(r, e, kt, mode, 1+r.IntN(5))
		opts := BuildOptions{Undirected: r.IntN(2) == 0, Weighted: r.IntN(2) == 0, BuildIn: r.IntN(2) == 0}
		if opts.Weighted {
			// Weights in [-1, 3.5]: only FiniteWeights accepts them all.
			opts.Weights, opts.SkipInvalid = FiniteWeights, false
		}
		opts.tune = tuning{atomicCounts: i%3 == 0}
		check(t, fmt.Sprintf("case %d %v %v nv=%d m=%d %+v", i, kt, mode, nv, m, opts), tab, opts)
	}
}

// TestBuildLarge goes through the parallel paths: many spans, blocks, the
// parallel sort of distinct keys, the hash table's rebuild.
func TestBuildLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i, kt := range keyTypes {
		for _, mode := range []keyMode{denseKeys, sparseKeys} {
			if kt == edges.KeyString && mode == sparseKeys {
				continue
			}
			nv := 40000
			e := randomEdges(r, nv, 150000)
			tab := tableOf(r, e, kt, mode, 4)
			opts := BuildOptions{Undirected: i%2 == 0, Weighted: mode == sparseKeys || kt == edges.KeyString}
			check(t, fmt.Sprintf("large %v %v", kt, mode), tab, opts)
			if mode == denseKeys {
				// Rows sorted by all cores, too short for the bitmap.
				big := BuildOptions{Undirected: opts.Undirected, Weighted: !opts.Weighted, tune: tuning{bigRow: 300}}
				check(t, fmt.Sprintf("large %v %v big rows", kt, mode), tab, big)
			}
			if mode == sparseKeys || kt == edges.KeyString {
				small := opts
				small.tune = tuning{smallTables: true, atomicCounts: true}
				check(t, fmt.Sprintf("large %v %v small tables, atomic counts", kt, mode), tab, small)
			}
		}
	}
}

// shaped is a table of int64 keys (label·7-3) for an explicit edge list.
func shaped(src, dst []int, w []float64) *edges.Table {
	nv := 0
	for i := range src {
		nv = max(nv, src[i]+1, dst[i]+1)
	}
	e := edgeList{nv: nv, src: src, dst: dst, w: w}
	if w == nil {
		e.w = make([]float64, len(src))
	}
	r := rand.New(rand.NewPCG(5, 6))
	return tableOf(r, e, edges.KeyInt64, denseKeys, 3)
}

func TestBuildShapes(t *testing.T) {
	var star, starRev, chain, loops []int
	const hub = 70000 // above bigRow: the hub's row is sorted by all cores
	for i := 1; i <= hub; i++ {
		star = append(star, 0)
		starRev = append(starRev, i)
	}
	for i := 0; i < 5000; i++ {
		chain = append(chain, i)
		loops = append(loops, i%7)
	}
	chainNext := make([]int, len(chain))
	for i := range chain {
		chainNext[i] = i + 1
	}
	starW := make([]float64, len(star))
	for i := range starW {
		starW[i] = float64(i % 13)
	}
	// Every leaf twice, the second time with a smaller weight.
	starDup := append(slices.Clone(star), star...)
	starDupRev := append(slices.Clone(starRev), starRev...)
	starDupW := append(slices.Clone(starW), starW...)
	for i := len(starW); i < len(starDupW); i++ {
		starDupW[i] -= 0.5
	}
	cases := []struct {
		name     string
		src, dst []int
		w        []float64
	}{
		{"empty", nil, nil, nil},
		{"one edge", []int{0}, []int{1}, []float64{2}},
		{"one self loop", []int{0}, []int{0}, []float64{2}},
		{"all self loops", loops, loops, nil},
		{"star out", star, starRev, starW},
		{"star in", starRev, star, starW},
		{"star with duplicates", starDup, starDupRev, starDupW},
		{"chain", chain, chainNext, nil},
		{"parallel edges", []int{0, 0, 1, 0, 1}, []int{1, 1, 0, 1, 0}, []float64{3, 1, 2, 5, math.Copysign(0, -1)}},
	}
	for _, c := range cases {
		for _, undirected := range []bool{false, true} {
			for _, weighted := range []bool{false, true} {
				opts := BuildOptions{Undirected: undirected, Weighted: weighted, BuildIn: true,
					tune: tuning{atomicCounts: c.name == "star in"}}
				g := check(t, fmt.Sprintf("%s undirected=%v weighted=%v", c.name, undirected, weighted), shaped(c.src, c.dst, c.w), opts)
				if c.name == "empty" && (g.NumVertices() != 0 || len(g.Out.Offsets) != 1) {
					t.Fatalf("empty graph: %d vertices, offsets %v", g.NumVertices(), g.Out.Offsets)
				}
			}
		}
	}
}

func TestBuildWeightRule(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 40; i++ {
		kt := keyTypes[i%len(keyTypes)]
		e := randomEdges(r, 50+r.IntN(200), 200+r.IntN(3000))
		bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -3, -0.5}
		for k := r.IntN(6); k > 0; k-- {
			e.w[r.IntN(len(e.w))] = bad[r.IntN(len(bad))]
		}
		// A vertex only found in a bad row.
		e.src = append(e.src, e.nv)
		e.dst = append(e.dst, 0)
		e.w = append(e.w, math.NaN())
		e.nv++
		tab := tableOf(r, e, kt, keyMode(i%4), 1+r.IntN(4))
		for _, rule := range []WeightRule{FiniteWeights, NonNegativeWeights} {
			for _, skip := range []bool{false, true} {
				opts := BuildOptions{Weighted: true, Weights: rule, SkipInvalid: skip, Undirected: i%3 == 0}
				g := check(t, fmt.Sprintf("case %d %v rule=%d skip=%v", i, kt, rule, skip), tab, opts)
				if g != nil && g.Stats.InputEdges+g.Stats.Skipped.Total() != tab.NumEdges() {
					t.Fatalf("case %d: %d edges in and %d skipped of %d", i, g.Stats.InputEdges, g.Stats.Skipped.Total(), tab.NumEdges())
				}
				if g == nil && skip {
					t.Fatalf("case %d: skipping failed", i)
				}
			}
		}
	}
}

// TestBuildWeightRuleRow checks the row an error names when chunks map
// their positions to input rows.
func TestBuildWeightRuleRow(t *testing.T) {
	tab := &edges.Table{Name: "in.csv", Columns: edges.Columns{Weight: "cost"}, KeyType: edges.KeyInt32, HasWeight: true,
		Chunks: []edges.Chunk{
			{FirstRow: 0, Src: edges.Keys{Int32: []int32{1, 2}}, Dst: edges.Keys{Int32: []int32{2, 3}}, Weight: []float64{1, 2}},
			{FirstRow: 2, Rows: []int64{2, 5, 9}, Src: edges.Keys{Int32: []int32{1, 2, 3}}, Dst: edges.Keys{Int32: []int32{2, 3, 4}}, Weight: []float64{1, -4, math.NaN()}},
		}}
	_, err := Build(context.Background(), tab, BuildOptions{Weighted: true, Weights: NonNegativeWeights})
	var ue *usererr.Error
	if !errors.As(err, &ue) || ue.Row != 5 || ue.Column != "cost" || ue.File != "in.csv" || ue.Kind != usererr.Input {
		t.Fatalf("error %v (%+v), want one at row 5 of column cost", err, ue)
	}
	g, err := Build(context.Background(), tab, BuildOptions{Weighted: true, Weights: NonNegativeWeights, SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `1 row: negative weight -4 (shortest paths and weighted pagerank need weights >= 0) in column "cost"; 1 row: weight is NaN in column "cost"`
	if g.Stats.Skipped.String() != want || g.Stats.InputEdges != 3 || g.NumVertices() != 3 {
		t.Fatalf("skipped %q, %d edges, %d vertices", g.Stats.Skipped, g.Stats.InputEdges, g.NumVertices())
	}
	if _, err := Build(context.Background(), &edges.Table{Name: "x", KeyType: edges.KeyInt32}, BuildOptions{Weighted: true}); usererr.KindOf(err) != usererr.Input {
		t.Fatalf("weighted build without weights: %v", err)
	}
}

// buildFileNonNegative writes data to a file called name, reads it with its
// weights and builds it under the non-negative weight rule; it returns the
// file's path and the build's error.
func buildFileNonNegative(t *testing.T, name, data string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := ingest.Open(context.Background(), path, nil, edges.Options{Columns: edges.Columns{ReadWeight: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Release()
	_, err = Build(context.Background(), tab, BuildOptions{Weighted: true, Weights: NonNegativeWeights})
	return path, err
}

// TestBuildWeightRuleLine checks that a weight error in a text input names
// the line a user sees in an editor, comments and blank lines counted.
func TestBuildWeightRuleLine(t *testing.T) {
	path, err := buildFileNonNegative(t, "e.txt", "# a SNAP-style header\n1 2 1\n\n% comment\n2 3 -3\n")
	var ue *usererr.Error
	if !errors.As(err, &ue) || ue.Line != 5 || ue.Row != 1 || !strings.Contains(err.Error(), `e.txt: column "weight", line 5: negative weight -3`) || ue.File != path {
		t.Fatalf("error %v (%+v), want one at line 5", err, ue)
	}
}

// TestBuildWeightRuleMirror checks that a weight error on the mirror of a
// skew-symmetric Matrix Market entry says so: the line holds 5, the
// message's -5 is the mirror's (it said "line 3: negative weight -5").
func TestBuildWeightRuleMirror(t *testing.T) {
	_, err := buildFileNonNegative(t, "m.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 5\n3 2 1\n")
	var ue *usererr.Error
	if !errors.As(err, &ue) || ue.Line != 3 || ue.Row != 0 ||
		!strings.Contains(err.Error(), `m.mtx: column "weight", line 3: negative weight -5 (shortest paths and weighted pagerank need weights >= 0) for the skew-symmetric mirror of the entry 2 1 5; `) ||
		!strings.Contains(ue.Fix, "make the banner's symmetry general") {
		t.Fatalf("error %v (%+v), want one at line 3 naming the mirror", err, ue)
	}
}

// TestBuildTooManyVertices lowers the limit on vertices to 20 (the graphs
// have about 30) on every way of renumbering: the error names that limit.
func TestBuildTooManyVertices(t *testing.T) {
	opts := BuildOptions{tune: tuning{maxVertices: 20}}
	r := rand.New(rand.NewPCG(9, 10))
	for _, kt := range keyTypes {
		for _, mode := range []keyMode{denseKeys, sparseKeys} {
			e := randomEdges(r, 30, 500)
			tab := tableOf(r, e, kt, mode, 2)
			_, err := Build(context.Background(), tab, opts)
			if usererr.KindOf(err) != usererr.Input || !strings.Contains(err.Error(), "distinct vertex keys, more than the 20 vertices") {
				t.Fatalf("%v %v: error %v", kt, mode, err)
			}
		}
	}
}

func TestBuildCanceled(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	tab := tableOf(r, randomEdges(r, 100, 1000), edges.KeyInt64, sparseKeys, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, tab, BuildOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled build: %v", err)
	}
}

// A build canceled at any of its checks returns the cancellation, never a
// graph that a step cut short left incomplete: hashed, ranked and string
// keys, weights, both directions, the in-edges, long rows sorted by all
// cores, and sorts cut into many blocks.
func TestBuildCanceledAnywhere(t *testing.T) {
	tune := tuning{bigRow: 256, psortBlock: 1 << 10}
	r := rand.New(rand.NewPCG(15, 16))
	for _, c := range []struct {
		kt   edges.KeyType
		mode keyMode
	}{{edges.KeyInt64, sparseKeys}, {edges.KeyUint32, denseKeys}, {edges.KeyString, sparseKeys}} {
		tab := tableOf(r, randomEdges(r, 60000, 40000), c.kt, c.mode, 3)
		for _, opts := range []BuildOptions{
			{Weighted: true, Weights: NonNegativeWeights, SkipInvalid: true, BuildIn: true, tune: tune},
			{Undirected: true, tune: tune},
		} {
			count := pollctx.New(0)
			g, err := Build(count, tab, opts)
			if err != nil {
				t.Fatal(err)
			}
			g.Release()
			polls := count.Polls()
			for at := int64(1); at <= polls; at += max(1, polls/10) {
				if g, err := Build(pollctx.New(at), tab, opts); !errors.Is(err, context.Canceled) || g != nil {
					t.Fatalf("%v %+v: canceled at check %d of about %d: graph %v, error %v", c.kt, opts, at, polls, g != nil, err)
				}
			}
		}
	}
}

// TestBuildAllocator checks that the layouts come from the allocator and
// that Release gives all of it back.
func TestBuildAllocator(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	tab := tableOf(r, randomEdges(r, 3000, 20000), edges.KeyUint64, sparseKeys, 3)
	for _, undirected := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		g, err := Build(context.Background(), tab, BuildOptions{Undirected: undirected, Weighted: true, BuildIn: true, Alloc: mem})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := refBuild(context.Background(), tab, BuildOptions{Undirected: undirected, Weighted: true})
		sameGraph(t, "allocator", g, want)
		if got := int64(mem.CurrentAlloc()); got != g.Out.Bytes()+g.in.Bytes() {
			t.Fatalf("allocator holds %d bytes, layouts %d", got, g.Out.Bytes()+g.in.Bytes())
		}
		g.Release()
		mem.AssertSize(t, 0)
	}
}

func TestDegrees(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for i := 0; i < 30; i++ {
		e := randomEdges(r, 1+r.IntN(3000), r.IntN(20000))
		tab := tableOf(r, e, edges.KeyInt64, denseKeys, 2)
		opts := BuildOptions{Undirected: i%2 == 0, BuildIn: i%4 == 1}
		g, err := Build(context.Background(), tab, opts)
		if err != nil {
			t.Fatal(err)
		}
		n := g.NumVertices()
		want := DegreeStats{Vertices: n, Edges: g.NumEdges()}
		if n > 0 {
			want.Average = float64(want.Edges) / float64(n)
		}
		in := make([]int, n)
		for _, v := range g.Out.Targets {
			in[v]++
		}
		for v := 0; v < n; v++ {
			d := g.Out.Degree(uint32(v))
			want.Max = max(want.Max, d)
			if d == 0 {
				if in[v] == 0 {
					want.Isolated++
				}
				continue
			}
			k := 0
			for 1<<(k+1) <= d {
				k++
			}
			for len(want.Log2) <= k {
				want.Log2 = append(want.Log2, 0)
			}
			want.Log2[k]++
		}
		got := g.Degrees()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("case %d: degrees %+v, want %+v", i, got, want)
		}
		if got.Max != g.Stats.MaxDegree {
			t.Fatalf("case %d: max degree %d, stats say %d", i, got.Max, g.Stats.MaxDegree)
		}
	}
}

func TestKeysFindAndArray(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, kt := range keyTypes {
		for _, mode := range []keyMode{denseKeys, sparseKeys, extremeKeys, nearMaxKeys} {
			tab := tableOf(r, randomEdges(r, 500, 2000), kt, mode, 2)
			g, err := Build(context.Background(), tab, BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			k := g.Keys
			n := k.Len()
			for id := 0; id < n; id++ {
				got, err := k.Find("source", k.Format(uint32(id)))
				if err != nil || got != uint32(id) {
					t.Fatalf("%v %v: Find(Format(%d)) = %d, %v", kt, mode, id, got, err)
				}
			}
			// Keys are ascending.
			for id := 1; id < n; id++ {
				if !keyLess(k, id-1, id) {
					t.Fatalf("%v %v: keys %d and %d out of order", kt, mode, id-1, id)
				}
			}
			if kt != edges.KeyString {
				if _, err := k.Find("source", "x1"); usererr.KindOf(err) != usererr.Usage {
					t.Fatalf("%v: bad key: %v", kt, err)
				}
			}
			missing := "no such key"
			if kt != edges.KeyString {
				missing = missingInt(k)
			}
			if _, err := k.Find("source", missing); usererr.KindOf(err) != usererr.NotFound {
				t.Fatalf("%v %v: missing key %q: %v", kt, mode, missing, err)
			}

			ids := []uint32{NoVertex, 0, uint32(n - 1), NoVertex}
			arr := k.Array(mem, ids)
			if arr.Len() != 4 || !arr.IsNull(0) || !arr.IsNull(3) || arr.NullN() != 2 {
				t.Fatalf("%v: array %v", kt, arr)
			}
			if got := cellText(arr, 1); got != k.Format(0) {
				t.Fatalf("%v: array row 1 %q, want %q", kt, got, k.Format(0))
			}
			if got := cellText(arr, 2); got != k.Format(uint32(n-1)) {
				t.Fatalf("%v: array row 2 %q, want %q", kt, got, k.Format(uint32(n-1)))
			}
			arr.Release()
			all := k.Array(mem, nil)
			if all.Len() != n || all.NullN() != 0 {
				t.Fatalf("%v: whole array %d rows, %d nulls", kt, all.Len(), all.NullN())
			}
			for id := 0; id < n; id += 37 {
				if got := cellText(all, id); got != k.Format(uint32(id)) {
					t.Fatalf("%v: whole array row %d %q, want %q", kt, id, got, k.Format(uint32(id)))
				}
			}
			all.Release()
		}
	}
}

func keyLess(k *VertexKeys, a, b int) bool {
	switch k.Type {
	case edges.KeyInt32:
		return k.Int32[a] < k.Int32[b]
	case edges.KeyInt64:
		return k.Int64[a] < k.Int64[b]
	case edges.KeyUint32:
		return k.Uint32[a] < k.Uint32[b]
	case edges.KeyUint64:
		return k.Uint64[a] < k.Uint64[b]
	}
	return string(k.Str.At(a)) < string(k.Str.At(b))
}

// missingInt is an integer key of k's type that is not a vertex.
func missingInt(k *VertexKeys) string {
	for c := uint64(1); ; c++ {
		s := fmt.Sprint(c)
		if _, err := k.Find("x", s); err != nil {
			return s
		}
	}
}

func cellText(a arrow.Array, i int) string {
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	default:
		return a.ValueStr(i)
	}
}

func TestPsort(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, block := range []int{defaultPsortBlock, 1 << 12} { // one block per worker; many, in several rounds
		for _, procs := range []int{1, 2, 3, 7} {
			old := runtime.GOMAXPROCS(procs)
			for _, n := range []int{0, 1, 100, 1 << 14, 100003} {
				xs := make([]uint64, n)
				for i := range xs {
					xs[i] = r.Uint64N(uint64(n/3 + 1))
				}
				want := slices.Clone(xs)
				slices.Sort(want)
				if err := psort(context.Background(), xs, block, slices.Sort[[]uint64], func(a, b uint64) bool { return a < b }); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(xs, want) {
					t.Fatalf("block=%d procs=%d n=%d: psort differs", block, procs, n)
				}
			}
			runtime.GOMAXPROCS(old)
		}
	}
}

// TestTuningDefaults: the zero tuning, which every build but the tests'
// runs, is the builder's defaults, and each field turns its path on.
func TestTuningDefaults(t *testing.T) {
	var z tuning
	est := 1e6 // distinct keys, by the sketch
	if z.sortBlock() != 1<<18 || z.vertexLimit() != MaxVertices || bigRow(0, z) != 1<<16 ||
		!blockedCounts(2, 10, 100, z) || tableSlots(est, 1, z) != int64(est/targetLoad)+1 {
		t.Errorf("zero tuning: block %d, limit %d, big row %d, blocked counts %v, slots %d",
			z.sortBlock(), z.vertexLimit(), bigRow(0, z), blockedCounts(2, 10, 100, z), tableSlots(est, 1, z))
	}
	on := tuning{psortBlock: 7, atomicCounts: true, maxVertices: 20, smallTables: true, bigRow: 300}
	if on.sortBlock() != 7 || on.vertexLimit() != 20 || bigRow(0, on) != 300 ||
		blockedCounts(2, 10, 100, on) || tableSlots(est, 1, on) >= tableSlots(est, 1, z) {
		t.Errorf("tuning %+v not followed", on)
	}
}

// psort stops soon after its context is canceled, in the block sorts and in
// the merges: sorting the distinct keys of a graph with a billion of them
// takes seconds. Here the context is canceled by the first block sort, and
// by the first comparison of the merges; blocks are no longer than block
// and few more are sorted, and the merges do not get through one round.
func TestPsortCanceled(t *testing.T) {
	const block = 1 << 10
	const n = 64 << 10 // 64 blocks, 6 rounds of merges
	xs := make([]uint64, n)
	r := rand.New(rand.NewPCG(23, 24))
	for i := range xs {
		xs[i] = r.Uint64()
	}

	ctx, cancel := context.WithCancel(context.Background())
	var blocks, longest atomic.Int64
	sortBlock := func(b []uint64) {
		if blocks.Add(1) == 1 {
			cancel()
		}
		if l := int64(len(b)); l > longest.Load() {
			longest.Store(l) // racy max, but the blocks have one length
		}
		slices.Sort(b)
	}
	err := psort(ctx, slices.Clone(xs), block, sortBlock, func(a, b uint64) bool { return a < b })
	if !errors.Is(err, context.Canceled) || blocks.Load() > int64(2*par.Workers()) || longest.Load() > block {
		t.Errorf("canceled by the first block: %v after %d blocks of up to %d (of %d)", err, blocks.Load(), longest.Load(), block)
	}

	ctx, cancel = context.WithCancel(context.Background())
	var compared atomic.Int64
	less := func(a, b uint64) bool {
		if compared.Add(1) == 1 {
			cancel()
		}
		return a < b
	}
	err = psort(ctx, slices.Clone(xs), block, slices.Sort[[]uint64], less)
	if !errors.Is(err, context.Canceled) || compared.Load() >= n {
		t.Errorf("canceled by the first comparison: %v after %d comparisons (a round of merges makes about %d)", err, compared.Load(), n)
	}
}

// TestRowSorter checks every way of sorting a row against sort + dedupe,
// on random, clustered and constant rows.
func TestRowSorter(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{2, 1000, 1 << 20} {
		for _, l := range []int{2, 5, 16, 17, 40, 127, 128, 500, 1023, 1024, 5000, 70000} {
			for _, shape := range []string{"random", "clustered", "constant"} {
				for _, weighted := range []bool{false, true} {
					tt := make([]uint32, l)
					base := uint32(r.IntN(n))
					for i := range tt {
						switch shape {
						case "random":
							tt[i] = uint32(r.IntN(n))
						case "clustered": // most in a narrow band, a few far away
							tt[i] = min(base+uint32(r.IntN(8)), uint32(n-1))
							if r.IntN(10) == 0 {
								tt[i] = uint32(r.IntN(n))
							}
						case "constant":
							tt[i] = base
						}
					}
					var w []float64
					if weighted {
						w = make([]float64, l)
						for i := range w {
							w[i] = float64(r.IntN(5))
						}
					}
					// The reference: sorted pairs, first (smallest) weight per target.
					type pair struct {
						t uint32
						w float64
					}
					ref := make([]pair, l)
					for i := range tt {
						ref[i].t = tt[i]
						if weighted {
							ref[i].w = w[i]
						}
					}
					slices.SortFunc(ref, func(a, b pair) int {
						if a.t != b.t {
							return int(int64(a.t) - int64(b.t))
						}
						return int(a.w - b.w)
					})
					ref = slices.CompactFunc(ref, func(a, b pair) bool { return a.t == b.t })
					for _, marks := range []bool{false, true} {
						gt, gw := slices.Clone(tt), slices.Clone(w)
						s := newRowSorter(n, marks)
						k := s.clean(gt, gw, true)
						name := fmt.Sprintf("n=%d l=%d %s weighted=%v marks=%v", n, l, shape, weighted, marks)
						if k != int64(len(ref)) {
							t.Fatalf("%s: %d distinct, want %d", name, k, len(ref))
						}
						for i := range ref {
							if gt[i] != ref[i].t || (weighted && gw[i] != ref[i].w) {
								t.Fatalf("%s: entry %d is %d, want %d", name, i, gt[i], ref[i].t)
							}
						}
					}
				}
			}
		}
	}
}

// TestWeights32: the uint32 copy of integer weights that the CPU's sssp
// reads is Out's weights edge for edge, counted in Bytes, and given back to
// the allocator with the graph; other weights, and none, have none.
func TestWeights32(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	e := randomEdges(r, 3000, 20000)
	halves := slices.Clone(e.w) // with halves: not integers
	for i := range e.w {
		e.w[i] = float64(r.IntN(256))
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	g, err := Build(context.Background(), tableOf(r, e, edges.KeyUint64, sparseKeys, 3), BuildOptions{Undirected: true, Weighted: true, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	before := g.Bytes()
	w := g.Weights32()
	if len(w) != len(g.Out.Weights) {
		t.Fatalf("%d uint32 weights for %d edges", len(w), len(g.Out.Weights))
	}
	for i, x := range g.Out.Weights {
		if float64(w[i]) != x {
			t.Fatalf("edge %d: uint32 weight %d, weight %v", i, w[i], x)
		}
	}
	if got := g.Bytes() - before; got != 4*int64(len(w)) {
		t.Errorf("Bytes grew by %d with the uint32 weights, want %d", got, 4*len(w))
	}
	if got := int64(mem.CurrentAlloc()); got != g.Bytes()-g.Keys.Bytes() {
		t.Errorf("allocator holds %d bytes, layouts %d", got, g.Bytes()-g.Keys.Bytes())
	}
	g.Release()
	mem.AssertSize(t, 0)
	g.Release() // frees nothing twice
	mem.AssertSize(t, 0)

	e.w = halves
	g, err = Build(context.Background(), tableOf(r, e, edges.KeyUint64, sparseKeys, 3), BuildOptions{Weighted: true, Weights: FiniteWeights})
	if err != nil {
		t.Fatal(err)
	}
	if w := g.Weights32(); w != nil {
		t.Errorf("%d uint32 weights for weights with halves and negatives", len(w))
	}
	g, err = Build(context.Background(), tableOf(r, e, edges.KeyUint64, sparseKeys, 3), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := g.Weights32(); w != nil {
		t.Errorf("%d uint32 weights without weights", len(w))
	}
}
