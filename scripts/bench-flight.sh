#!/usr/bin/env bash
# Issue 17's table in one run, on the GPU machine: `gpipe serve` on loopback
# with --backend gpu, then --backend cpu, each timed from pyarrow's Flight
# client (scripts/bench-flight.py): the DoPut of Graph 500 Kronecker 22
# (67 M rows, 1 GB, batches of 1 M rows), DoGet bfs, pagerank and cc (median
# of 5), 16 clients x 20 bfs queries at once against one client, and
# `gpipe bench` of the same operators on the same graph (the computation
# alone). The graph is uploaded undirected, as BENCHMARKS.md's gpipe bench
# runs take it. The target table is printed last. Usage, from the
# repository root:
#   scripts/bench-flight.sh GPIPE OUTDIR
# GPIPE is the gpipe binary (.gpu-bundle/gpipe). OUTDIR gets the servers'
# logs, each run's figures (flight-gpu.json, flight-cpu.json, bench-*.log)
# and CPU profiles of the servers during a DoPut and during bfs queries
# (profile-*.pb.gz: go tool pprof GPIPE FILE). About two minutes.
# BACKENDS (default "gpu cpu") picks the servers' backends; CLIENT_WINDOW
# (bytes, default 0: gRPC's own) fixes the clients' gRPC receive window.
set -uo pipefail
gpipe=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/flight-lib.sh"
mkdir -p "$out"
flight_graph "$gpipe" "$out" || exit 1

port=18815 debug=16060
for backend in ${BACKENDS:-gpu cpu}; do
	start_serve "$gpipe" "$out/serve-$backend.log" --addr 127.0.0.1:$port --backend $backend --debug-addr 127.0.0.1:$debug || continue
	pid=$serve_pid
	echo "== --backend $backend" >&2
	timeout 300 python3 "$here/bench-flight.py" run --location grpc://127.0.0.1:$port --input "$graph" \
		--label $backend --json "$out/flight-$backend.json" --client-window "${CLIENT_WINDOW:-0}" \
		--debug-url http://127.0.0.1:$debug/debug/pprof --profile-dir "$out" 2>&1 | tee "$out/bench-$backend.log" >&2
	# How much of the server's memory is in transparent huge pages (the
	# random reads of PageRank and of BFS's parents pay TLB misses without).
	{
		echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
		grep -E "^(Rss|AnonHugePages)" /proc/$pid/smaps_rollup 2>/dev/null
	} >"$out/memory-$backend.txt"
	kill -TERM $pid
	wait $pid
	port=$((port + 1)) debug=$((debug + 1))
done
# The computation alone, on the same graph (undirected, as uploaded).
for backend in ${BACKENDS:-gpu cpu}; do
	for op in bfs pagerank cc; do
		trials=5
		[ "$op/$backend" = pagerank/cpu ] && trials=2
		"$gpipe" bench --input "$graph" --undirected --op $op --backend $backend --trials $trials --json \
			>>"$out/gpipe-bench.json" 2>>"$out/gpipe-bench.err" || echo "gpipe bench $op $backend failed: $(tail -1 "$out/gpipe-bench.err")" >&2
	done
done
logs=()
for backend in ${BACKENDS:-gpu cpu}; do
	logs+=(--log "$backend=$out/serve-$backend.log")
done
python3 "$here/bench-flight.py" table "$out"/flight-*.json --bench "$out/gpipe-bench.json" "${logs[@]}" | tee "$out/table.md"
