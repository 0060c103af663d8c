"""lance_fts(...) in lance_duck.sql: the same rows and scores as full_text_query= in Python."""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError, UnsupportedFeatureError

from .fts_tables import table


@pytest.fixture(scope="session")
def sql_table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("fts_sql") / "t.lance")
    ds = lance.write_dataset(table(800, 11), uri, max_rows_per_file=300)
    ds.create_scalar_index("text", "INVERTED")
    ds.tags.create("indexed", 2)
    ds = lance.write_dataset(table(50, 12, start=800), uri, mode="append")
    ds.delete("id % 17 = 3")
    return uri


def py(uri, text, k, **kw):
    return lance_duck.dataset(uri, version=kw.pop("version", None)).to_table(
        full_text_query={"query": text, "columns": ["text"]}, limit=k, **kw)


def rows(rel) -> pa.Table:
    return rel.arrow().read_all() if hasattr(rel.arrow(), "read_all") else rel.arrow()


@pytest.mark.parametrize("text,k", [("w1", 10), ("w2 w9 dog", 25), ("lazy dogs", 3), ("nothingmatches", 5)])
def test_lance_fts_equals_python(sql_table, text, k):
    got = lance_duck.sql(f"select * from lance_fts('{sql_table}', 'text', '{text}', k => {k})").fetchall()
    want = py(sql_table, text, k)
    assert got == [tuple(r.values()) for r in want.to_pylist()]


def test_lance_fts_default_k_is_10(sql_table):
    got = lance_duck.sql(f"select id from lance_fts('{sql_table}', 'text', 'w3')").fetchall()
    assert [r[0] for r in got] == py(sql_table, "w3", 10)["id"].to_pylist()


def test_lance_fts_versions_and_tags(sql_table):
    for version in (2, "indexed"):
        v = f"'{version}'" if isinstance(version, str) else version
        got = lance_duck.sql(f"select id, _score from lance_fts('{sql_table}', 'text', 'w4', k => 7, "
                             f"version => {v})").fetchall()
        want = py(sql_table, "w4", 7, version=version, columns=["id"])
        assert got == [tuple(r.values()) for r in want.to_pylist()]


def test_lance_fts_prefilter_takes_the_where(sql_table):
    got = lance_duck.sql(f"select id, _score from lance_fts('{sql_table}', 'text', 'w1 w5', k => 8, "
                         "prefilter => true) f where f.id > 50 and id < 700").fetchall()
    want = py(sql_table, "w1 w5", 8, columns=["id"], filter="id > 50 and id < 700", prefilter=True)
    assert got == [tuple(r.values()) for r in want.to_pylist()]
    assert len(got) == 8


def test_lance_fts_without_prefilter_filters_the_k_rows(sql_table):
    got = lance_duck.sql(f"select id from lance_fts('{sql_table}', 'text', 'w1 w5', k => 8) "
                         "where id > 400").fetchall()
    top = py(sql_table, "w1 w5", 8, columns=["id"])["id"].to_pylist()
    assert [r[0] for r in got] == [i for i in top if i > 400]


def test_lance_fts_bad_arguments(sql_table):
    with pytest.raises(InvalidArgumentError, match="k must be a positive"):
        lance_duck.sql(f"select * from lance_fts('{sql_table}', 'text', 'w1', k => 0)")
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        lance_duck.sql(f"select * from lance_fts('{sql_table}', 'nope', 'w1')")
    with pytest.raises(InvalidArgumentError, match="empty"):
        lance_duck.sql(f"select * from lance_fts('{sql_table}', 'text', '')")
    with pytest.raises(InvalidArgumentError, match="unknown argument"):
        lance_duck.sql(f"select * from lance_fts('{sql_table}', 'text', 'w1', kk => 3)")
    with pytest.raises(InvalidArgumentError, match="no INVERTED index"):
        lance_duck.sql(f"select * from lance_fts('{sql_table}', 'title', 'w1')")
    with pytest.raises(UnsupportedFeatureError, match="only table"):
        lance_duck.sql(f"select * from lance_fts('{sql_table}', 'text', 'w1', prefilter => true) a "
                       "join range(3) r on true where a.id > 1")


def test_lance_fts_takes_storage_options(sql_table):
    got = lance_duck.sql(f"select id from lance_fts('{sql_table}', 'text', 'w2', k => 4, "
                         "storage_options => {'timeout': '30s'})").fetchall()
    assert [r[0] for r in got] == py(sql_table, "w2", 4)["id"].to_pylist()
