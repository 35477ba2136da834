package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/arrowipc"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

// DoPut stores an uploaded edge table as a graph. The graph is built when
// the last batch has arrived; the put's one PutResult carries the graph's
// description as JSON. Nothing is stored unless the whole upload and build
// succeed.
func (s *service) DoPut(stream flight.FlightService_DoPutServer) error {
	ctx := stream.Context()
	call := logOf(ctx)
	start := time.Now()
	up, err := s.openUpload(stream, "the upload")
	if err != nil {
		return err
	}
	defer up.release()
	var opts putOptions
	err = readDescriptor(up.desc, "DoPut", &opts, putFix)
	name := opts.Graph
	call.names(name, "")
	if err != nil {
		return err
	}
	if err := opts.check(); err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return err
	}
	if err := s.graphs.reserve(name, opts.Replace); err != nil {
		return err
	}
	stored := false
	defer func() {
		if !stored {
			s.graphs.unreserve(name)
		}
	}()

	// Weights are read when the table has them, checked only for being
	// finite: the graph serves every operator, and one that needs weights
	// >= 0 refuses a graph with negative ones when it is asked to run.
	t, held, err := s.receive(ctx, up, "graph "+name, opts.ingestOptions(true))
	if err != nil {
		return err
	}
	upload := time.Since(start)
	call.upload = upload
	g, err := s.build(ctx, t, held, pipeline.LoadOptions{
		Undirected:  opts.Undirected,
		SkipInvalid: opts.SkipInvalid,
		Weights:     convert.FiniteWeights,
		// In-edges are built now rather than by the first query that needs
		// them, so that a stored graph never changes while it is read.
		BuildIn: true,
	}, true)
	if err != nil {
		return err
	}
	call.build = g.BuildTime
	sg := s.storedGraph(name, g, t.Columns, upload)
	// commit takes the name's reservation over, whether it stores the
	// graph or (the server stopping) frees it.
	stored = true
	if err := s.graphs.commit(sg); err != nil {
		return err
	}
	meta, err := json.Marshal(sg.info)
	if err != nil {
		return err
	}
	return stream.Send(&flight.PutResult{AppMetadata: meta})
}

// builtGraph is a graph built from an upload, holding its memory budget;
// free gives both back.
type builtGraph struct {
	*pipeline.Graph
	bytes int64
	free  func()
}

// receive reads an upload's record batches into an edge table. The table
// holds its bytes of the memory budget (held) as it grows; an upload over a
// limit stops at the batch that crosses it. On error nothing is kept.
//
// A batch whose edge columns the Appender can take from the message itself
// (AppendMessage: no copy where the body's buffers are aligned) is read
// here; any other message (a dictionary batch, a compressed body, keys that
// are dictionaries) is given to arrow's reader, which reads the same stream.
func (s *service) receive(ctx context.Context, up *upload, name string, opts edges.Options) (t *edges.Table, held int64, err error) {
	defer up.endReceive()
	opts.Alloc = s.backend.Alloc()
	if dev := s.place.builder(); dev != nil {
		// The GPU build's kernels and staging memory, while the batches
		// arrive (once per server).
		go dev.PrepareBuild()
	}
	a, err := arrowipc.NewAppender(name, up.rdr.Schema(), opts)
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		if err != nil {
			a.Release()
			s.mem.release(held)
			held = 0
		}
	}()
	direct := a.SetSchemaMessage(up.schema)
	call := logOf(ctx)
	batches := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, held, err
		}
		appended := false
		if direct {
			fd, err := up.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, held, readError(name, batches, err)
			}
			if appended, err = a.AppendMessage(fd.DataHeader, fd.DataBody); err != nil {
				return nil, held, err
			}
			if !appended {
				up.unread(fd)
			}
		}
		if !appended {
			if !up.rdr.Next() {
				break
			}
			if err := a.Append(up.rdr.RecordBatch()); err != nil {
				return nil, held, err
			}
		}
		batches++
		call.rowsIn = a.Rows()
		n := a.Bytes()
		if max := s.cfg.MaxUploadBytes; max > 0 && n > max {
			return nil, held, usererr.New(usererr.Limit,
				fmt.Sprintf("%s: the upload is over the server's limit of %s per upload (--max-upload-bytes) at record batch %d (%d rows, %s); nothing was stored",
					name, bytesize.Format(max), batches-1, a.Rows(), bytesize.Format(n)),
				"send fewer edges, or ask for a higher limit")
		}
		if err := s.mem.reserve(n-held, name+"'s edge table"); err != nil {
			return nil, held, err
		}
		held = n
	}
	if err := ctx.Err(); err != nil {
		return nil, held, err
	}
	if err := up.rdr.Err(); err != nil {
		return nil, held, readError(name, batches, err)
	}
	t, err = a.Finish()
	return t, held, err
}

// readError says that an upload's stream could not be read: a status from
// the transport (the client went away) as it is, a message the checks
// refused as they said, else what arrow's reader said of record batch
// batch, in a user's words.
func readError(name string, batch int, err error) error {
	if err := passThrough(err); err != nil {
		return err
	}
	return arrowipc.BatchError(name, batch, err)
}

// passThrough is err's own status, the transport's or the checks', where it
// has one, unwrapped from what arrow's readers wrap it in; else nil.
func passThrough(err error) error {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) && se.GRPCStatus().Code() != codes.Unknown {
		return se.GRPCStatus().Err()
	}
	var ue *usererr.Error
	if errors.As(err, &ue) {
		return ue
	}
	if errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	return nil
}

// build builds the graph of an upload's table in a job slot, then frees
// the table and moves its share of the memory budget to the graph. stored
// is an upload's graph (DoPut), which many queries may read, rather than
// an exchange's, which one query reads.
//
// Where queries run on a GPU, the graph is built there (gpuop.GPU's
// build, as `gpipe run --backend gpu` builds; the host builds what the GPU
// declines), then its edges are copied to the host: a stored graph is
// whole on the host, so that its device copies can be freed to make room
// for other runs (placement) and its memory counts in the budget, while
// the layouts built on the device stay there for its first queries.
func (s *service) build(ctx context.Context, t *edges.Table, held int64, lo pipeline.LoadOptions, stored bool) (*builtGraph, error) {
	// The graph being built is counted at its table's size until its own
	// is known, so that the limit holds during builds too: a table of
	// integer keys takes 16 bytes an edge, its graph (out- and in-edges,
	// 4 bytes each an edge, and the vertices) about as much or less.
	building := held
	defer func() {
		t.Release()
		s.mem.release(held + building)
	}()
	if err := s.mem.reserve(building, "the graph being built"); err != nil {
		building = 0
		return nil, err
	}
	release, err := s.jobs.acquire(ctx, t.NumEdges() <= s.cfg.smallJobEdges)
	if err != nil {
		return nil, err
	}
	lo.Alloc = s.backend.Alloc()
	gpuDone := func() {}
	if dev := s.place.builder(); dev != nil {
		lo.Device = dev
		gpuDone = s.place.building()
	}
	g, err := pipeline.Build(ctx, t, lo)
	if err == nil {
		start := time.Now()
		if err = g.Materialize(); err != nil {
			s.place.forget(g.Graph)
			g.Release()
		} else if stored && s.place.choice != "gpu" {
			// The CPU's sssp's uint32 weights (where the weights are
			// integers), made now as the in-edge layout is: a stored graph
			// never changes while queries read it, and the memory budget
			// counts what they will read.
			g.Weights32()
		}
		g.BuildTime += time.Since(start)
	}
	gpuDone()
	release()
	if err != nil {
		return nil, err
	}
	if g.Built.Device == "gpu" {
		s.place.built(g.Graph)
	}
	s.mem.release(building)
	building = 0
	b := &builtGraph{Graph: g, bytes: g.Bytes()}
	b.free = func() {
		s.place.forget(g.Graph)
		g.Release()
		s.mem.release(b.bytes)
	}
	if err := s.mem.reserve(b.bytes, "the built graph"); err != nil {
		s.place.forget(g.Graph)
		g.Release()
		return nil, err
	}
	return b, nil
}

// storedGraph describes a built graph for the registry.
func (s *service) storedGraph(name string, b *builtGraph, cols edges.Columns, upload time.Duration) *storedGraph {
	g := b.Graph
	info := graphInfo{
		Graph: name, Vertices: g.NumVertices(), Edges: g.NumEdges(),
		InputRows: g.RowsRead, SkippedRows: g.Skipped.Total(), Skipped: g.Skipped,
		SelfLoops: g.Stats.SelfLoops, Merged: g.Stats.Merged, MemoryBytes: b.bytes,
		Directed: g.Directed, Weighted: g.Weighted, KeyType: g.Keys.Type.String(),
		Created: time.Now().UTC().Truncate(time.Second), UploadTime: upload.Seconds(), BuildTime: g.BuildTime.Seconds(),
		BuildDevice: g.Built.Device, BuildReason: g.Built.Reason,
	}
	if len(info.Skipped) == 0 {
		info.Skipped = nil
	}
	info.Backend, info.BackendNote = s.backendOf(g)
	return &storedGraph{
		name: name, g: g, info: info,
		schema:     edgeSchema(cols, g),
		minWeight:  minWeight(g),
		unweighted: !cols.ReadWeight,
		free:       b.free,
	}
}

// backendOf says where queries on g run: where PageRank, which every
// backend implements, would.
func (s *service) backendOf(g *pipeline.Graph) (backend, note string) {
	op, err := operators.Lookup("pagerank")
	if err != nil {
		return "", err.Error()
	}
	return s.place.describe(g.Graph, op)
}

// edgeSchema is the edge columns as the graph keeps them: the keys in
// their output type, and float64 weights when it has weights.
func edgeSchema(cols edges.Columns, g *pipeline.Graph) *arrow.Schema {
	cols = cols.WithDefaults()
	fields := []arrow.Field{{Name: cols.Src, Type: g.Keys.ArrowType}, {Name: cols.Dst, Type: g.Keys.ArrowType}}
	if g.Weighted {
		fields = append(fields, arrow.Field{Name: cols.Weight, Type: arrow.PrimitiveTypes.Float64})
	}
	return arrow.NewSchema(fields, nil)
}
