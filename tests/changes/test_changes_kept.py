"""Repeated change reads: filters over the ``_``-columns alone (decided per change type, or per
row when ``_rowid`` is named) keep exactly the rows of the whole feed they match, and the versions
kept per process (``snapshot_cache_bytes``) never outlive the table they were read from."""
from __future__ import annotations

import shutil

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck import _state

from .histories import LAST_VERSION
from .oracle import expected, rows_of

META_ONLY = [
    "_change_type = 'delete'",
    "_change_type IN ('insert', 'update_postimage') AND _commit_version >= 4",
    "_commit_version = 3 OR _change_type = 'update_preimage'",
    "_rowid < 6 AND _change_type <> 'insert'",
    "_rowid % 2 = 0",
    "_commit_timestamp > TIMESTAMP '2000-01-01 00:00:00'",
    "NOT (_change_type = 'insert')",
    "NULL",
    "_change_type IS NULL",
]


@pytest.mark.parametrize("flt", META_ONLY)
def test_a_filter_on_the_change_columns_keeps_exactly_the_matching_rows(history, flt):
    whole = lance_duck.changes(history, 0).read_all()
    # the oracle: DuckDB evaluates the same SQL over the whole feed, row order kept
    con = duckdb.connect()
    con.register("feed", whole)
    want = con.sql(f"SELECT * EXCLUDE (__n) FROM (SELECT *, row_number() OVER () AS __n FROM feed) "
                   f"WHERE {flt} ORDER BY __n").to_arrow_table()
    got = lance_duck.changes(history, 0, filter=flt).read_all()
    assert got.schema == whole.schema
    assert got.to_pylist() == want.to_pylist()
    again = lance_duck.changes(history, 0, filter=flt).read_all()        # kept versions and diffs
    assert again.equals(got)


def test_an_expression_filter_on_the_change_columns_equals_the_sql_one(history):
    sql = lance_duck.changes(history, 0, filter="_change_type = 'delete' OR _rowid < 3").read_all()
    expr = (pc.field("_change_type") == "delete") | (pc.field("_rowid") < 3)
    assert lance_duck.changes(history, 0, filter=expr).read_all().equals(sql)
    by_type = lance_duck.changes(history, 0, filter=pc.field("_change_type") == "insert").read_all()
    assert set(by_type.column("_change_type").to_pylist()) == {"insert"} and by_type.num_rows > 0


def test_a_filter_on_data_columns_is_evaluated_per_row_with_sql_null_semantics(history):
    whole = lance_duck.changes(history, 0).read_all()
    got = lance_duck.changes(history, 0, filter="NOT (id < 5)").read_all()
    want = [r for r in whole.to_pylist() if r["id"] is not None and not r["id"] < 5]
    assert got.to_pylist() == want and len(want) > 10


def test_reads_with_and_without_kept_versions_are_equal(stable_table):
    want = rows_of(lance_duck.changes(stable_table, 0).read_all())
    before = lance_duck.configure()["snapshot_cache_bytes"]
    try:
        lance_duck.configure(snapshot_cache_bytes=0)
        assert rows_of(lance_duck.changes(stable_table, 0).read_all()) == want
        assert len(_state.cache("snapshots")) == 0
    finally:
        lance_duck.configure(snapshot_cache_bytes=before)
    assert rows_of(lance_duck.changes(stable_table, 0).read_all()) == want
    assert len(_state.cache("snapshots")) >= LAST_VERSION
    assert want == expected(stable_table, 0, lance.dataset(stable_table).version)


def test_a_table_written_anew_at_the_same_path_is_read_anew(tmp_path):
    uri = str(tmp_path / "again.lance")

    def write(first: int) -> None:
        t = pa.table({"id": pa.array(np.arange(first, first + 20), pa.int64())})
        lance.write_dataset(t, uri, enable_stable_row_ids=True)
        lance.dataset(uri).delete("id % 5 = 0")

    write(0)
    old = lance_duck.changes(uri, 1, 2).read_all()
    d = lance_duck.dataset(uri).delta(begin_version=1, end_version=2)
    assert d.get_deleted_row_ids().read_all().num_rows == 4
    shutil.rmtree(uri)
    write(100)
    new = lance_duck.changes(uri, 1, 2, columns=["id"]).read_all()
    assert sorted(new.column("id").to_pylist()) == [100, 105, 110, 115]
    assert old.num_rows == new.num_rows == 4
    first = lance_duck.changes(uri, 0, 1, columns=["id"]).read_all()
    assert sorted(first.column("id").to_pylist()) == list(range(100, 120))


def test_a_commit_after_a_read_is_in_the_next_read(tmp_path):
    uri = str(tmp_path / "grows.lance")
    lance.write_dataset(pa.table({"id": pa.array(np.arange(10), pa.int64())}), uri, enable_stable_row_ids=True)
    assert lance_duck.changes(uri, 0).read_all().num_rows == 10
    lance.write_dataset(pa.table({"id": pa.array(np.arange(10, 13), pa.int64())}), uri, mode="append")
    got = lance_duck.changes(uri, 0).read_all()
    assert got.num_rows == 13 and set(got.column("_commit_version").to_pylist()) == {1, 2}
    assert lance_duck.changes(uri, 1, columns=["id"]).read_all().column("id").to_pylist() == [10, 11, 12]
    d = lance_duck.dataset(uri).delta(compared_against=1)
    assert d.get_inserted_rows().read_all().column("id").to_pylist() == [10, 11, 12]


def test_a_kept_version_does_not_keep_the_version_before_it_alive(stable_table):
    import gc
    import weakref

    from lance_duck.table.snapshot import kept_checkout, open_kept
    lance_duck.clear_caches()
    latest = open_kept(stable_table)
    v = latest.version
    assert lance_duck.changes(stable_table, v - 2, v).read_all().num_rows > 0    # diffs kept on both
    before = weakref.ref(kept_checkout(latest, v - 1))
    _state.cache("snapshots").clear()
    gc.collect()
    assert before() is None and latest.version == v   # the diff kept on `latest` holds no snapshot
    assert rows_of(lance_duck.changes(stable_table, v - 2, v).read_all()) == expected(stable_table, v - 2, v)
