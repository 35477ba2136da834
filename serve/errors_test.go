package serve

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/gpipe/gpipe/operators"
)

// table builds a one-batch record from columns given as Go slices: int64,
// float64 or string values, nil standing for null (as *T-less any).
func table(cols map[string][]any, order ...string) arrow.RecordBatch {
	var fields []arrow.Field
	var arrs []arrow.Array
	mem := memory.DefaultAllocator
	for _, name := range order {
		vals := cols[name]
		var b array.Builder
		switch first(vals).(type) {
		case int64:
			b = array.NewInt64Builder(mem)
		case float64:
			b = array.NewFloat64Builder(mem)
		default:
			b = array.NewStringBuilder(mem)
		}
		for _, v := range vals {
			switch v := v.(type) {
			case nil:
				b.AppendNull()
			case int64:
				b.(*array.Int64Builder).Append(v)
			case float64:
				b.(*array.Float64Builder).Append(v)
			case string:
				b.(*array.StringBuilder).Append(v)
			}
		}
		arr := b.NewArray()
		b.Release()
		fields = append(fields, arrow.Field{Name: name, Type: arr.DataType(), Nullable: true})
		arrs = append(arrs, arr)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(arrs[0].Len()))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

func first(vals []any) any {
	for _, v := range vals {
		if v != nil {
			return v
		}
	}
	return nil
}

// TestBadInputs sends every kind of bad request over the wire and checks
// its status code and message, and that the server keeps serving.
func TestBadInputs(t *testing.T) {
	ts := startServer(t, Config{MaxUploadBytes: 64 << 10, MaxGraphs: 4, MaxMessageBytes: 1 << 20})
	c := dial(t, ts.addr)
	ctx := context.Background()

	good := randomEdges(2, 100, 400, true).records(false, 1)
	if _, err := put(ctx, c, pathDescriptor("good", nil), good[0].Schema(), good); err != nil {
		t.Fatal(err)
	}
	want := reference(t, good, edgeOptions{}, "cc", operators.Params{})
	defer want.Release()
	healthy := func(after string) {
		t.Helper()
		res, err := get(ctx, c, map[string]any{"graph": "good", "op": "cc"})
		if err != nil {
			t.Fatalf("after %s: %v", after, err)
		}
		defer res.release()
		if err := sameRecord(res.rec, want); err != nil {
			t.Fatalf("after %s: %v", after, err)
		}
	}
	putRec := func(d *flight.FlightDescriptor, rec arrow.RecordBatch) error {
		_, err := put(ctx, c, d, rec.Schema(), []arrow.RecordBatch{rec})
		return err
	}
	ints := []any{int64(1), int64(2), int64(3)}

	cases := []struct {
		name  string
		call  func() error
		code  codes.Code
		parts []string
	}{
		{"float keys", func() error {
			return putRec(pathDescriptor("bad", nil), table(map[string][]any{"src": {1.0, 2.0}, "dst": {2.0, 3.0}}, "src", "dst"))
		}, codes.InvalidArgument, []string{`column "src"`, "double cannot be a vertex key"}},
		{"key types differ", func() error {
			return putRec(pathDescriptor("bad", nil), table(map[string][]any{"src": ints, "dst": {"a", "b", "c"}}, "src", "dst"))
		}, codes.InvalidArgument, []string{"int64", "string", "same type"}},
		{"string weights", func() error {
			return putRec(pathDescriptor("bad", nil), table(map[string][]any{"src": ints, "dst": ints, "weight": {"a", "b", "c"}}, "src", "dst", "weight"))
		}, codes.InvalidArgument, []string{`column "weight"`, "cannot be an edge weight"}},
		{"missing column", func() error {
			return putRec(pathDescriptor("bad", nil), table(map[string][]any{"from": ints, "to": ints}, "from", "to"))
		}, codes.InvalidArgument, []string{`no source column "src" (columns: from, to)`, `the "src" option`}},
		{"null key", func() error {
			return putRec(pathDescriptor("bad", nil), table(map[string][]any{"src": {int64(1), int64(2), nil}, "dst": ints}, "src", "dst"))
		}, codes.InvalidArgument, []string{`column "src"`, "row 2", "null", `"skip_invalid": true`}},
		{"NaN weight", func() error {
			return putRec(pathDescriptor("bad", nil), table(map[string][]any{"src": ints, "dst": {int64(2), int64(3), int64(1)}, "weight": {1.0, math.NaN(), 2.0}}, "src", "dst", "weight"))
		}, codes.InvalidArgument, []string{"row 1", "NaN"}},
		{"unknown put option", func() error {
			return putRec(pathDescriptor("bad", map[string]any{"undirectd": true}), good[0])
		}, codes.InvalidArgument, []string{`unknown field "undirectd"`}},
		{"put option of the wrong type", func() error {
			return putRec(pathDescriptor("bad", map[string]any{"undirected": "yes"}), good[0])
		}, codes.InvalidArgument, []string{`"undirected" must be a JSON boolean`}},
		{"contradicting put options", func() error {
			return putRec(pathDescriptor("bad", map[string]any{"weight": "w", "unweighted": true}), good[0])
		}, codes.InvalidArgument, []string{`weight column "w"`, "unweighted"}},
		{"one column as source and destination", func() error {
			return putRec(pathDescriptor("bad", map[string]any{"dst": "src"}), good[0])
		}, codes.InvalidArgument, []string{`"src" as both the source and the destination column`}},
		{"bad graph name", func() error { return putRec(pathDescriptor("a/b", nil), good[0]) },
			codes.InvalidArgument, []string{`graph name "a/b"`}},
		{"non-ASCII graph name", func() error { return putRec(pathDescriptor("oké", nil), good[0]) },
			codes.InvalidArgument, []string{`graph name "oké" has the character 'é'`, "ASCII letters, digits and . _ - :"}},
		{"two-element path", func() error {
			return putRec(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"a", "b"}}, good[0])
		}, codes.InvalidArgument, []string{"one element"}},
		{"no descriptor", func() error { return putRec(nil, good[0]) },
			codes.InvalidArgument, []string{"DoPut needs a flight descriptor"}},
		{"path and command disagree", func() error { return putRec(pathDescriptor("a", map[string]any{"graph": "b"}), good[0]) },
			codes.InvalidArgument, []string{`path names graph "a" but its command names "b"`}},
		{"existing graph", func() error { return putRec(pathDescriptor("good", nil), good[0]) },
			codes.AlreadyExists, []string{`graph "good" exists`, `"replace": true`}},
		{"oversize upload", func() error {
			big := randomEdges(3, 1000, 20000, false).records(false, 20) // 16 KB a batch
			_, err := put(ctx, c, pathDescriptor("big", nil), big[0].Schema(), big)
			return err
		}, codes.ResourceExhausted, []string{"graph big", "--max-upload-bytes", "64 KiB", "nothing was stored"}},
		{"oversize message", func() error {
			big := randomEdges(3, 1000, 100000, false).records(false, 1) // 1.6 MB
			_, err := put(ctx, c, pathDescriptor("big", nil), big[0].Schema(), big)
			return err
		}, codes.ResourceExhausted, []string{"larger than max"}},
		{"unknown graph", func() error { _, err := get(ctx, c, map[string]any{"graph": "nope", "op": "cc"}); return err },
			codes.NotFound, []string{`graph "nope" does not exist`, "holds good"}},
		{"unknown operator", func() error { _, err := get(ctx, c, map[string]any{"graph": "good", "op": "bogus"}); return err },
			codes.InvalidArgument, []string{`unknown operator "bogus"`, "bfs, sssp"}},
		{"malformed ticket", func() error { _, err := get(ctx, c, []byte(`{"graph": "good", "op": `)); return err },
			codes.InvalidArgument, []string{"cannot read the ticket", `{"graph": "web"`}},
		{"ticket that is not an object", func() error { _, err := get(ctx, c, []byte(`"good"`)); return err },
			codes.InvalidArgument, []string{"cannot read the ticket"}},
		{"empty ticket", func() error { _, err := get(ctx, c, []byte(``)); return err },
			codes.InvalidArgument, []string{"the ticket is empty"}},
		{"ticket with more after the object", func() error { _, err := get(ctx, c, []byte(`{"graph": "good", "op": "cc"} {}`)); return err },
			codes.InvalidArgument, []string{"more after its JSON object"}},
		{"unknown ticket field", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "bfs", "sorce": 1})
			return err
		}, codes.InvalidArgument, []string{`unknown field "sorce"`}},
		{"parameter of the wrong type", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "pagerank", "damping": "high"})
			return err
		}, codes.InvalidArgument, []string{`"damping" must be a JSON number`}},
		{"bad parameter", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "pagerank", "damping": 2})
			return err
		}, codes.InvalidArgument, []string{"damping 2 must be between 0 and 1"}},
		{"parameter of another operator", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "cc", "source": 1})
			return err
		}, codes.InvalidArgument, []string{`"source" does not apply to operator cc`}},
		{"zero that would mean the default", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "pagerank", "max_iterations": 0})
			return err
		}, codes.InvalidArgument, []string{`"max_iterations" 0 is not valid`}},
		{"exchange parameter of another operator", func() error {
			_, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "cc", "tolerance": 1e-3}), good[0].Schema(), good)
			return err
		}, codes.InvalidArgument, []string{`"tolerance" does not apply to operator cc`}},
		{"no operator", func() error { _, err := get(ctx, c, map[string]any{"graph": "good"}); return err },
			codes.InvalidArgument, []string{"names no operator"}},
		{"no graph", func() error { _, err := get(ctx, c, map[string]any{"op": "cc"}); return err },
			codes.InvalidArgument, []string{"names no graph"}},
		{"no source", func() error { _, err := get(ctx, c, map[string]any{"graph": "good", "op": "bfs"}); return err },
			codes.InvalidArgument, []string{"bfs needs a source vertex", `"source"`}},
		{"source not in the graph", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "sssp", "source": 123456})
			return err
		}, codes.NotFound, []string{`source key "123456" is not a vertex`}},
		{"source of the wrong type", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "bfs", "source": "abc"})
			return err
		}, codes.InvalidArgument, []string{`source key "abc" is not a valid int64 key`}},
		{"source as a boolean", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "bfs", "source": true})
			return err
		}, codes.InvalidArgument, []string{"source must be a string or an integer"}},
		{"unknown GPU strategy", func() error {
			_, err := get(ctx, c, map[string]any{"graph": "good", "op": "bfs", "source": 1, "strategy": "magic"})
			return err
		}, codes.InvalidArgument, []string{`no GPU strategy "magic"`}},
		{"exchange without operator", func() error {
			_, err := exchange(ctx, c, cmdDescriptor(map[string]any{"undirected": true}), good[0].Schema(), good)
			return err
		}, codes.InvalidArgument, []string{"names no operator"}},
		{"exchange with bad keys", func() error {
			rec := table(map[string][]any{"src": {1.0}, "dst": {2.0}}, "src", "dst")
			_, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "cc"}), rec.Schema(), []arrow.RecordBatch{rec})
			return err
		}, codes.InvalidArgument, []string{"cannot be a vertex key"}},
		{"exchange with source not in the graph", func() error {
			_, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "bfs", "source": -5}), good[0].Schema(), good)
			return err
		}, codes.NotFound, []string{`source key "-5"`}},
		{"GetFlightInfo of an unknown graph", func() error { _, err := c.GetFlightInfo(ctx, pathDescriptor("nope", nil)); return err },
			codes.NotFound, []string{`graph "nope" does not exist`}},
		{"drop of an unknown graph", func() error { _, err := action(ctx, c, "drop", "nope"); return err },
			codes.NotFound, []string{`graph "nope" does not exist`}},
		{"unknown action", func() error { _, err := action(ctx, c, "explode", "good"); return err },
			codes.InvalidArgument, []string{`unknown action "explode"`, "drop"}},
		{"unimplemented call", func() error { _, err := c.PollFlightInfo(ctx, pathDescriptor("good", nil)); return err },
			codes.Unimplemented, nil},
	}
	for _, tc := range cases {
		err := tc.call()
		wantCode(t, err, tc.code, tc.name)
		wantMessage(t, err, tc.parts...)
		healthy(tc.name)
	}

	// Refused uploads left nothing behind: no graph, no memory, no claim on
	// the name.
	if got := listGraphs(t, c, ""); len(got) != 1 {
		t.Fatalf("graphs after refused uploads: %+v", got)
	}
	if len(ts.svc.graphs.pending) != 0 {
		t.Errorf("names still claimed: %v", ts.svc.graphs.pending)
	}
	info := listGraphs(t, c, "")[0]
	if used := ts.svc.mem.inUse(); used != info.MemoryBytes {
		t.Errorf("memory in use %d, want the one graph's %d", used, info.MemoryBytes)
	}

	// What the refusals said can be fixed: column names, skip_invalid,
	// replace, a smaller upload under the refused name.
	if err := putRec(pathDescriptor("renamed", map[string]any{"src": "from", "dst": "to"}), table(map[string][]any{"from": ints, "to": {int64(2), int64(3), int64(1)}}, "from", "to")); err != nil {
		t.Errorf("put with column names: %v", err)
	}
	nullKey := table(map[string][]any{"src": {int64(1), int64(2), nil}, "dst": {int64(2), int64(3), int64(1)}}, "src", "dst")
	skipped, err := put(ctx, c, pathDescriptor("big", map[string]any{"skip_invalid": true}), nullKey.Schema(), []arrow.RecordBatch{nullKey})
	if err != nil || skipped.SkippedRows != 1 || skipped.Edges != 2 {
		t.Errorf("put with skip_invalid: %+v, %v", skipped, err)
	}
	replaced, err := put(ctx, c, pathDescriptor("good", map[string]any{"replace": true, "undirected": true}), good[0].Schema(), good)
	if err != nil || replaced.Directed {
		t.Errorf("put with replace: %+v, %v", replaced, err)
	}

	// Negative weights: stored (sswp takes them), refused by sssp.
	neg := table(map[string][]any{"src": ints, "dst": {int64(2), int64(3), int64(1)}, "weight": {1.0, -2.0, 3.0}}, "src", "dst", "weight")
	if err := putRec(pathDescriptor("neg", nil), neg); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctx, c, map[string]any{"graph": "neg", "op": "sswp", "source": 1}); err != nil {
		t.Errorf("sswp on negative weights: %v", err)
	}
	_, err = get(ctx, c, map[string]any{"graph": "neg", "op": "sssp", "source": 1})
	wantCode(t, err, codes.InvalidArgument, "sssp on negative weights")
	wantMessage(t, err, `graph "neg" has negative edge weights (the smallest is -2)`, "sswp")

	// The graph limit: good, renamed, big, neg are 4.
	err = putRec(pathDescriptor("fifth", nil), good[0])
	wantCode(t, err, codes.ResourceExhausted, "a fifth graph")
	wantMessage(t, err, "4 of 4 graph slots taken (--max-graphs): 4 stored graphs; drop a graph")
	doAction(t, c, "drop", "neg")
	if err := putRec(pathDescriptor("fifth", nil), good[0]); err != nil {
		t.Errorf("put after a drop: %v", err)
	}

	// One log line per call, with its status.
	logs := ts.logs.String()
	for _, line := range []string{
		`msg=rpc method=DoGet graph=good op=bogus rows=0 duration_s=`,
		`status=InvalidArgument peer=127.0.0.1:`,
		`error="unknown operator \"bogus\"`,
		`method=DoPut graph=big op="" rows=0 rows_in=`,
		`status=ResourceExhausted`,
		`method=DoGet graph=good op=cc rows=100`,
		` compute_s=`, // where a query's time went
		` upload_s=`,
		` build_s=`,
	} {
		if !strings.Contains(logs, line) {
			t.Errorf("the log lacks %q", line)
		}
	}
}

// TestMemoryLimit checks --max-memory-bytes: an upload that would take the
// server over it is refused, and fits again once a graph is dropped. The
// limit has room for one upload's messages in flight and its table of
// about 48 KiB, or for its build (table and graph), not for a second
// upload beside the first graph.
func TestMemoryLimit(t *testing.T) {
	cfg := Config{MaxMessageBytes: 32 << 10, MaxUploadBytes: -1}
	cfg.MaxMemoryBytes = cfg.messageRoom() + 54<<10
	ts := startServer(t, cfg)
	c := dial(t, ts.addr)
	ctx := context.Background()
	recs := randomEdges(4, 1000, 3000, false).records(false, 3)
	info, err := put(ctx, c, pathDescriptor("one", nil), recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if info.MemoryBytes > 60<<10 || info.MemoryBytes < 40<<10 {
		t.Fatalf("the test expects a graph of about 50 KiB, not %d bytes", info.MemoryBytes)
	}
	_, err = put(ctx, c, pathDescriptor("two", nil), recs[0].Schema(), recs)
	wantCode(t, err, codes.ResourceExhausted, "a second graph over the memory limit")
	wantMessage(t, err, "--max-memory-bytes", "drop a graph")
	if used := ts.svc.mem.inUse(); used != info.MemoryBytes {
		t.Errorf("memory in use %d after the refusal, want %d", used, info.MemoryBytes)
	}
	doAction(t, c, "drop", "one")
	if _, err := put(ctx, c, pathDescriptor("two", nil), recs[0].Schema(), recs); err != nil {
		t.Errorf("put after the drop: %v", err)
	}
}
