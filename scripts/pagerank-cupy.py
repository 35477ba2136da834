#!/usr/bin/env python3
"""PageRank as a Python user would write it with CuPy: CSR sparse matrix-vector
products (cuSPARSE) in float64 and in float32, on the edge table gpipe reads, for
comparison with `gpipe bench --op pagerank` in the same run (BENCHMARKS.md).

The graph is built as gpipe builds it: vertices are the keys that appear in an
edge, numbered in key order; self loops dropped; parallel edges merged;
--undirected stores every edge both ways. An iteration is gpipe's (networkx's
definition) with the same host read-back of the L1 change:

    c = x / outdeg            (0 without out-edges)
    x' = d * (A^T c) + (d * dangling + 1 - d) / n
    change = |x' - x|_1       (read by the host)

Times are CUDA events around a fixed number of iterations, after a warm-up; the
SpMV alone is timed too. Prints one JSON object.

usage: pagerank-cupy.py EDGES.arrow [--undirected] [--iterations 20]
"""
import argparse
import json
import time

import cupy as cp
import cupyx.scipy.sparse as cps
import pyarrow as pa


def load(path, undirected):
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    src = cp.asarray(table.column(0).to_numpy())
    dst = cp.asarray(table.column(1).to_numpy())
    del table
    keys = cp.unique(cp.concatenate([src, dst]))
    n = int(keys.size)
    if undirected:
        src, dst = cp.concatenate([src, dst]), cp.concatenate([dst, src])
    keep = src != dst
    s = cp.searchsorted(keys, src[keep]).astype(cp.int64)
    d = cp.searchsorted(keys, dst[keep]).astype(cp.int64)
    del src, dst, keep, keys
    pairs = cp.unique(s * n + d)
    del s, d
    return n, (pairs // n).astype(cp.int32), (pairs % n).astype(cp.int32)


def pagerank(n, s, d, dtype, iterations, damping=0.85):
    # Row v of at holds v's in-edges: (at @ c)[v] = sum of c[u] over u -> v.
    at = cps.csr_matrix((cp.ones(s.size, dtype=dtype), (d, s)), shape=(n, n))
    outdeg = cp.bincount(s, minlength=n).astype(dtype)
    inv = cp.where(outdeg > 0, 1 / cp.maximum(outdeg, 1), 0).astype(dtype)
    dangling = (outdeg == 0).astype(dtype)
    x = cp.full(n, 1 / n, dtype=dtype)
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def step(x):
        c = x * inv
        xn = damping * (at @ c) + (damping * cp.dot(x, dangling) + 1 - damping) / n
        change = float(cp.abs(xn - x).sum())
        return xn, change

    x, _ = step(x)  # warm-up: cuSPARSE's handle and buffers
    cp.cuda.Device().synchronize()
    start.record()
    for _ in range(iterations):
        x, change = step(x)
    stop.record()
    stop.synchronize()
    per_iteration = cp.cuda.get_elapsed_time(start, stop) / iterations
    c = x * inv
    start.record()
    for _ in range(iterations):
        at @ c
    stop.record()
    stop.synchronize()
    spmv = cp.cuda.get_elapsed_time(start, stop) / iterations
    return per_iteration, spmv, change, at.nnz


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("edges")
    ap.add_argument("--undirected", action="store_true")
    ap.add_argument("--iterations", type=int, default=20)
    args = ap.parse_args()
    t0 = time.time()
    n, s, d = load(args.edges, args.undirected)
    out = {"input": args.edges, "vertices": n, "edges": int(s.size), "build_s": time.time() - t0,
           "iterations": args.iterations, "cupy": cp.__version__,
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    for name, dtype in (("float64", cp.float64), ("float32", cp.float32)):
        per_iteration, spmv, change, nnz = pagerank(n, s, d, dtype, args.iterations)
        out[name] = {"ms_per_iteration": per_iteration, "spmv_ms": spmv, "last_change": change, "nnz": int(nnz)}
        cp.get_default_memory_pool().free_all_blocks()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
