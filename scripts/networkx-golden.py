#!/usr/bin/env python3
"""Writes golden results from networkx for golden_test.go.

For each graph it writes, under internal/pipeline/testdata/golden/ (or the directory given as
the first argument):

  EDGES.edges.csv  the edge list gpipe reads: src,dst,weight, one row per
                   input edge, self loops and parallel edges included (two
                   graphs may share one)
  NAME.golden.csv  vertex,rank,depth,component,distance: one row per vertex
                   (every key of an edge), computed by networkx on the graph
                   as gpipe cleans it: self loops dropped, parallel edges
                   merged with their minimum weight (for an undirected graph,
                   all the edges between two vertices, either way round);
                   depth and distance are empty where the source does not
                   reach the vertex
  graphs.csv       name,edges,undirected,source,vertices,edge_count,self_loops:
                   how golden_test.go runs each graph (EDGES names its edge
                   list), and the counts gpipe should report: vertices,
                   directed edges after cleaning (twice networkx's count for
                   an undirected graph) and self-loop rows

The results:

  rank       networkx.pagerank(G, alpha=0.85, weight=None, tol=1e-9/N,
             max_iter=10000): networkx stops when the L1 change of an
             iteration is below N*tol, so this is gpipe's default rule (L1
             change below 1e-9); edge weights are not used
  depth      networkx.single_source_shortest_path_length(G, source)
  component  the smallest key of the vertex's weakly connected component
             (networkx.weakly_connected_components; connected_components
             for an undirected graph); strings compare by code point,
             which is UTF-8's byte order, as gpipe compares them
  distance   networkx.single_source_dijkstra_path_length(G, source,
             weight="weight")

Floats are written with repr, which reads back to the same float64.

Needs networkx (Debian: apt-get install python3-networkx, then run it with
/usr/bin/python3 if another python3 comes first on PATH). The graphs come
from fixed seeds and networkx sees the vertices in a fixed order, so running
this again gives the same files. The committed files were made with
networkx 2.8.8 (Debian bookworm).

    python3 scripts/networkx-golden.py [OUTDIR]
"""

import csv
import os
import random
import sys

import networkx as nx


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def fmt_weight(w):
    if isinstance(w, int) or float(w).is_integer():
        return str(int(w))
    return repr(float(w))


def clean(edges, undirected):
    """The graph gpipe builds from the input rows: the nodes are every key
    of a row, self loops are dropped and parallel edges merged into one
    with the minimum weight."""
    nodes = set()
    merged = {}
    for u, v, w in edges:
        nodes.add(u)
        nodes.add(v)
        if u == v:
            continue
        k = (min(u, v), max(u, v)) if undirected else (u, v)
        if k not in merged or w < merged[k]:
            merged[k] = w
    G = nx.Graph() if undirected else nx.DiGraph()
    G.add_nodes_from(sorted(nodes))  # in a fixed order, so reruns give the same floats
    for (u, v), w in merged.items():
        G.add_edge(u, v, weight=w)
    return G


def golden(name, edges_name, edges, undirected, source, outdir):
    G = clean(edges, undirected)
    assert source in G and G.degree(source) > 0, (name, source)
    n = G.number_of_nodes()
    rank = nx.pagerank(G, alpha=0.85, weight=None, tol=1e-9 / n, max_iter=10000)
    depth = nx.single_source_shortest_path_length(G, source)
    dist = nx.single_source_dijkstra_path_length(G, source, weight="weight")
    comps = nx.connected_components(G) if undirected else nx.weakly_connected_components(G)
    component = {}
    for c in comps:
        label = min(c)
        for v in c:
            component[v] = label

    write_csv(os.path.join(outdir, edges_name + ".edges.csv"), ["src", "dst", "weight"],
              [[u, v, fmt_weight(w)] for u, v, w in edges])
    rows = []
    for v in sorted(G.nodes()):
        rows.append([
            v,
            repr(rank[v]),
            depth[v] if v in depth else "",
            component[v],
            repr(float(dist[v])) if v in dist else "",
        ])
    write_csv(os.path.join(outdir, name + ".golden.csv"),
              ["vertex", "rank", "depth", "component", "distance"], rows)
    reached = len(depth)
    print(f"{name}: {len(edges)} rows, {n} vertices, {G.number_of_edges()} edges "
          f"({'undirected' if undirected else 'directed'}), source {source} reaches {reached}, "
          f"{len(set(component.values()))} components", file=sys.stderr)
    m = G.number_of_edges() * (2 if undirected else 1)
    loops = sum(1 for u, v, _ in edges if u == v)
    return [name, edges_name, "true" if undirected else "false", source, n, m, loops]


def random_directed(rng):
    """300 vertices with scattered int64 keys (negative ones too), 40 of
    them dangling (in-edges only), random weights with two decimals."""
    keys = rng.sample(range(-10**12, 10**12), 300)
    dangling = set(keys[:40])
    sources = keys[40:]
    edges = []
    for d in dangling:  # every dangling vertex has an in-edge, so it exists
        edges.append((rng.choice(sources), d, round(rng.uniform(0.01, 10), 2)))
    for _ in range(1500):
        u = rng.choice(sources)
        v = rng.choice(keys)
        if u != v:
            edges.append((u, v, round(rng.uniform(0.01, 10), 2)))
    rng.shuffle(edges)
    return edges, sources[0]


def kronecker(rng, scale=9, edge_factor=8):
    """A Graph 500 Kronecker graph (A=0.57, B=0.19, C=0.19) with a random
    vertex permutation and integer weights in [1, 255]; its self loops and
    duplicate edges are kept in the rows."""
    n = 1 << scale
    perm = list(range(n))
    rng.shuffle(perm)
    a, b, c = 0.57, 0.19, 0.19
    edges = []
    for _ in range(edge_factor * n):
        u = v = 0
        for bit in range(scale):
            r = rng.random()
            if r < a:
                pass
            elif r < a + b:
                v |= 1 << bit
            elif r < a + b + c:
                u |= 1 << bit
            else:
                u |= 1 << bit
                v |= 1 << bit
        edges.append((perm[u], perm[v], rng.randint(1, 255)))
    src = max(range(n), key=lambda x: sum(1 for e in edges if e[0] == x))
    return edges, src


def strings_undirected(rng):
    """Les Misérables co-appearances (string keys, integer weights), plus a
    small second component with multi-byte keys, in random row order and
    direction."""
    G = nx.les_miserables_graph()
    edges = []
    for u, v, d in G.edges(data=True):
        if rng.random() < 0.5:
            u, v = v, u
        edges.append((u, v, d["weight"]))
    edges += [("Ωmega", "日本", 2), ("日本", "Zürich", 1), ("Zürich", "Ωmega", 5), ("Ωmega", "Ωmega", 1)]
    rng.shuffle(edges)
    return edges, "Valjean"


def loops_parallel(rng):
    """A directed graph that is mostly self loops and parallel edges: 60
    vertices, every edge repeated with other weights, many self loops, a
    vertex with nothing but a self loop, dangling vertices."""
    keys = list(range(1, 61))
    base = []
    for _ in range(150):
        u, v = rng.choice(keys), rng.choice(keys)
        base.append((u, v))
    edges = []
    for u, v in base:
        for _ in range(rng.randint(1, 4)):
            edges.append((u, v, rng.randint(1, 9) / 4))
    for v in rng.sample(keys, 20):
        edges.append((v, v, 1))
    edges.append((1000, 1000, 3))  # only a self loop: a vertex with no edges
    edges.append((61, 62, 0.5))  # a component of its own
    edges.append((62, 61, 0.25))
    edges.append((62, 61, 0.75))
    rng.shuffle(edges)
    return edges, base[0][0]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "golden")
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    e, s = random_directed(random.Random(1))
    manifest.append(golden("random_directed", "random_directed", e, False, s, outdir))
    e, s = kronecker(random.Random(2))
    manifest.append(golden("kronecker_undirected", "kronecker", e, True, s, outdir))
    manifest.append(golden("kronecker_directed", "kronecker", e, False, s, outdir))
    e, s = strings_undirected(random.Random(3))
    manifest.append(golden("strings_undirected", "strings_undirected", e, True, s, outdir))
    e, s = loops_parallel(random.Random(4))
    manifest.append(golden("loops_parallel", "loops_parallel", e, False, s, outdir))
    write_csv(os.path.join(outdir, "graphs.csv"), ["name", "edges", "undirected", "source", "vertices", "edge_count", "self_loops"], manifest)
    print(f"networkx {nx.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
