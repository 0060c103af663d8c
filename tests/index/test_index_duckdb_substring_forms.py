"""``lance_duck.sql`` hands ``ILIKE``, ``regexp_matches`` (and ``~``) and ORs of substring
conjuncts to the Lance scan as a filtered view; DuckDB still applies the whole ``WHERE``.

Oracles: the same query run by DuckDB over the Arrow table pylance reads (no index involved);
the hand-off is observed at ``arrow_filter`` (the view's filter) and, for the forms an NGRAM
index answers, by the data bytes read.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
import sqlglot

import lance_duck
from lance_duck.integrations.duckdb import api as ddb
from lance_duck.integrations.duckdb import cache as sql_cache
from lance_duck.integrations.duckdb.pushdown import substring_terms

from .test_index_scan import data_bytes  # noqa: F401  (fixture)

lance = pytest.importorskip("lance")

# (WHERE, Arrow functions the view's filter calls; None: not handed off)
FORMS = [
    ("txt ILIKE '%row 1234 %'", "match_like"),
    ("txt ILIKE '%CAFÉ-3 #4%'", None),                     # non-ASCII pattern: DuckDB alone
    ("txt ILIKE '%épsilon%' OR txt ILIKE '%gamma%'", None),
    ("txt ILIKE 'row 4_ %' AND k < 100", "match_like"),
    ("regexp_matches(txt, 'Row 12345 ')", "match_substring"),
    ("regexp_matches(txt, 'Row 4[0-9]{3} GAMMA')", "match_substring_regex"),
    ("regexp_matches(txt, '^Row 7+ ')", "match_substring_regex"),
    ("regexp_matches(txt, 'row 1234 ', 'i')", None),        # options: DuckDB alone
    ("txt ~ 'Row 1234 .*'", "match_substring_regex"),          # full match: the view keeps a superset
    ("contains(txt, 'Row 12345 ') OR txt LIKE '%Row 54321 B%'", " or "),
    ("(starts_with(txt, 'Row 4321 ') OR ends_with(txt, '#59')) AND k > 10", " or "),
    ("contains(txt, 'Row 1234 ') OR contains(payload, '00004321')", " or "),
    ("contains(txt, 'Row 1234 ') OR k = 3", None),
    ("contains(txt, 'zzz') OR regexp_matches(txt, 'Row 99+ ')", " or "),
]


@pytest.fixture
def handed(monkeypatch) -> list:
    """The filters of the views ``lance_duck.sql`` registered (views are kept per process: start afresh)."""
    sql_cache.clear()
    seen: list = []
    orig = ddb.arrow_filter

    def spy(schema, terms):
        out = orig(schema, terms)
        seen.append(out)
        return out

    monkeypatch.setattr(ddb, "arrow_filter", spy)
    return seen


@pytest.mark.parametrize("where,fn", FORMS)
def test_substring_forms_equal_duckdb_over_the_arrow_table(ngram_text_table, ngram_text_oracle, handed, where, fn):
    q = "SELECT k, txt FROM @ WHERE " + where + " ORDER BY k"
    got = lance_duck.sql(q.replace("@", f"'{ngram_text_table}' AS t")).fetchall()
    want = ngram_text_oracle.execute(q.replace("@", "t")).fetchall()
    assert got == want
    if fn is None:
        assert handed == []
    else:
        assert len(handed) == 1 and fn in str(handed[0]), handed


@pytest.mark.parametrize("where", ["regexp_matches(txt, 'Row 54321 B')",
                                   "contains(txt, 'Row 12345 ') OR txt LIKE '%Row 54321 B%'",
                                   "txt ILIKE '%ROW 54321 B%'"])     # an ILIKE pattern without i
def test_literal_regex_and_ored_substrings_reach_the_ngram_index(ngram_text_table, data_bytes, where):  # noqa: F811
    con = duckdb.connect()
    full = lance_duck.sql(f"SELECT * FROM '{ngram_text_table}'", con).to_arrow_table()
    full_bytes = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    got = lance_duck.sql(f"SELECT * FROM '{ngram_text_table}' WHERE {where}", con).to_arrow_table()
    assert 0 < got.num_rows < 20
    assert data_bytes["bytes"] < 0.1 * full_bytes, (data_bytes["bytes"], full_bytes)
    assert full.num_rows == 60_000


TRICKY = ["İstanbul", "istanbul", "ſtring", "KELVIN \u212a", "kelvin k", "a\nb", "A_B", "ab", None, "straße", "STRASSE"]


@pytest.mark.parametrize("where", ["s ILIKE '%i%'", "s ILIKE '%s%'", "s ILIKE '%k'", "s ILIKE 'a_b'",
                                   "s ILIKE '%STRA%'", "regexp_matches(s, 'a.b')", "regexp_matches(s, '^[a-z]+$')",
                                   "s ILIKE 'kelvin _' OR s LIKE 'ſ%'", "s ILIKE '%kelvin k%'",
                                   "s ILIKE '%tanbul%'", "s ILIKE '%RASS%'", "s ILIKE '%ELV%'"])
@pytest.mark.parametrize("ngram", [False, True])
def test_case_folding_and_newlines_keep_duckdb_semantics(tmp_path, handed, where, ngram):
    path = str(tmp_path / "u.lance")
    tbl = pa.table({"i": pa.array(range(len(TRICKY)), pa.int64()), "s": pa.array(TRICKY, pa.string())})
    lance.write_dataset(tbl, path)
    if ngram:                          # ILIKE patterns without i take its candidates
        lance.dataset(path).create_scalar_index("s", "NGRAM")
    con = duckdb.connect()
    con.register("u", tbl)
    q = "SELECT i FROM {} WHERE " + where + " ORDER BY i"
    assert lance_duck.sql(q.format(f"'{path}' AS u")).fetchall() == con.execute(q.format("u")).fetchall()
    assert len(handed) == 1 and handed[0] is not None


@pytest.mark.parametrize("sql, terms", [
    ("SELECT * FROM t WHERE a ILIKE '%x%'", [("a", "ilike", "%x%")]),
    ("SELECT * FROM t WHERE a NOT ILIKE '%x%'", None),
    ("SELECT * FROM t WHERE a ILIKE '%é%'", None),
    ("SELECT * FROM t WHERE regexp_matches(a, 'x y')", [("a", "contains", "x y")]),
    ("SELECT * FROM t WHERE regexp_matches(a, 'x|y')", [("a", "regexp", "x|y")]),
    ("SELECT * FROM t WHERE regexp_matches(a, 'x(')", None),             # RE2 refuses it: DuckDB reports
    ("SELECT * FROM t WHERE contains(a, 'x') OR b LIKE 'y%'",
     [("", "any", (("a", "contains", "x"), ("b", "like", "y%")))]),
    ("SELECT * FROM t WHERE (contains(a, 'x') OR b = 1) AND a LIKE '%z'", [("a", "like", "%z")]),
    ("SELECT * FROM t WHERE contains(a, 'x') OR NOT contains(a, 'y')", None),
])
def test_substring_forms_taken_from_where(sql, terms):
    found = substring_terms(sqlglot.parse_one(sql, read="duckdb"))
    assert (None if found is None else found[1]) == terms
