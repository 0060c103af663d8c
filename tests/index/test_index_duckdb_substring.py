"""``lance_duck.sql`` hands a query's substring conjuncts (``LIKE '%x%'``, ``contains``,
``starts_with`` / ``prefix``, ``ends_with`` / ``suffix``) to the Lance scan, which DuckDB itself
never does, so that NGRAM indices answer them; results stay DuckDB's.

Oracle: the same query run by DuckDB over the Arrow table pylance reads (no index involved).
"""
from __future__ import annotations

import duckdb
import pytest
import sqlglot

import lance_duck
from lance_duck.integrations.duckdb.pushdown import substring_terms

from .test_index_scan import data_bytes  # noqa: F401  (fixture)

lance = pytest.importorskip("lance")

WHERE = [
    "txt LIKE '%Row 1234 %'",
    "contains(txt, 'Row 12345 ')",
    "t.txt LIKE 'Row 4321 %' AND k > 5",
    "starts_with(txt, 'Row 4321')",
    "prefix(txt, 'Row 777 ')",
    "ends_with(txt, 'Café-9 #45')",
    "suffix(txt, '#12') AND k < 13000",
    "TXT LIKE '%Row 2345_ %'",
    "contains(txt, 'alpha') AND contains(txt, 'Row 100')",
    # not taken (the view is the whole table, DuckDB filters), or taken by later forms
    # (ILIKE, regexp_matches: test_index_duckdb_substring_forms.py)
    "txt NOT LIKE '%a%' AND k < 30",
    "txt ILIKE '%row 1234 %'",
    "contains(txt, 'Row 1234 ') OR k = 3",
    "txt LIKE '%Row 1234!_%' ESCAPE '!'",
    "txt LIKE '%\\%'",
    "regexp_matches(txt, 'Row 1234 ')",
    "contains(payload, '00001234')",                   # no index on payload: a plain filtered scan
]


@pytest.mark.parametrize("where", WHERE)
def test_sql_with_substring_conjuncts_equals_duckdb_over_the_arrow_table(ngram_text_table, ngram_text_oracle, where):
    q = "SELECT k, txt FROM {} WHERE " + where + " ORDER BY k"
    got = lance_duck.sql(q.format(f"'{ngram_text_table}' AS t")).fetchall()
    want = ngram_text_oracle.execute(q.format("t")).fetchall()
    assert got == want
    assert lance_duck.sql(f"SELECT count(*) FROM '{ngram_text_table}' t WHERE {where}").fetchall() == [(len(want),)]


@pytest.mark.parametrize("where", ["contains(txt, 'Row 12345 ')", "txt LIKE '%Row 54321 B%'",
                                   "lance_scan:starts_with(txt, 'Row 4321 ')"])
def test_sql_substring_conjuncts_reach_the_ngram_index(ngram_text_table, data_bytes, where):  # noqa: F811
    ref = f"'{ngram_text_table}'"
    if where.startswith("lance_scan:"):
        ref, where = f"lance_scan('{ngram_text_table}')", where.split(":", 1)[1]
    con = duckdb.connect()
    full = lance_duck.sql(f"SELECT * FROM '{ngram_text_table}'", con).to_arrow_table()
    full_bytes = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    got = lance_duck.sql(f"SELECT * FROM {ref} WHERE {where}", con).to_arrow_table()
    assert 0 < got.num_rows < 20
    assert data_bytes["bytes"] < 0.1 * full_bytes, (data_bytes["bytes"], full_bytes)   # (~3-5% seen)
    assert full.num_rows == 60_000


def test_a_filtered_view_does_not_change_an_earlier_relation_over_the_same_table(ngram_text_table):
    con = duckdb.connect()
    everything = lance_duck.sql(f"SELECT count(k) FROM '{ngram_text_table}'", con)
    some = lance_duck.sql(f"SELECT count(k) FROM '{ngram_text_table}' WHERE contains(txt, 'Row 12345 ')", con)
    assert some.fetchall() == [(1,)]
    assert everything.fetchall() == [(60_000,)]


@pytest.mark.parametrize("sql, terms", [
    ("SELECT * FROM t WHERE a LIKE '%x%' AND b = 1", [("a", "like", "%x%"), ("b", "compare", ("=", 1.0, True))]),
    ("SELECT * FROM t AS u WHERE u.a LIKE 'x%' AND suffix(a, 'y')", [("a", "like", "x%"), ("a", "ends_with", "y")]),
    ("SELECT * FROM t WHERE contains(a, 'x') OR b = 1", None),
    ("SELECT * FROM t WHERE s.a LIKE '%x%'", None),                      # a struct field, not t's column
    ("SELECT * FROM t JOIN u ON t.i = u.i WHERE t.a LIKE '%x%'", None),
    ("SELECT * FROM t WHERE a LIKE '%x%' AND i IN (SELECT i FROM u)", None),
    ("SELECT * FROM t WHERE a LIKE b", None),
    ("SELECT * FROM t WHERE a NOT LIKE '%x%'", None),
])
def test_substring_terms_come_only_from_where_conjuncts_of_a_single_table_query(sql, terms):
    found = substring_terms(sqlglot.parse_one(sql, read="duckdb"))
    assert (None if found is None else found[1]) == terms
