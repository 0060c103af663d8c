"""Selective DuckDB queries over an indexed table: lance_duck vs pylance's dataset.

    python bench/indexed_queries.py [--rows 1000000] [--runs 15] [--dir /tmp/ld_bench]

Writes (once, cached in --dir) a table with pylance (four fragments, a delete applied) and builds
a BTREE on ``id``, a BITMAP on ``category`` and a ZONEMAP on ``amount``. Each query runs through
DuckDB over ``lance_duck.dataset`` and over ``lance.dataset``, interleaved (A, B, A, B ...) after
one warm-up run each; prints the median wall and process-CPU time of each and the ratios
lance_duck / pylance (CPU is steadier on a loaded machine), and checks both return the same rows.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
import warnings

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

QUERIES = {
    "point lookup": "select * from T where id = 612345",
    "5-value IN": "select * from T where id in (17, 250001, 499999, 612345, 987654) order by id",
    "1000-row range": "select count(*), sum(amount) from T where id between 400000 and 400999",
    "category equality": "select count(*), sum(amount) from T where category = 'cat_7'",
    "amount > 230": "select count(*), max(id) from T where amount > 230",
}


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "category": pa.array(np.char.add("cat_", rng.integers(0, 20, n).astype(str))),
        # mostly increasing with noise: zones of amount are narrow, as in time-ordered data
        "amount": pa.array(np.arange(n) * (250.0 / n) + rng.random(n)),
        "note": pa.array(np.char.add("note ", rng.integers(0, 1_000_000, n).astype(str))),
    })


def prepare(d: str, n: int) -> str:
    import lance
    path = os.path.join(d, f"indexed_{n}.lance")
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        ds = lance.write_dataset(make_table(n), path, max_rows_per_file=(n + 3) // 4)
        ds.delete("id % 1000 = 3")
        ds.create_scalar_index("id", "BTREE")
        ds.create_scalar_index("category", "BITMAP")
        ds.create_scalar_index("amount", "ZONEMAP")
    return path


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_once(con, sql: str):
    """(wall seconds, process CPU seconds, rows); CPU counts every thread (both readers' pools)."""
    c0, t0 = _cpu(), time.perf_counter()
    rows = con.sql(sql).fetchall()
    return time.perf_counter() - t0, _cpu() - c0, rows


def _rounded(rows) -> list:
    return sorted(tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    import lance

    import lance_duck
    path = prepare(a.dir, a.rows)
    ours, theirs = duckdb.connect(), duckdb.connect()
    ours.register("T", lance_duck.dataset(path))
    theirs.register("T", lance.dataset(path))
    print(f"table: {path} ({a.rows} rows, BTREE id, BITMAP category, ZONEMAP amount); median of {a.runs}")
    print(f"{'query':<20} {'wall ms: lance_duck':>20} {'pylance':>8} {'ratio':>6}   "
          f"{'CPU ms: lance_duck':>19} {'pylance':>8} {'ratio':>6}")
    for name, sql in QUERIES.items():
        r1 = run_once(ours, sql)[2]
        r2 = run_once(theirs, sql)[2]
        if _rounded(r1) != _rounded(r2):
            raise SystemExit(f"{name}: results differ: {r1[:3]} vs {r2[:3]}")
        t_ours, t_theirs = [], []
        for _ in range(a.runs):
            t_ours.append(run_once(ours, sql)[:2])
            t_theirs.append(run_once(theirs, sql)[:2])
        wo, wt = (statistics.median(t[0] for t in ts) for ts in (t_ours, t_theirs))
        co, ct = (statistics.median(t[1] for t in ts) for ts in (t_ours, t_theirs))
        print(f"{name:<20} {wo * 1e3:20.2f} {wt * 1e3:8.2f} {wo / wt:5.2f}x   "
              f"{co * 1e3:19.2f} {ct * 1e3:8.2f} {co / max(ct, 1e-9):5.2f}x")


if __name__ == "__main__":
    main()
