"""Roaring bitmaps as Lance's indices store them, decoded with numpy and validated as read.

* ``decode_roaring``: the portable 32-bit roaring format (cookie 12346 without run
  containers, 12347 with); array, bitmap and run containers.
* ``decode_row_tree_map``: Lance's row-id tree map: u32 count, then per key u32 key (the
  fragment id, or the high half of a row id), u32 byte size and a roaring bitmap of the low
  halves; size 0 means "every row of that key" (returned as ``FULL``).

Decoding is strict (index files carry no checksums: this is what catches damage): the cookie,
the container count, keys strictly ascending, each container's cardinality against what it
holds (array values strictly ascending, a bitmap container's popcount, run containers sorted,
disjoint and within 16 bits), the offset table (when present) against where each container
really starts, and the bytes consumed against the bytes given. Anything else raises
``CorruptFileError`` naming ``what``.
"""
from __future__ import annotations

import struct

from typing import Optional

import numpy as np

from ..errors import CorruptFileError

NO_RUNS = 12346
WITH_RUNS = 12347
NO_OFFSET_THRESHOLD = 4
ARRAY_MAX = 4096
FULL = None  # a key whose bitmap is absent: all rows of that key
#: {key (high 32 bits): its sorted uint32 low halves, or FULL}
TreeMap = dict[int, Optional[np.ndarray]]


def _need(buf: bytes | memoryview, pos: int, n: int, what: str) -> None:
    if pos + n > len(buf):
        raise CorruptFileError(f"{what}: roaring bitmap truncated at byte {pos} (needs {n} more)")


def _bad(what: str, why: str) -> CorruptFileError:
    return CorruptFileError(f"{what}: roaring bitmap is damaged ({why})")


def decode_roaring(buf: bytes | memoryview, what: str = "roaring bitmap") -> tuple[np.ndarray, int]:
    """(sorted uint32 values, bytes consumed) of one portable roaring bitmap at the start of
    ``buf`` (validated: see the module docstring)."""
    buf = memoryview(buf).cast("B")
    _need(buf, 0, 4, what)
    (cookie,) = struct.unpack_from("<I", buf, 0)
    pos = 4
    if cookie & 0xFFFF == WITH_RUNS:
        size = (cookie >> 16) + 1
        nbytes = (size + 7) // 8
        _need(buf, pos, nbytes, what)
        flag_bits = np.unpackbits(np.frombuffer(buf, np.uint8, nbytes, pos), bitorder="little")
        if flag_bits[size:].any():
            raise _bad(what, "run flags set past the last container")
        run_flags = flag_bits[:size]
        pos += nbytes
    elif cookie == NO_RUNS:
        _need(buf, pos, 4, what)
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if size > 1 << 16:
            raise _bad(what, f"{size} containers")
        run_flags = np.zeros(size, dtype=np.uint8)
    else:
        raise CorruptFileError(f"{what}: not a roaring bitmap (cookie {cookie})")
    _need(buf, pos, 4 * size, what)
    header = np.frombuffer(buf, "<u2", 2 * size, pos).reshape(size, 2)
    pos += 4 * size
    keys = header[:, 0].astype(np.uint32)
    cards = header[:, 1].astype(np.int64) + 1
    if size > 1 and not bool((keys[1:] > keys[:-1]).all()):
        raise _bad(what, "container keys not ascending")
    offsets = None
    if cookie == NO_RUNS or size >= NO_OFFSET_THRESHOLD:
        _need(buf, pos, 4 * size, what)
        offsets = np.frombuffer(buf, "<u4", size, pos)
        pos += 4 * size
    parts = []
    starts = np.empty(size, dtype=np.int64)
    for i in range(size):
        starts[i] = pos
        base = keys[i] << np.uint32(16)
        card = int(cards[i])
        if run_flags[i]:
            _need(buf, pos, 2, what)
            (nruns,) = struct.unpack_from("<H", buf, pos)
            pos += 2
            _need(buf, pos, 4 * nruns, what)
            runs = np.frombuffer(buf, "<u2", 2 * nruns, pos).reshape(nruns, 2).astype(np.int64)
            pos += 4 * nruns
            lengths = runs[:, 1] + 1
            ends = runs[:, 0] + runs[:, 1]              # inclusive
            if nruns == 0 or int(lengths.sum()) != card or int(ends[-1]) > 0xFFFF \
                    or (nruns > 1 and not bool((runs[1:, 0] > ends[:-1]).all())):
                raise _bad(what, f"run container {i} does not hold its {card} values")
            first = np.repeat(runs[:, 0] - np.cumsum(lengths) + lengths, lengths)
            vals = np.arange(card, dtype=np.int64) + first
        elif card <= ARRAY_MAX:
            _need(buf, pos, 2 * card, what)
            vals = np.frombuffer(buf, "<u2", card, pos)
            pos += 2 * card
            if card > 1 and not bool((vals[1:] > vals[:-1]).all()):
                raise _bad(what, f"array container {i} not strictly ascending")
        else:
            _need(buf, pos, 8192, what)
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, 8192, pos), bitorder="little")
            vals = np.flatnonzero(bits)
            pos += 8192
            if len(vals) != card:
                raise _bad(what, f"bitmap container {i} holds {len(vals)} values, its header says {card}")
        parts.append(vals.astype(np.uint32) + base)
    if offsets is not None and size and not np.array_equal(offsets.astype(np.int64), starts):
        raise _bad(what, "container offsets disagree with the containers")
    values = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
    return values, pos


def decode_row_tree_map(buf: bytes | memoryview, what: str = "row tree map") -> TreeMap:
    """{key: sorted uint32 low halves, or FULL (None) for "all rows of this key"}; keys must be
    strictly ascending and every byte accounted for."""
    buf = memoryview(buf).cast("B")
    _need(buf, 0, 4, what)
    (count,) = struct.unpack_from("<I", buf, 0)
    if 4 + 8 * count > len(buf):
        raise CorruptFileError(f"{what}: row tree map of {count} keys in {len(buf)} bytes")
    pos = 4
    out: dict[int, np.ndarray | None] = {}
    last = -1
    for _ in range(count):
        _need(buf, pos, 8, what)
        key, size = struct.unpack_from("<II", buf, pos)
        pos += 8
        if key <= last:
            raise CorruptFileError(f"{what}: row tree map keys not ascending ({key} after {last})")
        last = key
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
