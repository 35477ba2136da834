package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/sink"
)

// Round trips: one small weighted graph, written in every input format with
// every key type the format can carry, run through RunJob with every
// operator into every output format, read back and checked against a tiny
// sequential reference. Vertices are abstract indices 0..rtN-1; a keySet
// names each of them in one key type.

// rtEdge is an input row: abstract vertices u → v with weight w.
type rtEdge struct {
	u, v int
	w    float64
}

const rtN = 11

// rtEdges has a parallel edge (0→1 twice: merged into weight 1.5), a self
// loop on a vertex that also has other edges (3), a vertex that only has a
// self loop (9: a vertex with no edges left), a dangling vertex (5), a
// component the source does not reach (6, 7, 8) and a vertex only reached
// through a longer but lighter path (3 by 0→2→1→3). The weights are exact
// in float32 and their sums exact in float64, so distances compare with ==.
var rtEdges = []rtEdge{
	{0, 1, 2}, {0, 2, 0.5}, {1, 3, 1}, {2, 3, 3}, {2, 1, 1.25},
	{3, 4, 2}, {4, 1, 0.75}, {1, 5, 4}, {0, 1, 1.5}, {3, 3, 0.25},
	{6, 7, 1}, {7, 6, 2}, {8, 6, 5}, {9, 9, 1}, {4, 10, 0.5}, {10, 4, 6},
}

// keySet names the abstract vertices in one key type.
type keySet struct {
	name string
	kind edges.KeyType // KeyInt32/KeyInt64 compare as signed, KeyUint* as unsigned, KeyString bytewise
	keys []string      // keys[i] names vertex i, as text
}

var (
	ksInt32 = keySet{"int32", edges.KeyInt32, []string{
		"-7", "12", "3", "-2147483648", "2147483647", "0", "100000", "5", "-1", "42", "8"}}
	ksInt64 = keySet{"int64", edges.KeyInt64, []string{
		"-9000000000", "1099511627776", "17", "-1", "9223372036854775807", "0",
		"-9223372036854775808", "3", "2", "11", "-12"}}
	ksUint32 = keySet{"uint32", edges.KeyUint32, []string{
		"4000000000", "1", "0", "4294967295", "7", "2147483648", "65536", "12", "9", "3", "2147483647"}}
	ksUint64 = keySet{"uint64", edges.KeyUint64, []string{
		"18446744073709551615", "9223372036854775808", "1", "0", "42", "9223372036854775807",
		"5", "4294967296", "77", "6", "18446744073709551614"}}
	// Strings that sort differently bytewise than by index, with a prefix
	// ("a" < "a,b"), case, a quote, a comma, numbers written as strings and
	// multi-byte UTF-8; none empty or with white space, so that every
	// format that carries strings carries these.
	ksString = keySet{"string", edges.KeyString, []string{
		"alpha", "Ωmega", "a,b", `q"uote`, "007", "-3", "zeta", "Zeta", "a", "日本", "alpha2"}}
)

// less orders keys a and b as the key type does.
func (ks keySet) less(a, b string) bool { return ks.compare(a, b) < 0 }

func (ks keySet) compare(a, b string) int {
	switch ks.kind {
	case edges.KeyInt32, edges.KeyInt64:
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return cmp.Compare(x, y)
	case edges.KeyUint32, edges.KeyUint64:
		x, _ := strconv.ParseUint(a, 10, 64)
		y, _ := strconv.ParseUint(b, 10, 64)
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// ---------------------------------------------------------------------------
// The reference.

// refGraph is the cleaned graph: self loops dropped, parallel edges merged
// with their minimum weight, every vertex of any row kept.
type refGraph struct {
	n      int
	vertex []bool             // appears in some row
	w      map[[2]int]float64 // u → v: weight
	out    [][]int            // out-neighbours, ascending
	in     [][]int            // in-neighbours, ascending
	undir  bool
	source int // the start vertex of bfs, sssp and sswp
}

func newRefGraph(n int, edges []rtEdge, undirected bool) *refGraph {
	g := &refGraph{n: n, vertex: make([]bool, n), w: map[[2]int]float64{}, out: make([][]int, n), in: make([][]int, n), undir: undirected}
	add := func(u, v int, w float64) {
		if u == v {
			return
		}
		k := [2]int{u, v}
		if old, ok := g.w[k]; !ok || w < old {
			g.w[k] = w
		}
	}
	for _, e := range edges {
		g.vertex[e.u], g.vertex[e.v] = true, true
		add(e.u, e.v, e.w)
		if undirected {
			add(e.v, e.u, e.w)
		}
	}
	for k := range g.w {
		g.out[k[0]] = append(g.out[k[0]], k[1])
		g.in[k[1]] = append(g.in[k[1]], k[0])
	}
	for i := range n {
		slices.Sort(g.out[i])
		slices.Sort(g.in[i])
	}
	return g
}

func (g *refGraph) numEdges() int { return len(g.w) }

func (g *refGraph) bfs(src int) []int {
	depth := make([]int, g.n)
	for i := range depth {
		depth[i] = -1
	}
	depth[src] = 0
	q := []int{src}
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for _, v := range g.out[u] {
			if depth[v] < 0 {
				depth[v] = depth[u] + 1
				q = append(q, v)
			}
		}
	}
	return depth
}

// sssp is Bellman-Ford: +Inf where unreachable.
func (g *refGraph) sssp(src int) []float64 {
	d := make([]float64, g.n)
	for i := range d {
		d[i] = math.Inf(1)
	}
	d[src] = 0
	for changed := true; changed; {
		changed = false
		for k, w := range g.w {
			if nd := d[k[0]] + w; nd < d[k[1]] {
				d[k[1]], changed = nd, true
			}
		}
	}
	return d
}

// sswp is the widest-path fixpoint: +Inf at the source, -Inf unreachable.
func (g *refGraph) sswp(src int) []float64 {
	wd := make([]float64, g.n)
	for i := range wd {
		wd[i] = math.Inf(-1)
	}
	wd[src] = math.Inf(1)
	for changed := true; changed; {
		changed = false
		for k, w := range g.w {
			if nw := math.Min(wd[k[0]], w); nw > wd[k[1]] {
				wd[k[1]], changed = nw, true
			}
		}
	}
	return wd
}

// pagerank is networkx's power iteration over the vertices that exist, run
// far past gpipe's tolerance.
func (g *refGraph) pagerank(d float64) map[int]float64 {
	var vs []int
	for i := range g.n {
		if g.vertex[i] {
			vs = append(vs, i)
		}
	}
	n := float64(len(vs))
	x := map[int]float64{}
	for _, v := range vs {
		x[v] = 1 / n
	}
	for range 10000 {
		dangling := 0.0
		for _, v := range vs {
			if len(g.out[v]) == 0 {
				dangling += x[v]
			}
		}
		next := map[int]float64{}
		change := 0.0
		for _, v := range vs {
			s := 0.0
			for _, u := range g.in[v] {
				s += x[u] / float64(len(g.out[u]))
			}
			next[v] = (1-d)/n + d*(s+dangling/n)
			change += math.Abs(next[v] - x[v])
		}
		x = next
		if change < 1e-15 {
			break
		}
	}
	return x
}

// components labels each vertex with the smallest key of its weakly
// connected component.
func (g *refGraph) components(ks keySet) []string {
	parent := make([]int, g.n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for parent[x] != x {
			x = parent[x]
		}
		return x
	}
	for k := range g.w {
		a, b := find(k[0]), find(k[1])
		if a != b {
			parent[a] = b
		}
	}
	minKey := map[int]string{}
	for i := range g.n {
		if !g.vertex[i] {
			continue
		}
		r := find(i)
		if m, ok := minKey[r]; !ok || ks.less(ks.keys[i], m) {
			minKey[r] = ks.keys[i]
		}
	}
	comp := make([]string, g.n)
	for i := range g.n {
		if g.vertex[i] {
			comp[i] = minKey[find(i)]
		}
	}
	return comp
}

// ---------------------------------------------------------------------------
// Writing inputs.

// rtInput is one input file to run jobs on.
type rtInput struct {
	name   string // for test names
	path   string
	ks     keySet
	vertex arrow.DataType // the vertex column's expected type; nil: not checked
}

// keyArray builds a key column of type dt from keys written as text.
func keyArray(t testing.TB, dt arrow.DataType, keys []string) arrow.Array {
	t.Helper()
	mem := memory.DefaultAllocator
	switch dt := dt.(type) {
	case *arrow.DictionaryType:
		b := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
		defer b.Release()
		for _, k := range keys {
			if err := b.AppendString(k); err != nil {
				t.Fatal(err)
			}
		}
		return b.NewArray()
	}
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for _, k := range keys {
		var err error
		switch b := b.(type) {
		case *array.Int32Builder:
			var v int64
			v, err = strconv.ParseInt(k, 10, 32)
			b.Append(int32(v))
		case *array.Int64Builder:
			var v int64
			v, err = strconv.ParseInt(k, 10, 64)
			b.Append(v)
		case *array.Uint32Builder:
			var v uint64
			v, err = strconv.ParseUint(k, 10, 32)
			b.Append(uint32(v))
		case *array.Uint64Builder:
			var v uint64
			v, err = strconv.ParseUint(k, 10, 64)
			b.Append(v)
		case *array.StringBuilder:
			b.Append(k)
		case *array.LargeStringBuilder:
			b.Append(k)
		default:
			t.Fatalf("key type %s", dt)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.NewArray()
}

// edgeRecords is the edges as Arrow records of key type kt and weight type
// wt, cut into two batches (two row groups, two IPC batches) that share
// their dictionaries (an IPC file allows one per column).
func edgeRecords(t testing.TB, ks keySet, edges []rtEdge, kt, wt arrow.DataType) []arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: kt}, {Name: "dst", Type: kt}, {Name: "weight", Type: wt},
	}, nil)
	var src, dst []string
	wb := array.NewBuilder(memory.DefaultAllocator, wt)
	defer wb.Release()
	for _, e := range edges {
		src = append(src, ks.keys[e.u])
		dst = append(dst, ks.keys[e.v])
		switch wb := wb.(type) {
		case *array.Float64Builder:
			wb.Append(e.w)
		case *array.Float32Builder:
			wb.Append(float32(e.w))
		default:
			t.Fatalf("weight type %s", wt)
		}
	}
	cols := []arrow.Array{keyArray(t, kt, append(src, dst...)), nil, wb.NewArray()}
	n := int64(len(edges))
	all := cols[0]
	cols[0], cols[1] = array.NewSlice(all, 0, n), array.NewSlice(all, n, 2*n)
	all.Release()
	whole := array.NewRecordBatch(schema, cols, n)
	defer whole.Release()
	for _, c := range cols {
		c.Release()
	}
	half := n / 2
	return []arrow.RecordBatch{whole.NewSlice(0, half), whole.NewSlice(half, n)}
}

func writeParquet(t testing.TB, path string, recs []arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(recs[0].Schema(), f, parquet.NewWriterProperties(),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil { // one row group per record
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeIPC(t testing.TB, path string, recs []arrow.RecordBatch, stream bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var w interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	if stream {
		w = ipc.NewWriter(f, ipc.WithSchema(recs[0].Schema()))
	} else {
		if w, err = ipc.NewFileWriter(f, ipc.WithSchema(recs[0].Schema())); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeCSVEdges(t testing.TB, path string, ks keySet, edges []rtEdge) {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"src", "dst", "weight"})
	for _, e := range edges {
		_ = w.Write([]string{ks.keys[e.u], ks.keys[e.v], strconv.FormatFloat(e.w, 'g', -1, 64)})
	}
	w.Flush()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeTSVEdges writes edges as tab-separated CSV with a header line.
func writeTSVEdges(t testing.TB, path string, ks keySet, edges []rtEdge) {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Comma = '\t'
	_ = w.Write([]string{"src", "dst", "weight"})
	for _, e := range edges {
		_ = w.Write([]string{ks.keys[e.u], ks.keys[e.v], strconv.FormatFloat(e.w, 'g', -1, 64)})
	}
	w.Flush()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeTextEdges(t testing.TB, path string, ks keySet, edges []rtEdge, sep string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# an edge list\n% another comment\n")
	for _, e := range edges {
		fmt.Fprintf(&b, "%s%s%s%s%s\n", ks.keys[e.u], sep, ks.keys[e.v], sep, strconv.FormatFloat(e.w, 'g', -1, 64))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ksMTX names the vertices by 1-based Matrix Market indices, with gaps
// (indices 6 and 11 have no entries, so they are no vertices).
var ksMTX = keySet{"mtx", edges.KeyInt64, []string{"5", "2", "9", "1", "12", "7", "3", "10", "4", "8", "13"}}

// writeMTX writes edges as a Matrix Market file of field real or pattern
// (no values) and symmetry general or symmetric.
func writeMTX(t testing.TB, path string, edges []rtEdge, field, symmetry string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%%%%MatrixMarket matrix coordinate %s %s\n%% a comment\n", field, symmetry)
	fmt.Fprintf(&b, "13 13 %d\n", len(edges))
	for _, e := range edges {
		fmt.Fprintf(&b, "%s %s", ksMTX.keys[e.u], ksMTX.keys[e.v])
		if field != "pattern" {
			fmt.Fprintf(&b, " %s", strconv.FormatFloat(e.w, 'g', -1, 64))
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rtInputs writes the graph in every input format and key type into dir.
func rtInputs(t testing.TB, dir string, list []rtEdge) []rtInput {
	t.Helper()
	var ins []rtInput
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	typed := []struct {
		ks     keySet
		kt, wt arrow.DataType
		label  string
	}{
		{ksInt32, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float32, "int32"},
		{ksInt64, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, "int64"},
		{ksUint32, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Float32, "uint32"},
		{ksUint64, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Float64, "uint64"},
		{ksString, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64, "utf8"},
		{ksString, arrow.BinaryTypes.LargeString, arrow.PrimitiveTypes.Float64, "large_utf8"},
		{ksString, dict, arrow.PrimitiveTypes.Float64, "dictionary"},
	}
	for _, c := range typed {
		recs := edgeRecords(t, c.ks, list, c.kt, c.wt)
		vt := c.kt
		if c.kt == dict {
			vt = arrow.BinaryTypes.String
		}
		for _, ext := range []string{".parquet", ".arrow", ".arrows"} {
			p := filepath.Join(dir, c.label+ext)
			switch ext {
			case ".parquet":
				writeParquet(t, p, recs)
			case ".arrow":
				writeIPC(t, p, recs, false)
			case ".arrows":
				writeIPC(t, p, recs, true)
			}
			want := vt
			if ext == ".parquet" && c.ks.kind == edges.KeyString {
				// Parquet has one string type; its keys come out as utf8.
				want = arrow.BinaryTypes.String
			}
			ins = append(ins, rtInput{name: c.label + ext, path: p, ks: c.ks, vertex: want})
		}
		if c.label == "int64" || c.label == "utf8" {
			p := filepath.Join(dir, c.label+".feather")
			writeIPC(t, p, recs, false)
			ins = append(ins, rtInput{name: c.label + ".feather", path: p, ks: c.ks, vertex: vt})
		}
		for _, r := range recs {
			r.Release()
		}
	}
	for _, ks := range []keySet{ksInt64, ksString} {
		p := filepath.Join(dir, ks.name+".csv")
		writeCSVEdges(t, p, ks, list)
		ins = append(ins, rtInput{name: ks.name + ".csv", path: p, ks: ks, vertex: ks.kind.ArrowType()})
		p = filepath.Join(dir, ks.name+".tsv")
		writeTSVEdges(t, p, ks, list)
		ins = append(ins, rtInput{name: ks.name + ".tsv", path: p, ks: ks, vertex: ks.kind.ArrowType()})
		for _, f := range []struct{ ext, sep string }{{".txt", " "}, {".el", "\t"}} {
			p := filepath.Join(dir, ks.name+f.ext)
			writeTextEdges(t, p, ks, list, f.sep)
			ins = append(ins, rtInput{name: ks.name + f.ext, path: p, ks: ks, vertex: ks.kind.ArrowType()})
		}
	}
	p := filepath.Join(dir, "graph.mtx")
	writeMTX(t, p, list, "real", "general")
	ins = append(ins, rtInput{name: "graph.mtx", path: p, ks: ksMTX, vertex: arrow.PrimitiveTypes.Int64})
	return ins
}

// ---------------------------------------------------------------------------
// Reading outputs.

// cell is one value of an output table as text: integers in decimal,
// floats as strconv 'g' -1 (+Inf, -Inf), strings as they are.
type cell struct {
	null bool
	s    string
}

func (c cell) String() string {
	if c.null {
		return "null"
	}
	return strconv.Quote(c.s)
}

// outTable is an output read back.
type outTable struct {
	names []string
	types []arrow.DataType // nil for CSV
	rows  [][]cell
}

func readOutput(t testing.TB, path string) *outTable {
	t.Helper()
	switch filepath.Ext(path) {
	case ".csv":
		return readCSVOutput(t, path)
	case ".parquet":
		f, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := r.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release()
		tr := array.NewTableReader(tbl, -1)
		defer tr.Release()
		return recordsTable(t, tr)
	case ".arrow", ".feather":
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := ipc.NewFileReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		o := &outTable{}
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			addRecord(t, o, rec)
		}
		if o.names == nil {
			setSchema(o, r.Schema())
		}
		return o
	case ".arrows":
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := ipc.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		return recordsTable(t, r)
	}
	t.Fatalf("no reader for %s", path)
	return nil
}

func recordsTable(t testing.TB, r array.RecordReader) *outTable {
	o := &outTable{}
	for r.Next() {
		addRecord(t, o, r.RecordBatch())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if o.names == nil {
		setSchema(o, r.Schema())
	}
	return o
}

func setSchema(o *outTable, s *arrow.Schema) {
	o.names, o.types = nil, nil
	for _, f := range s.Fields() {
		o.names = append(o.names, f.Name)
		o.types = append(o.types, f.Type)
	}
}

func addRecord(t testing.TB, o *outTable, rec arrow.RecordBatch) {
	t.Helper()
	if o.names == nil {
		setSchema(o, rec.Schema())
	}
	for i := range int(rec.NumRows()) {
		row := make([]cell, rec.NumCols())
		for j, c := range rec.Columns() {
			row[j] = arrowCell(t, c, i)
		}
		o.rows = append(o.rows, row)
	}
}

func arrowCell(t testing.TB, a arrow.Array, i int) cell {
	if a.IsNull(i) {
		return cell{null: true}
	}
	switch a := a.(type) {
	case *array.Int32:
		return cell{s: strconv.FormatInt(int64(a.Value(i)), 10)}
	case *array.Int64:
		return cell{s: strconv.FormatInt(a.Value(i), 10)}
	case *array.Uint32:
		return cell{s: strconv.FormatUint(uint64(a.Value(i)), 10)}
	case *array.Uint64:
		return cell{s: strconv.FormatUint(a.Value(i), 10)}
	case *array.Float64:
		return cell{s: strconv.FormatFloat(a.Value(i), 'g', -1, 64)}
	case *array.String:
		return cell{s: a.Value(i)}
	case *array.LargeString:
		return cell{s: a.Value(i)}
	}
	t.Fatalf("output column of type %s", a.DataType())
	return cell{}
}

// floatColumns are the result columns that hold float64.
var floatColumns = map[string]bool{"distance": true, "rank": true, "width": true}

func readCSVOutput(t testing.TB, path string) *outTable {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	o := &outTable{names: recs[0]}
	for _, r := range recs[1:] {
		row := make([]cell, len(r))
		for j, s := range r {
			switch {
			case s == "" && j > 0:
				row[j] = cell{null: true}
			case floatColumns[o.names[j]]:
				v, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatalf("%s: column %s: %v", path, o.names[j], err)
				}
				row[j] = cell{s: strconv.FormatFloat(v, 'g', -1, 64)}
			default:
				row[j] = cell{s: s}
			}
		}
		o.rows = append(o.rows, row)
	}
	return o
}

// ---------------------------------------------------------------------------
// Checking.

var rtOps = []string{"bfs", "sssp", "pagerank", "cc", "sswp"}

var rtOutputs = []string{".parquet", ".arrow", ".arrows", ".csv"}

// wantColumns are each operator's output columns after vertex.
var wantColumns = map[string][]string{
	"bfs": {"depth", "parent"}, "sssp": {"distance", "parent"}, "pagerank": {"rank"},
	"cc": {"component"}, "sswp": {"width"},
}

// checkOutput compares an output read back with the reference.
func checkOutput(t testing.TB, what string, o *outTable, op string, in rtInput, g *refGraph, vertexType arrow.DataType) {
	t.Helper()
	ks := in.ks
	wantNames := append([]string{VertexColumn}, wantColumns[op]...)
	if !slices.Equal(o.names, wantNames) {
		t.Fatalf("%s: columns %v, want %v", what, o.names, wantNames)
	}
	if o.types != nil {
		if vertexType != nil && !arrow.TypeEqual(o.types[0], vertexType) {
			t.Errorf("%s: vertex column has type %s, want %s", what, o.types[0], vertexType)
		}
		for j, name := range o.names {
			var want arrow.DataType
			switch name {
			case "depth":
				want = arrow.PrimitiveTypes.Int32
			case "distance", "rank", "width":
				want = arrow.PrimitiveTypes.Float64
			default: // vertex, parent, component
				want = o.types[0]
			}
			if !arrow.TypeEqual(o.types[j], want) {
				t.Errorf("%s: column %s has type %s, want %s", what, name, o.types[j], want)
			}
		}
	}
	// The vertex keys: every key of an edge, once, ascending.
	var wantKeys []string
	for i := range g.n {
		if g.vertex[i] {
			wantKeys = append(wantKeys, ks.keys[i])
		}
	}
	slices.SortFunc(wantKeys, ks.compare)
	var gotKeys []string
	for _, r := range o.rows {
		if r[0].null {
			t.Fatalf("%s: null vertex key", what)
		}
		gotKeys = append(gotKeys, r[0].s)
	}
	if !slices.Equal(gotKeys, wantKeys) {
		t.Fatalf("%s: vertex keys %q, want %q (ascending)", what, gotKeys, wantKeys)
	}
	index := map[string]int{}
	for i, k := range ks.keys {
		index[k] = i
	}
	rows := map[int][]cell{}
	for _, r := range o.rows {
		rows[index[r[0].s]] = r[1:]
	}
	src := g.source
	fail := func(v int, format string, args ...any) {
		t.Helper()
		t.Errorf("%s: vertex %s: %s", what, ks.keys[v], fmt.Sprintf(format, args...))
	}
	parentOf := func(v int, c cell) (int, bool) {
		if c.null {
			return 0, false
		}
		p, ok := index[c.s]
		if !ok || !g.vertex[p] {
			fail(v, "parent %q is no vertex", c.s)
		}
		return p, ok
	}
	switch op {
	case "bfs":
		depth := g.bfs(src)
		for v, r := range rows {
			if depth[v] < 0 {
				if !r[0].null || !r[1].null {
					fail(v, "unreachable, but depth %v parent %v", r[0], r[1])
				}
				continue
			}
			if r[0].null || r[0].s != strconv.Itoa(depth[v]) {
				fail(v, "depth %v, want %d", r[0], depth[v])
			}
			p, ok := parentOf(v, r[1])
			switch {
			case !ok:
				fail(v, "null parent at depth %d", depth[v])
			case v == src && p != src:
				fail(v, "the source's parent is %s, not itself", ks.keys[p])
			case v != src && (depth[p] != depth[v]-1 || !hasEdge(g, p, v)):
				fail(v, "parent %s (depth %d) is not a BFS parent", ks.keys[p], depth[p])
			}
		}
	case "sssp":
		dist := g.sssp(src)
		for v, r := range rows {
			if math.IsInf(dist[v], 1) {
				if !r[0].null || !r[1].null {
					fail(v, "unreachable, but distance %v parent %v", r[0], r[1])
				}
				continue
			}
			if r[0].null || r[0].s != strconv.FormatFloat(dist[v], 'g', -1, 64) {
				fail(v, "distance %v, want %v", r[0], dist[v])
			}
			p, ok := parentOf(v, r[1])
			switch {
			case !ok:
				fail(v, "null parent at distance %v", dist[v])
			case v == src && p != src:
				fail(v, "the source's parent is %s, not itself", ks.keys[p])
			case v != src && (!hasEdge(g, p, v) || dist[p]+g.w[[2]int{p, v}] != dist[v]):
				fail(v, "parent %s is not on a shortest path", ks.keys[p])
			}
		}
	case "sswp":
		wd := g.sswp(src)
		for v, r := range rows {
			if math.IsInf(wd[v], -1) {
				if !r[0].null {
					fail(v, "unreachable, but width %v", r[0])
				}
				continue
			}
			if r[0].null || r[0].s != strconv.FormatFloat(wd[v], 'g', -1, 64) {
				fail(v, "width %v, want %v", r[0], wd[v])
			}
		}
	case "cc":
		comp := g.components(ks)
		for v, r := range rows {
			if r[0].null || r[0].s != comp[v] {
				fail(v, "component %v, want %q", r[0], comp[v])
			}
		}
	case "pagerank":
		want := g.pagerank(0.85)
		l1, sum := 0.0, 0.0
		for v, r := range rows {
			if r[0].null {
				fail(v, "null rank")
				continue
			}
			x, _ := strconv.ParseFloat(r[0].s, 64)
			l1 += math.Abs(x - want[v])
			sum += x
		}
		if l1 > 1e-8 || len(rows) > 0 && math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s: ranks are %g from the reference in L1 and sum to %v", what, l1, sum)
		}
	}
}

func hasEdge(g *refGraph, u, v int) bool {
	_, ok := g.w[[2]int{u, v}]
	return ok
}

// TestRoundTrip runs every operator on every input format and key type into
// every output format, directed and undirected, and checks what comes back.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ins := rtInputs(t, dir, rtEdges)
	ctx := context.Background()
	for _, undirected := range []bool{false, true} {
		g := newRefGraph(rtN, rtEdges, undirected)
		for i, in := range ins {
			for j, op := range rtOps {
				// Directed: every output format; undirected: one, in turn,
				// in batches of 4 rows.
				outputs, batch := rtOutputs, 0
				if undirected {
					k := (i + j) % len(rtOutputs)
					outputs, batch = rtOutputs[k:k+1], 4
				}
				name := fmt.Sprintf("%s/%s/undirected=%v", in.name, op, undirected)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					for _, ext := range outputs {
						out := filepath.Join(t.TempDir(), "out"+ext)
						job := Job{Input: in.path, Output: out, Op: op, Backend: "cpu",
							Load: LoadOptions{Undirected: undirected}}
						if ext == ".parquet" && (undirected || (i+j)%4 != 0) {
							// Arrow's zstd codec makes a new encoder for
							// every page, a millisecond each: the default
							// (zstd) on a quarter of the jobs keeps the
							// test fast.
							job.Sink.Compression = sink.CompressionSnappy
						}
						job.Sink.BatchRows = batch
						if spec := mustLookup(t, op).Spec(); spec.NeedsSource {
							job.Params = operators.Params{Source: in.ks.keys[0]}
						}
						rep, err := RunJob(ctx, job)
						if err != nil {
							t.Fatalf("%s: %v", ext, err)
						}
						nv := 0
						for _, ok := range g.vertex {
							if ok {
								nv++
							}
						}
						if rep.Vertices != nv || rep.Edges != int64(g.numEdges()) || rep.RowsRead != int64(len(rtEdges)) {
							t.Errorf("%s: report counts %d vertices, %d edges, %d rows; want %d, %d, %d",
								ext, rep.Vertices, rep.Edges, rep.RowsRead, nv, g.numEdges(), len(rtEdges))
						}
						rep.Release()
						o := readOutput(t, out)
						checkOutput(t, ext, o, op, in, g, in.vertex)
					}
				})
			}
		}
	}
}

// "-" reads an Arrow IPC stream from LoadOptions.Stdin and writes the
// output to Sink.Stdout, as an IPC stream or in the format Sink.Format
// names.
func TestStdinStdout(t *testing.T) {
	g := newRefGraph(rtN, rtEdges, false)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	for _, c := range []struct {
		ks     keySet
		kt, vt arrow.DataType
	}{
		{ksUint32, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint32},
		{ksString, dict, arrow.BinaryTypes.String},
		{ksString, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeString},
	} {
		p := filepath.Join(t.TempDir(), "in.arrows")
		recs := edgeRecords(t, c.ks, rtEdges, c.kt, arrow.PrimitiveTypes.Float64)
		writeIPC(t, p, recs, true)
		for _, r := range recs {
			r.Release()
		}
		stream, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		in := rtInput{name: "-", ks: c.ks, vertex: c.vt}
		for i, op := range rtOps {
			format := []string{"", "parquet", "arrow", "csv", "arrows"}[i]
			var stdout bytes.Buffer
			rep, err := RunJob(context.Background(), Job{Input: "-", Output: "-", Op: op, Backend: "cpu",
				Params: operators.Params{Source: c.ks.keys[0]},
				Load:   LoadOptions{Stdin: bytes.NewReader(stream)},
				Sink:   sink.Options{Format: format, Stdout: &stdout}})
			if err != nil {
				t.Fatalf("%s %s: %v", c.kt, op, err)
			}
			rep.Release()
			ext := map[string]string{"": ".arrows", "parquet": ".parquet", "arrow": ".arrow", "csv": ".csv", "arrows": ".arrows"}[format]
			out := filepath.Join(t.TempDir(), "out"+ext)
			if err := os.WriteFile(out, stdout.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			checkOutput(t, fmt.Sprintf("%s %s to standard output as %q", c.kt, op, format), readOutput(t, out), op, in, g, in.vertex)
		}
	}
}

// A symmetric Matrix Market file is the undirected graph of its entries:
// the lower triangle of the undirected reference graph (and its self
// loops, on the diagonal), read as a directed graph, gives the same
// results as the undirected runs, with values and as a pattern (weight 1).
func TestMatrixMarketSymmetric(t *testing.T) {
	und := newRefGraph(rtN, rtEdges, true)
	key := func(v int) int64 {
		k, _ := strconv.ParseInt(ksMTX.keys[v], 10, 64)
		return k
	}
	var lower, unit []rtEdge
	for k, w := range und.w {
		if key(k[0]) > key(k[1]) {
			lower = append(lower, rtEdge{k[0], k[1], w})
		}
	}
	for _, e := range rtEdges {
		if e.u == e.v {
			lower = append(lower, e)
		}
	}
	slices.SortFunc(lower, func(a, b rtEdge) int { return cmp.Or(cmp.Compare(a.u, b.u), cmp.Compare(a.v, b.v)) })
	for _, e := range lower {
		unit = append(unit, rtEdge{e.u, e.v, 1})
	}
	dir := t.TempDir()
	for _, c := range []struct {
		field string
		g     *refGraph
	}{
		{"real", und},
		{"pattern", newRefGraph(rtN, unit, true)},
	} {
		in := rtInput{name: c.field, path: filepath.Join(dir, c.field+".mtx"), ks: ksMTX, vertex: arrow.PrimitiveTypes.Int64}
		writeMTX(t, in.path, lower, c.field, "symmetric")
		for _, op := range rtOps {
			out := filepath.Join(t.TempDir(), "out.arrows")
			rep, err := RunJob(context.Background(), Job{Input: in.path, Output: out, Op: op, Backend: "cpu",
				Params: operators.Params{Source: ksMTX.keys[0]}})
			if err != nil {
				t.Fatalf("%s %s: %v", c.field, op, err)
			}
			if rep.Edges != int64(c.g.numEdges()) {
				t.Errorf("%s %s: %d edges, want %d", c.field, op, rep.Edges, c.g.numEdges())
			}
			rep.Release()
			checkOutput(t, c.field+" "+op, readOutput(t, out), op, in, c.g, in.vertex)
		}
	}
}

// An input without rows gives outputs without rows, with the columns and
// the key type they would have had; a source cannot be found in it.
func TestEmptyTables(t *testing.T) {
	dir := t.TempDir()
	var ins []rtInput
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	for _, c := range []struct {
		ks keySet
		kt arrow.DataType
	}{
		{ksInt32, arrow.PrimitiveTypes.Int32}, {ksUint64, arrow.PrimitiveTypes.Uint64},
		{ksString, arrow.BinaryTypes.String}, {ksString, arrow.BinaryTypes.LargeString}, {ksString, dict},
	} {
		recs := edgeRecords(t, c.ks, nil, c.kt, arrow.PrimitiveTypes.Float64)[:1]
		vt := c.kt
		if c.kt == dict {
			vt = arrow.BinaryTypes.String
		}
		for _, ext := range []string{".parquet", ".arrow", ".arrows"} {
			p := filepath.Join(dir, fmt.Sprintf("%d%s", len(ins), ext))
			want := vt
			switch ext {
			case ".parquet":
				writeParquet(t, p, recs)
				if c.ks.kind == edges.KeyString {
					want = arrow.BinaryTypes.String
				}
			case ".arrow":
				writeIPC(t, p, recs, false)
			case ".arrows":
				writeIPC(t, p, recs, true)
			}
			ins = append(ins, rtInput{name: c.kt.String() + ext, path: p, ks: c.ks, vertex: want})
		}
		recs[0].Release()
	}
	for name, text := range map[string]string{
		"header.csv": "src,dst,weight\n",
		"empty.txt":  "# nothing but a comment\n",
		"empty.mtx":  "%%MatrixMarket matrix coordinate real general\n3 3 0\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, rtInput{name: name, path: p, ks: ksInt64, vertex: arrow.PrimitiveTypes.Int64})
	}
	empty := newRefGraph(0, nil, false)
	for _, in := range ins {
		for _, op := range []string{"pagerank", "cc"} {
			for _, ext := range rtOutputs {
				out := filepath.Join(t.TempDir(), "out"+ext)
				rep, err := RunJob(context.Background(), Job{Input: in.path, Output: out, Op: op, Backend: "cpu"})
				if err != nil {
					t.Errorf("%s %s %s: %v", in.name, op, ext, err)
					continue
				}
				if rep.Vertices != 0 || rep.Edges != 0 || rep.RowsRead != 0 {
					t.Errorf("%s %s: %d vertices, %d edges, %d rows", in.name, op, rep.Vertices, rep.Edges, rep.RowsRead)
				}
				rep.Release()
				checkOutput(t, in.name+" "+op+" "+ext, readOutput(t, out), op, in, empty, in.vertex)
			}
		}
		_, err := RunJob(context.Background(), Job{Input: in.path, Op: "bfs", Backend: "cpu", Params: operators.Params{Source: "1"}})
		var ue *usererr.Error
		if !errors.As(err, &ue) || ue.Kind != usererr.NotFound {
			t.Errorf("%s: bfs from 1: %v, want a not-found error", in.name, err)
		}
	}
}

func mustLookup(t testing.TB, op string) operators.Operator {
	t.Helper()
	o, err := operators.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// edgeRows is an edge table's rows as text: src, dst, weight.
func edgeRows(t testing.TB, tab *edges.Table) [][3]string {
	t.Helper()
	key := func(k *edges.Keys, i int) string {
		switch {
		case k.Int32 != nil:
			return strconv.FormatInt(int64(k.Int32[i]), 10)
		case k.Int64 != nil:
			return strconv.FormatInt(k.Int64[i], 10)
		case k.Uint32 != nil:
			return strconv.FormatUint(uint64(k.Uint32[i]), 10)
		case k.Uint64 != nil:
			return strconv.FormatUint(k.Uint64[i], 10)
		case k.Str != nil:
			return string(k.Str.At(i))
		}
		t.Fatal("chunk without keys")
		return ""
	}
	var rows [][3]string
	for ci := range tab.Chunks {
		c := &tab.Chunks[ci]
		for i := range c.Len() {
			w := "-"
			if c.Weight != nil {
				w = strconv.FormatFloat(c.Weight[i], 'g', -1, 64)
			}
			rows = append(rows, [3]string{key(&c.Src, i), key(&c.Dst, i), w})
		}
	}
	return rows
}

// TestEdgeTableRoundTrip reads every input, writes its edge table in every
// output format (as `gpipe gen` does), reads that back and compares the
// edges row by row.
func TestEdgeTableRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ins := rtInputs(t, dir, rtEdges)
	ctx := context.Background()
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	for _, in := range ins {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			tab, err := ingest.Open(ctx, in.path, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tab.Release()
			want := edgeRows(t, tab)
			if len(want) != len(rtEdges) {
				t.Fatalf("read %d edges, want %d", len(want), len(rtEdges))
			}
			for i, e := range rtEdges {
				w := [3]string{in.ks.keys[e.u], in.ks.keys[e.v], strconv.FormatFloat(e.w, 'g', -1, 64)}
				if want[i] != w {
					t.Fatalf("row %d read as %q, want %q", i, want[i], w)
				}
			}
			for _, ext := range rtOutputs {
				out := filepath.Join(t.TempDir(), "edges"+ext)
				w, err := sink.Create(out, tab.Schema(), sink.Options{BatchRows: 9})
				if err != nil {
					t.Fatal(err)
				}
				rr := tab.RecordReader()
				for rr.Next() {
					if err := w.Write(rr.RecordBatch()); err != nil {
						t.Fatal(err)
					}
				}
				rr.Release()
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				back, err := ingest.Open(ctx, out, nil, opts)
				if err != nil {
					t.Fatalf("%s: %v", ext, err)
				}
				got := edgeRows(t, back)
				kt := back.KeyType
				back.Release()
				if !slices.Equal(got, want) {
					t.Errorf("%s: edges read back as\n%q\nwant\n%q", ext, got, want)
				}
				wantKT := tab.KeyType
				if ext == ".csv" {
					// CSV keys are int64, or strings where some key is no
					// int64 (uint64 keys above 2^63-1).
					switch wantKT {
					case edges.KeyInt32, edges.KeyUint32:
						wantKT = edges.KeyInt64
					case edges.KeyUint64:
						wantKT = edges.KeyString
					}
				}
				if kt != wantKT {
					t.Errorf("%s: keys read back as %s, want %s", ext, kt, wantKT)
				}
			}
		})
	}
}
