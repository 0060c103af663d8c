"""Compaction with deferred index remapping (``compact_files(defer_index_remap=True)``): the
indices keep naming the old fragments and row addresses, and a ``__lance_frag_reuse`` index says
where the rows went.

Oracles: pylance's ``list_indices()`` / ``describe_indices()`` at every version; pylance and
lance_duck with ``use_scalar_index=False`` for every filter form of every scalar index type.
Histories: indices, an append they do not cover, deletes, two deferred compactions (the first
one mixing covered and uncovered fragments in a group), a delete after them, then
``optimize_indices``; 2.1 and 2.2 files (without stable row ids: pylance 14.0.2 refuses them).
"""
from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.index import index_segments

from .test_index_metadata import _description_view, _pylance_list

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.filterwarnings("ignore:The .list_indices. method is deprecated:DeprecationWarning")

FILTERS = [
    "id = 1234", "id IN (3, 1501, 4499, 6001, 7777)", "id >= 2990 AND id < 3010", "id IS NULL",
    "cat = 'c3'", "cat IN ('c1', 'c5') AND id < 400", "cat IS NULL",
    "amount > 1900.0", "amount BETWEEN 10.0 AND 12.0",
    "array_has_any(tags, ['t1'])", "array_has_all(tags, ['t2', 'u4'])",
    "contains(txt, 'word7 ')", "txt LIKE '%row 44_ %'",
    "key = 4321", "key IN (17, 5000, 7100)",
    "id = 1234 OR contains(txt, 'row 2 ')",
]
# pylance 14.0.2 refuses defer_index_remap on tables with stable row ids ("not supported by
# this build"), so there are no such tables to read.
TABLES = ["2.1", "2.2"]


def _rows(start: int, n: int) -> pa.Table:
    i = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "cat": pa.array([None if k % 11 == 0 else f"c{k % 7}" for k in i], pa.string()),
        "amount": pa.array(i * 0.25, pa.float64()),
        "tags": pa.array([[f"t{k % 3}", f"u{k % 5}"] for k in i], pa.list_(pa.string())),
        "txt": pa.array([f"row {k} word{k % 17} " for k in i], pa.string()),
        "key": pa.array((i * 7919) % 10_007, pa.int64()),
    })


def make_deferred_history(path: str, *, storage: str) -> str:
    """Versions: 1 write, 2-7 indices, 8 append, 9 delete, 11 deferred compaction, 12 delete
    (pylance writes the remapped bitmaps), 13 append, 15 deferred compaction, 16 delete,
    17 optimize_indices (indices rewritten for the new fragments)."""
    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(_rows(0, 6000), path, max_rows_per_file=1500, data_storage_version=storage)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("amount", "ZONEMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("txt", "NGRAM")
    ds.create_scalar_index("key", "BLOOMFILTER")
    ds.insert(_rows(6000, 1000))                          # not covered by any index
    ds.delete("id % 13 = 5 OR (id >= 3000 AND id < 3100)")
    ds = lance.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=3500, defer_index_remap=True)
    ds = lance.dataset(path)
    ds.delete("id % 17 = 2")
    ds.insert(_rows(7000, 1000))
    ds = lance.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=6000, defer_index_remap=True)
    lance.dataset(path).delete("id = 4321 OR id = 1501")
    lance.dataset(path).optimize.optimize_indices()
    return path


@pytest.fixture(scope="module", params=TABLES)
def deferred(request, tmp_path_factory) -> str:
    return make_deferred_history(str(tmp_path_factory.mktemp("defer") / "t.lance"), storage=request.param)


def _versions(path: str) -> list[int]:
    return [v["version"] for v in lance.dataset(path).versions()]


def _has_reuse(ds) -> bool:
    return any(s.index_type == "FragmentReuse" for s in index_segments(ds._snapshot))


def test_history_really_defers_index_remapping(deferred):
    with_reuse = [v for v in _versions(deferred) if _has_reuse(lance_duck.dataset(deferred, version=v))]
    assert len(with_reuse) >= 3
    ds = lance_duck.dataset(deferred, version=with_reuse[0])
    seg = next(s for s in index_segments(ds._snapshot) if s.name == "id_idx")
    assert not seg.fragment_ids & {f.id for f in ds._snapshot.fragments}      # only old fragments named


def test_list_and_describe_indices_match_pylance_after_deferred_compaction(deferred):
    for v in _versions(deferred):
        ref = lance.dataset(deferred, version=v)
        ours = lance_duck.dataset(deferred, version=v)
        assert ours.list_indices() == _pylance_list(ref), f"version {v}"
        mine, theirs = ours.describe_indices(), ref.describe_indices()
        assert [_description_view(d) for d in mine] == [_description_view(d) for d in theirs], f"version {v}"
        assert repr(mine) == repr(theirs), f"version {v}"


@pytest.mark.parametrize("flt", FILTERS)
def test_indexed_scans_after_deferred_compaction_equal_full_scans(deferred, flt):
    for v in _versions(deferred)[6:]:
        ours = lance_duck.dataset(deferred, version=v)
        got = ours.to_table(filter=flt)
        assert got.equals(ours.to_table(filter=flt, use_scalar_index=False)), (v, flt)
        ref = lance.dataset(deferred, version=v).to_table(filter=flt, use_scalar_index=False)
        assert got.equals(ref), (v, flt)
        assert ours.count_rows(filter=flt) == ref.num_rows, (v, flt)


@pytest.mark.parametrize("flt", ["id = 1234", "cat = 'c3'", "contains(txt, 'row 1234 ')", "key = 4321"])
def test_segments_answer_for_the_fragments_compacted_from_ones_they_covered(deferred, flt):
    v = next(v for v in _versions(deferred) if _has_reuse(lance_duck.dataset(deferred, version=v)))
    ds = lance_duck.dataset(deferred, version=v)
    sel = ds.scanner(filter=flt)._index_selections()
    frags = {f.id for f in ds._snapshot.fragments}
    assert sel is not None and set(sel) <= frags and set(sel)     # new fragments, through the remap
    assert ds.to_table(filter=flt).equals(ds.to_table(filter=flt, use_scalar_index=False))



def test_a_segment_covering_part_of_a_compaction_group_answers_for_none_of_its_new_fragments():
    from lance_duck.index.reuse import Remap, ReuseGroup, listed_fragments
    old_addrs = np.array([0, 1, (1 << 32) | 1], dtype=np.uint64)          # rows 0:0, 0:1, 1:1 survive
    hist = [(4, [ReuseGroup(old={0: 2, 1: 2}, new={5: 3}, old_addrs=old_addrs)])]
    assert Remap(frozenset({0}), 3, hist).fragment_ids == frozenset()     # fragment 1 was not indexed
    assert listed_fragments(frozenset({0}), hist) == {5}                  # pylance lists it all the same
    full = Remap(frozenset({0, 1}), 3, hist)
    assert full.fragment_ids == {5}
    got = full.addresses(np.array([1, 1 << 32, (1 << 32) | 1], dtype=np.uint64))
    assert got.tolist() == [(5 << 32) | 1, (5 << 32) | 2]                 # 1:0 was deleted before
    assert Remap(frozenset({0, 1}), 5, hist).fragment_ids == {0, 1}       # written after the compaction
