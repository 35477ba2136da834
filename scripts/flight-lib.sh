# Shell functions that scripts/bench-flight.sh and scripts/bench-flight-ab.sh
# source: the graph they upload and a server they start.

# flight_graph GPIPE OUTDIR sets graph to Graph 500 Kronecker 22's edge
# table (67 M rows, 1 GB), made once by GPIPE gen in TMPDIR (its log in
# OUTDIR/gen.log); it fails with gen's last line.
flight_graph() {
	graph=${TMPDIR:-/tmp}/gpipe-bench-flight-k22.arrow
	[ -f "$graph" ] || "$1" gen kronecker --scale 22 --edge-factor 16 --output "$graph" 2>"$2/gen.log" || {
		echo "gpipe gen failed: $(tail -1 "$2/gen.log")" >&2
		return 1
	}
}

# start_serve GPIPE LOG ARGS... starts GPIPE serve ARGS, its stderr in LOG,
# sets serve_pid and waits until it listens (at most 30 s); where it does
# not, it stops it and fails with the log's last line.
start_serve() {
	local gpipe=$1 log=$2
	shift 2
	"$gpipe" serve "$@" 2>"$log" &
	serve_pid=$!
	for _ in $(seq 300); do
		grep -q "serving Arrow Flight" "$log" && return 0
		kill -0 $serve_pid 2>/dev/null || break
		sleep 0.1
	done
	grep -q "serving Arrow Flight" "$log" && return 0
	echo "gpipe serve $* did not start: $(tail -1 "$log")" >&2
	kill $serve_pid 2>/dev/null
	wait $serve_pid 2>/dev/null
	return 1
}
