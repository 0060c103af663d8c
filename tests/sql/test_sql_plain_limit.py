"""``lance_duck.sql("SELECT * | cols FROM 't.lance' LIMIT n [OFFSET m]")`` (that text alone) is answered
by a direct take of the first live rows (``integrations/duckdb/limit.py``): the rows, column names and
types DuckDB gives over pylance's ``to_table(limit=, offset=)``, deletions respected (in the first
fragment, a fragment deleted whole), on 2.0 and 2.1 files, every column type.

Oracle: DuckDB over pylance's ``to_table(columns=, limit=, offset=)`` of the latest version.
"""
from __future__ import annotations

import datetime
import decimal
import sys

import duckdb
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.integrations.duckdb import limit
from lance_duck.integrations.duckdb.api import run_sql

lance = pytest.importorskip("lance")

N = 3000


def _table() -> pa.Table:
    ids = pa.array(range(N), pa.int64())
    return pa.table({
        "id": ids,
        "i8": pa.array([i % 100 - 50 for i in range(N)], pa.int8()),
        "u32": pa.array([i * 7 for i in range(N)], pa.uint32()),
        "f32": pa.array([i / 8 for i in range(N)], pa.float32()),
        "fn": pa.array([None if i % 5 == 0 else i * 0.25 for i in range(N)], pa.float64()),
        "b": pa.array([i % 3 == 0 for i in range(N)]),
        "s": pa.array([None if i % 11 == 0 else f"str {i % 37}" for i in range(N)]),
        "ls": pa.array([f"large {i}" for i in range(N)], pa.large_string()),
        "bin": pa.array([bytes([i % 256, 1]) for i in range(N)], pa.binary()),
        "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 400) for i in range(N)], pa.date32()),
        "ts": pa.array([i * 1_000_003 for i in range(N)], pa.timestamp("us")),
        "tz": pa.array([i * 1_000_003 for i in range(N)], pa.timestamp("us", tz="UTC")),
        "dec": pa.array([decimal.Decimal(i) / 100 for i in range(N)], pa.decimal128(12, 2)),
        "lst": pa.array([[i, i + 1] if i % 4 else None for i in range(N)], pa.list_(pa.int32())),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(N)]),
        "vec": pa.array([[float(i), 1.0] for i in range(N)], pa.list_(pa.float32(), 2)),
    })


@pytest.fixture(scope="module", params=["2.0", "2.1"])
def table(request, tmp_path_factory):
    """Four fragments of 750 rows; rows deleted in the first, the second deleted whole."""
    path = str(tmp_path_factory.mktemp("plain_limit") / f"t{request.param}.lance")
    ds = lance.write_dataset(_table(), path, max_rows_per_file=750, data_storage_version=request.param)
    ds.delete("id < 20 and id % 3 = 1")
    ds.delete("id >= 750 and id < 1500")
    return path


def _oracle(path: str, columns, n: int, offset: int) -> duckdb.DuckDBPyRelation:
    t = lance.dataset(path).to_table(columns=columns, limit=n, offset=offset)
    return duckdb.connect().from_arrow(t)


CASES = [("*", None, 10, 0), ("*", None, 1, 0), ("*", None, 0, 0), ("*", None, 40, 5),
         ("*", None, 800, 0), ("*", None, 10, 740), ("*", None, 10, 2240), ("*", None, 50, 5000),
         ("id, s, ts", ["id", "s", "ts"], 25, 3), ("fn", ["fn"], 30, 0), ("tz, dec", ["tz", "dec"], 12, 0),
         ("lst, st, vec, bin", ["lst", "st", "vec", "bin"], 12, 1)]


@pytest.mark.parametrize("cols,columns,n,offset", CASES)
def test_plain_limit_equals_duckdb_over_pylance(table, cols, columns, n, offset):
    q = f"select {cols} from '{table}' limit {n}" + (f" offset {offset}" if offset else "")
    con = duckdb.connect()
    assert limit.plain_limit(q, con, None, lambda: con) is not None     # the direct take answers it
    want = _oracle(table, columns, n, offset)
    for rel in (lance_duck.sql(q, con), lance_duck.sql(q)):
        assert rel.columns == want.columns
        assert [str(t) for t in rel.types] == [str(t) for t in want.types]
        assert rel.fetchall() == want.fetchall()
        assert rel.to_arrow_table().equals(want.to_arrow_table())


@pytest.mark.parametrize("form", ["SELECT * FROM '{t}' LIMIT 7;", "  select id ,b\n from '{t}'   limit 7 offset 2 ; "])
def test_plain_limit_forms(table, form):
    q = form.format(t=table)
    con = duckdb.connect()
    assert limit.plain_limit(q, con, None, lambda: con) is not None
    cols = None if "*" in q else ["id", "b"]
    assert lance_duck.sql(q, con).fetchall() == _oracle(table, cols, 7, 2 if "offset" in q else 0).fetchall()


@pytest.mark.parametrize("q", [
    "select * from '{t}' where id > 3 limit 5", "select * from '{t}' order by id limit 5",
    "select id + 1 from '{t}' limit 5", "select ID from '{t}' limit 5", "select _rowid from '{t}' limit 5",
    "select id, id from '{t}' limit 5", "select distinct b from '{t}' limit 5", "select * from '{t}' limit 20000",
    "select * from '{t}' AT (VERSION => 1) limit 5"])
def test_other_limits_take_the_full_path(table, q):
    q = q.format(t=table)
    con = duckdb.connect()
    assert limit.plain_limit(q, con, None, lambda: con) is None
    rows = lance_duck.sql(q, con).fetchall()
    assert len(rows) == len(run_sql(q, con, None, sys._getframe()).fetchall())


def test_plain_limit_on_a_closed_connection_fails_at_once(table):
    con = duckdb.connect()
    con.close()
    with pytest.raises(duckdb.ConnectionException):
        lance_duck.sql(f"select * from '{table}' limit 3", con)


def test_plain_limit_reads_a_new_version(tmp_path):
    path = str(tmp_path / "grow.lance")
    lance.write_dataset(pa.table({"id": pa.array([5, 6], pa.int64())}), path)
    assert lance_duck.sql(f"select * from '{path}' limit 3").fetchall() == [(5,), (6,)]
    lance.dataset(path).delete("id = 5")
    assert lance_duck.sql(f"select * from '{path}' limit 3").fetchall() == [(6,)]


def test_plain_limit_of_a_missing_table_raises_the_full_paths_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.lance"):
        lance_duck.sql(f"select * from '{tmp_path / 'nope.lance'}' limit 3").fetchall()


def test_blob_columns_take_the_full_path(tmp_path):
    path = str(tmp_path / "blob.lance")
    t = pa.table({"id": pa.array([1, 2], pa.int64()), "blob": pa.array([b"ab", b"cd"], pa.large_binary())})
    t = t.cast(pa.schema([t.schema.field(0), t.schema.field(1).with_metadata({"lance-encoding:blob": "true"})]))
    lance.write_dataset(t, path)
    con = duckdb.connect()
    for q in (f"select * from '{path}' limit 5", f"select blob from '{path}' limit 5"):
        assert limit.plain_limit(q, con, None, lambda: con) is None
    assert limit.plain_limit(f"select id from '{path}' limit 5", con, None, lambda: con) is not None


def _big(start: int, n: int = 3000) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "v": pa.array([None if i % 3 == 0 else i * 0.5 for i in range(start, start + n)], pa.float64()),
                     "ok": pa.array([i % 2 == 0 for i in range(start, start + n)])})


def test_plain_limit_never_returns_a_row_deleted_after_warm_reads(tmp_path):
    """Repeated LIMITs keep page metadata and plans warm; a delete committed between them is seen
    by the very next one (the rows of the latest version, as DuckDB over pylance gives them)."""
    path = str(tmp_path / "warm.lance")
    lance.write_dataset(_big(0), path, max_rows_per_file=1000, data_storage_version="2.1")
    q = f"select * from '{path}' limit 10 offset 5"
    for _ in range(3):
        assert lance_duck.sql(q).fetchall() == _oracle(path, None, 10, 5).fetchall()
    lance.dataset(path).delete("id in (5, 7, 8, 12)")
    got = lance_duck.sql(q).fetchall()
    assert got == _oracle(path, None, 10, 5).fetchall()
    assert not {5, 7, 8, 12} & {r[0] for r in got}
    lance.dataset(path).delete("id < 1000")                     # the first fragment deleted whole
    assert lance_duck.sql(q).fetchall() == _oracle(path, None, 10, 5).fetchall()


def test_plain_limit_after_an_overwrite_reads_the_new_version_and_schema(tmp_path):
    """A warm LIMIT, then an overwrite (other rows, one column more) and an append: each next
    LIMIT reads the latest version; the older version stays readable by time travel."""
    path = str(tmp_path / "over.lance")
    lance.write_dataset(_big(0), path, data_storage_version="2.1")
    q = f"select * from '{path}' limit 4"
    for _ in range(2):
        assert lance_duck.sql(q).fetchall() == _oracle(path, None, 4, 0).fetchall()
    lance.write_dataset(_big(100).append_column("w", pa.array(["x"] * 3000)), path, mode="overwrite",
                        data_storage_version="2.1")
    rel = lance_duck.sql(q)
    assert rel.columns == ["id", "v", "ok", "w"]
    assert rel.fetchall() == _oracle(path, None, 4, 0).fetchall()
    assert rel.fetchall()[0][0] == 100
    lance.dataset(path).delete("id < 102")
    lance.write_dataset(_big(9000).append_column("w", pa.array(["y"] * 3000)), path, mode="append",
                        data_storage_version="2.1")
    assert lance_duck.sql(q).fetchall() == _oracle(path, None, 4, 0).fetchall()
    old = lance_duck.sql(f"select * from '{path}' AT (VERSION => 1) limit 4").fetchall()
    assert old == duckdb.connect().from_arrow(lance.dataset(path, version=1).to_table(limit=4)).fetchall()
