"""The rows a filter keeps, over fragments with deleted rows and without, against pylance and DuckDB."""
from __future__ import annotations

import duckdb
import pytest

import lance
from .conftest import assert_tables_equal
from lance_duck.scan import dataset

# (kept rows: none, a few, most, all) x (conjuncts / an OR over columns / a residual expression)
FILTERS = [
    "id < 0",
    "id % 97 = 3 OR x IS NULL",
    "id >= 5 AND (name IS NULL OR u > 10)",
    "id >= 0 OR name = 'abc1'",
    "u < 299 AND d >= DATE '2024-01-02'",
    "upper(name) <> 'XYZ4'",
]


@pytest.fixture(scope="module")
def pair(table_path):
    return dataset(table_path), lance.dataset(table_path)


@pytest.mark.parametrize("sql", FILTERS)
def test_filter_keeps_the_rows_pylance_keeps(pair, sql):
    ds, ref = pair
    cols = ["id", "name", "u", "dec"]
    assert_tables_equal(ds.to_table(columns=cols, filter=sql), ref.to_table(columns=cols, filter=sql))
    assert ds.count_rows(filter=sql) == ref.count_rows(filter=sql)


def test_duckdb_pushed_filters_equal_duckdb_over_pylance(pair):
    ds, ref = pair
    con = duckdb.connect()
    con.register("ours", ds)
    con.register("theirs", ref.to_table())
    for where in ("id >= 3 AND u < 250", "d <= DATE '2024-12-01'", "id % 5 = 1 AND name IS NOT NULL"):
        q = "SELECT id, name, dec, sum(u) OVER () FROM {} WHERE " + where + " ORDER BY id"
        assert con.execute(q.format("ours")).fetchall() == con.execute(q.format("theirs")).fetchall()
