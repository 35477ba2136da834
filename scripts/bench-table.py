#!/usr/bin/env python3
"""Prints one line per report in `gpipe bench --json` files (one JSON object a line, one a
strategy): the figures BENCHMARKS.md quotes."""
import json
import sys

for path in sys.argv[1:]:
    try:
        lines = [line for line in open(path).read().split("\n") if line.strip()]
        reports = [json.loads(line) for line in lines]
    except (OSError, ValueError) as e:
        print(f"{path}: {e}")
        continue
    for r in reports:
        line = f"{path.rsplit('/', 1)[-1]:32s} {r['op']:8s} {r['backend']:4s} {r.get('strategy', '')[:40]:40s} median {r['median_s'] * 1e3:9.3f} ms"
        if r.get("gteps"):
            line += f"  {r['gteps']:7.3f} GTEPS"
        if r.get("iterations"):
            line += f"  {r['iterations']} it"
        if r.get("s_per_iteration"):
            line += f", {r['s_per_iteration'] * 1e3:.3f} ms/it"
        if r.get("edges_per_iteration"):
            line += f"  {r['edges_per_iteration'] / 1e6:.2f} M edges/it"
        if r.get("edges_walked"):
            line += f"  {r['edges_walked'] / 1e6:.1f} M walked"
        print(line)
