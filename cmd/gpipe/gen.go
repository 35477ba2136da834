package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/sink"
)

func genCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "gen",
		Usage: "generate a synthetic edge table",
		// Reached only without a known generator.
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usererr.New(usererr.Usage, "name a generator: gpipe gen kronecker ...", "see 'gpipe gen kronecker --help'")
			}
			return usererr.New(usererr.Usage, fmt.Sprintf("unknown generator %q", c.Args().First()), "gpipe gen has one generator, kronecker; see 'gpipe gen kronecker --help'")
		},
		Subcommands: []*cli.Command{{
			Name:      "kronecker",
			Usage:     "a Graph 500 Kronecker graph (A=0.57 B=0.19 C=0.19, vertex labels randomly permuted)",
			UsageText: "gpipe gen kronecker --scale 16 [--edge-factor 16] [--seed 1] [--weighted] --output k16.parquet",
			Description: "Writes 2^scale vertices' worth of edges, edge-factor × 2^scale rows, with int64 columns\n" +
				"src and dst, and with --weighted a float64 weight column of integers drawn uniformly from\n" +
				"[1, 255] (the GAP benchmark suite's weights). The same seed gives the same graph on any machine.",
			Flags: []cli.Flag{
				&cli.IntFlag{Name: "scale", Usage: "log2 of the number of vertices (1 to 31)"},
				&cli.IntFlag{Name: "edge-factor", Value: 16, Usage: "edges per vertex"},
				&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
				&cli.BoolFlag{Name: "weighted", Usage: "add a weight column"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "edge table `PATH` (\"-\": Arrow IPC stream on stdout)"},
				&cli.StringFlag{Name: "output-format", Usage: "override the extension: parquet, arrow, arrows, csv"},
			},
			Action: func(c *cli.Context) error {
				if !c.IsSet("scale") || c.String("output") == "" {
					return usererr.New(usererr.Usage, "--scale and --output are required", "see 'gpipe gen kronecker --help'")
				}
				start := time.Now()
				t, err := ingest.Kronecker{
					Scale: c.Int("scale"), EdgeFactor: c.Int("edge-factor"), Seed: c.Uint64("seed"), Weighted: c.Bool("weighted"),
				}.Generate(c.Context)
				if err != nil {
					return err
				}
				defer t.Release()
				if err := writeTable(c, e, t); err != nil {
					return err
				}
				if c.String("output") != "-" {
					fmt.Fprintf(e.stderr, "gpipe: wrote %d edges to %s in %.1f s\n", t.NumEdges(), c.String("output"), time.Since(start).Seconds())
				}
				return nil
			},
		}},
	}
}

// writeTable writes an edge table through the sink, record by record.
func writeTable(c *cli.Context, e *env, t *ingest.EdgeTable) error {
	w, err := sink.Create(c.String("output"), t.Schema(), sink.Options{Format: c.String("output-format"), Stdout: e.stdout})
	if err != nil {
		return err
	}
	rdr := t.RecordReader()
	defer rdr.Release()
	for rdr.Next() {
		if err := c.Context.Err(); err != nil {
			w.Abort()
			return err
		}
		if err := w.Write(rdr.Record()); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}
