"""IVF_RQ (pylance 14.0.2: 1- to 9-bit RaBitQ, fast rotation, raw-query estimator) reproduces pylance's ANN row ids
in order and its unrefined ``_distance`` (float32 summation order aside), per segment and through
``to_table(nearest=...)``, for l2, cosine and dot; refine and prefilter on top; only probed partitions read."""
from __future__ import annotations

import shutil
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError, UnsupportedFeatureError
from lance_duck.index import index_segments
from lance_duck.index.vector import open_vector_segment
from lance_duck.index.vector.rabitq import RQStorage
from lance_duck.table.snapshot import open_snapshot
from lance_duck.trace import decode_trace

from .conftest import assert_same_ann, queries

METRICS = ("l2", "cosine", "dot")
RTOL, ATOL = 2e-6, 2e-5       # distances of ~10-60 summed in another order than pylance's SIMD kernels


def segment_of(path: str):
    snap = open_snapshot(path)
    (seg,) = index_segments(snap)
    return open_vector_segment(snap, seg)


def assert_same(theirs: pa.Table, ours: pa.Table, key: str = "_rowid") -> None:
    """pylance's ids in its order and its distances; rows whose distances agree to the summation order's
    rounding may come in either order (pylance trains its partitions afresh on each run)."""
    assert ours.schema.field("_distance").type == pa.float32()
    assert_same_ann((theirs[key].to_numpy(), theirs["_distance"].to_numpy()),
                    (ours[key].to_numpy(), ours["_distance"].to_numpy()),
                    rtol=RTOL, atol=ATOL, tie_rtol=2 * RTOL, tie_atol=2 * ATOL)


@pytest.mark.parametrize("metric", METRICS)
def test_segment_search_matches_pylance_ids_and_distances(vector_table, metric):
    path = vector_table("IVF_RQ", metric)
    ds, seg = lance.dataset(path), segment_of(path)
    assert (seg.index_type, seg.metric, seg.dim, seg.num_partitions) == ("IVF_RQ", metric, 16, 8)
    for q in queries(6, seed=41):
        for nprobes in (1, 3, 8):
            for k in (5, 20):
                theirs = ds.to_table(nearest={"column": "vec", "q": q, "k": k, "nprobes": nprobes,
                                              "maximum_nprobes": nprobes}, with_row_id=True, columns=["id"])
                ids, dist = seg.search(q, k, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=None, keep=None)
                assert_same_ann((theirs["_rowid"].to_numpy(), theirs["_distance"].to_numpy()), (ids, dist),
                                rtol=RTOL, atol=ATOL, tie_rtol=2 * RTOL, tie_atol=2 * ATOL)


@pytest.mark.parametrize("metric", METRICS)
def test_to_table_nearest_matches_pylance(vector_table, metric):
    path = vector_table("IVF_RQ", metric)
    ds, ours = lance.dataset(path), lance_duck.dataset(path)
    for q in queries(5, seed=43):
        for nprobes in (1, 2, 4):
            for k in (1, 10, 40):
                spec = {"column": "vec", "q": q, "k": k, "nprobes": nprobes}
                assert_same(ds.to_table(nearest=spec, columns=["id"]), ours.to_table(nearest=spec, columns=["id"]),
                            key="id")


@pytest.mark.parametrize("metric", METRICS)
def test_refine_and_prefilter_match_pylance(vector_table, metric):
    path = vector_table("IVF_RQ", metric)
    ds, ours = lance.dataset(path), lance_duck.dataset(path)
    for q in queries(4, seed=47):
        spec = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
        for kw in ({"nearest": {**spec, "refine_factor": 3}},
                   {"nearest": spec, "filter": "id % 3 = 0", "prefilter": True},
                   {"nearest": {**spec, "refine_factor": 2}, "filter": "id % 2 = 1", "prefilter": True}):
            assert_same(ds.to_table(columns=["id"], with_row_id=True, **kw),
                        ours.to_table(columns=["id"], with_row_id=True, **kw))


@pytest.mark.parametrize("metric", ("l2", "dot"))
def test_deleted_rows_are_masked_where_the_gate_passes_them_as_pylance(vector_table, metric, tmp_path):
    """Deleted rows are refused only among those the 1-bit bound lets through: the k-th distance the
    later rows are gated by is the one pylance's scan reaches."""
    path = str(tmp_path / "deleted.lance")
    shutil.copytree(vector_table("IVF_RQ", metric), path)
    lance.dataset(path).delete("id % 7 = 2 OR id < 40")
    ds, ours = lance.dataset(path), lance_duck.dataset(path)
    for q in queries(4, seed=53):
        for nprobes in (1, 4):
            spec = {"column": "vec", "q": q, "k": 10, "nprobes": nprobes}
            theirs = ds.to_table(nearest=spec, columns=["id"])
            assert theirs.num_rows == 10 and not any(i % 7 == 2 or i < 40 for i in theirs["id"].to_pylist())
            assert_same(theirs, ours.to_table(nearest=spec, columns=["id"]), key="id")


def test_only_probed_partitions_are_read(vector_table):
    seg = segment_of(vector_table("IVF_RQ", "l2"))
    q = queries(1, seed=21)[0]
    with decode_trace() as tr:
        seg.search(q, 10, minimum_nprobes=2, maximum_nprobes=2, ef=None, keep=None)
    probed = [p for _, p in tr.values("vector:probe")]
    order, _ = seg.partition_order(q)
    assert probed == order[:2].tolist()
    assert {p for _, p, _ in tr.values("vector:read-partition")} <= set(probed)


@pytest.mark.parametrize("dim", [24, 64])
def test_other_dimensions_match_pylance(tmp_path, dim):
    """A dimension that is not a power of two (the rotation's Kac-walk form) and a whole 64-dim ex block."""
    rng = np.random.default_rng(dim)
    x = rng.normal(size=(1500, dim)).astype(np.float32)
    path = str(tmp_path / f"rq{dim}.lance")
    t = pa.table({"id": np.arange(len(x)), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)})
    ds = lance.write_dataset(t, path)
    ds.create_index("vec", index_type="IVF_RQ", num_partitions=4, metric="l2")
    ours = lance_duck.dataset(path)
    for seed in range(4):
        q = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
        spec = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
        assert_same(ds.to_table(nearest=spec, columns=["id"]), ours.to_table(nearest=spec, columns=["id"]), key="id")


@pytest.mark.parametrize("stable", [False, True])
def test_two_segments_with_deletions_match_pylance(segmented_table, stable):
    path = segmented_table("IVF_RQ", stable)
    ds, ours = lance.dataset(path), lance_duck.dataset(path)
    assert len(index_segments(open_snapshot(path))) == 2
    for q in queries(4, seed=53):
        for nprobes in (1, 4):
            spec = {"column": "vec", "q": q, "k": 10, "nprobes": nprobes}
            assert_same(ds.to_table(nearest=spec, columns=["id"], with_row_id=True),
                        ours.to_table(nearest=spec, columns=["id"], with_row_id=True))


def test_appended_unindexed_rows_are_searched_flat_and_merged(tmp_path):
    from .conftest import table, vectors
    x = vectors(2800)
    path = str(tmp_path / "rq_append.lance")
    ds = lance.write_dataset(table(x[:2400]), path)
    ds.create_index("vec", index_type="IVF_RQ", num_partitions=4)
    ds = lance.write_dataset(table(x[2400:], 2400), path, mode="append")
    ours = lance_duck.dataset(path)
    for q in queries(4, seed=59):
        spec = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
        assert_same(ds.to_table(nearest=spec, columns=["id"]), ours.to_table(nearest=spec, columns=["id"]), key="id")


@pytest.mark.parametrize("change, error", [
    ({"fast_rotation_signs": [1, 2, 3]}, CorruptFileError), ({"code_dim": 12}, CorruptFileError),
    ({"num_bits": 10}, UnsupportedFeatureError), ({"num_bits": 0}, UnsupportedFeatureError),
    ({"num_bits": True}, UnsupportedFeatureError), ({"query_estimator": "residual_query"}, UnsupportedFeatureError),
    ({"rotation_type": "matrix"}, UnsupportedFeatureError)])
def test_bad_or_other_storage_metadata_is_refused_naming_the_file(change, error):
    meta = {"rotate_mat_position": None, "fast_rotation_signs": list(range(8)), "rotation_type": "fast",
            "code_dim": 16, "num_bits": 5, "packed": True, "query_estimator": "raw_query"}
    RQStorage("l2", 16, "t.lance/_indices/u/auxiliary.idx", meta)       # as pylance writes it
    with pytest.raises(error, match="auxiliary.idx") as raised:
        RQStorage("l2", 16, "t.lance/_indices/u/auxiliary.idx", {**meta, **change})
    if error is UnsupportedFeatureError:     # the way round is named
        assert "use_index=False" in str(raised.value)


WIDTHS = [(bits, "l2", 24) for bits in (1, 2, 3, 4, 6, 7, 8, 9)] + [(bits, "l2", 128) for bits in (2, 3, 6, 7)] + [
    (bits, metric, 32) for metric in ("cosine", "dot") for bits in (1, 3, 6, 9)]


@pytest.mark.parametrize("num_bits, metric, dim", WIDTHS)
def test_every_num_bits_pylance_writes_matches_pylance(tmp_path, num_bits, metric, dim):
    """num_bits 1 (sign bits only) to 9 (8 extra bits per dim, each width its own blocked layout), within one
    partial 64-dim block (24) and over two (128): pylance's ids in order and its distances."""
    rng = np.random.default_rng(dim + num_bits)
    x = rng.normal(size=(1200, dim)).astype(np.float32)
    path = str(tmp_path / f"rq{num_bits}.lance")
    t = pa.table({"id": np.arange(len(x)), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)})
    ds = lance.write_dataset(t, path)
    ds.create_index("vec", index_type="IVF_RQ", num_partitions=4, metric=metric, num_bits=num_bits)
    seg = segment_of(path)
    assert seg.storage.ex_bits == num_bits - 1
    ours = lance_duck.dataset(path)
    for seed in range(3):
        q = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
        for nprobes, k in ((1, 5), (2, 10), (4, 30)):
            spec = {"column": "vec", "q": q, "k": k, "nprobes": nprobes}
            assert_same(ds.to_table(nearest=spec, columns=["id"]), ours.to_table(nearest=spec, columns=["id"]),
                        key="id")


def test_sql_lance_vector_search_uses_the_rq_index_as_pylance(vector_table):
    path = vector_table("IVF_RQ", "l2")
    q = queries(1, seed=61)[0]
    vec = "[" + ", ".join(repr(float(v)) for v in q) + "]::FLOAT[16]"
    rel = lance_duck.sql(f"SELECT id, _distance FROM lance_vector_search('{path}', 'vec', {vec}, k => 8, "
                         "nprobs => 2) ORDER BY _distance, id")
    got = rel.arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    want = lance.dataset(path).to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 8, "nprobes": 2})
    assert_same(want, got, key="id")
