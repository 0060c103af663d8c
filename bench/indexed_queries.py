"""Selective DuckDB queries over an indexed table: lance_duck vs pylance's dataset.

    python bench/indexed_queries.py [--rows 1000000] [--runs 15] [--dir /tmp/ld_bench] [--stages]

Writes (once, cached in --dir) a table with pylance (four fragments, a delete applied) and builds
a BTREE on ``id``, a BITMAP on ``category`` and a ZONEMAP on ``amount``. Each query runs through
DuckDB over ``lance_duck.dataset`` and over ``lance.dataset``, interleaved (A, B, A, B ...) after
one warm-up run each; prints the median wall and process-CPU time of each and the ratios
lance_duck / pylance (CPU is steadier on a loaded machine), and checks both return the same rows.
Then the bytes the point lookup fetches from data files (counted at the io layer), cold (no file
metadata cached) and repeated, against the bytes of the ``id`` column. ``--stages``: the index
search of each query alone (``plan_index_selections``), cold (index caches emptied, a fresh
dataset) and warm (median of 2,000 runs, or 200 for the dense ones).
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import TABLE_HEADER, report_pair, run_once, write_table  # noqa: E402

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
        write_table(path, make_table(n))
        ds = lance.dataset(path)
        ds.create_scalar_index("id", "BTREE")
        ds.create_scalar_index("category", "BITMAP")
        ds.create_scalar_index("amount", "ZONEMAP")
    return path


def column_bytes(path: str, name: str) -> int:
    """Bytes of one column's pages over every data file of the table."""
    import lance_duck
    from lance_duck.file.container import V2Container
    snap = lance_duck.dataset(path)._snapshot
    field = next(f for f in snap.schema.fields if f.name == name)
    total = 0
    for frag in snap.fragments:
        ref = frag.file_for_field(field.id)
        f = snap.io.open_input(ref.path, ref.size)
        cm = V2Container.open(f, f.read_tail(1 << 16)).column(ref.column_of(field.id))
        total += sum(int(s) for p in cm.pages for s in p.buffer_sizes)
    return total


def fetched_bytes(path: str, sql: str) -> tuple[int, int]:
    """Data-file bytes one query fetches: cold (empty metadata cache, fresh dataset), then repeated."""
    import lance_duck
    from lance_duck.file.container import METADATA_CACHE
    from lance_duck.io import fs
    counted = [0]
    orig = fs.InputFile.read_ranges

    def counting(self, ranges):
        if "/data/" in self.path:
            counted[0] += sum(n for _, n in ranges)
        return orig(self, ranges)

    fs.InputFile.read_ranges = counting
    METADATA_CACHE.clear()
    try:
        con = duckdb.connect()
        con.register("T", lance_duck.dataset(path))
        con.sql(sql).fetchall()
        first, counted[0] = counted[0], 0
        con.sql(sql).fetchall()
        return first, counted[0]
    finally:
        fs.InputFile.read_ranges = orig


#: each query's filter as a SQL string (for --stages)
FILTERS = {
    "point lookup": "id = 612345",
    "5-value IN": "id in (17, 250001, 499999, 612345, 987654)",
    "1000-row range": "id >= 400000 AND id <= 400999",
    "category equality": "category = 'cat_7'",
    "amount > 230": "amount > 230",
}


def index_search_stages(path: str) -> None:
    """Cold and warm wall time of each query's index search alone."""
    import time

    import lance_duck
    from lance_duck.index.files import CACHE
    from lance_duck.index.search import plan_index_selections
    print("\n| query | index search cold | warm (median) | rows selected |\n|---|---|---|---|")
    for name, flt in FILTERS.items():
        CACHE.clear()
        sc = lance_duck.dataset(path).scanner(filter=flt)
        args = (sc._snapshot, sc._filter.conjuncts, sc._fragments)
        t0 = time.perf_counter_ns()
        sel = plan_index_selections(*args)
        cold = time.perf_counter_ns() - t0
        times = []
        for _ in range(2000 if sum(len(v) for v in sel.values()) < 10_000 else 200):
            t0 = time.perf_counter_ns()
            plan_index_selections(*args)
            times.append(time.perf_counter_ns() - t0)
        print(f"| {name} | {cold / 1e3:.0f} us | {float(np.median(times)) / 1e3:.1f} us | "
              f"{sum(len(v) for v in sel.values())} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    ap.add_argument("--stages", action="store_true", help="also time each query's index search alone")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    import lance

    import lance_duck
    path = prepare(a.dir, a.rows)
    ours, theirs = duckdb.connect(), duckdb.connect()
    ours.register("T", lance_duck.dataset(path))
    theirs.register("T", lance.dataset(path))
    print(f"table: {path} ({a.rows} rows, BTREE id, BITMAP category, ZONEMAP amount); median of {a.runs}")
    print(TABLE_HEADER)
    for name, sql in QUERIES.items():
        report_pair(name, lambda: run_once(ours, sql), lambda: run_once(theirs, sql), a.runs)
    id_bytes = column_bytes(path, "id")
    first, again = fetched_bytes(path, QUERIES["point lookup"])
    print(f"\npoint lookup, data-file bytes fetched (all columns): {first} cold "
          f"({first / id_bytes:.2%} of the id column's {id_bytes}), {again} repeated ({again / id_bytes:.2%})")
    if a.stages:
        index_search_stages(path)


if __name__ == "__main__":
    main()
