"""Byte-stream-split decoding.

Used by: 2.1/2.2 ``ByteStreamSplit`` (mini-block, values Flat 16/32/64, usually under
``General`` zstd/lz4). A chunk of n values of w bytes holds w streams of n bytes: byte j of value i
is at ``j*n + i``.
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..errors import CorruptFileError
from ._buf import BufferLike, as_u8, check_count, need, uint_dtype

__all__ = ["decode", "decode_chunks", "encode"]


def decode(data: BufferLike, num_values: int, value_bits: int) -> np.ndarray:
    """Decode one byte-stream-split buffer into ``num_values`` ``uint{value_bits}`` words."""
    dt = uint_dtype(value_bits)
    w = dt.itemsize
    n = check_count(num_values, "byte-stream-split value count")
    buf = as_u8(data)
    need(buf, n * w, f"byte-stream-split ({value_bits}-bit)")
    out = np.empty(n, dt)
    out.view(np.uint8).reshape(n, w)[...] = buf[: n * w].reshape(w, n).T
    return out


def decode_chunks(data: BufferLike, byte_offsets: npt.ArrayLike, counts: npt.ArrayLike,
                  value_bits: int) -> np.ndarray:
    """Decode many byte-stream-split chunks (chunk i: ``counts[i]`` values at ``byte_offsets[i]``)
    into one array. Chunks of equal size are transposed together in one pass."""
    dt = uint_dtype(value_bits)
    w = dt.itemsize
    buf = as_u8(data)
    offs = np.asarray(byte_offsets, dtype=np.int64).reshape(-1)
    cnt = np.asarray(counts, dtype=np.int64).reshape(-1)
    if offs.size != cnt.size:
        raise CorruptFileError("byte-stream-split: offsets and counts differ in length")
    if offs.size == 0:
        return np.empty(0, dt)
    if cnt.min() < 0 or offs.min() < 0 or (offs + cnt * w).max() > buf.size:
        raise CorruptFileError("byte-stream-split: a chunk extends past the end of its buffer")
    total = int(cnt.sum())
    out = np.empty(total, dt)
    ob = out.view(np.uint8)
    out_start = np.cumsum(cnt) - cnt
    for n in np.unique(cnt).tolist():  # one pass per distinct chunk size (usually 1-2)
        idx = np.flatnonzero(cnt == n)
        src = buf[(offs[idx][:, None] + np.arange(n * w))].reshape(idx.size, w, n)
        dst_idx = (out_start[idx] * w)[:, None] + np.arange(n * w)
        ob[dst_idx] = src.transpose(0, 2, 1).reshape(idx.size, n * w)
    return out


def encode(values: np.ndarray) -> bytes:
    """Byte-stream-split encode (tests/benchmarks)."""
    v = np.ascontiguousarray(values)
    planes: np.ndarray = v.view(np.uint8).reshape(v.size, v.dtype.itemsize).T
    return planes.tobytes()
