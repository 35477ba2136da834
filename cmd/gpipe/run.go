package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/csv"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/vprog"
	"github.com/gpipe/gpipe/sink"
)

const semantics = `Graph semantics:
   Edges are directed unless --undirected, which makes every edge count in both
   directions. Self loops are dropped. Parallel edges are merged into one edge
   with the minimum weight. Weights come from --weight-col (default "weight");
   where that column is absent every weight is 1 (a note says so; --unweighted
   says it is meant); bfs, pagerank and cc use no weights and do not read it.
   Vertex keys may be int32, int64, uint32, uint64 or string; the output has
   one row per vertex that appears in any edge, in ascending key order, and its
   "vertex" column has the input's key type. Unreachable vertices get nulls.

Operators and their columns:
   bfs       depth (int32), parent (key); the source is its own parent
   sssp      distance (float64), parent (key); weights must be >= 0
   pagerank  rank (float64): damping 0.85, the rank of vertices without
             out-edges spread uniformly, start 1/n, stop when the L1 change
             is below --tolerance or after --max-iterations; ranks sum to 1;
             networkx.pagerank(G, weight=None): edge weights are not used;
             --weighted: networkx.pagerank(G), each out-edge weighed by its
             weight over the vertex's total (weights >= 0; a vertex whose
             out-edges weigh 0 in all is dangling)
   cc        component (key): the smallest key of the vertex's weakly
             connected component
   sswp      width (float64): the widest-path bottleneck from the source,
             +Inf for the source itself

`

// formatsHelp is the rest of run's help, after the GPU strategies.
const formatsHelp = `Formats, by extension: .parquet/.pq, .arrow/.feather/.ipc (Arrow IPC file),
   .arrows (Arrow IPC stream), .csv; input also .tsv (CSV with tabs),
   .txt/.el/.wel/.edges/.snap (whitespace edge lists, # and % comments) and .mtx
   (Matrix Market). CSV and TSV: a header line names the columns, or without one
   (--header no, or auto when the first line is data like the rest) the fields
   are src, dst [, weight]; --delimiter for ; or |. "-" is stdin or stdout: on
   stdin a Parquet or Arrow IPC file or stream (told from its first bytes), or
   the format --input-format names; on stdout an Arrow IPC stream, or the
   format --output-format names.

Weights: sssp, sswp and pagerank --weighted read --weight-col; on a table
   without one every weight is 1, and gpipe says so (a note on stderr and in
   --json) unless --unweighted says that is meant (pagerank: unless --weighted
   is left out). Unweighted pagerank on a table with a weight column says
   that it ignored it. DECIMAL weights are read as float64, with a note where
   one has more digits than a float64 holds. Integer key columns of different
   types (int32 and int64) are read as one type that holds both.

Datasets and object stores: --input DIR, a glob (DIR/*/part-*.parquet) or
   s3://BUCKET/PREFIX/ reads every part file as one table (names starting
   with _ or . are skipped; key=value directories are Hive partitions, not
   columns); s3:// and https:// files are read by ranged GETs. --output DIR/
   or s3://BUCKET/PREFIX/ writes part-00000.parquet, ... and _SUCCESS, the
   whole output replaced at once; an s3:// object appears only when its
   multipart upload completes.

Exit codes: 0 success, 1 internal error or a failed write (full disk), 2 bad
   flags or parameters, 3 bad input data or an unknown source key, 4 backend
   unavailable, 130 interrupted; 141 (from the shell) the program reading
   --output - stopped early (SIGPIPE: gpipe ends quietly, as cat does).`

// checksumFlag is --checksum, in run and gen.
func checksumFlag() cli.Flag {
	return &cli.BoolFlag{Name: "checksum", Usage: "write the output's SHA-256 beside it, in OUTPUT.sha256 (as sha256sum -c reads it), " +
		"which gpipe checks when it reads OUTPUT; not with --output -"}
}

// unweightedFlag is --unweighted, in run and bench.
func unweightedFlag() cli.Flag {
	return &cli.BoolFlag{Name: "unweighted", Usage: "read no weight column: every weight is 1, as meant (sssp and sswp note weights taken as 1 otherwise)"}
}

// quietFlag is --quiet, in run, bench and gen.
func quietFlag() cli.Flag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress and no summary line on stderr (errors, warnings and notes still)"}
}

// textFlags say how CSV and text inputs are read, in run and bench.
func textFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "header", Value: "auto", Usage: "CSV, TSV and edge lists: yes, no or auto (a CSV's first line is a header unless it is data like the lines after it; an edge list's header line is refused)"},
		&cli.StringFlag{Name: "delimiter", Usage: "CSV: the field delimiter, one character or tab", DefaultText: ", (tab for .tsv)"},
	}
}

// loadFlags checks the flags run and bench share about the load (--gpus;
// --unweighted against --weight-col) and returns the text reader's header
// and delimiter.
func loadFlags(c *cli.Context) (edges.Header, rune, error) {
	if err := checkGPUsFlag(c); err != nil {
		return "", 0, err
	}
	header, delim, err := textOptions(c)
	if err != nil {
		return "", 0, err
	}
	if c.Bool("unweighted") && c.IsSet("weight-col") {
		return "", 0, usererr.New(usererr.Usage, "--unweighted with --weight-col: one reads no weights, the other names them", "leave one of them out")
	}
	return header, delim, nil
}

// textOptions reads --header and --delimiter, refusing them for formats
// they do not apply to.
func textOptions(c *cli.Context) (edges.Header, rune, error) {
	header, ok := edges.ParseHeader(c.String("header"))
	if !ok {
		return "", 0, usererr.New(usererr.Usage, fmt.Sprintf("--header %s is not yes, no or auto", echo.Quote(c.String("header"))), "pass --header yes, no or auto")
	}
	format := c.String("input-format")
	if format == "" && c.String("input") != "" && c.String("input") != "-" {
		format, _ = ingest.FormatOf(c.String("input"))
	}
	csvLike := format == ingest.FormatCSV || format == ingest.FormatTSV
	var delim rune
	if c.IsSet("delimiter") {
		if !csvLike {
			return "", 0, usererr.New(usererr.Usage, fmt.Sprintf("--delimiter applies to CSV and TSV inputs, and %s is %s", c.String("input"), formatName(format)),
				"leave it out, or name the format with --input-format csv")
		}
		var err error
		if delim, err = csv.ParseDelimiter(c.String("delimiter")); err != nil {
			return "", 0, err
		}
	}
	if c.IsSet("header") && !csvLike && format != ingest.FormatText {
		return "", 0, usererr.New(usererr.Usage, fmt.Sprintf("--header applies to CSV, TSV and edge list inputs, and %s is %s", c.String("input"), formatName(format)),
			"leave it out")
	}
	if header == edges.HeaderNo && csvLike {
		for _, name := range []string{"src-col", "dst-col", "weight-col"} {
			if c.IsSet(name) {
				return "", 0, usererr.New(usererr.Usage, fmt.Sprintf("--%s with --header no: a file without a header line has no column names (its fields are src, dst [, weight] by position)", name),
					"leave it out, or read the header line with --header yes")
			}
		}
	}
	return header, delim, nil
}

// formatName names an input format for messages: "a Parquet file".
func formatName(format string) string {
	switch format {
	case ingest.FormatParquet:
		return "a Parquet file"
	case ingest.FormatArrowFile:
		return "an Arrow IPC file"
	case ingest.FormatArrowStream, "":
		return "an Arrow IPC stream"
	case ingest.FormatMTX:
		return "a Matrix Market file"
	}
	return "format " + format
}

// weightColUsage is --weight-col's help, in run and bench.
const weightColUsage = "edge weight column, read by sssp, sswp and pagerank --weighted (weight 1 where the default column is absent); " +
	"the operators that use no weights ignore it"

func runCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "read an edge table, run an operator, write one row per vertex",
		UsageText: "gpipe run --input EDGES --op OPERATOR [--source KEY] [--output RESULT] [options]",
		Description: "Examples:\n" +
			"   gpipe run --input edges.parquet --op bfs --source 42 --output out.parquet\n" +
			"   gpipe run --input - --op pagerank --output - < edges.arrows | next-tool\n\n" + semantics +
			"GPU strategies (--strategy; auto picks the fastest measured that fits in the\n" +
			"   GPU's memory, and --json says which and why):\n" + gpuop.StrategiesHelp() +
			"   vertex programs (--program): " + strings.Join(vprog.Strategies(), ", ") + "\n\n" + formatsHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "edge table `PATH`: a file, a directory or glob of part files (Hive key=value directories too), " +
				"an s3://BUCKET/KEY object or s3://BUCKET/PREFIX/ dataset, an https:// URL, or \"-\" (stdin: Parquet or Arrow IPC, or the format --input-format names)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "result `PATH`: a file, DIR/ (part files), s3://BUCKET/KEY or s3://BUCKET/PREFIX/, " +
				"or \"-\" (Arrow IPC stream on stdout); without it, a summary is printed"},
			&cli.StringFlag{Name: "op", Usage: "operator: " + strings.Join(operators.Names(), ", ")},
			&cli.StringFlag{Name: "program", Usage: "run the vertex program in `FILE` instead of an operator (docs/vertex-programs.md; examples/programs has CuSha's eight)"},
			&cli.StringFlag{Name: "source", Aliases: []string{"s"}, Usage: "start vertex `KEY` for bfs, sssp and sswp, as it appears in the input"},
			&cli.StringFlag{Name: "src-col", Value: "src", Usage: "source vertex column"},
			&cli.StringFlag{Name: "dst-col", Value: "dst", Usage: "destination vertex column"},
			&cli.StringFlag{Name: "weight-col", Value: "weight", Usage: weightColUsage},
			unweightedFlag(),
			&cli.BoolFlag{Name: "undirected", Usage: "every edge counts in both directions"},
			&cli.StringFlag{Name: "backend", Value: "auto", Usage: "auto, cpu or gpu"},
			&cli.IntFlag{Name: "gpus", Value: 0, Usage: "GPUs to spread bfs, pagerank, sssp, sswp and cc over, the graph cut by vertex range (0: every usable GPU where that is faster or one GPU is too small; 1: one GPU)"},
			&cli.BoolFlag{Name: "skip-invalid", Usage: "drop rows with null keys or invalid weights (counted on stderr) instead of failing"},
			&cli.BoolFlag{Name: "json", Usage: "print stage timings and counts as one JSON object on stderr"},
			&cli.StringFlag{Name: "input-format", Usage: "input format, overriding the extension: parquet, arrow, arrows, csv, tsv, text, mtx"},
			&cli.StringFlag{Name: "output-format", Usage: "output format, overriding the extension: parquet, arrow, arrows, csv"},
			checksumFlag(),
			quietFlag(),
		}, append(append(textFlags(), writeFlags()...), paramFlags()...)...),
		Before: e.endOnSecondSignal,
		Action: func(c *cli.Context) error { return runAction(c, e) },
	}
}

// paramFlags are the operator parameters, named as in operators.Params.
func paramFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Float64Flag{Name: "tolerance", Usage: "pagerank: stop when the L1 change is below this", DefaultText: "1e-9"},
		&cli.IntFlag{Name: "max-iterations", Usage: "pagerank: most iterations", DefaultText: "1000"},
		&cli.Float64Flag{Name: "damping", Usage: "pagerank: damping factor", DefaultText: "0.85"},
		&cli.BoolFlag{Name: "weighted", Usage: "pagerank: weigh each out-edge by its weight (--weight-col) over the vertex's total, as networkx.pagerank(G) does by default; weights must be >= 0"},
		&cli.Float64Flag{Name: "delta", Usage: "sssp, sswp: Δ-stepping bucket width; 0 chooses", DefaultText: "chosen from the weights and the degrees"},
		&cli.StringFlag{Name: "strategy", Usage: "GPU strategy: " + strings.Join(gpuop.StrategyNames(), ", ") + " or auto (which operator takes which: \"GPU strategies\" below)", DefaultText: "auto"},
		&cli.IntFlag{Name: "vwarp", Usage: "GPU virtual warp size K: 1, 2, 4, 8, 16 or 32; 0 chooses", DefaultText: "from the average degree"},
		&cli.Int64Flag{Name: "defer-outliers", Usage: "GPU: defer vertices with more edges than this to whole blocks; -1: off, 0: default", DefaultText: "1024"},
		&cli.BoolFlag{Name: "dynamic", Usage: "GPU: warps take chunks of vertices from a global counter"},
		&cli.IntFlag{Name: "chunk-size", Usage: "GPU: vertices a virtual warp takes at a time (with --dynamic, from the counter); 0 chooses", DefaultText: "8 × K"},
		&cli.IntFlag{Name: "vertex-group", Usage: "GPU, kites: vertices a bit of the activeness mask stands for (Vertex Grouping): 1, 2, 4, 8, 16 or 32; 0 chooses", DefaultText: "the smallest that fits"},
	}
}

// paramsFor reads the operator parameters and checks that each one given
// applies to the operator op: a flag meant for another operator, or a 0 that
// would silently mean "the default", is refused rather than ignored. The
// column flags are not parameters: they describe the table, which a
// pipeline names once for whatever operator it runs.
func paramsFor(c *cli.Context, op string) (operators.Params, error) {
	p := paramsFrom(c)
	o, err := operators.Lookup(op)
	if err != nil {
		return p, err
	}
	return paramsOf(c, o)
}

// paramsOf is paramsFor with the operator itself.
func paramsOf(c *cli.Context, o operators.Operator) (operators.Params, error) {
	p := paramsFrom(c)
	var set []string
	for _, f := range append(paramFlags(), &cli.StringFlag{Name: "source"}) {
		if name := f.Names()[0]; c.IsSet(name) {
			set = append(set, strings.ReplaceAll(name, "-", "_"))
		}
	}
	flag := func(param string) string { return "--" + strings.ReplaceAll(param, "_", "-") }
	if err := operators.CheckSet(o, p, set, flag); err != nil {
		return p, err
	}
	return p, nil
}

// checkColumnFlags refuses column names for inputs whose columns have none:
// edge lists and Matrix Market files are src dst [weight] by position.
func checkColumnFlags(c *cli.Context) error {
	format := c.String("input-format")
	if format == "" {
		format, _ = ingest.FormatOf(c.String("input"))
	}
	if format != ingest.FormatText && format != ingest.FormatMTX {
		return nil
	}
	for _, name := range []string{"src-col", "dst-col", "weight-col"} {
		if c.IsSet(name) {
			return usererr.New(usererr.Usage, fmt.Sprintf("--%s does not apply to %s: its fields have no names (src dst [weight], by position)", name, c.String("input")),
				"leave it out")
		}
	}
	return nil
}

func paramsFrom(c *cli.Context) operators.Params {
	return operators.Params{
		Source:        c.String("source"),
		Tolerance:     c.Float64("tolerance"),
		MaxIterations: c.Int("max-iterations"),
		Damping:       c.Float64("damping"),
		Weighted:      c.Bool("weighted"),
		Delta:         c.Float64("delta"),
		Strategy:      c.String("strategy"),
		VWarp:         c.Int("vwarp"),
		DeferOutliers: c.Int64("defer-outliers"),
		Dynamic:       c.Bool("dynamic"),
		ChunkSize:     c.Int("chunk-size"),
		VertexGroup:   c.Int("vertex-group"),
	}
}

func runAction(c *cli.Context, e *env) error {
	if c.NArg() > 0 {
		return usererr.New(usererr.Usage, fmt.Sprintf("unexpected argument %q", c.Args().First()), "see 'gpipe run --help'")
	}
	if c.String("input") == "" {
		return usererr.New(usererr.Usage, "--input is required", "see 'gpipe run --help'")
	}
	prog, err := programFlag(c)
	if err != nil {
		return err
	}
	var params operators.Params
	if prog != nil {
		params, err = paramsOf(c, prog)
	} else {
		params, err = paramsFor(c, c.String("op"))
	}
	if err != nil {
		return err
	}
	if err := checkColumnFlags(c); err != nil {
		return err
	}
	if err := checkNotTerminal(e, c.String("output"), c.String("output-format")); err != nil {
		return err
	}
	header, delim, err := loadFlags(c)
	if err != nil {
		return err
	}
	sinkOpts, err := sinkOptions(c, e)
	if err != nil {
		return err
	}
	progress := newProgress(e.stderr, c.Bool("quiet"))
	defer progress.Stop()
	job := pipeline.Job{
		Input:    c.String("input"),
		Output:   c.String("output"),
		Op:       c.String("op"),
		Params:   params,
		Operator: prog,
		Backend:  c.String("backend"), GPUs: c.Int("gpus"), Unweighted: c.Bool("unweighted"),
		Load: pipeline.LoadOptions{
			Columns: edges.Columns{
				Src: c.String("src-col"), Dst: c.String("dst-col"), Weight: c.String("weight-col"),
				WeightExplicit: c.IsSet("weight-col"),
			},
			Format:      c.String("input-format"),
			Undirected:  c.Bool("undirected"),
			SkipInvalid: c.Bool("skip-invalid"),
			Stdin:       e.stdin,
			Stage:       progress.Stage(c.String("input")),
			Header:      header, Delimiter: delim, Progress: progress.Rows(),
			Store: sinkOpts.Store,
		},
		Sink: sinkOpts,
	}
	if err := programColumn(c, prog, &job.Load.Columns); err != nil {
		return err
	}
	// The operator's iterations show in the compute stage's progress line.
	rep, err := pipeline.RunJob(operators.WithProgress(c.Context, progress.Iterated), job)
	progress.Stop()
	if err != nil {
		return err
	}
	defer rep.Release()
	return reportRun(c, e, rep)
}

// reportRun says what a successful run did: skipped rows, warnings and
// notes on stderr, the --json object, and the summary (on stdout without
// --output, else one line on stderr).
func reportRun(c *cli.Context, e *env, rep *pipeline.Report) error {
	if rep.RowsSkipped > 0 {
		fmt.Fprintf(e.stderr, "gpipe: skipped %s (%s)\n", invalidRows(rep.RowsSkipped), edges.Skips(rep.Skipped))
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stderr, "gpipe: warning: %s\n", w)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(e.stderr, "gpipe: note: %s\n", n)
	}
	if pipeline.ByCostModel(rep.BackendReason) && (rep.Backend == "gpu" || rep.BuildDevice == "gpu") && !c.Bool("json") && !c.Bool("quiet") {
		// auto weighed the GPU the job used against the CPU: both
		// estimates (a job that never touched a GPU says nothing).
		fmt.Fprintf(e.stderr, "gpipe: %s ran it: %s\n", rep.Backend, rep.BackendReason)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(e.stderr)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	switch {
	case rep.Output == "":
		printSummary(e.stdout, rep)
	case rep.Output != "-" && !c.Bool("json") && !c.Bool("quiet"):
		// A job's log shows what it did; a filter (--output -) and --json
		// (which says it all) stay quiet.
		fmt.Fprintln(e.stderr, summaryLine(rep))
	}
	return nil
}

// summaryLine is the one line a run with --output ends with on stderr:
// "gpipe: bfs on e.parquet: 1000 rows, 600 vertices, 1800 edges; cpu
// (vwc); 0.412 s (read 0.100, build 0.050, compute 0.200, write 0.062);
// wrote out.parquet".
func summaryLine(rep *pipeline.Report) string {
	t := rep.Timings
	strategy := ""
	if rep.Strategy != "" {
		strategy = " (" + rep.Strategy + ")"
	}
	return fmt.Sprintf("gpipe: %s on %s: %s, %s, %s; %s%s; %.3f s (read %.3f, build %.3f, compute %.3f, write %.3f); wrote %s",
		rep.Op, rep.Input, count(rep.RowsRead, "row", "rows"), count(rep.Vertices, "vertex", "vertices"), count(rep.Edges, "edge", "edges"),
		rep.Backend, strategy, t.Total, t.Read, t.Build, t.Compute, t.Write, rep.Output)
}

// invalidRows is "1 invalid row" or "n invalid rows".
func invalidRows(n int64) string {
	if n == 1 {
		return "1 invalid row"
	}
	return fmt.Sprintf("%d invalid rows", n)
}

// checkNotTerminal refuses to send a binary format to standard output when
// that is a terminal, as gzip and zstd do: it would fill the screen with
// bytes no one can read, and may upset the terminal.
func checkNotTerminal(e *env, output, format string) error {
	if output != "-" || !isTerminal(e.stdout) {
		return nil
	}
	if format == "" {
		format = sink.FormatArrowStream
	}
	if format == sink.FormatCSV || format == ingest.FormatText {
		return nil
	}
	names := map[string]string{sink.FormatArrowStream: "an Arrow IPC stream", sink.FormatArrowFile: "an Arrow IPC file", sink.FormatParquet: "Parquet"}
	what, ok := names[format]
	if !ok {
		what = format
	}
	return usererr.New(usererr.Usage, fmt.Sprintf("standard output is a terminal; refusing to write %s to it", what),
		"redirect it (> out.arrows, | next-tool), pass --output FILE, or --output-format csv to read it")
}

// isTerminal says whether w is a terminal. Other character devices
// (/dev/null, /dev/full) are not: writing to them is what a redirect asks for.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// checkGPUsFlag refuses --gpus where no GPU may run the job.
func checkGPUsFlag(c *cli.Context) error {
	switch {
	case c.Int("gpus") < 0:
		return usererr.Newf(usererr.Usage, "--gpus %d must be at least 1 (or 0 for every usable GPU)", c.Int("gpus"))
	case c.IsSet("gpus") && c.String("backend") == "cpu":
		return usererr.New(usererr.Usage, fmt.Sprintf("--gpus %d with --backend cpu", c.Int("gpus")), "leave --gpus out, or use --backend gpu or auto")
	}
	return nil
}
