"""Scans that use BTREE / BITMAP indices return exactly what a full scan returns.

Oracles: pylance with ``use_scalar_index=False`` and lance_duck with ``use_scalar_index=False``
(same rows, same order), at every version of histories that make index coverage partial
(append after the index, delete, update, delta segments, compaction), with and without
stable row ids. On tables without stable row ids pylance's own indexed scan agrees too.
"""
from __future__ import annotations

import shutil

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.io import fs as fs_mod

from .conftest import batch

FILTERS = [
    "id = 1234",
    "id = 3050",                                   # deleted row
    "id IN (5, 77, 3050, 6001, 7900, 99999)",
    "id >= 2990 AND id < 3200",
    "id < 20",
    "id > 8350",                                   # rows appended after every index
    "grp IS NULL",
    "grp = 7",                                     # updated rows get grp 7
    "grp IN (1, 2) AND cat = 'c3'",
    "cat = 'moved'",
    "cat IS NULL",
    "cat IN ('c1', 'c2') AND id > 6500",
    "cat = 'c5' OR cat = 'c6'",
    "cat > 'c4'",
    "day = DATE '1970-02-01'",
    "day BETWEEN DATE '1970-01-10' AND DATE '1970-01-12' AND grp = 10",
    "(id BETWEEN 100 AND 200) AND grp = 7",
    "cat = 'nope'",
    "id = 1234 AND payload LIKE '%1%'",
    "seq = 700",                                   # zone map (int)
    "seq > 2700 AND seq <= 2710",
    "amount < 30",                                 # zone map (float: <, <=, = only)
    "amount = 1500.5 OR amount IS NULL",
]


def _versions(path: str) -> list[int]:
    """Every version from the one with all indices on (coverage changes at each of them)."""
    return [v["version"] for v in lance.dataset(path).versions()][9:]


@pytest.mark.parametrize("flt", FILTERS)
def test_indexed_scan_equals_full_scan_at_every_version(history, flt):
    for v in _versions(history):
        ours = lance_duck.dataset(history, version=v)
        got = ours.to_table(filter=flt)
        plain = ours.to_table(filter=flt, use_scalar_index=False)
        ref = lance.dataset(history, version=v).to_table(filter=flt, use_scalar_index=False)
        assert got.equals(plain), f"version {v}: {flt}"
        assert got.equals(ref), f"version {v}: {flt}"
        assert ours.count_rows(filter=flt) == ref.num_rows


def test_indexed_scan_equals_pylance_indexed_scan_without_stable_row_ids(history_plain):
    for v in _versions(history_plain):
        for flt in FILTERS:
            got = lance_duck.dataset(history_plain, version=v).to_table(filter=flt)
            assert got.equals(lance.dataset(history_plain, version=v).to_table(filter=flt)), (v, flt)


def test_stale_index_rows_after_update_are_not_returned_with_stable_row_ids(history_stable):
    """pylance 14.0.2 returns updated rows with their *old* indexed value here (cat='moved'
    rows for ``cat IS NULL``); lance_duck maps the index's row ids through the live rows and
    re-applies the filter."""
    v = 14  # after the update and optimize_indices (delta segments)
    got = lance_duck.dataset(history_stable, version=v).to_table(filter="cat IS NULL")
    assert got["cat"].null_count == got.num_rows > 0
    ref = lance.dataset(history_stable, version=v).to_table(filter="cat IS NULL", use_scalar_index=False)
    assert got.equals(ref)


def test_index_selections_cover_indexed_fragments_only(history_plain):
    ds = lance_duck.dataset(history_plain, version=15)   # fragment 6 appended after every segment
    sel = ds.scanner(filter="id = 1234")._index_selections()
    assert sel is not None and 6 not in sel
    assert set(sel) == {0, 1, 2, 3, 4, 5}
    assert sum(len(s) for s in sel.values()) == 1
    assert ds.scanner(filter="id = 1234", use_scalar_index=False)._index_selections() is None
    # conjuncts on two indexed columns intersect
    both = ds.scanner(filter="grp = 7 AND cat = 'moved'")._index_selections()
    only = ds.scanner(filter="grp = 7")._index_selections()
    assert sum(map(len, both.values())) < sum(map(len, only.values()))


def test_missing_or_corrupt_index_files_mean_a_normal_scan(history_plain, tmp_path):
    path = str(tmp_path / "copy.lance")
    shutil.copytree(history_plain, path)
    ds = lance_duck.dataset(path)
    want = ds.to_table(filter="id = 1234 OR id = 8399", use_scalar_index=False)
    for seg in ds.list_indices():
        if seg["name"] == "id_idx":
            shutil.rmtree(f"{path}/_indices/{seg['uuid']}")
        if seg["name"] == "cat_idx":
            with open(f"{path}/_indices/{seg['uuid']}/bitmap_page_lookup.lance", "r+b") as f:
                f.truncate(100)
    fresh = lance_duck.dataset(path)
    assert fresh.scanner(filter="id = 1234 OR id = 8399")._index_selections() is None
    assert fresh.to_table(filter="id = 1234 OR id = 8399").equals(want)
    assert fresh.to_table(filter="cat = 'c1'").equals(fresh.to_table(filter="cat = 'c1'", use_scalar_index=False))


# -- reading a small fraction of the data --------------------------------------------------------
@pytest.fixture(scope="module")
def big_indexed(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("idxbig") / "big.lance")
    ds = lance.write_dataset(batch(0, 200_000), path, max_rows_per_file=50_000)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    return path


@pytest.fixture
def data_bytes(monkeypatch):
    """Bytes the scan reads from data files (``/data/``), counted around the FileIO."""
    counter = {"bytes": 0}
    orig_ranges = fs_mod.InputFile.read_ranges   # every read (read, read_tail) goes through it

    def read_ranges(self, ranges):
        if "/data/" in self.path:
            counter["bytes"] += sum(n for _, n in ranges)
        return orig_ranges(self, ranges)

    monkeypatch.setattr(fs_mod.InputFile, "read_ranges", read_ranges)
    return counter


def _data_size(path: str) -> int:
    import os
    return sum(os.path.getsize(os.path.join(path, "data", f)) for f in os.listdir(os.path.join(path, "data")))


@pytest.mark.parametrize("flt", ["id = 123457", "id IN (5, 70000, 150001)", "cat = 'c3' AND id < 700"])
def test_point_lookups_read_a_small_fraction_of_the_data(big_indexed, data_bytes, flt):
    ds = lance_duck.dataset(big_indexed)
    full = ds.to_table(filter=flt, use_scalar_index=False)
    full_bytes = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    got = ds.to_table(filter=flt)
    assert got.equals(full) and got.num_rows > 0
    # the index path opens only the fragments holding hits and reads a few chunks of them
    assert data_bytes["bytes"] < full_bytes, (data_bytes["bytes"], full_bytes)
    assert data_bytes["bytes"] < 0.03 * _data_size(big_indexed)


def test_duckdb_pushed_filters_use_the_index(big_indexed, data_bytes):
    con = duckdb.connect()
    con.register("t", lance_duck.dataset(big_indexed))
    q = "select id, cat, payload from t where id in (17, 123457, 199999) order by id"
    got = con.execute(q).fetchall()
    ref = lance.dataset(big_indexed).to_table(columns=["id", "cat", "payload"],
                                              filter="id in (17, 123457, 199999)")
    assert got == [tuple(r.values()) for r in ref.to_pylist()] and len(got) == 3
    assert data_bytes["bytes"] < 0.03 * _data_size(big_indexed), data_bytes["bytes"]
    q2 = "select count(*) from t where cat = 'c2' and id between 1000 and 1999"
    assert con.execute(q2).fetchone()[0] == lance.dataset(big_indexed).count_rows(
        "cat = 'c2' and id between 1000 and 1999")


def test_zone_map_keeps_only_zones_that_may_match(history):
    ds = lance_duck.dataset(history, version=10)          # every index built, nothing else yet
    sel = ds.scanner(filter="seq = 700")._index_selections()
    assert {k: len(v) for k, v in sel.items()} == {0: 0, 1: 1500, 2: 0, 3: 0}
    assert ds.to_table(filter="seq = 700").equals(ds.to_table(filter="seq = 700", use_scalar_index=False))
    # zone maps are not remapped by compaction: the compacted fragments are scanned normally
    last = lance_duck.dataset(history)
    assert last.scanner(filter="seq = 700")._index_selections() is None


@pytest.mark.parametrize("stable", [False, True])
def test_rows_rewritten_by_merge_insert_are_not_served_from_the_index(tmp_path, stable):
    path = str(tmp_path / "mi.lance")
    n = 3000
    t = pa.table({"id": np.arange(n), "cat": [f"c{i % 5}" for i in range(n)], "v": np.arange(n) * 1.0})
    ds = lance.write_dataset(t, path, max_rows_per_file=1000, enable_stable_row_ids=stable)
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("v", "BTREE")
    ids = np.arange(0, n, 7)
    ds.merge_insert("id").when_matched_update_all().execute(
        pa.table({"id": ids, "cat": ["zz"] * len(ids), "v": ids * 1.0 + 0.5}))
    ids = np.arange(1, n, 11)
    lance.dataset(path).merge_insert("id").when_matched_update_all().execute(
        pa.table({"id": ids, "cat": ["yy"] * len(ids)}))
    for v in [x["version"] for x in lance.dataset(path).versions()]:
        ours = lance_duck.dataset(path, version=v)
        for flt in ["cat = 'c1'", "cat = 'zz'", "cat IN ('yy', 'c2')", "v = 7.0", "v = 7.5", "v < 20"]:
            ref = lance.dataset(path, version=v).to_table(filter=flt, use_scalar_index=False)
            assert ours.to_table(filter=flt).equals(ref), (v, flt)


@pytest.mark.parametrize("flt", ["id > 10", "id < 150000", "cat IN ('c1', 'c2', 'c3')", "cat IS NOT NULL"])
def test_unselective_predicates_scan_instead_of_using_the_index(big_indexed, flt):
    ds = lance_duck.dataset(big_indexed)
    assert ds.scanner(filter=flt)._index_selections() is None
    assert ds.scanner(filter="id < 1000")._index_selections() is not None


def test_bench_queries_use_the_index(big_indexed):
    ds = lance_duck.dataset(big_indexed)
    for flt in ["id = 123457", "id IN (5, 70000, 150001, 7, 9)", "id BETWEEN 40000 AND 40999", "cat = 'c3'"]:
        sel = ds.scanner(filter=flt)._index_selections()
        assert sel is not None, flt
        assert ds.to_table(filter=flt).equals(ds.to_table(filter=flt, use_scalar_index=False)), flt


@pytest.mark.parametrize("flt", ["cat = 'c3'", "id IN (5, 70000, 150001, NULL)", "id BETWEEN 40000 AND 40999",
                                 "cat = 'c3' AND id < 7000", "cat IS NULL", "grp = 7 OR grp IS NULL"])
def test_count_rows_answered_from_exact_indices_reads_no_data(big_indexed, data_bytes, flt):
    ds = lance_duck.dataset(big_indexed)
    want = lance.dataset(big_indexed).count_rows(flt)
    data_bytes["bytes"] = 0
    uses = "grp" not in flt                       # grp has no index in this table
    assert ds.count_rows(filter=flt) == want
    assert (data_bytes["bytes"] == 0) == uses, data_bytes["bytes"]
    assert ds.count_rows(filter=flt, use_scalar_index=False) == want


def test_count_rows_with_a_condition_no_index_answers_reads_data(big_indexed, data_bytes):
    ds = lance_duck.dataset(big_indexed)
    flt = "cat = 'c3' AND payload LIKE '0001%'"
    assert ds.count_rows(filter=flt) == lance.dataset(big_indexed).count_rows(flt)
    assert data_bytes["bytes"] > 0
