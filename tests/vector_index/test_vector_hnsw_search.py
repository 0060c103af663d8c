"""IVF_HNSW_FLAT / _SQ / _PQ: the graph walk reproduces pylance's results exactly, also where ``ef`` is
small enough that the walk misses true neighbours (so the walk itself, not only the distances, is pinned)."""
from __future__ import annotations

import lance
import numpy as np
import pytest

from .conftest import queries
from .test_vector_ivf_search import METRICS, assert_same_ann, pylance_ann, segment_of

HNSW_TYPES = ("IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ")


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("index_type", HNSW_TYPES)
def test_hnsw_walk_matches_pylance(vector_table, index_type, metric):
    path = vector_table(index_type, metric)
    ds, seg = lance.dataset(path), segment_of(path)
    assert (seg.index_type, seg.metric) == (index_type, metric)
    ties = index_type == "IVF_HNSW_SQ"
    for q in queries(4):
        for nprobes in (1, 3):
            for k, ef in ((1, 1), (5, 5), (10, None), (25, 25), (10, 40)):
                ours = seg.search(q, k, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=ef, keep=None)
                extra = {} if ef is None else {"ef": ef}
                assert_same_ann(pylance_ann(ds, q, k, nprobes=nprobes, **extra), ours, ties_at_k=ties)


def test_small_ef_walk_misses_neighbours_as_pylance_does(vector_table):
    """ef = k on one big partition: the walk is approximate, and ours is pylance's walk."""
    path = vector_table("IVF_HNSW_FLAT", "l2")
    ds, seg = lance.dataset(path), segment_of(path)
    missed = 0
    for q in queries(6, seed=9):
        ours = seg.search(q, 10, minimum_nprobes=1, maximum_nprobes=1, ef=10, keep=None)
        exact = seg.search(q, 10, minimum_nprobes=1, maximum_nprobes=1, ef=10_000, keep=None)
        missed += len(set(exact[0].tolist()) - set(ours[0].tolist()))
        assert_same_ann(pylance_ann(ds, q, 10, nprobes=1, ef=10), ours)
    assert missed > 0, "the walk found every true neighbour: the test pins nothing beyond distances"


@pytest.mark.parametrize("modulus", [2, 25])
def test_hnsw_keep_mask_matches_pylance_prefilter(vector_table, modulus):
    """A mask keeping half the rows filters the walk's results; one keeping under 10% of a partition
    searches its kept rows exactly (pylance's two prefilter paths)."""
    path = vector_table("IVF_HNSW_FLAT", "l2")
    ds, seg = lance.dataset(path), segment_of(path)
    where = f"id % {modulus} = 0"
    allowed = ds.to_table(columns=["id"], with_row_id=True, filter=where)["_rowid"].to_numpy()
    for q in queries(4):
        for nprobes, k, ef in ((1, 5, 5), (2, 10, None), (3, 20, 20)):
            ours = seg.search(q, k, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=ef,
                              keep=lambda ids: np.isin(ids, allowed))
            extra = {} if ef is None else {"ef": ef}
            assert_same_ann(pylance_ann(ds, q, k, filter=where, nprobes=nprobes, **extra), ours)
