"""BTREE indices of tables with stable row ids (index version 1) are used, their ids read as
row addresses.

pylance 14.0.2 writes the BTREE segments of a stable-row-id table with ``index_version`` 1 and
``page_data`` ids that are row addresses (``fragment << 32 | offset``), not stable row ids; it
re-writes them for the new fragments at compaction. Its other scalar index types keep version 0
(LABEL_LIST 1) and stable row ids there. Oracles: pylance (with and without its index) and lance_duck with
``use_scalar_index=False``, at every version of a history (append after the index, delete,
update moving rows, delta segments, compaction, merged segments), in files 2.1 and 2.2.
"""
from __future__ import annotations

import warnings

import duckdb
import lance
import numpy as np
import pytest
from lance.file import LanceFileReader

import lance_duck
from lance_duck.index import index_segments
from lance_duck.index.files import segment_file_path
from lance_duck.index.scalar import BitmapIndex
from lance_duck.trace import decode_trace

from .conftest import batch
from .test_index_scan import data_bytes  # noqa: F401  (fixture)

FIRST_INDEXED = 3          # version 1 write, 2 and 3 the two BTREE indices


def _make(path: str, version: str) -> str:
    """Versions: 1 write, 2-3 BTREE on id and grp, 4 append, 5 delete, 6 update (rows move, grp
    changes), 7 optimize_indices (delta segments), 8 append, 9 compaction, 10 merged segments."""
    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(batch(0, 4500), path, max_rows_per_file=1500, enable_stable_row_ids=True,
                             data_storage_version=version)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("grp", "BTREE")
    ds.insert(batch(4500, 1500))
    ds.delete("id % 13 = 5 OR (id >= 3000 AND id < 3100)")
    ds.update({"grp": "7"}, "id % 97 = 3")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    lance.dataset(path).insert(batch(6000, 900))
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=4000)
    lance.dataset(path).optimize.optimize_indices()
    return path


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def stable_history(request, tmp_path_factory) -> str:
    return _make(str(tmp_path_factory.mktemp("btree_v1") / "t.lance"), request.param)


def _versions(path: str) -> list[int]:
    return [v["version"] for v in lance.dataset(path).versions()][FIRST_INDEXED - 1:]


def _btree_segments(path: str, version: int, name: str = "id_idx") -> list:
    return [s for s in index_segments(lance_duck.dataset(path, version=version)._snapshot) if s.name == name]


def test_btree_segments_of_stable_tables_are_version_1_holding_row_addresses(stable_history):
    moved = 0
    for v in _versions(stable_history):
        rows = lance.dataset(stable_history, version=v).to_table(
            columns=["id"], with_row_id=True, with_row_address=True)
        addr_of = dict(zip(rows["id"].to_pylist(), rows["_rowaddr"].to_pylist()))
        segments = _btree_segments(stable_history, v)
        assert segments and {s.index_version for s in segments} == {1}, v
        for seg in segments:
            page = LanceFileReader(f"{stable_history}/_indices/{seg.uuid}/page_data.lance").read_all().to_table()
            ids = page["ids"].to_numpy()
            assert set((ids >> np.uint64(32)).tolist()) <= set(seg.fragment_ids), (v, seg.uuid)
            live = [(val, int(i)) for val, i in zip(page["values"].to_pylist(), ids)
                    if val in addr_of and (addr_of[val] >> 32) in seg.fragment_ids]
            assert live and all(addr_of[val] == i for val, i in live), (v, seg.uuid)
        moved += int((rows["_rowid"].to_numpy() != rows["_rowaddr"].to_numpy()).sum())
    assert moved > 0            # row ids differ from addresses: the check above tells them apart


def test_only_btree_gets_version_1_on_stable_tables(history_stable, history_plain):
    def kinds(path: str) -> set[tuple[str, int]]:
        return {(s.index_type, s.index_version) for s in index_segments(lance_duck.dataset(path)._snapshot)}
    assert kinds(history_stable) == {("BTree", 1), ("Bitmap", 0), ("ZoneMap", 0), ("BloomFilter", 0),
                                     ("NGram", 0), ("LabelList", 1)}
    assert kinds(history_plain) == (kinds(history_stable) - {("BTree", 1)}) | {("BTree", 0)}


def test_bitmap_segments_of_stable_tables_keep_stable_row_ids(history_stable):
    snap = lance_duck.dataset(history_stable, version=10)._snapshot      # every index built
    seg = next(s for s in index_segments(snap) if s.name == "cat_idx")
    bitmaps = BitmapIndex(snap.io, segment_file_path(snap, seg, "bitmap_page_lookup.lance"), None)
    maps = bitmaps._maps(range(len(bitmaps._keys())))
    assert seg.fragment_ids == {0, 1, 2, 3}
    assert {high for m in maps for high in m} == {0}   # ids below 6000: row ids, not addresses


FILTERS = [
    "id = 1234",
    "id = 3050",                                       # deleted row
    "id = 3",                                          # updated row (moved to a new fragment)
    "id IN (5, 77, 3050, 4601, 6001, 6850, 99999)",
    "id >= 2990 AND id < 3200",
    "id BETWEEN 100 AND 200",
    "id < 20",
    "id > 6500",                                       # rows appended after every index
    "grp IS NULL",
    "grp = 7",                                         # the update's value
    "grp IN (1, 2) AND cat = 'c3'",
    "grp IS NULL AND id > 4000",
    "grp > 37 OR grp IS NULL",
    "id < 300 OR cat = 'c1'",
    "(id = 5 OR id = 4000) AND payload LIKE '%0%'",
    "id BETWEEN 1000 AND 1100 AND cat IS NULL",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_stable_btree_reads_equal_pylance_and_the_unindexed_read(stable_history, flt):
    for v in _versions(stable_history):
        ours = lance_duck.dataset(stable_history, version=v)
        ref_ds = lance.dataset(stable_history, version=v)
        got = ours.to_table(filter=flt)
        ref = ref_ds.to_table(filter=flt, use_scalar_index=False)
        assert got.equals(ours.to_table(filter=flt, use_scalar_index=False)), (v, flt)
        assert got.equals(ref), (v, flt)
        assert got.equals(ref_ds.to_table(filter=flt)), (v, flt)
        assert ours.count_rows(filter=flt) == ref.num_rows, (v, flt)


def test_btree_path_runs_on_stable_tables(stable_history):
    for v in _versions(stable_history):
        ours = lance_duck.dataset(stable_history, version=v)
        assert ours.scanner(filter="id = 1234")._index_selections() is not None, v
        with decode_trace() as tr:
            got = ours.to_table(filter="id = 1234")
        assert got["id"].to_pylist() == [1234]
        assert "path:btree-bisect" in tr.names(), v


def test_count_rows_from_the_stable_btree_alone_reads_no_data(stable_history, data_bytes):  # noqa: F811
    answered = []
    for v in _versions(stable_history):
        ours = lance_duck.dataset(stable_history, version=v)
        frags = {f.id for f in ours._snapshot.fragments}
        covered = set().union(*(s.fragment_ids for s in _btree_segments(stable_history, v)))
        for flt in ["id BETWEEN 2900 AND 3300", "id IN (5, 18, 1234, 99999)", "grp IS NULL AND id < 2000",
                    "grp = 7"]:
            want = lance.dataset(stable_history, version=v).count_rows(flt)
            data_bytes["bytes"] = 0
            assert ours.count_rows(filter=flt) == want, (v, flt)
            if frags <= covered and (flt.startswith("id") or frags <= set().union(
                    *(s.fragment_ids for s in _btree_segments(stable_history, v, "grp_idx")))):
                assert data_bytes["bytes"] == 0, (v, flt)
                answered.append(v)
    assert FIRST_INDEXED in answered and max(_versions(stable_history)) in answered   # after compaction too


def test_duckdb_over_a_stable_btree_table_equals_pylance(stable_history):
    con = duckdb.connect()
    con.register("t", lance_duck.dataset(stable_history))
    got = con.execute("select id, grp from t where id in (3, 17, 4601, 6850) or grp is null and id < 40 "
                      "order by id").fetchall()
    ref = lance.dataset(stable_history).to_table(columns=["id", "grp"],
                                                 filter="id in (3, 17, 4601, 6850) or grp is null and id < 40")
    assert got == sorted((r["id"], r["grp"]) for r in ref.to_pylist()) and len(got) > 4


@pytest.mark.parametrize("where", ["id = 1234", "id BETWEEN 2900 AND 3300 AND grp IS NULL", "grp = 7"])
def test_sql_count_where_on_a_stable_table_is_answered_by_the_btree(stable_history, data_bytes, where):  # noqa: F811
    last = max(_versions(stable_history))                 # after compaction and the merged segments
    con = duckdb.connect()
    got = lance_duck.sql(f"SELECT count(*) FROM '{stable_history}' AT (VERSION => {last}) WHERE {where}", con)
    assert got.fetchall() == [(lance.dataset(stable_history, version=last).count_rows(filter=where),)]
    assert data_bytes["bytes"] == 0, where
