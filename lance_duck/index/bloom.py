"""BLOOMFILTER index reader: the zones of a fragment that may hold a value (``=``, ``IN``, ``IS NULL``).

``bloomfilter.lance`` holds one row per zone: ``fragment_id``, ``zone_start`` (first physical
offset), ``zone_length`` (offset span; deletions may leave gaps in it), ``has_null`` and
``bloom_filter_data``, a split-block bloom filter (SBBF, as Parquet's): blocks of eight
little-endian u32 words. A value is hashed with xxHash64 (seed 0) over its bytes (integers,
floats, dates, times and timestamps: their little-endian native bytes; strings: UTF-8;
binary: as is); the hash's high half picks the block (``(hi * blocks) >> 32``) and its low
half, multiplied by eight salts, one bit per word. A value is possibly present when all
eight bits are set.

The answer is "at most": the zones whose filter may hold a needle (or that hold nulls, for
``IS NULL``), plus every row of a covered fragment that no zone spans; the scan re-applies
the complete filter.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError
from .checks import check_zones, damaged, int_column
from .files import IndexFile, cached
from .terms import MAX_ZONE_SHARE, Terms, Unsupported

if TYPE_CHECKING:
    from ..io.fs import FileIO

#: a bloom filter file's zones: fragment id, first row, rows, has-null flag (one each per zone),
#: and the filters as a (zones, blocks, 8) uint32 array
_Zones = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

FILE_NAME = "bloomfilter.lance"
BLOOM_OPS = frozenset({"==", "in", "is_null"})
SALT = np.array([0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
                 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint64)
_M64 = (1 << 64) - 1
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


# -- xxHash64 (seed 0) ----------------------------------------------------------------------------
def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes) -> int:
    """xxHash64 of ``data`` with seed 0 (for the few needles of a query)."""
    n = len(data)
    pos = 0
    if n >= 32:
        v = [(_P1 + _P2) & _M64, _P2, 0, (-_P1) & _M64]
        while pos + 32 <= n:
            lanes = struct.unpack_from("<4Q", data, pos)
            v = [_round(a, b) for a, b in zip(v, lanes)]
            pos += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for a in v:
            h = ((h ^ _round(0, a)) * _P1 + _P4) & _M64
    else:
        h = _P5
    h = (h + n) & _M64
    while pos + 8 <= n:
        (lane,) = struct.unpack_from("<Q", data, pos)
        h = (_rotl(h ^ _round(0, lane), 27) * _P1 + _P4) & _M64
        pos += 8
    if pos + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, pos)
        h = (_rotl(h ^ ((lane * _P1) & _M64), 23) * _P2 + _P3) & _M64
        pos += 4
    for b in data[pos:]:
        h = (_rotl(h ^ ((b * _P5) & _M64), 11) * _P1) & _M64
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    return h ^ (h >> 32)


def _value_bytes(values: pa.Array) -> list[bytes]:
    """The bytes Lance hashes for each non-null value of ``values``."""
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [v.encode() for v in values.to_pylist() if v is not None]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return [v for v in values.to_pylist() if v is not None]
    dtype = _native_dtype(t)
    if dtype is None:
        raise Unsupported(f"bloom filter over values of type {t}")
    valid = values.drop_null()
    if not pa.types.is_integer(t) and not pa.types.is_floating(t):
        valid = valid.cast(pa.int32() if dtype == "<i4" else pa.int64())
    nums = np.asarray(valid.to_numpy(zero_copy_only=False), dtype=dtype)
    if pa.types.is_floating(t):                 # SQL: 0.0 = -0.0, but their bytes differ
        nums = np.concatenate([nums, -nums[nums == 0]])
    return [nums[i:i + 1].tobytes() for i in range(len(nums))]


def _native_dtype(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return str(np.dtype(t.to_pandas_dtype()).newbyteorder("<").str)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return "<i4"
    if pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t):
        return "<i8"
    return None


def needle_hashes(values: pa.Array) -> np.ndarray:
    """uint64 xxHash64 of each non-null needle (and of -0.0 for a float 0.0)."""
    return np.array([xxh64(b) for b in _value_bytes(values)], dtype=np.uint64)


# -- filters --------------------------------------------------------------------------------------
def _may_contain(words: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """(zones,) bool: some hash has all eight bits set in the zone's filter.

    ``words`` is (zones, blocks, 8) uint32."""
    nz, nblocks = words.shape[0], words.shape[1]
    if len(hashes) == 0:
        return np.zeros(nz, dtype=bool)
    block = ((hashes >> np.uint64(32)) * np.uint64(nblocks)) >> np.uint64(32)
    low = hashes & np.uint64(0xFFFFFFFF)
    bits = ((low[:, None] * SALT[None, :]) & np.uint64(0xFFFFFFFF)) >> np.uint64(27)   # (needles, 8)
    masks = (np.uint32(1) << bits.astype(np.uint32))
    got = words[:, block.astype(np.int64), :]                                         # (zones, needles, 8)
    hit: np.ndarray = np.all((got & masks[None, :, :]) != 0, axis=2).any(axis=1)
    return hit


def _filter_words(data: pa.Array, path: str) -> np.ndarray:
    """The filters of a binary column as a (zones, blocks, 8) uint32 array (equal sizes)."""
    if data.null_count:
        raise CorruptFileError(f"{path}: a zone has no bloom filter")
    wide = pa.types.is_large_binary(data.type)
    offs = np.frombuffer(data.buffers()[1], dtype="<i8" if wide else "<i4")[data.offset:data.offset + len(data) + 1]
    sizes = np.diff(offs)
    size = int(sizes[0]) if len(sizes) else 32
    if size == 0 or size % 32 or np.any(sizes != size):
        raise CorruptFileError(f"{path}: bloom filters are not of one size, a multiple of 32 bytes")
    buf = data.buffers()[2]
    raw = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.empty(0, np.uint8)
    raw = raw[int(offs[0]):int(offs[-1])] if len(offs) else raw[:0]
    return raw.view("<u4").reshape(len(data), size // 32, 8)


class BloomFilterIndex:
    """``bloomfilter.lance`` of one segment, loaded once (cached) as numpy arrays."""

    #: the indexed column's type (set by the search; this file holds none to compare)
    value_type: pa.DataType | None = None

    def __init__(self, io: FileIO, path: str, size: int | None) -> None:
        self.io = io
        self.path = path
        self.size = size

    def _zones(self) -> _Zones:
        def load() -> _Zones:
            f = IndexFile(self.io, self.path, self.size)
            frag, start, length, has_null, data = f.read(
                ["fragment_id", "zone_start", "zone_length", "has_null", "bloom_filter_data"])
            if has_null.null_count:
                raise damaged(self.path, "a zone without has_null")
            words = _filter_words(data, self.path)
            start_np, length_np = int_column(start, self.path, "zone_start"), int_column(length, self.path, "zone_length")
            check_zones(start_np, length_np, [], self.path)
            return (int_column(frag, self.path, "fragment_id"), start_np, length_np,
                    has_null.to_numpy(zero_copy_only=False).astype(bool), words)
        return cached(("bloomfilter", self.path), load)

    def prewarm(self) -> None:
        """Read the zones' filters into the index cache (``prewarm_index``)."""
        self._zones()

    def zone_keep(self, terms: Terms, has_null: np.ndarray, words: np.ndarray) -> np.ndarray:
        """(zones,) bool: the zones where every term may hold."""
        keep = np.ones(len(has_null), dtype=bool)
        for preds in terms:
            any_pred = np.zeros(len(has_null), dtype=bool)
            for p in preds:
                if p.op not in BLOOM_OPS:
                    raise Unsupported(f"bloom filter cannot answer {p.op}")
                if p.op == "is_null":
                    any_pred |= has_null
                    continue
                values = p.value if p.op == "in" else pa.array([p.value], p.value.type)
                any_pred |= _may_contain(words, needle_hashes(values))
            keep &= any_pred
        return keep

    def search(self, terms: Terms, fragment_rows: dict[int, int]) -> dict[int, np.ndarray]:
        """{fragment id: sorted int64 offsets to read} for the fragments the file has zones of:
        the kept zones' offsets plus the offsets no zone spans."""
        frag, start, length, has_null, words = self._zones()
        keep = self.zone_keep(terms, has_null, words)
        return zone_selections(frag, start, length, keep, fragment_rows, "bloom zones", self.path)


def zone_selections(frag: np.ndarray, start: np.ndarray, length: np.ndarray, keep: np.ndarray,
                    fragment_rows: dict[int, int], what: str, path: str) -> dict[int, np.ndarray]:
    """{fragment id: sorted int64 offsets} of the kept zones plus the offsets no zone spans, for
    the fragments of ``fragment_rows`` that have zones; Unsupported when too many zones are kept,
    CorruptFileError (naming ``path``) when a zone ends past its fragment's rows."""
    if np.count_nonzero(keep) > max(1, len(keep) * MAX_ZONE_SHARE):
        raise Unsupported(f"predicate keeps {np.count_nonzero(keep)} of {len(keep)} {what}")
    out: dict[int, np.ndarray] = {}
    for fid in np.unique(frag):
        n = fragment_rows.get(int(fid))
        if n is not None:
            z = frag == fid
            if len(z) and int((start[z] + length[z]).max()) > n:
                raise CorruptFileError(f"{path}: index file is damaged (a zone of fragment {int(fid)} "
                                       f"ends past its {n} rows)")
            out[int(fid)] = _zone_rows(start[z], start[z] + length[z], keep[z], n)
    return out


def _zone_rows(starts: np.ndarray, ends: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    """Sorted int64 offsets of a fragment of ``n`` rows: those of the kept zones [start, end) and
    those no zone spans."""
    starts, ends = np.minimum(starts, n), np.minimum(ends, n)
    order = np.argsort(starts, kind="stable")
    starts, ends, keep = starts[order], ends[order], keep[order]
    if np.any(starts[1:] < ends[:-1]):            # overlapping zones: mark rows one by one
        spanned, chosen = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        for lo, hi, k in zip(starts, ends, keep):
            spanned[lo:hi] = True
            chosen[lo:hi] |= bool(k)
        return np.flatnonzero(chosen | ~spanned).astype(np.int64)
    gap_lo, gap_hi = np.concatenate(([0], ends)), np.concatenate((starts, [n]))
    gaps = gap_hi > gap_lo
    lo = np.concatenate((starts[keep], gap_lo[gaps]))
    hi = np.concatenate((ends[keep], gap_hi[gaps]))
    order = np.argsort(lo, kind="stable")
    parts = [np.arange(a, b, dtype=np.int64) for a, b in zip(lo[order], hi[order])]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
