// Command library is a program outside gpipe's module, with a go.mod of its
// own, that uses gpipe the way a Go ETL job written today does: it builds
// edge tables with arrow-go/v18's builders (int64 keys and string keys),
// hands them to gpipe.FromRecords, runs bfs and pagerank on the automatic
// backend, reads the results as arrow-go/v18 records, and branches on
// gpipe's errors. `make test` runs it (go test in this folder), so that
// the library's face keeps compiling for outside callers.
//
//	cd examples/library && go run .
package main

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

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(1)
	}
}

// edges are a ring of n vertices with a chord from every vertex to the
// one k ahead, as records of the key type key (int64 or utf8).
func edges(key arrow.DataType, n, k int) (array.RecordReader, error) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: key}, {Name: "dst", Type: key, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for v := range n {
		for _, w := range []int{(v + 1) % n, (v + k) % n} {
			switch kb := b.Field(0).(type) {
			case *array.Int64Builder:
				kb.Append(int64(v))
				b.Field(1).(*array.Int64Builder).Append(int64(w))
			case *array.StringBuilder:
				kb.Append(fmt.Sprintf("v%d", v))
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", w))
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(schema, []arrow.RecordBatch{rec})
}

func run(ctx context.Context, out *os.File) error {
	for _, c := range []struct {
		key    arrow.DataType
		source string
	}{{arrow.PrimitiveTypes.Int64, "0"}, {arrow.BinaryTypes.String, "v0"}} {
		if err := query(ctx, out, c.key, c.source); err != nil {
			return err
		}
	}
	return branch(ctx, out)
}

// query builds the graph of the records and runs bfs and pagerank on it,
// reading the results as arrow-go/v18 records.
func query(ctx context.Context, out *os.File, key arrow.DataType, source string) error {
	rr, err := edges(key, 1000, 10)
	if err != nil {
		return err
	}
	defer rr.Release()
	g, err := gpipe.FromRecords(ctx, rr, gpipe.LoadOptions{})
	if err != nil {
		return err
	}
	defer g.Release()

	bfs, err := g.Run(ctx, gpipe.BFS, gpipe.Params{Source: source})
	if err != nil {
		return err
	}
	var rec arrow.RecordBatch = bfs.Record() // vertex, depth, parent
	defer rec.Release()
	depth := rec.Column(1).(*array.Int32)
	deepest := int32(0)
	for i := 0; i < depth.Len(); i++ {
		deepest = max(deepest, depth.Value(i))
	}

	pr, err := g.Run(ctx, gpipe.PageRank, gpipe.Params{})
	if err != nil {
		return err
	}
	ranks := pr.Record() // vertex, rank
	defer ranks.Release()
	sum := 0.0
	for _, r := range ranks.Column(1).(*array.Float64).Float64Values() {
		sum += r
	}
	fmt.Fprintf(out, "%s keys: %d vertices, bfs from %s %d levels deep (%s), pagerank sums to %.6f in %d iterations (%s)\n",
		key, rec.NumRows(), source, deepest+1, bfs.Backend, sum, pr.Iterations, pr.Backend)
	return nil
}

// branch shows the errors a program tells apart: a missing file, and a
// file with a null key.
func branch(ctx context.Context, out *os.File) error {
	dir, err := os.MkdirTemp("", "gpipe-library")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	_, err = gpipe.Load(ctx, filepath.Join(dir, "missing.parquet"), gpipe.LoadOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("a missing file gave %v, not fs.ErrNotExist", err)
	}
	fmt.Fprintln(out, "missing file: errors.Is(err, fs.ErrNotExist)")

	nulls := filepath.Join(dir, "nulls.arrow")
	if err := writeNullKey(ctx, nulls); err != nil {
		return err
	}
	_, err = gpipe.Load(ctx, nulls, gpipe.LoadOptions{})
	var e *gpipe.Error
	if !errors.Is(err, gpipe.ErrInput) || !errors.As(err, &e) {
		return fmt.Errorf("a null key gave %v, not gpipe.ErrInput", err)
	}
	fmt.Fprintf(out, "null key: errors.Is(err, gpipe.ErrInput), column %s, row %d\n", e.Column, e.Row)
	return nil
}

// writeNullKey writes an Arrow IPC file of edges whose third dst is null.
func writeNullKey(ctx context.Context, path string) error {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{2, 3, 0, 1}, []bool{true, true, false, true})
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		return err
	}
	defer rr.Release()
	return gpipe.WriteRecords(ctx, path, rr, gpipe.WriteOptions{})
}
