#!/usr/bin/env python3
"""Times `gpipe serve` from pyarrow's Flight client, as issue 17 measures it.

One run against a server already listening (scripts/bench-flight.sh starts
one per backend):

    bench-flight.py run --location grpc://127.0.0.1:8815 --input k22.arrow \
        --label gpu --json OUT/flight-gpu.json [--debug-url http://127.0.0.1:6060/debug/pprof --profile-dir OUT]

  - DoPut of the edge table in batches of 1 M rows (median of --puts), the
    table read and cut before the clock starts;
  - DoGet bfs (from the first edge's source), pagerank and cc: one untimed
    query, then the median of --reps, with the compute time the result's
    metadata reports;
  - bfs with result batches of 16384, 32768 and 65536 rows, taking turns
    (beside the table);
  - 16 clients (processes) x 20 bfs queries at once against one client's
    20, the throughputs compared and every result's vertex and depth columns
    compared with the first (parents may differ where paths tie; the first
    result's parents are checked to be one level up);
  - the same bfs result served by pyarrow's own Flight server to the same
    client, and to 16 clients at once against one, and the same pagerank
    result to the same client: what the clients and loopback allow on the
    machine, whatever the server (the target table gives it beside each
    target);
  - with --debug-url, CPU profiles of the server (go tool pprof) during a
    DoPut, during the pagerank queries, during 3 s of bfs queries and
    through a second, untimed run of the 16 clients, written to
    --profile-dir.

Two builds side by side (scripts/bench-flight-ab.sh starts both):

    bench-flight.py ab --location old=grpc://127.0.0.1:8815 \
        --location new=grpc://127.0.0.1:8816 --input k22.arrow --json OUT/ab.json

uploads the graph to every server, then times them query by query in
turns (the order rotating each round): a bfs DoGet's phases (schema, first
batch, last batch), a pagerank DoGet (less the compute its metadata
reports), and rounds of 16 clients x 20 bfs against one client's, so that
the machine's drift falls on all of them alike; with --pid LABEL=PID, each
server's CPU time a query.

Then the tables of several runs:

    bench-flight.py table OUT/flight-gpu.json OUT/flight-cpu.json

prints issue 17's table of calls by backend, and last its target table.
"""
import argparse
import hashlib
import json
import multiprocessing as mp
import statistics
import tempfile
import sys
import threading
import time
import urllib.request

# The client receive windows the run compares, taking turns (0: gRPC's own).
WINDOWS = (0, 4 << 20, 16 << 20, 64 << 20)


def flight_modules():
    import pyarrow as pa
    import pyarrow.flight as flight
    return pa, flight


def connect(location, window=0):
    """A Flight client; with window > 0 its gRPC receive window is fixed at
    window bytes (grpc.http2.lookahead_bytes, BDP probing off) rather than
    gRPC's own, which grows by BDP estimates. Go's client waited for window
    updates on a 40 MB result; pyarrow's measured the same either way
    (BENCHMARKS.md, issue 17's seventh round)."""
    _, flight = flight_modules()
    if window <= 0:
        return flight.FlightClient(location)
    return flight.FlightClient(location, generic_options=[
        ("grpc.http2.lookahead_bytes", window), ("grpc.http2.bdp_probe", 0)])


def window_turns(location, ticket, reps, windows):
    """Median DoGet seconds of ticket by client window (0: gRPC's own), the
    windows taking turns query by query, each client warmed up first."""
    cs = {w: connect(location, w) for w in windows}
    times = {w: [] for w in windows}
    try:
        for c in cs.values():
            get(c, ticket)
        for _ in range(reps):
            for w, c in cs.items():
                start = time.perf_counter()
                table, _ = get(c, ticket)
                times[w].append(time.perf_counter() - start)
                del table
    finally:
        for c in cs.values():
            c.close()
    return {str(w): statistics.median(t) for w, t in times.items()}


def read_edges(path, batch_rows):
    """The edge table as batches of batch_rows rows, in memory."""
    pa, _ = flight_modules()
    with pa.memory_map(path, "r") as source:
        # One chunk in memory (a copy, off the mapping), then cut evenly.
        table = pa.ipc.open_file(source).read_all().combine_chunks()
    return table.schema, table.to_batches(max_chunksize=batch_rows), table


def put(client, name, schema, batches, options):
    """Uploads the batches as graph name (replacing it) with the upload
    options; returns the PutResult metadata."""
    _, flight = flight_modules()
    desc = flight.FlightDescriptor.for_command(json.dumps({"graph": name, "replace": True, **options}))
    writer, reader = client.do_put(desc, schema)
    for b in batches:
        writer.write_batch(b)
    writer.done_writing()
    meta = reader.read()
    writer.close()
    return json.loads(meta.to_pybytes()) if meta is not None else {}


def get(client, ticket):
    """Runs a query; returns the result table and its gpipe metadata."""
    _, flight = flight_modules()
    reader = client.do_get(flight.Ticket(json.dumps(ticket).encode()))
    table = reader.read_all()
    meta = {}
    if table.schema.metadata and b"gpipe" in table.schema.metadata:
        meta = json.loads(table.schema.metadata[b"gpipe"])
    return table, meta


def fingerprint(table):
    """A hash of the vertex and depth columns (everything but parent)."""
    h = hashlib.blake2b(digest_size=16)
    for name in table.column_names:
        if name == "parent":
            continue
        for chunk in table.column(name).chunks:
            for buf in chunk.buffers():
                if buf is not None:
                    h.update(memoryview(buf))
    return h.hexdigest()


def check_parents(table):
    """Each reached vertex's parent is a vertex one level up (the source its
    own parent at depth 0). Returns an error text, or ''."""
    import numpy as np
    import pyarrow.compute as pc
    vertex = table.column("vertex").to_numpy()
    reached = pc.is_valid(table.column("depth"))
    depth = pc.fill_null(table.column("depth"), -1).to_numpy()
    parent = pc.filter(table.column("parent"), reached)
    if parent.null_count:
        return "a reached vertex has no parent"
    d = depth[depth >= 0].astype(np.int64)
    p = parent.to_numpy()
    at = np.searchsorted(vertex, p)
    if (at >= len(vertex)).any() or (vertex[np.minimum(at, len(vertex) - 1)] != p).any():
        return "a parent is not a vertex"
    if (depth[at].astype(np.int64) != np.maximum(d - 1, 0)).any():
        return "a parent is not one level up"
    return ""


def profile(url, seconds, path, kind="profile"):
    """Fetches a CPU profile (or an execution trace: kind "trace") of the
    server in a thread; join it after."""
    def fetch():
        try:
            with urllib.request.urlopen(f"{url}/{kind}?seconds={seconds}", timeout=seconds + 30) as r:
                data = r.read()
            with open(path, "wb") as f:
                f.write(data)
        except Exception as e:  # a profile is a bonus, never a failure
            print(f"profile {path}: {e}", file=sys.stderr)
    t = threading.Thread(target=fetch)
    t.start()
    time.sleep(0.2)  # the profile has started
    return t


def client_worker(location, ticket, queries, barrier, out, window):
    """One client of the concurrent run: a warm-up query, then queries
    timed from the barrier; sends (start, end, fingerprints) to out."""
    client = connect(location, window)
    get(client, ticket)
    barrier.wait()
    start = time.perf_counter()
    kept = []
    for _ in range(queries):
        table, _ = get(client, ticket)
        kept.append(table)  # hashed after the clock stops
    end = time.perf_counter()
    out.put((start, end, [fingerprint(t) for t in kept]))
    client.close()


def clients(location, ticket, n, queries, window=0):
    """Runs n client processes of queries each at once; returns queries per
    second and the results' fingerprints."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=client_worker, args=(location, ticket, queries, barrier, out, window)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    start = min(r[0] for r in results)
    end = max(r[1] for r in results)
    prints = [f for r in results for f in r[2]]
    return n * queries / (end - start), prints


def time_phases(client, ticket):
    """One DoGet's phases in seconds: schema, first batch, last batch."""
    _, flight = flight_modules()
    start = time.perf_counter()
    reader = client.do_get(flight.Ticket(json.dumps(ticket).encode()))
    schema = time.perf_counter() - start
    first, chunks = None, []
    while True:
        try:
            chunks.append(reader.read_chunk())
        except StopIteration:
            break
        if first is None:
            first = time.perf_counter() - start
    return schema, first, time.perf_counter() - start


def phases(client, ticket, reps):
    """Medians of a DoGet's phases in seconds over reps queries
    (time_phases): schema (do_get returned), first batch, last batch."""
    schema, first, last = zip(*(time_phases(client, ticket) for _ in range(reps)))
    return {"schema_s": statistics.median(schema), "first_batch_s": statistics.median(first), "last_batch_s": statistics.median(last)}


def serve_table(path, port, ready):
    """A pyarrow Flight server that answers every DoGet with the table in
    the Arrow IPC file at path, its batches as they are."""
    pa, flight = flight_modules()
    with pa.OSFile(path, "rb") as source:  # read into memory, not mapped
        table = pa.ipc.open_file(source).read_all()

    class Server(flight.FlightServerBase):
        def do_get(self, context, ticket):
            return flight.RecordBatchStream(table)

    server = Server(f"grpc://127.0.0.1:{port}")
    ready.set()
    server.serve()


def ceiling(client, ticket, reps, workdir, batch_rows, concurrent=None, window=0, windows=()):
    """The median time of pyarrow's client reading gpipe's result of ticket
    (the same rows, in batches of batch_rows) from pyarrow's own Flight
    server on loopback; with concurrent (clients, queries), also the throughput of
    that many client processes against one, as the concurrent run measures
    gpipe's: what the clients and loopback allow on this machine. The
    clients' receive window is window (connect); with windows, the
    windows also take turns (window_turns)."""
    pa, flight = flight_modules()
    table, _ = get(client, ticket)
    table = table.combine_chunks()
    path = f"{workdir}/{ticket['op']}-result.arrow"
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        for b in table.to_batches(max_chunksize=batch_rows):
            w.write_batch(b)
    rows, nbytes, nbatches = table.num_rows, table.nbytes, len(table.to_batches(max_chunksize=batch_rows))
    del table
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    port = 18899
    proc = ctx.Process(target=serve_table, args=(path, port, ready), daemon=True)
    proc.start()
    try:
        ready.wait(60)
        time.sleep(0.5)
        other = connect(f"grpc://127.0.0.1:{port}", window)
        t = flight.Ticket(b"x")
        other.do_get(t).read_all()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            other.do_get(t).read_all()
            times.append(time.perf_counter() - start)
        other.close()
        many = {}
        if concurrent:
            n, queries = concurrent
            location = f"grpc://127.0.0.1:{port}"
            one, _ = clients(location, {}, 1, queries, window)
            qps, _ = clients(location, {}, n, queries, window)
            many = {"clients": n, "queries": queries, "one_qps": one, "many_qps": qps, "speedup": qps / one}
        by_window = {}
        if windows:
            try:
                by_window = window_turns(f"grpc://127.0.0.1:{port}", {}, reps + 4, windows)
            except Exception as e:
                print(f"pyarrow's server by client window: {e}", file=sys.stderr)
    finally:
        proc.terminate()
        proc.join()
    return {"s": statistics.median(times), "rows": rows, "bytes": nbytes, "batches": nbatches, "times": times,
            "concurrent": many, "by_window": by_window}


def run(args):
    pa, flight = flight_modules()
    schema, batches, table = read_edges(args.input, args.batch_rows)
    source = table.column("src")[0].as_py()
    rows = table.num_rows
    del table
    client = connect(args.location, args.client_window)
    report = {"label": args.label, "rows": rows, "batches": len(batches), "source": source,
              "client_window": args.client_window}

    puts = []
    for i in range(args.puts):
        t = None
        if args.debug_url and i == 0:
            t = profile(args.debug_url, args.put_profile_s, f"{args.profile_dir}/profile-{args.label}-put.pb.gz")
        start = time.perf_counter()
        info = put(client, "k22", schema, batches, json.loads(args.options))
        puts.append(time.perf_counter() - start)
        if t:
            t.join()
        print(f"put: {puts[-1]:.3f} s  upload_s {info.get('upload_s', 0):.3f}  build_s {info.get('build_s', 0):.3f}  "
              f"backend {info.get('backend')}  build_device {info.get('build_device')} {info.get('build_reason', '')}", flush=True)
    report["put_s"] = statistics.median(puts)
    report["put_info"] = info
    del batches

    queries = {
        "bfs": {"graph": "k22", "op": "bfs", "source": source},
        "pagerank": {"graph": "k22", "op": "pagerank"},
        "cc": {"graph": "k22", "op": "cc"},
    }
    report["get"] = {}
    for op, ticket in queries.items():
        try:
            start = time.perf_counter()
            first, meta = get(client, ticket)  # untimed: the graph's first trip to the GPU
            warm = time.perf_counter() - start
            if op == "bfs":
                report["bfs_rows"] = first.num_rows
                report["bfs_parents"] = check_parents(first) or "ok"
            del first
            t = None
            if args.debug_url and op == "pagerank":  # where the time of a long computation goes
                t = profile(args.debug_url, int(warm * args.reps) + 1, f"{args.profile_dir}/profile-{args.label}-pagerank.pb.gz")
            times, computes = [], []
            for _ in range(args.reps):
                start = time.perf_counter()
                result, meta = get(client, ticket)
                times.append(time.perf_counter() - start)
                computes.append(meta.get("compute_s", 0) + meta.get("transfer_s", 0))
                del result
            if t:
                t.join()
            entry = {"s": statistics.median(times), "compute_s": statistics.median(computes),
                     "backend": meta.get("backend"), "note": meta.get("backend_note", ""), "times": times}
        except Exception as e:
            entry = {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
        report["get"][op] = entry
        print(f"get {op}: {json.dumps(entry)}", flush=True)

    # Where a bfs DoGet's time goes, seen from the client: until do_get
    # returns (the schema: the computation and the server's work before its
    # first byte), until the first batch, until the last; and the same
    # result served by pyarrow's own Flight server (C++ gRPC, batches sent
    # without copies) to the same client: what the client and loopback cost
    # whatever the server.
    try:
        report["bfs_phases"] = phases(client, queries["bfs"], args.reps)
        print(f"bfs phases: {json.dumps(report['bfs_phases'])}", flush=True)
        report["bfs_ceiling"] = {}
        for rows in (32768, 65536):
            concurrent = (args.clients, args.queries) if rows == 65536 else None
            windows = WINDOWS if rows == 65536 else ()
            report["bfs_ceiling"][str(rows)] = ceiling(client, queries["bfs"], args.reps, tempfile.gettempdir(), rows, concurrent,
                                                       args.client_window, windows)
        print(f"bfs from pyarrow's server, by batch rows: {json.dumps(report['bfs_ceiling'])}", flush=True)
    except Exception as e:
        print(f"bfs phases or ceiling: {e}", file=sys.stderr)
    # The pagerank result the same way: its target is the computation plus
    # 25 ms, and the send of its 38 MB is the client's pace.
    try:
        report["pagerank_ceiling"] = ceiling(client, queries["pagerank"], args.reps, tempfile.gettempdir(), 65536,
                                             window=args.client_window)
        print(f"pagerank from pyarrow's server: {json.dumps(report['pagerank_ceiling'])}", flush=True)
    except Exception as e:
        print(f"pagerank ceiling: {e}", file=sys.stderr)

    # Beside the table: bfs by the client's receive window, the windows
    # taking turns (pyarrow's own server's the same way, in bfs_ceiling).
    try:
        report["bfs_by_window"] = window_turns(args.location, queries["bfs"], args.reps + 4, WINDOWS)
    except Exception as e:
        report["bfs_by_window"] = {}
        print(f"bfs by client window: {e}", file=sys.stderr)
    print(f"bfs by client window: {json.dumps(report['bfs_by_window'])}", flush=True)

    # Beside the table: bfs with result batches of several sizes, the sizes
    # taking turns query by query (the first queries after an upload run
    # slower, so sizes timed one after the other are not comparable).
    sizes = (16384, 32768, 65536)
    times = {rows: [] for rows in sizes}
    try:
        for _ in range(args.reps + 4):
            for rows in sizes:
                start = time.perf_counter()
                result, _ = get(client, {**queries["bfs"], "batch_rows": rows})
                times[rows].append(time.perf_counter() - start)
                del result
        report["bfs_batch_rows"] = {str(rows): statistics.median(t) for rows, t in times.items()}
    except Exception as e:
        report["bfs_batch_rows"] = {}
        print(f"bfs by batch_rows: {e}", file=sys.stderr)
    print(f"bfs by batch_rows: {json.dumps(report['bfs_batch_rows'])}", flush=True)

    if args.debug_url:
        t = profile(args.debug_url, 3, f"{args.profile_dir}/profile-{args.label}-bfs.pb.gz")
        end = time.perf_counter() + 3.2
        n = 0
        while time.perf_counter() < end:
            get(client, queries["bfs"])
            n += 1
        t.join()
        report["profiled_bfs_queries"] = n
        # An execution trace of a few queries: what gRPC's writer waits on
        # (go tool trace -pprof=sync|net|syscall TRACE).
        t = profile(args.debug_url, 1, f"{args.profile_dir}/trace-{args.label}-bfs.out", kind="trace")
        end = time.perf_counter() + 1.0
        while time.perf_counter() < end:
            get(client, queries["bfs"])
        t.join()

    one, prints1 = clients(args.location, queries["bfs"], 1, args.queries, args.client_window)
    many, prints = clients(args.location, queries["bfs"], args.clients, args.queries, args.client_window)
    if args.debug_url:
        # A CPU profile of the server through another concurrent run, not
        # the timed one (its clients start, about a second, then query for
        # a few seconds).
        t = profile(args.debug_url, 5, f"{args.profile_dir}/profile-{args.label}-clients.pb.gz")
        clients(args.location, queries["bfs"], args.clients, args.queries, args.client_window)
        t.join()
    report["concurrent"] = {
        "clients": args.clients, "queries": args.queries,
        "one_qps": one, "many_qps": many, "speedup": many / one,
        "identical": len(set(prints + prints1)) == 1,
    }
    print(f"concurrent: {json.dumps(report['concurrent'])}", flush=True)
    client.close()
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)


def ms(s):
    if s < 0.1:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e3:,.0f} ms" if s < 10 else f"{s:,.1f} s"


def window_size(w):
    """A window in bytes as text: MiB or KiB, or gRPC's own for 0."""
    w = int(w)
    if w <= 0:
        return "gRPC's own"
    return f"{w / (1 << 20):g} MiB" if w >= 1 << 20 else f"{w / 1024:g} KiB"


def window_cells(by_window):
    return ", ".join(f"{window_size(w)} {ms(s)}" for w, s in by_window.items())


def cell(entry):
    if entry is None:
        return "(not run)"
    if "error" in entry:
        return entry["error"][:60]
    text = f"{ms(entry['s'])} (compute {ms(entry['compute_s'])})"
    if entry.get("backend") and entry.get("note"):
        text += f" on {entry['backend']}"
    return text


def table(args):
    reports = {}
    for path in args.reports:
        try:
            with open(path) as f:
                r = json.load(f)
            reports[r["label"]] = r
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
    gpu, cpu = reports.get("gpu"), reports.get("cpu")
    alone = {}  # (op, backend) -> median compute of gpipe bench
    for path in args.bench or []:
        try:
            with open(path) as f:
                for line in f:
                    if line.strip():
                        r = json.loads(line)
                        alone[(r["op"], r["backend"])] = r["median_s"]
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
    def bench_cell(op):
        parts = [f"{ms(alone[(op, b)])} {b.upper()}" for b in ("gpu", "cpu") if (op, b) in alone]
        return ", ".join(parts)
    build = ""
    if gpu or cpu:
        info = (gpu or cpu).get("put_info", {})
        build = f"build {ms(info.get('build_s', 0))} (in the server)"
    col = lambda r, f: f(r) if r else "(not run)"
    print()
    print("| call | `--backend gpu` | `--backend cpu` | the computation alone (`gpipe bench`) |")
    print("|---|---:|---:|---:|")
    print(f"| DoPut of the edge table (1 GB, batches of 1 M rows) | {col(gpu, lambda r: ms(r['put_s']))} | {col(cpu, lambda r: ms(r['put_s']))} | {build} |")
    for op in ("bfs", "pagerank", "cc"):
        print(f"| DoGet {op} | {col(gpu, lambda r: cell(r['get'].get(op)))} | {col(cpu, lambda r: cell(r['get'].get(op)))} | {bench_cell(op)} |")
    for label, r in (("gpu", gpu), ("cpu", cpu)):
        if r:
            c = r["concurrent"]
            print(f"| {c['clients']} clients x {c['queries']} bfs ({label}) | {c['many_qps']:.0f} queries/s, "
                  f"{c['speedup']:.1f}x one client's {c['one_qps']:.0f}/s, identical: {c['identical']} | | |")

    for label, r in (("gpu", gpu), ("cpu", cpu)):
        if r and r.get("bfs_batch_rows"):
            sizes = ", ".join(f"{k} rows {ms(v)}" for k, v in r["bfs_batch_rows"].items())
            print(f"DoGet bfs by result batch size, taking turns, {label}: {sizes}")
        if r and r.get("bfs_phases"):
            print(f"DoGet bfs phases, {label}: schema {ms(r['bfs_phases']['schema_s'])}, first batch "
                  f"{ms(r['bfs_phases']['first_batch_s'])}, last {ms(r['bfs_phases']['last_batch_s'])}")
        if r and r.get("bfs_by_window"):
            print(f"DoGet bfs by the client's receive window, taking turns, {label}: " + window_cells(r["bfs_by_window"]))
        if r and r.get("bfs_ceiling"):
            print(f"the same bfs result from pyarrow's own Flight server, {label}: " +
                  ", ".join(f"batches of {k} rows {ms(v['s'])}" for k, v in r["bfs_ceiling"].items()))
            for v in r["bfs_ceiling"].values():
                if v.get("by_window"):
                    print(f"the same from pyarrow's own server by the client's receive window, {label}: " + window_cells(v["by_window"]))
                c = v.get("concurrent")
                if c:
                    print(f"{c['clients']} clients x {c['queries']} of that result from pyarrow's own Flight server, {label}: "
                          f"{c['many_qps']:.0f} queries/s, {c['speedup']:.1f}x one client's {c['one_qps']:.0f}/s")
        if r and r.get("put_info"):
            i = r["put_info"]
            print(f"DoPut, {label}: built on {i.get('build_device')}{' (' + i['build_reason'] + ')' if i.get('build_reason') else ''}, "
                  f"upload {ms(i.get('upload_s', 0))}, build {ms(i.get('build_s', 0))} (the last put)")

    for spec in args.log or []:
        label, _, path = spec.partition("=")
        try:
            with open(path) as f:
                lines = [l for l in f if "msg=rpc" in l]
        except OSError as e:
            print(f"{path}: {e}", file=sys.stderr)
            continue
        for method, op in (("DoPut", '""'), ("DoGet", "bfs"), ("DoGet", "pagerank"), ("DoGet", "cc")):
            calls = []
            for l in lines:
                if f"method={method} " not in l or f" op={op} " not in l or "status=OK" not in l:
                    continue
                kv = dict(w.split("=", 1) for w in l.split() if "=" in w)
                calls.append(kv)
            if method == "DoGet":
                calls = calls[1:6]  # the timed queries: after the untimed one, before the profiled and concurrent ones
            if not calls:
                continue
            med = lambda k: statistics.median(float(c.get(k, 0)) for c in calls)
            parts = [f"duration {ms(med('duration_s'))}"]
            for k in ("compute_s", "upload_s", "build_s"):
                if any(k in c for c in calls):
                    parts.append(f"{k[:-2]} {ms(med(k))}")
            name = method if method == "DoPut" else f"{method} {op}"
            print(f"server's log, {label}, {name}: {', '.join(parts)} (median of {len(calls)} calls)")

    def verdict(ok):
        return "yes" if ok else "**no**"

    # The reference beside each target: the same result read by the same
    # client from pyarrow's own Flight server in the same run (what the
    # client and loopback allow on the machine, whatever the server).
    def ref_bfs(r):
        c = (r.get("bfs_ceiling") or {}).get("65536")
        return ms(c["s"]) if c else ""

    def ref_pagerank(r, compute):
        c = r.get("pagerank_ceiling")
        return f"compute + {ms(c['s'])} = {ms(compute + c['s'])}" if c else ""

    def ref_clients(r):
        c = ((r.get("bfs_ceiling") or {}).get("65536") or {}).get("concurrent")
        return f"{c['speedup']:.1f}×" if c else ""

    print()
    windows = sorted({r.get("client_window", 0) for r in (gpu, cpu) if r})
    print("| call | target | measured (H100 machine, pyarrow client, loopback"
          + "".join(f", client window {window_size(w)}" for w in windows if w)
          + ") | pyarrow's own server, the same result to the same client | met |")
    print("|---|---:|---:|---:|:---:|")
    if gpu and "error" not in gpu["get"]["bfs"]:
        b = gpu["get"]["bfs"]
        mbs = gpu.get("bfs_rows", 0) * 20 / b["s"] / 1e9
        print(f"| DoGet bfs, GPU backend, {gpu.get('bfs_rows', 0) / 1e6:.1f} M result rows | ≤ 25 ms median (≥ 2 GB/s of results) | "
              f"{ms(b['s'])} ({mbs:.1f} GB/s) | {ref_bfs(gpu)} | {verdict(b['s'] <= 0.025)} |")
    else:
        print("| DoGet bfs, GPU backend, 2.4 M result rows | ≤ 25 ms median (≥ 2 GB/s of results) | (not run) | | |")
    if gpu and "error" not in gpu["get"]["pagerank"]:
        p = gpu["get"]["pagerank"]
        print(f"| DoGet pagerank, GPU backend | ≤ compute + 25 ms | {ms(p['s'])} (compute {ms(p['compute_s'])}, "
              f"+{ms(p['s'] - p['compute_s'])}) | {ref_pagerank(gpu, p['compute_s'])} | {verdict(p['s'] <= p['compute_s'] + 0.025)} |")
    else:
        print("| DoGet pagerank, GPU backend | ≤ compute + 25 ms | (not run) | | |")
    if reports:
        rows = next(iter(reports.values()))["rows"]
        best = min(r["put_s"] for r in reports.values())
        puts = ", ".join(f"{ms(r['put_s'])} ({k})" for k, r in reports.items())
        print(f"| DoPut, {rows / 1e6:.0f} M rows | ≤ 1.0 s | {puts} | | {verdict(best <= 1.0)} |")
    else:
        print("| DoPut, 67 M rows | ≤ 1.0 s | (not run) | | |")
    conc = gpu or cpu
    if conc:
        c = conc["concurrent"]
        print(f"| {c['clients']} concurrent clients × {c['queries']} bfs queries on the same graph | throughput ≥ 8× one client's, "
              f"results identical | {c['speedup']:.1f}× ({conc['label']}), identical: {c['identical']} | {ref_clients(conc)} | "
              f"{verdict(c['speedup'] >= 8 and c['identical'])} |")
    else:
        print("| 16 concurrent clients × 20 bfs queries on the same graph | throughput ≥ 8× one client's, results identical | (not run) | | |")


def cpu_seconds(pid):
    """The CPU time (user and system) process pid has used, in seconds."""
    import os
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ab(args):
    """Several servers timed in turns (see the module's doc)."""
    servers = dict(loc.split("=", 1) for loc in args.location)
    pids = dict((l, int(p)) for l, p in (x.split("=", 1) for x in args.pid or []))
    cpu = {l: {"queries": 0, "s": 0.0, "client_queries": 0, "client_s": 0.0} for l in pids}

    def used(l):
        return cpu_seconds(pids[l]) if l in pids else 0.0
    schema, batches, table = read_edges(args.input, args.batch_rows)
    source = table.column("src")[0].as_py()
    del table
    cs = {}
    for label, loc in servers.items():
        cs[label] = connect(loc)
        info = put(cs[label], "k22", schema, batches, json.loads(args.options))
        print(f"{label}: put, backend {info.get('backend')}, built on {info.get('build_device')}", flush=True)
    del batches
    bfs = {"graph": "k22", "op": "bfs", "source": source}
    pr = {"graph": "k22", "op": "pagerank"}
    for c in cs.values():  # untimed: the graph's first trip to the GPU
        get(c, bfs)
        get(c, pr)
    labels = list(cs)
    times = {l: {"schema": [], "first": [], "last": [], "pagerank": [], "pagerank_host": []} for l in labels}
    for r in range(args.reps):
        k = r % len(labels)
        for l in labels[k:] + labels[:k]:
            t = times[l]
            before = used(l)
            sch, first, last = time_phases(cs[l], bfs)
            t["schema"].append(sch)
            t["first"].append(first)
            t["last"].append(last)
            start = time.perf_counter()
            _, meta = get(cs[l], pr)
            took = time.perf_counter() - start
            t["pagerank"].append(took)
            t["pagerank_host"].append(took - meta.get("compute_s", 0))
            if l in cpu:
                cpu[l]["queries"] += 2
                cpu[l]["s"] += used(l) - before
    for c in cs.values():
        c.close()
    report = {"source": source, "reps": args.reps, "servers": servers, "median_s": {}, "clients": {}, "times_s": times}
    for l in labels:
        report["median_s"][l] = {k: statistics.median(v) for k, v in times[l].items()}
    # The rounds paired: each round's difference between the last server
    # and the first, whose median drifts less than either's own.
    a, b = labels[0], labels[-1]
    report["paired_median_s"] = {k: statistics.median(y - x for x, y in zip(times[a][k], times[b][k])) for k in times[a]}
    # Throughput rounds: one client, then 16, each server in turn.
    for r in range(args.client_rounds):
        k = r % len(labels)
        for l in labels[k:] + labels[:k]:
            one, _ = clients(servers[l], bfs, 1, args.queries)
            before = used(l)
            many, prints = clients(servers[l], bfs, args.clients, args.queries)
            if l in cpu:
                # The clients' warm-up queries (one each) count too.
                cpu[l]["client_queries"] += args.clients * (args.queries + 1)
                cpu[l]["client_s"] += used(l) - before
            report["clients"].setdefault(l, []).append({"one_qps": one, "many_qps": many, "ratio": many / one,
                                                        "identical": len(set(prints)) == 1})
    report["server_cpu"] = cpu
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(f"{args.reps} rounds in turns; medians in ms (bfs: schema / first batch / last batch; "
          f"pagerank: the DoGet, less its compute)")
    for l in labels:
        m = report["median_s"][l]
        rounds = ", ".join(f"{c['ratio']:.1f}x ({c['many_qps']:.0f}/s)" for c in report["clients"].get(l, []))
        print(f"{l}: bfs {ms(m['schema'])} / {ms(m['first'])} / {ms(m['last'])}; pagerank {ms(m['pagerank'])} "
              f"(+{ms(m['pagerank_host'])}); {args.clients} clients: {rounds}")
        if l in cpu and cpu[l]["queries"] and cpu[l]["client_queries"]:
            c = cpu[l]
            print(f"{l}: the server's CPU a query: {c['s'] / c['queries'] * 1e3:.1f} ms (single bfs and pagerank queries), "
                  f"{c['client_s'] / c['client_queries'] * 1e3:.1f} ms (bfs under {args.clients} clients)")
    if len(labels) > 1:
        d = report["paired_median_s"]
        print(f"{b} - {a}, the median of the rounds' differences: bfs {d['schema'] * 1e3:+.1f} / {d['first'] * 1e3:+.1f} / "
              f"{d['last'] * 1e3:+.1f} ms; pagerank {d['pagerank'] * 1e3:+.1f} ms (host {d['pagerank_host'] * 1e3:+.1f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--location", default="grpc://127.0.0.1:8815")
    r.add_argument("--input", required=True, help="the edge table, an Arrow IPC file")
    r.add_argument("--label", required=True, help="the server's backend, for the table")
    r.add_argument("--json", required=True, help="where the figures go")
    r.add_argument("--batch-rows", type=int, default=1 << 20)
    r.add_argument("--options", default='{"undirected": true}',
                   help="the upload's options, JSON (default: undirected, as BENCHMARKS.md's gpipe bench runs)")
    r.add_argument("--puts", type=int, default=3)
    r.add_argument("--reps", type=int, default=5)
    r.add_argument("--clients", type=int, default=16)
    r.add_argument("--queries", type=int, default=20)
    r.add_argument("--debug-url", help="the server's --debug-addr, as http://HOST:PORT/debug/pprof")
    r.add_argument("--profile-dir", default=".")
    r.add_argument("--put-profile-s", type=int, default=4)
    r.add_argument("--client-window", type=int, default=0,
                   help="every client's gRPC receive window in bytes (0: gRPC's own, growing by BDP estimates)")
    t = sub.add_parser("table")
    t.add_argument("reports", nargs="+")
    t.add_argument("--bench", action="append", help="gpipe bench --json output (one object a line), for the computation alone")
    t.add_argument("--log", action="append", help="LABEL=PATH of a server's log: its own view of each call's time")
    a = sub.add_parser("ab")
    a.add_argument("--location", action="append", required=True, help="LABEL=grpc://HOST:PORT, once a server")
    a.add_argument("--input", required=True, help="the edge table, an Arrow IPC file")
    a.add_argument("--json", required=True, help="where the figures go")
    a.add_argument("--batch-rows", type=int, default=1 << 20)
    a.add_argument("--options", default='{"undirected": true}')
    a.add_argument("--reps", type=int, default=15)
    a.add_argument("--clients", type=int, default=16)
    a.add_argument("--queries", type=int, default=20)
    a.add_argument("--client-rounds", type=int, default=2)
    a.add_argument("--pid", action="append", help="LABEL=PID of a server on this machine: its CPU time a query")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args)
    elif args.cmd == "ab":
        ab(args)
    else:
        table(args)


if __name__ == "__main__":
    main()
