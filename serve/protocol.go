package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/gpipe/gpipe/ingest/arrowipc"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// The JSON a client sends: the options of an upload (in a DoPut or
// DoExchange descriptor's command), and queries (a DoGet ticket, a
// GetFlightInfo command, the operator part of a DoExchange command). Field
// names follow `gpipe run`'s flags with underscores; unknown fields are
// errors, so that a typo does not silently fall back to a default.

// edgeOptions say how an uploaded edge table is read and built.
type edgeOptions struct {
	// Graph names the graph (DoPut: required, unless the descriptor is a
	// path; DoExchange: optional, for logs and messages).
	Graph string `json:"graph,omitempty"`
	// Src, Dst and Weight name the columns (defaults src, dst, weight).
	// Naming Weight makes the column required; by default it is read when
	// present, and every weight is 1 without it.
	Src    string `json:"src,omitempty"`
	Dst    string `json:"dst,omitempty"`
	Weight string `json:"weight,omitempty"`
	// Unweighted ignores any weight column.
	Unweighted bool `json:"unweighted,omitempty"`
	// Undirected makes every edge count in both directions.
	Undirected bool `json:"undirected,omitempty"`
	// SkipInvalid drops rows with null keys or invalid weights, counting
	// them, instead of failing the upload.
	SkipInvalid bool `json:"skip_invalid,omitempty"`
}

func (o *edgeOptions) graphName() *string { return &o.Graph }

// check refuses options that contradict each other.
func (o *edgeOptions) check() error {
	if o.Weight != "" && o.Unweighted {
		return usererr.New(usererr.Usage, fmt.Sprintf("the options name a weight column %s but ask for an unweighted graph", echo.Quote(o.Weight)),
			`drop "weight" or "unweighted"`)
	}
	cols := edges.Columns{Src: o.Src, Dst: o.Dst, Weight: o.Weight}.WithDefaults()
	if cols.Src == cols.Dst {
		return usererr.New(usererr.Usage, fmt.Sprintf("the options name %s as both the source and the destination column", echo.Quote(cols.Src)),
			`name two different columns in "src" and "dst"`)
	}
	return nil
}

// ingestOptions are the read options for o; weights says whether the
// weight column is read at all.
func (o *edgeOptions) ingestOptions(weights bool) edges.Options {
	return edges.Options{
		Columns: edges.Columns{
			Src: o.Src, Dst: o.Dst, Weight: o.Weight,
			WeightExplicit: o.Weight != "",
			ReadWeight:     weights && !o.Unweighted,
		},
		SkipInvalid: o.SkipInvalid,
	}
}

// putOptions are a DoPut descriptor's options.
type putOptions struct {
	edgeOptions
	// Replace replaces a stored graph of the same name when the upload
	// succeeds, where the default is to refuse the upload.
	Replace bool `json:"replace,omitempty"`
}

// query is an operator run on a graph: a DoGet ticket.
type query struct {
	Graph string `json:"graph"`
	Op    string `json:"op"`
	// Program is a vertex program's text (docs/vertex-programs.md), run
	// in place of an operator.
	Program string `json:"program,omitempty"`
	// Source is the start vertex's key, as a JSON string or integer; it
	// hides Params.Source, which prepare fills from it.
	Source keyText `json:"source,omitempty"`
	// BatchRows asks for result batches of at most this many rows (at
	// most the server's --batch-rows).
	BatchRows int `json:"batch_rows,omitempty"`
	operators.Params
	set []string // the parameters the JSON named
}

func (q *query) graphName() *string { return &q.Graph }

// exchangeOptions are a DoExchange descriptor's options: an upload's and a
// query's, less the graph name's role.
type exchangeOptions struct {
	edgeOptions
	Op        string  `json:"op"`
	Program   string  `json:"program,omitempty"`
	Source    keyText `json:"source,omitempty"`
	BatchRows int     `json:"batch_rows,omitempty"`
	operators.Params
	set []string // the parameters the JSON named
}

// query is the operator part of an exchange.
func (o *exchangeOptions) query() query {
	return query{Graph: o.Graph, Op: o.Op, Program: o.Program, Source: o.Source, BatchRows: o.BatchRows, Params: o.Params, set: o.set}
}

// keyText is a vertex key as text: a JSON string, or a JSON integer (so that
// {"source": 42} works for integer keys).
type keyText string

func (k *keyText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*k = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*k = keyText(s)
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		*k = keyText(b)
	default:
		return fmt.Errorf("source must be a string or an integer, not %s", echo.Prefix(string(b)))
	}
	return nil
}

// prepare checks the query's operator and parameters, before any graph is
// touched, and fills the parameters' defaults. maxIterations is the
// server's ceiling on the iterations a query may ask for (<= 0: none).
func (q *query) prepare(maxIterations int) (operators.Operator, error) {
	if q.Op == "" && q.Program == "" {
		return nil, usererr.New(usererr.Usage, "the query names no operator",
			`add "op": one of `+strings.Join(operators.Names(), ", ")+`, or "program": a vertex program's text`)
	}
	q.Params.Source = string(q.Source)
	op, err := q.operator()
	if err != nil {
		return nil, err
	}
	if err := operators.CheckSet(op, q.Params, q.set, func(name string) string { return strconv.Quote(name) }); err != nil {
		return nil, err
	}
	named := slices.Contains(q.set, operators.ParamMaxIterations)
	if maxIterations > 0 && !named && slices.Contains(op.Spec().Params, operators.ParamMaxIterations) {
		// The operator's default, where the server allows fewer.
		q.Params.MaxIterations = min(operators.DefaultMaxIterations, maxIterations)
	}
	if err := op.Prepare(&q.Params); err != nil {
		return nil, err
	}
	if maxIterations > 0 && q.Params.MaxIterations > maxIterations {
		return nil, usererr.New(usererr.Limit,
			fmt.Sprintf("max_iterations %d is more than the server allows (--max-iterations %d)", q.Params.MaxIterations, maxIterations),
			fmt.Sprintf(`ask for at most %d, or ask for a higher limit`, maxIterations))
	}
	if err := gpuop.Check(op, q.Params); err != nil {
		return nil, err
	}
	if op.Spec().NeedsSource && q.Params.Source == "" {
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("operator %s needs a source vertex", op.Spec().Name),
			`add "source": KEY to the query`)
	}
	if q.BatchRows < 0 {
		return nil, usererr.Newf(usererr.Usage, "batch_rows %d must be positive (or 0 for the server's default)", q.BatchRows)
	}
	return op, nil
}

// parseTicket reads a DoGet ticket.
func parseTicket(b []byte) (query, error) {
	var q query
	if len(bytes.TrimSpace(b)) == 0 {
		return q, usererr.New(usererr.Usage, "the ticket is empty", ticketExample)
	}
	if err := decodeJSON("the ticket", b, &q, ticketExample); err != nil {
		return q, err
	}
	if q.Graph == "" {
		return q, usererr.New(usererr.Usage, "the ticket names no graph", ticketExample)
	}
	return q, checkName(q.Graph)
}

const ticketExample = `send a JSON object such as {"graph": "web", "op": "bfs", "source": "42"}`

// decodeJSON reads one JSON object into v, refusing unknown fields and
// anything after the object.
func decodeJSON(what string, b []byte, v any, fix string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// Field is the Go path ("Params.damping"); the client knows the
			// last part, the JSON name. Value may hold the number sent.
			field := te.Field[strings.LastIndex(te.Field, ".")+1:]
			return usererr.New(usererr.Usage, fmt.Sprintf("%s: field %s must be a JSON %s, not %s",
				what, echo.Quote(field), jsonKind(te.Type.Kind().String()), echo.Prefix(te.Value)), fix)
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		// encoding/json writes an unknown field's name as it came, whole.
		if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
			msg = "unknown field " + echo.Quote(strings.TrimSuffix(strings.TrimPrefix(field, `"`), `"`))
		}
		return usererr.New(usererr.Usage, fmt.Sprintf("cannot read %s: %s", what, msg), fix)
	}
	if _, err := dec.Token(); err != io.EOF {
		return usererr.New(usererr.Usage, fmt.Sprintf("%s has more after its JSON object", what), fix)
	}
	if ps, ok := v.(paramSetter); ok {
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(b, &fields) // it decoded above
		var set []string
		for _, name := range operators.ParamNames() {
			if _, ok := fields[name]; ok {
				set = append(set, name)
			}
		}
		ps.setParams(set)
	}
	return nil
}

// paramSetter is a request that carries operator parameters and records
// which ones its JSON named, so that prepare can refuse those that do not
// apply to its operator rather than ignore them.
type paramSetter interface{ setParams(names []string) }

func (q *query) setParams(names []string)           { q.set = names }
func (o *exchangeOptions) setParams(names []string) { o.set = names }

// jsonKind names a Go kind as JSON does.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "integer"
	case strings.HasPrefix(kind, "float"):
		return "number"
	case kind == "bool":
		return "boolean"
	case kind == "struct" || kind == "map":
		return "object"
	}
	return kind
}

// named is a request whose JSON may carry the graph's name.
type named interface{ graphName() *string }

// readDescriptor reads a descriptor into req: a path [GRAPH], optionally
// with req's JSON in the command (clients that can set both), or a command
// holding req's JSON, "graph" included.
func readDescriptor(d *flight.FlightDescriptor, call string, req named, fix string) error {
	if d == nil {
		return usererr.New(usererr.Usage, call+" needs a flight descriptor", fix)
	}
	switch d.Type {
	case flight.DescriptorPATH:
		if len(d.Path) != 1 {
			return usererr.New(usererr.Usage, fmt.Sprintf("the descriptor path has %d elements; it must have one element, the graph's name", len(d.Path)), fix)
		}
		if len(d.Cmd) > 0 {
			if err := decodeJSON("the descriptor's command", d.Cmd, req, fix); err != nil {
				return err
			}
		}
		name := req.graphName()
		if *name != "" && *name != d.Path[0] {
			return usererr.New(usererr.Usage, fmt.Sprintf("the descriptor's path names graph %s but its command names %s", echo.Quote(d.Path[0]), echo.Quote(*name)), fix)
		}
		*name = d.Path[0]
	case flight.DescriptorCMD:
		if len(bytes.TrimSpace(d.Cmd)) == 0 {
			return usererr.New(usererr.Usage, "the descriptor's command is empty", fix)
		}
		if err := decodeJSON("the descriptor's command", d.Cmd, req, fix); err != nil {
			return err
		}
	default:
		return usererr.New(usererr.Usage, "the descriptor is neither a path nor a command", fix)
	}
	return nil
}

// maxNameLen bounds graph names, which appear in logs and messages.
const maxNameLen = 128

// nameRule is the graph name rule, as messages say it.
const nameRule = "a graph name is 1 to 128 ASCII letters, digits and . _ - :, starting with a letter or digit"

// checkName says whether name can name a graph: 1 to 128 ASCII letters,
// digits and . _ - :, starting with a letter or digit, so that names are
// safe in logs, messages and file names, and look the same to every
// client. (Letters and digits of other scripts are refused: "é" can be
// written in two ways that look alike, and "٣" is not 3.) A name that
// breaks the rule is refused before any lookup, so the message says the
// rule rather than that no such graph exists.
func checkName(name string) error {
	if name == "" {
		return usererr.New(usererr.Usage, "the graph has no name", `put with the descriptor path ["NAME"] or a command {"graph": "NAME", ...}`)
	}
	if len(name) > maxNameLen {
		return usererr.New(usererr.Usage, fmt.Sprintf("graph name %s is longer than %d bytes", echo.Quote(name), maxNameLen), nameRule)
	}
	for i, r := range name {
		switch {
		case isASCIIAlnum(r), i > 0 && strings.ContainsRune("._-:", r):
			continue
		case i == 0 && strings.ContainsRune("._-:", r):
			return usererr.New(usererr.Usage, fmt.Sprintf("graph name %q starts with %q", name, r), nameRule)
		case invalidUTF8At(name, i):
			return usererr.New(usererr.Usage, fmt.Sprintf("graph name %q has the byte %#x, which is not UTF-8 text", name, name[i]), nameRule)
		}
		return usererr.New(usererr.Usage, fmt.Sprintf("graph name %q has the character %q", name, r), nameRule)
	}
	return nil
}

// invalidUTF8At says whether s[i:] starts with a byte that is not UTF-8.
func invalidUTF8At(s string, i int) bool {
	r, size := utf8.DecodeRuneInString(s[i:])
	return r == utf8.RuneError && size == 1
}

func isASCIIAlnum(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

const (
	putFix      = `descriptor: path ["GRAPH"], or a command {"graph": "GRAPH", "src": ..., "dst": ..., "undirected": true, ...}; see docs/serve.md`
	exchangeFix = `descriptor: a command {"op": "pagerank", "src": ..., "dst": ..., ...}; see docs/serve.md`
	infoFix     = `descriptor: path ["GRAPH"], or a command {"graph": "GRAPH"} (with "op" and parameters: a query)`
)

// upload is a DoPut or DoExchange stream of FlightData messages. It keeps
// the first flight descriptor that comes with the stream: clients send it
// on the schema message (Go, Java), or on a message of its own before it
// (the C++ client, so pyarrow, in DoExchange), and flight.Reader only
// remembers the descriptor of the latest message, which is nil in the
// second case. It keeps the schema message's metadata too, for
// arrowipc.Appender.AppendMessage. rdr is arrow's reader over the same
// messages: receive reads each message itself, and gives back (unread) the
// ones arrow's reader must read.
//
// Every message is checked as it arrives (check), as a file's or a
// stream's are, because arrow's reader trusts the metadata: a bad offset is
// a panic, a bad length an allocation of whatever it says. A message
// without Arrow metadata (only a descriptor, or only app_metadata, which
// Flight allows) is not given to arrow's reader, which cannot read it.
type upload struct {
	mem     *budget
	room    int64 // of mem, while the upload receives (messageRoom)
	stream  flight.DataStreamReader
	rdr     *flight.Reader
	check   *arrowipc.MessageCheck
	desc    *flight.FlightDescriptor
	schema  []byte // the schema message's metadata
	pending *flight.FlightData
}

// Recv is the next message: the one given back, or the stream's next.
func (u *upload) Recv() (*flight.FlightData, error) {
	if fd := u.pending; fd != nil {
		u.pending = nil
		return fd, nil
	}
	for {
		fd, err := u.stream.Recv()
		if err != nil {
			return nil, err
		}
		if u.desc == nil {
			u.desc = fd.GetFlightDescriptor()
		}
		if len(fd.GetDataHeader()) == 0 {
			if len(fd.GetDataBody()) > 0 {
				return nil, usererr.New(usererr.Input, "a message has a body but no Arrow metadata (data_header)",
					"send an Arrow schema, then record batches of that schema, as an Arrow IPC writer makes them")
			}
			continue
		}
		if err := u.check.Check(fd.GetDataHeader(), fd.GetDataBody()); err != nil {
			return nil, err
		}
		if u.schema == nil {
			u.schema = fd.GetDataHeader()
		}
		return fd, nil
	}
}

// unread gives fd back, for arrow's reader to read next.
func (u *upload) unread(fd *flight.FlightData) { u.pending = fd }

// endReceive gives back the room for messages in flight, once the upload
// has received its last message (or failed).
func (u *upload) endReceive() {
	u.mem.release(u.room)
	u.room = 0
}

func (u *upload) release() {
	u.endReceive()
	if u.rdr != nil {
		u.rdr.Release()
	}
}

// openUpload starts reading an upload: it takes the room for its messages
// in flight from the memory budget, before gRPC reads any of them beyond
// the window, and arrow's reader reads the schema. The stream gives up on
// a client that sends nothing for the upload idle timeout, or has not
// ended the upload by --max-upload-time.
func (s *service) openUpload(stream flight.DataStreamReader, call string) (*upload, error) {
	room := s.cfg.messageRoom()
	if err := s.mem.reserve(room, fmt.Sprintf("%s's messages in flight (--max-message-bytes %s and a window of %s)",
		call, bytesize.Format(int64(s.cfg.MaxMessageBytes)), bytesize.Format(int64(uploadWindow(s.cfg.MaxMessageBytes))))); err != nil {
		return nil, err
	}
	recv := &idleRecv{DataStreamReader: stream, d: s.cfg.UploadIdleTimeout, total: s.cfg.MaxUploadTime}
	if recv.total > 0 {
		recv.deadline = time.Now().Add(recv.total)
	}
	up := &upload{mem: s.mem, room: room, stream: recv, check: arrowipc.NewMessageCheck(call)}
	rdr, err := flight.NewRecordReader(up)
	if err != nil {
		up.release()
		if err := passThrough(err); err != nil {
			return nil, err
		}
		return nil, arrowipc.SchemaError(call, err)
	}
	up.rdr = rdr
	return up, nil
}
