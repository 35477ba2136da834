#!/usr/bin/env python3
"""A pyarrow.flight client of `gpipe serve`: put, get, exchange, list, drop.

    gpipe serve &                                   # 127.0.0.1:8815
    python3 examples/flight-python/client.py        # from the repository root

With a token (gpipe serve --token-file FILE) set GPIPE_TOKEN; with TLS pass
--location grpc+tls://HOST:PORT and, for a self-signed certificate,
--tls-ca CERT.PEM. Needs pyarrow (pip install pyarrow).
"""

import argparse
import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight
import pyarrow.parquet as pq


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--location", default="grpc://127.0.0.1:8815")
    parser.add_argument("--input", default="examples/data/karate.parquet")
    parser.add_argument("--tls-ca", help="PEM certificate to trust")
    args = parser.parse_args()

    kwargs = {}
    if args.tls_ca:
        with open(args.tls_ca, "rb") as f:
            kwargs["tls_root_certs"] = f.read()
    client = flight.FlightClient(args.location, **kwargs)

    # The bearer token goes in every call's headers.
    headers = []
    if os.environ.get("GPIPE_TOKEN"):
        headers.append((b"authorization", b"Bearer " + os.environ["GPIPE_TOKEN"].encode()))
    options = flight.FlightCallOptions(headers=headers)

    edges = pq.read_table(args.input)  # columns src, dst

    # 1. put. A pyarrow descriptor is a path or a command, not both, so the
    # command carries the graph's name with the options.
    descriptor = flight.FlightDescriptor.for_command(
        json.dumps({"graph": "karate", "undirected": True, "replace": True}))
    writer, metadata = client.do_put(descriptor, edges.schema, options=options)
    writer.write_table(edges, max_chunksize=65536)
    writer.done_writing()
    put_result = metadata.read()
    writer.close()  # raises the server's status when the put was refused
    info = json.loads(put_result.to_pybytes())
    print(f"put karate: {info['vertices']} vertices, {info['edges']} edges, "
          f"{info['memory_bytes']} bytes")

    # 2. get: the ticket is JSON naming the graph, the operator and its
    # parameters; the result has the columns of `gpipe run`.
    ticket = flight.Ticket(json.dumps({"graph": "karate", "op": "pagerank"}).encode())
    ranks = client.do_get(ticket, options=options).read_all()
    print("ran:", json.loads(ranks.schema.metadata[b"gpipe"]))
    top = ranks.sort_by([("rank", "descending")]).slice(0, 5)
    for vertex, rank in zip(top["vertex"].to_pylist(), top["rank"].to_pylist()):
        print(f"  {vertex}\t{rank:.6f}")

    ticket = flight.Ticket(json.dumps({"graph": "karate", "op": "bfs", "source": 1}).encode())
    depths = client.do_get(ticket, options=options).read_all()
    print("bfs from 1: deepest vertex at depth", pc.max(depths["depth"]).as_py())

    # 3. exchange: edges in, result out, nothing kept on the server. The
    # client closes its side before reading the result.
    descriptor = flight.FlightDescriptor.for_command(
        json.dumps({"op": "cc", "undirected": True}))
    writer, reader = client.do_exchange(descriptor, options=options)
    writer.begin(edges.schema)
    writer.write_table(edges)
    writer.done_writing()
    components = reader.read_all()
    writer.close()
    print("cc by exchange:", len(set(components["component"].to_pylist())), "component(s)")

    # 4. list: one FlightInfo per graph; app_metadata holds its description.
    for fi in client.list_flights(options=options):
        meta = getattr(fi, "app_metadata", b"") or b"{}"
        print("server holds", fi.descriptor.path[0].decode(), json.loads(meta))

    # Errors are gRPC statuses; pyarrow raises ArrowInvalid for
    # InvalidArgument, KeyError for NotFound, FlightUnauthenticatedError for
    # Unauthenticated.
    try:
        client.do_get(flight.Ticket(b'{"graph": "karate", "op": "pagerankk"}'),
                      options=options).read_all()
    except pa.ArrowInvalid as e:
        print("refused:", e)

    # 5. drop.
    for result in client.do_action(flight.Action("drop", b"karate"), options=options):
        print("drop:", json.loads(result.body.to_pybytes()))


if __name__ == "__main__":
    try:
        main()
    except pa.ArrowException as e:  # a refused call: its status, on one line
        sys.exit(f"client.py: {type(e).__name__}: {str(e).splitlines()[0]}")
