"""2.3 mini-block ``Variable`` values whose offsets are not stored as flat words.

File format 2.3 codes the offsets of variable-width values (strings, binaries) in each mini-block
chunk with one of:

* ``Constant`` — every offset is the same: every value is empty (no value bytes);
* ``Range`` (field 14 of ``CompressiveEncoding``: bits, start, step) — every value has ``step``
  bytes; the chunk's single buffer holds the value bytes only;
* ``Delta`` (field 15: bits, base, deltas) — chunk buffer 0 holds the value lengths (coded with the
  ``deltas`` child compression), buffer 1 the value bytes.

``variable_offsets23`` says which (None: flat 2.1/2.2 offsets); ``decode`` returns the chunks'
values as one ``VarBin``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from google.protobuf import unknown_fields

from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError
from ..gather import gather_bytes, read_uint, segment_index
from ..planar23 import unknown_fields_of, wire_fields
from ..values import VarBin, as_fixed, uint_view
from .block import decode_block
from .common import UDT, ChunkSet

RANGE, DELTA = 14, 15

#: how a chunk set's offsets are coded: the codec's name, then its parameters (ints, bytes or a
#: nested code), e.g. ``("range", start, step)``, ``("delta", message bytes)``, ``("constant",)``
OffsetsCode = tuple[Any, ...]


def _varints(b: bytes, what: str) -> dict[int, int]:
    """The varint fields of a Range message (planar23's bounds-checked reader)."""
    out = wire_fields(b, what)
    bad = sorted(k for k, v in out.items() if not isinstance(v, int))
    if bad:   # only varint fields are read here; a message field means something new
        raise UnsupportedFeatureError(f"{what}: 2.3 range offsets with message field(s) {bad}")
    return {k: v for k, v in out.items() if isinstance(v, int)}


def variable_offsets23(m: pb.Variable, what: str) -> OffsetsCode | None:
    """("constant", value) / ("range", start, step) / ("delta", message) / ("rle-range", value start,
    value step, run start, run step) for 2.3-coded offsets, else None."""
    off = m.offsets
    if off.WhichOneof("compression") == "constant":
        return ("constant", bytes(off.constant.value))
    if off.WhichOneof("compression") == "rle":
        specs = [_int_spec(x, what) for x in (off.rle.values, off.rle.run_lengths)]
        if specs[0][0] == specs[1][0] == "range":
            (_, v0, dv), (_, r0, dr) = specs
            return ("rle-range", v0, dv, r0, dr)
        if specs[1][0] != "flat" or specs[1][1] not in (8, 16, 32, 64) or (
                specs[0][0] == "flat" and specs[0][1] not in (8, 16, 32, 64)):
            raise UnsupportedFeatureError(f"{what}: 2.3 run-length offsets coded {specs} are not supported")
        return ("rle", specs[0], specs[1][1])
    unknown = unknown_fields_of(off)
    if not unknown:
        return None
    f = unknown[0]
    if len(unknown) != 1 or f.field_number not in (RANGE, DELTA):
        raise UnsupportedFeatureError(f"2.3 variable offsets coded with field(s) "
                                      f"{sorted(u.field_number for u in unknown)} are not supported")
    if f.field_number == DELTA:
        return ("delta", bytes(f.data))
    r = _varints(bytes(f.data), what)
    return ("range", r.get(2, 0), r.get(3, 0))


def decode(kind: OffsetsCode, cs: ChunkSet, what: str) -> VarBin:
    """The values of every chunk of ``cs`` (a ChunkSet) as one VarBin."""
    counts = np.asarray(cs.counts, np.int64)
    total = int(counts.sum())
    if kind[0] == "delta":
        return _delta(kind[1], cs, counts, what)
    if kind[0] == "constant":
        return VarBin(np.zeros(total + 1, np.int64), np.zeros(0, np.uint8))
    if kind[0] == "rle-range":
        return _rle_range(kind, cs, counts, what)
    if kind[0] == "rle":
        return _rle(kind, cs, counts, what)
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


def _int_spec(enc: pb.CompressiveEncoding, what: str) -> OffsetsCode:
    """("range", start, step) for a 2.3 Range, ("flat", bits) for a Flat encoding."""
    unknown = unknown_fields_of(enc)
    if len(unknown) == 1 and unknown[0].field_number == RANGE:
        r = _varints(bytes(unknown[0].data), what)
        return ("range", r.get(2, 0), r.get(3, 0))
    if not unknown and enc.WhichOneof("compression") == "flat":
        return ("flat", int(enc.flat.bits_per_value))
    raise UnsupportedFeatureError(f"{what}: 2.3 run-length offsets with {enc.WhichOneof('compression')} "
                                  "values or run lengths are not supported")


def _rle(kind: OffsetsCode, cs: ChunkSet, counts: np.ndarray, what: str) -> VarBin:
    """Run-length coded offsets: chunk buffer 0 = [u64 byte length of the run values][run values
    (none for a range)][run lengths], buffer 1 = the value bytes."""
    _, vspec, lbits = kind
    if len(cs.bufs) != 2:
        raise CorruptFileError(f"{what}: run-length-offset chunks with {len(cs.bufs)} buffers")
    (data, offs, sizes), (vdata, voffs, vsizes) = cs.bufs
    offs, sizes = np.asarray(offs, np.int64), np.asarray(sizes, np.int64)
    if (sizes < 8).any():
        raise CorruptFileError(f"{what}: run-length offsets without their header")
    vlen = read_uint(data, offs, 8, what)
    lb = lbits // 8
    if vspec[0] == "flat":
        vb = vspec[1] // 8
        if (vlen % vb).any():
            raise CorruptFileError(f"{what}: run values of {vlen} bytes")
        runs = vlen // vb
        vals = gather_bytes(data, offs + 8, vlen, what).view(UDT[vb * 8]).astype(np.int64)
    else:
        runs = (sizes - 8 - vlen) // lb
        _, pos = segment_index(runs)
        vals = vspec[1] + vspec[2] * pos
    if (8 + vlen + runs * lb > sizes).any():
        raise CorruptFileError(f"{what}: run-length offsets overrun their chunk")
    lens = gather_bytes(data, offs + 8 + vlen, runs * lb, what).view(UDT[lbits]).astype(np.int64)
    rsum = np.zeros(runs.size + 1, np.int64)
    np.cumsum(runs, out=rsum[1:])
    per_chunk = np.add.reduceat(lens, rsum[:-1]) if lens.size else np.zeros(0, np.int64)
    if lens.size and (runs == 0).any() or (per_chunk != counts + 1).any() or (lens < 0).any():
        raise CorruptFileError(f"{what}: run lengths do not cover each chunk's offsets")
    o = np.repeat(vals, lens)                      # every chunk's counts + 1 offsets, chunk after chunk
    first = np.cumsum(counts + 1) - (counts + 1)   # each chunk's first offset
    d = np.diff(o)
    keep = np.ones(d.size, bool)
    keep[first[1:] - 1] = False                   # the steps between chunks
    value_lens = d[keep]
    starts, ends = o[first], o[first + counts]
    if (value_lens < 0).any() or (starts < 0).any() or (ends > np.asarray(vsizes, np.int64)).any():
        raise CorruptFileError(f"{what}: run-length offsets leave their chunk")
    out = np.zeros(value_lens.size + 1, np.int64)
    np.cumsum(value_lens, out=out[1:])
    return VarBin(out, gather_bytes(vdata, np.asarray(voffs, np.int64) + starts, ends - starts, what))


def _rle_range(kind: OffsetsCode, cs: ChunkSet, counts: np.ndarray, what: str) -> VarBin:
    """Offsets run-length coded with two ranges: run i repeats ``v0 + i * dv``, ``r0 + i * dr`` times
    (as many runs as cover the ``n + 1`` offsets of the page's one chunk)."""
    _, v0, dv, r0, dr = kind
    if len(cs.bufs) != 1 or counts.size != 1:
        raise UnsupportedFeatureError(f"{what}: 2.3 run-length range offsets over {counts.size} chunks "
                                      "are not supported")
    n = int(counts[0]) + 1
    if r0 <= 0 or dr < 0 or v0 != 0 or dv < 0:
        raise CorruptFileError(f"{what}: 2.3 run-length range offsets ({v0}, {dv}) x ({r0}, {dr})")
    # runs k: r0 * k + dr * k * (k - 1) / 2 == n
    b = 2 * r0 - dr
    k = -(-n // r0) if dr == 0 else max(1, int((-b + math.sqrt(b * b + 8 * dr * n)) / (2 * dr)))
    if r0 * k + dr * k * (k - 1) // 2 < n:   # the float root fell just below an integer
        k += 1
    runs = r0 + dr * np.arange(k, dtype=np.int64)
    if int(runs.sum()) != n:
        raise CorruptFileError(f"{what}: 2.3 run lengths do not cover the chunk's {n} offsets")
    offsets = np.repeat(v0 + dv * np.arange(k, dtype=np.int64), runs)
    data, offs, sizes = cs.bufs[0]
    if int(sizes[0]) < int(offsets[-1]) or (np.diff(offsets) < 0).any():
        raise CorruptFileError(f"{what}: run-length range offsets leave their chunk")
    return VarBin(offsets, gather_bytes(data, offs, offsets[-1:], what))


def select(kind: OffsetsCode, cs: ChunkSet, idx: np.ndarray, what: str) -> VarBin:
    """Values ``idx`` (chunk-set positions) of the chunks."""
    vb = decode(kind, cs, what)
    o = np.asarray(vb.offsets, np.int64)
    starts, lens = o[idx], o[idx + 1] - o[idx]
    out = np.zeros(idx.size + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return VarBin(out, gather_bytes(np.asarray(vb.data), starts, lens, what))


def _delta(msg: bytes, cs: ChunkSet, counts: np.ndarray, what: str) -> VarBin:
    """Delta offsets: buffer 0 of each chunk holds the value lengths (the deltas), buffer 1 the bytes."""
    fields = wire_fields(msg, what)
    child = pb.CompressiveEncoding()
    raw = fields.get(3, b"")
    if not isinstance(raw, bytes):
        raise CorruptFileError(f"{what}: 2.3 delta offsets child is not a message")
    child.ParseFromString(raw)
    if len(unknown_fields.UnknownFieldSet(child)) or fields.get(2, 0) != 0:
        raise UnsupportedFeatureError(f"{what}: 2.3 delta offsets with a base or a 2.3 child codec")
    if len(cs.bufs) != 2:
        raise CorruptFileError(f"{what}: delta-offset chunks with {len(cs.bufs)} buffers")
    (ldata, loffs, lsizes), (data, offs, sizes) = cs.bufs
    lens = [uint_view(as_fixed(decode_block(child, ldata[o:o + s], int(n), what), what)).astype(np.int64)
            for o, s, n in zip(loffs.tolist(), lsizes.tolist(), counts.tolist())]   # one call per chunk
    per_value = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    chunk_bytes = np.array([x.sum() for x in lens], np.int64)
    if (chunk_bytes > np.asarray(sizes, np.int64)).any():
        raise CorruptFileError(f"{what}: delta-offset chunk shorter than its values")
    out = np.zeros(per_value.size + 1, np.int64)
    np.cumsum(per_value, out=out[1:])
    return VarBin(out, gather_bytes(data, offs, chunk_bytes, what))
