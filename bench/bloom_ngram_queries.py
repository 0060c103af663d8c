"""Selective queries answered with BLOOMFILTER and NGRAM indices: lance_duck vs pylance.

    python bench/bloom_ngram_queries.py [--rows 1000000] [--runs 15] [--dir /tmp/ld_bench]

Writes (once, cached in --dir) a table with pylance (four fragments, a delete applied): ``key`` a
random permutation (every page spans all values: only the bloom filter can skip), ``note`` text;
a BLOOMFILTER on ``key`` and an NGRAM on ``note``. Bloom queries run through DuckDB (it pushes
``=`` / ``IN``); substring queries through ``to_table(filter=...)`` (DuckDB does not push LIKE or
contains to a dataset). Each pair runs interleaved after one warm-up; medians of wall and CPU
time, ratios lance_duck / pylance, and both must return the same rows. The "(sql)" rows: the
substring query through ``lance_duck.sql`` (the WHERE reaches the NGRAM index) vs DuckDB over
the registered pylance dataset (nothing pushed: a full scan).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from _common import TABLE_HEADER, cpu_seconds, report_pair, run_once  # noqa: E402

import lance_duck  # noqa: E402  (this checkout's, by the path above)

SQL = {
    "bloom point": "select * from T where key = 612345",
    "bloom 5-value IN": "select * from T where key in (17, 250001, 499999, 612345, 987654) order by key",
}
#: Substring queries through SQL: lance_duck.sql hands the WHERE's LIKE / contains to the scan
#: (NGRAM); DuckDB over a registered pylance dataset pushes neither, so pylance scans everything.
SQL_SUBSTRING = {
    "ngram LIKE (sql)": "select * from {} where note LIKE '%word 98765_ x%' order by key",
    "ngram contains (sql)": "select * from {} where contains(note, 'word 612345 ')",
}
FILTERS = {
    "ngram contains": "contains(note, 'word 612345 ')",
    "ngram LIKE": "note LIKE '%word 98765_ x%'",
}


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    key = rng.permutation(n).astype(np.int64)
    return pa.table({
        "key": pa.array(key),
        "amount": pa.array(rng.random(n) * 250),
        "note": pa.array(np.char.add(np.char.add("note word ", key.astype(str)), " x")),
    })


def prepare(d: str, n: int) -> str:
    import lance
    path = os.path.join(d, f"bloom_ngram_{n}.lance")
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        ds = lance.write_dataset(make_table(n), path, max_rows_per_file=(n + 3) // 4)
        ds.delete("key % 1000 = 3")
        ds.create_scalar_index("key", "BLOOMFILTER")
        ds.create_scalar_index("note", "NGRAM")
    return path


def _timed_table(ds, flt: str):
    c0, t0 = cpu_seconds(), time.perf_counter()
    t = ds.to_table(filter=flt)
    return time.perf_counter() - t0, cpu_seconds() - c0, t.to_pylist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    import lance

    path = prepare(a.dir, a.rows)
    mine, ref = lance_duck.dataset(path), lance.dataset(path)
    ours, theirs = duckdb.connect(), duckdb.connect()
    ours.register("T", mine)
    theirs.register("T", ref)
    print(f"table: {path} ({a.rows} rows, BLOOMFILTER key, NGRAM note); median of {a.runs}")
    print(TABLE_HEADER)
    for name, sql in SQL.items():
        report_pair(name + " (DuckDB)", lambda: run_once(ours, sql), lambda: run_once(theirs, sql), a.runs)
    for name, flt in FILTERS.items():
        report_pair(name, lambda: _timed_table(mine, flt), lambda: _timed_table(ref, flt), a.runs)
    sql_con = duckdb.connect()
    for name, sql in SQL_SUBSTRING.items():
        report_pair(name, lambda: _timed_sql(sql_con, sql.format(f"'{path}'")),
                    lambda: run_once(theirs, sql.format("T")), a.runs)


def _timed_sql(con, sql: str):
    c0, t0 = cpu_seconds(), time.perf_counter()
    rows = lance_duck.sql(sql, con).fetchall()
    return time.perf_counter() - t0, cpu_seconds() - c0, rows


if __name__ == "__main__":
    main()
