package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/operators"
)

// summaryRows is how many vertices the summary shows.
const summaryRows = 10

// printSummary prints what a job found, for a run without --output.
func printSummary(w io.Writer, rep *pipeline.Report) {
	res := rep.Result
	fmt.Fprintf(w, "%s on %s: %s, %s (from %s); %s backend (%s), %.3g s compute\n",
		rep.Op, rep.Input, count(rep.Vertices, "vertex", "vertices"), count(rep.Edges, "edge", "edges"), count(rep.RowsRead, "row", "rows"),
		rep.Backend, rep.Strategy, rep.Timings.Compute)
	rows := make([]uint32, res.Graph.NumVertices())
	for i := range rows {
		rows[i] = uint32(i)
	}
	switch rep.Op {
	case "pagerank":
		rank := res.Column("rank").Float64
		sort.SliceStable(rows, func(i, j int) bool { return rank[rows[i]] > rank[rows[j]] })
		if res.NotConverged {
			fmt.Fprintf(w, "stopped after %s without converging; highest ranks:\n", count(rep.Iterations, "iteration", "iterations"))
		} else {
			fmt.Fprintf(w, "converged after %s; highest ranks:\n", count(rep.Iterations, "iteration", "iterations"))
		}
	case "cc":
		comp := res.Column("component").Vertex
		sizes := map[uint32]int{}
		for _, c := range comp {
			sizes[c]++
		}
		largest := 0
		for _, s := range sizes {
			largest = max(largest, s)
		}
		fmt.Fprintf(w, "%s; the largest has %s\n", count(len(sizes), "component", "components"), count(largest, "vertex", "vertices"))
	default:
		fmt.Fprintf(w, "reached %d of %s", rep.Vertices-rep.Unreached, count(rep.Vertices, "vertex", "vertices"))
		if rep.Op == "bfs" {
			fmt.Fprintf(w, " in %s", count(rep.Iterations, "level", "levels"))
		}
		fmt.Fprintln(w)
	}
	if len(rows) > summaryRows {
		rows = rows[:summaryRows]
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, pipeline.VertexColumn)
	for _, c := range res.Columns {
		fmt.Fprintf(tw, "\t%s", c.Name)
	}
	fmt.Fprintln(tw)
	for _, v := range rows {
		fmt.Fprint(tw, summaryKey(res.Graph.Keys.Format(v)))
		for _, c := range res.Columns {
			fmt.Fprintf(tw, "\t%s", cell(res.Graph.Keys, c, v))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if n := res.Graph.NumVertices(); n > summaryRows {
		fmt.Fprintf(w, "… %s more; pass --output FILE for all of them\n", count(n-summaryRows, "row", "rows"))
	}
}

// cell is column c's value for vertex v as text; nulls are empty.
func cell(keys *convert.VertexKeys, c operators.Column, v uint32) string {
	switch c.Type {
	case operators.Int32Column:
		if c.Int32[v] < 0 {
			return ""
		}
		return strconv.Itoa(int(c.Int32[v]))
	case operators.Float64Column:
		x := c.Float64[v]
		if math.IsNaN(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 6, 64)
	case operators.VertexColumn:
		if c.Vertex[v] == convert.NoVertex {
			return ""
		}
		return summaryKey(keys.Format(c.Vertex[v]))
	case operators.Int64Column:
		if c.Valid != nil && c.Valid[v/8]&(1<<(v%8)) == 0 {
			return ""
		}
		return strconv.FormatInt(c.Int64[v], 10)
	}
	return ""
}

// summaryKey shortens a long key for the preview table, which pads every
// row to its widest cell; the output file has the keys whole.
func summaryKey(key string) string {
	const width = 40
	if utf8.RuneCountInString(key) <= width {
		return key
	}
	r := []rune(key)
	return string(r[:width-1]) + "…"
}

// count is "1 edge" or "n edges".
func count[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
