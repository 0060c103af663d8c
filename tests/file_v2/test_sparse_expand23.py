"""2.3 pages of a nullable fixed-width leaf store only the valid rows' values: a whole-column read
scatters every page's values once into the column's output (column.LeafPlan._expand_sparse)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from .conftest import Fixture, assert_same
from lance_duck.file.v2_1.values import expand_valid
from lance_duck.trace import decode_trace

ROWS = 300       # per written batch of 16 KiB rows: pylance cuts a page every ~2 batches (~8 MB)


def _column(name: str, r: np.random.Generator, n: int) -> pa.Array:
    if name == "emb":         # 70 % null vectors: a sparse validity over full-zip values
        return pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 4096).astype(np.float32)), 4096,
                                                 mask=pa.array(r.random(n) < 0.7))
    if name == "item_nulls":  # null vectors and null items inside valid ones (not expanded as bytes)
        items = pa.array(r.random(n * 2048), mask=r.random(n * 2048) < 0.1)
        return pa.FixedSizeListArray.from_arrays(items, 2048, mask=pa.array(r.random(n) < 0.5))
    if name == "nested":      # fixed-size lists of fixed-size lists (pylance zips them with levels)
        inner = pa.FixedSizeListArray.from_arrays(pa.array(r.integers(-99, 99, n * 4096).astype(np.int32)), 64)
        return pa.FixedSizeListArray.from_arrays(inner, 64, mask=pa.array(r.random(n) < 0.4))
    raise AssertionError(name)


NAMES = ["emb", "item_nulls", "nested"]


@pytest.fixture(scope="module")
def sparse_fx(tmp_path_factory):
    import lance
    root = tmp_path_factory.mktemp("sparse_expand")
    out = {}
    for name in NAMES:
        r = np.random.default_rng(NAMES.index(name))
        batches = [pa.record_batch({name: _column(name, r, ROWS)}) for _ in range(4)]
        # all-null rows: a page (or part of one) without values
        batches[3:3] = [pa.record_batch({name: pa.nulls(ROWS, batches[0].schema.field(0).type)})] * 2
        path = str(root / name)
        lance.write_dataset(pa.RecordBatchReader.from_batches(batches[0].schema, batches), path,
                            data_storage_version="2.3")
        out[name] = Fixture(path)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_sparse_fixed_width_pages_equal_pylance_whole_and_selected(sparse_fx, name):
    fx = sparse_fx[name]
    reader = fx.reader()
    (f,) = fx.fields()
    with decode_trace() as trace:
        assert_same(reader.read_field(f), fx.expected.column(name), name)
    expanded = trace.values("path:sparse-expand")
    if name == "emb":
        assert expanded and expanded[0] >= 3, (name, expanded)   # several pages scattered at once
    if name == "item_nulls":
        assert not expanded     # values with nulls of their own take the page-by-page path
    sel = np.sort(np.random.default_rng(9).choice(fx.ds.count_rows(), 500, replace=False)).astype(np.int64)
    assert_same(reader.read_field(f, sel), fx.ds.take(sel, columns=[name]).column(0), f"take {name}")


def test_expand_valid_places_values_at_the_valid_slots_of_each_piece():
    t = pa.list_(pa.int32(), 2)
    parts = [(pa.FixedSizeListArray.from_arrays(pa.array([1, 2, 3, 4], pa.int32()), 2), np.array([0, 1, 0, 1], bool)),
             (pa.FixedSizeListArray.from_arrays(pa.array([], pa.int32()), 2), np.zeros(2, bool)),
             (pa.FixedSizeListArray.from_arrays(pa.array([5, 6, 7, 8, 9, 10], pa.int32()), 2).slice(1), np.ones(2, bool))]
    got = expand_valid(parts, t)
    assert got is not None
    got.validate(full=True)
    assert got.to_pylist() == [None, [1, 2], None, [3, 4], None, None, [7, 8], [9, 10]]
    # null slots hold zeros (not whatever the allocator held before)
    assert got.values.to_numpy().tolist() == [0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 7, 8, 9, 10]
    assert expand_valid([(pa.array(["a"]), np.ones(1, bool))], pa.string()) is None
    assert expand_valid([(pa.array([1, None]), np.ones(2, bool))], pa.int64()) is None
