"""2.0 list columns: whole reads take the pages' offsets as they are (no spans joined; several
offsets pages: test_file_v20_special), selections gather their spans; both equal pylance."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from .conftest import assert_same, load_table, read_column

N = 6000   # rows per written batch


def _lists(r: np.random.Generator, n: int, items: pa.Array, null_p: float, most: int = 4) -> pa.Array:
    lens = r.integers(0, most + 1, n)
    offs = np.concatenate(([0], np.cumsum(lens))).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offs), items.slice(0, int(offs[-1])),
                                    mask=pa.array(r.random(n) < null_p) if null_p else None)


def _batch(r: np.random.Generator) -> pa.RecordBatch:
    ints = pa.array(r.integers(0, 1 << 16, 5 * N).astype(np.int32), mask=r.random(5 * N) < 0.05)
    words = pa.array(np.array([f"w{i}" for i in range(50)])[r.integers(0, 50, 5 * N)])
    inner = _lists(r, 5 * N, pa.array(r.integers(0, 99, 25 * N).astype(np.int32)), 0.1)
    big = pa.array(r.integers(0, 1 << 40, 5 * N))
    return pa.record_batch({
        "li": _lists(r, N, ints, 0.1),
        "ls": _lists(r, N, words, 0.0),
        "ll": _lists(r, N, inner, 0.05),
        "lg": pa.LargeListArray.from_arrays(pa.array(np.arange(0, 3 * N + 1, 3)), big.slice(0, 3 * N)),
    })


@pytest.fixture(scope="module")
def lists20(tmp_path_factory):
    import lance
    r = np.random.default_rng(20)
    batches = [_batch(r) for _ in range(4)]
    path = str(tmp_path_factory.mktemp("lists20") / "t")
    lance.write_dataset(pa.RecordBatchReader.from_batches(batches[0].schema, batches), path,
                        data_storage_version="2.0")
    return lance.dataset(path), load_table(path)


@pytest.mark.parametrize("name", ["li", "ls", "ll", "lg"])
def test_multi_page_lists_equal_pylance_whole_and_selected(lists20, name):
    ds, snap = lists20
    assert len(snap.fragments) == 1
    assert_same(read_column(snap, name, 0), ds.to_table(columns=[name]).column(0), name)
    rows = np.sort(np.random.default_rng(3).choice(ds.count_rows(), 700, replace=False)).astype(np.int64)
    assert_same(read_column(snap, name, 0, rows), ds.take(rows, columns=[name]).column(0), f"take {name}")
    span = range(N - 50, 2 * N + 50)          # a run across a page boundary
    want = ds.to_table(columns=[name]).column(0).combine_chunks().slice(span.start, len(span))
    assert_same(read_column(snap, name, 0, span), want, f"range {name}")
