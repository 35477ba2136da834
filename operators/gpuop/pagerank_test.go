package gpuop

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators"
)

// The host side of a GPU PageRank query (issue 17): what the backend keeps
// per graph, and the ranks' bitmap. No GPU needed: a backend without a
// device keeps its graphs' host-side entries all the same.

// TestInOutliersKept: the outliers the backend keeps for a graph are
// prOutliers' for its in-edges, one entry per graph and threshold, the
// same lists on every later call, gone with the graph's layouts (Forget,
// Close); the pagerank plans' bytes are those counted afresh.
func TestInOutliersKept(t *testing.T) {
	b := NewGPU(nil)
	list := optest.Shapes(t)
	var star, kron, dis optest.Shape
	for _, s := range list {
		switch s.Name {
		case "star":
			star = s
		case "kronecker-12-seed3":
			kron = s
		case "disconnected":
			dis = s
		}
	}
	thresholds := []int64{1, 3, 512, 1024, 5000}
	for _, s := range []optest.Shape{star, kron, dis} {
		for _, directed := range []bool{true, false} {
			name := fmt.Sprintf("%s/directed=%v", s.Name, directed)
			g := optest.BuildGraph(t, s, directed, false, edges.KeyInt64)
			for _, th := range thresholds {
				wantV, wantS := prOutliers(g.In(), th)
				gotV, gotS := b.InOutliers(g, th)
				if !slices.Equal(gotV, wantV) || !slices.Equal(gotS, wantS) {
					t.Fatalf("%s threshold %d: %d outliers and %d segments kept, prOutliers has %d and %d", name, th, len(gotV), len(gotS), len(wantV), len(wantS))
				}
				againV, againS := b.InOutliers(g, th)
				if len(gotV) > 0 && (&againV[0] != &gotV[0] || &againS[0] != &gotS[0]) {
					t.Fatalf("%s threshold %d: counted again, not kept", name, th)
				}
			}
			if got := len(b.deviceGraph(g).outliers); got != len(thresholds) {
				t.Fatalf("%s: %d thresholds kept, want %d", name, got, len(thresholds))
			}
			for _, p := range []operators.Params{{}, {Tolerance: 1e-6}, {DeferOutliers: 3}, {Strategy: "vwc", DeferOutliers: 7}, {Strategy: "warpseg"}, {DeferOutliers: -1}} {
				if kept, fresh := pageRankBytes(b, g, p), pageRankBytes(nil, g, p); !slices.Equal(kept, fresh) {
					t.Fatalf("%s %+v: %v plan bytes with the kept outliers, %v counted afresh", name, p, kept, fresh)
				}
			}
			b.Forget(g)
			b.mu.Lock()
			_, left := b.graphs[g]
			b.mu.Unlock()
			if left {
				t.Fatalf("%s: the graph's entry outlived Forget", name)
			}
		}
	}

	// Two graphs keep their own lists; a threshold of 0 (deferring off)
	// keeps nothing; Close drops every graph's.
	g1 := optest.BuildGraph(t, star, true, false, edges.KeyInt64)
	g2 := optest.BuildGraph(t, kron, true, false, edges.KeyInt64)
	v1, _ := b.InOutliers(g1, 3)
	v2, _ := b.InOutliers(g2, 3)
	if w1, _ := prOutliers(g1.In(), 3); !slices.Equal(v1, w1) {
		t.Fatalf("star: the outliers of another graph")
	}
	if w2, _ := prOutliers(g2.In(), 3); !slices.Equal(v2, w2) {
		t.Fatalf("kronecker: the outliers of another graph")
	}
	if v, s := b.InOutliers(g1, 0); v != nil || s != nil || len(b.deviceGraph(g1).outliers) != 1 {
		t.Fatalf("threshold 0: %d outliers, %d entries kept", len(v), len(b.deviceGraph(g1).outliers))
	}
	dg := b.deviceGraph(g1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if len(b.graphs) != 0 || dg.outliers != nil {
		t.Fatalf("after Close: %d graphs, %d lists kept", len(b.graphs), len(dg.outliers))
	}
}

// TestAllValid: the bitmap of rows that are all valid has Column.Valid's
// Layout, even in released memory that held other bits.
func TestAllValid(t *testing.T) {
	for _, n := range []int64{1, 7, 8, 9, 31, 32, 33, 1000, 1 << 16} {
		dirty := &resultMem{}
		bits := resultSlice[byte](dirty, int(bitmapBytes(n)))
		for i := range bits {
			bits[i] = 0xa5
		}
		dirty.release()
		if err := optest.AllValidBits(allValid(&resultMem{}, n), int(n)); err != nil {
			t.Errorf("%d rows: %v", n, err)
		}
	}
}

// BenchmarkPageRankPlanBytes is the host's work on a pagerank query's plan
// bytes (the placement's Need, Fits, choosePlan: three times a query)
// with the outliers counted afresh, as before issue 17, and kept by the
// backend:
//
//	GPIPE_BENCH_SCALE=20 go test ./operators -run XXX -bench PageRankPlanBytes -count 6
func BenchmarkPageRankPlanBytes(b *testing.B) {
	g := optest.BenchGraph(b)
	b.Run("afresh", func(b *testing.B) {
		for b.Loop() {
			pageRankBytes(nil, g, operators.Params{})
		}
	})
	b.Run("kept", func(b *testing.B) {
		gpu := NewGPU(nil)
		for b.Loop() {
			pageRankBytes(gpu, g, operators.Params{})
		}
	})
}

// pageRankBytes are the bytes of each of pagerank's strategies on g with
// the outliers b keeps (nil: counted afresh).
func pageRankBytes(b *GPU, g *convert.Graph, p operators.Params) []int64 {
	var out []int64
	for _, s := range pageRankTable.strategies {
		if s.check("pagerank", p) == nil {
			out = append(out, s.bytes(b, g, p))
		}
	}
	return out
}
