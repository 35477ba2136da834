#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root: the GPU tests (which fail
# instead of skipping there, GPIPE_REQUIRE_GPU=1), then the GPU benchmarks.
# Logs go to OUTDIR (default: .gpu-bundle/logs). Usage:
#   .gpu-bundle/run.sh [OUTDIR] [tests|bench|sweep|all]
set -uo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
logs=${1:-$bundle/logs}
what=${2:-all}
mkdir -p "$logs"
export GPIPE_REQUIRE_GPU=1
# The test binaries embed no kernels (gpu-bundle.sh): they load the
# checkout's, from the repository root this runs in.
export GPIPE_KERNELS_DIR=${GPIPE_KERNELS_DIR:-$PWD/kernels}
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv | tee "$logs/nvidia-smi.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
	for pkg in gpu kernels operators operators/gpuop operators/multigpu operators/vprog/vpgpu serve internal/pipeline; do
		# Tests read testdata relative to their package directory.
		name=$(basename "$pkg")
		[ -x "$bundle/$name.test" ] || continue # not in this bundle (TESTS)
		( cd "$pkg" && "$bundle/$name.test" -test.v -test.count=1 -test.timeout 10m ) 2>&1 | tee "$logs/test-$name.log"
		rc=${PIPESTATUS[0]}
		echo "== $pkg tests: exit $rc" | tee -a "$logs/summary.txt"
		[ "$rc" -eq 0 ] || status=1
	done
	# The root package's tests (the library's face).
	if [ -x "$bundle/gpipe.test" ]; then
		"$bundle/gpipe.test" -test.v -test.count=1 -test.timeout 10m 2>&1 | tee "$logs/test-gpipe.log"
		rc=${PIPESTATUS[0]}
		echo "== gpipe (root) tests: exit $rc" | tee -a "$logs/summary.txt"
		[ "$rc" -eq 0 ] || status=1
	fi
fi
# The benchmark graph: Graph 500 Kronecker, scale 22, edge factor 16, written
# once as an Arrow IPC file (read memory-mapped) so every run reads the same.
graph=${GPIPE_BENCH_GRAPH:-${TMPDIR:-/tmp}/kronecker-22-16.arrow}
bench() { # name, gpipe bench arguments...
	local name=$1
	shift
	"$bundle/gpipe" bench --input "$graph" --undirected --json "$@" 2>"$logs/$name.err" | tee "$logs/$name.json"
	[ "${PIPESTATUS[0]}" -eq 0 ] || { status=1; cat "$logs/$name.err"; }
}
if [ "$what" = bench ] || [ "$what" = sweep ] || [ "$what" = all ]; then
	[ -f "$graph" ] || "$bundle/gpipe" gen kronecker --scale 22 --edge-factor 16 --output "$graph"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
	( cd gpu && "$bundle/gpu.test" -test.run XXX -test.bench 'H2D|D2H' -test.benchtime 5x ) 2>&1 | tee "$logs/bench-h2d.log"
	bench bfs-gpu --op bfs --backend gpu --strategy enterprise,bfs4k,vwc --trials 64
	bench bfs-cpu --op bfs --backend cpu --trials 64
	bench pagerank-gpu --op pagerank --backend gpu --trials 9
	bench pagerank-cpu --op pagerank --backend cpu --trials 3
fi
# The virtual warp size and the options of PPoPP'11 §3.2, one at a time.
if [ "$what" = sweep ]; then
	for k in 1 2 4 8 16 32; do
		bench "bfs-gpu-k$k" --op bfs --backend gpu --trials 16 --vwarp $k
		bench "pagerank-gpu-k$k" --op pagerank --backend gpu --trials 3 --max-iterations 20 --tolerance 1e-12 --vwarp $k
	done
	for opt in "--dynamic" "--defer-outliers 1024" "--dynamic --defer-outliers 1024"; do
		tag=$(echo "$opt" | tr -d ' -')
		bench "bfs-gpu-$tag" --op bfs --backend gpu --trials 16 $opt
		bench "pagerank-gpu-$tag" --op pagerank --backend gpu --trials 3 --max-iterations 20 --tolerance 1e-12 $opt
	done
fi
exit $status
