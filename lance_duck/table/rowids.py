"""Stable row ids and row version sequences (``rowids.proto``), decoded with numpy.

A ``RowIdSequence`` lists the row id of every physical row of a fragment (deleted rows
included) as a concatenation of segments. A ``RowDatasetVersionSequence`` gives each physical
row a dataset version through runs of ``len(span)`` rows.
"""
from __future__ import annotations

from typing import TypeVar

import numpy as np
from google.protobuf.message import DecodeError, Message

from .._proto import rowids_pb2
from ..errors import CorruptFileError

# Guard against corrupt lengths asking for absurd allocations.
MAX_SEGMENT_ROWS = 1 << 34

M = TypeVar("M", bound=Message)


def _parse(msg: M, raw: bytes, what: str) -> M:
    try:
        msg.ParseFromString(bytes(raw))
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise CorruptFileError(f"{what}: corrupt protobuf ({exc})") from exc
    return msg


def decode_encoded_array(arr: rowids_pb2.EncodedU64Array, what: str = "row ids") -> np.ndarray:
    """An EncodedU64Array (u16 / u32 offsets from a base, or raw u64) as uint64."""
    kind = arr.WhichOneof("array")
    if kind == "u16_array":
        return _offsets(arr.u16_array, "<u2", what)
    if kind == "u32_array":
        return _offsets(arr.u32_array, "<u4", what)
    if kind == "u64_array":
        return _frombytes(arr.u64_array.values, "<u8", what)
    if kind is None:
        return np.empty(0, dtype=np.uint64)
    raise CorruptFileError(f"{what}: unknown encoded array kind {kind!r}")


def _frombytes(buf: bytes, dtype: str, what: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    if len(buf) % width:
        raise CorruptFileError(f"{what}: array of {len(buf)} bytes is not a multiple of {width}")
    return np.frombuffer(buf, dtype=dtype).astype(np.uint64)


def _offsets(a: rowids_pb2.EncodedU64Array.U16Array | rowids_pb2.EncodedU64Array.U32Array, dtype: str,
             what: str) -> np.ndarray:
    values: np.ndarray = _frombytes(a.offsets, dtype, what) + np.uint64(a.base)
    return values


def _span(start: int, end: int, what: str) -> int:
    if end < start or end - start > MAX_SEGMENT_ROWS:
        raise CorruptFileError(f"{what}: invalid segment range [{start}, {end})")
    return end - start


def decode_segment(seg: rowids_pb2.U64Segment, what: str = "row ids") -> np.ndarray:
    """The uint64 values one U64Segment expands to."""
    kind = seg.WhichOneof("segment")
    if kind == "range":
        n = _span(seg.range.start, seg.range.end, what)
        ids: np.ndarray = np.arange(n, dtype=np.uint64) + np.uint64(seg.range.start)
        return ids
    if kind == "range_with_holes":
        rh = seg.range_with_holes
        n = _span(rh.start, rh.end, what)
        values = np.arange(n, dtype=np.uint64) + np.uint64(rh.start)
        holes = decode_encoded_array(rh.holes, what)
        kept: np.ndarray = values[~np.isin(values, holes, assume_unique=False)]
        return kept
    if kind == "range_with_bitmap":
        rb = seg.range_with_bitmap
        n = _span(rb.start, rb.end, what)
        bits = np.unpackbits(np.frombuffer(rb.bitmap, dtype=np.uint8), bitorder="little")
        if bits.size < n:
            raise CorruptFileError(f"{what}: bitmap of {bits.size} bits is shorter than its range of {n}")
        set_bits: np.ndarray = np.flatnonzero(bits[:n]).astype(np.uint64) + np.uint64(rb.start)
        return set_bits
    if kind in ("sorted_array", "array"):
        return decode_encoded_array(getattr(seg, kind), what)
    if kind is None:
        return np.empty(0, dtype=np.uint64)
    raise CorruptFileError(f"{what}: unknown segment kind {kind!r}")


def segment_length(seg: rowids_pb2.U64Segment, what: str = "row ids") -> int:
    """How many values a segment holds (without expanding ranges)."""
    kind = seg.WhichOneof("segment")
    if kind == "range":
        return _span(seg.range.start, seg.range.end, what)
    return int(decode_segment(seg, what).size)


def decode_row_ids(raw: bytes, what: str = "row ids") -> np.ndarray:
    """A serialized RowIdSequence as one uint64 array."""
    seq = _parse(rowids_pb2.RowIdSequence(), raw, what)
    parts = [decode_segment(s, what) for s in seq.segments]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def row_ids_at(raw: bytes, num_rows: int, offsets: np.ndarray, what: str = "row ids") -> np.ndarray:
    """The uint64 row ids at physical ``offsets`` (in range; sorted is cheapest) of a serialized
    RowIdSequence: range segments answer by arithmetic, only segments holding an offset are expanded."""
    seq = _parse(rowids_pb2.RowIdSequence(), raw, what)
    lengths = np.array([segment_length(sg, what) for sg in seq.segments], dtype=np.int64)
    ends = np.cumsum(lengths)
    if (int(ends[-1]) if len(ends) else 0) != num_rows:
        raise CorruptFileError(f"{what}: {int(ends[-1]) if len(ends) else 0} ids for {num_rows} rows")
    offsets = np.asarray(offsets, dtype=np.int64)
    order = None
    if len(offsets) > 1 and not bool(np.all(offsets[1:] >= offsets[:-1])):
        order = np.argsort(offsets, kind="stable")
        offsets = offsets[order]
    if len(offsets) and (offsets[0] < 0 or offsets[-1] >= num_rows):
        raise IndexError(f"{what}: offsets {int(offsets[0])}..{int(offsets[-1])} outside the {num_rows} rows")
    out = np.empty(len(offsets), dtype=np.uint64)
    cuts = np.searchsorted(offsets, ends, side="left")       # offsets of segment k: cuts[k-1]:cuts[k]
    starts = np.concatenate(([0], cuts[:-1]))
    for k in np.flatnonzero(cuts > starts).tolist():         # segments holding an offset
        lo, hi = int(starts[k]), int(cuts[k])
        sg = seq.segments[k]
        local = offsets[lo:hi] - (int(ends[k - 1]) if k else 0)
        if sg.WhichOneof("segment") == "range":
            out[lo:hi] = local.astype(np.uint64) + np.uint64(sg.range.start)
        else:
            out[lo:hi] = decode_segment(sg, what)[local]
    if order is not None:
        back = np.empty_like(out)
        back[order] = out
        out = back
    return out


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a``, ascending: a sort and a comparison of neighbours (numpy 2's
    ``np.unique`` hashes first, ~0.1-0.5 ms even for a few thousand ids)."""
    if len(a) < 2:
        return np.asarray(a)
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def in_sorted(a: np.ndarray, sorted_values: np.ndarray) -> np.ndarray:
    """Whether each value of ``a`` is one of ``sorted_values`` (ascending), by binary search."""
    if not len(sorted_values):
        return np.zeros(len(a), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_values, a), len(sorted_values) - 1)
    return np.asarray(sorted_values[pos] == a, dtype=bool)


def decode_version_runs(raw: bytes, num_rows: int, what: str = "row versions") -> tuple[np.ndarray, np.ndarray]:
    """A serialized RowDatasetVersionSequence as runs: (int64 end row of each run, exclusive and
    cumulative; uint64 version of each run), without expanding them per row."""
    seq = _parse(rowids_pb2.RowDatasetVersionSequence(), raw, what)
    lengths = np.array([segment_length(r.span, what) for r in seq.runs], dtype=np.int64)
    versions = np.array([r.version for r in seq.runs], dtype=np.uint64)
    ends = np.cumsum(lengths)
    covered = int(ends[-1]) if len(ends) else 0
    if covered != num_rows:
        raise CorruptFileError(f"{what}: sequence covers {covered} rows, the fragment has {num_rows}")
    return ends, versions


def versions_at(runs: tuple[np.ndarray, np.ndarray], offsets: np.ndarray) -> np.ndarray:
    """The uint64 versions of the rows at ``offsets`` (physical, in range) from :func:`decode_version_runs`."""
    ends, versions = runs
    return versions[np.searchsorted(ends, np.asarray(offsets, dtype=np.int64), side="right")]


def decode_version_sequence(raw: bytes, num_rows: int, what: str = "row versions") -> np.ndarray:
    """A serialized RowDatasetVersionSequence as one uint64 version per physical row."""
    ends, versions = decode_version_runs(raw, num_rows, what)
    return np.repeat(versions, np.diff(ends, prepend=0))
