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
mkdir -p "$out"
graph=${TMPDIR:-/tmp}/gpipe-bench-flight-k22.arrow
[ -f "$graph" ] || "$new" gen kronecker --scale 22 --edge-factor 16 --output "$graph" 2>"$out/gen.log" || {
	echo "gpipe gen failed: $(tail -1 "$out/gen.log")" >&2
	exit 1
}
pids=() locs=() port=18825
for label in old new; do
	bin=$old
	[ $label = new ] && bin=$new
	log=$out/serve-$label.log
	"$bin" serve --addr 127.0.0.1:$port --backend "${BACKEND:-gpu}" 2>"$log" &
	pids+=($!)
	for _ in $(seq 300); do
		grep -q "serving Arrow Flight" "$log" && break
		sleep 0.1
	done
	if ! grep -q "serving Arrow Flight" "$log"; then
		echo "gpipe serve ($label) did not start: $(tail -1 "$log")" >&2
		kill "${pids[@]}" 2>/dev/null
		exit 1
	fi
	locs+=(--location "$label=grpc://127.0.0.1:$port" --pid "$label=${pids[-1]}")
	port=$((port + 1))
done
timeout 600 python3 "$here/bench-flight.py" ab "${locs[@]}" --input "$graph" --reps "${REPS:-15}" \
	--client-rounds "${CLIENT_ROUNDS:-2}" --json "$out/ab.json" 2>&1 | tee "$out/ab.log"
rc=${PIPESTATUS[0]}
kill -TERM "${pids[@]}"
wait "${pids[@]}"
exit $rc
