#!/usr/bin/env bash
# The BFS table of BENCHMARKS.md in one run: every GPU strategy of gpipe
# (enterprise, bfs4k, vwc, persist, auto) and its CPU backend, and GAP's bfs
# where a built GAP directory is given, side by side on the same graph files:
# Graph 500 Kronecker 22 and 24 (edge factor 16), the 2048 x 2048 grid, a
# road-like graph of ROAD_VERTICES (default 16,777,216; gpipe gen road), and
# the real graphs luxembourg_osm, ego-Twitter-undirected and
# soc-Slashdot0902, all undirected. GRAPHS (a list of k22 k24 grid road
# luxembourg twitter slashdot) keeps some, BFS_STRATEGIES names the GPU's.
# It builds nothing of GAP's.
# Usage, from the repository root on the GPU machine:
#   scripts/bench-bfs.sh GPIPE OUTDIR REAL_GRAPHS_DIR [GAP_DIR]
# GPIPE is the gpipe binary. OUTDIR gets GRAPH-gpu.json (gpipe bench --json:
# one object a line, one a strategy), GRAPH-cpu.json and GRAPH-gap.log; the
# table is printed at the end.
set -uo pipefail
gpipe=$1 out=$2 real=$3 gap=${4:-}
mkdir -p "$out"
work=${TMPDIR:-/tmp}/gpipe-bench-bfs
mkdir -p "$work"

graphs=${GRAPHS:-"k22 k24 grid road luxembourg twitter slashdot"}
wanted() { [[ " $graphs " == *" $1 "* ]]; }
road=$work/road-${ROAD_VERTICES:-16777216}.el
wanted k22 && { [ -f "$work/k22.arrow" ] || "$gpipe" gen kronecker --scale 22 --edge-factor 16 --output "$work/k22.arrow"; }
wanted k24 && { [ -f "$work/k24.arrow" ] || "$gpipe" gen kronecker --scale 24 --edge-factor 16 --output "$work/k24.arrow"; }
wanted grid && { [ -f "$work/grid.el" ] || "$gpipe" gen grid --rows 2048 --cols 2048 --output "$work/grid.el"; }
wanted road && { [ -f "$road" ] || "$gpipe" gen road --vertices "${ROAD_VERTICES:-16777216}" --output "$road"; }
declare -A input=(
	[k22]=$work/k22.arrow [k24]=$work/k24.arrow [grid]=$work/grid.el [road]=$road
	[luxembourg]=$real/luxembourg_osm.mtx [twitter]=$real/ego-Twitter-undirected.txt [slashdot]=$real/soc-Slashdot0902.txt
)
declare -A trials=([k22]=64 [k24]=64 [grid]=16 [road]=8 [luxembourg]=64 [twitter]=64 [slashdot]=64)

run() { # name, gpipe bench arguments...
	local name=$1
	shift
	echo "== $name: gpipe bench $*" >&2
	timeout 600 "$gpipe" bench --json "$@" >"$out/$name.json" 2>"$out/$name.err" || echo "$name failed: $(tail -1 "$out/$name.err")" >&2
}
for g in $graphs; do
	run "$g-gpu" --input "${input[$g]}" --undirected --op bfs --backend gpu --strategy "${BFS_STRATEGIES:-enterprise,bfs4k,vwc,persist,auto}" --trials "${trials[$g]}"
	run "$g-cpu" --input "${input[$g]}" --undirected --op bfs --backend cpu --trials "${trials[$g]}"
done

if [ -n "$gap" ]; then
	# GAP reads edge lists (.el) and Matrix Market; the SNAP files lose their
	# comment lines.
	wanted k22 && { [ -f "$work/k22.el" ] || "$gpipe" gen kronecker --scale 22 --edge-factor 16 --output "$work/k22.el"; }
	wanted twitter && grep -v '^#' "$real/ego-Twitter-undirected.txt" >"$work/twitter.el"
	wanted slashdot && grep -v '^#' "$real/soc-Slashdot0902.txt" >"$work/slashdot.el"
	declare -A gap_input=(
		[k22]=$work/k22.el [grid]=$work/grid.el [road]=$road [luxembourg]=$real/luxembourg_osm.mtx
		[twitter]=$work/twitter.el [slashdot]=$work/slashdot.el
	)
	for g in k22 grid road luxembourg twitter slashdot; do
		wanted "$g" || continue
		echo "== $g: $gap/bfs -f ${gap_input[$g]} -s -n ${trials[$g]}" >&2
		"$gap/bfs" -f "${gap_input[$g]}" -s -n "${trials[$g]}" >"$out/$g-gap.log" 2>&1 || echo "GAP on $g failed" >&2
	done
fi

python3 - "$out" $graphs <<'PY'
import json, os, re, statistics, sys
out, graphs = sys.argv[1], sys.argv[2:]
print(f"{'graph':11s} {'run':17s} {'median ms':>10s} {'GTEPS':>8s}  strategy")
for g in graphs:
    for kind in ("gpu", "cpu"):
        try:
            lines = open(os.path.join(out, f"{g}-{kind}.json")).read().split("\n")
        except OSError:
            continue
        for line in filter(None, lines):
            r = json.loads(line)
            label = r["strategy"].split(" (")[0] if kind == "gpu" else "cpu"
            if kind == "gpu" and r.get("strategy_reason", "").startswith("auto"):
                label = "auto: " + label
            print(f"{g:11s} {label:17s} {r['median_s'] * 1e3:10.3f} {r.get('gteps', 0):8.2f}  {r['strategy']}")
    try:
        text = open(os.path.join(out, f"{g}-gap.log")).read()
    except OSError:
        continue
    times = [float(t) for t in re.findall(r"Trial Time:\s+([0-9.]+)", text)]
    if times:
        print(f"{g:11s} {'gap':17s} {statistics.median(times) * 1e3:10.3f} {'':8s}  GAP bfs, median of {len(times)} trials")
PY
