#!/usr/bin/env bash
# Issue 14's table: gpipe's CPU backend against the GAP Benchmark Suite on the
# same machine, side by side and interleaved, ROUNDS rounds (default 3), each
# case in GAP-then-gpipe order in odd rounds and gpipe-then-GAP in even ones.
# It builds nothing of GAP's: GAP_DIR holds GAP's binaries (bfs, cc, pr, sssp,
# converter) built with GAP's own Makefile. Usage, from the repository root:
#   scripts/bench-gap.sh GPIPE GAP_DIR OUTDIR
# GPIPE is the gpipe binary. Cases:
#   Kronecker 22 (bfs, cc, pagerank, sssp): GAP -g 22, gpipe --gen kronecker:22
#     --undirected (another random stream of the same generator and weights);
#   the 2048 x 2048 grid (bfs): one edge list that gpipe gen writes (each edge
#     once, "u v" lines), read by GAP with -s and by gpipe with --undirected;
#   Kronecker 20 files (pagerank, sssp): GAP's converter writes -g 20 as .el
#     and .wel (each edge both ways), read by both.
# pagerank runs to tolerance 1e-4, at most 20 iterations (GAP's defaults);
# sssp with GAP's Δ (1) and gpipe's default. TRIALS (default 16) trials per
# run. OUTDIR gets each run's log (GAP) or JSON (gpipe), machine.txt and
# table.txt; the table is printed last. About 4 minutes on 16 cores.
# KSCALE (22), FSCALE (20) and GRID (2048) change the graphs, for a quick
# check of the script itself on a small machine. ONLY, a regular expression
# (grep -E), keeps the cases (and PROFILE's operators) whose names match.
# PROFILE=1 adds, after the table (about 2 minutes more on 16 cores), what
# tells where gpipe stops scaling: sssp and pagerank on the Kronecker files
# at 1, 2, 4, 8 and all cores for both tools (GOMAXPROCS / OMP_NUM_THREADS,
# TRIALS trials each), printed as a second table (scaling.txt), and CPU
# profiles of gpipe on all cores (OUTDIR/profile-*.pprof, 64 trials each;
# read them where Go is, with the same GPIPE binary: go tool pprof -top GPIPE
# OUTDIR/profile-sssp.pprof).
set -uo pipefail
if [ $# -ne 3 ]; then
	echo "usage: $0 GPIPE GAP_DIR OUTDIR" >&2
	exit 2
fi
gpipe=$1 gap=$2 out=$3
rounds=${ROUNDS:-3} trials=${TRIALS:-16}
ks=${KSCALE:-22} fs=${FSCALE:-20} side=${GRID:-2048}
for b in bfs cc pr sssp converter; do
	[ -x "$gap/$b" ] || { echo "$gap/$b: not an executable (build GAP with its Makefile first)" >&2; exit 2; }
done
mkdir -p "$out"
work=${TMPDIR:-/tmp}/gpipe-bench-gap
mkdir -p "$work"
start=$(date +%s)
{ nproc; lscpu; cat /sys/kernel/mm/transparent_hugepage/enabled; } >"$out/machine.txt" 2>&1

wanted() { [ -z "${ONLY:-}" ] || grep -qE -- "$ONLY" <<<"$1"; }
# profiled NAME: PROFILE=1 runs NAME's scaling and profile.
profiled() { [ "${PROFILE:-0}" = 1 ] && wanted "$1"; }

# The graph files both tools read, made once, and only where a case kept
# by ONLY reads them.
grid=$work/grid$side.el kel=$work/k$fs.el kwel=$work/k$fs.wel
if wanted bfs-grid && [ ! -s "$grid" ]; then
	"$gpipe" gen grid --rows "$side" --cols "$side" --output "$grid" >&2
fi
if { wanted "pagerank-k${fs}file" || profiled pagerank; } && [ ! -s "$kel" ]; then
	"$gap/converter" -g "$fs" -e "$kel" >"$out/converter-el.log" 2>&1
fi
if { wanted "sssp-k${fs}file" || profiled sssp; } && [ ! -s "$kwel" ]; then
	"$gap/converter" -g "$fs" -w -e "$kwel" >"$out/converter-wel.log" 2>&1
fi

pr="--tolerance 1e-4 --max-iterations 20"
# case name | GAP command (after the binary's directory) | gpipe bench arguments
cases=(
	"bfs-k$ks|bfs -g $ks|--gen kronecker:$ks --undirected --op bfs"
	"cc-k$ks|cc -g $ks|--gen kronecker:$ks --undirected --op cc"
	"pagerank-k$ks|pr -g $ks -i 20 -t 1e-4|--gen kronecker:$ks --undirected --op pagerank $pr"
	"sssp-k$ks|sssp -g $ks|--gen kronecker:$ks --undirected --op sssp"
	"bfs-grid|bfs -f $grid -s|--input $grid --undirected --op bfs"
	"pagerank-k${fs}file|pr -f $kel -s -i 20 -t 1e-4|--input $kel --undirected --op pagerank $pr"
	"sssp-k${fs}file|sssp -f $kwel -s|--input $kwel --undirected --op sssp"
)

run_gap() { # log, command...
	local log=$1
	shift
	echo "== $gap/$*" >&2
	timeout 300 "$gap/"$* >"$log" 2>&1 || echo "GAP failed: $gap/$* (see $log)" >&2
}
run_gpipe() { # json, arguments...
	local json=$1
	shift
	echo "== gpipe bench $*" >&2
	# shellcheck disable=SC2086
	timeout 300 "$gpipe" bench --backend cpu --trials "$trials" --json $* >"$json" 2>"${json%.json}.err" ||
		echo "gpipe failed: bench $* (see ${json%.json}.err)" >&2
}

for r in $(seq "$rounds"); do
	for c in "${cases[@]}"; do
		IFS='|' read -r name gapcmd gpipeargs <<<"$c"
		wanted "$name" || continue
		if [ $((r % 2)) -eq 1 ]; then
			run_gap "$out/r$r-$name-gap.log" "$gapcmd -n $trials"
			run_gpipe "$out/r$r-$name-gpipe.json" "$gpipeargs"
		else
			run_gpipe "$out/r$r-$name-gpipe.json" "$gpipeargs"
			run_gap "$out/r$r-$name-gap.log" "$gapcmd -n $trials"
		fi
	done
done
# GAP's PageRank iterations (its timed runs do not print them): one logged
# trial on each graph.
wanted "pagerank-k$ks" && run_gap "$out/pagerank-k$ks-gap-iterations.log" "pr -g $ks -i 20 -t 1e-4 -n 1 -l"
wanted "pagerank-k${fs}file" && run_gap "$out/pagerank-k${fs}file-gap-iterations.log" "pr -f $kel -s -i 20 -t 1e-4 -n 1 -l"

if [ "${PROFILE:-0}" = 1 ]; then
	cores=$(nproc)
	for t in $(printf "%s\n" 1 2 4 8 "$cores" | sort -nu); do
		for c in "sssp|sssp -f $kwel -s|--input $kwel --undirected --op sssp" \
			"pagerank|pr -f $kel -s -i 20 -t 1e-4|--input $kel --undirected --op pagerank $pr"; do
			IFS='|' read -r name gapcmd gpipeargs <<<"$c"
			wanted "$name" || continue
			OMP_NUM_THREADS=$t run_gap "$out/scale-$name-$t-gap.log" "$gapcmd -n $trials"
			GOMAXPROCS=$t run_gpipe "$out/scale-$name-$t-gpipe.json" "$gpipeargs"
		done
	done
	echo "== profiles" >&2
	# shellcheck disable=SC2086
	wanted sssp && "$gpipe" bench --backend cpu --trials 64 --json --cpuprofile "$out/profile-sssp.pprof" --input "$kwel" --undirected --op sssp >"$out/profile-sssp.json" 2>&1
	# shellcheck disable=SC2086
	wanted pagerank && "$gpipe" bench --backend cpu --trials 64 --json --cpuprofile "$out/profile-pagerank.pprof" --input "$kel" --undirected --op pagerank $pr >"$out/profile-pagerank.json" 2>&1
fi
echo "took $(($(date +%s) - start)) s" >&2

python3 - "$out" "$rounds" "${cases[@]}" <<'PY' | tee "$out/table.txt"
import json, os, re, statistics, sys
out, rounds, cases = sys.argv[1], int(sys.argv[2]), [c.split("|")[0] for c in sys.argv[3:]]

def lower_median(xs):  # always one trial's time
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else None

def gap_ms(name, r):
    try:
        text = open(os.path.join(out, f"r{r}-{name}-gap.log")).read()
    except OSError:
        return None
    m = lower_median([float(t) for t in re.findall(r"Trial Time:\s+([0-9.]+)", text)])
    return m * 1e3 if m is not None else None

def gpipe_run(name, r):
    try:
        return json.loads(open(os.path.join(out, f"r{r}-{name}-gpipe.json")).read().split("\n")[0])
    except (OSError, ValueError):
        return None

def gap_iterations(name):
    try:
        text = open(os.path.join(out, f"{name}-gap-iterations.log")).read()
    except OSError:
        return None
    steps = re.findall(r"^\s+(\d+)\s+[0-9.e-]+\s*$", text, re.M)
    return len(steps) or None

fmt = lambda x: "-" if x is None else f"{x:.1f}"
rows = [("case", "GAP ms, per round", "gpipe ms, per round", "gpipe / GAP, per round", "median ratio", "best / best")]
notes = []
for name in cases:
    g = [gap_ms(name, r) for r in range(1, rounds + 1)]
    runs = [gpipe_run(name, r) for r in range(1, rounds + 1)]
    p = [x["median_s"] * 1e3 if x else None for x in runs]
    ratios = [b / a for a, b in zip(g, p) if a and b]
    best = min(x for x in p if x) / min(x for x in g if x) if ratios else None
    rows.append((name, " / ".join(map(fmt, g)), " / ".join(map(fmt, p)), " / ".join(f"{x:.2f}" for x in ratios) or "-",
                 f"{statistics.median(ratios):.2f}" if ratios else "-", f"{best:.2f}" if best else "-"))
    if name.startswith("pagerank"):
        it = [x.get("iterations") for x in runs if x]
        gi = gap_iterations(name)
        if it and gi:
            sp = [x["median_s"] * 1e3 / x["iterations"] for x in runs if x and x.get("iterations")]
            sg = [x / gi for x in g if x]
            notes.append(f"{name}: GAP {gi} iterations, gpipe {it[0]}; ms an iteration: GAP {' / '.join(map(fmt, sg))}, gpipe {' / '.join(map(fmt, sp))}")
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
print("medians of the trials (the lower middle, as gpipe bench's median_s)")
for r in rows:
    print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
for n in notes:
    print(n)
PY

if [ "${PROFILE:-0}" = 1 ]; then
	python3 - "$out" "$(nproc)" <<'PY' | tee "$out/scaling.txt"
import json, os, re, sys
out, cores = sys.argv[1], int(sys.argv[2])
def lower_median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else None
print("scaling on the Kronecker files, medians of the trials in ms (GOMAXPROCS / OMP_NUM_THREADS)")
print("op        threads      GAP    gpipe  gpipe/GAP  GAP speedup  gpipe speedup")
for name in ("sssp", "pagerank"):
    base = {}
    for t in sorted({1, 2, 4, 8, cores}):
        try:
            g = lower_median([float(x) for x in re.findall(r"Trial Time:\s+([0-9.]+)", open(os.path.join(out, f"scale-{name}-{t}-gap.log")).read())]) * 1e3
        except (OSError, TypeError):
            g = None
        try:
            p = json.loads(open(os.path.join(out, f"scale-{name}-{t}-gpipe.json")).read().split("\n")[0])["median_s"] * 1e3
        except (OSError, ValueError, KeyError):
            p = None
        if t == 1:
            base = {"g": g, "p": p}
        f = lambda x: "-" if x is None else f"{x:.1f}"
        r = lambda a, b: "-" if not (a and b) else f"{a / b:.2f}"
        print(f"{name:9} {t:7} {f(g):>8} {f(p):>8} {r(p, g):>10} {r(base.get('g'), g):>12} {r(base.get('p'), p):>14}")
PY
fi
