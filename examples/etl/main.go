// Command etl is a batch job that uses gpipe as a library, between two
// stages of an ETL pipeline: the previous stage hands it payments between
// accounts as Arrow records (here built in memory with Arrow's builders),
// gpipe builds the graph from those records without a file or a copy of
// their columns, ranks the accounts, finds the groups of accounts that
// pay one another, and each result goes on: the ranks and groups to
// Parquet files, the reach of one account to the next stage as records.
//
//	go run ./examples/etl -out /tmp/etl
//	go run ./examples/etl -input examples/data/karate.parquet -src src -dst dst -source 1 -out /tmp/etl
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe"
)

// job is what the command line says.
type job struct {
	input, src, dst, source, out, backend string
}

func main() {
	var j job
	flag.StringVar(&j.input, "input", "", "an edge table to read instead of the payments made in memory")
	flag.StringVar(&j.src, "src", "payer", "the source key column")
	flag.StringVar(&j.dst, "dst", "payee", "the destination key column")
	flag.StringVar(&j.source, "source", "acct-0000", "the account whose reach is computed")
	flag.StringVar(&j.out, "out", os.TempDir(), "directory for ranks.parquet and groups.parquet")
	flag.StringVar(&j.backend, "backend", "auto", "auto, cpu or gpu")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, j); err != nil {
		fmt.Fprintln(os.Stderr, "etl:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, j job) error {
	g, err := load(ctx, j)
	if err != nil {
		return err
	}
	defer g.Release()
	fmt.Printf("graph: %d accounts, %d payment links (%s built it)\n", g.NumVertices(), g.NumEdges(), g.Stats().BuildDevice)

	// Two results written as Parquet for the warehouse.
	for _, step := range []struct{ op, file string }{{gpipe.PageRank, "ranks.parquet"}, {gpipe.CC, "groups.parquet"}} {
		res, err := g.Run(ctx, step.op, gpipe.Params{})
		if err != nil {
			return err
		}
		if err := res.Write(ctx, filepath.Join(j.out, step.file), gpipe.WriteOptions{}); err != nil {
			return err
		}
		fmt.Printf("%s: %d rows on %s (%s) -> %s\n", step.op, res.NumRows(), res.Backend, res.Strategy, step.file)
	}

	// One result handed to the next stage as records, without a file.
	res, err := g.Run(ctx, gpipe.BFS, gpipe.Params{Source: j.source})
	if err != nil {
		return err
	}
	rr := res.RecordReader(0)
	defer rr.Release()
	hops := nextStage(rr)
	fmt.Printf("bfs from %s: %d accounts reached within %d hops, %d not at all\n", j.source, hops.reached, hops.deepest, res.Unreached)
	return nil
}

// load builds the graph: from the file -input names, or from the records
// the previous stage would hand over.
func load(ctx context.Context, j job) (*gpipe.Graph, error) {
	opts := gpipe.LoadOptions{Src: j.src, Dst: j.dst, Undirected: true, Backend: j.backend}
	if j.input != "" {
		return gpipe.Load(ctx, j.input, opts)
	}
	rr := payments(4096, 16)
	defer rr.Release()
	return gpipe.FromRecords(ctx, rr, opts)
}

// payments are n accounts' payments, about perAccount each, to accounts
// chosen with a skew (a few accounts receive most), as records of 8192
// rows: payer and payee (string keys), amount.
func payments(n, perAccount int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "payer", Type: arrow.BinaryTypes.String},
		{Name: "payee", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rng := rand.New(rand.NewPCG(7, 7))
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	payer, payee := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.StringBuilder)
	amount := b.Field(2).(*array.Float64Builder)
	var recs []arrow.RecordBatch
	for i := range n * perAccount {
		from := i % n
		to := int(float64(n) * rng.Float64() * rng.Float64())
		payer.Append(fmt.Sprintf("acct-%04d", from))
		payee.Append(fmt.Sprintf("acct-%04d", to))
		amount.Append(float64(rng.IntN(100000)) / 100)
		if payer.Len() == 8192 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	if payer.Len() > 0 {
		recs = append(recs, b.NewRecordBatch())
	}
	rr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		panic(err) // every record has the schema
	}
	for _, r := range recs {
		r.Release()
	}
	return rr
}

// reach is what the next stage makes of a BFS: how many accounts it
// reached and the deepest.
type reach struct{ reached, deepest int }

// nextStage reads a BFS result's records (vertex, depth, parent) as the
// next stage of a pipeline would.
func nextStage(rr array.RecordReader) reach {
	var r reach
	for rr.Next() {
		depth := rr.RecordBatch().Column(1).(*array.Int32)
		for i := 0; i < depth.Len(); i++ {
			if depth.IsValid(i) {
				r.reached++
				r.deepest = max(r.deepest, int(depth.Value(i)))
			}
		}
	}
	return r
}
