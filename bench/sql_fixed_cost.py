"""The fixed cost of ``lance_duck.sql``: ours vs DuckDB over pylance, and where our time goes.

    python bench/sql_fixed_cost.py [--runs 21] [--dir /tmp/ld_bench_sql] [--rows 1000000]

Uses ``bench/indexed_queries.py``'s table (BTREE on ``id``, BITMAP on ``category``, ZONEMAP on
``amount``; written once into --dir). Four queries -- a plain ``count(*)``, a point lookup, a
``count(*)`` with an indexed ``WHERE``, and a time-travel query (``AT (VERSION => 4)``) -- each
timed, interleaved
(A, B, C, D, A, ...) after a warm-up, medians:

* ``lance_duck.sql``: the SQL text with the table's path, every call (parse, resolve the
  version, open, register, run);
* DuckDB over pylance, opened per call: ``lance.dataset(path[, version])``, ``register``, query;
* DuckDB over a pylance dataset registered once (the query alone);
* DuckDB over a lance_duck dataset registered once (the query alone).

Ratios are against pylance opened per call (the like-for-like fixed cost) and registered once.
Then the stages of one ``lance_duck.sql`` call, timed apart with ``perf_counter_ns`` (medians):
sqlglot parse, the rest of the rewrite (references found and replaced, SQL generated), manifest
resolution (the version listing and the latest manifest read), the dataset open (snapshot and
``LanceDataset``), DuckDB registration, and the query on DuckDB.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from typing import Callable

import duckdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import rounded  # noqa: E402
from indexed_queries import prepare  # noqa: E402

QUERIES = {
    "plain count(*)": ("select count(*) from {T}", None),
    "point lookup": ("select * from {T} where id = 612345", None),
    "count, indexed WHERE": ("select count(*) from {T} where id between 400000 and 400999", None),
    "time travel (v4)": ("select * from {T} where id = 612345", 4),
}


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    ts = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t)
    return statistics.median(ts) / 1e6


def sources(path: str, sql: str, version: int | None) -> dict[str, Callable[[], list]]:
    import lance

    import lance_duck
    at = "" if version is None else f" AT (VERSION => {version})"
    ours_sql = sql.format(T=f"'{path}'{at}")
    plain = sql.format(T="T")
    con_ours, con_open, con_reg, con_ld = (duckdb.connect() for _ in range(4))
    con_reg.register("T", lance.dataset(path, version=version))
    con_ld.register("T", lance_duck.dataset(path, version=version))

    def pylance_open() -> list:
        con_open.register("T", lance.dataset(path, version=version))
        return con_open.sql(plain).fetchall()

    return {
        "lance_duck.sql": lambda: lance_duck.sql(ours_sql, con_ours).fetchall(),
        "pylance, opened": pylance_open,
        "pylance, registered": lambda: con_reg.sql(plain).fetchall(),
        "lance_duck, registered": lambda: con_ld.sql(plain).fetchall(),
    }


def compare(path: str, runs: int) -> None:
    names = ["lance_duck.sql", "pylance, opened", "pylance, registered", "lance_duck, registered"]
    print(f"{'query':<22}" + "".join(f"{n:>24}" for n in names) + f"{'sql/opened':>12}{'sql/registered':>16}")
    for qname, (sql, version) in QUERIES.items():
        srcs = sources(path, sql, version)
        results = {n: rounded(f()) for n, f in srcs.items()}   # warm-up, and the same rows from each
        if len({repr(r) for r in results.values()}) != 1:
            raise SystemExit(f"{qname}: results differ: {results}")
        times: dict[str, list[int]] = {n: [] for n in srcs}
        for _ in range(runs):
            for n, f in srcs.items():
                t = time.perf_counter_ns()
                f()
                times[n].append(time.perf_counter_ns() - t)
        med = {n: statistics.median(ts) / 1e6 for n, ts in times.items()}
        print(f"{qname:<22}" + "".join(f"{med[n]:>21.2f} ms" for n in names)
              + f"{med[names[0]] / med[names[1]]:>11.2f}x{med[names[0]] / med[names[2]]:>15.2f}x")


def stages(path: str, runs: int) -> None:
    """One lance_duck.sql call of the point lookup, stage by stage (the calls it makes, made apart)."""
    import sqlglot

    from lance_duck.integrations import duckdb as ddb
    from lance_duck.integrations.duckdb.rewrite import rewrite
    from lance_duck.integrations.duckdb.scan_errors import watched
    from lance_duck.integrations.duckdb.statements import template as _template
    from lance_duck.integrations.duckdb.api import _pinned_name
    from lance_duck.io.fs import open_io
    from lance_duck.scan.dataset import LanceDataset
    from lance_duck.table.manifest import read_manifest
    from lance_duck.table.snapshot import Snapshot
    from lance_duck.table.versions import VERSIONS_DIR, list_versions

    query = QUERIES["point lookup"][0].format(T=f"'{path}'")
    con = duckdb.connect()
    io, root = open_io(path, None)

    def resolution():
        entries = list_versions(io, root)
        e = entries[-1]
        return read_manifest(io, io.join(root, VERSIONS_DIR, e.name), e.size)

    mf = resolution()
    ds = LanceDataset(Snapshot(path, io, root, None, root, mf))
    rw = rewrite(query, lambda ref: _pinned_name(ref, ds))
    name = next(iter(rw.refs))
    con.register(name, watched(ds))
    parts = {
        "sqlglot parse": lambda: sqlglot.parse(query, read="duckdb"),
        "rewrite (incl. parse)": lambda: rewrite(query, lambda ref: _pinned_name(ref, ds)),
        "manifest resolution": resolution,
        "open (snapshot+dataset)": lambda: LanceDataset(Snapshot(path, io, root, None, root, mf)),
        "ref.open() (all of it)": lambda: ddb.LanceRef(path).open(),
        "ref.cached() (kept table)": lambda: ddb.LanceRef(path).cached(),
        "statement cache hit": lambda: _template(query, lambda name: None),
        "DuckDB register": lambda: con.register(name, watched(ds)),
        "query on DuckDB": lambda: con.sql(rw.sql).fetchall(),
        "lance_duck.sql total": lambda: ddb.sql(query, con).fetchall(),
    }
    for n, f in list(parts.items()):
        try:
            f()
        except AttributeError:          # a build without the caches (session 10)
            del parts[n]
    print("\nstages of one lance_duck.sql point lookup (medians, ms):")
    for n, f in parts.items():
        print(f"  {n:<26}{_median_ms(f, runs):8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--dir", default="/tmp/ld_bench_sql")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    path = prepare(a.dir, a.rows)
    print(f"table: {path}; medians of {a.runs}, interleaved; load average {os.getloadavg()[0]:.1f}")
    compare(path, a.runs)
    stages(path, a.runs)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
