package gpuop

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/operators"
)

// The graph built on the GPU must be the host's: the same ids, offsets,
// targets, weights (bit for bit: -0 and +0 apart), in-edge Layout,
// statistics and degree statistics, on fresh random tables of many shapes.
// Every device buffer the build allocates is poisoned first (testGPU), and
// the host offsets before they are downloaded. Each mismatch is reported
// with the case's name, so that one run on the GPU machine says all that
// is wrong.

// buildShape is a table for the build tests, as labels: vertex labels are
// [0, nv) and become keys of each type below.
type buildShape struct {
	name     string
	nv       int
	src, dst []int
	w        []float64
}

// buildWeights are the weights drawn: ties, -0 against +0, negatives and
// fractions (all finite: FiniteWeights takes them all).
var buildWeights = []float64{0, math.Copysign(0, -1), 1, 2.5, -1, 3, 0.5, 1e300, -7.25, 1}

// randomShape draws m edges over nv labels: endpoints skewed towards small
// labels, self loops at rate self, repeats of earlier edges (either way
// round, another weight) at rate dup.
func randomShape(rng *rand.Rand, name string, nv, m int, self, dup float64) buildShape {
	s := buildShape{name: name, nv: nv}
	pick := func() int { return int(float64(nv) * math.Pow(rng.Float64(), 2.5)) }
	for len(s.src) < m {
		var u, v int
		switch x := rng.Float64(); {
		case x < self:
			u = pick()
			v = u
		case x < self+dup && len(s.src) > 0:
			i := rng.IntN(len(s.src))
			u, v = s.src[i], s.dst[i]
			if rng.IntN(2) == 0 {
				u, v = v, u
			}
		default:
			u, v = pick(), pick()
		}
		s.src = append(s.src, u)
		s.dst = append(s.dst, v)
		s.w = append(s.w, buildWeights[rng.IntN(len(buildWeights))])
	}
	return s
}

// buildShapes are the shapes every key type, renumbering path and mode is
// built from.
func buildShapes(t *testing.T, rng *rand.Rand) []buildShape {
	list := []buildShape{
		{name: "empty", nv: 1},
		{name: "one-edge", nv: 2, src: []int{0}, dst: []int{1}, w: []float64{2}},
		{name: "one-self-loop", nv: 1, src: []int{0}, dst: []int{0}, w: []float64{1}},
		{name: "self-loops-only", nv: 4, src: []int{3, 1, 2, 1}, dst: []int{3, 1, 2, 1}, w: []float64{1, 2, 3, 4}},
		{name: "zero-ties", nv: 3, src: []int{0, 0, 0, 1, 1, 2}, dst: []int{1, 1, 1, 0, 0, 2},
			w: []float64{0, math.Copysign(0, -1), 0, math.Copysign(0, -1), 0, 5}},
	}
	list = append(list,
		randomShape(rng, "random-50", 30, 50, 0.1, 0.3),
		randomShape(rng, "random-5000", 900, 5000, 0.05, 0.2),
		randomShape(rng, "random-40000-dups", 300, 40000, 0.02, 0.6),
	)
	// A hub joined to every other vertex, both ways, with repeats.
	hub := buildShape{name: "hub", nv: 20001}
	for v := 1; v <= 20000; v++ {
		hub.src = append(hub.src, 0, v)
		hub.dst = append(hub.dst, v, 0)
		hub.w = append(hub.w, float64(v%7), float64(v%5))
		if v%3 == 0 {
			hub.src, hub.dst, hub.w = append(hub.src, 0), append(hub.dst, v), append(hub.w, -1)
		}
	}
	list = append(list, hub)
	return list
}

// largeShapes are built once each, in one of the modes, for the sort's
// many tiles and the scans' recursion.
func largeShapes(t *testing.T, rng *rand.Rand, seed uint64) []buildShape {
	k := kroneckerShape(t, 16, 8, seed)
	return []buildShape{randomShape(rng, "random-600000", 200000, 600000, 0.01, 0.1), k}
}

// kroneckerShape is a Graph 500 graph (skewed degrees, duplicates, self
// loops) as a shape.
func kroneckerShape(t *testing.T, scale, ef int, seed uint64) buildShape {
	tab, err := gen.Kronecker{Scale: scale, EdgeFactor: ef, Seed: seed, Weighted: true}.Generate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := buildShape{name: fmt.Sprintf("kronecker-%d-%d", scale, ef), nv: 1 << scale}
	for _, c := range tab.Chunks {
		for i := range c.Src.Int64 {
			s.src = append(s.src, int(c.Src.Int64[i]))
			s.dst = append(s.dst, int(c.Dst.Int64[i]))
			s.w = append(s.w, c.Weight[i])
		}
	}
	return s
}

// keyOrdSpan is the range of key ordinals (convert's ord) of a key type.
func keyOrdSpan(kt edges.KeyType) (lo, hi uint64) {
	switch kt {
	case edges.KeyInt32:
		return 1<<63 - 1<<31, 1<<63 + 1<<31 - 1
	case edges.KeyUint32:
		return 0, math.MaxUint32
	}
	return 0, math.MaxUint64
}

// labelOrds gives nv labels distinct key ordinals: dense (consecutive with
// a small stride, anywhere in the type's range: the bitmap path) or sparse
// (random over the whole range, both ends included: the sort path).
func labelOrds(rng *rand.Rand, kt edges.KeyType, nv int, sparse bool) []uint64 {
	lo, hi := keyOrdSpan(kt)
	out := make([]uint64, nv)
	if !sparse {
		stride := uint64(1 + rng.IntN(3))
		start := lo + rng.Uint64N(hi-lo-uint64(nv)*stride)
		for i := range out {
			out[i] = start + uint64(i)*stride
		}
	} else {
		seen := map[uint64]bool{}
		for i := range out {
			for {
				v := lo + rng.Uint64N(hi-lo)
				switch i {
				case 0:
					v = lo
				case 1:
					v = hi
				}
				if !seen[v] {
					seen[v] = true
					out[i] = v
					break
				}
			}
		}
	}
	rng.Shuffle(nv, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// shapeTable is s as a table of kt keys from ords, cut into random chunks
// (some empty); weighted says whether it has a weight column.
func shapeTable(rng *rand.Rand, s buildShape, kt edges.KeyType, ords []uint64, weighted bool) *edges.Table {
	t := &edges.Table{Name: s.name + ".parquet", Columns: edges.Columns{}.WithDefaults(), KeyType: kt, HasWeight: weighted,
		RowsRead: int64(len(s.src)), Skipped: edges.Skips{}}
	keys := func(labels []int) edges.Keys {
		var k edges.Keys
		switch kt {
		case edges.KeyInt32:
			k.Int32 = make([]int32, len(labels))
			for i, l := range labels {
				k.Int32[i] = int32(int64(ords[l] ^ 1<<63))
			}
		case edges.KeyInt64:
			k.Int64 = make([]int64, len(labels))
			for i, l := range labels {
				k.Int64[i] = int64(ords[l] ^ 1<<63)
			}
		case edges.KeyUint32:
			k.Uint32 = make([]uint32, len(labels))
			for i, l := range labels {
				k.Uint32[i] = uint32(ords[l])
			}
		default:
			k.Uint64 = make([]uint64, len(labels))
			for i, l := range labels {
				k.Uint64[i] = ords[l]
			}
		}
		return k
	}
	m := len(s.src)
	cuts := []int{0, m}
	for i := rng.IntN(4); i > 0; i-- {
		cuts = append(cuts, rng.IntN(m+1))
	}
	slices.Sort(cuts)
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		c := edges.Chunk{FirstRow: int64(lo), Src: keys(s.src[lo:hi]), Dst: keys(s.dst[lo:hi])}
		if weighted {
			c.Weight = slices.Clone(s.w[lo:hi])
		}
		t.Chunks = append(t.Chunks, c)
	}
	return t
}

// expectedPath is the renumbering the GPU should take: convert's rule on
// the keys the edges use.
func expectedPath(s buildShape, ords []uint64) string {
	if len(s.src) == 0 {
		return "bitmap"
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i := range s.src {
		for _, l := range []int{s.src[i], s.dst[i]} {
			lo, hi = min(lo, ords[l]), max(hi, ords[l])
		}
	}
	if hi-lo < convert.DirectLimit(2*int64(len(s.src))) {
		return "bitmap"
	}
	return "sort"
}

// buildMode is how a table is built.
type buildMode struct {
	undirected, buildIn, weighted bool
}

func (m buildMode) String() string {
	switch {
	case m.undirected:
		return fmt.Sprintf("undirected weighted=%v", m.weighted)
	case m.buildIn:
		return fmt.Sprintf("directed+in weighted=%v", m.weighted)
	}
	return fmt.Sprintf("directed weighted=%v", m.weighted)
}

var buildModes = func() []buildMode {
	var ms []buildMode
	for _, w := range []bool{false, true} {
		ms = append(ms, buildMode{undirected: true, weighted: w}, buildMode{buildIn: true, weighted: w}, buildMode{weighted: w})
	}
	return ms
}()

var intKeyTypes = []edges.KeyType{edges.KeyInt32, edges.KeyInt64, edges.KeyUint32, edges.KeyUint64}

func TestGPUBuildMatchesHost(t *testing.T) {
	b := testGPU(t)
	seed := optest.FreshSeed(t)
	rng := rand.New(rand.NewPCG(seed, 13))
	pinned := gpu.NewPinnedAllocator(b.ctx)
	defer pinned.Close()
	i := 0
	for _, s := range buildShapes(t, rng) {
		for _, kt := range intKeyTypes {
			for _, sparse := range []bool{false, true} {
				ords := labelOrds(rng, kt, s.nv, sparse)
				for _, m := range buildModes {
					i++
					opts := convert.BuildOptions{Undirected: m.undirected, BuildIn: m.buildIn, Weighted: m.weighted, Weights: convert.FiniteWeights}
					if i%2 == 0 {
						opts.Alloc = pinned
					}
					name := fmt.Sprintf("%s/%v/sparse=%v/%v/pinned=%v", s.name, kt, sparse, m, opts.Alloc != nil)
					checkDeviceBuild(t, b, name, shapeTable(rng, s, kt, ords, m.weighted), opts, expectedPath(s, ords))
				}
			}
		}
	}
	for k, s := range largeShapes(t, rng, seed) {
		for j, kt := range intKeyTypes {
			sparse := (j+k)%2 == 1
			ords := labelOrds(rng, kt, s.nv, sparse)
			m := buildModes[(j+2*k)%len(buildModes)]
			opts := convert.BuildOptions{Undirected: m.undirected, BuildIn: m.buildIn, Weighted: m.weighted, Weights: convert.FiniteWeights}
			name := fmt.Sprintf("%s/%v/sparse=%v/%v", s.name, kt, sparse, m)
			checkDeviceBuild(t, b, name, shapeTable(rng, s, kt, ords, m.weighted), opts, expectedPath(s, ords))
		}
	}
}

// TestGPUBuildLarge builds a table of more than 2^24 entries: the scans
// of the merge recurse twice (4096² counts), and the radix sort has more
// than 4096 tiles.
func TestGPUBuildLarge(t *testing.T) {
	b := testGPU(t)
	rng := rand.New(rand.NewPCG(optest.FreshSeed(t), 17))
	s := randomShape(rng, "random-9M", 3_000_000, 9_000_000, 0.001, 0.05)
	ords := labelOrds(rng, edges.KeyInt64, s.nv, false)
	opts := convert.BuildOptions{Undirected: true}
	checkDeviceBuild(t, b, s.name+"/int64/undirected", shapeTable(rng, s, edges.KeyInt64, ords, false), opts, "bitmap")
}

// checkDeviceBuild builds tab on the GPU and on the host and reports every
// difference.
func checkDeviceBuild(t *testing.T, b *GPU, name string, tab *edges.Table, opts convert.BuildOptions, wantPath string) {
	t.Helper()
	checkDeviceBuildFrom(t, b, name, tab, opts, wantPath, nil)
}

// checkDeviceBuildFrom is checkDeviceBuild from the columns of an upload.
func checkDeviceBuildFrom(t *testing.T, b *GPU, name string, tab *edges.Table, opts convert.BuildOptions, wantPath string, up *ColumnUpload) {
	t.Helper()
	ctx := context.Background()
	want, werr := convert.Build(ctx, tab, opts)
	got, rep, err := b.BuildGraphFrom(ctx, tab, opts, up)
	if werr != nil || err != nil {
		if werr == nil || err == nil || werr.Error() != err.Error() {
			t.Errorf("%s: error %v, want %v", name, err, werr)
		}
		return
	}
	defer want.Release()
	defer got.Release()
	defer b.Forget(got)
	if rep.Device != "gpu" {
		t.Errorf("%s: built on the host: %s", name, rep.Reason)
		return
	}
	if wantPath != "" && rep.Renumber != wantPath {
		t.Errorf("%s: renumbered by %s, want %s", name, rep.Renumber, wantPath)
	}
	if got.OnHost() {
		t.Errorf("%s: the device build copied its edges to the host", name)
	}
	if got.Directed != want.Directed || got.Weighted != want.Weighted {
		t.Errorf("%s: directed/weighted %v/%v, want %v/%v", name, got.Directed, got.Weighted, want.Directed, want.Weighted)
		return
	}
	compareKeys(t, name, got.Keys, want.Keys)
	compareSlices(t, name+": out offsets", got.Out.Offsets, want.Out.Offsets)
	gs, ws := got.Stats, want.Stats
	if gs.InputEdges != ws.InputEdges || gs.SelfLoops != ws.SelfLoops || gs.Merged != ws.Merged || gs.MaxDegree != ws.MaxDegree {
		t.Errorf("%s: stats input %d, self loops %d, merged %d, max degree %d; want %d, %d, %d, %d", name,
			gs.InputEdges, gs.SelfLoops, gs.Merged, gs.MaxDegree, ws.InputEdges, ws.SelfLoops, ws.Merged, ws.MaxDegree)
	}
	if gd, wd := got.Degrees(), want.Degrees(); fmt.Sprint(gd) != fmt.Sprint(wd) {
		t.Errorf("%s: degree statistics %+v, want %+v", name, gd, wd)
	}
	if got.NumEdges() != want.NumEdges() || got.NumVertices() != want.NumVertices() {
		t.Errorf("%s: %d vertices, %d edges; want %d, %d", name, got.NumVertices(), got.NumEdges(), want.NumVertices(), want.NumEdges())
	}

	// The layouts the cache holds, as kernels will read them.
	checkDevicePart(t, b, name, got, OutOffsets, want.Out.Offsets)
	checkDevicePart(t, b, name, got, OutTargets, want.Out.Targets)
	if want.Weighted {
		checkDevicePart(t, b, name, got, outWeights, weightBits(want.Out.Weights))
	}
	if want.Directed && opts.BuildIn {
		in := want.In()
		compareSlices(t, name+": in offsets (host)", got.In().Offsets, in.Offsets)
		checkDevicePart(t, b, name, got, InOffsets, in.Offsets)
		checkDevicePart(t, b, name, got, InSources, in.Targets)
		if want.Weighted {
			checkDevicePart(t, b, name, got, inWeights, weightBits(in.Weights))
		}
	}

	// And as the host gets them.
	if err := got.Materialize(); err != nil {
		t.Errorf("%s: Materialize: %v", name, err)
		return
	}
	compareSlices(t, name+": out targets", got.Out.Targets, want.Out.Targets)
	compareSlices(t, name+": out weights", weightBits(got.Out.Weights), weightBits(want.Out.Weights))
	if (got.Out.Weights == nil) != (want.Out.Weights == nil) {
		t.Errorf("%s: weights present %v, want %v", name, got.Out.Weights != nil, want.Out.Weights != nil)
	}
	if want.Directed {
		gi, wi := got.In(), want.In()
		compareSlices(t, name+": in offsets", gi.Offsets, wi.Offsets)
		compareSlices(t, name+": in sources", gi.Targets, wi.Targets)
		compareSlices(t, name+": in weights", weightBits(gi.Weights), weightBits(wi.Weights))
	}
}

// checkDevicePart downloads part of g from the cache and compares it with
// want.
func checkDevicePart[T gpu.Scalar](t *testing.T, b *GPU, name string, g *convert.Graph, part Layout, want []T) {
	t.Helper()
	dg := b.deviceGraph(g)
	dg.mu.Lock()
	buf := dg.parts[part]
	dg.mu.Unlock()
	if buf == nil {
		t.Errorf("%s: Layout part %d is not in the cache", name, part)
		return
	}
	got := make([]T, len(want))
	if len(want) > 0 {
		s, err := b.ctx.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Destroy()
		if err := gpu.Download(s, got, buf); err != nil {
			t.Errorf("%s: download of part %d: %v", name, part, err)
			return
		}
	}
	compareSlices(t, fmt.Sprintf("%s: device part %d", name, part), got, want)
}

func weightBits(w []float64) []uint64 {
	if w == nil {
		return nil
	}
	out := make([]uint64, len(w))
	for i, x := range w {
		out[i] = math.Float64bits(x)
	}
	return out
}

// compareSlices reports the first difference of got and want, and how many
// elements differ.
func compareSlices[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d elements, want %d", what, len(got), len(want))
		return
	}
	first, diffs := -1, 0
	for i := range got {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			diffs++
		}
	}
	if diffs > 0 {
		t.Errorf("%s: %d of %d elements differ, the first at %d: %v, want %v", what, diffs, len(got), first, got[first], want[first])
	}
}

func compareKeys(t *testing.T, name string, got, want *convert.VertexKeys) {
	t.Helper()
	if got.Type != want.Type || got.ArrowType.ID() != want.ArrowType.ID() || got.Len() != want.Len() {
		t.Errorf("%s: keys %v/%v/%d, want %v/%v/%d", name, got.Type, got.ArrowType, got.Len(), want.Type, want.ArrowType, want.Len())
		return
	}
	switch got.Type {
	case edges.KeyInt32:
		compareSlices(t, name+": keys", got.Int32, want.Int32)
	case edges.KeyInt64:
		compareSlices(t, name+": keys", got.Int64, want.Int64)
	case edges.KeyUint32:
		compareSlices(t, name+": keys", got.Uint32, want.Uint32)
	case edges.KeyUint64:
		compareSlices(t, name+": keys", got.Uint64, want.Uint64)
	}
}

// The tables the GPU leaves to the host: the same graph, or the same error,
// and the reason.
func TestGPUBuildFallsBackToHost(t *testing.T) {
	b := testGPU(t)
	rng := rand.New(rand.NewPCG(optest.FreshSeed(t), 19))
	ctx := context.Background()
	s := randomShape(rng, "random-2000", 400, 2000, 0.05, 0.2)
	tab := shapeTable(rng, s, edges.KeyInt64, labelOrds(rng, edges.KeyInt64, s.nv, false), true)

	// Bad weights: NaN, then a negative one for shortest paths.
	bad := shapeTable(rng, s, edges.KeyInt64, labelOrds(rng, edges.KeyInt64, s.nv, false), true)
	for ci := range bad.Chunks {
		if c := &bad.Chunks[ci]; len(c.Weight) > 3 {
			c.Weight[len(c.Weight)/2] = math.NaN()
			c.Weight[len(c.Weight)-1] = -2
		}
	}
	for _, c := range []struct {
		name string
		tab  *edges.Table
		opts convert.BuildOptions
		why  string
	}{
		{"negative-weights", tab, convert.BuildOptions{Weighted: true, Weights: convert.NonNegativeWeights}, "refuses"},
		{"nan-weights", bad, convert.BuildOptions{Weighted: true, Weights: convert.FiniteWeights, Undirected: true}, "refuses"},
		{"nan-weights-skipped", bad, convert.BuildOptions{Weighted: true, Weights: convert.FiniteWeights, SkipInvalid: true}, "dropped on the host"},
		{"no-weight-column", shapeTable(rng, s, edges.KeyInt32, labelOrds(rng, edges.KeyInt32, s.nv, true), false),
			convert.BuildOptions{Weighted: true}, "no weight column"},
	} {
		want, werr := convert.Build(ctx, c.tab, c.opts)
		got, rep, err := b.BuildGraph(ctx, c.tab, c.opts)
		if (werr == nil) != (err == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Errorf("%s: error %v, want %v", c.name, err, werr)
			continue
		}
		if rep.Device != "cpu" || !strings.Contains(rep.Reason, c.why) {
			t.Errorf("%s: built on %q because %q; want the host, because of %q", c.name, rep.Device, rep.Reason, c.why)
		}
		if err == nil {
			compareSlices(t, c.name+": offsets", got.Out.Offsets, want.Out.Offsets)
			compareSlices(t, c.name+": targets", got.Out.Targets, want.Out.Targets)
			if fmt.Sprint(got.Stats.Skipped) != fmt.Sprint(want.Stats.Skipped) {
				t.Errorf("%s: skipped %v, want %v", c.name, got.Stats.Skipped, want.Stats.Skipped)
			}
		}
	}
}

// The pieces: the scan and the radix sort against the host's.

func testDevBuild(t *testing.T, b *GPU) *devBuild {
	s, err := b.ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	d := &devBuild{b: b, s: s, owned: map[*gpu.DeviceBuffer]bool{}}
	t.Cleanup(func() {
		d.release()
		s.Destroy()
	})
	return d
}

func TestGPUScan(t *testing.T) {
	b := testGPU(t)
	d := testDevBuild(t, b)
	rng := rand.New(rand.NewPCG(optest.FreshSeed(t), 23))
	for _, n := range []int{1, 2, 255, 4095, 4096, 4097, 12345, 1 << 20, 4096*4096 + 3} {
		xs := make([]uint32, n)
		for i := range xs {
			xs[i] = uint32(rng.IntN(3))
		}
		buf, err := d.alloc(int64(n) * 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := gpu.Upload(d.s, buf, xs); err != nil {
			t.Fatal(err)
		}
		if err := d.scan(buf, int64(n)); err != nil {
			t.Fatalf("scan of %d: %v", n, err)
		}
		got := make([]uint32, n)
		if err := gpu.Download(d.s, got, buf); err != nil {
			t.Fatal(err)
		}
		want := make([]uint32, n)
		var run uint32
		for i, x := range xs {
			want[i] = run
			run += x
		}
		compareSlices(t, fmt.Sprintf("exclusive scan of %d", n), got, want)
		d.free(buf)
	}
}

func TestGPURadixSort(t *testing.T) {
	b := testGPU(t)
	d := testDevBuild(t, b)
	rng := rand.New(rand.NewPCG(optest.FreshSeed(t), 29))
	for _, n := range []int{0, 1, 2, 100, 4095, 4096, 4097, 70000, 1 << 20} {
		for _, keyBits := range []int{1, 7, 8, 13, 24, 48, 64} {
			for _, withVals := range []bool{false, true} {
				name := fmt.Sprintf("n=%d bits=%d values=%v", n, keyBits, withVals)
				keys := make([]uint64, n)
				vals := make([]uint64, n)
				for i := range keys {
					keys[i] = rng.Uint64()
					if keyBits < 64 {
						keys[i] &= 1<<keyBits - 1
					}
					if i > 0 && rng.IntN(4) == 0 {
						keys[i] = keys[rng.IntN(i)] // ties, for stability
					}
					vals[i] = uint64(i)
				}
				bufs := make([]*gpu.DeviceBuffer, 4)
				for j := range bufs {
					var err error
					if bufs[j], err = d.alloc(int64(n) * 8); err != nil {
						t.Fatal(err)
					}
				}
				if err := gpu.Upload(d.s, bufs[0], keys); err != nil {
					t.Fatal(err)
				}
				va, vb := bufs[2], bufs[3]
				if withVals {
					if err := gpu.Upload(d.s, va, vals); err != nil {
						t.Fatal(err)
					}
				} else {
					va, vb = nil, nil
				}
				sk, sv, err := d.radixSort(bufs[0], bufs[1], va, vb, int64(n), keyBits)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				order := make([]int, n)
				for i := range order {
					order[i] = i
				}
				slices.SortStableFunc(order, func(x, y int) int {
					switch {
					case keys[x] < keys[y]:
						return -1
					case keys[x] > keys[y]:
						return 1
					}
					return 0
				})
				wantKeys, wantVals := make([]uint64, n), make([]uint64, n)
				for i, o := range order {
					wantKeys[i], wantVals[i] = keys[o], vals[o]
				}
				got := make([]uint64, n)
				if n > 0 {
					if err := gpu.Download(d.s, got, sk); err != nil {
						t.Fatal(err)
					}
				}
				compareSlices(t, name+": keys", got, wantKeys)
				if withVals && n > 0 {
					if err := gpu.Download(d.s, got, sv); err != nil {
						t.Fatal(err)
					}
					compareSlices(t, name+": values (stability)", got, wantVals)
				}
				d.free(bufs...)
			}
		}
	}
}

// TestGPUStager copies through a ring of a few small slots, so that each
// slot is reused many times, from Go memory and from pinned memory.
func TestGPUStager(t *testing.T) {
	b := testGPU(t)
	st, err := newStager(b.ctx, 3, 4096+64)
	if err != nil {
		t.Fatal(err)
	}
	defer st.free()
	s, err := b.ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	rng := rand.New(rand.NewPCG(optest.FreshSeed(t), 31))
	src := make([]byte, 1<<20+123)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	pinned, err := b.ctx.AllocHost(len(src))
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Free()
	copy(pinned.Bytes(), src)
	for _, c := range []struct {
		name string
		src  []byte
	}{{"go memory", src}, {"pinned", pinned.Bytes()}} {
		dst, err := b.ctx.Alloc(int64(len(src)) + 1000)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.Memset8(s, 0xA5); err != nil {
			t.Fatal(err)
		}
		// Two pieces at odd offsets, the second before the first.
		half := len(src) / 3
		if err := st.copy(s, dst, 500+int64(half), c.src[half:]); err != nil {
			t.Fatal(err)
		}
		if err := st.copy(s, dst, 500, c.src[:half]); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, dst.Size())
		if err := dst.CopyToHost(s, got); err != nil {
			t.Fatal(err)
		}
		compareSlices(t, c.name+": staged bytes", got[500:500+len(src)], src)
		if got[499] != 0xA5 || got[500+len(src)] != 0xA5 {
			t.Errorf("%s: the copy wrote outside its range", c.name)
		}
		if err := st.copy(s, dst, dst.Size()-10, src[:11]); err == nil {
			t.Errorf("%s: a copy past the buffer's end was accepted", c.name)
		}
		dst.Free()
	}
}

// Operators on a graph built on the GPU: BFS reads the device's layouts
// without copying anything back; the others copy the edges back first;
// the CPU backend too.
func TestGPUOperatorsOnDeviceBuiltGraph(t *testing.T) {
	b := testGPU(t)
	seed := optest.FreshSeed(t)
	rng := rand.New(rand.NewPCG(seed, 37))
	s := kroneckerShape(t, 12, 16, seed)
	ctx := context.Background()
	for _, undirected := range []bool{true, false} {
		tab := shapeTable(rng, s, edges.KeyInt64, labelOrds(rng, edges.KeyInt64, s.nv, false), true)
		opts := convert.BuildOptions{Undirected: undirected, BuildIn: true, Weighted: true, Weights: convert.NonNegativeWeights}
		for ci := range tab.Chunks {
			for i, w := range tab.Chunks[ci].Weight {
				tab.Chunks[ci].Weight[i] = math.Abs(w)
			}
		}
		host, err := convert.Build(ctx, tab, opts)
		if err != nil {
			t.Fatal(err)
		}
		dev, rep, err := b.BuildGraph(ctx, tab, opts)
		if err != nil || rep.Device != "gpu" {
			t.Fatalf("undirected=%v: device build: %v (%+v)", undirected, err, rep)
		}
		src := optest.SourcesOf(host)[len(optest.SourcesOf(host))-1]
		want := run(t, operators.BFS{}, host, src, operators.Params{}).Column("depth").Int32
		for _, strategy := range []string{"enterprise", "bfs4k", "vwc"} {
			name := fmt.Sprintf("undirected=%v/bfs %s", undirected, strategy)
			r := runGPU(t, b, operators.BFS{}, dev, src, operators.Params{Strategy: strategy})
			if err := optest.ValidateBFS(host, src, r.Column("depth").Int32, r.Column("parent").Vertex, want); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if r.Transfer != 0 {
				t.Errorf("%s: copied layouts to the GPU (%v) that the build left there", name, r.Transfer)
			}
		}
		if dev.OnHost() {
			t.Errorf("undirected=%v: BFS copied the device-built graph back to the host", undirected)
		}
		wantDist := run(t, operators.SSSP{}, host, src, operators.Params{}).Column("distance").Float64
		gotDist := runGPU(t, b, operators.SSSP{}, dev, src, operators.Params{}).Column("distance").Float64
		compareSlices(t, fmt.Sprintf("undirected=%v: sssp distances", undirected), weightBits(optest.NaNUnreached(gotDist)), weightBits(optest.NaNUnreached(wantDist)))
		if !dev.OnHost() {
			t.Errorf("undirected=%v: SSSP on the GPU ran without the edges on the host", undirected)
		}
		cpu := run(t, operators.BFS{}, dev, src, operators.Params{}).Column("depth").Int32
		compareSlices(t, fmt.Sprintf("undirected=%v: cpu bfs on the device-built graph", undirected), cpu, want)

		b.Forget(dev)
		dev.Release()
		host.Release()
	}
}

// After Forget the device copies are gone: copying the edges back is an
// error, not a crash.
func TestGPUDeviceBuiltGraphAfterForget(t *testing.T) {
	b := testGPU(t)
	rng := rand.New(rand.NewPCG(optest.FreshSeed(t), 41))
	s := randomShape(rng, "random-300", 60, 300, 0, 0.1)
	g, rep, err := b.BuildGraph(context.Background(), shapeTable(rng, s, edges.KeyUint32, labelOrds(rng, edges.KeyUint32, s.nv, false), false), convert.BuildOptions{})
	if err != nil || rep.Device != "gpu" {
		t.Fatalf("device build: %v (%+v)", err, rep)
	}
	b.Forget(g)
	if err := g.Materialize(); err == nil {
		t.Error("Materialize after Forget: no error")
	}
}

func TestBuildRefusesStringKeys(t *testing.T) {
	var b GPU // no GPU needed: the refusal comes before any device call
	tab := &edges.Table{KeyType: edges.KeyString}
	if why := b.deviceBuildRefusal(tab, convert.BuildOptions{}); !strings.Contains(why, "string keys") {
		t.Errorf("string keys: refusal %q", why)
	}
	tab = &edges.Table{KeyType: edges.KeyInt64}
	if why := b.deviceBuildRefusal(tab, convert.BuildOptions{Weighted: true}); !strings.Contains(why, "no weight column") {
		t.Errorf("no weight column: refusal %q", why)
	}
}

// TestBuildBytes checks the memory estimate against the phases it sums.
func TestBuildBytes(t *testing.T) {
	const m = 1 << 20
	base := buildBytes(m, 8, false, false, false, 0, 0)
	if base < 24*m {
		t.Errorf("directed unweighted: %d bytes for %d rows, less than the merge's 24 a row", base, m)
	}
	for _, c := range []struct {
		name                     string
		keySize                  int64
		weighted, undirected, in bool
	}{{"weighted", 8, true, false, false}, {"undirected", 8, false, true, false}} {
		if got := buildBytes(m, c.keySize, c.weighted, c.undirected, c.in, 0, 0); got <= base {
			t.Errorf("%s: %d bytes, not more than the plain build's %d", c.name, got, base)
		}
	}
	// The in-edge Layout's second sort outgrows the merge where weights
	// travel with it.
	if w, in := buildBytes(m, 8, true, false, false, 0, 0), buildBytes(m, 8, true, false, true, 0, 0); in <= w {
		t.Errorf("weighted with in-edges: %d bytes, not more than without (%d)", in, w)
	}
	if buildBytes(m, 8, false, false, false, 0, 1<<24) <= base {
		t.Error("more vertices cost nothing")
	}
}

// TestGPUColumnUpload feeds an upload the table's chunks as a reader would
// (from several goroutines, in any order), then builds from it: the same
// graph as the host's; an upload that missed a chunk, or the weights, is
// dropped and the table uploaded again; one never taken frees its memory.
func TestGPUColumnUpload(t *testing.T) {
	b := testGPU(t)
	rng := rand.New(rand.NewPCG(optest.FreshSeed(t), 43))
	s := randomShape(rng, "random-30000", 5000, 30000, 0.02, 0.2)
	before := b.ctx.Allocated()
	for _, c := range []struct {
		name          string
		drop          bool // one chunk never arrives
		weightsUpload bool
		opts          convert.BuildOptions
	}{
		{"whole", false, true, convert.BuildOptions{Undirected: true, Weighted: true}},
		{"whole-unweighted-build", false, true, convert.BuildOptions{BuildIn: true}},
		{"missing-chunk", true, true, convert.BuildOptions{Weighted: true, BuildIn: true}},
		{"missing-weights", false, false, convert.BuildOptions{Weighted: true}},
	} {
		for _, kt := range intKeyTypes {
			tab := shapeTable(rng, s, kt, labelOrds(rng, kt, s.nv, rng.IntN(2) == 0), true)
			for len(tab.Chunks) < 3 { // several pieces to scramble
				tab = shapeTable(rng, s, kt, labelOrds(rng, kt, s.nv, false), true)
			}
			up := b.NewColumnUpload()
			up.Begin(tab.NumEdges(), tab.KeyType, c.weightsUpload)
			starts := make([]int64, len(tab.Chunks))
			largest := 0
			for k := 1; k < len(starts); k++ {
				starts[k] = starts[k-1] + int64(tab.Chunks[k-1].Len())
				if tab.Chunks[k].Len() > tab.Chunks[largest].Len() {
					largest = k
				}
			}
			var wg sync.WaitGroup
			for _, k := range rng.Perm(len(tab.Chunks)) {
				if c.drop && k == largest {
					continue
				}
				wg.Add(1)
				go func(at int64, ch edges.Chunk) {
					defer wg.Done()
					up.Rows(at, &ch)
				}(starts[k], tab.Chunks[k])
			}
			wg.Wait()
			up.Finish()
			name := fmt.Sprintf("%s/%v", c.name, kt)
			checkDeviceBuildFrom(t, b, name, tab, c.opts, "", up)
		}
	}
	// Never taken: Release frees the columns.
	tab := shapeTable(rng, s, edges.KeyInt64, labelOrds(rng, edges.KeyInt64, s.nv, false), true)
	up := b.NewColumnUpload()
	up.Begin(tab.NumEdges(), tab.KeyType, true)
	up.Rows(0, &tab.Chunks[0])
	up.Finish()
	up.Release()
	if got := b.ctx.Allocated(); got > before {
		t.Errorf("device memory %d after the uploads, %d before", got, before)
	}
}
