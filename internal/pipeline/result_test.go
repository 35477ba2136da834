package pipeline

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
)

// TestUnreached checks the count of null first-column values for each
// column type, on results longer than one worker's share: negative depths,
// NaN distances, NoVertex components.
func TestUnreached(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 1000, 200_003, 3*countPiece + 17} {
		depth, dist, comp := make([]int32, n), make([]float64, n), make([]uint32, n)
		want := 0
		for i := 0; i < n; i++ {
			if rng.IntN(10) == 0 {
				want++
				depth[i], dist[i], comp[i] = -1-rng.Int32N(1<<30), math.NaN(), convert.NoVertex
			} else {
				depth[i], dist[i], comp[i] = rng.Int32N(1<<30), rng.Float64(), rng.Uint32N(convert.NoVertex)
			}
		}
		for _, c := range []operators.Column{
			{Name: "depth", Type: operators.Int32Column, Int32: depth},
			{Name: "distance", Type: operators.Float64Column, Float64: dist},
			{Name: "component", Type: operators.VertexColumn, Vertex: comp},
		} {
			r := &Result{Result: &operators.Result{Columns: []operators.Column{c}}}
			if got := r.Unreached(); got != want {
				t.Errorf("%d rows of %s: %d unreached, want %d", n, c.Name, got, want)
			}
		}
	}
}

// TestRowsWithDeviceColumns: the batches of a result whose columns a GPU
// made in Arrow's layout (operators.Column's Keys and Valid, emulated here)
// equal those the host makes from the values alone, for rows that start a
// byte of the bitmaps and rows that do not, with int64 and int32 keys; and
// so do those of float64 columns with a bitmap, all valid (a GPU
// PageRank's) or not.
func TestRowsWithDeviceColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 1000
	for _, wide := range []bool{true, false} {
		keys := &convert.VertexKeys{Type: edges.KeyInt64, ArrowType: arrow.PrimitiveTypes.Int64, Int64: make([]int64, n)}
		if !wide {
			keys = &convert.VertexKeys{Type: edges.KeyInt32, ArrowType: arrow.PrimitiveTypes.Int32, Int32: make([]int32, n)}
		}
		for i := 0; i < n; i++ {
			if wide {
				keys.Int64[i] = int64(i)<<35 - 7
			} else {
				keys.Int32[i] = int32(3*i - 900)
			}
		}
		depth, parent := make([]int32, n), make([]uint32, n)
		rank, dist := make([]float64, n), make([]float64, n)
		for i := range depth {
			depth[i], parent[i] = int32(rng.IntN(9)), uint32(rng.IntN(n))
			rank[i], dist[i] = rng.Float64(), rng.Float64()
			if rng.IntN(7) == 0 {
				depth[i], parent[i], dist[i] = -1, convert.NoVertex, math.NaN()
			}
		}
		g := &Graph{Graph: &convert.Graph{Out: convert.CSR{Offsets: make([]int64, n+1)}, Keys: keys}}
		host := &Result{Graph: g, Result: &operators.Result{Columns: []operators.Column{
			{Name: "depth", Type: operators.Int32Column, Int32: depth},
			{Name: "parent", Type: operators.VertexColumn, Vertex: parent},
			{Name: "rank", Type: operators.Float64Column, Float64: rank},
			{Name: "distance", Type: operators.Float64Column, Float64: dist},
		}}}
		dev := &Result{Graph: g, Result: &operators.Result{Columns: []operators.Column{
			{Name: "depth", Type: operators.Int32Column, Int32: depth, Valid: deviceBitmap(n, func(i int) bool { return depth[i] >= 0 })},
			{Name: "parent", Type: operators.VertexColumn, Vertex: parent, Keys: deviceKeys(keys, parent),
				Valid: deviceBitmap(n, func(i int) bool { return parent[i] != convert.NoVertex })},
			{Name: "rank", Type: operators.Float64Column, Float64: rank, Valid: deviceBitmap(n, func(int) bool { return true })},
			{Name: "distance", Type: operators.Float64Column, Float64: dist, Valid: deviceBitmap(n, func(i int) bool { return dist[i] == dist[i] })},
		}}}
		if got, want := dev.Unreached(), host.Unreached(); got != want {
			t.Errorf("wide %v: %d unreached from the device's bitmap, %d from the values", wide, got, want)
		}
		for _, r := range [][2]int{{0, n}, {8, 520}, {8, 525}, {3, 77}, {992, n}, {997, n}, {16, 16}} {
			want, got := host.Rows(memory.DefaultAllocator, r[0], r[1]), dev.Rows(memory.DefaultAllocator, r[0], r[1])
			if !array.RecordEqual(want, got) {
				t.Errorf("wide %v, rows %v: the device's columns give another batch", wide, r)
			}
			// Rows that start a byte wrap the device's keys (no gather), with
			// the bitmap's bits past the rows cleared.
			parentData := got.Column(2).Data()
			if values := parentData.Buffers()[1].Bytes(); r[0]%8 == 0 && r[1] > r[0] &&
				&values[0] != &dev.Columns[1].Keys[r[0]*len(values)/(r[1]-r[0])] {
				t.Errorf("wide %v, rows %v: parents gathered on the host, not the device's keys", wide, r)
			}
			if bits := parentData.Buffers()[0]; bits != nil && (r[1]-r[0])%8 != 0 {
				last := bits.Bytes()[(r[1]-r[0])/8]
				if last>>((r[1]-r[0])%8) != 0 {
					t.Errorf("wide %v, rows %v: bits past the rows set (%08b)", wide, r, last)
				}
			}
			for i := range got.Columns() {
				if got.Column(i).NullN() != want.Column(i).NullN() {
					t.Errorf("wide %v, rows %v, column %d: %d nulls, want %d", wide, r, i, got.Column(i).NullN(), want.Column(i).NullN())
				}
			}
			want.Release()
			got.Release()
		}
	}
}

// deviceBitmap is a validity bitmap as kernels/columns.cu writes it: whole
// 32-bit words, the bits past n clear.
func deviceBitmap(n int, valid func(i int) bool) []byte {
	bits := make([]byte, 4*((n+31)/32))
	for i := 0; i < n; i++ {
		if valid(i) {
			bits[i/8] |= 1 << (i % 8)
		}
	}
	return bits
}

// deviceKeys is ids mapped to keys as kernels/columns.cu does it: 0 for
// no vertex.
func deviceKeys(k *convert.VertexKeys, ids []uint32) []byte {
	var out []byte
	for _, id := range ids {
		switch {
		case k.Type == edges.KeyInt64 && id == convert.NoVertex:
			out = binary.LittleEndian.AppendUint64(out, 0)
		case k.Type == edges.KeyInt64:
			out = binary.LittleEndian.AppendUint64(out, uint64(k.Int64[id]))
		case id == convert.NoVertex:
			out = binary.LittleEndian.AppendUint32(out, 0)
		default:
			out = binary.LittleEndian.AppendUint32(out, uint32(k.Int32[id]))
		}
	}
	return out
}

// TestRowsTrustValid: a column's bitmap, where a run made it, is what the
// batches say (the values are not tested for nulls again): a NaN the
// bitmap calls valid stays a value.
func TestRowsTrustValid(t *testing.T) {
	const n = 64
	keys := &convert.VertexKeys{Type: edges.KeyInt64, ArrowType: arrow.PrimitiveTypes.Int64, Int64: make([]int64, n)}
	g := &Graph{Graph: &convert.Graph{Out: convert.CSR{Offsets: make([]int64, n+1)}, Keys: keys}}
	x := make([]float64, n)
	x[9] = math.NaN()
	r := &Result{Graph: g, Result: &operators.Result{Columns: []operators.Column{
		{Name: "rank", Type: operators.Float64Column, Float64: x, Valid: deviceBitmap(n, func(int) bool { return true })},
	}}}
	rec := r.Rows(memory.DefaultAllocator, 8, n)
	defer rec.Release()
	if nulls := rec.Column(1).NullN(); nulls != 0 {
		t.Fatalf("%d nulls where the bitmap has none", nulls)
	}
	if r.Unreached() != 0 {
		t.Fatalf("Unreached %d where the bitmap has no null", r.Unreached())
	}
}

// BenchmarkRowsRank is the host's work on the batches of a GPU PageRank's
// result on Kronecker 22 (2,395,814 ranks, in the server's batches of
// 65,536 rows), with the validity bitmap made from the ranks (NaN tests)
// and read from the run's (operators.Column.Valid); Unreached included, as
// a Flight DoGet counts it:
//
//	go test . -run XXX -bench RowsRank -count 6
func BenchmarkRowsRank(b *testing.B) {
	const n, batch = 2395814, 65536
	rng := rand.New(rand.NewPCG(1, 2))
	keys := &convert.VertexKeys{Type: edges.KeyInt64, ArrowType: arrow.PrimitiveTypes.Int64, Int64: make([]int64, n)}
	rank := make([]float64, n)
	for i := range rank {
		keys.Int64[i], rank[i] = int64(i), rng.Float64()/n
	}
	g := &Graph{Graph: &convert.Graph{Out: convert.CSR{Offsets: make([]int64, n+1)}, Keys: keys}}
	for _, c := range []struct {
		name  string
		valid []byte
	}{{"scan", nil}, {"bitmap", deviceBitmap(n, func(int) bool { return true })}} {
		r := &Result{Graph: g, Result: &operators.Result{Columns: []operators.Column{
			{Name: "rank", Type: operators.Float64Column, Float64: rank, Valid: c.valid},
		}}}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if r.Unreached() != 0 {
					b.Fatal("nulls among the ranks")
				}
				for lo := 0; lo < n; lo += batch {
					r.Rows(memory.DefaultAllocator, lo, min(lo+batch, n)).Release()
				}
			}
		})
	}
}
