#!/usr/bin/env bash
# End to end at the speed of the file (issue 13), on the GPU machine: a
# Graph 500 Kronecker graph (scale 24, edge factor 16: 268 M rows) as a
# Parquet file written by pyarrow (zstd, row groups of 1 M rows), read by
# pyarrow's pq.read_table (median of 3) and by
#   gpipe run --input k24.parquet --op bfs --source KEY --undirected --output out.parquet --json
# with --backend gpu and --backend cpu (each twice; the second run is
# reported), and the stage table printed last, against pyarrow's read.
# The BFS depths of the two backends are compared. Where the test binaries
# of `make gpu-bundle` lie beside GPIPE, their benchmarks of the pieces run
# too (the GPU build against the host's, the staged upload, pinned columns
# against Go ones); GPIPE_E2E_BENCH=0 skips them. Usage, from the
# repository root:
#   scripts/bench-e2e.sh GPIPE OUTDIR
# GPIPE is the gpipe binary (built here with CGO_ENABLED=0). OUTDIR gets
# the runs' JSON reports and logs. The input is made once into
# $TMPDIR/gpipe-bench-e2e (GPIPE_E2E_SCALE picks another scale). Every
# reader reads the file from the page cache (each has read it before).
set -uo pipefail
gpipe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
scale=${GPIPE_E2E_SCALE:-24}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${TMPDIR:-/tmp}/gpipe-bench-e2e
mkdir -p "$work"
pq=$work/k$scale.parquet
status=0

if [ ! -f "$pq" ]; then
	arrow=$work/k$scale.arrow
	echo "== gpipe gen kronecker --scale $scale, then pyarrow to Parquet" >&2
	"$gpipe" gen kronecker --scale "$scale" --edge-factor 16 --output "$arrow" || exit 1
	python3 - "$arrow" "$pq.tmp" <<'PY' || exit 1
import sys, pyarrow as pa, pyarrow.parquet as pq
t = pa.ipc.open_file(pa.memory_map(sys.argv[1])).read_all()
pq.write_table(t, sys.argv[2], compression="zstd", row_group_size=1 << 20)
PY
	mv "$pq.tmp" "$pq"
	rm -f "$arrow"
fi
ls -l "$pq" >&2

# The source: the most frequent key among the first row group's sources.
src=$(python3 - "$pq" <<'PY'
import sys, pyarrow.compute as pc, pyarrow.parquet as pq
col = pq.ParquetFile(sys.argv[1]).read_row_group(0, columns=["src"])["src"]
print(pc.mode(col)[0]["mode"].as_py())
PY
) || exit 1
echo "== source $src" >&2

echo "== pyarrow read_table, 3 times" >&2
python3 - "$pq" >"$out/pyarrow.json" <<'PY' || status=1
import json, resource, statistics, sys, time
import pyarrow.parquet as pq
times = []
for _ in range(3):
    start = time.perf_counter()
    t = pq.read_table(sys.argv[1])
    times.append(time.perf_counter() - start)
    rows = t.num_rows
    del t
print(json.dumps({"read_table_s": statistics.median(times), "trials_s": times, "rows": rows,
                  "peak_host_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
PY

for backend in gpu cpu; do
	for i in 1 2; do
		echo "== gpipe run --backend $backend ($i of 2)" >&2
		if ! "$gpipe" run --input "$pq" --op bfs --source "$src" --undirected --backend "$backend" \
			--output "$work/out-$backend.parquet" --json 2>"$out/run-$backend-$i.err"; then
			status=1
			tail -3 "$out/run-$backend-$i.err" >&2
		fi
		grep '^{' "$out/run-$backend-$i.err" | tail -1 >"$out/run-$backend-$i.json"
	done
done

bundle=$(dirname "$gpipe")
if [ "${GPIPE_E2E_BENCH:-1}" != 0 ] && [ -x "$bundle/gpu.test" ] && [ -x "$bundle/gpuop.test" ]; then
	echo "== benchmarks of the pieces" >&2
	(cd gpu && "$bundle/gpu.test" -test.run XXX -test.bench 'H2DPinned|H2DPageable|Column1GiB|PinnedAllocColumn|HostAlloc' \
		-test.benchtime 3x) >"$out/bench-gpu.log" 2>&1 || status=1
	(cd operators/gpuop && GPIPE_BENCH_SCALE=$scale "$bundle/gpuop.test" -test.run XXX \
		-test.bench 'GPUBuild|HostBuild|GPUStagedUpload' -test.benchtime 3x) >"$out/bench-operators.log" 2>&1 || status=1
	grep -h '^Benchmark' "$out/bench-gpu.log" "$out/bench-operators.log"
fi

python3 - "$out" "$work" <<'PY' || status=1
import json, os, sys
out, work = sys.argv[1], sys.argv[2]

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.loads(f.read() or "null")
    except (OSError, ValueError):
        return None

py = load("pyarrow.json") or {}
runs = {b: load(f"run-{b}-2.json") for b in ("gpu", "cpu")}
base = py.get("read_table_s")

def t(r, k):
    return r["timings"].get(k, 0.0) if r else None

def fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"

rows = [
    ("read_s", lambda r: t(r, "read_s"), base),
    ("build_s", lambda r: t(r, "build_s"), None),
    ("  of which upload_s (columns to the GPU)", lambda r: t(r, "upload_s"), None),
    ("compute_s", lambda r: t(r, "compute_s"), None),
    ("  of which transfer_s (layouts to the GPU)", lambda r: t(r, "transfer_s"), None),
    ("write_s", lambda r: t(r, "write_s"), None),
    ("total_s", lambda r: t(r, "total_s"), base),
    ("total / pyarrow read_table", lambda r: t(r, "total_s") / base if r and base else None, 1.0),
    ("peak host memory, GB", lambda r: r.get("peak_host_bytes", 0) / 1e9 if r else None,
     py.get("peak_host_bytes", 0) / 1e9 if py else None),
    ("peak host bytes / input edge", lambda r: r.get("peak_host_bytes", 0) / r["input_edges"] if r and r.get("input_edges") else None,
     py.get("peak_host_bytes", 0) / py["rows"] if py.get("rows") else None),
]
print()
for b, r in runs.items():
    if r:
        why = f" ({r['build_reason']})" if r.get("build_reason") else ""
        if r.get("upload_during_read"):
            why += ", its columns copied to it during the read"
        print(f"{b}: {r['vertices']} vertices, {r['edges']} edges, built on the {r.get('build_device', '?')}{why}, strategy {r.get('strategy')}")
try:
    import pyarrow.parquet as pq
    g = pq.read_table(os.path.join(work, "out-gpu.parquet"), columns=["vertex", "depth"])
    c = pq.read_table(os.path.join(work, "out-cpu.parquet"), columns=["vertex", "depth"])
    print("BFS depths of gpu and cpu equal:", "yes" if g.equals(c) else "NO")
except Exception as e:  # a failed run has said why already
    print("BFS depths not compared:", e)
print()
print(f"| stage (Kronecker {os.environ.get('GPIPE_E2E_SCALE', '24')}, bfs --undirected) | --backend gpu | --backend cpu | pyarrow read_table |")
print("|---|---:|---:|---:|")
for name, get, ref in rows:
    print(f"| {name} | {fmt(get(runs['gpu']))} | {fmt(get(runs['cpu']))} | {fmt(ref)} |")
PY
exit $status
