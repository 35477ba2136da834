#!/usr/bin/env bash
# The figures of the vertex-program engine in BENCHMARKS.md: every GPU
# strategy (warpseg and kites included) of sssp, sswp, cc and pagerank side by side on the same graph, the
# 16-core CPU backend, and PageRank through CuPy (cuSPARSE) in the same run.
# "roads" is sssp on graphs of high diameter: the 2048 x 2048 grid, a road of
# ROAD_VERTICES (default 16,777,216; gpipe gen road) and luxembourg_osm, each
# one .wel file that the GPU (persist, vwc, kites), the CPU backend and,
# where GAP_DIR holds GAP's built sssp, GAP (-d Δ near gpipe's) all read; it
# prints a table at the end. ROAD_GRAPHS (a list of grid road luxembourg)
# keeps some of the three.
# Runs on the GPU machine from the repository root (docs/gpu.md):
#   scripts/gpu-vp-bench.sh GPIPE OUTDIR [k22|k24|grid|real|roads|cpu|all]...
# GPIPE is the gpipe binary; graphs are generated once into $TMPDIR; each
# figure is OUTDIR/NAME.json (gpipe bench --json: one object per strategy).
set -uo pipefail
gpipe=$1
out=$2
shift 2
[ $# -gt 0 ] || set -- all
tmp=${TMPDIR:-/tmp}
real=${GPIPE_REAL_GRAPHS:-../shared/data/real}
mkdir -p "$out"
status=0

bench() { # name, gpipe bench arguments...
	local name=$1
	shift
	echo "== $name: gpipe bench $*" >&2
	"$gpipe" bench --json "$@" >"$out/$name.json" 2>"$out/$name.err" || { status=1; cat "$out/$name.err" >&2; }
}

kronecker() { # scale, file, [--weighted]
	[ -f "$2" ] || "$gpipe" gen kronecker --scale "$1" --edge-factor 16 ${3:-} --output "$2"
}

# The rows x cols 4-neighbour grid with weights uniform in 1..255, as an
# Arrow file (src, dst, weight).
grid() { # rows, cols, file
	[ -f "$3" ] || python3 - "$1" "$2" "$3" <<'EOF'
import sys
import numpy as np
import pyarrow as pa
rows, cols, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
v = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
src = np.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
dst = np.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
w = np.random.default_rng(1).integers(1, 256, src.size).astype(np.float64)
t = pa.table({"src": src, "dst": dst, "weight": w})
with pa.ipc.new_file(path, t.schema) as f:
    f.write_table(t)
EOF
}

gpu_strategies() { # operator
	case $1 in
	cc) echo afforest,vwc,gshards,cw,kites,warpseg ;;
	pagerank) echo vwc,gshards,cw,warpseg ;;
	sssp) echo vwc,gshards,cw,kites,warpseg,persist ;;
	*) echo vwc,gshards,cw,kites,warpseg ;;
	esac
}

# roads: sssp on the grid, a road and luxembourg_osm, one .wel file each
# for gpipe's GPU and CPU and GAP, and a table of the medians.
roads() {
	local n=${ROAD_VERTICES:-16777216} keep=" ${ROAD_GRAPHS:-grid road luxembourg} "
	[[ $keep != *" grid "* ]] || [ -f "$tmp/grid-2048.wel" ] || "$gpipe" gen grid --rows 2048 --cols 2048 --weighted --output "$tmp/grid-2048.wel"
	[[ $keep != *" road "* ]] || [ -f "$tmp/road-$n.wel" ] || "$gpipe" gen road --vertices "$n" --weighted --output "$tmp/road-$n.wel"
	# The real graph's file must be there: an empty .wel would give no
	# source to gpipe and leave GAP searching forever.
	if [[ $keep == *" luxembourg "* ]] && [ ! -s "$tmp/luxembourg.wel" ]; then
		[ -f "$real/luxembourg_osm.mtx" ] || { echo "roads: no $real/luxembourg_osm.mtx (set GPIPE_REAL_GRAPHS)" >&2; status=1; }
		awk '!/^%/ && ++seen > 1 { print $1 - 1, $2 - 1, 1 }' "$real/luxembourg_osm.mtx" >"$tmp/luxembourg.wel" 2>/dev/null
	fi
	# GAP's Δ: gpipe's rule (32 x mean weight / average degree), rounded.
	for g in grid-2048:1024 "road-$n:1024" luxembourg:16; do
		local name=${g%:*} delta=${g#*:}
		[[ $keep == *" ${name%%-*} "* ]] && [ -s "$tmp/$name.wel" ] || continue
		bench "sssp-$name-gpu" --input "$tmp/$name.wel" --undirected --op sssp --backend gpu --strategy "${ROAD_STRATEGIES:-persist,vwc,kites}" --trials 8
		bench "sssp-$name-cpu" --input "$tmp/$name.wel" --undirected --op sssp --backend cpu --trials 4
		if [ -n "${GAP_DIR:-}" ]; then
			echo "== sssp-$name-gap: $GAP_DIR/sssp -f $tmp/$name.wel -s -d $delta -n 8" >&2
			timeout 300 "$GAP_DIR/sssp" -f "$tmp/$name.wel" -s -d "$delta" -n 8 >"$out/sssp-$name-gap.log" 2>&1 || status=1
		fi
	done
	python3 - "$out" grid-2048 "road-$n" luxembourg <<'PY'
import json, os, re, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
print(f"{'graph':20s} {'run':10s} {'median ms':>10s}  strategy")
for g in names:
    for kind in ("gpu", "cpu"):
        try:
            lines = open(os.path.join(out, f"sssp-{g}-{kind}.json")).read().split("\n")
        except OSError:
            continue
        for line in filter(None, lines):
            r = json.loads(line)
            label = r["strategy"].split(" (")[0] if kind == "gpu" else "cpu"
            print(f"{g:20s} {label:10s} {r['median_s'] * 1e3:10.3f}  {r['strategy']}")
    try:
        times = [float(t) for t in re.findall(r"Trial Time:\s+([0-9.]+)", open(os.path.join(out, f"sssp-{g}-gap.log")).read())]
    except OSError:
        times = []
    if times:
        print(f"{g:20s} {'gap':10s} {statistics.median(times) * 1e3:10.3f}  GAP sssp, median of {len(times)} trials")
PY
}

for what in "$@"; do
	case $what in
	k22 | all)
		kronecker 22 "$tmp/k22.arrow"
		kronecker 22 "$tmp/k22w.arrow" --weighted
		bench pagerank-k22-gpu --input "$tmp/k22.arrow" --undirected --op pagerank --backend gpu --strategy "$(gpu_strategies pagerank)" --trials 5
		bench cc-k22-gpu --input "$tmp/k22.arrow" --undirected --op cc --backend gpu --strategy "$(gpu_strategies cc)" --trials 8
		for op in sssp sswp; do
			bench "$op-k22-gpu" --input "$tmp/k22w.arrow" --undirected --op $op --backend gpu --strategy "$(gpu_strategies $op)" --trials 8
		done
		python3 scripts/pagerank-cupy.py "$tmp/k22.arrow" --undirected >"$out/pagerank-k22-cupy.json" || status=1
		;;
	esac
	case $what in
	k24 | all)
		kronecker 24 "$tmp/k24.arrow"
		kronecker 24 "$tmp/k24w.arrow" --weighted
		bench pagerank-k24-gpu --input "$tmp/k24.arrow" --undirected --op pagerank --backend gpu --strategy "$(gpu_strategies pagerank)" --trials 3
		bench cc-k24-gpu --input "$tmp/k24.arrow" --undirected --op cc --backend gpu --strategy "$(gpu_strategies cc)" --trials 3
		for op in sssp sswp; do
			bench "$op-k24-gpu" --input "$tmp/k24w.arrow" --undirected --op $op --backend gpu --strategy "$(gpu_strategies $op)" --trials 3
		done
		python3 scripts/pagerank-cupy.py "$tmp/k24.arrow" --undirected >"$out/pagerank-k24-cupy.json" || status=1
		;;
	esac
	case $what in
	grid | all)
		grid 2048 2048 "$tmp/grid-2048.arrow"
		for op in sssp cc sswp; do
			bench "$op-grid-gpu" --input "$tmp/grid-2048.arrow" --undirected --op $op --backend gpu --strategy "$(gpu_strategies $op)" --trials 3
		done
		bench pagerank-grid-gpu --input "$tmp/grid-2048.arrow" --undirected --op pagerank --backend gpu --strategy "$(gpu_strategies pagerank)" --trials 3
		;;
	esac
	case $what in
	real | all)
		for f in luxembourg_osm.mtx:u rome99.txt:d ego-Twitter-undirected.txt:u soc-Slashdot0902.txt:d cit-HepPh.txt:d \
			email-Enron.txt:d wiki-Vote.txt:d facebook_combined.txt:u; do
			file=${f%:*}
			flag=
			[ "${f#*:}" = u ] && flag=--undirected
			for op in sssp cc; do
				bench "$op-${file%.*}-gpu" --input "$real/$file" $flag --op $op --backend gpu --strategy "$(gpu_strategies $op)" --trials 8
				bench "$op-${file%.*}-cpu" --input "$real/$file" $flag --op $op --backend cpu --trials 8
			done
			for op in sswp pagerank; do
				bench "$op-${file%.*}-gpu" --input "$real/$file" $flag --op $op --backend gpu --strategy "$(gpu_strategies $op)" --trials 4
			done
		done
		;;
	esac
	case $what in
	roads | all) roads ;;
	esac
	case $what in
	cpu | all)
		bench pagerank-k22-cpu --input "$tmp/k22.arrow" --undirected --op pagerank --backend cpu --trials 3
		bench cc-k22-cpu --input "$tmp/k22.arrow" --undirected --op cc --backend cpu --trials 8
		for op in sssp sswp; do
			bench "$op-k22-cpu" --input "$tmp/k22w.arrow" --undirected --op $op --backend cpu --trials 4
		done
		for op in sssp cc; do
			bench "$op-grid-cpu" --input "$tmp/grid-2048.arrow" --undirected --op $op --backend cpu --trials 3
		done
		;;
	esac
done
exit $status
