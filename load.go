package gpipe

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/arrowipc"
	"github.com/gpipe/gpipe/ingest/csv"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators/cost"
)

// LoadOptions say how an edge table is read and where its graph runs.
// The zero value reads columns src, dst and (where the table has it)
// weight, as a directed graph, on the automatic backend.
type LoadOptions struct {
	// Src and Dst name the key columns (default "src" and "dst"). Keys may
	// be int32, int64, uint32, uint64, utf8, large_utf8 or
	// dictionary-encoded strings; both columns of one type.
	Src, Dst string
	// Weight names the weight column (default "weight"). A column named
	// here must exist; the default one is read where the table has it,
	// and every weight is 1 where it does not. Weights may be any integer
	// or floating-point type; they must be finite.
	Weight string
	// Unweighted reads no weight column at all: every weight is 1.
	Unweighted bool
	// Undirected makes every edge count in both directions.
	Undirected bool
	// SkipInvalid drops rows with a null key, a string key that is not
	// UTF-8 or an invalid weight, counting them in Graph.Stats, instead of
	// failing on the first (an Error of kind KindInput naming its row).
	SkipInvalid bool

	// Format names the input's format where its extension does not say
	// (Load only): "parquet", "arrow" (IPC file), "arrows" (IPC stream),
	// "csv", "tsv", "text" or "mtx".
	Format string
	// Header says whether the first line of a CSV or TSV file is a header
	// (Load only; gpipe run's --header): "yes", "no", or "auto" (the
	// default, ""), where the first line is the header unless it is data
	// like the lines after it. Without a header the fields are src, dst
	// [, weight] by position (and Src, Dst and Weight name nothing). For
	// a whitespace edge list "yes" skips a header line, which "auto"
	// refuses (naming its line) and "no" reads as an edge.
	Header string
	// Delimiter is a CSV file's field delimiter (Load only; --delimiter):
	// 0 for a comma (a tab for .tsv and Format "tsv"), else one character
	// other than a quote or a line end, such as ';', '|' or '\t'.
	Delimiter rune
	// Stdin is what Load reads for the input "-" (default os.Stdin).
	Stdin io.Reader
	// Name names FromRecords' records in error messages (default
	// "records").
	Name string

	// Backend is where operators run: "auto" (the default: the GPU when
	// one is usable and the graph fits in its memory, else every CPU
	// core), "cpu" or "gpu" (an Error of kind KindBackend where no GPU is
	// usable).
	Backend string
	// GPUs is how many GPUs of the host a run may spread over: 0 (the
	// default) every usable GPU where that is faster or one is too small,
	// 1 one GPU.
	GPUs int

	// model is the cost model auto decides by (nil: this machine's); the
	// tests set it (export_test.go) to send auto to either side.
	model *cost.Model
}

// Graph is a built graph, ready for any number of operator runs, from
// several goroutines at once. Release it when done.
type Graph struct {
	g       *pipeline.Graph
	backend *pipeline.Backend
}

// Load reads the edge table at input (a Parquet, Arrow IPC, CSV, text or
// Matrix Market file, its format from the extension or opts.Format; "-"
// for opts.Stdin) and builds its graph. A directory, a glob or an
// s3://BUCKET/PREFIX/ of part files is read as one table, and s3:// and
// https:// files by ranged GETs, with the AWS SDK's configuration
// (AWS_ENDPOINT_URL for an S3-compatible store, its credential chain).
func Load(ctx context.Context, input string, opts LoadOptions) (*Graph, error) {
	b, lo, err := opts.open()
	if err != nil {
		return nil, err
	}
	if lo.Header, lo.Delimiter, err = opts.text(input); err != nil {
		return nil, err
	}
	// The GPU's set-up runs while the input is read (where it may pay).
	rows, later := pipeline.InputRows(input, opts.Format)
	b.Start(nil, rows, later, opts.Undirected)
	g, err := pipeline.Load(ctx, input, lo)
	if err != nil {
		return nil, libraryError(err)
	}
	g.Setup = b.Setup()
	return &Graph{g: g, backend: b}, nil
}

// FromRecords builds the graph of the edges in rr's records, which a
// program already holds (built with Arrow's builders, read by another
// library, received over the network): keys of any type LoadOptions.Src
// names, over as many records as rr yields, with nulls under the same
// rules and SkipInvalid as in files. It reads rr to its end; the caller
// still releases rr.
//
// The key and weight columns are read in place where their layout is the
// graph build's (integer keys, float64 weights, large_utf8 strings): no
// column is copied before the build, which keeps the records retained
// until it ends. Where the GPU builds the graph, the columns go from the
// records to the device.
func FromRecords(ctx context.Context, rr array.RecordReader, opts LoadOptions) (*Graph, error) {
	if opts.Header != "" || opts.Delimiter != 0 {
		return nil, usererr.New(usererr.Usage, "LoadOptions.Header and Delimiter say how Load reads a CSV, TSV or edge list file; FromRecords' records have neither",
			"leave them unset")
	}
	b, lo, err := opts.open()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	t, err := readRecords(ctx, rr, opts, lo)
	if err != nil {
		return nil, libraryError(err)
	}
	defer t.Release()
	read := time.Since(start)
	g, err := pipeline.Build(ctx, t, lo)
	if err != nil {
		return nil, libraryError(err)
	}
	g.ReadTime, g.Setup = read, b.Setup()
	return &Graph{g: g, backend: b}, nil
}

// readRecords is the edge table of rr's records, aliasing their buffers
// where it can.
func readRecords(ctx context.Context, rr array.RecordReader, opts LoadOptions, lo pipeline.LoadOptions) (*edges.Table, error) {
	if rr == nil {
		return nil, usererr.New(usererr.Usage, "FromRecords was given no record reader", "pass an array.RecordReader over the edge records")
	}
	name := opts.Name
	if name == "" {
		name = "records"
	}
	return arrowipc.ReadRecords(ctx, name, rr, edges.Options{Columns: lo.Columns, SkipInvalid: lo.SkipInvalid, Alloc: lo.ReadAlloc()})
}

// open opens the backend the options name and says how to read and build
// for it: weights read where the table has them, checked to be finite
// (an operator that needs them >= 0 checks when it runs), in Go memory
// (so that records of a result stay valid after Release), on the GPU where
// one may run the operators.
func (opts LoadOptions) open() (*pipeline.Backend, pipeline.LoadOptions, error) {
	cols, err := opts.columns()
	if err != nil {
		return nil, pipeline.LoadOptions{}, err
	}
	b, err := pipeline.OpenBackendWith(opts.Backend, pipeline.BackendOptions{GPUs: opts.GPUs, Model: opts.model})
	if err != nil {
		return nil, pipeline.LoadOptions{}, libraryError(err)
	}
	return b, pipeline.LoadOptions{
		Columns: cols, Format: opts.Format, Undirected: opts.Undirected, SkipInvalid: opts.SkipInvalid,
		Weights: convert.FiniteWeights, Stdin: opts.Stdin, Place: b.Placer(nil, opts.Undirected),
	}, nil
}

// text checks Header and Delimiter against the format of input (Format,
// or its extension), as gpipe run does --header and --delimiter: each
// applies to the formats it says something of, and is refused for others
// rather than ignored.
func (opts LoadOptions) text(input string) (edges.Header, rune, error) {
	header, ok := edges.ParseHeader(opts.Header)
	if !ok {
		return "", 0, usererr.New(usererr.Usage, fmt.Sprintf("LoadOptions.Header %q is not yes, no or auto", opts.Header),
			`set it to "yes", "no" or "auto" (or leave it empty: auto)`)
	}
	format := opts.Format
	if format == "" && input != "-" {
		format, _ = ingest.FormatOf(input)
	}
	csvLike := format == ingest.FormatCSV || format == ingest.FormatTSV
	if opts.Delimiter != 0 && !csvLike {
		return "", 0, usererr.New(usererr.Usage, fmt.Sprintf("LoadOptions.Delimiter applies to CSV and TSV inputs, and %s is not one", input),
			`leave it unset, or set LoadOptions.Format to "csv"`)
	}
	if opts.Header != "" && !csvLike && format != ingest.FormatText {
		return "", 0, usererr.New(usererr.Usage, fmt.Sprintf("LoadOptions.Header applies to CSV, TSV and edge list inputs, and %s is none of them", input),
			"leave it unset")
	}
	var delim rune
	if opts.Delimiter != 0 {
		d, err := csv.ParseDelimiter(string(opts.Delimiter))
		if err != nil {
			return "", 0, libraryError(err)
		}
		delim = d
	}
	if header == edges.HeaderNo && csvLike && (opts.Src != "" || opts.Dst != "" || opts.Weight != "") {
		return "", 0, usererr.New(usererr.Usage, `LoadOptions.Header "no" with column names: a file without a header line has no column names (its fields are src, dst [, weight] by position)`,
			`leave Src, Dst and Weight unset, or read the header line with Header "yes"`)
	}
	return header, delim, nil
}

// columns are the edge columns the options name, the weight read unless
// Unweighted.
func (opts LoadOptions) columns() (edges.Columns, error) {
	if opts.Unweighted && opts.Weight != "" {
		return edges.Columns{}, usererr.New(usererr.Usage,
			fmt.Sprintf("LoadOptions names the weight column %q and says Unweighted", opts.Weight), "leave one of them out")
	}
	return edges.Columns{Src: opts.Src, Dst: opts.Dst, Weight: opts.Weight,
		WeightExplicit: opts.Weight != "", ReadWeight: !opts.Unweighted}, nil
}

// NumVertices is the number of vertices: every key of an edge.
func (g *Graph) NumVertices() int { return g.g.NumVertices() }

// NumEdges is the number of stored directed edges, after cleaning: twice
// the distinct edges of an undirected graph.
func (g *Graph) NumEdges() int64 { return g.g.NumEdges() }

// Stats says what reading and building the graph did and cost.
func (g *Graph) Stats() GraphStats {
	return GraphStats{
		RowsRead: g.g.RowsRead, RowsSkipped: g.g.Skipped.Total(), Skipped: g.g.Skipped,
		InputEdges: g.g.Stats.InputEdges, SelfLoops: g.g.Stats.SelfLoops, MergedEdges: g.g.Stats.Merged,
		Weighted: g.g.Weighted, Directed: g.g.Directed,
		ReadTime: g.g.ReadTime, BuildTime: g.g.BuildTime,
		BuildDevice: g.g.Built.Device, BuildReason: g.g.Built.Reason,
		GPUSetup: g.g.Setup.Took, GPUSetupHidden: g.g.Setup.Hidden,
	}
}

// GraphStats are what reading and building a graph did and cost.
type GraphStats struct {
	// RowsRead counts the input's rows, skipped ones included, and
	// RowsSkipped the rows SkipInvalid dropped, which Skipped counts by
	// reason.
	RowsRead, RowsSkipped int64
	Skipped               map[string]int64
	// InputEdges counts the edges that entered the build; SelfLoops those
	// dropped as self loops, MergedEdges the parallel edges merged into
	// another (keeping the smallest weight).
	InputEdges, SelfLoops, MergedEdges int64
	// Weighted says the graph has a weight column's weights (else every
	// weight is 1); Directed that it is not undirected.
	Weighted, Directed bool
	// ReadTime and BuildTime are the two stages' wall times (for
	// FromRecords, the read checks the records and takes their columns).
	ReadTime, BuildTime time.Duration
	// BuildDevice is where the graph was built, "gpu" or "cpu", and
	// BuildReason why the host built a graph a GPU may run on.
	BuildDevice, BuildReason string
	// GPUSetup is the GPU's set-up that Load began (the driver, the
	// context, the build's staging ring and kernels; 0 where none was
	// needed or it was done before), and GPUSetupHidden the part of it
	// done while the input was read.
	GPUSetup, GPUSetupHidden time.Duration
}

// Release frees the graph, on the host and the GPUs. Records taken from
// its results stay valid.
func (g *Graph) Release() {
	if g.g == nil {
		return
	}
	g.backend.Release(g.g.Graph)
	g.g.Release()
	g.g = nil
}
