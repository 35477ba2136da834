// Command etl is a batch job that uses gpipe as a library: it loads an edge
// table once, runs PageRank and a BFS on the same graph, and writes both
// results as Parquet, as an ETL stage between a warehouse export and the
// next load.
//
//	go run ./examples/etl -input examples/data/karate.parquet -source 1 -out /tmp/karate
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/sink"
)

func main() {
	input := flag.String("input", "examples/data/karate.parquet", "edge table (src, dst columns)")
	source := flag.String("source", "1", "BFS start vertex key")
	out := flag.String("out", os.TempDir(), "directory for ranks.parquet and bfs.parquet")
	backend := flag.String("backend", "auto", "auto, cpu or gpu")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *input, *source, *out, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "etl:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, input, source, out, backendName string) error {
	// The simplest form: one call does read, build, compute and write.
	rep, err := pipeline.RunJob(ctx, pipeline.Job{
		Input: input, Output: filepath.Join(out, "ranks.parquet"), Op: "pagerank",
		Load: pipeline.LoadOptions{Undirected: true}, Backend: backendName,
	})
	if err != nil {
		return err
	}
	rep.Release()
	fmt.Printf("pagerank: %d vertices, %d iterations on %s, %.3f s in all\n",
		rep.Vertices, rep.Iterations, rep.Backend, rep.Timings.Total)

	// Stage by stage, to keep one graph for several queries.
	backend, err := pipeline.OpenBackend(backendName)
	if err != nil {
		return err
	}
	g, err := pipeline.Load(ctx, input, pipeline.LoadOptions{Undirected: true, Alloc: backend.Alloc()})
	if err != nil {
		return err
	}
	defer g.Release()
	defer backend.Release(g.Graph)
	bfs, _ := operators.Lookup("bfs")
	runner, _, err := backend.For(g.Graph, bfs, operators.Params{})
	if err != nil {
		return err
	}
	res, err := g.Run(ctx, "bfs", operators.Params{Source: source}, runner)
	if err != nil {
		return err
	}
	rec := res.Record(memory.DefaultAllocator) // columns: vertex, depth, parent
	defer rec.Release()
	if err := sink.WriteRecord(ctx, filepath.Join(out, "bfs.parquet"), rec, sink.Options{}); err != nil {
		return err
	}
	fmt.Printf("bfs from %s: %d of %d vertices reached; wrote %s\n",
		source, g.NumVertices()-res.Unreached(), g.NumVertices(), filepath.Join(out, "bfs.parquet"))
	return nil
}
