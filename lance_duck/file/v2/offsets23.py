"""2.3 mini-block ``Variable`` values whose offsets are not stored as flat words.

File format 2.3 codes the offsets of variable-width values (strings, binaries) in each mini-block
chunk with one of:

* ``Constant`` — every offset is the same: every value is empty (no value bytes);
* ``Range`` (field 14 of ``CompressiveEncoding``: bits, start, step) — every value has ``step``
  bytes; the chunk's single buffer holds the value bytes only;
* ``Delta`` (field 15: bits, base, deltas) — refused by name for now.

``variable_offsets23`` says which (None: flat 2.1/2.2 offsets); ``decode`` returns the chunks'
values as one ``VarBin``.
"""
from __future__ import annotations

import numpy as np
from google.protobuf import unknown_fields

from ...errors import CorruptFileError, UnsupportedFeatureError
from .gather import gather_bytes
from .values import VarBin

RANGE, DELTA = 14, 15


def _varints(b: bytes) -> dict[int, int]:
    out, i = {}, 0
    while i < len(b):
        key = s = 0
        while True:
            c = b[i]
            i += 1
            key |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                break
        num, wire = key >> 3, key & 7
        if wire != 0:   # only varint fields are read here; a message field means something new
            raise UnsupportedFeatureError(f"2.3 range offsets with field {num} of wire type {wire}")
        v = s = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                break
        out[num] = v
    return out


def variable_offsets23(m) -> tuple | None:
    """("constant", value) / ("range", start, step) / ("delta",) for 2.3-coded offsets, else None."""
    off = m.offsets
    if off.WhichOneof("compression") == "constant":
        return ("constant", bytes(off.constant.value))
    unknown = list(unknown_fields.UnknownFieldSet(off))
    if not unknown:
        return None
    f = unknown[0]
    if len(unknown) != 1 or f.field_number not in (RANGE, DELTA):
        raise UnsupportedFeatureError(f"2.3 variable offsets coded with field(s) "
                                      f"{sorted(u.field_number for u in unknown)} are not supported")
    if f.field_number == DELTA:
        return ("delta",)
    r = _varints(bytes(f.data))
    return ("range", r.get(2, 0), r.get(3, 0))


def decode(kind: tuple, cs, what: str) -> VarBin:
    """The values of every chunk of ``cs`` (a ChunkSet) as one VarBin."""
    counts = np.asarray(cs.counts, np.int64)
    total = int(counts.sum())
    if kind[0] == "delta":
        raise UnsupportedFeatureError(f"{what}: 2.3 delta-coded variable offsets are not supported")
    if kind[0] == "constant":
        return VarBin(np.zeros(total + 1, np.int64), np.zeros(0, np.uint8))
    _, start, step = kind
    if start != 0 or step < 0:
        raise UnsupportedFeatureError(f"{what}: 2.3 range offsets starting at {start} (step {step}) "
                                      "are not supported")
    if len(cs.bufs) != 1:
        raise CorruptFileError(f"{what}: range-offset chunks with {len(cs.bufs)} buffers")
    data, offs, sizes = cs.bufs[0]
    lens = counts * step
    if (np.asarray(sizes, np.int64) < lens).any():
        raise CorruptFileError(f"{what}: range-offset chunk shorter than its {step}-byte values")
    return VarBin(np.arange(total + 1, dtype=np.int64) * step, gather_bytes(data, offs, lens, what))


def select(kind: tuple, cs, idx: np.ndarray, what: str) -> VarBin:
    """Values ``idx`` (chunk-set positions) of the chunks."""
    vb = decode(kind, cs, what)
    o = np.asarray(vb.offsets, np.int64)
    starts, lens = o[idx], o[idx + 1] - o[idx]
    out = np.zeros(idx.size + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return VarBin(out, gather_bytes(np.asarray(vb.data), starts, lens, what))
