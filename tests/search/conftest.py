"""Vector tables written by pylance 14.0.2 (session-scoped, small): several fragments, duplicate
vectors (ties), null vectors, deletions, an appended fragment, stable row ids, 2.1 / 2.2 / 2.3."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

N, DIM, BITS = 2400, 16, 8


def vector_batch(n: int, seed: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v[7::50] = v[3]                      # exact ties with row 3
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
