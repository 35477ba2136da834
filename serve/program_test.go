package serve

import (
	"context"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/gpipe/gpipe/operators"
)

// TestProgramQuery runs a vertex program sent in a DoGet ticket: its
// result is the built-in bfs's depths; a bad program is InvalidArgument
// naming its line and column, and the server answers the next query.
func TestProgramQuery(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	e := randomEdges(3, 300, 1500, false)
	recs := e.records(false, 2)
	if _, err := put(ctx, c, pathDescriptor("g", edgeOptions{}), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile("../examples/programs/bfs.vp")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(text), "src.level + 1", "src.level + 1.5", 1)
	res, err := get(ctx, c, map[string]any{"graph": "g", "program": bad, "source": 5})
	wantCode(t, err, codes.InvalidArgument, "a program that does not check")
	wantMessage(t, err, "the query's program, line 16: column 44", "not an integer")
	res.release()
	_, err = get(ctx, c, map[string]any{"graph": "g", "program": string(text), "op": "bfs", "source": 5})
	wantCode(t, err, codes.InvalidArgument, "a program and an op")

	res, err = get(ctx, c, map[string]any{"graph": "g", "program": string(text), "source": 5})
	if err != nil {
		t.Fatal(err)
	}
	defer res.release()
	want := reference(t, recs, edgeOptions{}, "bfs", operators.Params{Source: "5"})
	defer want.Release()
	got, wantDepth := res.rec.Column(1), want.Column(1)
	if res.rec.Schema().Field(1).Name != "depth" || got.Len() != wantDepth.Len() {
		t.Fatalf("result %v, want a depth column of %d rows", res.rec.Schema(), wantDepth.Len())
	}
	for i := 0; i < got.Len(); i++ {
		if got.IsNull(i) != wantDepth.IsNull(i) || !got.IsNull(i) && got.ValueStr(i) != wantDepth.ValueStr(i) {
			t.Fatalf("row %d: depth %s, bfs's %s", i, got.ValueStr(i), wantDepth.ValueStr(i))
		}
	}
}
