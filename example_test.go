package gpipe_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe"
)

// Zachary's karate club: 34 members, 78 friendships, as a Parquet file of
// src, dst rows.
const karate = "examples/data/karate.parquet"

// roads is a small road map built with Arrow's builders: string keys,
// float64 lengths.
func roads() (arrow.RecordBatch, error) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "from", Type: arrow.BinaryTypes.String},
		{Name: "to", Type: arrow.BinaryTypes.String},
		{Name: "km", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"depot", "depot", "a", "b", "c"}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b", "c", "c", "d"}, nil)
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{4, 1, 2, 5, 3}, nil)
	return b.NewRecordBatch(), nil
}

// Load an edge table, run an operator on the automatic backend and take
// the result as an Arrow record.
func Example() {
	ctx := context.Background()
	g, err := gpipe.Load(ctx, karate, gpipe.LoadOptions{Undirected: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Release()

	res, err := g.Run(ctx, gpipe.BFS, gpipe.Params{Source: "1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := res.Record() // vertex, depth, parent
	defer rec.Release()
	fmt.Println(g.NumVertices(), "vertices,", g.NumEdges()/2, "friendships")
	fmt.Println(rec.Schema().Field(1).Name, rec.Column(1).(*array.Int32).Value(33)) // member 34
	// Output:
	// 34 vertices, 78 friendships
	// depth 2
}

// Build the graph of records a program holds, without a file.
func ExampleFromRecords() {
	ctx := context.Background()
	rec, _ := roads()
	defer rec.Release()
	rr, _ := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	defer rr.Release()

	g, err := gpipe.FromRecords(ctx, rr, gpipe.LoadOptions{Src: "from", Dst: "to", Weight: "km"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Release()
	fmt.Println(g.NumVertices(), "places,", g.NumEdges(), "roads")
	// Output: 5 places, 5 roads
}

// Shortest paths by road length from the depot.
func ExampleGraph_Run_sssp() {
	ctx := context.Background()
	rec, _ := roads()
	defer rec.Release()
	rr, _ := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	defer rr.Release()
	g, _ := gpipe.FromRecords(ctx, rr, gpipe.LoadOptions{Src: "from", Dst: "to", Weight: "km"})
	defer g.Release()

	res, err := g.Run(ctx, gpipe.SSSP, gpipe.Params{Source: "depot"})
	if err != nil {
		fmt.Println(err)
		return
	}
	out := res.Record() // vertex, distance, parent
	defer out.Release()
	keys, dist := out.Column(0).(*array.String), out.Column(1).(*array.Float64)
	for i := 0; i < int(out.NumRows()); i++ {
		fmt.Println(keys.Value(i), dist.Value(i))
	}
	// Output:
	// a 4
	// b 1
	// c 6
	// d 9
	// depot 0
}

// Widest paths: the largest bottleneck from the depot (+Inf at the depot).
func ExampleGraph_Run_sswp() {
	ctx := context.Background()
	rec, _ := roads()
	defer rec.Release()
	rr, _ := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	defer rr.Release()
	g, _ := gpipe.FromRecords(ctx, rr, gpipe.LoadOptions{Src: "from", Dst: "to", Weight: "km"})
	defer g.Release()

	res, _ := g.Run(ctx, gpipe.SSWP, gpipe.Params{Source: "depot"})
	out := res.Record() // vertex, width
	defer out.Release()
	fmt.Println(out.Column(1).(*array.Float64).Float64Values())
	// Output: [4 1 2 2 +Inf]
}

// PageRank, networkx's definition; the iterations stop at the tolerance.
func ExampleGraph_Run_pagerank() {
	ctx := context.Background()
	g, _ := gpipe.Load(ctx, karate, gpipe.LoadOptions{Undirected: true})
	defer g.Release()

	res, err := g.Run(ctx, gpipe.PageRank, gpipe.Params{Tolerance: 1e-10})
	if err != nil {
		fmt.Println(err)
		return
	}
	out := res.Record() // vertex, rank
	defer out.Release()
	fmt.Printf("member 34: %.4f\n", out.Column(1).(*array.Float64).Value(33))
	// Output: member 34: 0.1009
}

// Connected components, each named by its smallest key.
func ExampleGraph_Run_cc() {
	ctx := context.Background()
	g, _ := gpipe.Load(ctx, karate, gpipe.LoadOptions{Undirected: true})
	defer g.Release()

	res, _ := g.Run(ctx, gpipe.CC, gpipe.Params{})
	out := res.Record() // vertex, component
	defer out.Release()
	fmt.Println(array.NewInt64Data(out.Column(1).Data()).Value(33))
	// Output: 1
}

// Write a result as Parquet (or .arrow, .arrows, .csv); the file appears
// whole or not at all.
func ExampleResult_Write() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gpipe-example")
	defer os.RemoveAll(dir)
	g, _ := gpipe.Load(ctx, karate, gpipe.LoadOptions{Undirected: true})
	defer g.Release()
	res, _ := g.Run(ctx, gpipe.PageRank, gpipe.Params{})

	err := res.Write(ctx, filepath.Join(dir, "ranks.parquet"), gpipe.WriteOptions{})
	fmt.Println(err)
	// Output: <nil>
}

// Hand a result to the next stage batch by batch, without a file.
func ExampleResult_RecordReader() {
	ctx := context.Background()
	g, _ := gpipe.Load(ctx, karate, gpipe.LoadOptions{Undirected: true})
	defer g.Release()
	res, _ := g.Run(ctx, gpipe.BFS, gpipe.Params{Source: "34"})

	rr := res.RecordReader(16)
	defer rr.Release()
	for rr.Next() {
		fmt.Println(rr.RecordBatch().NumRows())
	}
	// Output:
	// 16
	// 16
	// 2
}

// One call: read, build, compute, write.
func ExampleRunJob() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gpipe-example")
	defer os.RemoveAll(dir)

	rep, err := gpipe.RunJob(ctx, gpipe.Job{
		Input: karate, Output: filepath.Join(dir, "components.csv"), Op: gpipe.CC,
		Load: gpipe.LoadOptions{Undirected: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rep.Release()
	fmt.Println(rep.Vertices, "vertices,", rep.Result.Unreached, "unreached")
	// Output: 34 vertices, 0 unreached
}

// Branch on what went wrong: the kind of error, and its cause.
func ExampleError() {
	ctx := context.Background()
	_, err := gpipe.Load(ctx, "no-such-edges.parquet", gpipe.LoadOptions{})
	fmt.Println(errors.Is(err, fs.ErrNotExist), errors.Is(err, gpipe.ErrInput))

	g, _ := gpipe.Load(ctx, karate, gpipe.LoadOptions{})
	defer g.Release()
	_, err = g.Run(ctx, gpipe.BFS, gpipe.Params{Source: "99"})
	var e *gpipe.Error
	if errors.As(err, &e) && e.Kind == gpipe.KindNotFound {
		fmt.Println("not in the graph:", e.Problem)
	}
	_, err = g.Run(ctx, gpipe.CC, gpipe.Params{Source: "1"})
	fmt.Println(errors.Is(err, gpipe.ErrUsage))
	// Output:
	// true true
	// not in the graph: source key "99" is not a vertex of the graph (no edge has it as an endpoint)
	// true
}
