"""IVF_HNSW_FLAT / _SQ / _PQ: the graph walk reproduces pylance's results exactly, also where ``ef`` is
small enough that the walk misses true neighbours (so the walk itself, not only the distances, is pinned)."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from .._kernels import KERNELS, use_walk_kernels
from .conftest import assert_same_ann, queries
from .test_vector_ivf_search import METRICS, pylance_ann, segment_of

HNSW_TYPES = ("IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ")


@pytest.fixture(params=KERNELS)
def walk_kernels(request, monkeypatch) -> str:
    """The walk's kernels for the test: numpy, or the compiled level-0 walk (SQ partitions)."""
    use_walk_kernels(monkeypatch, request.param)
    return request.param


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("index_type", HNSW_TYPES)
def test_hnsw_walk_matches_pylance(vector_table, index_type, metric, walk_kernels):
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


@pytest.fixture(scope="module")
def one_partition_graph(tmp_path_factory) -> str:
    """3,000 x 32 unclustered vectors in one HNSW partition: at ef = k the walk misses true neighbours."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3000, 32)).astype(np.float32)
    path = str(tmp_path_factory.mktemp("hnsw_one") / "t.lance")
    t = pa.table({"id": np.arange(3000), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 32)})
    lance.write_dataset(t, path).create_index("vec", index_type="IVF_HNSW_FLAT", num_partitions=1)
    return path


def test_small_ef_walk_misses_neighbours_as_pylance_does(one_partition_graph):
    """ef = k on one big partition: the walk is approximate, and ours is pylance's walk."""
    ds, seg = lance.dataset(one_partition_graph), segment_of(one_partition_graph)
    rng = np.random.default_rng(8)
    missed = 0
    for _ in range(8):
        q = rng.standard_normal(32).astype(np.float32)
        for k in (5, 10):
            ours = seg.search(q, k, minimum_nprobes=1, maximum_nprobes=1, ef=k, keep=None)
            exact = seg.search(q, k, minimum_nprobes=1, maximum_nprobes=1, ef=10_000, keep=None)
            missed += len(set(exact[0].tolist()) - set(ours[0].tolist()))
            assert_same_ann(pylance_ann(ds, q, k, nprobes=1, ef=k), ours)
    assert missed > 0, "the walk found every true neighbour: the test pins nothing beyond distances"


@pytest.mark.parametrize("index_type", ["IVF_HNSW_FLAT", "IVF_HNSW_SQ"])
@pytest.mark.parametrize("modulus", [2, 25])
def test_hnsw_keep_mask_matches_pylance_prefilter(vector_table, modulus, index_type, walk_kernels):
    """A mask keeping half the rows filters the walk's results; one keeping under 10% of a partition
    searches its kept rows exactly (pylance's two prefilter paths)."""
    path = vector_table(index_type, "l2")
    ds, seg = lance.dataset(path), segment_of(path)
    where = f"id % {modulus} = 0"
    allowed = ds.to_table(columns=["id"], with_row_id=True, filter=where)["_rowid"].to_numpy()
    for q in queries(4):
        for nprobes, k, ef in ((1, 5, 5), (2, 10, None), (3, 20, 20)):
            ours = seg.search(q, k, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=ef,
                              keep=lambda ids: np.isin(ids, allowed))
            extra = {} if ef is None else {"ef": ef}
            assert_same_ann(pylance_ann(ds, q, k, filter=where, nprobes=nprobes, **extra), ours,
                            ties_at_k=index_type == "IVF_HNSW_SQ")


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ"])
def test_distance_range_applies_inside_the_search_as_pylance(vector_table, index_type, walk_kernels):
    """[lower, upper) filters candidates before the top-k (and inside the HNSW walk's results), so k rows in
    range come back; bounds sit between distances (no float ties at the edges)."""
    path = vector_table(index_type, "l2")
    ds, seg = lance.dataset(path), segment_of(path)
    for q in queries(4):
        base = pylance_ann(ds, q, 40, nprobes=3)[1]
        for lo_i, hi_i, ef in ((5, 30, None), (3, None, 10), (None, 12, None)):
            lo = None if lo_i is None else float(base[lo_i] + base[lo_i + 1]) / 2
            hi = None if hi_i is None else float(base[hi_i] + base[hi_i + 1]) / 2
            extra = {"distance_range": (lo, hi)} | ({} if ef is None else {"ef": ef})
            ours = seg.search(q, 10, minimum_nprobes=3, maximum_nprobes=3, ef=ef, keep=None, distance_range=(lo, hi))
            assert_same_ann(pylance_ann(ds, q, 10, nprobes=3, **extra), ours, ties_at_k="SQ" in index_type)


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_HNSW_SQ"])
def test_distance_range_through_to_table_equals_pylance(vector_table, index_type):
    """The query side hands distance_range to the index search: k rows in range come back, as pylance's."""
    import lance_duck

    path = vector_table(index_type, "l2")
    ds = lance.dataset(path)
    for q in queries(3):
        base = pylance_ann(ds, q, 40, nprobes=3)[1]
        lo, hi = float(base[4] + base[5]) / 2, float(base[30] + base[31]) / 2
        spec = {"column": "vec", "q": q, "k": 10, "nprobes": 3, "distance_range": (lo, hi)}
        want = ds.to_table(columns=["id"], nearest=spec, with_row_id=True)
        got = lance_duck.dataset(path).to_table(columns=["id"], nearest=spec, with_row_id=True)
        assert want.num_rows == 10
        assert_same_ann((want["_rowid"].to_numpy(), want["_distance"].to_numpy()),
                        (got["_rowid"].to_numpy(), got["_distance"].to_numpy()))


def test_partition_graph_is_held_compactly_and_charged_as_held(one_partition_graph):
    """A graph of under 65,536 nodes holds its neighbour lists as uint16 (a quarter of intp), its per-node
    slices as uint32, and the index cache is charged what it holds."""
    from lance_duck.index.files import CACHE
    seg = segment_of(one_partition_graph)
    g = seg.graph.graph(0)
    nodes, start, end, vals = g.levels[0]
    assert nodes is None and vals.dtype == np.uint16 and start.dtype == end.dtype == np.uint32
    assert all(lv[0].dtype == np.uint16 and lv[3].dtype == np.uint16 for lv in g.levels[1:])
    values = sum(len(lv[3]) for lv in g.levels)
    upper = sum(len(lv[0]) for lv in g.levels[1:])
    assert g.nbytes == 2 * values + 8 * 3000 + 10 * upper
    assert CACHE.peek(("hnsw-partition", seg.graph.file.path, 0)) is g
    assert CACHE._items[("hnsw-partition", seg.graph.file.path, 0)][1] == g.nbytes


def test_compiled_walk_equals_the_numpy_walk_step_for_step(monkeypatch):
    """On one big SQ partition at small ef (an approximate walk whose path matters), with and without a
    keep mask and distance bounds, the compiled walk returns the numpy walk's nodes and distances."""
    from lance_duck.index.vector import hnsw
    use_walk_kernels(monkeypatch, "compiled")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3000, 32)).astype(np.float32)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        t = pa.table({"id": np.arange(3000), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 32)})
        lance.write_dataset(t, d + "/t.lance").create_index("vec", index_type="IVF_HNSW_SQ", num_partitions=1)
        seg = segment_of(d + "/t.lance")
        ids, payload = seg.partition(0)
        g = seg.graph.graph(0)
        mask = np.arange(3000) % 3 != 0
        for q in rng.standard_normal((6, 32)).astype(np.float32):
            score = seg.storage.scorer(seg.storage.query(q), seg.centroids[0], payload)
            assert getattr(score, "sq_parts", None) is not None
            for k, ef, m, bounds in ((5, 5, None, None), (10, 40, mask, None), (10, 10, None, (20.0, 60.0))):
                compiled = hnsw.walk(g, score, k, ef, m, bounds)
                monkeypatch.setitem(hnsw._state._settings, "compiled_kernels", 0)
                plain = hnsw.walk(g, score, k, ef, m, bounds)
                monkeypatch.setitem(hnsw._state._settings, "compiled_kernels", 1)
                assert len(plain[0]) and compiled[0].tolist() == plain[0].tolist()
                assert compiled[1].tobytes() == plain[1].tobytes()


def test_compiled_walk_loads_in_the_background_after_numpy_walks(monkeypatch):
    """A process walks with numpy first; after WARM_WALKS walks the compiled walk loads on another thread
    (none with compiled_kernels=0)."""
    from lance_duck import _state
    from lance_duck.index.vector import hnsw
    pytest.importorskip("numba")
    monkeypatch.setitem(_state._settings, "compiled_kernels", 0)
    assert hnsw.compiled_walk() is None
    monkeypatch.setitem(_state._settings, "compiled_kernels", 1)
    loader = _state.WarmLoader(hnsw._import_walk, hnsw.WARM_WALKS, "test-hnsw-load")
    monkeypatch.setitem(_state._slots, "hnsw_kernels", loader)
    for _ in range(hnsw.WARM_WALKS - 1):
        assert hnsw.compiled_walk() is None
    assert not loader.started
    hnsw.compiled_walk()
    assert loader.started
    import time
    deadline = time.monotonic() + 120
    while hnsw.compiled_walk() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hnsw.compiled_walk() is not None
