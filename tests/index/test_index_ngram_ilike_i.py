"""``lance_duck.sql``: DuckDB ``ILIKE`` patterns with ``i`` take NGRAM candidates (issue 12).

DuckDB lower-cases U+0130 (İ) to ``i`` and U+212A (Kelvin sign) to ``k`` -- and no other non-ASCII
code point to an ASCII one (pinned here over every code point). The view ``lance_duck.sql``
registers keeps a superset of DuckDB's rows (an RE2 pattern with ``[iI\\x{130}]`` for ``i``);
pylance's NGRAM tokenizer lower-cases İ to ``i`` + U+0307, so only trigrams *ending* at that ``i``
hold for such a row (pinned here on a pylance-written index), and the candidates are taken from
runs cut after each ``i``. Oracle: DuckDB over the Arrow table pylance reads at the same version.
"""
from __future__ import annotations


import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.predicate.regex_runs import duckdb_ilike_regex

from .test_index_ngram_ilike import ROWS, ngram_history
from .test_index_scan import data_bytes  # noqa: F401  (fixture)

lance = pytest.importorskip("lance")

# matches of ILIKE patterns with i / k whose matching characters are not all ASCII
ODD = ["\u0130stanbul", "D\u0130ST\u0130NCT", "\u212aILO", "mIxEd \u212ai\u0130", "dist\u0130nct", "\u0131stanbul"]


def rows(start: int, n: int) -> pa.Table:
    k = list(range(start, start + n))
    txt = []
    for i in k:
        if i % 499 == 0:
            txt.append(None)
        elif i % 89 == 0:
            txt.append(f"odd {ODD[(i // 89) % len(ODD)]}-{i % 7} {i}")
        else:
            txt.append(f"Row{i} {['Istanbul', 'distinct', 'kilo', 'Mixed', 'plain'][i % 5]}-{i % 7}")
    return pa.table({"k": pa.array(k, pa.int64()), "txt": pa.array(txt, pa.string())})


def make_history(path: str, *, stable: bool, storage: str) -> str:
    return ngram_history(path, rows, "MOVED \u0130STANBUL distinct", 83, stable=stable, storage=storage)


TABLES = [("2.1", False), ("2.2", True)]


@pytest.fixture(scope="module", params=TABLES, ids=[f"{s}-{'stable' if r else 'plain'}" for s, r in TABLES])
def history(request, tmp_path_factory) -> str:
    storage, stable = request.param
    return make_history(str(tmp_path_factory.mktemp("ilike_i") / "t.lance"), stable=stable, storage=storage)


INDEXED = [
    "txt ILIKE '%istanbul%'",
    "txt ILIKE '%DISTINCT-3%'",
    "txt ILIKE '%kilo-2%'",
    "txt ILIKE 'row12__ distinct%'",
    "txt ILIKE '%mixed ki_%'",
    "txt ILIKE '%istanbul-1%' AND k < 3000",
    "txt ILIKE '%distinct-6%' OR txt ILIKE '%stanbu%'",
]
ODD_MATCHES = ["txt ILIKE '%istanbul%'", "txt ILIKE '%kilo-2%'", "txt ILIKE '%mixed ki_%'"]
SCANNED = ["txt ILIKE '%ii%'", "txt NOT ILIKE '%distinct%'", "txt ILIKE '%istanbul%' OR k = 5"]


@pytest.mark.parametrize("where", INDEXED + SCANNED)
def test_ilike_with_i_equals_duckdb_over_the_arrow_table_at_every_version(history, where):
    con = duckdb.connect()
    for v in range(2, lance.dataset(history).version + 1):
        oracle = duckdb.connect()
        oracle.register("t", lance.dataset(history, version=v).to_table())
        q = "SELECT k, txt FROM {} WHERE " + where + " ORDER BY k"
        got = lance_duck.sql(q.format(f"'{history}' AT (VERSION => {v}) AS t"), con).fetchall()
        want = oracle.execute(q.format("t")).fetchall()
        assert got == want, (v, where)
        if where in ODD_MATCHES:                     # rows matching through İ / the Kelvin sign
            assert any("\u0130" in r[1] or "\u212a" in r[1] for r in want), (v, where)


def _view_filter(where_pattern: str) -> pc.Expression:
    return pc.match_substring_regex(pc.field("txt"), duckdb_ilike_regex(where_pattern))


@pytest.mark.parametrize("pattern", ["%istanbul%", "%DISTINCT-3%", "%row77_ kilo%", "%mixed ki_%"])
def test_the_view_of_an_ilike_with_i_takes_ngram_candidates_holding_every_match(history, pattern):
    ds = lance_duck.dataset(history, version=2)
    flt = _view_filter(pattern)
    sel = ds.scanner(filter=flt)._index_selections()
    assert sel is not None and sum(map(len, sel.values())) < ROWS // 2, pattern
    got = ds.to_table(columns=["k"], filter=flt)["k"].to_pylist()
    for k in got:                                    # fragment f holds k in [2000 f, 2000 f + 2000)
        assert k % 2000 in sel[k // 2000], (pattern, k)
    assert ds.to_table(filter=flt).equals(ds.to_table(filter=flt, use_scalar_index=False))


def test_an_ilike_with_i_through_sql_reads_a_small_fraction_of_the_data(history, data_bytes):  # noqa: F811
    con = duckdb.connect()
    lance_duck.sql(f"SELECT * FROM '{history}' AT (VERSION => 2)", con).fetchall()
    full = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    got = lance_duck.sql(f"SELECT * FROM '{history}' AT (VERSION => 2) WHERE txt ILIKE '%ROW1231 distinct%'", con).fetchall()
    assert got == [(1231, "Row1231 distinct-6")]
    assert data_bytes["bytes"] < 0.2 * full, (data_bytes["bytes"], full)


def test_duckdb_lowercases_only_u0130_and_u212a_to_ascii():
    con = duckdb.connect()
    cps = ("(SELECT range cp FROM range(128, 55296) UNION ALL SELECT range FROM range(57344, 1114112)) c(cp)")
    found = con.execute(f"SELECT cp, lower(chr(cp::INTEGER)) FROM {cps} "
                        "WHERE lower(chr(cp::INTEGER)) < chr(128) ORDER BY cp").fetchall()
    assert found == [(0x130, "i"), (0x212A, "k")]
    for cp, letter in found:
        assert con.execute(f"SELECT chr({cp}) ILIKE '{letter}', chr({cp}) ILIKE '{letter.upper()}'").fetchone() \
            == (True, True)
    arr = pa.array(["\u0130", "\u212a", "\u017f", "i", "I"])   # RE2's folding: K ~ k, ſ ~ s, not İ ~ i
    assert pc.match_substring_regex(arr, "(?i)k").to_pylist() == [False, True, False, False, False]
    assert pc.match_substring_regex(arr, duckdb_ilike_regex("i")).to_pylist() == [True, False, False, True, True]


def test_pylance_tokenizes_u0130_as_i_ending_a_trigram_and_the_kelvin_sign_as_k(tmp_path):
    path = str(tmp_path / "tok.lance")
    chars = ["\u0130", "\u212a", "i", "k", "x"]
    txt = [f"qq{c}zz" for c in chars] + ["filler"] * 20
    lance.write_dataset(pa.table({"k": list(range(len(txt))), "s": txt}), path)
    lance.dataset(path).create_scalar_index("s", "NGRAM")
    ds = lance_duck.dataset(path)

    def candidates(needle: str) -> list[str]:
        sel = ds.scanner(filter=f"contains(s, '{needle}')")._index_selections()
        assert sel is not None, needle
        return sorted(txt[int(r)] for rs in sel.values() for r in rs)

    assert candidates("qqi") == sorted(["qq\u0130zz", "qqizz"])
    assert candidates("qiz") == candidates("izz") == ["qqizz"]       # the combining dot cuts them
    for needle in ("qqk", "qkz", "kzz"):
        assert candidates(needle) == sorted(["qq\u212azz", "qqkzz"]), needle
