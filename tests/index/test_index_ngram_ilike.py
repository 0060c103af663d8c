"""ILIKE through the NGRAM index (issue 12): an ASCII pattern's lower-cased trigrams give
candidate rows, re-checked exactly; results equal pylance's and lance_duck's unindexed read over
histories with partial coverage (append after the index, deletes, an update, optimize_indices),
with and without stable row ids, 2.1 and 2.2. Rows whose matching characters are not ASCII but
fold to ASCII letters (U+212A Kelvin sign ~ k, U+017F long s ~ s) are candidates too; a
non-ASCII pattern, NOT ILIKE and a pattern without a trigram scan normally."""
from __future__ import annotations

import warnings

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck

ROWS = 6_000
WORDS = ["Alpha", "BETA", "gamma", "DeLtA", "epsilon"]
# matches of ILIKE '%kab%' / '%sab%' whose matching characters are not all ASCII
ODD = ["x\u212aab", "y\u017fab", "\u0130ab", "KAB", "sAb", "ka\u0301b"]


def rows(start: int, n: int) -> pa.Table:
    k = list(range(start, start + n))
    txt = []
    for i in k:
        if i % 501 == 0:
            txt.append(None)
        elif i % 97 == 0:
            txt.append(f"odd {ODD[(i // 97) % len(ODD)]} {i}")
        else:
            txt.append(f"Row{i} {WORDS[i % 5]}-{i % 13} Tail_{i % 7}")
    return pa.table({"k": pa.array(k, pa.int64()), "txt": pa.array(txt, pa.string())})


def ngram_history(path: str, make_rows, moved: str, moved_every: int, *, stable: bool, storage: str) -> str:
    """A partial-coverage NGRAM history on ``txt`` of ``make_rows(start, n)``: 1 write, 2 NGRAM,
    3 append, 4 delete, 5 update (``txt`` set to ``moved`` where ``k % moved_every = 5``),
    6 optimize_indices."""
    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(make_rows(0, ROWS), path, max_rows_per_file=2_000,
                             enable_stable_row_ids=stable, data_storage_version=storage)
    ds.create_scalar_index("txt", "NGRAM")
    ds.insert(make_rows(ROWS, 1_000))
    ds.delete("k % 11 = 3")
    ds.update({"txt": f"'{moved}'"}, f"k % {moved_every} = 5")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    return path


def make_history(path: str, *, stable: bool, storage: str) -> str:
    return ngram_history(path, rows, "MOVED gamma kab", 89, stable=stable, storage=storage)


TABLES = [("2.1", False), ("2.2", True), ("2.2", False)]


@pytest.fixture(scope="module", params=TABLES, ids=[f"{s}-{'stable' if r else 'plain'}" for s, r in TABLES])
def history(request, tmp_path_factory) -> str:
    storage, stable = request.param
    return make_history(str(tmp_path_factory.mktemp("ilike") / "t.lance"), stable=stable, storage=storage)


INDEXED = [
    "txt ILIKE '%GAMMA%'",
    "txt ILIKE '%gamma-1_%'",
    "txt ILIKE '%kab%'",                 # KAB, x\u212aab (Kelvin sign), MOVED ... kab
    "txt ILIKE '%sab%'",                 # sAb, y\u017fab (long s)
    "txt ILIKE 'row12__ delta%'",
    "txt ILIKE '%beta%' OR txt ILIKE '%zzq%'",
    "txt ILIKE '%alpha%' AND k < 3000",
]
SCANNED = [
    "txt ILIKE '%\u0130ab%'",            # a non-ASCII pattern
    "txt NOT ILIKE '%gamma%'",
    "txt ILIKE '%ab%'",                  # no trigram
    "txt ILIKE '%gamma%' OR k = 5",      # an OR with another column
    "txt ILIKE '%tail\\_3%'",           # trigrams every row holds: unselective
]


def _selection(ds, flt: str):
    return ds.scanner(filter=flt)._index_selections()


@pytest.mark.parametrize("flt", INDEXED + SCANNED)
def test_ilike_equals_pylance_and_the_unindexed_read_at_every_version(history, flt):
    for v in range(2, lance.dataset(history).version + 1):
        ours = lance_duck.dataset(history, version=v)
        got = ours.to_table(filter=flt)
        assert got.equals(ours.to_table(filter=flt, use_scalar_index=False)), (v, flt)
        ref = lance.dataset(history, version=v)
        assert got.equals(ref.to_table(filter=flt)), (v, flt)
        assert got.equals(ref.to_table(filter=flt, use_scalar_index=False)), (v, flt)
        assert ours.count_rows(filter=flt) == got.num_rows


@pytest.mark.parametrize("flt", INDEXED)
def test_ascii_ilike_patterns_take_ngram_candidates(history, flt):
    ds = lance_duck.dataset(history, version=2)
    sel = _selection(ds, flt)
    assert sel is not None and set(sel.candidates) == set(sel), flt
    assert sum(map(len, sel.values())) < ROWS // 2, flt


@pytest.mark.parametrize("flt", SCANNED)
def test_non_ascii_negated_or_trigram_free_ilike_patterns_scan_normally(history, flt):
    assert _selection(lance_duck.dataset(history, version=2), flt) is None, flt


def test_rows_matching_through_kelvin_sign_and_long_s_are_candidates(history):
    ds = lance_duck.dataset(history, version=2)
    for needle, odd in (("kab", "x\u212aab"), ("sab", "y\u017fab")):
        flt = f"txt ILIKE '%{needle}%'"
        got = ds.to_table(filter=flt)["txt"].to_pylist()
        assert any(odd in t for t in got), (needle, got[:5])
        sel = _selection(ds, flt)
        ks = ds.to_table(columns=["k"], filter=flt)["k"].to_pylist()
        # the candidate rows include every matching row (fragment f holds k in [2000 f, 2000 f + 2000))
        for k in ks:
            assert k % 2000 in sel[k // 2000], (needle, k)


def test_ilike_pushed_as_an_expression_uses_the_ngram_index(history):
    ds = lance_duck.dataset(history, version=2)
    expr = pc.match_like(pc.field("txt"), "%GaMmA%", ignore_case=True)
    sel = ds.scanner(filter=expr)._index_selections()
    assert sel is not None and sum(map(len, sel.values())) < ROWS // 2
    assert ds.to_table(filter=expr).equals(ds.to_table(filter=expr, use_scalar_index=False))
    assert ds.to_table(filter=expr).equals(lance.dataset(history, version=2).to_table(filter="txt ILIKE '%gamma%'"))


def test_ilike_conjuncts_are_icontains_for_ascii_patterns_only():
    from lance_duck.predicate import compile_filter
    schema = pa.schema([("t", pa.string())])

    def ops(flt):
        return [(p.op, p.value.to_pylist()) for p in compile_filter(flt, schema).conjuncts
                if getattr(p, "op", None) in ("contains", "icontains")]

    assert ops("t ILIKE '%AbC%d_e'") == [("icontains", ["AbC", "d", "e"])]
    assert ops("t LIKE '%AbC%'") == [("contains", ["AbC"])]
    for flt in ["t ILIKE '%\u00e9t\u00e9%'", "t NOT ILIKE '%abc%'", "lower(t) ILIKE '%abc%'"]:
        assert ops(flt) == [], flt
