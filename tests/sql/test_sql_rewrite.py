"""The SQL rewriting itself: which references are found and what DuckDB is given (no table opened)."""
from __future__ import annotations

import pytest

from lance_duck.errors import InvalidArgumentError
from lance_duck.integrations.duckdb.rewrite import LanceRef, rewrite


def _refs(q):
    return list(rewrite(q).refs.values())


@pytest.mark.parametrize("query,ref", [
    ("SELECT * FROM 'a/t.lance'", LanceRef("a/t.lance")),
    ('SELECT * FROM "a/t.lance"', LanceRef("a/t.lance")),
    ("SELECT * FROM 't.lance' AT (VERSION => 3)", LanceRef("t.lance", 3)),
    ("SELECT * FROM 't.lance' AT (VERSION => 'gold')", LanceRef("t.lance", "gold")),
    ("SELECT * FROM 't.lance' AT (VERSION => 'dev:2')", LanceRef("t.lance", 2, branch="dev")),
    ("SELECT * FROM 't.lance' AT (TIMESTAMP => '2024-01-01 10:00:00')", LanceRef("t.lance", asof="2024-01-01 10:00:00")),
    ("SELECT * FROM 't.lance' VERSION AS OF 3", LanceRef("t.lance", 3)),
    ("SELECT * FROM 't.lance' TIMESTAMP AS OF '2024-01-01'", LanceRef("t.lance", asof="2024-01-01")),
    ("SELECT * FROM lance_scan('s3://b/t', version => 4, branch => 'dev')", LanceRef("s3://b/t", 4, branch="dev")),
    ("SELECT * FROM lance_scan('t', asof => '2024-01-01', storage_options => {'region': 'eu', 'anon': 'true'})",
     LanceRef("t", asof="2024-01-01", storage_options=(("anon", "true"), ("region", "eu")))),
])
def test_reference_forms_are_recognised(query, ref):
    assert _refs(query) == [ref]


def test_rewritten_sql_uses_generated_names_and_keeps_aliases():
    rw = rewrite("SELECT a.id FROM 't.lance' AT (VERSION => 1) a JOIN 't.lance' AT (VERSION => 2) AS b ON a.id = b.id")
    n1, n2 = LanceRef("t.lance", 1).name, LanceRef("t.lance", 2).name
    assert n1 != n2
    assert rw.sql == f'SELECT a.id FROM "{n1}" AS a JOIN "{n2}" AS b ON a.id = b.id'


def test_same_reference_twice_is_registered_once():
    rw = rewrite("SELECT * FROM 't.lance' x UNION ALL SELECT * FROM 't.lance' y")
    assert len(rw.refs) == 1


def test_unaliased_reference_gets_the_file_stem_as_alias():
    rw = rewrite("SELECT t.id FROM 'dir/t.lance'")
    assert rw.sql.endswith('AS "t"')


def test_non_lance_tables_are_left_alone():
    query = "SELECT * FROM other JOIN 'x.parquet' USING (id)"
    rw = rewrite(query)
    assert rw.refs == {} and rw.sql == query  # nothing to rewrite: DuckDB gets the text as written


@pytest.mark.parametrize("query", ["SELEC * FROM x", "SELECT 'abc", "SELECT 1; SELECT 2"])
def test_sql_without_lance_references_goes_to_duckdb_unchanged(query):
    rw = rewrite(query)
    assert rw.refs == {} and rw.sql == query


@pytest.mark.parametrize("query,counted", [
    ("SELECT count(*) FROM 't.lance'", True),
    ("SELECT COUNT(*) AS n FROM 't.lance' AT (VERSION => 2)", True),
    ("SELECT count(*) FROM lance_scan('t')", True),
    ("SELECT count(*) FROM 't.lance' WHERE id > 1", True),     # counted by lance_duck when it can translate the WHERE
    ("SELECT count(*) FROM 't.lance' GROUP BY id", False),
    ("SELECT count(id) FROM 't.lance'", False),
    ("SELECT count(DISTINCT id) FROM 't.lance'", False),
    ("SELECT count(*), 1 FROM 't.lance'", False),
    ("SELECT count(*) FROM 't.lance' a JOIN 't.lance' b USING (id)", False),
    ("SELECT * FROM (SELECT count(*) FROM 't.lance')", False),
    ("SELECT count(*) FROM 't.lance' LIMIT 0", False),
])
def test_count_star_shortcut_only_for_the_exact_shape(query, counted):
    assert (rewrite(query).count_ref is not None) == counted


@pytest.mark.parametrize("query,msg", [
    ("SELECT * FROM lance_scan('t', 3)", "named arguments"),
    ("SELECT * FROM lance_scan('t', vrsion => 3)", "unknown argument"),
    ("SELECT * FROM lance_scan(version => 3)", "uri as its first argument"),
    ("SELECT * FROM 't.lance' AT (VERSION => 1.5)", "integer or a tag"),
])
def test_bad_references_are_clear_errors(query, msg):
    with pytest.raises(InvalidArgumentError, match=msg):
        rewrite(query)
