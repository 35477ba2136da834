package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/bench"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

func benchCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "load and build a graph once, then time an operator over several trials",
		UsageText: "gpipe bench (--input PATH | --gen kronecker:SCALE[:EDGEFACTOR] | --gen grid:ROWSxCOLS) (--op OP | --program FILE) [--backend cpu|gpu] [--strategy S[,S...]] [--trials N] [--json]",
		Description: "Trial times are the operator's own compute time (CUDA events on the GPU), after one\n" +
			"untimed warm-up run. bfs, sssp and sswp start each trial from a different random vertex\n" +
			"with out-edges (seeded). bfs reports GTEPS as Graph 500 does: input edges over time,\n" +
			"harmonic mean over trials. With --gen, sssp and sswp get GAP's weights (integers in [1, 255]).\n" +
			"--strategy may list several GPU strategies (vwc,gshards,cw): each runs on the same graph,\n" +
			"and each gets its report (--json: one object a line).",
		Flags:  benchFlags(),
		Before: e.endOnSecondSignal,
		Action: func(c *cli.Context) error { return runBench(e, c) },
	}
}

// benchFlags are bench's flags: the input, the operator or program, the
// trials, and the text and operator parameters run shares.
func benchFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "edge table `PATH` (also GAP's .el/.wel edge lists; a directory, glob or s3:// prefix of part files; an s3:// or https:// file)"},
		s3EndpointFlag(),
		&cli.StringFlag{Name: "gen", Usage: "generate the graph: kronecker:SCALE[:EDGEFACTOR] (edge factor 16 by default) or grid:ROWSxCOLS (add --undirected)"},
		&cli.StringFlag{Name: "op", Usage: "operator"},
		&cli.StringFlag{Name: "program", Usage: "time the vertex program in `FILE` instead of an operator (--strategy may list vwc, warpseg, kites, gshards)"},
		&cli.StringFlag{Name: "backend", Value: "cpu", Usage: "cpu, gpu or auto (the GPU when one is usable and the graph fits)"},
		&cli.IntFlag{Name: "gpus", Value: 0, Usage: "GPUs to spread bfs, pagerank, sssp, sswp and cc over, the graph cut by vertex range (0: every usable GPU where that is faster or one GPU is too small; 1: one GPU)"},
		&cli.IntFlag{Name: "trials", Value: 16, Usage: fmt.Sprintf("timed runs (at most %d)", bench.MaxTrials)},
		&cli.IntFlag{Name: "sources", Usage: fmt.Sprintf("distinct random sources the trials cycle through (default: one per trial; at most %d)", bench.MaxTrials)},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the generator and of the sources"},
		&cli.BoolFlag{Name: "undirected", Usage: "every edge counts in both directions"},
		&cli.StringFlag{Name: "src-col", Value: "src", Usage: "source vertex column"},
		&cli.StringFlag{Name: "dst-col", Value: "dst", Usage: "destination vertex column"},
		&cli.StringFlag{Name: "weight-col", Value: "weight", Usage: weightColUsage},
		unweightedFlag(),
		&cli.StringFlag{Name: "input-format", Usage: "input format, overriding the extension"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object on stdout"},
		&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the timed trials to `FILE` (go tool pprof)"},
		quietFlag(),
	}, append(textFlags(), paramFlags()...)...)
}

// runBench is bench's action: it checks the flags, loads and builds the
// graph once, times the trials and prints one report per strategy.
func runBench(e *env, c *cli.Context) error {
	prog, params, err := benchOperator(c)
	if err != nil {
		return err
	}
	if err := checkColumnFlags(c); err != nil {
		return err
	}
	if err := checkSources(c, prog); err != nil {
		return err
	}
	var profile io.Writer
	if path := c.String("cpuprofile"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return usererr.New(usererr.Usage, fmt.Sprintf("cannot write the CPU profile: %v", err), "give a writable path to --cpuprofile")
		}
		defer f.Close()
		profile = f
	}
	header, delim, err := loadFlags(c)
	if err != nil {
		return err
	}
	store, err := storeOptions(c)
	if err != nil {
		return err
	}
	progress := newProgress(e.stderr, c.Bool("quiet"))
	defer progress.Stop()
	// The trials' iterations show in the progress line.
	ctx := operators.WithProgress(c.Context, progress.Iterated)
	cols := edges.Columns{
		Src: c.String("src-col"), Dst: c.String("dst-col"), Weight: c.String("weight-col"),
		WeightExplicit: c.IsSet("weight-col"),
	}
	if err := programColumn(c, prog, &cols); err != nil {
		return err
	}
	reps, err := bench.Run(ctx, bench.Config{
		Input: c.String("input"), Gen: c.String("gen"),
		Load: pipeline.LoadOptions{
			Columns:    cols,
			Format:     c.String("input-format"),
			Undirected: c.Bool("undirected"),
			Stdin:      e.stdin,
			Stage:      progress.Stage(c.String("input") + c.String("gen")),
			Header:     header, Delimiter: delim, Progress: progress.Rows(),
			Store: store,
		},
		Unweighted: c.Bool("unweighted"),
		Op:         c.String("op"), Operator: prog, Params: params, Backend: c.String("backend"), GPUs: c.Int("gpus"),
		Trials: c.Int("trials"), Sources: c.Int("sources"), Seed: c.Uint64("seed"),
		Stage: progress.Stage(""), CPUProfile: profile,
	})
	progress.Stop()
	if err != nil {
		return err
	}
	for _, rep := range reps {
		if c.Bool("json") {
			if err := json.NewEncoder(e.stdout).Encode(rep); err != nil {
				return err
			}
			continue
		}
		printBench(e, rep)
	}
	return nil
}

// checkSources refuses --sources below 1 or for an operator that takes no
// source.
func checkSources(c *cli.Context, prog operators.Operator) error {
	if !c.IsSet("sources") {
		return nil
	}
	if c.Int("sources") < 1 {
		return usererr.Newf(usererr.Usage, "--sources %d must be at least 1", c.Int("sources"))
	}
	o := prog
	if o == nil {
		o, _ = operators.Lookup(c.String("op"))
	}
	if !o.Spec().NeedsSource {
		return usererr.New(usererr.Usage, fmt.Sprintf("--sources does not apply to operator %s (it takes no source)", o.Spec().Name), "leave it out")
	}
	return nil
}

func printBench(e *env, rep *bench.Report) {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "graph\t%s: %d vertices, %d edges (%d input edges)\n", rep.Input, rep.Vertices, rep.Edges, rep.InputEdges)
	fmt.Fprintf(tw, "read, build\t%.3f s, %.3f s\n", rep.ReadS, rep.BuildS)
	if rep.PeakRSSBytes > 0 {
		fmt.Fprintf(tw, "memory\tpeak %s after building (%.1f bytes/input edge); input columns %s, layout %s\n",
			bytesize.Format(rep.PeakRSSBytes), rep.BytesPerEdge, bytesize.Format(rep.InputBytes), bytesize.Format(rep.LayoutBytes))
	}
	fmt.Fprintf(tw, "operator\t%s on %s (%s)\n", rep.Op, rep.Backend, rep.Strategy)
	if rep.GPUs > 1 {
		fmt.Fprintf(tw, "gpus\t%d\n", rep.GPUs)
	}
	if rep.StrategyReason != "" {
		fmt.Fprintf(tw, "strategy\t%s\n", rep.StrategyReason)
	}
	fmt.Fprintf(tw, "trials\t%d: median %.3f ms, min %.3f ms\n", len(rep.TrialsS), rep.MedianS*1e3, rep.MinS*1e3)
	if rep.GTEPS > 0 {
		fmt.Fprintf(tw, "GTEPS\t%.3f (harmonic mean)\n", rep.GTEPS)
	}
	if rep.Iterations > 0 {
		fmt.Fprintf(tw, "iterations\t%d, %.3f ms each\n", rep.Iterations, rep.SPerIteration*1e3)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	tw.Flush()
}

// benchOperator is the vertex program --program names (nil for --op's
// operator) and the run's parameters.
func benchOperator(c *cli.Context) (operators.Operator, operators.Params, error) {
	prog, err := programFlag(c)
	switch {
	case err != nil:
		return nil, operators.Params{}, err
	case prog == nil:
		p, err := paramsFor(c, c.String("op"))
		return nil, p, err
	}
	p, err := paramsOf(c, prog)
	return prog, p, err
}
