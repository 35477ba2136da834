package serve

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// pagerank's "weighted" over Flight: a stored graph's weights used when the
// query asks, a note (in the client's words) when it does not; DoExchange
// reads the weight column for it, notes its absence, and refuses it with
// "unweighted".
func TestWeightedPageRankFlight(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	recs := randomEdges(9, 60, 400, true).records(false, 2)
	schema := recs[0].Schema()
	if _, err := put(ctx, c, pathDescriptor("w", edgeOptions{}), schema, recs); err != nil {
		t.Fatal(err)
	}
	ranks := func(r *result) []float64 {
		return slices.Clone(r.rec.Column(r.rec.Schema().FieldIndices("rank")[0]).(*array.Float64).Float64Values())
	}
	ignored := `pagerank ignored weight column "weight": unweighted pagerank (networkx.pagerank(G, weight=None)) counts every out-edge of a vertex the same; put "weighted": true in the query to weigh them by the column, as networkx.pagerank(G) does by default`
	plain, err := get(ctx, c, map[string]any{"graph": "w", "op": "pagerank"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.release()
	if got := strings.Join(plain.meta.Notes, "|"); got != ignored {
		t.Errorf("unweighted on a weighted graph: notes %q", got)
	}
	weighted, err := get(ctx, c, map[string]any{"graph": "w", "op": "pagerank", "weighted": true})
	if err != nil {
		t.Fatal(err)
	}
	defer weighted.release()
	if len(weighted.meta.Notes) != 0 || !strings.Contains(weighted.meta.Strategy, "weighted") || slices.Equal(ranks(plain), ranks(weighted)) {
		t.Errorf("weighted: notes %q, strategy %q, the unweighted ranks %v", weighted.meta.Notes, weighted.meta.Strategy, slices.Equal(ranks(plain), ranks(weighted)))
	}
	ex, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "pagerank", "weighted": true}), schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.release()
	if !slices.Equal(ranks(ex), ranks(weighted)) {
		t.Error("the exchange's weighted ranks are not the stored graph's")
	}

	bare := randomEdges(9, 60, 400, false).records(false, 1)
	ex2, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "pagerank", "weighted": true}), bare[0].Schema(), bare)
	if err != nil {
		t.Fatal(err)
	}
	defer ex2.release()
	if got := strings.Join(ex2.meta.Notes, "|"); !strings.Contains(got, `pagerank used weight 1 for every edge`) || !strings.Contains(got, `leave "weighted" out of the query`) {
		t.Errorf("weighted without weights: notes %q", got)
	}
	if _, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "pagerank", "weighted": true, "unweighted": true}), schema, recs); err == nil || !strings.Contains(err.Error(), `"weighted": true with "unweighted": true`) {
		t.Errorf("weighted and unweighted: %v", err)
	}
	if _, err := get(ctx, c, map[string]any{"graph": "w", "op": "bfs", "source": 1, "weighted": true}); err == nil || !strings.Contains(err.Error(), `"weighted" does not apply to operator bfs`) {
		t.Errorf("weighted bfs: %v", err)
	}
}
