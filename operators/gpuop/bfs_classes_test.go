package gpuop

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
)

// refClassNibbles is what ent_classes makes of the rows offs, written
// plainly: four bits a vertex, eight a word, bits 0-1 the degree class and
// bit 2 (classHasRows) set when the vertex has rows.
func refClassNibbles(offs []int64) []uint32 {
	n := len(offs) - 1
	out := make([]uint32, 4*((n+31)/32))
	for v := range n {
		if d := offs[v+1] - offs[v]; d > 0 {
			out[v/8] |= (uint32(DegreeClass(d)) | classHasRows) << (4 * (v % 8))
		}
	}
	return out
}

// classHasRows is CLASS_HAS_ROWS in kernels/bfs_enterprise.cu.
const classHasRows = 4

// refHubBitmap is the hubs above degree as a bitmap, written plainly.
func refHubBitmap(offs []int64, degree int64) []uint32 {
	n := len(offs) - 1
	out := make([]uint32, (n+31)/32)
	for v := range n {
		if degree > 0 && offs[v+1]-offs[v] > degree {
			out[v/32] |= 1 << (v % 32)
		}
	}
	return out
}

// TestHubBitmap: the host's hub bitmap (the parts' of a partitioned graph)
// marks exactly the vertices above the threshold, none without one; degrees
// at every class boundary, vertex counts that are not multiples of 32.
func TestHubBitmap(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, n := range []int{0, 1, 31, 32, 33, 1000, 100_003} {
		offs := randomOffsets(rng, n)
		for _, degree := range []int64{0, 31, 255} {
			got, want := hubBitmap(offs, degree), refHubBitmap(offs, degree)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("n=%d, degree %d (seed %d): hub bitmap differs from the rule", n, degree, seed)
			}
		}
	}
}

// randomOffsets are the rows of n vertices with degrees at every class
// boundary and in between.
func randomOffsets(rng *rand.Rand, n int) []int64 {
	boundaries := []int64{0, 1, 31, 32, 255, 256, 65535, 65536, 70000}
	offs := make([]int64, n+1)
	for v := range n {
		d := boundaries[rng.IntN(len(boundaries))]
		if rng.IntN(2) == 0 {
			d = rng.Int64N(300)
		}
		offs[v+1] = offs[v] + d
	}
	return offs
}

// TestGPUEnterpriseVertexBits: the Classes and hubs that ent_classes and
// ent_hub_bits make on the GPU, out and in, directed and not, and a part's
// (whose hubs are the whole graph's, made on the host), are the plain
// rule's; on a Kronecker graph and on a star of 41 vertices (not a
// multiple of 32: the last word's tail).
func TestGPUEnterpriseVertexBits(t *testing.T) {
	b := testGPU(t)
	seed := optest.FreshSeed(t)
	var star []optest.Edge
	for v := int64(1); v <= 40; v++ {
		star = append(star, optest.Edge{U: 0, V: v, W: 1}, optest.Edge{U: v, V: v%40 + 1, W: 1})
	}
	for _, s := range []optest.Shape{{Name: "kronecker-14", Edges: optest.KroneckerEdges(t, 14, 16, seed)}, {Name: "star-41", Edges: star}} {
		for _, directed := range []bool{true, false} {
			g := optest.BuildGraph(t, s, directed, false, edges.KeyInt64)
			name := fmt.Sprintf("%s/directed=%v", s.Name, directed)
			checkVertexBits(t, b, name, g, g)
			// The part's hubs come from the host: not the ones the GPU made
			// for the whole graph, which Forget drops from the cache.
			b.Forget(g)
			parts, err := g.Partitions(3, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkVertexBits(t, b, name+"/part 1 of 3", parts[1].Graph, g)
			for _, p := range parts {
				b.Forget(p.Graph)
			}
			b.Forget(g)
		}
	}
}

func checkVertexBits(t *testing.T, b *GPU, name string, g, whole *convert.Graph) {
	t.Helper()
	e, err := NewEntSearch(b, g, whole)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer e.Free()
	degree, _ := EnterpriseHubs(whole.Degrees())
	for _, c := range []struct {
		what string
		buf  *gpu.DeviceBuffer
		want []uint32
	}{
		{"out Classes", e.outClass, refClassNibbles(g.Out.Offsets)},
		{"in Classes", e.inClass, refClassNibbles(g.In().Offsets)},
		{"hubs", e.HubMask, refHubBitmap(whole.Out.Offsets, degree)},
	} {
		got := make([]uint32, len(c.want))
		if err := gpu.Download(e.Stream, got, c.buf); err != nil {
			t.Fatalf("%s: %s: %v", name, c.what, err)
		}
		if err := e.Stream.Synchronize(); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: %s: word %d is %#x, the rule's %#x", name, c.what, i, got[i], c.want[i])
			}
		}
	}
	if degree == 0 {
		t.Errorf("%s: the test graph has no hubs", name)
	}
}
