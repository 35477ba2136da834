package serve

import (
	"context"
	"strings"
	"testing"
)

// A weighted operator's result on a graph uploaded without weights says
// in its metadata's notes that every weight was 1, in the words a Flight
// client acts on; an upload that said "unweighted" means it, and has no
// note; DoExchange notes the same.
func TestResultNotesMissingWeights(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	recs := randomEdges(5, 50, 200, false).records(false, 1)
	schema := recs[0].Schema()
	if _, err := put(ctx, c, pathDescriptor("plain", edgeOptions{}), schema, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := put(ctx, c, pathDescriptor("meant", edgeOptions{Unweighted: true}), schema, recs); err != nil {
		t.Fatal(err)
	}
	want := `sssp used weight 1 for every edge, as the input has no weight column "weight": its distances count edges; name the weight column with the "weight" option, or put it with "unweighted": true to say weight 1 is meant`
	for _, tc := range []struct {
		graph, op string
		want      string
	}{
		{"plain", "sssp", want},
		{"meant", "sssp", ""},
		{"plain", "bfs", ""},
	} {
		res, err := get(ctx, c, map[string]any{"graph": tc.graph, "op": tc.op, "source": 1})
		if err != nil {
			t.Fatal(err)
		}
		res.release()
		if got := strings.Join(res.meta.Notes, "|"); got != tc.want {
			t.Errorf("%s on %s: notes %q, want %q", tc.op, tc.graph, got, tc.want)
		}
	}
	for _, unweighted := range []bool{false, true} {
		res, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "sssp", "source": 1, "unweighted": unweighted}), schema, recs)
		if err != nil {
			t.Fatal(err)
		}
		res.release()
		if got := strings.Join(res.meta.Notes, "|"); (got == want) == unweighted {
			t.Errorf("exchange, unweighted %v: notes %q", unweighted, got)
		}
	}
}
