#!/usr/bin/env bash
# Two gpipe builds side by side on the GPU machine: `gpipe serve --backend
# gpu` of each on loopback at once, the same Kronecker 22 graph uploaded to
# both, then pyarrow's Flight client times them query by query in turns
# (scripts/bench-flight.py ab): a bfs DoGet's phases, a pagerank DoGet's
# host time, rounds of 16 clients against one, and each server's CPU time
# a query. For an A/B of a change whose gain is smaller than the spread
# between separate runs (a machine's loopback and its clients drift by
# 10-30% from run to run). Usage, from the repository root:
#   scripts/bench-flight-ab.sh OLD_GPIPE NEW_GPIPE OUTDIR
# About a minute; REPS (default 15) sets the rounds of single queries,
# CLIENT_ROUNDS (default 2) those of the clients, BACKEND (default gpu)
# the servers' backend. The last lines of OUTDIR/ab.log give each server's
# medians and the median of the rounds' differences (new - old).
set -uo pipefail
old=$1 new=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/flight-lib.sh"
mkdir -p "$out"
flight_graph "$new" "$out" || exit 1
pids=() locs=() port=18825
for label in old new; do
	bin=$old
	[ $label = new ] && bin=$new
	if ! start_serve "$bin" "$out/serve-$label.log" --addr 127.0.0.1:$port --backend "${BACKEND:-gpu}"; then
		[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
		exit 1
	fi
	pids+=($serve_pid)
	locs+=(--location "$label=grpc://127.0.0.1:$port" --pid "$label=$serve_pid")
	port=$((port + 1))
done
timeout 600 python3 "$here/bench-flight.py" ab "${locs[@]}" --input "$graph" --reps "${REPS:-15}" \
	--client-rounds "${CLIENT_ROUNDS:-2}" --json "$out/ab.json" 2>&1 | tee "$out/ab.log"
rc=${PIPESTATUS[0]}
kill -TERM "${pids[@]}"
wait "${pids[@]}"
exit $rc
