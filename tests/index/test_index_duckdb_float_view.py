"""``lance_duck.sql`` hands top-level comparisons on DOUBLE columns (which DuckDB pushes to no
Arrow scan) to the Lance scan as a filtered view, so that ZONEMAP / BTREE indices answer them;
results stay DuckDB's, with NaN (the greatest value for DuckDB and lance_duck alike), nulls,
-0.0 and infinities in the column, over a table whose index covers part of it (append and
deletes after the index).

Oracle: the same query run by DuckDB over the Arrow table pylance reads (no index involved).
"""
from __future__ import annotations

import math
import warnings

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import sqlglot

import lance_duck
from lance_duck.predicate.compiled import compile_duckdb_sql
from lance_duck.integrations.duckdb.pushdown import comparison_filter, substring_terms

from .conftest import arrow_oracle
from .test_index_scan import data_bytes  # noqa: F401  (fixture)

lance = pytest.importorskip("lance")

N = 60_000


def _rows(start: int, n: int) -> pa.Table:
    k = np.arange(start, start + n)
    amount = k * (250.0 / N) + (k % 7) * 0.01          # increasing with noise: narrow zones
    amount[k % 1_001 == 5] = np.nan
    amount[k == 30_000] = -0.0
    amount[k == 30_001] = np.inf
    amount[k == 30_002] = -np.inf
    valid = k % 997 != 0
    return pa.table({
        "k": pa.array(k, pa.int64()),
        "amount": pa.array(amount, pa.float64(), mask=~valid),
        "b": pa.array((k % 5_000) * 0.5, pa.float64()),
        "f32": pa.array(k * 0.25, pa.float32()),
        "cat": pa.array([f"c{i % 9}" for i in k], pa.string()),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    path = str(tmp_path_factory.mktemp("fview") / "t.lance")
    ds = lance.write_dataset(_rows(0, N), path, max_rows_per_file=20_000)
    ds.create_scalar_index("amount", "ZONEMAP")
    ds.create_scalar_index("b", "BTREE")
    ds.insert(_rows(N, 10_000))                        # not covered by the indices
    ds.delete("k % 13 = 4")
    return path


@pytest.fixture(scope="module")
def oracle(table):
    return arrow_oracle(table)


WHERE = [
    "amount > 230",
    "amount >= 230.5",
    "230 < amount",
    "amount < 0.1",
    "amount <= -0.0",
    "amount = 100.5",
    "amount = 0.1234567890123456789",
    "amount > 123.456789012345678901 AND amount < 124",
    "amount < 12345678901234567890123",
    "amount > -1e300",
    "amount > 1e3",
    "amount > 249.99 AND cat = 'c3'",
    "t.amount >= 10 AND t.amount < 10.5",
    "b = 1234.5",
    "b < 3 AND amount > 200",
    "AMOUNT > 240",
    # not handed to the view (DuckDB filters): OR, a float32 column, a non-literal, NOT
    "amount > 240 OR k = 3",
    "f32 > 100.25",
    "amount > k",
    "NOT amount > 5",
    "amount > 'nan'::double",
]


@pytest.mark.parametrize("where", WHERE)
def test_sql_with_float_comparisons_equals_duckdb_over_the_arrow_table(table, oracle, where):
    q = "SELECT k, amount FROM {} WHERE " + where + " ORDER BY k"
    got = lance_duck.sql(q.format(f"'{table}' AS t")).fetchall()
    want = oracle.execute(q.format("t")).fetchall()
    assert len(got) == len(want)
    assert all(a[0] == b[0] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1]))) for a, b in zip(got, want))
    assert lance_duck.sql(f"SELECT count(*) FROM '{table}' t WHERE {where}").fetchall() == [(len(want),)]


def test_nan_rows_pass_greater_than_in_the_view_as_in_duckdb(table, oracle):
    q = "SELECT count(*) FROM {} WHERE amount > 1e9"
    n = lance_duck.sql(q.format(f"'{table}'")).fetchall()
    assert n == oracle.execute(q.format("t")).fetchall() and n[0][0] > 50   # the NaN rows (and +inf)


def _view_filter(where: str, schema: pa.Schema) -> str | None:
    found = substring_terms(sqlglot.parse_one(f"SELECT * FROM t WHERE {where}", read="duckdb"))
    return None if found is None else comparison_filter(schema, found[1])


def test_only_top_level_double_comparisons_with_number_literals_become_view_filters(table):
    schema = lance.dataset(table).schema
    assert _view_filter("amount > 230", schema) == "`amount` > 230.0"
    assert _view_filter("230.5 >= amount AND cat = 'x'", schema) == "`amount` <= 230.5"
    assert _view_filter("amount = -2.5e-3", schema) == "`amount` = -0.0025"
    # a decimal of more than 15 digits may become another DOUBLE in DuckDB: a loosened bound
    v = 0.1234567890123456789
    assert _view_filter("amount > 0.1234567890123456789", schema) == f"`amount` >= {v - v * 2.0 ** -40 - 1e-300!r}"
    assert _view_filter("amount = 1.00000000000000001", schema).count(" AND ") == 1
    for where in ["amount > 240 OR k = 3", "f32 > 1", "k > 5", "amount > k", "NOT amount > 5", "cat > 'a'",
                  "amount > 'nan'::double", "amount > 1e400"]:
        assert _view_filter(where, schema) is None, where


@pytest.mark.parametrize("where", ["amount < 5", "b = 1234.5"])   # (NaN in every zone: > keeps them all)
def test_sql_float_comparisons_reach_the_index_and_read_a_fraction_of_the_data(table, data_bytes, where):  # noqa: F811
    con = duckdb.connect()
    lance_duck.sql(f"SELECT k, amount, b FROM '{table}'", con).to_arrow_table()
    full_bytes = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    got = lance_duck.sql(f"SELECT k, amount, b FROM '{table}' WHERE {where}", con).to_arrow_table()
    assert 0 < got.num_rows < 20_000
    assert data_bytes["bytes"] < 0.5 * full_bytes, (data_bytes["bytes"], full_bytes)
    ds = lance_duck.dataset(table)
    view = compile_duckdb_sql(_view_filter(where, ds.schema), ds.schema)    # as the view compiles it
    assert ds.filter(view).scanner()._index_selections() is not None
