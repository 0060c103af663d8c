"""Per-segment IVF_FLAT / IVF_PQ / IVF_SQ search reproduces pylance's ANN ids and unrefined ``_distance``."""
from __future__ import annotations

import lance
import numpy as np
import pytest

from lance_duck.index import index_segments
from lance_duck.index.vector import open_vector_segment
from lance_duck.table.snapshot import open_snapshot

from .conftest import queries

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


def assert_same_ann(theirs, ours, *, ties_at_k: bool = False):
    """Same row ids in the same order and the same float32 distances.

    Rows whose distances are equal to float32 rounding (our sums and pylance's SIMD sums may differ in
    the last bit) may come in either order. With ``ties_at_k`` (SQ's integer distances), rows tied with
    the k-th distance may be other rows of that distance (pylance keeps an arbitrary subset of a tie at
    the cut)."""
    (ids_p, d_p), (ids_m, d_m) = theirs, ours
    assert len(ids_m) == len(ids_p)
    np.testing.assert_allclose(d_m, d_p, rtol=2e-6, atol=2e-6)
    if not len(d_p):
        return
    scale = np.maximum(np.abs(d_p[1:]), np.abs(d_p[:-1]))
    starts = np.concatenate([[0], np.flatnonzero(np.diff(d_p) > 4e-7 * np.maximum(scale, 1)) + 1, [len(d_p)]])
    for a, b in zip(starts[:-1], starts[1:]):
        if ties_at_k and b == len(d_p):
            break
        assert sorted(ids_m[a:b].tolist()) == sorted(ids_p[a:b].tolist()), (a, b)
    if not ties_at_k:   # float distances: groups of equal distances are rare
        assert sum(b - a > 1 for a, b in zip(starts[:-1], starts[1:])) <= max(1, len(d_p) // 10)


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
