"""Indices over float16 / float64 vector columns, on 2.1 and 2.3 tables, and IVF_FLAT / IVF_HNSW_FLAT with hamming
over uint8 vectors: per-segment search equals pylance (float16: residuals, normalized queries and cosine in the
vectors' own precision as pylance keeps them)."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from .conftest import assert_same_ann
from .test_vector_ivf_search import pylance_ann, segment_of

N, DIM = 2000, 16
CASES = [
    ("float16", "IVF_FLAT", "cosine", "2.2"), ("float16", "IVF_PQ", "l2", "2.2"), ("float16", "IVF_PQ", "cosine", "2.2"),
    ("float16", "IVF_SQ", "dot", "2.2"), ("float16", "IVF_HNSW_FLAT", "cosine", "2.2"),
    ("float64", "IVF_FLAT", "l2", "2.2"), ("float64", "IVF_PQ", "dot", "2.2"), ("float64", "IVF_SQ", "cosine", "2.2"),
    ("float32", "IVF_PQ", "dot", "2.1"), ("float32", "IVF_HNSW_SQ", "l2", "2.3"),
]


def _vectors() -> np.ndarray:
    return np.random.default_rng(3).normal(size=(N, DIM)).astype(np.float32)


def _build(path: str, arr: pa.Array, index_type: str, metric: str, version: str) -> str:
    ds = lance.write_dataset(pa.table({"id": np.arange(N), "vec": arr}), path, data_storage_version=version,
                             max_rows_per_file=700)
    extra = {"num_sub_vectors": 4} if "PQ" in index_type else {}
    ds.create_index("vec", index_type=index_type, metric=metric, num_partitions=4, **extra)
    return path


@pytest.mark.parametrize("value_type,index_type,metric,version", CASES)
def test_vector_types_match_pylance(tmp_path, value_type, index_type, metric, version):
    x = _vectors()
    arr = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), DIM).cast(
        pa.list_(getattr(pa, value_type)(), DIM))
    path = _build(str(tmp_path / "t.lance"), arr, index_type, metric, version)
    ds, seg = lance.dataset(path), segment_of(path)
    for i in range(4):
        q = x[i * 7] + 0.3
        for nprobes, k in ((1, 5), (2, 10), (4, 20)):
            ours = seg.search(q, k, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=None, keep=None)
            assert_same_ann(pylance_ann(ds, q, k, nprobes=nprobes), ours, ties_at_k="SQ" in index_type)


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_HNSW_FLAT"])
def test_hamming_matches_pylance(tmp_path, index_type):
    b = np.random.default_rng(5).integers(0, 256, (N, 8)).astype(np.uint8)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(b.ravel()), 8)
    path = _build(str(tmp_path / "h.lance"), arr, index_type, "hamming", "2.2")
    ds, seg = lance.dataset(path), segment_of(path)
    assert seg.metric == "hamming"
    for i in range(4):
        q = b[i * 11]
        for nprobes, k, ef in ((1, 5, 5), (2, 10, None), (4, 20, None)):
            ours = seg.search(q.astype(np.float32), k, minimum_nprobes=nprobes, maximum_nprobes=nprobes, ef=ef,
                              keep=None)
            extra = {} if ef is None else {"ef": ef}
            assert_same_ann(pylance_ann(ds, q, k, nprobes=nprobes, **extra), ours, ties_at_k=True)
