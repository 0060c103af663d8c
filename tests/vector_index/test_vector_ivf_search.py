"""Per-segment IVF_FLAT / IVF_PQ / IVF_SQ search reproduces pylance's ANN ids and unrefined ``_distance``."""
from __future__ import annotations

import lance
import numpy as np
import pytest

from lance_duck.index import index_segments
from lance_duck.index.vector import open_vector_segment
from lance_duck.table.snapshot import open_snapshot

from .conftest import assert_same_ann, queries

METRICS = ("l2", "cosine", "dot")
IVF_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ")


def segment_of(path: str):
    snap = open_snapshot(path)
    (seg,) = [s for s in index_segments(snap) if s.name == "vec_idx"]
    return open_vector_segment(snap, seg)


def pylance_ann(ds, q, k, *, filter=None, **probes):
    t = ds.to_table(nearest={"column": "vec", "q": q, "k": k, **probes}, with_row_id=True,
                    prefilter=filter is not None, filter=filter, columns=["id"])
    return t["_rowid"].to_numpy(), t["_distance"].to_numpy()


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("index_type", IVF_TYPES)
def test_fixed_nprobes_match_pylance_ids_and_distances(vector_table, index_type, metric):
    path = vector_table(index_type, metric)
    ds, seg = lance.dataset(path), segment_of(path)
    assert (seg.index_type, seg.metric, seg.dim, seg.num_partitions) == (index_type, metric, 16, 8)
    assert seg.fragment_ids == frozenset({0, 1, 2})
    for q in queries():
        for nprobes in (1, 3, 8):
            for k in (1, 10, 40):
                ours = seg.search(q, k, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=None, keep=None)
                assert ours[0].dtype == np.uint64 and ours[1].dtype == np.float32
                assert_same_ann(pylance_ann(ds, q, k, nprobes=nprobes), ours, ties_at_k=index_type == "IVF_SQ")


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("index_type", IVF_TYPES)
def test_open_probe_counts_match_pylance(vector_table, index_type, metric):
    """minimum_nprobes without a maximum, or below one: pylance's first-round heuristics (adaptive for
    IVF_FLAT, a factor of the nearest centroid distance otherwise)."""
    path = vector_table(index_type, metric)
    ds, seg = lance.dataset(path), segment_of(path)
    for q in queries(3):
        for lo, hi in ((1, None), (2, 5), (1, 3)):
            for k in (1, 5, 30):
                ours = seg.search(q, k, minimum_nprobes=lo, maximum_nprobes=hi, ef=None, keep=None)
                probes = {"minimum_nprobes": lo} | ({"maximum_nprobes": hi} if hi else {})
                assert_same_ann(pylance_ann(ds, q, k, **probes), ours, ties_at_k=index_type == "IVF_SQ")


@pytest.mark.parametrize("index_type", IVF_TYPES)
def test_keep_mask_matches_pylance_prefilter(vector_table, index_type):
    path = vector_table(index_type, "l2")
    ds, seg = lance.dataset(path), segment_of(path)
    t = ds.to_table(columns=["id"], with_row_id=True, filter="id % 5 = 0")
    allowed = t["_rowid"].to_numpy()

    def keep(ids):
        return np.isin(ids, allowed)

    for q in queries(3):
        for nprobes in (1, 4):
            ours = seg.search(q, 10, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=None, keep=keep)
            assert np.isin(ours[0], allowed).all()
            assert_same_ann(pylance_ann(ds, q, 10, filter="id % 5 = 0", nprobes=nprobes), ours,
                            ties_at_k=index_type == "IVF_SQ")
