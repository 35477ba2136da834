package main

import (
	"fmt"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/internal/usererr"
)

// roadCommand is gpipe gen road: gen.Road.
func roadCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "road",
		Usage:     "a road-like graph: planar, connected, degree 2 to 4, Euclidean weights",
		UsageText: "gpipe gen road --vertices 16000000 [--seed 1] [--weighted] --output road.parquet",
		Description: "Writes a road network's shape at any size: vertices are points jittered inside the cells\n" +
			"of a near-square grid of 100 m cells, vertex r·cols + c in cell (r, c); streets join\n" +
			"neighbouring cells: a random spanning tree (so every vertex is reached), each other\n" +
			"neighbour pair with probability 0.15, and a second street at every dead end. Planar,\n" +
			"degree 2 to 4 (average about 2.8), a diameter of about the grid's side. Each street once\n" +
			"(src < dst), so run it with --undirected. With --weighted a float64 weight column: each\n" +
			"street's length in metres, rounded. The same seed gives the same graph on any machine.",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "vertices", Usage: "vertices, rounded up to a rows × cols grid"},
		}, genOutputFlags()...),
		Action: func(c *cli.Context) error {
			if !c.IsSet("vertices") || c.String("output") == "" {
				return usererr.New(usererr.Usage, "--vertices and --output are required", "see 'gpipe gen road --help'")
			}
			made := new(atomic.Int64)
			return generate(c, e, gen.Road{Vertices: c.Int("vertices"), Seed: c.Uint64("seed"), Weighted: c.Bool("weighted"), Progress: made},
				fmt.Sprintf("road of %d vertices", c.Int("vertices")), made)
		},
	}
}
