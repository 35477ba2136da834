package main_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// networkxGolden is operators/testdata/pagerank_networkx.json: a small
// graph and networkx.pagerank's ranks of it.
type networkxGolden struct {
	Edges [][3]float64
	Cases []struct {
		Directed, Weighted bool
		Ranks              map[string]float64
	}
}

func readGolden(t *testing.T) networkxGolden {
	t.Helper()
	b, err := os.ReadFile("../../operators/testdata/pagerank_networkx.json")
	if err != nil {
		t.Fatal(err)
	}
	var g networkxGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// pagerank --weighted is networkx.pagerank(G) (weight="weight") and the
// default networkx.pagerank(G, weight=None), directed and undirected, on
// the golden graph.
func TestPageRankWeightedFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := readGolden(t)
	var csv strings.Builder
	csv.WriteString("src,dst,weight\n")
	for _, e := range g.Edges {
		fmt.Fprintf(&csv, "%d,%d,%v\n", int(e[0]), int(e[1]), e[2])
	}
	writeFile(t, filepath.Join(dir, "e.csv"), []byte(csv.String()))
	for _, c := range g.Cases {
		args := []string{"run", "--input", "e.csv", "--op", "pagerank", "--tolerance", "1e-13", "--output", "o.parquet", "--backend", "cpu", "--quiet"}
		if c.Weighted {
			args = append(args, "--weighted")
		}
		if !c.Directed {
			args = append(args, "--undirected")
		}
		r := ok(t, dir, nil, args...)
		if c.Weighted == strings.Contains(r.stderr, "ignored weight column") {
			t.Errorf("weighted %v: stderr %q", c.Weighted, r.stderr)
		}
		ranks := readOutput(t, filepath.Join(dir, "o.parquet")).byVertex(t, "rank")
		for k, want := range c.Ranks {
			got, _ := ranks[k].(float64)
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("directed %v weighted %v: vertex %s rank %v, networkx %v", c.Directed, c.Weighted, k, ranks[k], want)
			}
		}
	}
}

// Unweighted pagerank on a table with a weight column says it ignored it
// and how to use it, from every reader; --weighted on a table without one
// says every weight was 1; --weighted is refused where it means nothing or
// contradicts another flag; a negative weight is an error naming its row.
func TestPageRankWeightedNotes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "w.csv"), []byte("src,dst,weight\n1,2,0.5\n2,3,2\n3,1,1\n"))
	writeFile(t, filepath.Join(dir, "w.txt"), []byte("1 2 0.5\n2 3 2\n3 1 1\n"))
	writeFile(t, filepath.Join(dir, "u.csv"), []byte("src,dst\n1,2\n2,3\n"))
	writeFile(t, filepath.Join(dir, "neg.csv"), []byte("src,dst,weight\n1,2,0.5\n2,3,-2\n"))
	ignored := `gpipe: note: pagerank ignored weight column "weight": unweighted pagerank (networkx.pagerank(G, weight=None)) counts every out-edge of a vertex the same; pass --weighted to weigh them by the column, as networkx.pagerank(G) does by default`
	for _, in := range []string{"w.csv", "w.txt"} {
		r := ok(t, dir, nil, "run", "--input", in, "--op", "pagerank", "--output", "o.csv", "--quiet")
		if !strings.Contains(r.stderr, ignored+"\n") {
			t.Errorf("%s: stderr lacks the note:\n%s", in, r.stderr)
		}
		r = ok(t, dir, nil, "run", "--input", in, "--op", "pagerank", "--output", "o.csv", "--quiet", "--unweighted")
		if r.stderr != "" {
			t.Errorf("%s --unweighted: stderr %q", in, r.stderr)
		}
		r = ok(t, dir, nil, "run", "--input", in, "--op", "pagerank", "--output", "o.csv", "--quiet", "--weighted")
		if r.stderr != "" {
			t.Errorf("%s --weighted: stderr %q", in, r.stderr)
		}
	}
	r := ok(t, dir, nil, "run", "--input", "u.csv", "--op", "pagerank", "--output", "o.csv", "--quiet", "--weighted", "--json")
	if want := `pagerank used weight 1 for every edge, as the input has no weight column "weight": the ranks are unweighted PageRank's; name the weight column with --weight-col, or leave --weighted out to say that is meant`; !strings.Contains(r.stderr, want) {
		t.Errorf("--weighted without weights: stderr %q", r.stderr)
	}
	r = ok(t, dir, nil, "bench", "--input", "w.csv", "--op", "pagerank", "--trials", "1", "--weighted", "--backend", "cpu")
	if !strings.Contains(r.stdout, "weighted") || strings.Contains(r.stdout, "note") {
		t.Errorf("bench --weighted:\n%s", r.stdout)
	}
	fails(t, dir, nil, 2, []string{"--weighted does not apply to operator bfs"}, "run", "--input", "w.csv", "--op", "bfs", "--source", "1", "--weighted")
	fails(t, dir, nil, 2, []string{"--weighted with --unweighted"}, "run", "--input", "w.csv", "--op", "pagerank", "--weighted", "--unweighted")
	fails(t, dir, nil, 2, []string{"gshards does not run weighted PageRank", "warpseg or vwc"}, "run", "--input", "w.csv", "--op", "pagerank", "--weighted", "--strategy", "gshards")
	fails(t, dir, nil, 3, []string{`neg.csv: column "weight", line 3: negative weight -2`, "weighted pagerank"}, "run", "--input", "neg.csv", "--op", "pagerank", "--weighted")
}
