package main

import (
	"bufio"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/ingest/objstore"
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
				return usererr.New(usererr.Usage, "name a generator: gpipe gen kronecker ..., gpipe gen grid ... or gpipe gen road ...", "see 'gpipe gen kronecker --help', 'gpipe gen grid --help' or 'gpipe gen road --help'")
			}
			return usererr.New(usererr.Usage, fmt.Sprintf("unknown generator %q", c.Args().First()), "gpipe gen has three generators, kronecker, grid and road; see 'gpipe gen kronecker --help', 'gpipe gen grid --help' or 'gpipe gen road --help'")
		},
		Before: e.endOnSecondSignal,
		Subcommands: []*cli.Command{{
			Name:      "kronecker",
			Usage:     "a Graph 500 Kronecker graph (A=0.57 B=0.19 C=0.19, vertex labels randomly permuted)",
			UsageText: "gpipe gen kronecker --scale 16 [--edge-factor 16] [--seed 1] [--weighted] --output k16.parquet",
			Description: "Writes 2^scale vertices' worth of edges, edge-factor × 2^scale rows, with int64 columns\n" +
				"src and dst, and with --weighted a float64 weight column of integers drawn uniformly from\n" +
				"[1, 255] (the GAP benchmark suite's weights). The same seed gives the same graph on any machine.",
			Flags: append([]cli.Flag{
				&cli.IntFlag{Name: "scale", Usage: "log2 of the number of vertices (1 to 31)"},
				&cli.IntFlag{Name: "edge-factor", Value: 16, Usage: "edges per vertex"},
			}, genOutputFlags()...),
			Action: func(c *cli.Context) error {
				if !c.IsSet("scale") || c.String("output") == "" {
					return usererr.New(usererr.Usage, "--scale and --output are required", "see 'gpipe gen kronecker --help'")
				}
				made := new(atomic.Int64)
				return generate(c, e, gen.Kronecker{
					Scale: c.Int("scale"), EdgeFactor: c.Int("edge-factor"), Seed: c.Uint64("seed"), Weighted: c.Bool("weighted"), Progress: made,
				}, fmt.Sprintf("kronecker scale %d", c.Int("scale")), made)
			},
		}, {
			Name:      "grid",
			Usage:     "a rows × cols grid, each vertex joined to its right and lower neighbours",
			UsageText: "gpipe gen grid --rows 1024 --cols 1024 [--seed 1] [--weighted] --output grid.parquet",
			Description: "Writes the 4-neighbour grid of rows × cols vertices, vertex r·cols + c, with int64 columns\n" +
				"src and dst: an edge (v, v+1) within each row and (v, v+cols) between rows, each once, so\n" +
				"run it with --undirected (the BFS depth of vertex r·cols + c from 0 is then r + c). With\n" +
				"--weighted a float64 weight column of integers drawn uniformly from [1, 255], the same for\n" +
				"the same seed; the edges are the same with or without weights.",
			Flags: append([]cli.Flag{
				&cli.IntFlag{Name: "rows", Usage: "rows of the grid"},
				&cli.IntFlag{Name: "cols", Usage: "columns of the grid (vertices per row)"},
			}, genOutputFlags()...),
			Action: func(c *cli.Context) error {
				if !c.IsSet("rows") || !c.IsSet("cols") || c.String("output") == "" {
					return usererr.New(usererr.Usage, "--rows, --cols and --output are required", "see 'gpipe gen grid --help'")
				}
				made := new(atomic.Int64)
				return generate(c, e, gen.Grid{Rows: c.Int("rows"), Cols: c.Int("cols"), Seed: c.Uint64("seed"), Weighted: c.Bool("weighted"), Progress: made},
					fmt.Sprintf("grid %dx%d", c.Int("rows"), c.Int("cols")), made)
			},
		}, roadCommand(e)},
	}
}

// genOutputFlags are the flags every generator takes: its seed, weights,
// and where the table goes.
func genOutputFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
		&cli.BoolFlag{Name: "weighted", Usage: "add a weight column"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "edge table `PATH`: a file, DIR/ (part files), s3://BUCKET/KEY or s3://BUCKET/PREFIX/, or \"-\" (Arrow IPC stream on stdout)"},
		&cli.StringFlag{Name: "output-format", Usage: "override the extension: parquet, arrow, arrows, csv, text (an edge list: src dst [weight] lines)"},
		edgeColumnsFlag(),
		checksumFlag(),
		quietFlag(),
	}, writeFlags()...)
}

// generate makes g's table (what names it for the progress line, made
// counts its edges as they are made) and writes it where --output says.
func generate(c *cli.Context, e *env, g gen.Generator, what string, made *atomic.Int64) error {
	if err := checkNotTerminal(e, c.String("output"), c.String("output-format")); err != nil {
		return err
	}
	if c.Bool("checksum") {
		if err := sink.CheckChecksum(c.String("output")); err != nil {
			return err
		}
	}
	opts, err := sinkOptions(c, e)
	if err != nil {
		return err
	}
	if _, ok := edgeListSeparator(c.String("output"), opts.Format); !ok {
		// Check the output before the generator's minutes, as run does.
		if err := sink.Check(c.String("output"), opts); err != nil {
			return err
		}
	}
	extra, err := parseEdgeColumns(c)
	if err != nil {
		return err
	}
	start := time.Now()
	progress := newProgress(e.stderr, c.Bool("quiet"))
	defer progress.Stop()
	progress.Begin("generating "+what, made, 0)
	t, err := g.Generate(c.Context)
	if err != nil {
		return err
	}
	defer t.Release()
	written := new(atomic.Int64)
	progress.Begin("writing "+c.String("output"), written, t.NumEdges())
	if extra != nil {
		extra.prepare(t)
	}
	if err := writeTable(c, e, t, opts, written, extra); err != nil {
		return err
	}
	progress.Stop()
	if c.String("output") != "-" && !c.Bool("quiet") {
		fmt.Fprintf(e.stderr, "gpipe: wrote %d edges to %s in %.1f s\n", t.NumEdges(), c.String("output"), time.Since(start).Seconds())
	}
	return nil
}

// writeTable writes an edge table through the sink, record by record, or
// as a whitespace edge list.
// written counts the rows written so far.
func writeTable(c *cli.Context, e *env, t *edges.Table, opts sink.Options, written *atomic.Int64, extra *edgeColumns) error {
	out, format := c.String("output"), c.String("output-format")
	if sep, ok := edgeListSeparator(out, format); ok {
		if sink.IsDirectory(out) || objstore.IsRemote(out) {
			return usererr.New(usererr.Usage, fmt.Sprintf("gpipe writes an edge list to one local file, not %s", out),
				"name a local file, or write Parquet (--output-format parquet) to a directory or an s3:// object")
		}
		if out == "-" {
			w := bufio.NewWriterSize(e.stdout, 1<<20)
			if err := writeEdgeLines(c, w, t, sep, written); err != nil {
				return err
			}
			return w.Flush()
		}
		return writeEdgeList(c, out, t, sep, written)
	}
	schema := t.Schema()
	if extra != nil {
		schema = extra.schema(schema)
	}
	w, err := sink.CreateContext(c.Context, out, schema, opts)
	if err != nil {
		return err
	}
	defer w.Abort()
	rdr := t.RecordReader()
	defer rdr.Release()
	for chunk := 0; rdr.Next(); chunk++ {
		rec := rdr.RecordBatch()
		if extra != nil {
			rec = extra.extend(rec, t.Chunks[chunk], schema)
		}
		err := writePieces(c, w, rec, written)
		if extra != nil {
			rec.Release() // the extended record is this loop's: one chunk's columns held at a time
		}
		if err != nil {
			return err
		}
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	return w.Close()
}

// writePieces writes rec in pieces of the writer's batches or smaller (the
// same output): a chunk is millions of rows, and checking for an interrupt
// between pieces keeps it prompt. written counts the rows.
func writePieces(c *cli.Context, w sink.Writer, rec arrow.RecordBatch, written *atomic.Int64) error {
	for lo := int64(0); lo < rec.NumRows(); lo += sink.DefaultIPCBatch {
		if err := c.Context.Err(); err != nil {
			return err
		}
		piece := rec.NewSlice(lo, min(lo+sink.DefaultIPCBatch, rec.NumRows()))
		err := w.Write(piece)
		written.Add(piece.NumRows())
		piece.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// edgeListSeparator says whether out (or format) is a whitespace edge list,
// and the separator its fields get: a tab for .tsv, else a space.
func edgeListSeparator(out, format string) (byte, bool) {
	if format != "" {
		return ' ', format == ingest.FormatText
	}
	switch ext := strings.ToLower(filepath.Ext(out)); ext {
	case ".tsv":
		return '\t', true
	case ".txt", ".el", ".wel", ".edges", ".snap":
		return ' ', true
	}
	return 0, false
}

// writeEdgeList writes t as "src dst [weight]" lines, as SNAP and the GAP
// benchmark suite read them (its .el and .wel), so that one generated graph
// can be run by both. The sink's file output writes it as it writes its
// tables: a temporary file beside out, renamed when complete.
func writeEdgeList(c *cli.Context, out string, t *edges.Table, sep byte, written *atomic.Int64) error {
	f, err := sink.CreateFile(out, c.Bool("checksum"))
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriterSize(f, 1<<20)
	if err := writeEdgeLines(c, w, t, sep, written); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// writeEdgeLines writes t's edges (int64 keys, as the generator makes
// them) to w, one "src dst [weight]" line each, checking for cancellation
// (and counting the lines in written) every linesPerCheck lines.
func writeEdgeLines(c *cli.Context, w *bufio.Writer, t *edges.Table, sep byte, written *atomic.Int64) error {
	const linesPerCheck = 1 << 16
	var line []byte
	for _, ch := range t.Chunks {
		for i, s := range ch.Src.Int64 {
			if i%linesPerCheck == 0 {
				if err := c.Context.Err(); err != nil {
					return err
				}
				written.Add(int64(min(linesPerCheck, len(ch.Src.Int64)-i)))
			}
			line = strconv.AppendInt(line[:0], s, 10)
			line = append(line, sep)
			line = strconv.AppendInt(line, ch.Dst.Int64[i], 10)
			if ch.Weight != nil {
				line = append(line, sep)
				line = strconv.AppendFloat(line, ch.Weight[i], 'g', -1, 64)
			}
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
	}
	return nil
}
