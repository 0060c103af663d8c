"""Zero-copy views over the byte inputs every kernel accepts, with bounds checks.

Kernels take ``bytes``, ``bytearray``, ``memoryview``, ``pyarrow.Buffer`` or numpy arrays and never
read past the end of what they were given: every length derived from file contents is checked
here before it is used to slice or allocate.
"""
from __future__ import annotations

from typing import Union

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..errors import CorruptFileError

BufferLike = Union[bytes, bytearray, memoryview, np.ndarray, pa.Buffer]

UINT_DTYPES: dict[int, np.dtype[np.unsignedinteger]] = {8: np.dtype("<u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}


def as_u8(data: BufferLike) -> npt.NDArray[np.uint8]:
    """A 1-D uint8 view of ``data`` (no copy for contiguous inputs)."""
    if isinstance(data, np.ndarray):
        if data.dtype == np.uint8 and data.ndim == 1:
            return data
        if not data.flags.c_contiguous:
            data = np.ascontiguousarray(data)
        return data.reshape(-1).view(np.uint8)
    if isinstance(data, pa.Buffer):
        return np.frombuffer(data, dtype=np.uint8)
    if isinstance(data, memoryview) and (data.ndim != 1 or data.itemsize != 1 or not data.c_contiguous):
        data = data.cast("B") if data.c_contiguous else memoryview(bytes(data))
    return np.frombuffer(data, dtype=np.uint8)


def need(buf: npt.NDArray[np.generic], nbytes: int, what: str) -> None:
    """Raise CorruptFileError unless ``buf`` holds at least ``nbytes`` bytes."""
    if nbytes < 0 or buf.size < nbytes:
        raise CorruptFileError(f"{what}: buffer too short ({buf.size} bytes, need {nbytes})")


def words(data: BufferLike, bits: int, count: int | None = None, offset: int = 0,
          what: str = "buffer") -> np.ndarray:
    """``count`` little-endian unsigned ``bits``-bit words starting at byte ``offset``.

    Zero-copy when the start is aligned for the word type, otherwise a small aligned copy.
    ``count=None`` takes every whole word that fits.
    """
    dt = uint_dtype(bits)
    buf = as_u8(data)
    if offset < 0 or offset > buf.size:
        raise CorruptFileError(f"{what}: offset {offset} outside a {buf.size}-byte buffer")
    if count is None:
        count = (buf.size - offset) // dt.itemsize
    need(buf, offset + count * dt.itemsize, what)
    raw = buf[offset: offset + count * dt.itemsize]
    if raw.ctypes.data % dt.itemsize:
        raw = raw.copy()
    return raw.view(dt)


def uint_dtype(bits: int) -> np.dtype[np.unsignedinteger]:
    try:
        return UINT_DTYPES[int(bits)]
    except KeyError:
        raise CorruptFileError(f"unsupported word width {bits} bits (expected 8, 16, 32 or 64)") from None


def check_count(n: int, what: str, limit: int = 1 << 40) -> int:
    n = int(n)
    if n < 0 or n > limit:
        raise CorruptFileError(f"{what}: implausible count {n}")
    return n


_POOL_MIN_BYTES = 1 << 16


def empty(shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
    """``np.empty`` for a decoder's output, allocated from Arrow's memory pool when large.

    Decoded columns become Arrow arrays and are freed by whoever consumes the batches (often
    another thread). Arrow's pool keeps freed memory for reuse, where glibc returns large
    blocks to the system and the next batch faults fresh pages in again (measured: half of a
    scan's page faults came from these outputs). The array keeps its buffer alive."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape)) if not isinstance(shape, (int, np.integer)) else int(shape)
    nbytes = count * dt.itemsize
    if nbytes < _POOL_MIN_BYTES:
        return np.empty(shape, dt)
    out: np.ndarray = np.frombuffer(pa.allocate_buffer(nbytes), dt, count).reshape(shape)
    return out



def whole(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``a`` as one array: a chunked array's chunks joined (without a copy where
    :func:`join_adjacent` can)."""
    if not isinstance(a, pa.ChunkedArray):
        return a
    chunks = a.chunks
    if len(chunks) == 1:
        return chunks[0]
    joined = join_adjacent(chunks)
    return joined if joined is not None else a.combine_chunks()


def join_adjacent(arrays: list[pa.Array]) -> pa.Array | None:
    """Arrays of one fixed-width type without validity bitmaps whose values lie back to back in
    memory (plain pages read from one memory-mapped file) as one array over their joint bytes,
    without a copy (the result keeps ``arrays`` alive); None when they are not such arrays."""
    if len(arrays) < 2:
        return None
    t = arrays[0].type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
            or pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t)):
        return None   # (an extension or dictionary type is none of these)
    width = t.bit_width
    if width < 8 or width % 8:
        return None
    width //= 8
    start = at = -1
    total = 0
    for a in arrays:
        if a.type != t:
            return None
        bufs = a.buffers()
        if len(bufs) != 2 or bufs[0] is not None or bufs[1] is None:
            return None
        s = bufs[1].address + a.offset * width
        if at < 0:
            start = s
        elif s != at:
            return None
        at = s + len(a) * width
        total += len(a)
    joint = pa.foreign_buffer(start, at - start, base=list(arrays))
    return pa.Array.from_buffers(t, total, [None, joint])
