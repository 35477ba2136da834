package serve

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
)

// storedGraph is one graph the server holds. Everything but refs is fixed
// once it is stored, so queries read it without locks.
//
// refs counts its users: the registry holds one reference while the graph
// is listed, and every query one while it runs. Dropping the graph only
// takes it off the list and gives the registry's reference back; the last
// user frees it, so a query never sees its graph freed under it.
type storedGraph struct {
	name   string
	g      *pipeline.Graph
	info   graphInfo
	schema *arrow.Schema // the edge columns as stored
	// minWeight is the smallest edge weight (+Inf when unweighted), so that
	// operators that need weights >= 0 can refuse a graph at once.
	minWeight float64
	// unweighted says the upload asked for no weights ("unweighted"), so
	// that a weighted operator's result does not note their absence.
	unweighted bool
	free       func()

	refs int // guarded by registry.mu
}

// graphInfo describes a stored graph: the PutResult metadata of its upload
// and the app_metadata of its FlightInfo.
type graphInfo struct {
	Graph       string           `json:"graph"`
	Vertices    int              `json:"vertices"`
	Edges       int64            `json:"edges"`
	InputRows   int64            `json:"input_rows"`
	SkippedRows int64            `json:"skipped_rows"`
	Skipped     map[string]int64 `json:"skipped,omitempty"`
	SelfLoops   int64            `json:"self_loops_dropped"`
	Merged      int64            `json:"parallel_edges_merged"`
	MemoryBytes int64            `json:"memory_bytes"`
	// Backend is where queries run: "cpu" or "gpu" (for --backend auto,
	// where PageRank would run); BackendNote says why, when it was chosen.
	Backend     string    `json:"backend"`
	BackendNote string    `json:"backend_note,omitempty"`
	Directed    bool      `json:"directed"`
	Weighted    bool      `json:"weighted"`
	KeyType     string    `json:"key_type"`
	Created     time.Time `json:"created"`
	UploadTime  float64   `json:"upload_s"`
	BuildTime   float64   `json:"build_s"`
	// BuildDevice is where the graph was built, "gpu" or "cpu"; BuildReason why
	// the host built it where the GPU serves queries.
	BuildDevice string `json:"build_device"`
	BuildReason string `json:"build_reason,omitempty"`
	// Queries is the number of queries running on the graph, at the time
	// of a ListFlights or GetFlightInfo.
	Queries int `json:"queries_running"`
}

// registry is the set of stored graphs by name, with the names that have
// an upload under way, so that two uploads cannot race for one name and
// the graph limit counts uploads before they finish.
type registry struct {
	mu      sync.Mutex
	graphs  map[string]*storedGraph
	pending map[string]bool
	max     int // 0: no limit
	closed  bool
}

func newRegistry(max int) *registry {
	return &registry{graphs: map[string]*storedGraph{}, pending: map[string]bool{}, max: max}
}

// reserve claims name for an upload, before any of its data is read. With
// replace, an existing graph of that name is replaced when the upload ends.
func (r *registry) reserve(name string, replace bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return status.Error(codes.Unavailable, "the server is shutting down")
	case r.pending[name]:
		return status.Errorf(codes.AlreadyExists, "graph %q is being uploaded by another call; wait for it, or pick another name", name)
	case r.graphs[name] != nil && !replace:
		return status.Errorf(codes.AlreadyExists, "graph %q exists; drop it first, or put with \"replace\": true", name)
	}
	if r.max > 0 && r.graphs[name] == nil {
		if taken := r.count(); taken >= r.max {
			return errSlotsTaken(r.max, len(r.graphs), taken-len(r.graphs))
		}
	}
	r.pending[name] = true
	return nil
}

// errSlotsTaken says that the --max-graphs slots are all taken, by how many
// stored graphs and uploads in progress, with the fix that fits: an upload
// ends by itself (or is abandoned when its client goes quiet); a stored
// graph takes its slot until it is dropped.
func errSlotsTaken(max, stored, uploads int) error {
	var held []string
	if stored > 0 {
		held = append(held, plural(stored, "stored graph", "stored graphs"))
	}
	if uploads > 0 {
		held = append(held, plural(uploads, "upload in progress", "uploads in progress"))
	}
	fix := "drop a graph, or wait for an upload to end"
	switch {
	case uploads == 0:
		fix = "drop a graph (the drop action) first"
	case stored == 0:
		fix = "wait for an upload to end"
	}
	return usererr.New(usererr.Limit, fmt.Sprintf("%d of %d graph slots taken (--max-graphs): %s", stored+uploads, max, strings.Join(held, ", ")),
		fix+", or ask for a higher limit")
}

// plural is n with its noun: "1 stored graph", "3 stored graphs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprint(n, " ", many)
}

// count is the number of names taken: stored graphs and uploads under way.
func (r *registry) count() int {
	n := len(r.graphs)
	for name := range r.pending {
		if r.graphs[name] == nil {
			n++
		}
	}
	return n
}

// unreserve gives up an upload's claim on its name.
func (r *registry) unreserve(name string) {
	r.mu.Lock()
	delete(r.pending, name)
	r.mu.Unlock()
}

// commit stores g under its reserved name, replacing (and dropping) the
// graph stored there before. When the server has begun to shut down, g is
// freed instead, and commit says so.
func (r *registry) commit(g *storedGraph) error {
	r.mu.Lock()
	delete(r.pending, g.name)
	if r.closed {
		r.mu.Unlock()
		g.free()
		return status.Error(codes.Unavailable, "the server is shutting down")
	}
	old := r.graphs[g.name]
	g.refs = 1
	r.graphs[g.name] = g
	r.mu.Unlock()
	if old != nil {
		r.release(old)
	}
	return nil
}

// acquire takes a reference to the graph called name for a query.
func (r *registry) acquire(name string) (*storedGraph, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.graphs[name]
	if g == nil {
		return nil, errNoGraph(name, r.names())
	}
	g.refs++
	return g, nil
}

// errNoGraph says that name is not stored, and what is.
func errNoGraph(name string, names []string) error {
	held := "the server holds no graphs"
	if len(names) > 0 {
		if len(names) > 10 {
			names = append(names[:10:10], "...")
		}
		held = "the server holds " + strings.Join(names, ", ")
	}
	return status.Errorf(codes.NotFound, "graph %q does not exist (%s); put it first", name, held)
}

// release gives a reference back; the last one frees the graph.
func (r *registry) release(g *storedGraph) {
	r.mu.Lock()
	g.refs--
	last := g.refs == 0
	r.mu.Unlock()
	if last {
		g.free()
	}
}

// drop takes the graph called name off the list. Its memory is freed now,
// or when the queries running on it (their number is returned) end.
func (r *registry) drop(name string) (running int, err error) {
	r.mu.Lock()
	g := r.graphs[name]
	if g == nil {
		names := r.names()
		r.mu.Unlock()
		return 0, errNoGraph(name, names)
	}
	delete(r.graphs, name)
	running = g.refs - 1
	r.mu.Unlock()
	r.release(g)
	return running, nil
}

// get is the graph called name with the number of queries running on it,
// for describing it; the caller must not use g.g.
func (r *registry) get(name string) (graphInfo, *arrow.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.graphs[name]
	if g == nil {
		return graphInfo{}, nil, errNoGraph(name, r.names())
	}
	info := g.info
	info.Queries = g.refs - 1
	return info, g.schema, nil
}

// list describes the graphs whose names start with prefix, by name.
func (r *registry) list(prefix string) (infos []graphInfo, schemas []*arrow.Schema) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.names() {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		g := r.graphs[name]
		info := g.info
		info.Queries = g.refs - 1
		infos = append(infos, info)
		schemas = append(schemas, g.schema)
	}
	return infos, schemas
}

// names lists the stored graphs' names in order; r.mu is held.
func (r *registry) names() []string {
	names := make([]string, 0, len(r.graphs))
	for name := range r.graphs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// close drops every graph and refuses new uploads: the server is stopping.
func (r *registry) close() {
	r.mu.Lock()
	r.closed = true
	graphs := r.graphs
	r.graphs = map[string]*storedGraph{}
	r.mu.Unlock()
	for _, g := range graphs {
		r.release(g)
	}
}

// refsOf is the reference count of the graph called name (-1 when it is
// not stored), for tests.
func (r *registry) refsOf(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.graphs[name]; g != nil {
		return g.refs
	}
	return -1
}

// minWeight is the smallest weight of g's edges, +Inf when it has none.
func minWeight(g *pipeline.Graph) float64 {
	m := math.Inf(1)
	for _, w := range g.Out.Weights {
		m = min(m, w)
	}
	return m
}
