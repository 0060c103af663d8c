"""lance_duck.sql end to end: results equal pylance's reading of the same versions."""
from __future__ import annotations

import datetime as dt

import duckdb
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import TagNotFoundError, VersionNotFoundError


@pytest.fixture
def con():
    return duckdb.connect()


def _ids(rel) -> list:
    return [r[0] for r in rel.fetchall()]


def _pl(uri, **kw):
    import lance
    return lance.dataset(uri, **kw)


@pytest.mark.parametrize("ref,kw", [
    ("'{u}'", {}),
    ("'{u}' AT (VERSION => 1)", {"version": 1}),
    ("'{u}' AT (VERSION => 2)", {"version": 2}),
    ("'{u}' VERSION AS OF 3", {"version": 3}),
    ("'{u}' AT (VERSION => 'cleaned')", {"version": "cleaned"}),
    ("lance_scan('{u}', version => 2)", {"version": 2}),
])
def test_version_reference_reads_that_version(history, con, ref, kw):
    table = lance_duck.sql(f"SELECT * FROM {ref.format(u=history)}", con).arrow()
    if hasattr(table, "read_all"):
        table = table.read_all()
    expected = _pl(history, **kw).to_table()
    assert table.sort_by("id").equals(expected.sort_by("id"))


def test_timestamp_reference_reads_the_version_current_then(history, con):
    versions = _pl(history).versions()
    t2, t3 = versions[1]["timestamp"], versions[2]["timestamp"]
    mid = t2 + (t3 - t2) / 2
    expected = sorted(_pl(history, asof=mid).to_table()["id"].to_pylist())
    for q in (f"SELECT id FROM '{history}' AT (TIMESTAMP => '{mid.isoformat()}') ORDER BY id",
              f"SELECT id FROM '{history}' TIMESTAMP AS OF '{mid.isoformat()}' ORDER BY id",
              f"SELECT id FROM lance_scan('{history}', asof => '{mid.isoformat()}') ORDER BY id"):
        assert _ids(lance_duck.sql(q, con)) == expected
    assert len(expected) == 150


def test_diff_between_two_versions_in_one_query(history, con):
    q = (f"SELECT id FROM '{history}' AT (VERSION => 2) EXCEPT "
         f"SELECT id FROM '{history}' AT (VERSION => 3) ORDER BY id")
    v2 = set(_pl(history, version=2).to_table()["id"].to_pylist())
    v3 = set(_pl(history, version=3).to_table()["id"].to_pylist())
    assert _ids(lance_duck.sql(q, con)) == sorted(v2 - v3)


def test_join_of_a_table_with_itself_at_two_versions(history, con):
    q = (f"SELECT a.id, a.name, b.name FROM '{history}' AT (VERSION => 1) a "
         f"JOIN '{history}' AT (VERSION => 'cleaned') b ON a.id = b.id WHERE a.info.score = 2 ORDER BY a.id")
    rows = lance_duck.sql(q, con).fetchall()
    v1 = _pl(history, version=1).to_table().to_pylist()
    v3 = {r["id"]: r for r in _pl(history, version=3).to_table().to_pylist()}
    expected = [(r["id"], r["name"], v3[r["id"]]["name"]) for r in v1 if r["info"]["score"] == 2 and r["id"] in v3]
    assert rows == expected


def test_count_star_is_answered_from_metadata_and_matches_pylance(history, con, monkeypatch):
    from lance_duck.scan.dataset import LanceDataset

    def no_scan(*a, **k):
        raise AssertionError("count(*) must not scan")
    monkeypatch.setattr(LanceDataset, "scanner", no_scan)
    for v in (1, 2, 3, 4):
        rel = lance_duck.sql(f"SELECT count(*) FROM '{history}' AT (VERSION => {v})", con)
        assert rel.fetchall() == [(_pl(history, version=v).count_rows(),)]
        assert rel.columns == ["count_star()"] and rel.types == ["BIGINT"]


def test_count_star_with_where_goes_through_duckdb(history, con):
    got = lance_duck.sql(f"SELECT count(*) FROM '{history}' WHERE info.city = 'rome'", con).fetchall()
    assert got == [(_pl(history).count_rows(filter="info.city = 'rome'"),)]


def test_missing_table_error_names_the_table(tmp_path, con):
    missing = str(tmp_path / "nope.lance")
    with pytest.raises(FileNotFoundError, match="nope.lance"):
        lance_duck.sql(f"SELECT * FROM '{missing}'", con)


def test_unknown_version_error_names_table_and_reference(history, con):
    with pytest.raises(VersionNotFoundError, match=r"hist\.lance' AT \(VERSION => 99\)"):
        lance_duck.sql(f"SELECT * FROM '{history}' AT (VERSION => 99)", con)


def test_unknown_tag_error_names_table_and_tag(history, con):
    with pytest.raises(TagNotFoundError, match=r"VERSION => 'gold'"):
        lance_duck.sql(f"SELECT * FROM '{history}' AT (VERSION => 'gold')", con)


def test_register_makes_the_path_queryable_as_is(history, con):
    lance_duck.register(con, history, history, version=2)
    assert con.sql(f"SELECT count(*) FROM '{history}'").fetchall() == [(150,)]
    ds = lance_duck.dataset(history)
    lance_duck.register(con, "t", ds, version="cleaned")
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(_pl(history, version=3).count_rows(),)]


def test_default_connection_is_used_when_none_given(history):
    assert lance_duck.sql(f"SELECT max(id) FROM '{history}' AT (VERSION => 1)").fetchall() == [(99,)]
