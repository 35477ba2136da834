package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// The catalog: ListFlights and GetFlightInfo describe the stored graphs
// (one FlightInfo each: descriptor path [name], the edge columns' schema,
// total_records the edges, total_bytes the memory, and app_metadata the
// graph's JSON description); GetFlightInfo with a query answers the
// query's result schema and a ticket for it; DoAction "drop" frees a graph.

// ListFlights lists the graphs whose names start with the criteria's
// expression (all of them when it is empty).
func (s *service) ListFlights(c *flight.Criteria, stream flight.FlightService_ListFlightsServer) error {
	infos, schemas := s.graphs.list(string(c.GetExpression()))
	for i := range infos {
		fi, err := graphFlightInfo(infos[i], schemas[i])
		if err != nil {
			return err
		}
		if err := stream.Send(fi); err != nil {
			return err
		}
	}
	logOf(stream.Context()).rows = int64(len(infos))
	return nil
}

// GetFlightInfo describes a graph (descriptor path [name] or command
// {"graph": name}), or a query on one (a command holding a ticket's JSON):
// then the FlightInfo has the result's schema and one endpoint whose ticket
// runs the query, so that generic Flight clients can GetFlightInfo, then
// DoGet.
func (s *service) GetFlightInfo(ctx context.Context, d *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	q, err := s.describedQuery(ctx, d)
	if err != nil {
		return nil, err
	}
	if q.Op == "" && q.Program == "" {
		info, schema, err := s.graphs.get(q.Graph)
		if err != nil {
			return nil, err
		}
		return graphFlightInfo(info, schema)
	}
	schema, vertices, err := s.querySchema(q)
	if err != nil {
		return nil, err
	}
	tkt, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, memory.DefaultAllocator),
		FlightDescriptor: d,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     int64(vertices),
		TotalBytes:       -1,
	}, nil
}

// GetSchema is GetFlightInfo's schema alone.
func (s *service) GetSchema(ctx context.Context, d *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	q, err := s.describedQuery(ctx, d)
	if err != nil {
		return nil, err
	}
	var schema *arrow.Schema
	if q.Op == "" && q.Program == "" {
		_, schema, err = s.graphs.get(q.Graph)
	} else {
		schema, _, err = s.querySchema(q)
	}
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, memory.DefaultAllocator)}, nil
}

// describedQuery reads a GetFlightInfo or GetSchema descriptor.
func (s *service) describedQuery(ctx context.Context, d *flight.FlightDescriptor) (query, error) {
	var q query
	err := readDescriptor(d, "GetFlightInfo", &q, infoFix)
	logOf(ctx).names(q.Graph, q.Op)
	switch {
	case err != nil:
		return q, err
	case q.Graph == "":
		return q, usererr.New(usererr.Usage, "the descriptor names no graph", infoFix)
	}
	return q, checkName(q.Graph)
}

// querySchema checks a query as DoGet would, short of running it, and
// says its result's schema and row count.
func (s *service) querySchema(q query) (*arrow.Schema, int, error) {
	op, err := q.prepare(s.cfg.MaxIterations)
	if err != nil {
		return nil, 0, err
	}
	sg, err := s.graphs.acquire(q.Graph)
	if err != nil {
		return nil, 0, err
	}
	defer s.graphs.release(sg)
	if op.Spec().NeedsSource {
		if _, err := sg.g.Keys.Find("source", q.Params.Source); err != nil {
			return nil, 0, err
		}
	}
	return resultSchema(sg.g, op), sg.info.Vertices, nil
}

// graphFlightInfo is a stored graph's FlightInfo.
func graphFlightInfo(info graphInfo, schema *arrow.Schema) (*flight.FlightInfo, error) {
	meta, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, memory.DefaultAllocator),
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{info.Graph}},
		TotalRecords:     info.Edges,
		TotalBytes:       info.MemoryBytes,
		AppMetadata:      meta,
	}, nil
}

// actions are the DoAction types, for ListActions.
var actions = []*flight.ActionType{
	{Type: "drop", Description: `free a graph: body "NAME" or {"graph": "NAME"}; its memory is freed when the queries running on it end`},
}

// ListActions lists the actions DoAction takes.
func (s *service) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range actions {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return nil
}

// DoAction runs an action; "drop" is the only one.
func (s *service) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	call := logOf(stream.Context())
	switch a.GetType() {
	case "drop":
		name, err := actionGraph(a.GetBody())
		call.names(name, "")
		if err != nil {
			return err
		}
		running, err := s.graphs.drop(name)
		if err != nil {
			return err
		}
		body, err := json.Marshal(map[string]any{"graph": name, "dropped": true, "queries_running": running})
		if err != nil {
			return err
		}
		return stream.Send(&flight.Result{Body: body})
	}
	var types []string
	for _, t := range actions {
		types = append(types, t.Type)
	}
	return status.Errorf(codes.InvalidArgument, "unknown action %s; the actions are: %s", echo.Quote(a.GetType()), strings.Join(types, ", "))
}

// actionGraph reads the graph name of an action's body: the name itself,
// or {"graph": NAME}.
func actionGraph(body []byte) (string, error) {
	const fix = `send the graph's name, or {"graph": "NAME"}, as the action's body`
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		var v struct {
			Graph string `json:"graph"`
		}
		if err := decodeJSON("the action's body", body, &v, fix); err != nil {
			return "", err
		}
		body = []byte(v.Graph)
	}
	if len(body) == 0 {
		return "", usererr.New(usererr.Usage, "the action names no graph", fix)
	}
	if err := checkName(string(body)); err != nil {
		return string(body), err
	}
	return string(body), nil
}
