"""A filter over a task whose only other selection is its deleted rows: the filter's columns are
evaluated whole and the deleted rows cleared from the mask (a count subtracts the deleted rows
that pass). Deleted rows that would pass the filter must neither be counted nor returned; a filter
that must see live rows only (one that could fail on a deleted row's value) keeps doing so.
Compared with pylance: counts, scans and DuckDB over the dataset."""
from __future__ import annotations

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck

from .conftest import assert_tables_equal

N = 30_000


@pytest.fixture(scope="module", params=["2.0", "2.2", "2.3"])
def table(request, tmp_path_factory) -> str:
    rng = np.random.default_rng(5)
    t = pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "cat": pa.array(np.char.add("c", (np.arange(N) % 7).astype(str))),          # page dictionaries
        "f": pa.array(np.where(np.arange(N) % 97 == 0, np.nan, rng.random(N))),
        "k": pa.array(np.arange(N) % 5, pa.int32()),
        "s": pa.array([None if i % 13 == 0 else f"s{i}" for i in range(N)]),
    })
    p = str(tmp_path_factory.mktemp(f"fdel_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=12_000, data_storage_version=request.param)
    # deleted rows that pass every filter below, spread over all three fragments
    lance.dataset(p).delete("(cat = 'c3' and id % 4 = 1) or (k = 2 and id % 3 = 0) or id % 10 = 9")
    return p


FILTERS = [
    "cat = 'c3'",
    "cat != 'c3'",
    "cat in ('c1', 'c3')",
    "k = 2",
    "k = 2 and cat = 'c2'",
    "f > 0.5",
    "f is null or f < 0.1",
    "s like 's1%'",
    "id % 10 = 9",          # only deleted rows pass
    "cat = 'c3' or k = 2",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_counts_leave_out_deleted_rows_that_pass(table, flt):
    assert lance_duck.dataset(table).count_rows(flt) == lance.dataset(table).count_rows(flt)


@pytest.mark.parametrize("flt", FILTERS)
@pytest.mark.parametrize("columns", [["id"], ["id", "cat", "f"], ["s"]])
def test_scans_leave_out_deleted_rows_that_pass(table, flt, columns):
    got = lance_duck.dataset(table).to_table(columns=columns, filter=flt)
    want = lance.dataset(table).to_table(columns=columns, filter=flt)
    assert_tables_equal(got, want)


# `f > 0.5` holds for NaN in DuckDB's meaning: DuckDB 1.x pushes it as a pyarrow Expression, read
# in DuckDB's meaning all the same (lance_duck/scan/duckdb_v1.py)
@pytest.mark.parametrize("where", ["cat = 'c3'", "k = 2", "f > 0.5", "f >= 0.5 and k = 2", "id % 10 = 9"])
def test_duckdb_counts_and_sums_leave_out_deleted_rows(table, where):
    con = duckdb.connect()
    q = f"select count(*), sum(id) from '{table}' where {where}"
    got = lance_duck.sql(q, con).fetchall()
    ref = lance.dataset(table)      # noqa: F841 - read by DuckDB below
    want = con.sql(q.replace(f"'{table}'", "ref")).fetchall()
    assert got == want
