"""SQL string filters and SQL column expressions (through lance_duck.predicate), against pylance."""
from __future__ import annotations

import pytest

import lance
from .conftest import assert_tables_equal
from lance_duck.scan import dataset

SQL_FILTERS = [
    "id < 100",
    "id >= 300 AND id <= 700",
    "id BETWEEN 5 AND 25",
    "id IN (1, 2, 3, 107)",
    "id NOT IN (1, 2, 3)",
    "s.a = 5",
    "name LIKE 'abc1%'",
    "name IS NULL",
    "name IS NOT NULL AND u > 250",
    "d = DATE '2024-01-05'",
    "ts > TIMESTAMP '2024-02-01 00:00:00'",
    "dec = CAST(1.50 AS DECIMAL(10,2))",
    "lower(name) = 'abc3'",
    "array_has(l, 5)",
    "flag",
    "NOT flag AND id < 50",
    "x IS NULL OR id = 3",
    "extra IS NULL AND id < 10",
    "_rowid < 10",
]


@pytest.fixture(scope="module")
def pair(table_path):
    return dataset(table_path), lance.dataset(table_path)


@pytest.mark.parametrize("sql", SQL_FILTERS)
def test_sql_filter_equals_pylance(pair, sql):
    ds, ref = pair
    assert 0 < ref.count_rows(filter=sql) < ref.count_rows(), f"{sql!r} must select some rows, not all"
    assert_tables_equal(ds.to_table(filter=sql), ref.to_table(filter=sql))
    assert ds.count_rows(filter=sql) == ref.count_rows(filter=sql)
    cols = ["ls", "id"]
    assert_tables_equal(ds.to_table(columns=cols, filter=sql, limit=7, offset=3),
                        ref.to_table(columns=cols, filter=sql, limit=7, offset=3))


def test_sql_column_expressions_equal_pylance(pair):
    ds, ref = pair
    cols = {"id2": "id * 2", "u": "upper(name)", "sa": "s.a", "ident": "id"}
    assert_tables_equal(ds.to_table(columns=cols, filter="id < 50"), ref.to_table(columns=cols, filter="id < 50"))
