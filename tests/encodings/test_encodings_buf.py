"""Decoder output buffers: large outputs come from Arrow's memory pool and go back to it; pages
back to back in memory are joined without a copy."""
import gc

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.encodings._buf import _POOL_MIN_BYTES, empty, join_adjacent


@pytest.mark.parametrize("shape, dtype", [(1 << 20, np.uint8), ((300, 1024), np.uint64), (70_000, np.int32)])
def test_large_outputs_are_writable_arrays_held_in_the_arrow_pool(shape, dtype):
    before = pa.total_allocated_bytes()
    a = empty(shape, dtype)
    assert a.shape == (shape if isinstance(shape, tuple) else (shape,)) and a.dtype == dtype
    assert a.flags.writeable and a.flags.c_contiguous
    assert pa.total_allocated_bytes() - before >= a.nbytes
    a[...] = 7
    arr = pa.array(a.reshape(-1))                     # zero-copy into Arrow keeps the buffer alive
    del a
    gc.collect()
    assert arr[0].as_py() == 7 and arr[len(arr) - 1].as_py() == 7
    del arr
    gc.collect()
    assert pa.total_allocated_bytes() - before < _POOL_MIN_BYTES


def test_small_outputs_stay_plain_numpy():
    before = pa.total_allocated_bytes()
    a = empty(100, np.int64)
    assert a.shape == (100,) and pa.total_allocated_bytes() == before


@pytest.mark.parametrize("dtype", [pa.int64(), pa.float32(), pa.timestamp("us"), pa.int8()])
def test_arrays_back_to_back_in_memory_join_without_a_copy(dtype):
    whole = pa.array(np.arange(1000) % 100, pa.int64()).cast(dtype)
    parts = [whole.slice(0, 300), whole.slice(300, 1), whole.slice(301, 699)]
    joined = join_adjacent(parts)
    assert joined is not None and joined.type == dtype and joined.equals(whole)
    assert joined.buffers()[1].address == whole.buffers()[1].address
    del parts, whole
    gc.collect()
    assert joined.to_pylist()[:3] == pa.array([0, 1, 2], pa.int64()).cast(dtype).to_pylist()  # base kept alive


def test_arrays_apart_in_memory_or_with_nulls_or_variable_width_are_not_joined():
    whole = pa.array(np.arange(100, dtype=np.int64))
    assert join_adjacent([whole.slice(0, 10), whole.slice(20, 10)]) is None       # a gap
    assert join_adjacent([whole.slice(10, 10), whole.slice(0, 10)]) is None       # out of order
    assert join_adjacent([whole.slice(0, 10), whole.slice(10, 10).cast(pa.uint64())]) is None
    assert join_adjacent([whole.slice(0, 10)]) is None
    nulls = pa.array([1, None, 3, 4], pa.int64())
    assert join_adjacent([nulls.slice(0, 2), nulls.slice(2, 2)]) is None
    strings = pa.array(["a", "b", "c"])
    assert join_adjacent([strings.slice(0, 1), strings.slice(1, 2)]) is None
    bools = pa.array([True, False] * 8)
    assert join_adjacent([bools.slice(0, 8), bools.slice(8, 8)]) is None
