"""A ``TIMESTAMP`` literal finer than a timestamp column (``ts_s = TIMESTAMP '... 00:00:00.5'``) means
what pylance makes of it: the literal cut toward zero to the column's unit (its cast), for ``=``,
``<>``, ranges, ``BETWEEN`` and ``IN`` alike, on seconds, milliseconds and zoned columns, through
indices too; a filter written for DuckDB (``compile_duckdb_sql``) keeps DuckDB's exact instants.

Oracles: pylance over the same table; DuckDB over the same rows in its own storage.
"""
from __future__ import annotations

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.predicate.compiled import compile_duckdb_sql

N = 40
SECONDS = [-3, -2, -1, 0, 1, 2, 3, None]


def _table() -> pa.Table:
    s = [SECONDS[i % len(SECONDS)] for i in range(N)]
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "ts_s": pa.array(s, pa.timestamp("s")),
        "ts_ms": pa.array([None if v is None else v * 1000 + (i % 3) - 1 for i, v in enumerate(s)], pa.timestamp("ms")),
        "ts_tz": pa.array(s, pa.timestamp("s", tz="UTC")),
        "ts_ny": pa.array(s, pa.timestamp("s", tz="America/New_York")),
    })


@pytest.fixture(scope="module", params=["plain", "indexed"])
def path(request, tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp(f"tscut_{request.param}") / "t.lance")
    ds = lance.write_dataset(_table(), p, max_rows_per_file=15)
    ds.delete("id % 11 = 4")
    if request.param == "indexed":
        ds.create_scalar_index("ts_s", "BTREE")
        ds.create_scalar_index("ts_ms", "ZONEMAP")
        ds.create_scalar_index("ts_tz", "BITMAP")
    return p


HALF = "TIMESTAMP '1970-01-01 00:00:00.5'"
NEG = "TIMESTAMP '1969-12-31 23:59:58.5'"
FILTERS = [
    f"ts_s = {HALF}", f"ts_s = {NEG}", f"ts_s <> {HALF}", f"ts_s > {NEG}", f"ts_s >= {HALF}", f"ts_s < {HALF}",
    f"ts_s <= {NEG}", f"{HALF} = ts_s", f"{NEG} < ts_s", f"ts_s BETWEEN {NEG} AND {HALF}", f"ts_s IN ({HALF}, {NEG})",
    f"NOT (ts_s = {HALF})", f"ts_s = {HALF} OR id = 5", f"ts_tz = {HALF}", f"ts_tz >= {NEG}",
    "ts_ms = TIMESTAMP '1970-01-01 00:00:00.0015'", "ts_ms = TIMESTAMP '1969-12-31 23:59:59.9985'",
    "ts_ms > TIMESTAMP '1969-12-31 23:59:59.9985'", "ts_ms <= TIMESTAMP '1970-01-01 00:00:01.0005'",
    "ts_s = CAST('1970-01-01 00:00:01.5' AS TIMESTAMP)",
    "ts_ny = TIMESTAMP '1969-12-31 19:00:00.5'", "ts_ny IN (TIMESTAMP '1969-12-31 18:59:58.5')",
    "ts_ny < TIMESTAMP '1969-12-31 18:59:58.5'",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_a_finer_timestamp_literal_selects_the_rows_pylance_selects(path, flt):
    want = lance.dataset(path).to_table(columns=["id"], filter=flt)["id"].to_pylist()
    ds = lance_duck.dataset(path)
    assert ds.to_table(columns=["id"], filter=flt)["id"].to_pylist() == want
    assert ds.count_rows(filter=flt) == len(want)
    assert want, flt    # each filter selects rows: a reading that drops them all is seen


DUCKDB_FILTERS = [f"ts_s = {HALF}", f"ts_s >= {HALF}", f"ts_s < {NEG}", f"ts_s BETWEEN {NEG} AND {HALF}",
                  "ts_ms = TIMESTAMP '1970-01-01 00:00:00.0015'", "ts_ms > TIMESTAMP '1969-12-31 23:59:59.9985'"]


@pytest.mark.parametrize("flt", DUCKDB_FILTERS)
def test_a_filter_written_for_duckdb_compares_the_exact_instants(flt):
    table = _table()
    con = duckdb.connect()
    con.register("arrow_t", table)
    con.execute("CREATE TABLE t AS SELECT * FROM arrow_t")
    want = [r[0] for r in con.execute(f"SELECT id FROM t WHERE {flt} ORDER BY id").fetchall()]
    assert compile_duckdb_sql(flt, table.schema).apply(table)["id"].to_pylist() == want
