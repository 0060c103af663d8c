"""BLOOMFILTER and NGRAM indices: the scan reads only the zones / rows that may match, and returns
exactly what a full scan returns.

Oracles: pylance with ``use_scalar_index=False`` and lance_duck with ``use_scalar_index=False``
(same rows, same order), at every version of histories that make coverage partial (append after
the index, delete, update, delta segments, a second append, compaction), with and without stable
row ids, on 2.1 and 2.2 files; pylance's own indexed scan where it is right (no stable row ids).
"""
from __future__ import annotations

import glob
import os
import shutil

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.index.bloom import BloomFilterIndex, _may_contain, needle_hashes, xxh64
from lance_duck.index.ngram import needle_tokens

from .bloom_ngram_tables import index_versions, make_history, rows
from .test_index_scan import _data_size, data_bytes  # noqa: F401  (fixture)

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.filterwarnings("ignore:The .list_indices. method is deprecated:DeprecationWarning")

BLOOM_FILTERS = [
    "k = 12345",
    "k = 15200",                                   # deleted
    "k IN (5, 20001, 41234, 52000, 99999)",        # appended after the index, absent
    "k = 45000",                                   # covered by the delta segment only
    "s = 's20'",
    "s = 'moved'",                                 # updated rows
    "s IS NULL",
    "s IN ('s3', 's40', 'nope')",
    "i16 = -14000",
    "i16 IN (-15000, 0)",
    "u8 = 77",
    "f = 0.0",                                     # 0.0 and -0.0 rows
    "f = -0.0",
    "f IN (1.5, 3000.0)",
    "d = DATE '1970-03-01'",
    "ts = TIMESTAMP '2024-01-01 03:25:45'",
    "k = 12345 OR k IS NULL",
    "s = 's20' AND u8 = 17",
    "k = 30001 AND payload LIKE '%3%'",
    "s = 's20' OR payload = 'x'",                  # OR across columns: scanned
]
NGRAM_FILTERS = [
    "contains(txt, 'alpha')",
    "contains(txt, 'Row 1234 ')",
    "txt LIKE '%GAMMA Café-5 #3%'",
    "txt LIKE 'Row 2000_ %'",
    "starts_with(txt, 'Row 4321')",
    "ends_with(txt, '#12')",
    "contains(txt, 'moved')",                      # updated rows
    "contains(txt, 'gamma')",                      # the index lower-cases, the filter does not
    "contains(txt, 'épsilon')",
    "contains(txt, 'Café-1')",
    "contains(txt, 'zeta9 C')",
    "contains(txt, 'zz9q')",                       # a trigram no row holds
    "contains(txt, 'a-')",                         # no trigram: scanned
    "contains(txt, 'Beta') OR contains(txt, 'eta ')",
    "contains(txt, 'delta-x') AND k < 20000",
    "regexp_like(txt, 'Row 777')",
    "txt LIKE '%\\%%'",
    "txt ILIKE '%gamma%'",                         # case-insensitive, ASCII: NGRAM candidates too
    "txt IS NULL",
]
TABLES = [("2.1", False), ("2.1", True), ("2.2", False), ("2.2", True), ("2.3", False)]


@pytest.fixture(scope="module", params=TABLES, ids=[f"{s}-{'stable' if r else 'plain'}" for s, r in TABLES])
def history(request, tmp_path_factory) -> str:
    storage, stable = request.param
    return make_history(str(tmp_path_factory.mktemp("bn") / "t.lance"), stable_row_ids=stable, storage=storage)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("bn") / "plain.lance"), stable_row_ids=False, storage="2.2")


@pytest.mark.parametrize("flt", BLOOM_FILTERS + NGRAM_FILTERS)
def test_bloom_and_ngram_scans_equal_full_scans_at_every_version(history, flt):
    versions = index_versions(history)
    for v in versions:
        ours = lance_duck.dataset(history, version=v)
        got = ours.to_table(filter=flt)
        assert got.equals(ours.to_table(filter=flt, use_scalar_index=False)), (v, flt)
        ref = lance.dataset(history, version=v).to_table(filter=flt, use_scalar_index=False)
        assert got.equals(ref), (v, flt)
        if v in (versions[0], versions[-1]):
            assert ours.count_rows(filter=flt) == ref.num_rows, (v, flt)


def test_bloom_and_ngram_scans_equal_pylance_indexed_scans(plain):
    for v in index_versions(plain):
        ref = lance.dataset(plain, version=v)
        ours = lance_duck.dataset(plain, version=v)
        for flt in BLOOM_FILTERS + NGRAM_FILTERS:
            assert ours.to_table(filter=flt).equals(ref.to_table(filter=flt)), (v, flt)


def _selected(path: str, v: int, flt: str) -> dict[int, int] | None:
    sel = lance_duck.dataset(path, version=v).scanner(filter=flt)._index_selections()
    return None if sel is None else {f: len(o) for f, o in sel.items()}


def test_bloom_filter_keeps_only_the_zones_that_may_hold_the_value(plain):
    # version 9: every index built; fragments 0-3 of 10000 rows, zones [0, 8192) and [8192, 10000)
    assert _selected(plain, 9, "k = 12345") == {0: 0, 1: 8192, 2: 0, 3: 0}
    assert _selected(plain, 9, "k IN (5, 39999)") == {0: 8192, 1: 0, 2: 0, 3: 1808}
    assert _selected(plain, 9, "s IS NULL") == {0: 0, 1: 8192, 2: 0, 3: 0}
    assert _selected(plain, 9, "f = 0.0") == {0: 8192, 1: 0, 2: 8192, 3: 0}     # 0.0 and -0.0
    assert _selected(plain, 9, "ts = TIMESTAMP '2024-01-01 03:25:45'") == {0: 0, 1: 8192, 2: 0, 3: 0}  # k = 12345
    assert _selected(plain, 9, "k = 12345 AND s = 's17'") == {0: 0, 1: 8192, 2: 0, 3: 0}
    assert _selected(plain, 9, "k = -1") == {0: 0, 1: 0, 2: 0, 3: 0}
    # a value in every zone, a range, an OR across columns: no selection, a normal scan
    for flt in ["u8 < 3", "k > 5", "s = 's20' OR payload = 'x'", "k IS NOT NULL"]:
        assert _selected(plain, 9, flt) is None, flt
    # appended after the index (fragment 4): scanned; covered again by the delta segment
    assert 4 not in _selected(plain, 10, "k = 45000")
    # the delta segment was built after deletes: a zone of 8192 live rows spans more offsets
    assert 8192 < _selected(plain, 13, "k = 45000")[4] < 10_000
    assert lance_duck.dataset(plain, version=9).scanner(filter="k = 12345", use_scalar_index=False) \
        ._index_selections() is None


def test_ngram_selects_the_rows_holding_every_trigram(plain):
    sel = _selected(plain, 9, "contains(txt, 'Row 1234 ')")       # also 'Row 11234 ', 'Row 21234 '...
    assert sel[0] == 1 and sum(sel.values()) <= 20
    # trigrams of runs of ASCII letters and digits only ("gam", "amm", "mma", "caf"): the GAMMA rows
    assert sum(_selected(plain, 9, "txt LIKE '%GAMMA Café-5 #3%'").values()) == len(
        [i for i in range(40_000) if i % 7 == 2 and i % 997])
    assert sum(_selected(plain, 9, "contains(txt, 'zz9q')").values()) == 0
    # ILIKE with an ASCII pattern: the same lower-cased trigrams ("gam", "amm", "mma")
    assert sum(_selected(plain, 9, "txt ILIKE '%gamma%'").values()) == len(
        [i for i in range(40_000) if i % 7 == 2 and i % 997])
    # no trigram, unselective, a non-ASCII case-insensitive pattern: a normal scan
    for flt in ["contains(txt, 'a-')", "contains(txt, 'Row')", "txt ILIKE '%épsilon%'", "txt LIKE 'Ro%'"]:
        assert _selected(plain, 9, flt) is None, flt
    # NGRAM segments are remapped by compaction: still used on the compacted fragments
    last = lance_duck.dataset(plain)
    sel = last.scanner(filter="contains(txt, 'Row 1234 ')")._index_selections()
    assert sel is not None and sum(map(len, sel.values())) <= 20


def test_every_value_of_a_zone_passes_its_bloom_filter(tmp_path):
    """The hash and bit layout are Lance's: every value written lies in its zone's filter, over
    integer widths, floats, strings, binary, dates, times and timestamps (with nulls)."""
    assert xxh64(b"") == 17241709254077376921
    n = 20_000
    rng = np.random.default_rng(7)
    cols = {
        "i8": pa.array((np.arange(n) % 200 - 100).astype(np.int8)),
        "i32": pa.array(rng.integers(-2 ** 31, 2 ** 31 - 1, n).astype(np.int32)),
        "u16": pa.array(rng.integers(0, 2 ** 16, n).astype(np.uint16)),
        "u64": pa.array(rng.integers(0, 2 ** 63, n).astype(np.uint64)),
        "f32": pa.array(rng.normal(size=n).astype(np.float32)),
        "s": pa.array([None if i % 5 == 0 else f"é{i}" * (i % 9) for i in range(n)]),
        "ls": pa.array([f"value {i} " * (i % 13) for i in range(n)], pa.large_string()),
        "b": pa.array([bytes([i % 256]) * (i % 40) for i in range(n)], pa.binary()),
        "t64": pa.array(rng.integers(0, 86_400 * 10 ** 6, n), pa.time64("us")),
    }
    path = str(tmp_path / "types.lance")
    table = pa.table(cols)
    ds = lance.write_dataset(table, path, max_rows_per_file=12_000)
    for c in cols:
        ds.create_scalar_index(c, "BLOOMFILTER")
    snap = lance_duck.dataset(path)._snapshot
    for seg in lance.dataset(path).list_indices():
        col = table[seg["fields"][0]].combine_chunks()
        (file,) = glob.glob(f"{path}/_indices/{seg['uuid']}/bloomfilter.lance")
        frag, start, length, has_null, words = BloomFilterIndex(snap.io, file, None)._zones()
        for z in range(len(frag)):
            values = col.slice(int(frag[z]) * 12_000 + int(start[z]), int(length[z]))
            assert bool(has_null[z]) == (values.null_count > 0)
            hashes = needle_hashes(values)
            block = ((hashes >> np.uint64(32)) * np.uint64(words.shape[1])) >> np.uint64(32)
            assert np.unique(block).size > words.shape[1] // 8        # hashes spread over blocks
            found = [bool(_may_contain(words[z:z + 1], hashes[i:i + 1])[0]) for i in range(0, len(hashes), 7)]
            assert all(found), seg["fields"]
            absent = needle_hashes(pa.array(rng.integers(2 ** 40, 2 ** 41, 200), pa.int64()))
            assert _may_contain(words[z:z + 1], absent).sum() < 10      # not "maybe" for everything


def test_needle_tokens_follow_lance_trigram_numbering():
    # "abc": 37² · 11 + 37 · 12 + 13; digits come first (1..10), letters next (11..36)
    assert needle_tokens("abc") == {37 * 37 * 11 + 37 * 12 + 13}
    assert needle_tokens("ABC") == needle_tokens("abc")
    assert needle_tokens("019") == {37 * 37 * 1 + 37 * 2 + 10}
    assert needle_tokens("ab") == set() and needle_tokens("a-b-c") == set() and needle_tokens("é€ß") == set()
    assert len(needle_tokens("Row 1234 x")) == 1 + 2      # "row", "123", "234"


def test_substring_filters_pushed_as_expressions_use_the_ngram_index(plain):
    ds = lance_duck.dataset(plain)
    for flt in [pc.match_substring(pc.field("txt"), "Row 4321 "), pc.starts_with(pc.field("txt"), "Row 4321"),
                pc.ends_with(pc.field("txt"), "Beta Café-3 #9"), pc.match_like(pc.field("txt"), "%Row 432_ Beta%")]:
        assert ds.scanner(filter=flt)._index_selections() is not None, flt
        got = ds.to_table(filter=flt)
        assert got.num_rows > 0 and got.equals(ds.to_table(filter=flt, use_scalar_index=False)), flt
    # ignoring case: an ASCII pattern takes the (lower-cased) trigrams too, a non-ASCII one scans
    for flt, indexed in [(pc.match_substring(pc.field("txt"), "ROW 4321 ", ignore_case=True), True),
                         (pc.match_substring(pc.field("txt"), "ÉPSILON CAFÉ-3 #4", ignore_case=True), False)]:
        assert (ds.scanner(filter=flt)._index_selections() is not None) == indexed
        got = ds.to_table(filter=flt)
        assert got.num_rows > 0 and got.equals(ds.to_table(filter=flt, use_scalar_index=False))


def test_duckdb_queries_over_bloom_and_ngram_indexed_columns(plain):
    con = duckdb.connect()
    con.register("t", lance_duck.dataset(plain))
    ref = lance.dataset(plain)
    for where, flt in [("k IN (17, 12345, 52001)", None), ("s = 's20'", None), ("s IS NULL", None),
                       ("u8 = 77 AND k < 30000", None), ("txt LIKE '%Row 4321 %'", None),
                       ("contains(txt, 'GAMMA Café-5')", "contains(txt, 'GAMMA Café-5')")]:
        got = con.execute(f"select k, s, txt from t where {where} order by k").fetchall()
        want = ref.to_table(columns=["k", "s", "txt"], filter=flt or where).sort_by("k")
        assert got == [tuple(r.values()) for r in want.to_pylist()], where
        assert got or where == "s IS NULL"


def test_missing_or_corrupt_bloom_and_ngram_files_mean_a_normal_scan(plain, tmp_path):
    path = str(tmp_path / "copy.lance")
    shutil.copytree(plain, path)
    flts = ["k = 12345 OR k = 54000", "contains(txt, 'Row 1234 ')", "s = 's20'"]
    want = [lance_duck.dataset(path).to_table(filter=f, use_scalar_index=False) for f in flts]
    for seg in lance.dataset(path).list_indices():
        d = f"{path}/_indices/{seg['uuid']}"
        if seg["name"] == "k_idx":
            shutil.rmtree(d)
        elif seg["name"] in ("txt_idx", "s_idx") and os.path.isdir(d):
            for f in os.listdir(d):
                with open(f"{d}/{f}", "r+b") as fh:
                    fh.truncate(100)
    fresh = lance_duck.dataset(path)
    for f, w in zip(flts, want):
        assert fresh.to_table(filter=f).equals(w), f


# -- reading a small fraction of the data --------------------------------------------------------
@pytest.fixture(scope="module")
def big(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("bnbig") / "big.lance")
    ds = lance.write_dataset(rows(0, 200_000), path, max_rows_per_file=50_000)
    ds.create_scalar_index("k", "BLOOMFILTER")
    ds.create_scalar_index("txt", "NGRAM")
    return path


@pytest.mark.parametrize("flt", ["k = 123457", "k IN (5, 150001)", "contains(txt, 'Row 123457 ')",
                                 "txt LIKE '%Row 154321 eta%'"])
def test_bloom_and_ngram_lookups_read_a_small_fraction_of_the_data(big, data_bytes, flt):  # noqa: F811
    ds = lance_duck.dataset(big)
    full = ds.to_table(filter=flt, use_scalar_index=False)
    full_bytes = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    got = ds.to_table(filter=flt)
    assert got.equals(full) and got.num_rows > 0
    assert ds.scanner(filter=flt)._index_selections() is not None
    if flt.startswith("k "):
        # a bloom filter keeps whole zones (one 8192-row zone of 200,000 rows per needle): only
        # k is read for them; the other columns only for the rows passing the filter (late
        # materialisation; reading every column of the zones costs more than twice as much)
        zones = flt.count(",") + 1
        assert data_bytes["bytes"] < 0.5 * zones * 8192 / 200_000 * _data_size(big)
    else:
        assert data_bytes["bytes"] < 0.1 * full_bytes, (data_bytes["bytes"], full_bytes)
        assert data_bytes["bytes"] < 0.03 * _data_size(big)


def test_substring_conjuncts_come_only_from_case_sensitive_string_forms():
    from lance_duck.predicate import compile_filter
    from lance_duck.predicate.pruning import like_literals

    assert like_literals("%ab\\%c_d%") == ["ab%c", "d"] and like_literals("%%") == []
    schema = pa.schema([("t", pa.string()), ("b", pa.binary()), ("l", pa.large_string())])

    def needles(flt):
        return [p.value.to_pylist() for p in compile_filter(flt, schema).conjuncts
                if getattr(p, "op", None) == "contains"]

    assert needles("t LIKE 'x%y_z'") == [["x", "y", "z"]]
    assert needles("contains(l, 'abc') AND starts_with(t, 'q')") == [["abc"], ["q"]]
    assert needles("regexp_like(t, 'abc')") == [["abc"]]
    assert needles("regexp_like(t, 'ab.cd')") == [["ab", "cd"]]     # a regex's literal runs (regex_runs.py)
    for flt in ["t ILIKE '%abc%'", "NOT contains(t, 'abc')", "contains(b, 'abc')", "regexp_like(t, 'a.c', 'i')",
                "lower(t) LIKE '%abc%'", "t LIKE '%'", "regexp_like(t, '.*')"]:
        assert needles(flt) == [], flt


@pytest.mark.parametrize("flt", ["k = 123457", "contains(txt, 'Row 123457 ')", "k = 123457 AND s = 's3'"])
def test_bloom_and_ngram_selections_are_marked_candidates_and_read_filter_columns_first(big, flt):
    from lance_duck.scan.planning import plan_tasks
    ds = lance_duck.dataset(big)
    scanner = ds.scanner(filter=flt)
    sel = scanner._index_selections()
    assert sel is not None and set(sel.candidates) == set(sel)
    tasks = list(plan_tasks(scanner._fragments, 8192, selections=sel))
    assert tasks and all(t.candidates for t in tasks if t.selection is not None)
    assert ds.to_table(filter=flt).equals(ds.to_table(filter=flt, use_scalar_index=False))
