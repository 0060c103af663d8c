"""``SELECT count(*) ... WHERE`` on a connection whose ``default_collation`` is set (``nocase``) counts
the rows DuckDB's own ``WHERE`` keeps there: a string comparison is left to DuckDB, not counted bytewise
from the scan or its indices; without a collation it is still counted by lance_duck.

Oracle: DuckDB over the same rows in its own storage, on a connection with the same setting.
"""
from __future__ import annotations

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_duck

TABLE = pa.table({"id": pa.array(range(6), pa.int64()), "s": ["a", "A", "b", "B", None, "ab"]})
WHERES = ["s = 'A'", "s IN ('A', 'b')", "s > 'a'", "s <> 'a'", "s BETWEEN 'A' AND 'a'", "s = 'A' OR id = 5"]


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("collate") / "t.lance")
    lance.write_dataset(TABLE, p, max_rows_per_file=4)
    lance.dataset(p).create_scalar_index("s", "BTREE")
    return p


def _connection(collation: str | None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    if collation is not None:
        con.execute(f"SET default_collation = '{collation}'")
    return con


@pytest.mark.parametrize("collation", ["nocase", None])
@pytest.mark.parametrize("where", WHERES)
def test_count_with_a_string_comparison_follows_the_connections_collation(path, where, collation):
    oracle = _connection(collation)
    oracle.register("arrow_t", TABLE)
    oracle.execute("CREATE TABLE t AS SELECT * FROM arrow_t")
    want = oracle.execute(f"SELECT count(*) FROM t WHERE {where}").fetchall()
    got = lance_duck.sql(f"SELECT count(*) FROM '{path}' WHERE {where}", _connection(collation)).fetchall()
    assert got == want
