"""``lance_duck.sql("SELECT count(*) FROM <ref> WHERE ...")`` is counted by lance_duck -- from exact
BTREE / BITMAP indices alone when they answer the whole filter -- when the WHERE translates with
DuckDB's meaning (``integrations/duckdb/count.py``); other WHEREs run on DuckDB as before.

Oracle: DuckDB's count over the Arrow table pylance reads at the same version. Histories make index
coverage partial (an append after the indices, deletes, an update), with and without stable row ids.
"""
from __future__ import annotations

import warnings

import duckdb
import pyarrow as pa
import pytest
import sqlglot

import lance_duck
from lance_duck.integrations.duckdb.count import count_filter

from ..index.test_index_scan import data_bytes  # noqa: F401  (fixture)

lance = pytest.importorskip("lance")


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "small": pa.array([None if i % 17 == 0 else (i % 200) - 100 for i in ids], pa.int8()),
        "cat": pa.array([None if i % 23 == 0 else f"c{i % 9}" for i in ids]),
        "amount": pa.array([float("nan") if i % 31 == 0 else i * 0.5 for i in ids]),
    })


def make_history(path: str, stable: bool) -> str:
    """1 write, 2-4 indices (BTREE id, BITMAP cat, BTREE small), 5 append, 6 delete, 7 update."""
    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(_rows(0, 9_000), path, max_rows_per_file=3_000, enable_stable_row_ids=stable)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("small", "BTREE")
    ds.insert(_rows(9_000, 1_000))
    ds.delete("id % 13 = 4 OR (id >= 2000 AND id < 2100)")
    ds.update({"cat": "'moved'"}, "id % 101 = 7")
    return path


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "stable"])
def history(request, tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("count_where") / "t.lance"), request.param)


WHERES = [
    "id = 1234", "1234 = id", "id <> 5", "id < 100", "id >= 9990", "id BETWEEN 1990 AND 2110",
    "id IN (3, 4, 2050, 9500, 99999)", "id NOT IN (1, 2, 3)", "cat = 'c3'", "cat IN ('c1', 'moved')",
    "cat IS NULL", "cat IS NOT NULL", "small = -7", "small NOT IN (-100, 5)", "small IS NULL",
    "small = 1000", "(id < 500 OR id > 9500) AND cat = 'c2'", "t.id = 77 OR t.cat = 'moved'",
    "ID = 42", "NOT (small IS NULL)",
    # not translated: DuckDB counts
    "id = '5'", "amount > 100", "id + 1 = 5", "lower(cat) = 'c3'", "id = 5.0", "small IN (1, NULL)",
]


@pytest.fixture(scope="module")
def oracle_tables(history) -> dict[int, pa.Table]:
    """pylance's reading of each version from 4 on, read once for every WHERE of the matrix."""
    return {v: lance.dataset(history, version=v).to_table() for v in range(4, lance.dataset(history).version + 1)}


@pytest.mark.parametrize("where", WHERES)
def test_count_with_where_equals_duckdb_over_the_arrow_table_at_every_version(history, oracle_tables, where):
    con = duckdb.connect()
    for v, table in oracle_tables.items():
        oracle = duckdb.connect()
        # copied into DuckDB's own storage: DuckDB 1.x pushes `amount > 100` into a registered Arrow
        # table as a pyarrow Expression, evaluated there in Arrow's meaning (the NaN rows left out)
        oracle.register("arrow_t", table)
        oracle.execute("CREATE TABLE t AS SELECT * FROM arrow_t")
        want = oracle.execute(f"SELECT count(*) FROM t WHERE {where}").fetchall()
        got = lance_duck.sql(f"SELECT count(*) FROM '{history}' AT (VERSION => {v}) t WHERE {where}", con).fetchall()
        assert got == want, (v, where)


@pytest.mark.parametrize("where", ["id = 1234", "id BETWEEN 1990 AND 2110", "cat = 'c3'",
                                   "id IN (3, 4, 2050, 3001) AND cat = 'c4'", "small IS NULL"])
def test_an_exact_index_answers_the_count_without_reading_data(history, data_bytes, where):  # noqa: F811
    con = duckdb.connect()
    version = 4                                   # every row indexed: BTREE / BITMAP answer it all
    n = lance_duck.sql(f"SELECT count(*) AS n FROM '{history}' AT (VERSION => {version}) WHERE {where}", con)
    assert n.columns == ["n"]
    assert n.fetchall() == [(lance.dataset(history, version=version).count_rows(filter=where),)]
    assert data_bytes["bytes"] == 0, where


@pytest.mark.parametrize("where, translated", [
    ("id = 5", True), ("id = -5 AND cat <> 'x'", True), ("id IN (1, 2)", True), ("x.id = 5", False),
    ("id = '5'", False), ("cat = 5", False), ("amount < 3", False), ("id = 99999999999999999999", False),
    ("id IN (SELECT 1)", False), ("NOT id = 5", False), ("id = 5.5", False), ("nope = 1", False),
])
def test_only_wheres_with_duckdbs_meaning_are_translated(where, translated):
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("amount", pa.float64())])
    tree = sqlglot.parse_one(f"SELECT count(*) FROM t WHERE {where}", read="duckdb")
    assert (count_filter(tree.args["where"], schema, {"t"}) is not None) == translated
