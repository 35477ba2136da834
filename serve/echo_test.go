package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounds on what a refused call makes, whatever the client sent: its
// status message, and its one log line.
const (
	maxTestMessage = 600
	maxTestLogLine = 1200
)

// TestLongValuesAreCut sends a 1 MiB value in every field a client fills
// (graph names, operators, parameters, source keys, column names, unknown
// fields, action types and bodies, descriptor paths) and checks that the
// status message and the call's log line stay short: every echoed value is
// cut to a short prefix. A graph name that cannot be valid is refused,
// saying the rule, before any lookup.
func TestLongValuesAreCut(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	good := randomEdges(2, 100, 400, true).records(false, 1)
	if _, err := put(ctx, c, pathDescriptor("good", nil), good[0].Schema(), good); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 1<<20)
	digits := strings.Repeat("9", 1<<20)
	// A table whose column names are 1 MiB each.
	hugeCols := table(map[string][]any{huge + "1": {int64(1)}, huge + "2": {int64(2)}}, huge+"1", huge+"2")

	getT := func(ticket any) func() error {
		return func() error { _, err := get(ctx, c, ticket); return err }
	}
	info := func(d *flight.FlightDescriptor) func() error {
		return func() error { _, err := c.GetFlightInfo(ctx, d); return err }
	}
	schema := func(d *flight.FlightDescriptor) func() error {
		return func() error { _, err := c.GetSchema(ctx, d); return err }
	}
	putT := func(d *flight.FlightDescriptor, recs []arrow.RecordBatch) func() error {
		return func() error { _, err := put(ctx, c, d, recs[0].Schema(), recs); return err }
	}
	exchangeT := func(opts any) func() error {
		return func() error { _, err := exchange(ctx, c, cmdDescriptor(opts), good[0].Schema(), good); return err }
	}
	actionT := func(typ, body string) func() error {
		return func() error { _, err := action(ctx, c, typ, body); return err }
	}
	raw := func(s string) []byte { return []byte(s) }

	cases := []struct {
		name  string
		call  func() error
		code  codes.Code
		parts []string
	}{
		{"DoGet graph", getT(map[string]any{"graph": huge, "op": "cc"}), codes.InvalidArgument, []string{"longer than 128 bytes", "ASCII letters"}},
		{"DoGet op", getT(map[string]any{"graph": "good", "op": huge}), codes.InvalidArgument, []string{"unknown operator"}},
		{"DoGet source", getT(map[string]any{"graph": "good", "op": "bfs", "source": huge}), codes.InvalidArgument, []string{"source key"}},
		{"DoGet source of digits", getT(raw(`{"graph": "good", "op": "bfs", "source": ` + digits + `}`)), codes.InvalidArgument, []string{"out of the type's range"}},
		{"DoGet source as an array", getT(raw(`{"graph": "good", "op": "bfs", "source": ["` + huge + `"]}`)), codes.InvalidArgument, []string{"source must be a string or an integer"}},
		{"DoGet strategy", getT(map[string]any{"graph": "good", "op": "bfs", "source": 1, "strategy": huge}), codes.InvalidArgument, []string{"no GPU strategy"}},
		{"DoGet unknown field", getT(map[string]any{"graph": "good", "op": "cc", huge: 1}), codes.InvalidArgument, []string{"unknown field"}},
		{"DoGet number too large", getT(raw(`{"graph": "good", "op": "pagerank", "max_iterations": ` + digits + `}`)), codes.InvalidArgument, []string{`"max_iterations" must be a JSON integer`}},
		{"DoGet string for a number", getT(map[string]any{"graph": "good", "op": "pagerank", "damping": huge}), codes.InvalidArgument, []string{`"damping" must be a JSON number`}},
		{"DoGet ticket that is not JSON", getT(raw(huge)), codes.InvalidArgument, []string{"cannot read the ticket"}},
		{"GetFlightInfo path", info(pathDescriptor(huge, nil)), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"GetFlightInfo command", info(cmdDescriptor(map[string]any{"graph": huge})), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"GetFlightInfo query op", info(cmdDescriptor(map[string]any{"graph": "good", "op": huge})), codes.InvalidArgument, []string{"unknown operator"}},
		{"GetFlightInfo query source", info(cmdDescriptor(map[string]any{"graph": "good", "op": "bfs", "source": huge})), codes.InvalidArgument, []string{"source key"}},
		{"GetFlightInfo path of two", info(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{huge, huge}}), codes.InvalidArgument, []string{"one element"}},
		{"GetFlightInfo path and command disagree", info(pathDescriptor("good", map[string]any{"graph": huge})), codes.InvalidArgument, []string{"path names graph"}},
		{"GetSchema path", schema(pathDescriptor(huge, nil)), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"GetSchema query strategy", schema(cmdDescriptor(map[string]any{"graph": "good", "op": "bfs", "source": 1, "strategy": huge})), codes.InvalidArgument, []string{"no GPU strategy"}},
		{"DoPut path", putT(pathDescriptor(huge, nil), good), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"DoPut command", putT(cmdDescriptor(map[string]any{"graph": huge}), good), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"DoPut source column", putT(pathDescriptor("g2", map[string]any{"src": huge}), good), codes.InvalidArgument, []string{"no source column"}},
		{"DoPut weight column", putT(pathDescriptor("g2", map[string]any{"weight": huge}), good), codes.InvalidArgument, []string{"no weight column"}},
		{"DoPut weight and unweighted", putT(pathDescriptor("g2", map[string]any{"weight": huge, "unweighted": true}), good), codes.InvalidArgument, []string{"unweighted"}},
		{"DoPut one column twice", putT(pathDescriptor("g2", map[string]any{"src": huge, "dst": huge}), good), codes.InvalidArgument, []string{"both the source and the destination"}},
		{"DoPut columns of the upload", putT(pathDescriptor("g2", nil), []arrow.RecordBatch{hugeCols}), codes.InvalidArgument, []string{`no source column "src"`}},
		{"DoPut columns named in the options", putT(pathDescriptor("g2", map[string]any{"src": huge + "1", "dst": huge + "1x"}), []arrow.RecordBatch{hugeCols}), codes.InvalidArgument, []string{"no destination column"}},
		{"DoExchange graph", exchangeT(map[string]any{"graph": huge, "op": "cc"}), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"DoExchange op", exchangeT(map[string]any{"op": huge}), codes.InvalidArgument, []string{"unknown operator"}},
		{"DoExchange source", exchangeT(map[string]any{"op": "bfs", "source": huge}), codes.InvalidArgument, []string{"source key"}},
		{"DoExchange weight column", exchangeT(map[string]any{"op": "sssp", "source": 1, "weight": huge}), codes.InvalidArgument, []string{"no weight column"}},
		{"DoAction drop", actionT("drop", huge), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"DoAction drop as JSON", actionT("drop", `{"graph": "`+huge+`"}`), codes.InvalidArgument, []string{"longer than 128 bytes"}},
		{"DoAction unknown field", actionT("drop", `{"`+huge+`": 1}`), codes.InvalidArgument, []string{"unknown field"}},
		{"DoAction type", actionT(huge, "good"), codes.InvalidArgument, []string{"unknown action"}},
	}
	for _, tc := range cases {
		before := len(ts.logs.String())
		err := tc.call()
		msg := status.Convert(err).Message()
		if len(msg) > maxTestMessage {
			t.Errorf("%s: a message of %d bytes: %.300s...", tc.name, len(msg), msg)
		} else {
			wantCode(t, err, tc.code, tc.name)
			wantMessage(t, err, tc.parts...)
		}
		logged := ts.logs.String()[before:]
		if !strings.Contains(logged, "msg=rpc") {
			t.Errorf("%s: no log line", tc.name)
		}
		if len(logged) > maxTestLogLine {
			t.Errorf("%s: a log line of %d bytes: %.300s...", tc.name, len(logged), logged)
		}
	}
}

// TestNamesThatCannotBeValid checks that a graph name that breaks the rule
// is InvalidArgument saying the rule in every call that names a graph, not
// NotFound.
func TestNamesThatCannotBeValid(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	for _, name := range []string{"a b", "oké", "٣", "-x", "x\x00"} {
		_, err := get(ctx, c, map[string]any{"graph": name, "op": "cc"})
		wantCode(t, err, codes.InvalidArgument, "DoGet "+name)
		wantMessage(t, err, "graph name", "ASCII letters, digits and . _ - :")
		_, err = c.GetFlightInfo(ctx, pathDescriptor(name, nil))
		wantCode(t, err, codes.InvalidArgument, "GetFlightInfo "+name)
		_, err = c.GetSchema(ctx, cmdDescriptor(map[string]any{"graph": name, "op": "cc"}))
		wantCode(t, err, codes.InvalidArgument, "GetSchema "+name)
		_, err = action(ctx, c, "drop", name)
		wantCode(t, err, codes.InvalidArgument, "drop "+name)
	}
}
