"""One column whose pages mix page dictionaries and plain values in the same data file, with deletions.

pylance 2.2 writes a 64-bit integer column's low-cardinality pages with page dictionaries and its
other pages plain, so one scan task concatenates both kinds and then drops the deleted rows (the
``sum(i)`` anchor of the DuckDB benchmark). Pinned: every read equals pylance's (nulls included,
row order included) through the dataset, a filter, a take and ``lance_duck.sql``, and the mixed-page
path really ran.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.trace import decode_trace

from .conftest import assert_tables_equal

import lance  # a test dependency: missing, it must fail, not skip

N = 40_000


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    r = np.random.default_rng(32)
    half = N // 2
    # low-cardinality first half (dictionary pages), random second half (a plain page)
    i = np.concatenate([r.integers(0, 40, half) * 1_000_003, r.integers(-10**12, 10**12, half)]).astype(np.int64)
    n = pa.array(np.concatenate([r.integers(0, 30, half), r.integers(-10**12, 10**12, half)]).astype(np.int64),
                 mask=r.random(N) < 0.05)
    t = pa.table({"id": np.arange(N), "i": i, "n": n})
    p = str(tmp_path_factory.mktemp("mixed_dict_pages") / "t.lance")
    batches = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=5000))
    lance.write_dataset(batches, p, data_storage_version="2.2", data_cache_bytes=4096)
    lance.dataset(p).delete("id % 7 = 3 or (id >= 19990 and id < 20100)")
    return p


def test_mixed_pages_with_deletions_equal_pylance(table):
    with decode_trace() as t:
        got = lance_duck.dataset(table).to_table(columns=["id", "i", "n"])
    assert_tables_equal(got, lance.dataset(table).to_table(columns=["id", "i", "n"]))
    assert "path:mixed-dictionary-pages" in t.names()       # dictionary and plain pages in one task


@pytest.mark.parametrize("flt", ["i > 20000000", "n is null", "id between 15000 and 25000"])
def test_mixed_pages_filtered_equal_pylance(table, flt):
    got = lance_duck.dataset(table).to_table(columns=["i", "n"], filter=flt)
    assert_tables_equal(got, lance.dataset(table).to_table(columns=["i", "n"], filter=flt))


def test_mixed_pages_take_equal_pylance(table):
    rows = [0, 3, 17_000, 17_200, 17_201, 34_000]   # positions among the live rows
    got = lance_duck.dataset(table).take(rows, columns=["i", "n"])
    assert_tables_equal(got, lance.dataset(table).take(rows, columns=["i", "n"]))


def test_mixed_pages_sum_through_sql_equals_pylance(table):
    want = lance.dataset(table).to_table(columns=["i", "n"])
    got = lance_duck.sql(f"select sum(i) as s, sum(n) as sn, count(n) as c from '{table}'").fetchall()
    assert got == [(pc.sum(want["i"]).as_py(), pc.sum(want["n"]).as_py(), len(want) - want["n"].null_count)]
