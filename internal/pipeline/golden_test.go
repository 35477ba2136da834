package pipeline

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/operators"
)

// Golden results from networkx (scripts/networkx-golden.py writes
// testdata/golden/): PageRank within 1e-6 in L1, as the README promises,
// and BFS depths, connected components and shortest-path distances exactly
// (distances within 1e-9), on graphs with dangling vertices, self loops,
// parallel edges, string keys, undirected and directed edges.

const goldenDir = "testdata/golden"

func readCSVFile(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) < 2 {
		t.Fatalf("%s: no rows", path)
	}
	return recs
}

// goldenRow is networkx's results for one vertex; empty depth and distance
// mean the source does not reach it.
type goldenRow struct {
	rank      float64
	depth     string
	component string
	distance  string
}

func TestNetworkxGolden(t *testing.T) {
	graphs := readCSVFile(t, filepath.Join(goldenDir, "graphs.csv"))
	for _, g := range graphs[1:] {
		name, edges, undirected, source := g[0], g[1], g[2] == "true", g[3]
		vertices, _ := strconv.Atoi(g[4])
		edgeCount, _ := strconv.ParseInt(g[5], 10, 64)
		selfLoops, _ := strconv.ParseInt(g[6], 10, 64)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := map[string]goldenRow{}
			for _, r := range readCSVFile(t, filepath.Join(goldenDir, name+".golden.csv"))[1:] {
				rank, err := strconv.ParseFloat(r[1], 64)
				if err != nil {
					t.Fatal(err)
				}
				want[r[0]] = goldenRow{rank: rank, depth: r[2], component: r[3], distance: r[4]}
			}
			if len(want) != vertices {
				t.Fatalf("golden file has %d vertices, graphs.csv says %d", len(want), vertices)
			}
			input := filepath.Join(goldenDir, edges+".edges.csv")
			for _, op := range []string{"pagerank", "bfs", "cc", "sssp"} {
				job := Job{Input: input, Op: op, Backend: "cpu", Load: LoadOptions{Undirected: undirected}}
				if op == "bfs" || op == "sssp" {
					job.Params = operators.Params{Source: source}
				}
				rep, err := RunJob(context.Background(), job)
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				if rep.Vertices != vertices || rep.Edges != edgeCount || rep.SelfLoops != selfLoops {
					t.Errorf("%s: %d vertices, %d edges, %d self loops; networkx: %d, %d, %d",
						op, rep.Vertices, rep.Edges, rep.SelfLoops, vertices, edgeCount, selfLoops)
				}
				rec := rep.Result.Record(memory.DefaultAllocator)
				o := &outTable{}
				addRecord(t, o, rec)
				rec.Release()
				rep.Release()
				if len(o.rows) != len(want) {
					t.Fatalf("%s: %d rows, want %d", op, len(o.rows), len(want))
				}
				l1 := 0.0
				bad := 0
				for _, r := range o.rows {
					key, got := r[0].s, r[1]
					w, ok := want[key]
					if !ok {
						t.Fatalf("%s: vertex %q is not in networkx's graph", op, key)
					}
					var exp string
					match := false
					switch op {
					case "pagerank":
						x, _ := strconv.ParseFloat(got.s, 64)
						l1 += math.Abs(x - w.rank)
						continue
					case "bfs":
						exp = w.depth
						match = got.null == (exp == "") && got.s == exp
					case "cc":
						exp = w.component
						match = !got.null && got.s == exp
					case "sssp":
						exp = w.distance
						if got.null || exp == "" {
							match = got.null && exp == ""
						} else {
							x, _ := strconv.ParseFloat(got.s, 64)
							y, _ := strconv.ParseFloat(exp, 64)
							match = math.Abs(x-y) <= 1e-9
						}
					}
					if !match {
						if bad++; bad <= 10 {
							t.Errorf("%s: vertex %s: %s is %v, networkx says %q", op, key, o.names[1], got, exp)
						}
					}
				}
				if op == "pagerank" {
					if !(l1 <= 1e-6) {
						t.Errorf("pagerank: %g from networkx in L1, want at most 1e-6", l1)
					}
					t.Logf("pagerank: %.3g from networkx in L1", l1)
				}
			}
		})
	}
}
