// Package pipeline is the machinery behind gpipe's library face (the root
// package) and its commands (cmd/gpipe, serve, bench): reading an edge
// table, building its graph on the host or a GPU, choosing the backend
// that runs an operator, turning results into Arrow records and writing
// them. The root package wraps it for programs outside the module; the
// commands use it whole (device builds, pinned memory, several GPUs).
package pipeline

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
)

// LoadOptions control how an edge table is read and built into a graph.
type LoadOptions struct {
	// Columns names the src, dst and weight columns (defaults: src, dst,
	// weight) and says whether to read weights at all.
	Columns edges.Columns
	// Format overrides the input format the extension implies.
	Format string
	// Undirected makes every edge count in both directions.
	Undirected bool
	// SkipInvalid drops rows with null keys or invalid weights, counting
	// them, instead of failing on the first.
	SkipInvalid bool
	// Weights is the rule weights must follow when Columns.ReadWeight is set.
	Weights convert.WeightRule
	// BuildIn builds the in-edge layout during the build rather than on
	// first use (operators that pull over in-edges need it).
	BuildIn bool
	// Stdin is read when the input is "-".
	Stdin io.Reader
	// Alloc holds the edge columns and layouts; nil means Go memory.
	Alloc memory.Allocator
	// Place, when set, places the build once the table's rows are known
	// (Backend.Placer: the cost model under auto), and Device is ignored.
	Place *Placement
	// Device, when set, builds the graph on this GPU where it can
	// (gpuop.GPU.BuildGraph): its layouts stay there for the operator,
	// and the host keeps the keys and offsets. The edge columns are then
	// read into Go memory, not Alloc: they reach the GPU through a pinned
	// ring (docs/architecture.md, "The device build").
	Device *gpuop.GPU
	// Stage, when set, is called as each stage starts ("read", "build").
	Stage func(name string)
	// Header and Delimiter say how a CSV file (or an edge list, Header)
	// is read: edges.Options's fields.
	Header    edges.Header
	Delimiter rune
	// Progress, when set, counts the input's rows as they are read.
	Progress *atomic.Int64
	// Store says how s3:// and https:// inputs are reached (an
	// S3-compatible endpoint); the zero value takes the AWS SDK's
	// configuration.
	Store objstore.Options
}

// Graph is a built graph with what it cost to get it.
type Graph struct {
	*convert.Graph
	// Name is the input it came from.
	Name string
	// RowsRead counts the input's rows, skipped ones included.
	RowsRead int64
	// Skipped counts dropped rows by reason, reading and building together.
	Skipped edges.Skips
	// ReadTime and BuildTime are the wall time of the two stages.
	ReadTime, BuildTime time.Duration
	// Built says where the graph was built (the GPU or the host) and why.
	Built gpuop.BuildReport
	// Notes say what the read did that a reader of the results might not
	// expect (decimal weights rounded to float64): edges.Table.Notes.
	Notes []string
	// WeightUnread says the input has a weight column the read left out
	// (edges.Table.WeightUnread), for WeightColumnNotes.
	WeightUnread bool
	// Setup is the GPU's set-up as the load saw it (the library's Load
	// fills it in).
	Setup Setup
}

// Load reads the edge table at input ("-" for an Arrow IPC stream on
// opts.Stdin) and builds its graph.
func Load(ctx context.Context, input string, opts LoadOptions) (*Graph, error) {
	if cols := opts.Columns.WithDefaults(); cols.Src == cols.Dst {
		// Every edge would be a self loop, and dropped.
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("%q is named as both the source and the destination column", cols.Src),
			"name two different columns with --src-col and --dst-col")
	}
	stage(opts, "read")
	start := time.Now()
	readOpts := edges.Options{Columns: opts.Columns, Format: opts.Format, SkipInvalid: opts.SkipInvalid, Alloc: opts.ReadAlloc(),
		Header: opts.Header, Delimiter: opts.Delimiter, Progress: opts.Progress, Store: opts.Store}
	var up *gpuop.ColumnUpload
	switch {
	case opts.Place != nil:
		// The columns go to the GPU as the reader decodes them (Parquet)
		// where the placement, told the rows, builds there.
		up = gpuop.NewColumnUploadTo(opts.Place.StreamTo)
	case opts.Device != nil:
		// Load the build's kernels and pin its staging ring while the
		// table is read, and copy the columns to the GPU as the reader
		// decodes them (where it says so: Parquet).
		go opts.Device.PrepareBuild()
		up = opts.Device.NewColumnUpload()
	}
	if up != nil {
		readOpts.Stream = up
		defer up.Release()
	}
	t, err := ingest.Open(ctx, input, opts.Stdin, readOpts)
	if up != nil {
		up.Finish()
	}
	if err != nil {
		return nil, err
	}
	defer t.Release()
	readTime := time.Since(start)
	g, err := placedBuild(ctx, t, opts, up)
	if err != nil {
		return nil, err
	}
	g.ReadTime = readTime
	return g, nil
}

// placedBuild is build on the device opts.Place chooses, where it is set,
// with its reason where that is the host.
func placedBuild(ctx context.Context, t *edges.Table, opts LoadOptions, up *gpuop.ColumnUpload) (*Graph, error) {
	why := ""
	if opts.Place != nil {
		opts.Device, why = opts.Place.BuildOn(t)
	}
	g, err := build(ctx, t, opts, up)
	if err == nil && g.Built.Device == "cpu" && g.Built.Reason == "" {
		g.Built.Reason = why
	}
	return g, err
}

// Build builds the graph of an edge table that was read already (from a
// generator, or batches that arrived over Arrow Flight). The table may be
// released once Build returns.
func Build(ctx context.Context, t *edges.Table, opts LoadOptions) (*Graph, error) {
	return placedBuild(ctx, t, opts, nil)
}

// build is Build from the columns up copied to the GPU during the read
// (up nil: none).
func build(ctx context.Context, t *edges.Table, opts LoadOptions, up *gpuop.ColumnUpload) (*Graph, error) {
	stage(opts, "build")
	start := time.Now()
	bopts := convert.BuildOptions{
		Undirected:  opts.Undirected,
		Weighted:    t.HasWeight,
		Weights:     opts.Weights,
		SkipInvalid: opts.SkipInvalid,
		BuildIn:     opts.BuildIn,
		Alloc:       opts.Alloc,
	}
	var cg *convert.Graph
	built := gpuop.BuildReport{Device: "cpu"}
	var err error
	if opts.Device != nil {
		cg, built, err = opts.Device.BuildGraphFrom(ctx, t, bopts, up)
	} else {
		cg, err = convert.Build(ctx, t, bopts)
	}
	if err != nil {
		// A row of a dataset is named by its file and its row there.
		return nil, t.Locate(err)
	}
	g := &Graph{Graph: cg, Name: t.Name, RowsRead: t.RowsRead, Skipped: edges.Skips{}, BuildTime: time.Since(start), Built: built,
		Notes: t.Notes, WeightUnread: t.WeightUnread}
	for reason, n := range t.Skipped {
		g.Skipped.Add(reason, n)
	}
	for reason, n := range cg.Stats.Skipped {
		g.Skipped.Add(reason, n)
	}
	return g, nil
}

// ReadAlloc is the allocator the edge columns are read into: Alloc, or Go
// memory when the graph is built on a GPU (the columns are copied there
// through a pinned ring, which costs less than pinning them: a whole
// column of pinned memory is pinned, zeroed and faulted in on one thread
// before the reader can write it).
func (opts LoadOptions) ReadAlloc() memory.Allocator {
	if opts.Device != nil || opts.Place != nil {
		return nil
	}
	return opts.Alloc
}

func stage(opts LoadOptions, name string) {
	if opts.Stage != nil {
		opts.Stage(name)
	}
}

// Run runs the operator called op with parameters p on backend b.
func (g *Graph) Run(ctx context.Context, op string, p operators.Params, b operators.Backend) (*Result, error) {
	o, err := operators.Lookup(op)
	if err != nil {
		return nil, err
	}
	return g.RunOp(ctx, o, p, b)
}

// RunOp is Run with the operator itself (a vertex program's, which no
// name looks up).
func (g *Graph) RunOp(ctx context.Context, o operators.Operator, p operators.Params, b operators.Backend) (*Result, error) {
	var err error
	if err := o.Prepare(&p); err != nil {
		return nil, err
	}
	in := operators.Input{Graph: g.Graph, Params: p}
	if o.Spec().NeedsSource {
		if err := checkSource(o, p); err != nil {
			return nil, err
		}
		if in.Source, err = g.Keys.Find("source", p.Source); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := b.Run(ctx, o, in)
	if err != nil {
		return nil, err
	}
	return &Result{Result: r, Graph: g}, nil
}

// checkSource says that an operator that starts from a source vertex was
// given none.
func checkSource(o operators.Operator, p operators.Params) error {
	if o.Spec().NeedsSource && p.Source == "" {
		return usererr.New(usererr.Usage, fmt.Sprintf("operator %s needs a source vertex", o.Spec().Name),
			`pass --source KEY (in a Flight ticket: "source")`)
	}
	return nil
}
