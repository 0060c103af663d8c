"""Probe rounds on a 32-partition IVF_FLAT index: pylance's first round (adaptive count from the centroid
distances), then the late round while a prefilter leaves fewer than k rows -- same rows as pylance."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from .conftest import assert_same_ann
from .test_vector_ivf_search import pylance_ann, segment_of


@pytest.fixture(scope="module")
def many_partitions(tmp_path_factory) -> str:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3000, 16)).astype(np.float32)
    path = str(tmp_path_factory.mktemp("probes") / "t.lance")
    t = pa.table({"id": np.arange(3000), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 16)})
    lance.write_dataset(t, path, max_rows_per_file=1000).create_index("vec", index_type="IVF_FLAT",
                                                                       num_partitions=32)
    return path


def _queries(n=6):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(16).astype(np.float32) * 1.2 for _ in range(n)]


@pytest.mark.parametrize("probes", [{"minimum_nprobes": 1}, {"minimum_nprobes": 3},
                                    {"minimum_nprobes": 1, "maximum_nprobes": 5},
                                    {"minimum_nprobes": 2, "maximum_nprobes": 20}])
def test_first_round_probe_count_matches_pylance(many_partitions, probes):
    ds, seg = lance.dataset(many_partitions), segment_of(many_partitions)
    assert seg.num_partitions == 32
    lo, hi = probes["minimum_nprobes"], probes.get("maximum_nprobes")
    for q in _queries():
        for k in (1, 5, 30, 100):
            ours = seg.search(q, k, minimum_nprobes=lo, maximum_nprobes=hi, ef=None, keep=None)
            assert_same_ann(pylance_ann(ds, q, k, **probes), ours)


def test_late_round_fills_k_under_a_sparse_prefilter(many_partitions):
    ds, seg = lance.dataset(many_partitions), segment_of(many_partitions)
    where = "id % 41 = 0"          # 74 rows in reach, 1-5 per partition
    allowed = ds.to_table(columns=["id"], with_row_id=True, filter=where)["_rowid"].to_numpy()
    for q in _queries():
        for k, probes in ((10, {"minimum_nprobes": 1}), (40, {"minimum_nprobes": 1}),
                          (30, {"minimum_nprobes": 2, "maximum_nprobes": 9})):
            ours = seg.search(q, k, minimum_nprobes=probes["minimum_nprobes"],
                              maximum_nprobes=probes.get("maximum_nprobes"), ef=None,
                              keep=lambda ids: np.isin(ids, allowed))
            assert_same_ann(pylance_ann(ds, q, k, filter=where, **probes), ours)


def test_rows_of_an_unfilled_late_round_have_their_true_distance(many_partitions):
    """pylance 14.0.2 reports _distance = inf (ordered by row id) for the rows its late round finds when
    fewer than k rows are in reach; lance_duck returns the same rows with their distances."""
    ds, seg = lance.dataset(many_partitions), segment_of(many_partitions)
    where = "id % 41 = 0"
    allowed = ds.to_table(columns=["id"], with_row_id=True, filter=where)["_rowid"].to_numpy()
    q = _queries(1)[0]
    ids_p, d_p = pylance_ann(ds, q, 100, filter=where, minimum_nprobes=1)
    ids_m, d_m = seg.search(q, 100, minimum_nprobes=1, maximum_nprobes=None, ef=None,
                            keep=lambda ids: np.isin(ids, allowed))
    assert sorted(ids_m.tolist()) == sorted(ids_p.tolist()) == sorted(allowed.tolist())
    assert np.isinf(d_p).any() and np.isfinite(d_m).all()
    late = ids_p[np.isinf(d_p)]
    assert late.tolist() == sorted(late.tolist())


def test_refine_probes_for_the_users_k(many_partitions):
    """With refine_factor the segment returns k * refine_factor rows, but pylance sizes its first round for
    the user's k: re-ranked exactly, the rows are pylance's."""
    ds, seg = lance.dataset(many_partitions), segment_of(many_partitions)
    t = ds.to_table(columns=["vec"], with_row_id=True)
    vectors = dict(zip(t["_rowid"].to_pylist(), np.stack(t["vec"].to_numpy(zero_copy_only=False))))
    for q in _queries():
        for k, rf in ((5, 2), (10, 4)):
            ids, _ = seg.search(q, k * rf, minimum_nprobes=1, maximum_nprobes=None, ef=None, keep=None,
                                refine_factor=rf)
            exact = np.array([((vectors[r] - q) ** 2).sum(dtype=np.float32) for r in ids.tolist()], np.float32)
            order = np.lexsort((ids, exact))[:k]
            assert_same_ann(pylance_ann(ds, q, k, refine_factor=rf, minimum_nprobes=1), (ids[order], exact[order]))


def test_default_nprobes_end_to_end_equal_pylance(many_partitions):
    import lance_duck
    ds, ld = lance.dataset(many_partitions), lance_duck.dataset(many_partitions)
    for q in _queries():
        for k in (1, 10, 50):
            spec = {"column": "vec", "q": q, "k": k}
            ours, theirs = ld.to_table(nearest=spec, with_row_id=True), ds.to_table(nearest=spec, with_row_id=True)
            assert_same_ann((theirs["_rowid"].to_numpy(), theirs["_distance"].to_numpy()),
                            (ours["_rowid"].to_numpy(), ours["_distance"].to_numpy()))


@pytest.fixture(scope="module")
def wide_partitions(tmp_path_factory):
    """(metric, dim) -> an IVF_FLAT table of 16 partitions with more dimensions than pylance's 16 float32
    lanes (40: a remainder past the last whole 16-lane chunk)."""
    made = {}

    def make(metric: str, dim: int) -> str:
        if (metric, dim) not in made:
            rng = np.random.default_rng(2)
            x = rng.standard_normal((2000, dim)).astype(np.float32)
            path = str(tmp_path_factory.mktemp("wide") / f"{metric}_{dim}.lance")
            t = pa.table({"id": np.arange(2000), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)})
            lance.write_dataset(t, path).create_index("vec", index_type="IVF_FLAT", metric=metric, num_partitions=16)
            made[metric, dim] = path
        return made[metric, dim]
    return make


@pytest.mark.parametrize("metric, dim", [("l2", 48), ("l2", 40), ("cosine", 48)])
def test_near_ties_between_centroids_rank_as_pylance(wide_partitions, metric, dim):
    """Queries all but equidistant from two centroids (float32 distances a rounding apart): the partition
    probed first at nprobes 1 is pylance's (its squared L2 adds 16 float32 lanes in order)."""
    path = wide_partitions(metric, dim)
    ds, seg = lance.dataset(path), segment_of(path)
    c = seg.centroids.astype(np.float64)
    rng = np.random.default_rng(5)
    for _ in range(60):
        a, b = rng.choice(len(c), 2, replace=False)
        u = (c[a] - c[b]) / np.linalg.norm(c[a] - c[b])
        z = rng.standard_normal(dim)
        z -= (z @ u) * u
        q = ((c[a] + c[b]) / 2 + z * rng.uniform(0.1, 1.0)).astype(np.float32)
        ours = seg.search(q, 5, minimum_nprobes=1, maximum_nprobes=1, ef=None, keep=None)
        assert_same_ann(pylance_ann(ds, q, 5, nprobes=1), ours)
