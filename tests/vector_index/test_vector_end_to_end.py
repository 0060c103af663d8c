"""``to_table(nearest=...)`` through every index type lance_duck reads equals pylance's table: rows, order,
columns and ``_distance`` (the index types x metrics; several segments; stable row ids; refine)."""
from __future__ import annotations

import lance
import numpy as np
import pytest

import lance_duck
from lance_duck.index import index_segments
from lance_duck.table.snapshot import open_snapshot

from .conftest import assert_same_ann, queries
from .test_vector_ivf_search import METRICS

TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ")
SPECS = ({"k": 10}, {"k": 10, "nprobes": 2}, {"k": 25, "nprobes": 8}, {"k": 7, "minimum_nprobes": 1},
         {"k": 5, "refine_factor": 3}, {"k": 10, "nprobes": 3, "ef": 12})


def assert_same_table(ours, theirs, ties: bool):
    assert ours.schema.equals(theirs.schema)
    assert_same_ann((theirs["_rowid"].to_numpy(), theirs["_distance"].to_numpy()),
                    (ours["_rowid"].to_numpy(), ours["_distance"].to_numpy()), ties_at_k=ties)
    order = {r: i for i, r in enumerate(theirs["_rowid"].to_pylist())}
    for name in theirs.column_names:
        if name not in ("_rowid", "_distance"):   # same rows (order checked above, up to float ties)
            mine = sorted(zip(ours["_rowid"].to_pylist(), ours[name].to_pylist()), key=lambda t: order.get(t[0], -1))
            if not ties:
                assert [v for _, v in mine] == theirs[name].to_pylist()


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("index_type", TYPES)
def test_to_table_nearest_equals_pylance(vector_table, index_type, metric):
    path = vector_table(index_type, metric)
    ds, ld = lance.dataset(path), lance_duck.dataset(path)
    for q in queries(3):
        for extra in SPECS:
            spec = {"column": "vec", "q": q, **extra}
            assert_same_table(ld.to_table(nearest=spec, with_row_id=True),
                              ds.to_table(nearest=spec, with_row_id=True), ties="SQ" in index_type)


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_HNSW_SQ"])
def test_two_segments_with_deletions_equal_pylance(segmented_table, index_type, stable):
    path = segmented_table(index_type, stable)
    snap = open_snapshot(path)
    segs = [s for s in index_segments(snap) if s.name == "vec_idx"]
    assert len(segs) == 2 and not (segs[0].fragment_ids & segs[1].fragment_ids)
    ds, ld = lance.dataset(path), lance_duck.dataset(path)
    for q in queries(3):
        for extra in SPECS:
            spec = {"column": "vec", "q": q, **extra}
            assert_same_table(ld.to_table(nearest=spec, with_row_id=True, columns=["id"]),
                              ds.to_table(nearest=spec, with_row_id=True, columns=["id"]), ties="SQ" in index_type)
            if extra.get("nprobes") == 2:   # and with a prefilter carried into both segments
                assert_same_table(
                    ld.to_table(nearest=spec, with_row_id=True, columns=["id"], filter="id % 3 = 0", prefilter=True),
                    ds.to_table(nearest=spec, with_row_id=True, columns=["id"], filter="id % 3 = 0", prefilter=True),
                    ties="SQ" in index_type)


def test_stable_row_id_segments_hold_row_ids(segmented_table):
    """With stable row ids the index's _rowid are row ids, not addresses; the search returns them."""
    path = segmented_table("IVF_FLAT", True)
    t = lance_duck.dataset(path).to_table(nearest={"column": "vec", "q": queries(1)[0], "k": 5, "nprobes": 8},
                                          with_row_id=True)
    assert np.all(t["_rowid"].to_numpy() < 3000)


@pytest.mark.parametrize("index_type", TYPES)
def test_indexed_and_appended_unindexed_rows_equal_pylance(tmp_path, index_type):
    """An index plus an appended, unindexed fragment: the segment's rows (re-scored exactly, as pylance
    ranks that union) merged with the flat search of the new fragment."""
    from .conftest import index_params, table, vectors
    x = vectors(2700)
    path = str(tmp_path / "t.lance")
    ds = lance.write_dataset(table(x[:2400]), path, max_rows_per_file=800)
    ds.create_index("vec", index_type=index_type, metric="cosine", **index_params(index_type))
    ds.insert(table(x[2400:], 2400))
    ds, ld = lance.dataset(path), lance_duck.dataset(path)
    for q in queries(3):
        for extra in SPECS[:4]:
            spec = {"column": "vec", "q": q, **extra}
            assert_same_table(ld.to_table(nearest=spec, with_row_id=True, columns=["id"]),
                              ds.to_table(nearest=spec, with_row_id=True, columns=["id"]), ties=False)
