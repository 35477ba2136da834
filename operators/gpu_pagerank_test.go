package operators

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
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
	list := shapes(t)
	var star, kron, dis shape
	for _, s := range list {
		switch s.name {
		case "star":
			star = s
		case "kronecker-12-seed3":
			kron = s
		case "disconnected":
			dis = s
		}
	}
	thresholds := []int64{1, 3, 512, 1024, 5000}
	for _, s := range []shape{star, kron, dis} {
		for _, directed := range []bool{true, false} {
			name := fmt.Sprintf("%s/directed=%v", s.name, directed)
			g := buildGraph(t, s, directed, false, edges.KeyInt64)
			for _, th := range thresholds {
				wantV, wantS := prOutliers(g.In(), th)
				gotV, gotS := b.inOutliers(g, th)
				if !slices.Equal(gotV, wantV) || !slices.Equal(gotS, wantS) {
					t.Fatalf("%s threshold %d: %d outliers and %d segments kept, prOutliers has %d and %d", name, th, len(gotV), len(gotS), len(wantV), len(wantS))
				}
				againV, againS := b.inOutliers(g, th)
				if len(gotV) > 0 && (&againV[0] != &gotV[0] || &againS[0] != &gotS[0]) {
					t.Fatalf("%s threshold %d: counted again, not kept", name, th)
				}
			}
			if got := len(b.deviceGraph(g).outliers); got != len(thresholds) {
				t.Fatalf("%s: %d thresholds kept, want %d", name, got, len(thresholds))
			}
			for _, p := range []Params{{}, {Tolerance: 1e-6}, {DeferOutliers: 3}, {Strategy: "vwc", DeferOutliers: 7}, {Strategy: "warpseg"}, {DeferOutliers: -1}} {
				if kept, fresh := (PageRank{}).gpuBytes(b, g, p), (PageRank{}).gpuBytes(nil, g, p); kept != fresh {
					t.Fatalf("%s %+v: %d plan bytes with the kept outliers, %d counted afresh", name, p, kept, fresh)
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
	g1 := buildGraph(t, star, true, false, edges.KeyInt64)
	g2 := buildGraph(t, kron, true, false, edges.KeyInt64)
	v1, _ := b.inOutliers(g1, 3)
	v2, _ := b.inOutliers(g2, 3)
	if w1, _ := prOutliers(g1.In(), 3); !slices.Equal(v1, w1) {
		t.Fatalf("star: the outliers of another graph")
	}
	if w2, _ := prOutliers(g2.In(), 3); !slices.Equal(v2, w2) {
		t.Fatalf("kronecker: the outliers of another graph")
	}
	if v, s := b.inOutliers(g1, 0); v != nil || s != nil || len(b.deviceGraph(g1).outliers) != 1 {
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
// layout, even in released memory that held other bits.
func TestAllValid(t *testing.T) {
	for _, n := range []int64{1, 7, 8, 9, 31, 32, 33, 1000, 1 << 16} {
		dirty := &Result{}
		bits := resultSlice[byte](dirty, int(bitmapBytes(n)))
		for i := range bits {
			bits[i] = 0xa5
		}
		dirty.Release()
		if err := allValidBits(allValid(&Result{}, n), int(n)); err != nil {
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
	g := benchGraph(b)
	b.Run("afresh", func(b *testing.B) {
		for b.Loop() {
			PageRank{}.gpuBytes(nil, g, Params{})
		}
	})
	b.Run("kept", func(b *testing.B) {
		gpu := NewGPU(nil)
		for b.Loop() {
			PageRank{}.gpuBytes(gpu, g, Params{})
		}
	})
}
