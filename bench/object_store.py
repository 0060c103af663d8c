"""lance_duck vs pylance on a local S3 endpoint with latency added to every request.

    python bench/object_store.py [--rows 4000000] [--latency 0.02] [--runs 3] [--dir /tmp/ld_bench]

Starts moto's S3 server on 127.0.0.1, uploads the benchmark table of ``duckdb_queries.py``
(written there once, cached in --dir), and puts ``tests/io/latency_proxy.py`` in front of it:
every request waits ``--latency`` seconds and is counted by kind (GET / HEAD / LIST), with the bytes
returned and the peak number of requests in flight. Each operation opens the dataset afresh (a new
dataset object for both readers; lance_duck's per-process footer cache stays warm after the
warm-up run, as pylance's session caches do) and runs through DuckDB; medians of --runs after one
warm-up. Requests are those of the last run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import duckdb

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from duckdb_queries import QUERIES, prepare  # noqa: E402
from tests.io.latency_proxy import LatencyProxy  # noqa: E402

BUCKET = "lance-duck-bench"


def upload(endpoint: str, local: str, key: str) -> None:
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                      region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    for d, _, files in os.walk(local):
        for f in files:
            p = os.path.join(d, f)
            s3.upload_file(p, BUCKET, key + "/" + os.path.relpath(p, local))


def operations(uri: str, opts: dict, n: int) -> dict:
    """{operation: {reader: callable}}; ``n`` = live rows of the table."""
    import lance

    import lance_duck
    import lance_duck.scan as lds

    def duck(make):
        def run(sql):
            con = duckdb.connect()
            con.register("T", make())
            return con.sql(sql).fetchall()
        return run

    readers = {
        "lance_duck": (lambda **kw: lance_duck.dataset(uri, storage_options=opts, **kw),
                       duck(lambda: lds.dataset(uri, storage_options=opts))),
        "pylance": (lambda **kw: lance.dataset(uri, storage_options=opts, **kw),
                    duck(lambda: lance.dataset(uri, storage_options=opts))),
    }
    ops = {}
    for name, (open_, sql) in readers.items():
        ops.setdefault("open latest", {})[name] = lambda o=open_: o()
        ops.setdefault("open version 1", {})[name] = lambda o=open_: o(version=1)
        ops.setdefault("versions()", {})[name] = lambda o=open_: o().versions()
        for q, text in QUERIES.items():
            ops.setdefault(q, {})[name] = lambda s=sql, t=text: s(t)
        ops.setdefault("take 1000 rows, 3 cols", {})[name] = \
            lambda o=open_: o().take(list(range(0, n, max(1, n // 1000)))[:1000], columns=["id", "f", "cat"])
        ops.setdefault("one partition (1 fragment)", {})[name] = \
            lambda o=open_: o().get_fragments()[1].to_table(columns=["id", "i", "f", "cat"])
    return ops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    ap.add_argument("--only", default=None, help="comma-separated operation names")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    lp, _ = prepare(args.dir, args.rows, "2.2")
    import logging
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    upload(f"http://{host}:{port}", lp, "t.lance")
    proxy = LatencyProxy(host, port, args.latency).start()
    opts = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "aws_region": "us-east-1",
            "aws_endpoint": proxy.url, "allow_http": "true"}
    uri = f"s3://{BUCKET}/t.lance"
    print(f"{args.rows} rows, {args.latency * 1000:.0f} ms per request, median of {args.runs} after a warm-up\n")
    print("| operation | pylance | requests | peak | lance_duck | requests | peak | MB ld/pl | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    only = set(args.only.split(",")) if args.only else None
    for op, fns in operations(uri, opts, int(args.rows * 0.999)).items():
        if only and op not in only:
            continue
        res = {}
        for name in ("pylance", "lance_duck"):
            fns[name]()     # warm-up
            times = []
            for _ in range(args.runs):
                proxy.reset()
                t0 = time.perf_counter()
                fns[name]()
                times.append(time.perf_counter() - t0)
                stats = proxy.reset()
            res[name] = (statistics.median(times), stats)
        (tp, sp), (tl, sl) = res["pylance"], res["lance_duck"]
        print(f"| {op} | {tp:.3f} s | {sp.summary()} | {sp.peak_in_flight} | {tl:.3f} s | {sl.summary()} | "
              f"{sl.peak_in_flight} | {sl.bytes_out / 1e6:.1f}/{sp.bytes_out / 1e6:.1f} | {tl / tp:.2f} |",
              flush=True)
    proxy.stop()
    srv.stop()


if __name__ == "__main__":
    main()
