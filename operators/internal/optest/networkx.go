package optest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// NetworkxCase is one case of operators/testdata/pagerank_networkx.json:
// networkx.pagerank's ranks of its graph, by key, directed or not,
// weighted (weight="weight") or not (weight=None).
type NetworkxCase struct {
	Directed, Weighted bool
	Ranks              map[string]float64
}

// Networkx reads operators/testdata/pagerank_networkx.json (written by
// pagerank_networkx.py beside it, with networkx and scipy): its graph as a
// shape and its cases.
func Networkx(t testing.TB) (Shape, []NetworkxCase) {
	t.Helper()
	path := filepath.Join(moduleRoot(t), "operators", "testdata", "pagerank_networkx.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Edges [][3]float64
		Cases []NetworkxCase
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	s := Shape{Name: "networkx"}
	for _, e := range f.Edges {
		s.Edges = append(s.Edges, Edge{U: int64(e[0]), V: int64(e[1]), W: e[2]})
	}
	if len(f.Cases) != 4 {
		t.Fatalf("%s: %d cases, want 4", path, len(f.Cases))
	}
	return s, f.Cases
}

// SameAsNetworkx compares ranks by vertex id (the keys' ascending order,
// as BuildGraph numbers them) with networkx's by key, within tol.
func SameAsNetworkx(x []float64, c NetworkxCase, tol float64) error {
	keys := make([]int, 0, len(c.Ranks))
	for k := range c.Ranks {
		n, err := strconv.Atoi(k)
		if err != nil {
			return err
		}
		keys = append(keys, n)
	}
	slices.Sort(keys)
	if len(keys) != len(x) {
		return fmt.Errorf("%d ranks, networkx has %d", len(x), len(keys))
	}
	for i, k := range keys {
		if want := c.Ranks[strconv.Itoa(k)]; math.Abs(x[i]-want) > tol {
			return fmt.Errorf("vertex %d: rank %v, networkx %v", k, x[i], want)
		}
	}
	return nil
}
