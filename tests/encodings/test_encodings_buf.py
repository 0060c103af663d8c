"""Decoder output buffers: large outputs come from Arrow's memory pool and go back to it."""
import gc

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.encodings._buf import _POOL_MIN_BYTES, empty


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
