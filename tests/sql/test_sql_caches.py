"""``lance_duck.sql``'s per-process caches (``integrations/duckdb/cache.py``) never serve stale data.

Every test runs the same SQL text twice or more on one connection (so the second call takes the
kept rewrite, the kept table and the kept registration) with a change to the table in between,
made by pylance; the oracle is pylance's reading of the table after the change.
"""
from __future__ import annotations

import shutil

import duckdb
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.integrations.duckdb import cache as sql_cache
from lance_duck.table import snapshot as snapshot_module

lance = pytest.importorskip("lance")


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array([f"v{i}" for i in ids])})


def _ours(query: str, con) -> pa.Table:
    return lance_duck.sql(query, con).to_arrow_table()


def _pylance(path: str, **kw) -> pa.Table:
    return lance.dataset(path, **kw).to_table().sort_by("id")


@pytest.fixture
def table(tmp_path) -> str:
    path = str(tmp_path / "t.lance")
    lance.write_dataset(_rows(0, 30), path)
    return path


def test_a_version_committed_by_pylance_between_two_calls_is_seen(table):
    con = duckdb.connect()
    q = f"SELECT * FROM '{table}' ORDER BY id"
    assert _ours(q, con).equals(_pylance(table))
    lance.write_dataset(_rows(30, 5), table, mode="append")
    assert _ours(q, con).equals(_pylance(table))
    lance.dataset(table).delete("id < 3")
    assert _ours(q, con).equals(_pylance(table))
    assert lance_duck.sql(f"SELECT count(*) FROM '{table}'", con).fetchall() == [(32,)]
    lance.write_dataset(_rows(100, 2), table, mode="overwrite")
    assert _ours(q, con).equals(_pylance(table))


def test_a_table_removed_and_written_again_at_the_same_path_is_read_afresh(table):
    con = duckdb.connect()
    q = f"SELECT * FROM '{table}' ORDER BY id"
    assert _ours(q, con).equals(_pylance(table))
    pinned = f"SELECT * FROM '{table}' AT (VERSION => 1) ORDER BY id"
    assert _ours(pinned, con).equals(_pylance(table, version=1))
    shutil.rmtree(table)
    lance.write_dataset(_rows(500, 7), table)          # version 1 again, other rows
    assert _ours(q, con).equals(_pylance(table))
    assert _ours(pinned, con).equals(_pylance(table, version=1))
    assert _ours(q, con).column("id").to_pylist() == list(range(500, 507))


def test_pinned_versions_and_moved_tags_read_what_they_name_now(table):
    con = duckdb.connect()
    ds = lance.dataset(table)
    ds.tags.create("t", 1)
    lance.write_dataset(_rows(30, 10), table, mode="append")
    by_tag = f"SELECT * FROM '{table}' AT (VERSION => 't') ORDER BY id"
    by_version = f"SELECT * FROM '{table}' AT (VERSION => 1) ORDER BY id"
    assert _ours(by_tag, con).equals(_pylance(table, version=1))
    lance.dataset(table).tags.update("t", 2)
    assert _ours(by_tag, con).equals(_pylance(table, version=2))
    assert _ours(by_version, con).equals(_pylance(table, version=1))
    lance.dataset(table).tags.delete("t")
    with pytest.raises(lance_duck.TagNotFoundError):
        lance_duck.sql(by_tag, con)


def test_a_relation_made_before_a_commit_keeps_reading_its_version(table):
    con = duckdb.connect()
    q = f"SELECT * FROM '{table}' ORDER BY id"
    before = lance_duck.sql(q, con)                      # lazy: runs at fetch time
    lance.write_dataset(_rows(30, 5), table, mode="append")
    after = lance_duck.sql(q, con)
    assert after.to_arrow_table().equals(_pylance(table))
    assert before.to_arrow_table().equals(_pylance(table, version=1))


def _rows_of(t: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in t.to_pylist()]


def test_a_repeated_select_fetched_with_fetchall_reads_each_new_version(table):
    """The second call of a text on a connection is executed at fetchall() (bound before): it reads
    the version current at its call, as the first did."""
    con = duckdb.connect()
    q = f"SELECT * FROM '{table}' WHERE id % 2 = 0 ORDER BY id"
    want = lambda **kw: _rows_of(_pylance(table, **kw).filter(pa.compute.equal(
        pa.compute.bit_wise_and(_pylance(table, **kw)["id"], 1), 0)))   # noqa: E731
    assert lance_duck.sql(q, con).fetchall() == want()
    assert lance_duck.sql(q, con).fetchall() == want()
    lance.write_dataset(_rows(30, 5), table, mode="append")
    assert lance_duck.sql(q, con).fetchall() == want() and len(want()) == 18
    lance.dataset(table).delete("id < 10")
    assert lance_duck.sql(q, con).fetchall() == want()
    assert lance_duck.sql(q, con).fetchall() == want() and want()[0][0] == 10


def test_a_repeated_select_made_before_a_commit_keeps_reading_its_version(table):
    con = duckdb.connect()
    q = f"SELECT * FROM '{table}' ORDER BY id"
    assert lance_duck.sql(q, con).fetchall() == _rows_of(_pylance(table))      # bound once
    before, other = lance_duck.sql(q, con), lance_duck.sql(q, con)
    lance.write_dataset(_rows(30, 5), table, mode="append")
    assert lance_duck.sql(q, con).fetchall() == _rows_of(_pylance(table))
    assert before.fetchall() == _rows_of(_pylance(table, version=1))
    assert before.fetchall() == _rows_of(_pylance(table, version=1))           # (run again)
    assert other.to_arrow_table().equals(_pylance(table, version=1))           # its relation, made now
    assert other.fetchall() == _rows_of(_pylance(table, version=1))


def test_a_select_that_fails_to_bind_fails_at_every_call(table):
    con = duckdb.connect()
    q = f"SELECT no_such_column FROM '{table}'"
    for _ in range(3):
        with pytest.raises(duckdb.BinderException, match="no_such_column"):
            lance_duck.sql(q, con)


def test_a_repeated_create_table_as_runs_at_its_call(table):
    con = duckdb.connect()
    q = f"CREATE OR REPLACE TABLE copied AS SELECT * FROM '{table}'"
    lance_duck.sql(q, con)                           # (DuckDB 2 returns the count as a relation, 1.x None)
    assert con.sql("SELECT count(*) FROM copied").fetchall() == [(30,)]
    lance.write_dataset(_rows(30, 5), table, mode="append")
    lance_duck.sql(q, con)                           # nothing fetched: it ran at the call
    assert con.sql("SELECT count(*) FROM copied").fetchall() == [(35,)]


def test_point_lookups_with_other_integer_literals_register_nothing_new(tmp_path):
    """A comparison on an integer column makes no filtered view (DuckDB pushes it itself): lookups
    that differ only in the literal read the one registered table; a DOUBLE comparison still gets
    its view (DuckDB pushes none), and every answer is pylance's."""
    path = str(tmp_path / "n.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(50), pa.int64()),
                                  "x": pa.array([i / 4 for i in range(50)], pa.float64())}), path)
    con = duckdb.connect()
    for i in (3, 17, 42):
        assert lance_duck.sql(f"SELECT id, x FROM '{path}' WHERE id = {i}", con).fetchall() == \
            [tuple(r.values()) for r in lance.dataset(path).to_table(filter=f"id = {i}").to_pylist()]
    assert len(con.sql("SHOW TABLES").fetchall()) == 1
    assert lance_duck.sql(f"SELECT id FROM '{path}' WHERE x > 11.5 ORDER BY id", con).fetchall() == \
        [(i,) for i in range(47, 50)]
    assert len(con.sql("SHOW TABLES").fetchall()) == 2


def test_views_made_per_float_literal_stay_registered_only_for_a_while(tmp_path):
    """Each distinct DOUBLE comparison is a view registered on the connection: the last
    VIEWS_REGISTERED stay registered, older ones are unregistered (and registered again when their
    query comes back); every answer is still the one pylance gives."""
    path = str(tmp_path / "f.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(200), pa.int64()),
                                  "x": pa.array([i / 2 for i in range(200)], pa.float64())}), path)
    con = duckdb.connect()
    n = sql_cache.VIEWS_REGISTERED + 10

    def query(i: int) -> str:
        return f"SELECT count(*), sum(id) FROM '{path}' WHERE x > {i}.25"

    def want(i: int) -> list[tuple]:
        ids = lance.dataset(path).to_table(filter=f"x > {i}.25")["id"].to_pylist()
        return [(len(ids), sum(ids) if ids else None)]
    first = lance_duck.sql(query(0), con)
    for i in range(n):
        assert lance_duck.sql(query(i), con).fetchall() == want(i)
    names = [r[0] for r in con.sql("SHOW TABLES").fetchall()]
    assert len(names) <= 2 * sql_cache.VIEWS_REGISTERED + 1      # (a view and its read-to-the-end dataset)
    with pytest.raises(duckdb.CatalogException):
        first.fetchall()                        # made over a view unregistered since
    assert lance_duck.sql(query(0), con).fetchall() == want(0)   # registered again


def test_a_repeated_query_reads_no_manifest_and_reuses_the_opened_table(table, monkeypatch):
    con = duckdb.connect()
    q = f"SELECT * FROM '{table}' WHERE id = 7"
    want = lance_duck.sql(q, con).fetchall()
    reads: list[str] = []
    orig = snapshot_module.read_manifest
    monkeypatch.setattr(snapshot_module, "read_manifest", lambda io, path, *a: reads.append(path) or orig(io, path, *a))
    assert lance_duck.sql(q, con).fetchall() == want == [(7, "v7")]
    assert lance_duck.sql(f"SELECT * FROM '{table}' AT (VERSION => 1) WHERE id = 7", con).fetchall() == want
    assert reads == []
    lance.write_dataset(_rows(30, 5), table, mode="append")
    assert lance_duck.sql(q, con).fetchall() == want
    assert len(reads) == 1 and reads[0].endswith(".manifest")      # the new version, once


def test_a_kept_statement_still_finds_a_variable_defined_after_it(table):
    con = duckdb.connect()
    q = "SELECT count(*) FROM later_tbl"
    with pytest.raises(duckdb.CatalogException):
        lance_duck.sql(q, con).fetchall()
    later_tbl = pa.table({"x": [1, 2, 3]})  # noqa: F841  (found in this frame by name)
    assert lance_duck.sql(q, con).fetchall() == [(3,)]


def test_a_kept_statement_sees_a_table_directory_created_after_it(tmp_path):
    con = duckdb.connect()
    path = str(tmp_path / "plain_dir")
    q = f"SELECT count(*) FROM '{path}'"
    with pytest.raises(duckdb.Error):
        lance_duck.sql(q, con).fetchall()
    lance.write_dataset(_rows(0, 4), path)
    assert lance_duck.sql(q, con).fetchall() == [(4,)]


def test_the_caches_are_bounded(tmp_path):
    con = duckdb.connect()
    for i in range(sql_cache.TABLES_KEPT + 3):
        path = str(tmp_path / f"b{i}.lance")
        lance.write_dataset(_rows(i, 1), path)
        assert lance_duck.sql(f"SELECT id FROM '{path}'", con).fetchall() == [(i,)]
    assert len(sql_cache._tables) <= sql_cache.TABLES_KEPT
    assert len(sql_cache.statements) <= sql_cache.STATEMENTS_KEPT
    sql_cache.clear()
    assert len(sql_cache._tables) == len(sql_cache.statements) == 0


def test_branch_and_asof_references_follow_new_commits(table):
    con = duckdb.connect()
    branch = lance.dataset(table).create_branch("dev")
    q = f"SELECT * FROM lance_scan('{table}', branch => 'dev') ORDER BY id"
    assert _ours(q, con).equals(lance.dataset(table).checkout_version(("dev", None)).to_table().sort_by("id"))
    branch.insert(_rows(30, 4))
    want = lance.dataset(table).checkout_version(("dev", None)).to_table().sort_by("id")
    assert want.num_rows == 34
    assert _ours(q, con).equals(want)
    asof = f"SELECT count(*) FROM '{table}' AT (TIMESTAMP => '2999-01-01 00:00:00')"
    assert lance_duck.sql(asof, con).fetchall() == [(30,)]
    lance.write_dataset(_rows(40, 3), table, mode="append")
    assert lance_duck.sql(asof, con).fetchall() == [(33,)]


def test_a_relative_path_reads_the_table_of_the_current_directory(tmp_path, monkeypatch):
    """A kept store is keyed by the absolute path: after a chdir, ``'t.lance'`` is the other table."""
    for name, n in (("a", 3), ("b", 5)):
        (tmp_path / name).mkdir()
        lance.write_dataset(_rows(0, n), str(tmp_path / name / "t.lance"))
    con = duckdb.connect()
    for name, n in (("a", 3), ("b", 5), ("a", 3)):
        monkeypatch.chdir(tmp_path / name)
        assert lance_duck.sql("SELECT max(id) FROM 't.lance'", con).fetchall() == [(n - 1,)]
