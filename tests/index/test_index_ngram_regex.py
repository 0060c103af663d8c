"""Regular expressions take NGRAM candidates from the literal runs every match contains (issue 12).

``predicate/regex_runs.required_runs`` is checked as a property: for every pattern and every
string RE2 matches (a corpus with near misses), one top-level alternative has all its runs in the
string. Then end to end, over a partial-coverage history (``bloom_ngram_tables``): ``regexp_like``
through ``to_table`` equals pylance and the unindexed read, ``regexp_matches`` / ``~`` through
``lance_duck.sql`` equal DuckDB over the Arrow table pylance reads, and the index ran.
"""
from __future__ import annotations

import itertools

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.predicate.regex_runs import duckdb_ilike_regex, required_runs

from .bloom_ngram_tables import index_versions, make_history
from .test_index_scan import data_bytes  # noqa: F401  (fixture)

lance = pytest.importorskip("lance")

PATTERNS = [
    "Row 4[0-9]{3} GAMMA", "^Row 7+ ", "Row 1234 .*", "abc|defg", "a(bcd)?efg", "(?i)hello wor(ld|k)",
    r"foo\.bar\d+baz", "[]abc]xyz", "ab{2,3}cd", "ab{0,2}cd", "x(yz)+w", "(ab|cd)efg", "a.c*d+e?fgh",
    "(?:abc){2}", "(?P<n>abc)def", "(?i:ABC)def", r"a\-b\ c", "a{,3}bcd", "(a|b(c|d))eee", r"\bword\b",
    "[[:alpha:]]+123", "hello$", "ab+?cd", r"k\x41bcd", "x|", "(?s)a.b", "zz*top",
    duckdb_ilike_regex("%distinct%"), duckdb_ilike_regex("row_1 %Ki%"),
]
CORPUS = ["abc", "defg", "abcefg", "aefg", "abcdefg", "hello world", "HELLO WORK", "hello wor", "foo.bar12baz",
          "foo.barbaz", "]xyz", "axyz", "abbcd", "abbbcd", "acd", "abcd", "xyzw", "xyzyzw", "xw", "abefg", "cdefg",
          "a", "acdfgh", "aedfgh", "adfgh", "abcabc", "abcdef", "ABCdef", "abcDEF", "a-b c", "a{,3}bcd", "abcd",
          "aeee", "bceee", "bdeee", "ceee", "word", "a word here", "sword", "xy123", "123", "hello", "hellox",
          "abcd", "abbbbcd", "kAbcd", "kabcd", "x", "", "a\nb", "top", "ztop", "zztop", "Row 4123 GAMMA",
          "Row 7 ", "Row 777 ", "Row 1234 x", "distinct", "D\u0130ST\u0130NCT", "dist\u0130nct", "row 1 Ki",
          "ROW21 xx \u212ai\u0130", "row_1 ki"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_match_holds_the_runs_of_one_alternative(pattern):
    read = required_runs(pattern)
    assert read is not None, pattern
    branches, flagged = read
    strings = CORPUS + ["".join(p) for p in itertools.product(["ab", "c", "d", "efg", "x"], repeat=3)]
    matched = pc.match_substring_regex(pa.array(strings), pattern).to_pylist()
    assert any(matched) or pattern == r"\bword\b", pattern
    fold = (lambda s: s.lower()) if flagged else (lambda s: s)
    for s, hit in zip(strings, matched):
        if not hit:
            continue
        norm = fold(s.replace("\u0130", "i").replace("\u212a", "k"))
        assert any(all(fold(r) in norm for r in runs) for runs in branches), (pattern, s, branches)


@pytest.mark.parametrize("pattern, runs", [
    ("Row 4[0-9]{3} GAMMA", [["Row 4", " GAMMA"]]),
    ("abc|defg", [["abc"], ["defg"]]),
    ("a(bcd)?efg", [["a", "efg"]]),
    ("x(yz)+w", [["x", "yz", "w"]]),
    ("(ab|cd)efg", [["efg"]]),
    ("ab+cd", [["ab", "bcd"]]),
    (duckdb_ilike_regex("%distinct%"), [["di", "sti", "nct"]]),
])
def test_runs_of_typical_patterns(pattern, runs):
    assert required_runs(pattern)[0] == runs


@pytest.mark.parametrize("pattern", ["x(", "a)b", "[abc", r"\1abc", r"\Z", "(?#comment)abc", "abc\\"])
def test_patterns_not_read_give_no_runs(pattern):
    assert required_runs(pattern) is None


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("ngram_regex") / "t.lance"), stable_row_ids=True, storage="2.2")


REGEXES = ["Row 4[0-9]{3} GAMMA", "Row 123[0-9]+ ", "^Row 4567 .*#4$", "Row 2468 |Row 13579 ", "(?i)row 4321 alpha",
           "Row 3456 (Beta|zeta9) ", "moved t[e]xt"]


@pytest.mark.parametrize("pattern", REGEXES)
def test_regexp_like_equals_pylance_and_the_unindexed_read_with_ngram_candidates(history, pattern):
    flt = f"regexp_like(txt, '{pattern}')"
    for v in index_versions(history)[::2]:
        ours = lance_duck.dataset(history, version=v)
        got = ours.to_table(filter=flt)
        assert got.equals(ours.to_table(filter=flt, use_scalar_index=False)), (v, pattern)
        assert got.equals(lance.dataset(history, version=v).to_table(filter=flt)), (v, pattern)
    sel = lance_duck.dataset(history, version=index_versions(history)[0]).scanner(filter=flt)._index_selections()
    assert sel is not None and sum(map(len, sel.values())) < 20_000, pattern


@pytest.mark.parametrize("where", ["regexp_matches(txt, 'Row 4[0-9]{3} GAMMA')", "txt ~ 'Row 4567 .*#4'",
                                   "regexp_matches(txt, 'Row 2468 |Row 13579 ') AND k > 10",
                                   "regexp_matches(txt, 'Row 9[0-9]* epsilon')"])
def test_regexp_matches_through_sql_equals_duckdb_over_the_arrow_table(history, where):
    con = duckdb.connect()
    for v in index_versions(history)[::3]:
        oracle = duckdb.connect()
        oracle.register("t", lance.dataset(history, version=v).to_table())
        q = "SELECT k, txt FROM @ WHERE " + where + " ORDER BY k"
        assert lance_duck.sql(q.replace("@", f"'{history}' AT (VERSION => {v}) t"), con).fetchall() == \
            oracle.execute(q.replace("@", "t")).fetchall(), (v, where)


def test_a_regex_with_metacharacters_through_sql_reads_a_small_fraction_of_the_data(history, data_bytes):  # noqa: F811
    con = duckdb.connect()
    v = index_versions(history)[0]
    lance_duck.sql(f"SELECT * FROM '{history}' AT (VERSION => {v})", con).fetchall()
    full = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    got = lance_duck.sql(f"SELECT k FROM '{history}' AT (VERSION => {v}) "
                         "WHERE regexp_matches(txt, 'Row 2345[0-9] (alpha|GAMMA)') ORDER BY k", con).fetchall()
    assert got and all(23450 <= k < 23460 for (k,) in got)
    assert data_bytes["bytes"] < 0.1 * full, (data_bytes["bytes"], full)
