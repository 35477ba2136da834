package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/gpipe/gpipe/operators"
)

// queries are one query per operator, with parameters where they have any.
func queries(source string) []map[string]any {
	return []map[string]any{
		{"op": "bfs", "source": source},
		{"op": "sssp", "source": source},
		{"op": "sswp", "source": source},
		{"op": "pagerank"},
		{"op": "pagerank", "damping": 0.7, "tolerance": 1e-6},
		{"op": "cc"},
	}
}

// paramsOf is a query's parameters as the library takes them.
func paramsOf(t testing.TB, q map[string]any) operators.Params {
	var p struct {
		operators.Params
		Op string `json:"op"`
	}
	if err := json.Unmarshal(mustJSON(q), &p); err != nil {
		t.Fatal(err)
	}
	return p.Params
}

// TestEndToEnd puts graphs with int64 and string keys, runs every operator
// on them with DoGet and DoExchange, and compares each result with the
// library's on the same table; then lists, describes and drops them.
func TestEndToEnd(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()

	for _, keys := range []string{"int64", "string"} {
		t.Run(keys, func(t *testing.T) {
			str := keys == "string"
			edges := randomEdges(1, 300, 1500, true)
			recs := edges.records(str, 3)
			schema := recs[0].Schema()
			source := key(edges.src[0], str)

			for _, eo := range []edgeOptions{{}, {Undirected: true}} {
				tree := newEdgeIndex(edges, str, eo.Undirected)
				name := fmt.Sprintf("g-%s-undirected-%v", keys, eo.Undirected)
				// The path form, with options in the command.
				info, err := put(ctx, c, pathDescriptor(name, eo), schema, recs)
				if err != nil {
					t.Fatalf("put %s: %v", name, err)
				}
				if info.Graph != name || info.InputRows != 1500 || info.KeyType != keys || info.Directed == eo.Undirected || !info.Weighted {
					t.Errorf("put %s: %+v", name, info)
				}
				for _, q := range queries(source) {
					want := reference(t, recs, eo, q["op"].(string), paramsOf(t, q))
					ticket := map[string]any{"graph": name}
					for k, v := range q {
						ticket[k] = v
					}
					res, err := get(ctx, c, ticket)
					if err != nil {
						t.Fatalf("get %v: %v", ticket, err)
					}
					if err := sameRecord(res.rec, want, tree); err != nil {
						t.Errorf("get %v: %v", ticket, err)
					}
					if res.meta.Op != q["op"] || res.meta.Backend != "cpu" || res.meta.Vertices != info.Vertices || res.rec.NumRows() != int64(info.Vertices) {
						t.Errorf("get %v: metadata %+v, graph %+v", ticket, res.meta, info)
					}
					res.release()

					// The same job in one exchange: edges in, result out.
					opts := map[string]any{"undirected": eo.Undirected}
					for k, v := range q {
						opts[k] = v
					}
					res, err = exchange(ctx, c, cmdDescriptor(opts), schema, recs)
					if err != nil {
						t.Fatalf("exchange %v: %v", opts, err)
					}
					if err := sameRecord(res.rec, want, tree); err != nil {
						t.Errorf("exchange %v: %v", opts, err)
					}
					if res.meta.InputRows != 1500 {
						t.Errorf("exchange %v: metadata %+v", opts, res.meta)
					}
					res.release()
					want.Release()
				}
			}
		})
	}

	// The catalog: ListFlights, GetFlightInfo, GetSchema.
	infos := listGraphs(t, c, "")
	if len(infos) != 4 || infos[0].Graph != "g-int64-undirected-false" || infos[3].Graph != "g-string-undirected-true" {
		t.Fatalf("ListFlights: %+v", infos)
	}
	for _, info := range infos {
		if info.Vertices == 0 || info.Edges == 0 || info.MemoryBytes == 0 || info.Backend != "cpu" || info.BuildDevice != "cpu" || info.Queries != 0 {
			t.Errorf("ListFlights: %+v", info)
		}
	}
	if got := listGraphs(t, c, "g-string"); len(got) != 2 {
		t.Errorf("ListFlights with prefix g-string: %+v", got)
	}
	fi, err := c.GetFlightInfo(ctx, pathDescriptor("g-string-undirected-false", nil))
	if err != nil {
		t.Fatal(err)
	}
	schema, err := flight.DeserializeSchema(fi.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if schema.String() != arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.BinaryTypes.String}, {Name: "dst", Type: arrow.BinaryTypes.String}, {Name: "weight", Type: arrow.PrimitiveTypes.Float64}}, nil).String() {
		t.Errorf("GetFlightInfo schema: %v", schema)
	}
	if fi.TotalRecords != infos[2].Edges || fi.TotalBytes != infos[2].MemoryBytes {
		t.Errorf("GetFlightInfo: %v", fi)
	}

	// A query's FlightInfo: the result's schema and a ticket that runs it.
	fi, err = c.GetFlightInfo(ctx, cmdDescriptor(map[string]any{"graph": "g-int64-undirected-true", "op": "bfs", "source": 3}))
	if err != nil {
		t.Fatal(err)
	}
	schema, _ = flight.DeserializeSchema(fi.Schema, nil)
	if len(fi.Endpoint) != 1 || schema.NumFields() != 3 || schema.Field(0).Name != "vertex" || schema.Field(1).Name != "depth" {
		t.Fatalf("GetFlightInfo of a query: %v, schema %v", fi, schema)
	}
	stream, err := c.DoGet(ctx, fi.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	res, err := readResult(stream)
	if err != nil {
		t.Fatal(err)
	}
	if !res.rec.Schema().Equal(schema) || res.rec.NumRows() != fi.TotalRecords {
		t.Errorf("DoGet of the FlightInfo's ticket: %v rows, schema %v", res.rec.NumRows(), res.rec.Schema())
	}
	res.release()
	sr, err := c.GetSchema(ctx, cmdDescriptor(map[string]any{"graph": "g-int64-undirected-true", "op": "pagerank"}))
	if err != nil {
		t.Fatal(err)
	}
	if schema, _ = flight.DeserializeSchema(sr.Schema, nil); schema.Field(1).Name != "rank" {
		t.Errorf("GetSchema: %v", schema)
	}

	// ListActions, then drop.
	acts, err := c.ListActions(ctx, &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := acts.Recv(); err != nil || a.Type != "drop" {
		t.Fatalf("ListActions: %v, %v", a, err)
	}
	for _, body := range []string{"g-int64-undirected-true", `{"graph": "g-string-undirected-true"}`} {
		out := doAction(t, c, "drop", body)
		if out["dropped"] != true {
			t.Errorf("drop %s: %v", body, out)
		}
	}
	if got := listGraphs(t, c, ""); len(got) != 2 {
		t.Errorf("after drop: %+v", got)
	}
	_, err = get(ctx, c, map[string]any{"graph": "g-int64-undirected-true", "op": "cc"})
	wantCode(t, err, codes.NotFound, "get of a dropped graph")
	wantMessage(t, err, `graph "g-int64-undirected-true" does not exist`, "g-int64-undirected-false")
	if used := ts.svc.mem.inUse(); used != infos[0].MemoryBytes+infos[2].MemoryBytes {
		t.Errorf("memory in use %d, want the two graphs' %d", used, infos[0].MemoryBytes+infos[2].MemoryBytes)
	}
}

// listGraphs is ListFlights' graphs' descriptions.
func listGraphs(t testing.TB, c flight.Client, prefix string) []graphInfo {
	t.Helper()
	stream, err := c.ListFlights(context.Background(), &flight.Criteria{Expression: []byte(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var infos []graphInfo
	for {
		fi, err := stream.Recv()
		if err == io.EOF {
			return infos
		}
		if err != nil {
			t.Fatal(err)
		}
		var info graphInfo
		if err := json.Unmarshal(fi.AppMetadata, &info); err != nil {
			t.Fatal(err)
		}
		if len(fi.FlightDescriptor.GetPath()) != 1 || fi.FlightDescriptor.Path[0] != info.Graph {
			t.Errorf("FlightInfo descriptor %v for graph %s", fi.FlightDescriptor, info.Graph)
		}
		infos = append(infos, info)
	}
}

// doAction runs an action and decodes its one JSON result.
func doAction(t testing.TB, c flight.Client, typ, body string) map[string]any {
	t.Helper()
	out, err := action(context.Background(), c, typ, body)
	if err != nil {
		t.Fatalf("action %s %s: %v", typ, body, err)
	}
	return out
}

func action(ctx context.Context, c flight.Client, typ, body string) (map[string]any, error) {
	stream, err := c.DoAction(ctx, &flight.Action{Type: typ, Body: []byte(body)})
	if err != nil {
		return nil, err
	}
	r, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		return nil, err
	}
	for {
		if _, err := stream.Recv(); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
	}
}

// TestResultBatches checks that results come in batches of bounded size:
// the server's 64Ki rows by default, fewer when a ticket asks.
func TestResultBatches(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	// A chain of 70,000 vertices: two batches at the default size.
	const n = 70000
	var e edgeList
	for i := int64(0); i < n-1; i++ {
		e.src, e.dst = append(e.src, i), append(e.dst, i+1)
	}
	recs := e.records(true, 2)
	if _, err := put(ctx, c, cmdDescriptor(map[string]any{"graph": "chain", "undirected": true}), recs[0].Schema(), recs); err != nil {
		t.Fatal(err)
	}
	want := reference(t, recs, edgeOptions{Undirected: true}, "bfs", operators.Params{Source: "v0"})
	defer want.Release()
	for _, tc := range []struct{ batchRows, batches int }{{0, 2}, {30000, 3}, {1 << 30, 2}} {
		res, err := get(ctx, c, map[string]any{"graph": "chain", "op": "bfs", "source": "v0", "batch_rows": tc.batchRows})
		if err != nil {
			t.Fatal(err)
		}
		if res.batches != tc.batches {
			t.Errorf("batch_rows %d: %d batches, want %d", tc.batchRows, res.batches, tc.batches)
		}
		if err := sameRecord(res.rec, want); err != nil {
			t.Errorf("batch_rows %d: %v", tc.batchRows, err)
		}
		res.release()
	}

	// An empty graph: a schema and no rows.
	empty := e.records(false, 1)
	empty[0] = empty[0].NewSlice(0, 0)
	info, err := put(ctx, c, pathDescriptor("empty", nil), empty[0].Schema(), nil)
	if err != nil || info.Vertices != 0 || info.Edges != 0 {
		t.Fatalf("empty put: %+v, %v", info, err)
	}
	res, err := get(ctx, c, map[string]any{"graph": "empty", "op": "pagerank"})
	if err != nil {
		t.Fatal(err)
	}
	if res.rec.NumRows() != 0 || res.rec.Schema().Field(1).Name != "rank" {
		t.Errorf("pagerank on an empty graph: %v", res.rec)
	}
	res.release()
}

// TestDescriptorMessage sends the descriptor in a message of its own ahead
// of the schema, as the C++ client (and so pyarrow) does in DoExchange.
func TestDescriptorMessage(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	recs := randomEdges(7, 100, 400, false).records(false, 2)
	want := reference(t, recs, edgeOptions{Undirected: true}, "cc", operators.Params{})
	defer want.Release()

	ex, err := c.DoExchange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Send(&flight.FlightData{FlightDescriptor: cmdDescriptor(map[string]any{"op": "cc", "undirected": true})}); err != nil {
		t.Fatal(err)
	}
	w := flight.NewRecordWriter(ex, ipc.WithSchema(recs[0].Schema()))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	ex.CloseSend()
	res, err := readResult(ex)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRecord(res.rec, want); err != nil {
		t.Error(err)
	}
	res.release()

	up, err := c.DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Send(&flight.FlightData{FlightDescriptor: pathDescriptor("g", map[string]any{"undirected": true})}); err != nil {
		t.Fatal(err)
	}
	w = flight.NewRecordWriter(up, ipc.WithSchema(recs[0].Schema()))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	up.CloseSend()
	if pr, err := up.Recv(); err != nil || !strings.Contains(string(pr.AppMetadata), `"graph":"g"`) {
		t.Fatalf("put: %v, %v", pr, err)
	}
}

// TestPutWeights32: a stored graph with integer weights holds the CPU's
// sssp's uint32 copy of them from the upload on, counted in its memory
// (so that the budget counts what queries read, and no query changes a
// stored graph); weights with fractions have none.
func TestPutWeights32(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	e := randomEdges(3, 200, 1000, true) // weights 1 to 9
	for _, fractions := range []bool{false, true} {
		if fractions {
			for i := range e.weight {
				e.weight[i] += 0.5
			}
		}
		name := fmt.Sprintf("w-fractions-%v", fractions)
		recs := e.records(false, 2)
		info, err := put(ctx, c, pathDescriptor(name, edgeOptions{}), recs[0].Schema(), recs)
		if err != nil {
			t.Fatal(err)
		}
		sg, err := ts.svc.graphs.acquire(name)
		if err != nil {
			t.Fatal(err)
		}
		held := sg.g.Bytes()
		w := sg.g.Weights32() // made at upload: the graph's memory stays as counted
		if got := sg.g.Bytes(); got != held || info.MemoryBytes != held {
			t.Errorf("%s: memory_bytes %d, the graph %d, and %d once asked for its uint32 weights", name, info.MemoryBytes, held, got)
		}
		if (len(w) == int(sg.g.NumEdges())) != !fractions || (w == nil) != fractions {
			t.Errorf("%s: %d uint32 weights for %d edges", name, len(w), sg.g.NumEdges())
		}
		ts.svc.graphs.release(sg)
	}
}
