"""Forms whose meaning DuckDB 1.x's own pyarrow translation loses (and whose rows it does not filter
again) are refused by name, never answered with wrong rows: ``x <= NaN`` pushed as ``true`` (null
rows kept), a timestamp ``IN`` list on a nanosecond column rounded to microseconds, a filter on a
zoned timestamp column of a unit other than microseconds (the literal cut to seconds / milliseconds,
or nanoseconds compared where DuckDB compares microseconds). Under DuckDB 2 (its source protocol)
every one of them returns DuckDB's rows.

Oracle: DuckDB over the same rows copied into its own storage.
"""
from __future__ import annotations

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import UnsupportedFeatureError
from lance_duck.scan.duckdb_source import HAS_PROTOCOL

TABLE = pa.table({
    "id": pa.array(range(6), pa.int64()),
    "b": pa.array([True, False, None, True, False, True]),
    "f32": pa.array([1.0, None, float("nan"), -1.0, None, 0.5], pa.float32()),
    "f64": pa.array([1.0, None, float("nan"), -1.0, None, 0.5], pa.float64()),
    "ts_ns": pa.array([-998, 1000, 0, 1, None, 2000], pa.timestamp("ns")),
    "ts_tzms": pa.array([0, 1, -1, None, 2, 1000], pa.timestamp("ms", tz="UTC")),
    "ts_tzns": pa.array([0, 1, -1, None, 1000, 999], pa.timestamp("ns", tz="UTC")),
    "ts_tzus": pa.array([0, 1, -1, None, 1000, 999], pa.timestamp("us", tz="UTC")),
})

# (where, the column a refusal names)
LOSSY = [
    ("'NaN'::FLOAT >= f32", "NaN"), ("f64 <= 'NaN'::DOUBLE", "NaN"), ("id > 0 AND f64 <= 'NaN'::DOUBLE", "NaN"),
    ("ts_ns IN (TIMESTAMP_NS '1969-12-31 23:59:59.999999002', TIMESTAMP '1970-01-01 00:00:00.000001')", "ts_ns"),
    ("ts_tzms = TIMESTAMPTZ '1970-01-01 00:00:00.0005+00'", "ts_tzms"),
    ("ts_tzms BETWEEN TIMESTAMPTZ '1970-01-01 00:00:00.0005+00' AND TIMESTAMPTZ '1970-01-01 00:00:00.0015+00'",
     "ts_tzms"),
    ("ts_tzms <> TIMESTAMPTZ '1970-01-01 00:00:00.0005+00'", "ts_tzms"),
    ("ts_tzns IN (TIMESTAMPTZ '1970-01-01 00:00:00+00')", "ts_tzns"),
    ("ts_tzns <> TIMESTAMPTZ '1970-01-01 00:00:00.000001+00'", "ts_tzns"),
]
# pushed by DuckDB 1.x with their meaning kept: answered
KEPT = ["f32 < 'NaN'::FLOAT", "b = true", "b <> true AND id > 0", "f64 >= 'NaN'::DOUBLE", "f64 <> 'NaN'::DOUBLE",
        "ts_ns = TIMESTAMP_NS '1969-12-31 23:59:59.999999002'", "ts_ns IN (TIMESTAMP_NS '1970-01-01 00:00:00.000001')",
        "ts_tzus = TIMESTAMPTZ '1970-01-01 00:00:00.000001+00'",
        "ts_tzus IN (TIMESTAMPTZ '1970-01-01 00:00:00.000001+00', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00')"]


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("v1lossy") / "t.lance")
    lance.write_dataset(TABLE, p)
    return p


@pytest.fixture(scope="module")
def oracle():
    con = duckdb.connect()
    con.register("arrow_t", TABLE)
    con.execute("CREATE TABLE t AS SELECT * FROM arrow_t")
    return con


def _want(oracle, where: str) -> list[tuple[int]]:
    return oracle.execute(f"SELECT id FROM t WHERE {where} ORDER BY id").fetchall()


@pytest.mark.parametrize("where,name", LOSSY)
def test_a_form_duckdb_1x_pushes_without_its_meaning_is_refused_not_answered_wrong(path, oracle, where, name):
    con = duckdb.connect()
    con.register("ds", lance_duck.dataset(path))
    queries = [lambda: con.sql(f"SELECT id FROM ds WHERE {where} ORDER BY id").fetchall(),
               lambda: lance_duck.sql(f"SELECT id FROM '{path}' WHERE {where} ORDER BY id").fetchall()]
    for run in queries:
        if HAS_PROTOCOL:
            assert run() == _want(oracle, where), where
        else:
            with pytest.raises((UnsupportedFeatureError, duckdb.Error), match=name):
                run()


@pytest.mark.parametrize("where", KEPT)
def test_a_form_pushed_with_its_meaning_returns_duckdbs_rows(path, oracle, where):
    con = duckdb.connect()
    con.register("ds", lance_duck.dataset(path))
    want = _want(oracle, where)
    assert con.sql(f"SELECT id FROM ds WHERE {where} ORDER BY id").fetchall() == want
    assert lance_duck.sql(f"SELECT id FROM '{path}' WHERE {where} ORDER BY id").fetchall() == want
    assert want
