#!/usr/bin/env bash
# The figures of the vertex-program engine in BENCHMARKS.md: every GPU
# strategy (warpseg and kites included) of sssp, sswp, cc and pagerank side by side on the same graph, the
# 16-core CPU backend, and PageRank through CuPy (cuSPARSE) in the same run.
# Runs on the GPU machine from the repository root (docs/gpu.md):
#   scripts/gpu-vp-bench.sh GPIPE OUTDIR [k22|k24|grid|real|cpu|all]...
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
	*) echo vwc,gshards,cw,kites,warpseg ;;
	esac
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
