package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
)

// edgeColumnKinds are the columns --edge-columns adds, by the program
// that reads them (examples/programs): NN's weights, HS's heat
// coefficients, CS's conductances.
var edgeColumnKinds = []struct{ kind, column, doc string }{
	{"nn", "nn_weight", "uniform in (0, 1): NN's tanh iteration then converges (from above)"},
	{"hs", "hs_coeff", "0.9·u/(deg(src)+deg(dst)), u uniform in [0.1, 1], the degrees counting both ends of every row: every vertex's coefficients sum below 0.9, so HS's explicit steps are stable"},
	{"cs", "cs_g", "uniform in [0.5, 1.5]: CS's conductances"},
}

func edgeColumnsFlag() cli.Flag {
	var kinds []string
	for _, k := range edgeColumnKinds {
		kinds = append(kinds, k.kind+" ("+k.column+")")
	}
	return &cli.StringFlag{Name: "edge-columns", Usage: "add float64 edge columns for the example vertex programs, a comma-separated list of " +
		strings.Join(kinds, ", ") + "; each value drawn from the seed, src and dst"}
}

// edgeColumns adds --edge-columns' columns to a generated table's records.
type edgeColumns struct {
	kinds []int // into edgeColumnKinds
	seed  uint64
	deg   []int32 // both ends of every row, by key (hs)
}

// parseEdgeColumns reads --edge-columns; nil without it.
func parseEdgeColumns(c *cli.Context) (*edgeColumns, error) {
	if c.String("edge-columns") == "" {
		return nil, nil
	}
	x := &edgeColumns{seed: c.Uint64("seed")}
	for _, name := range strings.Split(c.String("edge-columns"), ",") {
		found := -1
		for i, k := range edgeColumnKinds {
			if strings.TrimSpace(name) == k.kind {
				found = i
			}
		}
		if found < 0 {
			return nil, usererr.New(usererr.Usage, fmt.Sprintf("--edge-columns: unknown column kind %q", name), "use nn, hs and cs, comma-separated")
		}
		x.kinds = append(x.kinds, found)
	}
	if _, text := edgeListSeparator(c.String("output"), c.String("output-format")); text {
		return nil, usererr.New(usererr.Usage, "--edge-columns with an edge list output: its lines hold src dst [weight] only", "write Parquet, Arrow or CSV")
	}
	return x, nil
}

// prepare counts the keys' degrees for hs.
func (x *edgeColumns) prepare(t *edges.Table) {
	var top int64
	for _, ch := range t.Chunks {
		for i, s := range ch.Src.Int64 {
			top = max(top, s, ch.Dst.Int64[i])
		}
	}
	x.deg = make([]int32, top+1)
	for _, ch := range t.Chunks {
		for i, s := range ch.Src.Int64 {
			x.deg[s]++
			x.deg[ch.Dst.Int64[i]]++
		}
	}
}

func (x *edgeColumns) schema(base *arrow.Schema) *arrow.Schema {
	fields := base.Fields()
	for _, k := range x.kinds {
		fields = append(fields, arrow.Field{Name: edgeColumnKinds[k].column, Type: arrow.PrimitiveTypes.Float64})
	}
	return arrow.NewSchema(fields, nil)
}

// extend is rec (chunk ch's rows) with the columns added; the caller
// releases it.
func (x *edgeColumns) extend(rec arrow.RecordBatch, ch edges.Chunk, schema *arrow.Schema) arrow.RecordBatch {
	cols := append([]arrow.Array(nil), rec.Columns()...)
	var made []arrow.Array
	for _, k := range x.kinds {
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		b.Reserve(len(ch.Src.Int64))
		for i, s := range ch.Src.Int64 {
			b.UnsafeAppend(x.value(k, s, ch.Dst.Int64[i]))
		}
		a := b.NewArray()
		b.Release()
		made = append(made, a)
		cols = append(cols, a)
	}
	out := array.NewRecordBatch(schema, cols, rec.NumRows())
	for _, a := range made {
		a.Release()
	}
	return out
}

func (x *edgeColumns) value(kind int, src, dst int64) float64 {
	u := uniform(x.seed, uint64(kind), uint64(src), uint64(dst))
	switch edgeColumnKinds[kind].kind {
	case "nn":
		return math.Nextafter(u, 1) // in (0, 1)
	case "hs":
		return 0.9 * (0.1 + 0.9*u) / float64(x.deg[src]+x.deg[dst])
	}
	return 0.5 + u
}

// uniform is a value in [0, 1) from the words, by SplitMix64's mixing.
func uniform(words ...uint64) float64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range words {
		h ^= w + 0x9e3779b97f4a7c15 + h<<6 + h>>2
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
	}
	return float64(h>>11) / (1 << 53)
}
