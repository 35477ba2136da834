#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root: the GPU tests (which fail
# instead of skipping there, GPIPE_REQUIRE_GPU=1), then the GPU benchmarks.
# Logs go to OUTDIR (default: .gpu-bundle/logs). Usage:
#   .gpu-bundle/run.sh [OUTDIR] [tests|bench|all]
set -uo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
logs=${1:-$bundle/logs}
what=${2:-all}
mkdir -p "$logs"
export GPIPE_REQUIRE_GPU=1
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv | tee "$logs/nvidia-smi.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
	for pkg in gpu kernels operators; do
		# Tests read testdata relative to their package directory.
		( cd "$pkg" && "$bundle/$pkg.test" -test.v -test.count=1 -test.timeout 10m ) 2>&1 | tee "$logs/test-$pkg.log"
		rc=${PIPESTATUS[0]}
		echo "== $pkg tests: exit $rc" | tee -a "$logs/summary.txt"
		[ "$rc" -eq 0 ] || status=1
	done
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
	( cd gpu && "$bundle/gpu.test" -test.run XXX -test.bench 'H2D|D2H' -test.benchtime 5x ) 2>&1 | tee "$logs/bench-gpu.log"
	for op in bfs pagerank; do
		for backend in gpu cpu; do
			"$bundle/gpipe" bench --gen kronecker:22:16 --undirected --op "$op" --backend "$backend" \
				--trials "${GPIPE_BENCH_TRIALS:-64}" --json 2>&1 | tee "$logs/bench-$op-$backend.json"
		done
	done
fi
exit $status
