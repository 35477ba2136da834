#!/usr/bin/env bash
# The BFS table of BENCHMARKS.md in one run: every GPU strategy (enterprise,
# bfs4k, vwc, auto) and the CPU backend of gpipe, and GAP's bfs where a built
# GAP directory is given, side by side on the same graph files:
# Graph 500 Kronecker 22 and 24 (edge factor 16), the 2048 x 2048 grid, and
# the real graphs luxembourg_osm, ego-Twitter-undirected and soc-Slashdot0902.
# All undirected. Builds nothing of GAP's. Usage, from the repository root on
# the GPU machine:
#   scripts/bench-bfs.sh GPIPE OUTDIR REAL_GRAPHS_DIR [GAP_DIR]
# GPIPE is the gpipe binary; OUTDIR gets one JSON report per run (gpipe bench
# --json) and one log per GAP run; a summary table is printed at the end.
set -uo pipefail
gpipe=$1 out=$2 real=$3 gap=${4:-}
mkdir -p "$out"
work=${TMPDIR:-/tmp}/gpipe-bench-bfs
mkdir -p "$work"

# The graphs: gpipe reads Arrow files (memory-mapped) and the real files as
# they are; GAP reads edge lists (.el) and Matrix Market.
[ -f "$work/k22.arrow" ] || "$gpipe" gen kronecker --scale 22 --edge-factor 16 --output "$work/k22.arrow"
[ -f "$work/k24.arrow" ] || "$gpipe" gen kronecker --scale 24 --edge-factor 16 --output "$work/k24.arrow"
[ -f "$work/grid.el" ] || "$gpipe" gen grid --rows 2048 --cols 2048 --output "$work/grid.el"
declare -A gpipe_input=(
	[k22]=$work/k22.arrow [k24]=$work/k24.arrow [grid]=$work/grid.el
	[luxembourg]=$real/luxembourg_osm.mtx [twitter]=$real/ego-Twitter-undirected.txt [slashdot]=$real/soc-Slashdot0902.txt
)
declare -A trials=([k22]=64 [k24]=64 [grid]=16 [luxembourg]=64 [twitter]=64 [slashdot]=64)
graphs="k22 k24 grid luxembourg twitter slashdot"

run() { # name, gpipe bench arguments...
	local name=$1
	shift
	timeout 600 "$gpipe" bench --json "$@" >"$out/$name.json" 2>"$out/$name.err" || echo "$name failed: $(tail -1 "$out/$name.err")"
}
for g in $graphs; do
	for s in enterprise bfs4k vwc auto; do
		run "$g-gpu-$s" --input "${gpipe_input[$g]}" --undirected --op bfs --backend gpu --strategy "$s" --trials "${trials[$g]}"
	done
	run "$g-cpu" --input "${gpipe_input[$g]}" --undirected --op bfs --backend cpu --trials "${trials[$g]}"
done

if [ -n "$gap" ]; then
	[ -f "$work/k22.el" ] || "$gpipe" gen kronecker --scale 22 --edge-factor 16 --output "$work/k22.el"
	declare -A gap_input=(
		[k22]=$work/k22.el [grid]=$work/grid.el [luxembourg]=$real/luxembourg_osm.mtx
		[twitter]=$work/twitter.el [slashdot]=$work/slashdot.el
	)
	grep -v '^#' "$real/ego-Twitter-undirected.txt" >"$work/twitter.el"
	grep -v '^#' "$real/soc-Slashdot0902.txt" >"$work/slashdot.el"
	for g in k22 grid luxembourg twitter slashdot; do
		"$gap/bfs" -f "${gap_input[$g]}" -s -n "${trials[$g]}" >"$out/$g-gap.log" 2>&1 || echo "GAP on $g failed"
	done
fi

python3 - "$out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
print(f"{'run':28s} {'median ms':>10s} {'GTEPS':>8s}  strategy")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        r = json.load(open(path))
    except ValueError:
        continue
    print(f"{os.path.basename(path)[:-5]:28s} {r['median_s'] * 1e3:10.3f} {r.get('gteps', 0):8.2f}  {r['strategy']}")
for path in sorted(glob.glob(os.path.join(out, "*-gap.log"))):
    m = re.search(r"Average Time:\s+([0-9.]+)", open(path).read())
    if m:
        print(f"{os.path.basename(path)[:-4]:28s} {float(m.group(1)) * 1e3:10.3f} {'':8s}  GAP bfs (average)")
PY
