package serve

import (
	"context"
	"fmt"
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

// TestProgramOnGPU checks that a vertex program is placed as the built-ins
// are, on a GPU stood in for by fakeGPU: it runs there when it fits; on a
// GPU too small for the graph it is refused under --backend gpu and runs
// on the CPU under auto, saying why.
func TestProgramOnGPU(t *testing.T) {
	ctx := context.Background()
	e := randomEdges(7, 400, 2400, false)
	recs := e.records(false, 2)
	text, err := os.ReadFile("../examples/programs/bfs.vp")
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, recs, edgeOptions{}, "bfs", operators.Params{Source: "5"})
	defer want.Release()
	for _, tc := range []struct {
		choice   string
		capacity int64
		backend  string // "" for refused
	}{{"gpu", 1 << 30, "gpu"}, {"auto", 1 << 30, "gpu"}, {"gpu", 1000, ""}, {"auto", 1000, "cpu"}} {
		dev := newFakeGPU(tc.capacity, 100, 1)
		ts := startServer(t, Config{Backend: tc.choice, gpu: dev})
		c := dial(t, ts.addr)
		if _, err := put(ctx, c, pathDescriptor("g", edgeOptions{}), recs[0].Schema(), recs); err != nil {
			t.Fatal(err)
		}
		runs := dev.runs
		res, err := get(ctx, c, map[string]any{"graph": "g", "program": string(text), "source": 5})
		name := fmt.Sprintf("%s, %d bytes", tc.choice, tc.capacity)
		if tc.backend == "" {
			wantCode(t, err, codes.FailedPrecondition, name)
			wantMessage(t, err, "the query was refused", "program bfs", "GPU memory")
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.meta.Backend != tc.backend || (tc.backend == "gpu") != (dev.runs == runs+1) {
			t.Errorf("%s: backend %q (%s), %d runs on the GPU", name, res.meta.Backend, res.meta.BackendNote, dev.runs-runs)
		}
		if tc.backend == "cpu" && !strings.Contains(res.meta.BackendNote, "GPU memory") {
			t.Errorf("%s: note %q, want why not the GPU", name, res.meta.BackendNote)
		}
		if got := res.rec.Column(1); got.Len() != want.Column(1).Len() || got.ValueStr(3) != want.Column(1).ValueStr(3) {
			t.Errorf("%s: depths differ from bfs's", name)
		}
		res.release()
	}
}
