#!/usr/bin/env bash
# The Parquet writer beside pyarrow's (issue 13), on the GPU machine (16 cores;
# no GPU needed), from the repository root:
#   scripts/bench-writer.sh GPIPE OUTDIR
# GPIPE is a gpipe binary built with CGO_ENABLED=0. It needs python3 with
# pyarrow, and about 8 GB free in ${TMPDIR:-/tmp} (Kronecker 22 as an Arrow file,
# kept for later runs; Kronecker 24 as Parquet and as Arrow, removed after). In about two minutes it
#  1. reads the committed files of sink/testdata/parquet-writer with pyarrow
#     and compares them with expected.json (scripts/parquet-readback);
#  2. generates Kronecker 22 (an Arrow file), runs
#       gpipe run --input k22.arrow --op bfs --undirected --backend cpu --output OUTDIR/bfs.parquet --json
#     and the same to OUTDIR/bfs.arrow, then with pyarrow reads gpipe's Parquet
#     result, checks it holds what gpipe's Arrow result holds, and times
#     pq.write_table of that table with zstd (median of 5);
#  3. times `gpipe gen kronecker --scale 24` to .parquet and to .arrow
#     (GPIPE_WRITER_SCALE=23 for scale 23), with peak memory, and checks with
#     pyarrow that the two files hold the same table.
# Logs go to OUTDIR; a table is printed last.
set -uo pipefail
gpipe=$(realpath "$1") out=$2
scale=${GPIPE_WRITER_SCALE:-24}
mkdir -p "$out"
out=$(realpath "$out")
work=${TMPDIR:-/tmp}/gpipe-bench-writer
mkdir -p "$work"

echo "== pyarrow reads the committed files of sink/testdata/parquet-writer" >&2
python3 scripts/parquet-readback/pyarrow-check.py sink/testdata/parquet-writer >"$out/readback.log" 2>&1
echo "readback: $(tail -1 "$out/readback.log")" >&2

python3 - "$gpipe" "$out" "$work" "$scale" <<'PY'
import json, os, statistics, subprocess, sys, time, traceback
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

gpipe, out, work, scale = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = []  # (figure, gpipe, other, ratio, note)


def run(name, args):
    """Runs gpipe with args; returns wall seconds, peak RSS (GiB), stderr."""
    print(f"== {name}: gpipe {' '.join(args)}", file=sys.stderr, flush=True)
    with open(os.path.join(out, name + ".err"), "w+") as err:
        start = time.perf_counter()
        p = subprocess.Popen([gpipe] + args, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        text = err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"gpipe {name} failed: {text.strip()[-300:]}")
    return wall, ru.ru_maxrss / 2**20, text


def read_arrow(path):
    with pa.OSFile(path, "rb") as src:
        return ipc.open_file(src).read_all()  # read into memory, not mapped


def same_bfs(got, want):
    """The two results of one BFS run twice: the same vertices and depths
    (parents may differ between runs: any vertex one level up that links to
    a vertex is a valid parent), and every parent one level above its child."""
    import numpy as np
    problems = []
    for name in ("vertex", "depth"):
        if not got.column(name).equals(want.column(name)):
            problems.append(f"column {name} differs from gpipe's Arrow result")
    if problems:
        return problems
    vertex = got.column("vertex").to_numpy()
    depth = got.column("depth").to_numpy(zero_copy_only=False)
    parent = got.column("parent")
    has = np.asarray(parent.is_valid())
    if not np.array_equal(has, np.asarray(want.column("parent").is_valid())):
        return ["parents null in one result and not the other"]
    at = np.searchsorted(vertex, parent.drop_null().to_numpy())
    d = depth[has]
    ok = (d == 0) | (depth[np.minimum(at, len(depth) - 1)] == d - 1)
    if not ok.all():
        problems.append(f"{int((~ok).sum())} parents not one level above their vertex")
    return problems


def result():
    """The K22 BFS result: gpipe's write beside pyarrow's."""
    k22 = os.path.join(work, "k22.arrow")
    if not os.path.exists(k22):
        run("gen-k22", ["gen", "kronecker", "--scale", "22", "--edge-factor", "16", "--output", k22])
    with pa.OSFile(k22, "rb") as src:
        source = str(ipc.open_file(src).get_batch(0).column(0)[0])
    bfs = ["run", "--input", k22, "--op", "bfs", "--source", source, "--undirected", "--backend", "cpu", "--json"]
    _, rss, text = run("bfs-parquet", bfs + ["--output", os.path.join(out, "bfs.parquet")])
    report = json.loads([l for l in text.splitlines() if l.startswith("{")][-1])  # --json goes to stderr
    with open(os.path.join(out, "bfs.json"), "w") as f:
        json.dump(report, f)
    run("bfs-arrow", bfs + ["--output", os.path.join(out, "bfs.arrow")])

    table = pq.read_table(os.path.join(out, "bfs.parquet"))
    want = read_arrow(os.path.join(out, "bfs.arrow"))
    md = pq.ParquetFile(os.path.join(out, "bfs.parquet")).metadata
    problems = []
    if [(f.name, f.type) for f in table.schema] != [(f.name, f.type) for f in want.schema]:
        problems.append(f"schema {table.schema} != {want.schema}")
    else:
        problems += same_bfs(table, want)
    if table.num_rows != report["vertices"]:
        problems.append(f"{table.num_rows} rows, {report['vertices']} vertices")
    for g in range(md.num_row_groups):
        for j in range(md.num_columns):
            st = md.row_group(g).column(j).statistics
            if st is None or not st.has_null_count or not st.has_min_max:
                problems.append(f"row group {g} column {j}: no statistics pyarrow takes")
    check = "ok" if not problems else "; ".join(problems[:3])
    print(f"K22 result check: {check}", file=sys.stderr)

    times = []
    path = os.path.join(work, "pyarrow-bfs.parquet")
    for _ in range(5):
        t0 = time.perf_counter()
        pq.write_table(table, path, compression="zstd")
        times.append(time.perf_counter() - t0)
    pa_write = statistics.median(times)
    if not pq.read_table(path).equals(table):
        check += "; pyarrow's own file differs"
    size_g = os.path.getsize(os.path.join(out, "bfs.parquet"))
    size_p = os.path.getsize(path)
    w = report["timings"]["write_s"]
    rows.append((f"K22 BFS result write_s ({table.num_rows:,} rows, {md.num_row_groups} row groups)", w, pa_write, w / pa_write,
                 f"files {size_g/2**20:.1f} / {size_p/2**20:.1f} MiB; read back: {check}"))
    rows.append(("K22 BFS job total_s (cpu backend)", report["timings"]["total_s"], None, None, f"peak RSS {rss:.1f} GiB"))


def generate():
    """gen kronecker: Parquet beside Arrow."""
    res = {}
    paths = {ext: os.path.join(work, f"k{scale}.{ext}") for ext in ("parquet", "arrow")}
    try:
        for ext, path in paths.items():
            if os.path.exists(path):
                os.remove(path)
            wall, rss, _ = run(f"gen-k{scale}-{ext}", ["gen", "kronecker", "--scale", str(scale), "--edge-factor", "16", "--output", path])
            res[ext] = (wall, rss, os.path.getsize(path))
        t0 = time.perf_counter()
        pt = pq.read_table(paths["parquet"])
        read_s = time.perf_counter() - t0
        same = "ok" if pt.equals(read_arrow(paths["arrow"])) else "the Parquet and Arrow files differ"
    finally:
        for path in paths.values():
            if os.path.exists(path):
                os.remove(path)
    p, a = res["parquet"], res["arrow"]
    rows.append((f"gen kronecker --scale {scale}: .parquet s / .arrow s", p[0], a[0], p[0] / a[0],
                 f"files {p[2]/2**30:.2f} / {a[2]/2**30:.2f} GiB; peak RSS {p[1]:.1f} / {a[1]:.1f} GiB; "
                 f"pyarrow read_table of the Parquet {read_s:.2f} s; same table: {same}"))


failed = False
for part in (result, generate):
    try:
        part()
    except Exception as e:  # report what ran; the other part still runs
        failed = True
        traceback.print_exc()
        rows.append((f"{part.__doc__.splitlines()[0]} FAILED", float("nan"), None, None, str(e)[:200]))
with open(os.path.join(out, "table.json"), "w") as f:
    json.dump(rows, f)

print()
print(f"{'figure':62s} {'gpipe':>8s} {'other':>8s} {'ratio':>6s}  note")
for fig, g, o, r, note in rows:
    os_ = f"{o:8.3f}" if o is not None else f"{'':8s}"
    rs = f"{r:6.2f}" if r is not None else f"{'':6s}"
    print(f"{fig:62s} {g:8.3f} {os_} {rs}  {note}")
print("(other: pyarrow's pq.write_table zstd, median of 5, for the result; the .arrow run for gen. "
      f"pyarrow {pa.__version__}, {os.cpu_count()} cores)")
sys.exit(1 if failed else 0)
PY
