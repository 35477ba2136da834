package convert

// The simple sequential builder that the parallel Build replaced. It is kept
// as the reference the tests compare Build against: maps, one big sort.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
)

// refBuild is the simple sequential builder that Build is tested against. It
// renumbers the table's keys, cleans its edges and builds the graph. Rows
// that the weight rule drops are dropped before renumbering, so that keys
// found only in dropped rows are not vertices (as with rows ingest skips).
func refBuild(ctx context.Context, t *edges.Table, opts BuildOptions) (*Graph, error) {
	if opts.Weighted && !t.HasWeight {
		return nil, usererr.InFile(t.Name, "the graph must be weighted but the input has no weight column",
			"name the weight column with --weight-col")
	}
	g := &Graph{Directed: !opts.Undirected, Weighted: opts.Weighted, alloc: opts.Alloc}
	g.Stats.Skipped = edges.Skips{}
	if opts.Weighted {
		var err error
		if t, err = refApplyWeightRule(t, opts, g.Stats.Skipped); err != nil {
			return nil, err
		}
	}
	keys, src, dst, err := refRenumber(t)
	if err != nil {
		return nil, err
	}
	g.Keys = keys
	var w []float64
	if opts.Weighted {
		w = make([]float64, 0, len(src))
		for ci := range t.Chunks {
			w = append(w, t.Chunks[ci].Weight...)
		}
	}
	g.Stats.InputEdges = int64(len(src))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.Out = refBuildCSR(keys.Len(), src, dst, w, opts.Undirected, &g.Stats)
	return g, nil
}

// refApplyWeightRule is the table without the rows whose weight the rule
// rejects, or the error about the first of them.
func refApplyWeightRule(t *edges.Table, opts BuildOptions, skipped edges.Skips) (*edges.Table, error) {
	out := *t
	out.Chunks = nil
	for ci := range t.Chunks {
		c := &t.Chunks[ci]
		var keep []int
		for j := 0; j < c.Len(); j++ {
			if problem := weightProblem(c.Weight[j], opts.Weights); problem != "" {
				if !opts.SkipInvalid {
					return nil, usererr.AtRow(t.Name, t.Columns.Weight, c.Row(j), problem,
						"fix the weight or pass --skip-invalid to drop such rows")
				}
				skipped.Add(fmt.Sprintf("%s in column %q", problem, t.Columns.Weight), 1)
				continue
			}
			keep = append(keep, j)
		}
		nc := edges.Chunk{FirstRow: c.FirstRow, Rows: []int64{}, Src: pickKeys(&c.Src, keep), Dst: pickKeys(&c.Dst, keep), Weight: []float64{}}
		for _, j := range keep {
			nc.Rows = append(nc.Rows, c.Row(j))
			nc.Weight = append(nc.Weight, c.Weight[j])
		}
		out.Chunks = append(out.Chunks, nc)
	}
	return &out, nil
}

// pickKeys is the keys at positions keep.
func pickKeys(k *edges.Keys, keep []int) edges.Keys {
	var o edges.Keys
	switch {
	case k.Int32 != nil:
		o.Int32 = []int32{}
		for _, j := range keep {
			o.Int32 = append(o.Int32, k.Int32[j])
		}
	case k.Int64 != nil:
		o.Int64 = []int64{}
		for _, j := range keep {
			o.Int64 = append(o.Int64, k.Int64[j])
		}
	case k.Uint32 != nil:
		o.Uint32 = []uint32{}
		for _, j := range keep {
			o.Uint32 = append(o.Uint32, k.Uint32[j])
		}
	case k.Uint64 != nil:
		o.Uint64 = []uint64{}
		for _, j := range keep {
			o.Uint64 = append(o.Uint64, k.Uint64[j])
		}
	case k.Str != nil:
		o.Str = &edges.Strings{Offsets: []int64{0}}
		for _, j := range keep {
			o.Str.Data = append(o.Str.Data, k.Str.At(j)...)
			o.Str.Offsets = append(o.Str.Offsets, int64(len(o.Str.Data)))
		}
	}
	return o
}

// renumber maps every key to its rank among the distinct keys.
func refRenumber(t *edges.Table) (*VertexKeys, []uint32, []uint32, error) {
	k := &VertexKeys{Type: t.KeyType, ArrowType: keyArrowType(t)}
	switch t.KeyType {
	case edges.KeyInt32:
		var src, dst []uint32
		k.Int32, src, dst = refRenumberOrdered(t, func(k *edges.Keys) []int32 { return k.Int32 })
		return k, src, dst, nil
	case edges.KeyInt64:
		var src, dst []uint32
		k.Int64, src, dst = refRenumberOrdered(t, func(k *edges.Keys) []int64 { return k.Int64 })
		return k, src, dst, nil
	case edges.KeyUint32:
		var src, dst []uint32
		k.Uint32, src, dst = refRenumberOrdered(t, func(k *edges.Keys) []uint32 { return k.Uint32 })
		return k, src, dst, nil
	case edges.KeyUint64:
		var src, dst []uint32
		k.Uint64, src, dst = refRenumberOrdered(t, func(k *edges.Keys) []uint64 { return k.Uint64 })
		return k, src, dst, nil
	case edges.KeyString:
		var src, dst []uint32
		k.Str, src, dst = refRenumberStrings(t)
		return k, src, dst, nil
	}
	return nil, nil, nil, usererr.InFile(t.Name, fmt.Sprintf("unsupported key type %v", t.KeyType), "")
}

func refRenumberOrdered[T cmp.Ordered](t *edges.Table, col func(*edges.Keys) []T) ([]T, []uint32, []uint32) {
	var all []T
	for ci := range t.Chunks {
		all = append(all, col(&t.Chunks[ci].Src)...)
		all = append(all, col(&t.Chunks[ci].Dst)...)
	}
	slices.Sort(all)
	uniq := slices.Compact(all)
	id := make(map[T]uint32, len(uniq))
	for i, v := range uniq {
		id[v] = uint32(i)
	}
	var src, dst []uint32
	for ci := range t.Chunks {
		for _, v := range col(&t.Chunks[ci].Src) {
			src = append(src, id[v])
		}
		for _, v := range col(&t.Chunks[ci].Dst) {
			dst = append(dst, id[v])
		}
	}
	return slices.Clip(uniq), src, dst
}

func refRenumberStrings(t *edges.Table) (*edges.Strings, []uint32, []uint32) {
	set := map[string]struct{}{}
	for ci := range t.Chunks {
		for _, s := range []*edges.Strings{t.Chunks[ci].Src.Str, t.Chunks[ci].Dst.Str} {
			for i := 0; i < s.Len(); i++ {
				set[string(s.At(i))] = struct{}{}
			}
		}
	}
	uniq := make([]string, 0, len(set))
	for s := range set {
		uniq = append(uniq, s)
	}
	slices.SortFunc(uniq, func(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) })
	keys := &edges.Strings{Offsets: make([]int64, 1, len(uniq)+1)}
	id := make(map[string]uint32, len(uniq))
	for i, s := range uniq {
		id[s] = uint32(i)
		keys.Data = append(keys.Data, s...)
		keys.Offsets = append(keys.Offsets, int64(len(keys.Data)))
	}
	var src, dst []uint32
	for ci := range t.Chunks {
		s, d := t.Chunks[ci].Src.Str, t.Chunks[ci].Dst.Str
		for i := 0; i < s.Len(); i++ {
			src = append(src, id[string(s.At(i))])
			dst = append(dst, id[string(d.At(i))])
		}
	}
	return keys, src, dst
}

// refBuildCSR sorts the edges by source, drops self loops and merges parallel
// edges, keeping the minimum weight.
func refBuildCSR(n int, src, dst []uint32, w []float64, undirected bool, st *Stats) CSR {
	type edge struct {
		u, v uint32
		w    float64
	}
	var edges []edge
	for i := range src {
		if src[i] == dst[i] {
			st.SelfLoops++
			continue
		}
		e := edge{u: src[i], v: dst[i]}
		if w != nil {
			e.w = w[i]
		}
		edges = append(edges, e)
		if undirected {
			edges = append(edges, edge{u: e.v, v: e.u, w: e.w})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.u, b.u); c != 0 {
			return c
		}
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c
		}
		return cmp.Compare(a.w, b.w)
	})
	c := CSR{Offsets: make([]int64, n+1), Targets: []uint32{}}
	if w != nil {
		c.Weights = []float64{}
	}
	for i, e := range edges {
		if i > 0 && edges[i-1].u == e.u && edges[i-1].v == e.v {
			st.Merged++
			continue
		}
		c.Offsets[e.u+1]++
		c.Targets = append(c.Targets, e.v)
		if w != nil {
			c.Weights = append(c.Weights, e.w)
		}
	}
	for v := 0; v < n; v++ {
		st.MaxDegree = max(st.MaxDegree, c.Offsets[v+1])
		c.Offsets[v+1] += c.Offsets[v]
	}
	return c
}

// transpose is the layout of the reversed edges.
func refTranspose(c *CSR, _ any) CSR {
	n := c.NumVertices()
	t := CSR{Offsets: make([]int64, n+1), Targets: make([]uint32, len(c.Targets))}
	if c.Weights != nil {
		t.Weights = make([]float64, len(c.Weights))
	}
	for _, v := range c.Targets {
		t.Offsets[v+1]++
	}
	for v := 0; v < n; v++ {
		t.Offsets[v+1] += t.Offsets[v]
	}
	next := slices.Clone(t.Offsets[:n])
	for u := 0; u < n; u++ {
		for e := c.Offsets[u]; e < c.Offsets[u+1]; e++ {
			v := c.Targets[e]
			t.Targets[next[v]] = uint32(u)
			if c.Weights != nil {
				t.Weights[next[v]] = c.Weights[e]
			}
			next[v]++
		}
	}
	return t
}
