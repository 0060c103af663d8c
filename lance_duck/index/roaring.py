"""Roaring bitmaps as Lance's indices store them, decoded with numpy.

* ``decode_roaring``: the portable 32-bit roaring format (cookie 12346 without run
  containers, 12347 with); array, bitmap and run containers.
* ``decode_row_tree_map``: Lance's row-id tree map: u32 count, then per key u32 key (the
  fragment id, or the high half of a row id), u32 byte size and a roaring bitmap of the low
  halves; size 0 means "every row of that key" (returned as ``FULL``).
"""
from __future__ import annotations

import struct

import numpy as np

from ..errors import CorruptFileError

NO_RUNS = 12346
WITH_RUNS = 12347
NO_OFFSET_THRESHOLD = 4
ARRAY_MAX = 4096
FULL = None  # a key whose bitmap is absent: all rows of that key


def _need(buf, pos: int, n: int, what: str) -> None:
    if pos + n > len(buf):
        raise CorruptFileError(f"{what}: roaring bitmap truncated at byte {pos} (needs {n} more)")


def decode_roaring(buf: bytes | memoryview, what: str = "roaring bitmap") -> tuple[np.ndarray, int]:
    """(sorted uint32 values, bytes consumed) of one portable roaring bitmap."""
    buf = memoryview(buf).cast("B")
    _need(buf, 0, 4, what)
    (cookie,) = struct.unpack_from("<I", buf, 0)
    pos = 4
    if cookie & 0xFFFF == WITH_RUNS:
        size = (cookie >> 16) + 1
        nbytes = (size + 7) // 8
        _need(buf, pos, nbytes, what)
        run_flags = np.unpackbits(np.frombuffer(buf, np.uint8, nbytes, pos), bitorder="little")[:size]
        pos += nbytes
    elif cookie == NO_RUNS:
        _need(buf, pos, 4, what)
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        run_flags = np.zeros(size, dtype=np.uint8)
    else:
        raise CorruptFileError(f"{what}: not a roaring bitmap (cookie {cookie})")
    if size > 1 << 16:
        raise CorruptFileError(f"{what}: {size} containers")
    _need(buf, pos, 4 * size, what)
    header = np.frombuffer(buf, "<u2", 2 * size, pos).reshape(size, 2)
    pos += 4 * size
    keys = header[:, 0].astype(np.uint32)
    cards = header[:, 1].astype(np.int64) + 1
    if cookie == NO_RUNS or size >= NO_OFFSET_THRESHOLD:
        pos += 4 * size          # offsets: containers follow one another anyway
    parts = []
    for i in range(size):
        base = keys[i] << np.uint32(16)
        if run_flags[i]:
            _need(buf, pos, 2, what)
            (nruns,) = struct.unpack_from("<H", buf, pos)
            pos += 2
            _need(buf, pos, 4 * nruns, what)
            runs = np.frombuffer(buf, "<u2", 2 * nruns, pos).reshape(nruns, 2).astype(np.int64)
            pos += 4 * nruns
            lengths = runs[:, 1] + 1
            starts = np.repeat(runs[:, 0] - np.cumsum(lengths) + lengths, lengths)
            vals = np.arange(int(lengths.sum()), dtype=np.int64) + starts
        elif cards[i] <= ARRAY_MAX:
            n = int(cards[i])
            _need(buf, pos, 2 * n, what)
            vals = np.frombuffer(buf, "<u2", n, pos)
            pos += 2 * n
        else:
            _need(buf, pos, 8192, what)
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, 8192, pos), bitorder="little")
            vals = np.flatnonzero(bits)
            pos += 8192
        parts.append(vals.astype(np.uint32) + base)
    values = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
    return values, pos


def decode_row_tree_map(buf: bytes | memoryview, what: str = "row tree map") -> dict[int, np.ndarray | None]:
    """{key: sorted uint32 low halves, or FULL (None) for "all rows of this key"}."""
    buf = memoryview(buf).cast("B")
    _need(buf, 0, 4, what)
    (count,) = struct.unpack_from("<I", buf, 0)
    pos = 4
    out: dict[int, np.ndarray | None] = {}
    for _ in range(count):
        _need(buf, pos, 8, what)
        key, size = struct.unpack_from("<II", buf, pos)
        pos += 8
        if size == 0:
            out[key] = FULL
            continue
        _need(buf, pos, size, what)
        vals, used = decode_roaring(buf[pos:pos + size], what)
        if used != size:
            raise CorruptFileError(f"{what}: bitmap of key {key} is {used} bytes, header says {size}")
        out[key] = vals
        pos += size
    if pos != len(buf):
        raise CorruptFileError(f"{what}: {len(buf) - pos} trailing bytes")
    return out
