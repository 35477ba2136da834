#!/usr/bin/env bash
# One-shot runs, as a CLI pipeline or a batch job in a fresh container runs
# gpipe: the wall time of one whole `gpipe run` (process start to exit; no
# --output, so the write stage is left out) with default flags, with
# --backend cpu, and with --backend gpu --strategy S for every strategy of
# the operator; warm (the median of RUNS runs after one more) and cold (the
# first run with an empty CUDA JIT cache: a fresh CUDA_CACHE_PATH). Issue
# 36's table: each case's default against the best row and against cpu.
#
# Usage, from the repository root on the GPU machine:
#   scripts/bench-oneshot.sh GPIPE OUTDIR REAL_GRAPHS_DIR
# GPIPE is the gpipe binary; REAL_GRAPHS_DIR holds shared/data/real's files.
# Environment:
#   RUNS=3            warm runs a case (median), after one run a graph that
#                     is discarded (the file into the page cache)
#   GRAPHS="..."      the graphs, of: rome99 luxembourg facebook wikivote
#                     enron hepph slashdot twitter grid2048 k22 k24
#   OPS="bfs sssp sswp pagerank cc"
#   ALL_STRATEGIES="" the graphs that run every strategy (default: all of
#                     GRAPHS); the others run default, cpu and --backend gpu
#                     with the GPU's own auto strategy
#   COLD="wikivote"   the graphs whose every row also runs cold (the JIT
#                     cache is the machine's, not a graph's: one graph shows it)
#   ROWS=all          or "default cpu": only those two rows (a check of
#                     auto's choices against a table measured before)
# OUTDIR gets runs.jsonl (a line a run: the case, the wall time and
# gpipe's --json report) and table.md, which is printed last. The
# generated graphs (Parquet, zstd, as gpipe gen writes them) are made once
# into $TMPDIR/gpipe-oneshot.
set -uo pipefail
gpipe=$(realpath "$1") out=$2 real=$3
mkdir -p "$out"
work=${TMPDIR:-/tmp}/gpipe-oneshot
mkdir -p "$work"
RUNS=${RUNS:-3}
GRAPHS=${GRAPHS:-"rome99 luxembourg facebook wikivote enron hepph slashdot twitter grid2048 k22 k24"}
OPS=${OPS:-"bfs sssp sswp pagerank cc"}
ALL_STRATEGIES=${ALL_STRATEGIES-$GRAPHS}
COLD=${COLD-wikivote}
ROWS=${ROWS:-all}

# graph: file, flags (the data's own: undirected where the file lists each
# edge once for both directions).
declare -A file=(
	[rome99]=$real/rome99.txt [luxembourg]=$real/luxembourg_osm.mtx [facebook]=$real/facebook_combined.txt
	[wikivote]=$real/wiki-Vote.txt [enron]=$real/email-Enron.txt [hepph]=$real/cit-HepPh.txt
	[slashdot]=$real/soc-Slashdot0902.txt [twitter]=$real/ego-Twitter-undirected.txt
	[grid2048]=$work/grid2048.parquet [k22]=$work/k22.parquet [k24]=$work/k24.parquet
)
declare -A flags=(
	[luxembourg]=--undirected [facebook]=--undirected [twitter]=--undirected
	[grid2048]=--undirected [k22]=--undirected [k24]=--undirected
)
declare -A strategies=(
	[bfs]="enterprise bfs4k vwc persist" [sssp]="vwc gshards cw kites warpseg persist" [sswp]="vwc gshards cw kites warpseg"
	[pagerank]="warpseg vwc gshards cw" [cc]="afforest vwc gshards cw kites warpseg"
)

gen() { # graph, gpipe gen arguments...
	local g=$1
	shift
	if [[ " $GRAPHS " == *" $g "* && ! -f ${file[$g]} ]]; then
		echo "== gen $g: $*" >&2
		"$gpipe" gen "$@" --output "${file[$g]}" --quiet || echo "gen $g failed" >&2
	fi
}
gen grid2048 grid --rows 2048 --cols 2048 --weighted
gen k22 kronecker --scale 22 --edge-factor 16 --weighted
gen k24 kronecker --scale 24 --edge-factor 16 --weighted

# source: a key of the graph's first edge (a generated graph's first row;
# a text file's first line that is no comment, after a Matrix Market's
# size line).
source_of() {
	local f=$1
	case $f in
	*.parquet) python3 -c "import pyarrow.parquet as pq, sys; print(pq.ParquetFile(sys.argv[1]).read_row_group(0, columns=['src']).column(0)[0])" "$f" ;;
	*.mtx) awk '!/^%/ { if (++n == 2) { print $1; exit } }' "$f" ;;
	*) awk '!/^[#%]/ { print $1; exit }' "$f" ;;
	esac
}

# one: a run of gpipe, one JSON line to runs.jsonl. Arguments: graph, op,
# row (default, cpu or a strategy), mode (warm or cold), gpipe flags...
one() {
	local g=$1 op=$2 row=$3 mode=$4
	shift 4
	local env=() cache=""
	if [ "$mode" = cold ]; then
		cache=$(mktemp -d)
		env=(CUDA_CACHE_PATH="$cache")
	fi
	local t0 t1 rc
	t0=$(date +%s%N)
	env "${env[@]}" "$gpipe" run --json --quiet "$@" >/dev/null 2>"$work/err"
	rc=$?
	t1=$(date +%s%N)
	[ -n "$cache" ] && rm -rf "$cache"
	local rep
	rep=$(grep '^{' "$work/err" | tail -1)
	[ $rc -eq 0 ] || { echo "   $g $op $row $mode failed (exit $rc): $(tail -1 "$work/err")" >&2; rep=''; }
	[ -n "$rep" ] || rep='{}'
	printf '{"graph":"%s","op":"%s","row":"%s","mode":"%s","wall_s":%s,"rc":%d,"report":%s}\n' \
		"$g" "$op" "$row" "$mode" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", (b-a)/1e9}')" "$rc" "$rep" >>"$out/runs.jsonl"
}

# case: a cold run where the graph is in COLD, then RUNS warm runs.
case_() {
	local g=$1 op=$2 row=$3
	shift 3
	[[ " $COLD " == *" $g "* ]] && one "$g" "$op" "$row" cold "$@"
	for ((i = 0; i < RUNS; i++)); do
		one "$g" "$op" "$row" warm "$@"
	done
}

start=$(date +%s)
for g in $GRAPHS; do
	f=${file[$g]}
	[ -f "$f" ] || { echo "== $g: no $f" >&2; continue; }
	src=$(source_of "$f")
	echo "== $g ($f, source $src)" >&2
	# A run discarded: the file into the page cache, the driver's state
	# (the JIT cache of a cold case is its own).
	one "$g" cc warmup discard --input "$f" --op cc ${flags[$g]:-}
	for op in $OPS; do
		args=(--input "$f" --op "$op" ${flags[$g]:-})
		[[ $op == bfs || $op == sssp || $op == sswp ]] && args+=(--source "$src")
		case_ "$g" "$op" default "${args[@]}"
		case_ "$g" "$op" cpu "${args[@]}" --backend cpu
		if [ "$ROWS" != all ]; then
			continue
		elif [[ " $ALL_STRATEGIES " == *" $g "* ]]; then
			for s in ${strategies[$op]}; do
				case_ "$g" "$op" "$s" "${args[@]}" --backend gpu --strategy "$s"
			done
		else
			case_ "$g" "$op" gpu "${args[@]}" --backend gpu
		fi
	done
done
echo "== $(($(date +%s) - start)) s of runs" >&2

python3 - "$out" <<'PY' | tee "$out/table.md"
import json, statistics, sys
out = sys.argv[1]
runs = [json.loads(l) for l in open(out + "/runs.jsonl")]
cases = {}
for r in runs:
    if r["rc"] == 0 and r["mode"] != "discard":
        cases.setdefault((r["graph"], r["op"]), {}).setdefault(r["row"], {}).setdefault(r["mode"], []).append(r)
med = lambda rs: statistics.median(r["wall_s"] for r in rs)
print("| graph | op | default | ran as | cpu | best row | best | default/best | default/cpu | warm target |")
print("|---|---|---|---|---|---|---|---|---|---|")
misses = 0
for (g, op), rows in cases.items():
    warm = {row: med(m["warm"]) for row, m in rows.items() if "warm" in m}
    if "default" not in warm:
        continue
    d = warm["default"]
    best_row = min(warm, key=warm.get)
    best = warm[best_row]
    rep = rows["default"]["warm"][0]["report"]
    ran = rep.get("backend", "?") + ("/" + rep["strategy"] if rep.get("strategy") else "")
    cpu = warm.get("cpu", float("nan"))
    ok = d <= 1.1 * best + 0.030 and d <= 1.1 * cpu
    misses += not ok
    print(f"| {g} | {op} | {d*1e3:.0f} ms | {ran} | {cpu*1e3:.0f} ms | {best_row} | {best*1e3:.0f} ms | {d/best:.2f} | {d/cpu:.2f} | {'met' if ok else 'MISSED'} |")
print(f"\nwarm target (default <= 1.1 x best + 30 ms and <= 1.1 x cpu) missed in {misses} of {len(cases)} cases\n")
print("| graph | op | row | cold | warm | cold/warm | cold target |")
print("|---|---|---|---|---|---|---|")
for (g, op), rows in cases.items():
    for row, m in rows.items():
        if "cold" in m and "warm" in m:
            c, w = med(m["cold"]), med(m["warm"])
            ok = c <= 1.2 * w + 0.050
            print(f"| {g} | {op} | {row} | {c*1e3:.0f} ms | {w*1e3:.0f} ms | {c/w:.2f} | {'met' if ok else 'MISSED'} |")
PY
