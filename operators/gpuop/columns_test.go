package gpuop

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
)

// TestGPUBFSColumns checks the columns every GPU BFS strategy makes in
// Arrow's Layout against the values it downloads, on fresh random graphs of
// every shape with 4-byte, 8-byte and string keys (for which the parents
// are left to the host); a second pass with the column kernels on one block
// (every warp loops) and the results downloaded through pinned memory in
// pieces of a page.
func TestGPUBFSColumns(t *testing.T) {
	b := testGPU(t)
	checkBFSColumns(t, b)
	b.tune.columnsMaxBlocks, b.tune.stageAll, b.tune.stageMax = 1, true, 4096
	defer func() { b.tune = tuning{} }()
	checkBFSColumns(t, b)
}

func checkBFSColumns(t *testing.T, b *GPU) {
	t.Helper()
	for _, kt := range []edges.KeyType{edges.KeyInt32, edges.KeyInt64, edges.KeyString} {
		for _, s := range optest.GPUShapes(t) {
			g := optest.BuildGraph(t, s, true, false, kt)
			for _, src := range optest.SourcesOf(g) {
				for _, strategy := range []string{"enterprise", "bfs4k", "vwc"} {
					r := runGPU(t, b, operators.BFS{}, g, src, operators.Params{Strategy: strategy})
					if err := checkArrowColumns(g, r); err != nil {
						t.Errorf("%s keys %v from %d, %s: %v", s.Name, kt, src, r.Strategy, err)
					}
				}
			}
			b.Forget(g)
		}
	}
}

// checkArrowColumns compares a BFS result's Keys and Valid with its values.
func checkArrowColumns(g *convert.Graph, r *operators.Result) error {
	n := g.NumVertices()
	bit := func(valid []byte, i int) bool { return valid[i/8]>>(i%8)&1 == 1 }
	depth, parent := r.Column("depth"), r.Column("parent")
	if want := int(bitmapBytes(int64(n))); len(depth.Valid) != want {
		return fmt.Errorf("depth bitmap of %d bytes, want %d", len(depth.Valid), want)
	}
	for i := 0; i < 8*len(depth.Valid); i++ {
		if want := i < n && depth.Int32[i] >= 0; bit(depth.Valid, i) != want {
			return fmt.Errorf("row %d: depth valid %v, want %v", i, !want, want)
		}
	}
	w := int(keyWidth(g))
	if w == 0 {
		if parent.Keys != nil || parent.Valid != nil {
			return fmt.Errorf("parents mapped on the device for string keys")
		}
		return nil
	}
	if len(parent.Keys) != n*w || len(parent.Valid) != len(depth.Valid) {
		return fmt.Errorf("parent keys of %d bytes and bitmap of %d, want %d and %d", len(parent.Keys), len(parent.Valid), n*w, len(depth.Valid))
	}
	keys := integerKeys(g)
	zero := make([]byte, w)
	for i := 0; i < 8*len(parent.Valid); i++ {
		if i >= n {
			if bit(parent.Valid, i) {
				return fmt.Errorf("bit %d past the last row set", i)
			}
			continue
		}
		id := parent.Vertex[i]
		want := zero
		if id != convert.NoVertex {
			want = keys[int(id)*w : int(id+1)*w]
		}
		if bit(parent.Valid, i) != (id != convert.NoVertex) || !bytes.Equal(parent.Keys[i*w:(i+1)*w], want) {
			return fmt.Errorf("row %d: parent %d mapped to % x (valid %v), want % x", i, id, parent.Keys[i*w:(i+1)*w], bit(parent.Valid, i), want)
		}
	}
	return nil
}
