"""Blob columns through DuckDB: DuckDB binds a dataset with the schema its streams have, so a blob
column reaches SQL as the description pylance's scans return (``position``/``size`` for blob v1,
the v2 descriptor struct for 2.2+), equal to pylance's ``to_table`` -- where DuckDB over pylance's
own dataset refuses the query (its declared type is the blob, not the description)."""
from __future__ import annotations

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.scan.duckdb_source import HAS_PROTOCOL


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2", "2.3"])
def blob_table(request, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp(f"blob_{request.param}") / "t.lance")
    t = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                  "blob": pa.array([b"ab", None, b"xyz" * 100], pa.large_binary())})
    t = t.cast(pa.schema([t.schema.field(0), t.schema.field(1).with_metadata({"lance-encoding:blob": "true"})]))
    lance.write_dataset(t, path, data_storage_version=request.param)
    return path


def _pylance_rows(path: str, columns: list[str] | None = None, flt: str | None = None) -> list[tuple]:
    t = lance.dataset(path).to_table(columns=columns, filter=flt)
    return [tuple(r.values()) for r in t.to_pylist()]


def test_sql_returns_blob_descriptions_equal_to_pylance(blob_table):
    assert lance_duck.sql(f"select * from '{blob_table}'").fetchall() == _pylance_rows(blob_table)
    assert lance_duck.sql(f"select id, blob from '{blob_table}' where id > 1").fetchall() == \
        _pylance_rows(blob_table, ["id", "blob"], "id > 1")


def test_sql_limit_over_a_blob_column_returns_pylances_rows(blob_table):
    assert lance_duck.sql(f"select * from '{blob_table}' limit 2").fetchall() == _pylance_rows(blob_table)[:2]


@pytest.mark.skipif(not HAS_PROTOCOL, reason="DuckDB 1.x binds a pyarrow dataset by its declared schema")
def test_duckdb_over_the_dataset_binds_the_descriptions(blob_table):
    ds = lance_duck.dataset(blob_table)     # noqa: F841 - read by DuckDB below
    con = duckdb.connect()
    assert con.sql("select * from ds").fetchall() == _pylance_rows(blob_table)
    assert con.sql("select blob.size from ds where id = 3").fetchall() == [(300,)]
