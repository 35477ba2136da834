#!/usr/bin/env python3
"""Writes pagerank_networkx.json: networkx.pagerank's ranks of a small graph,
weighted (networkx's default, weight="weight") and not (weight=None),
directed and undirected, which TestPageRankNetworkx (operators, and
gpuop's on the GPU) compares gpipe's with. The graph has what the weights
change: fractional weights, a vertex whose out-edges all weigh 0 (dangling
when weighted), a vertex without out-edges; no self loops, parallel or
reciprocal edges (gpipe drops the first and merges the others by their
smallest weight, where networkx keeps loops and the last weight).

    python3 pagerank_networkx.py pagerank_networkx.json
"""
import json
import sys

import networkx as nx

EDGES = [
    (1, 2, 0.5), (1, 3, 2.0), (1, 4, 1.5), (2, 3, 1.0), (2, 7, 4.0),
    (3, 8, 3.0), (3, 5, 0.25), (4, 5, 1.0), (4, 2, 0.0), (5, 1, 1.0),
    (6, 1, 0.0), (6, 2, 0.0), (8, 6, 2.5),
]


def main(path):
    versions = {"networkx": nx.__version__}
    try:
        import scipy
        versions["scipy"] = scipy.__version__
    except ImportError:
        pass
    out = {"generator": "operators/testdata/pagerank_networkx.py", "versions": versions,
           "alpha": 0.85, "edges": [list(e) for e in EDGES], "cases": []}
    for directed in (True, False):
        g = nx.DiGraph() if directed else nx.Graph()
        g.add_weighted_edges_from(EDGES)
        for weighted in (True, False):
            ranks = nx.pagerank(g, alpha=0.85, tol=1e-15, max_iter=100000,
                                weight="weight" if weighted else None)
            out["cases"].append({"directed": directed, "weighted": weighted,
                                 "ranks": {str(k): ranks[k] for k in sorted(ranks)}})
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
