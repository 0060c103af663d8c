"""Vector tables written by pylance 14.0.2 (session-scoped, small): several fragments, duplicate
vectors (ties), null vectors, deletions, an appended fragment, stable row ids, 2.1 / 2.2 / 2.3."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

N, DIM, BITS = 2400, 16, 8


def vector_batch(n: int, seed: int, start: int = 0, ties: bool = True) -> pa.Table:
    """Rows with vectors; ``ties``: every 50th row from 7 copies row 3's vectors (exact ties; ANN
    tests go without them: the order of equal quantized codes is the index's business)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    if ties:
        v[7::50] = v[3]
    b = rng.integers(0, 256, (n, BITS)).astype(np.uint8)
    b[9::40] = b[1]

    def fsl(values: np.ndarray, size: int, nulls: bool = False) -> pa.Array:
        arr = pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), size)
        if not nulls:
            return arr
        mask = np.zeros(len(values), dtype=bool)
        mask[11::97] = True
        return pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), size, mask=pa.array(mask))

    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "cat": pa.array(ids % 5, pa.int32()),
        "name": pa.array([f"n{i}" for i in ids]),
        "vec": fsl(v, DIM),
        "v16": fsl(v.astype(np.float16), DIM),
        "v64": fsl(v.astype(np.float64), DIM),
        "vnull": fsl(v, DIM, nulls=True),
        "bits": fsl(b, BITS),
    })


def _history(path: str, version: str, stable: bool) -> str:
    kw = {"data_storage_version": version, "max_rows_per_file": 800}
    if stable:
        kw["enable_stable_row_ids"] = True
    lance.write_dataset(vector_batch(N, 1), path, **kw)
    ds = lance.dataset(path)
    ds.delete("id % 7 = 0")
    lance.write_dataset(vector_batch(300, 2, start=N), path, mode="append", **kw)
    ds = lance.dataset(path)
    if stable:   # rows moved by an update keep their row ids
        ds.update({"cat": "cat + 10"}, where="id % 11 = 1")
    return path


@pytest.fixture(scope="session", params=["2.1", "2.2", "2.3"])
def vector_table(request, tmp_path_factory) -> str:
    """A pylance table per data storage version: 4 fragments, deletions, an append."""
    return _history(str(tmp_path_factory.mktemp("vec") / f"t{request.param}.lance"), request.param, False)


@pytest.fixture(scope="session")
def stable_table(tmp_path_factory) -> str:
    """2.2 with stable row ids, deletions, an append and an update (moved rows)."""
    return _history(str(tmp_path_factory.mktemp("vec") / "stable.lance"), "2.2", True)


@pytest.fixture(scope="session")
def indexed_table(tmp_path_factory) -> str:
    """2.2 with an IVF_PQ index on ``vec`` (l2), then an unindexed append and deletions."""
    path = str(tmp_path_factory.mktemp("vec") / "indexed.lance")
    lance.write_dataset(vector_batch(N, 1), path, max_rows_per_file=800)
    ds = lance.dataset(path)
    ds.create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    lance.write_dataset(vector_batch(300, 2, start=N), path, mode="append", max_rows_per_file=800)
    lance.dataset(path).delete("id % 13 = 0")
    return path


#: (index type, metric, build arguments) of the end-to-end index fixtures
INDEXES = {
    "ivf_flat_cos": ("IVF_FLAT", "cosine", {"num_partitions": 4}),
    "ivf_pq_l2": ("IVF_PQ", "l2", {"num_partitions": 4, "num_sub_vectors": 4}),
    "ivf_sq_dot": ("IVF_SQ", "dot", {"num_partitions": 4}),
    "hnsw_sq_l2": ("IVF_HNSW_SQ", "l2", {"num_partitions": 2}),
}


@pytest.fixture(scope="session", params=sorted(INDEXES))
def index_history(request, tmp_path_factory) -> tuple[str, str]:
    """(path, metric): an index built on 3 fragments, a BTREE on ``cat``, deletions, one unindexed
    append; stable row ids (moved rows after an update) for the IVF_PQ one."""
    kind, metric, args = INDEXES[request.param]
    path = str(tmp_path_factory.mktemp("vec") / f"{request.param}.lance")
    stable = request.param == "ivf_pq_l2"
    extra = {"enable_stable_row_ids": True} if stable else {}
    lance.write_dataset(vector_batch(N, 1, ties=False), path, max_rows_per_file=800, **extra)
    ds = lance.dataset(path)
    ds.create_index("vec", kind, metric=metric, **args)
    ds.create_scalar_index("cat", "BTREE")
    ds.delete("id % 13 = 0")
    lance.write_dataset(vector_batch(300, 2, start=N, ties=False), path, mode="append", max_rows_per_file=800,
                        **extra)
    if stable:
        lance.dataset(path).update({"name": "name || 'u'"}, where="id % 17 = 2")
    return path, metric


@pytest.fixture(scope="session")
def segmented_table(tmp_path_factory) -> str:
    """IVF_FLAT (l2) in two segments: the second from optimize_indices over an append; a third
    fragment appended after that stays unindexed."""
    path = str(tmp_path_factory.mktemp("vec") / "segments.lance")
    lance.write_dataset(vector_batch(N, 1, ties=False), path, max_rows_per_file=800)
    lance.dataset(path).create_index("vec", "IVF_FLAT", num_partitions=4)
    lance.write_dataset(vector_batch(400, 2, start=N, ties=False), path, mode="append")
    lance.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)
    lance.write_dataset(vector_batch(200, 3, start=N + 400, ties=False), path, mode="append")
    lance.dataset(path).delete("id % 19 = 0")
    return path


def queries(n: int = 3, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, DIM)).astype(np.float32)
    q[0] = vector_batch(N, 1).column("vec")[3].values.to_numpy()   # hits the tie group
    return q


def assert_same(got: pa.Table, want: pa.Table) -> None:
    """Equal schema and rows in order; ``_distance`` to float32 tolerance."""
    assert got.schema.names == want.schema.names
    assert got.schema == want.schema, (got.schema, want.schema)
    assert got.num_rows == want.num_rows, (got.to_pydict(), want.to_pydict())
    rest = [c for c in want.column_names if c != "_distance"]
    assert got.select(rest).equals(want.select(rest)), (got.select(rest).to_pydict(), want.select(rest).to_pydict())
    if "_distance" in want.column_names:
        np.testing.assert_allclose(got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=2e-5, atol=2e-5)
