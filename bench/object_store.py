"""lance_duck vs pylance on a local S3 endpoint with latency added to every request.

    python bench/object_store.py [--rows 4000000] [--versions 100] [--latency 0.02] [--runs 3]
                                 [--dir /tmp/ld_bench] [--only "count(*);LIMIT 10"] [--storage 2.2]

Starts, in a child process (so that serving bytes does not compete with the readers for this
process's GIL), moto's S3 server on 127.0.0.1 and ``tests/io/latency_proxy.py`` in front of it:
every GET / HEAD / LIST waits ``--latency`` seconds and is counted by kind, with the bytes returned
and the peak number of requests in flight. Uploads the benchmark table of ``duckdb_queries.py``
(4 fragments, deletions) and a ``--versions``-version history (``versions.py``), both written once
and cached in --dir.

Operations: open latest, open an old version (version 1 of the history), ``versions()`` of the
history, the seven DuckDB queries, a 1000-row ``take`` of 3 columns, and one Spark-sized partition
(one fragment, 4 columns); and, each in a fresh process, the import and first open (then the open
and a small filtered scan) for pylance, lance_duck with pylance's options (pyarrow's S3 client) and
lance_duck with the same store as s3fs arguments (the s3fs path). Each run opens the datasets afresh (per-process caches stay warm after
the warm-up, as pylance's do); pylance and lance_duck runs are interleaved; medians of --runs.
Requests are those of the last run. Results are checked equal. ``--storage`` picks the data
file format of the benchmark table (2.0 measures the 2.0 reader's request plan).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

import duckdb

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from duckdb_queries import QUERIES, prepare  # noqa: E402
from versions import prepare as prepare_history  # noqa: E402

BUCKET = "lance-duck-bench"


def upload(endpoint: str, local: str, key: str) -> None:
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                      region_name="us-east-1")
    try:
        s3.create_bucket(Bucket=BUCKET)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    for d, _, files in os.walk(local):
        for f in files:
            p = os.path.join(d, f)
            s3.upload_file(p, BUCKET, key + "/" + os.path.relpath(p, local))


def _serve(conn, latency: float) -> None:
    """Child process: moto + latency proxy; answers "url", "reset" (-> Stats) and "stop"."""
    import logging
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer

    from tests.io.latency_proxy import LatencyProxy
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    proxy = LatencyProxy(host, port, latency).start()
    conn.send((f"http://{host}:{port}", proxy.url))
    while True:
        cmd = conn.recv()
        if cmd == "reset":
            conn.send(proxy.reset())
        else:
            break
    proxy.stop()
    srv.stop()
    conn.send("stopped")


class Endpoint:
    """moto + latency proxy in a child process."""

    def __init__(self, latency: float):
        self._conn, child = mp.Pipe()
        self._proc = mp.get_context("spawn").Process(target=_serve, args=(child, latency), daemon=True)
        self._proc.start()
        self.direct, self.url = self._conn.recv()

    def reset(self):
        self._conn.send("reset")
        return self._conn.recv()

    def stop(self) -> None:
        self._conn.send("stop")
        self._conn.recv()
        self._proc.join(10)


def _rounded(row: tuple) -> str:
    """A result row with floats to 9 significant digits (sums in another order differ in the last bits)."""
    return repr(tuple(float(f"{v:.9g}") if isinstance(v, float) else v for v in row))


def operations(uri: str, history: str, opts: dict, n: int, ld_opts: dict | None = None) -> dict:
    """{operation: {reader: callable}}; ``n`` = live rows of the table; ``ld_opts``: lance_duck's
    options when not pylance's (``--s3fs``)."""
    import lance

    import lance_duck
    import lance_duck.scan as lds

    def duck(make):
        def run(sql):
            con = duckdb.connect()
            con.register("T", make())
            return con.sql(sql).fetchall()
        return run

    ld_opts = opts if ld_opts is None else ld_opts
    readers = {
        "lance_duck": (lambda u, **kw: lance_duck.dataset(u, storage_options=ld_opts, **kw),
                       duck(lambda: lds.dataset(uri, storage_options=ld_opts))),
        "pylance": (lambda u, **kw: lance.dataset(u, storage_options=opts, **kw),
                    duck(lambda: lance.dataset(uri, storage_options=opts))),
    }
    rows = list(range(0, n, max(1, n // 1000)))[:1000]
    ops: dict = {}
    for name, (open_, sql) in readers.items():
        ops.setdefault("open latest", {})[name] = lambda o=open_: o(uri).version
        ops.setdefault("open old version (1 of history)", {})[name] = \
            lambda o=open_: o(history, version=1).count_rows()
        ops.setdefault("versions() of history", {})[name] = \
            lambda o=open_: [v["version"] for v in o(history).versions()]
        for q, text in QUERIES.items():
            ops.setdefault(q, {})[name] = lambda s=sql, t=text: sorted(map(_rounded, s(t)))
        ops.setdefault("take 1000 rows, 3 cols", {})[name] = \
            lambda o=open_: o(uri).take(rows, columns=["id", "f", "cat"]).to_pylist()
        ops.setdefault("one partition (1 fragment, 4 cols)", {})[name] = \
            lambda o=open_: o(uri).get_fragments()[1].to_table(columns=["id", "i", "f", "cat"]).num_rows
    return ops


FRESH = {"lance_duck": "import lance_duck as m", "pylance": "import lance as m"}
#: what a fresh process does after the import: open (and read the version), or open and run a small query
FRESH_BODIES = {
    "open": "ds = m.dataset(U, storage_options=O); v = ds.version",
    "open + query": "ds = m.dataset(U, storage_options=O); v = (ds.version, "
                    "ds.to_table(columns=['id', 'cat'], filter='id < 1000').num_rows)",
}


def s3fs_arguments(opts: dict) -> dict:
    """The same store as s3fs (fsspec) arguments: lance_duck then reads through s3fs, not pyarrow's client."""
    return {"key": opts["aws_access_key_id"], "secret": opts["aws_secret_access_key"],
            "endpoint_url": opts["aws_endpoint"], "client_kwargs": {"region_name": opts["aws_region"]}}


def fresh_open(name: str, uri: str, opts: dict, profile: bool = False,
               body: str = FRESH_BODIES["open"]) -> tuple[float, float, object]:
    """Import reader ``name`` in a new process and run ``body`` (open ``uri``, maybe a query): (seconds
    of the import and the body, seconds of the body alone, its result). The first open of a process
    pays what later ones find cached (the filesystem object, its client and session, lazy imports:
    lance_duck imports its table and store modules on first use, pylance everything on ``import lance``)."""
    import subprocess
    if profile:
        body = ("import cProfile, pstats; pr = cProfile.Profile(); pr.enable()\n" + body +
                "\npr.disable(); pstats.Stats(pr, stream=sys.stderr).sort_stats('cumtime').print_stats(45)")
    src = (f"import sys, time\nsys.path.insert(0, {ROOT!r})\nt = time.perf_counter()\n{FRESH[name]}\n"
           f"U, O = {uri!r}, {opts!r}\nt0 = time.perf_counter()\n{body}\nt1 = time.perf_counter()\n"
           f"print(t1 - t, t1 - t0, repr(v).replace(' ', ''))")
    # bytecode written and read, as an installed package (and pylance, from site-packages) imports
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300, check=True, env=env)
    if profile:
        print(out.stderr)
    t, t_open, v = out.stdout.split()
    return float(t), float(t_open), v


def fresh_rows(ep: Endpoint, uri: str, opts: dict, runs: int) -> None:
    """The fresh-process rows: pylance, lance_duck with pylance's options (pyarrow's S3 client) and
    lance_duck with s3fs arguments, interleaved, medians of ``runs`` after one warm-up process each."""
    readers = {"pylance": ("pylance", opts), "lance_duck": ("lance_duck", opts),
               "lance_duck via s3fs": ("lance_duck", s3fs_arguments(opts))}
    for what, body in FRESH_BODIES.items():
        got: dict = {k: [] for k in readers}
        for name, o in readers.values():
            fresh_open(name, uri, o, body=body)     # warm-up (bytecode caches, the OS's file cache)
        for _ in range(runs):
            for k, (name, o) in readers.items():
                ep.reset()
                got[k].append(fresh_open(name, uri, o, body=body) + (ep.reset(),))
        med = {k: [statistics.median(x[i] for x in got[k]) for i in (0, 1)] + list(got[k][-1][2:]) for k in got}
        tp, op, vp, sp = med["pylance"]
        for k in ("lance_duck", "lance_duck via s3fs"):
            tl, ol, vl, sl = med[k]
            same = "" if vp == vl else " (RESULTS DIFFER)"
            for row, a, b in ((f"import + first {what} of a process ({k}){same}", tp, tl),
                              (f"first {what} of a process, after the import ({k})", op, ol)):
                print(f"| {row} | {a:.3f} s | {sp.summary()} | {sp.peak_in_flight} | {b:.3f} s | {sl.summary()} | "
                      f"{sl.peak_in_flight} | {sl.bytes_out / 1e6:.1f}/{sp.bytes_out / 1e6:.1f} | {b / a:.2f} | "
                      f"{sl.total() / max(1, sp.total()):.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--versions", type=int, default=100)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    ap.add_argument("--only", default=None, help="operation names separated by ';'")
    ap.add_argument("--storage", default="2.2", help="data file format of the benchmark table")
    ap.add_argument("--s3fs", action="store_true",
                    help="lance_duck reads the operations through s3fs (fsspec arguments), not pyarrow's S3 client")
    ap.add_argument("--profile-fresh-open", action="store_true", help="print a cProfile of lance_duck's first open")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    lp, _ = prepare(args.dir, args.rows, args.storage)
    hp = prepare_history(args.dir, args.versions)
    ep = Endpoint(args.latency)
    table = f"t-{args.storage}.lance"
    upload(ep.direct, lp, table)
    upload(ep.direct, hp, "history.lance")
    opts = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "aws_region": "us-east-1",
            "aws_endpoint": ep.url, "allow_http": "true"}
    print(f"{args.rows} rows (files {args.storage}); {args.versions}-version history; "
          f"{args.latency * 1000:.0f} ms per request; median of {args.runs} interleaved runs after a warm-up; load average {os.getloadavg()[0]:.1f}\n")
    print("| operation | pylance | requests | peak | lance_duck | requests | peak | MB ld/pl | time ratio "
          "| request ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    only = set(args.only.split(";")) if args.only else None
    uri = f"s3://{BUCKET}/{table}"
    if args.profile_fresh_open:
        fresh_open("lance_duck", uri, opts, profile=True)
    if not only or "first open of a process" in only:
        fresh_rows(ep, uri, opts, args.runs)
    ops = operations(uri, f"s3://{BUCKET}/history.lance", opts, int(args.rows * 0.999),
                     s3fs_arguments(opts) if args.s3fs else None)
    for op, fns in ops.items():
        if only and op not in only:
            continue
        results = {name: fn() for name, fn in fns.items()}      # warm-up, and the answers compared
        if results["lance_duck"] != results["pylance"]:
            print(f"| {op} | RESULTS DIFFER | | | | | | | | |", flush=True)
            continue
        times: dict = {name: [] for name in fns}
        stats: dict = {}
        for _ in range(args.runs):
            for name in ("pylance", "lance_duck"):
                ep.reset()
                t0 = time.perf_counter()
                fns[name]()
                times[name].append(time.perf_counter() - t0)
                stats[name] = ep.reset()
        (tp, sp), (tl, sl) = [(statistics.median(times[k]), stats[k]) for k in ("pylance", "lance_duck")]
        print(f"| {op} | {tp:.3f} s | {sp.summary()} | {sp.peak_in_flight} | {tl:.3f} s | {sl.summary()} | "
              f"{sl.peak_in_flight} | {sl.bytes_out / 1e6:.1f}/{sp.bytes_out / 1e6:.1f} | {tl / tp:.2f} | "
              f"{sl.total() / max(1, sp.total()):.2f} |", flush=True)
    ep.stop()


if __name__ == "__main__":
    main()
