"""Tables with vector indices, written by pylance once per session (small: 2,400 rows x 16 dims, seeded).

``vector_table(index_type, metric)`` is a table of three fragments with one index over ``vec`` (8 partitions;
PQ with 4 sub-vectors). ``QUERIES`` are seeded query vectors near the data.
"""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

N, DIM, PARTITIONS, ROWS_PER_FILE = 2400, 16, 8, 800


def vectors(n: int = N, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(12, DIM)) * 1.5
    return (centers[rng.integers(0, 12, n)] + rng.normal(size=(n, DIM))).astype(np.float32)


def table(x: np.ndarray, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(np.arange(start, start + len(x)), pa.int64()),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), DIM)})


def queries(n: int = 5, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    x = vectors()
    return [(x[rng.integers(0, N)] + rng.normal(size=DIM) * 0.7).astype(np.float32) for _ in range(n)]


def index_params(index_type: str) -> dict:
    params: dict = {"num_partitions": PARTITIONS}
    if "PQ" in index_type:
        params["num_sub_vectors"] = 4
    return params


@pytest.fixture(scope="session")
def vector_table(tmp_path_factory):
    """(index_type, metric) -> path of a pylance table with that index over ``vec`` (built once)."""
    made: dict[tuple[str, str], str] = {}
    root = tmp_path_factory.mktemp("vector_index")

    def make(index_type: str, metric: str) -> str:
        key = (index_type, metric)
        if key not in made:
            path = str(root / f"{index_type}_{metric}.lance")
            ds = lance.write_dataset(table(vectors()), path, max_rows_per_file=ROWS_PER_FILE)
            ds.create_index("vec", index_type=index_type, metric=metric, **index_params(index_type))
            made[key] = path
        return made[key]

    return make


@pytest.fixture(scope="session")
def segmented_table(tmp_path_factory):
    """(index_type, stable_row_ids) -> path of a table whose index has two segments: 2,400 rows indexed,
    600 appended and indexed as a delta segment by ``optimize_indices(num_indices_to_merge=0)``, then rows
    deleted (every fragment indexed: version 4 of the history)."""
    made: dict[tuple[str, bool], str] = {}
    root = tmp_path_factory.mktemp("vector_segments")

    def make(index_type: str, stable: bool = False) -> str:
        key = (index_type, stable)
        if key not in made:
            path = str(root / f"{index_type}_{int(stable)}.lance")
            x = vectors(3000)
            kw = {"enable_stable_row_ids": True} if stable else {}
            ds = lance.write_dataset(table(x[:2400]), path, max_rows_per_file=ROWS_PER_FILE, **kw)
            ds.create_index("vec", index_type=index_type, metric="l2", **index_params(index_type))
            ds.insert(table(x[2400:], 2400))
            ds.optimize.optimize_indices(num_indices_to_merge=0)
            lance.dataset(path).delete("id % 11 = 3")
            made[key] = path
        return made[key]

    return make


def assert_same_ann(theirs: tuple[np.ndarray, np.ndarray], ours: tuple[np.ndarray, np.ndarray], *,
                    ties_at_k: bool = False, rtol: float = 2e-6, atol: float = 2e-6,
                    tie_rtol: float = 4e-7, tie_atol: float = 0.0) -> None:
    """Same row ids in the same order and the same float32 distances, as ``(ids, distances)`` pairs.

    Rows whose distances are equal to float rounding (our sums and pylance's SIMD sums may differ in the
    last bits: ``|d1 - d2| <= tie_rtol * max(|d|, 1) + tie_atol``) may come in either order, and the rows
    of the last such group (at the cut, position k) may be other rows of that distance. With ``ties_at_k``
    (SQ's integer distances) groups of equal distances need not be rare."""
    (ids_p, d_p), (ids_m, d_m) = theirs, ours
    assert len(ids_m) == len(ids_p)
    np.testing.assert_allclose(d_m, d_p, rtol=rtol, atol=atol)
    if not len(d_p):
        return
    scale = np.maximum(np.abs(d_p[1:]), np.abs(d_p[:-1]))
    gaps = np.flatnonzero(np.diff(d_p) > tie_rtol * np.maximum(scale, 1) + tie_atol) + 1
    starts = np.concatenate([[0], gaps, [len(d_p)]])
    groups = list(zip(starts[:-1].tolist(), starts[1:].tolist()))
    for a, b in groups[:-1]:
        assert sorted(ids_m[a:b].tolist()) == sorted(ids_p[a:b].tolist()), (a, b)
    # the group at the cut is not compared by id: which rows of one distance (to rounding) made the cut is
    # float rounding, or for a one-row group a near tie with the k+1-th row neither side returned; its
    # distances were compared above
    if not ties_at_k:   # float distances: groups of equal distances are rare
        assert sum(b - a > 1 for a, b in groups) <= max(1, len(d_p) // 10)

