"""General-purpose decompression (zstd, lz4) in the framings Lance writes.

Used by:

* 2.0 ``Flat.compression`` (whole buffer; ``scheme`` string ``"zstd"`` / ``"lz4"``): zstd = u64 LE
  uncompressed length + zstd frame, or (older writers) a bare zstd frame; lz4 = u32 LE uncompressed
  length + one raw LZ4 *block*.
* 2.1/2.2 ``General`` / ``BufferCompression`` (``scheme`` enum 1 = LZ4, 2 = ZSTD): the same two
  framings, applied to value buffer 0 of each mini-block chunk, to a whole block-form buffer
  (2.2 dictionaries), or to every full-zip value on its own (:func:`decompress_many`).

pyarrow's ``zstd`` codec and the ``lz4`` package's block decoder do the work (pyarrow's ``lz4_raw`` and
``zstandard`` are the fallbacks; pyarrow's ``lz4_raw`` does not report a short block). Declared lengths are bounded by the codec's maximum compression ratio before anything is
allocated.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, UnsupportedFeatureError
from ._buf import BufferLike, as_u8

__all__ = ["ZSTD", "LZ4", "scheme_name", "decompress", "decompress_zstd", "decompress_lz4",
           "decompress_many", "compress"]

LZ4 = "lz4"
ZSTD = "zstd"
_ENUM = {1: LZ4, 2: ZSTD}
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Upper bounds on uncompressed/compressed ratios (zstd: ~4 bytes per 128 KiB RLE block;
# lz4: 255 per byte), plus slack for tiny inputs.
_ZSTD_MAX_RATIO = 1 << 16
_LZ4_MAX_RATIO = 256
_SLACK = 1 << 16


def scheme_name(scheme: int | str | None) -> str:
    """Normalise a 2.0 scheme string or a 2.1 ``CompressionScheme`` enum value to "zstd" / "lz4"."""
    if isinstance(scheme, str):
        s = scheme.strip().lower()
        if s in (ZSTD, LZ4):
            return s
        raise UnsupportedFeatureError(f"unsupported compression scheme {scheme!r}")
    if scheme in _ENUM:
        return _ENUM[scheme]
    raise UnsupportedFeatureError(f"unsupported compression scheme {scheme!r} "
                                  "(expected 1 = LZ4 or 2 = ZSTD)")


def _codec(name: str) -> pa.Codec | None:
    try:
        return pa.Codec(name)
    except pa.ArrowException:  # codec not built into this pyarrow (ArrowNotImplementedError)
        return None


_PA_ZSTD = _codec("zstd")


def _zstd_error() -> type[Exception]:
    """zstandard's error type, imported only when an error is being handled."""
    import zstandard
    return zstandard.ZstdError
_PA_LZ4 = _codec("lz4_raw")
try:
    import lz4.block as _LZ4_BLOCK
except ImportError:  # pragma: no cover - optional dependency
    _LZ4_BLOCK = None


def _check_size(declared: int, compressed: int, ratio: int, what: str, expected: int | None) -> int:
    if expected is not None and declared != expected:
        raise CorruptFileError(f"{what}: declares {declared} uncompressed bytes, {expected} expected")
    if declared < 0 or declared > compressed * ratio + _SLACK:
        raise CorruptFileError(f"{what}: implausible uncompressed length {declared} for "
                               f"{compressed} compressed bytes")
    return declared


def _is_bare_zstd(buf: np.ndarray) -> bool:
    return buf.size >= 5 and buf[:4].tobytes() == _ZSTD_MAGIC and not (buf[4] & 0x10)  # the bit Lance tests


def decompress_zstd(data: BufferLike, expected_size: int | None = None) -> np.ndarray:
    """zstd unit: u64 LE length + frame (or a bare frame); returns uint8."""
    buf = as_u8(data)
    if _is_bare_zstd(buf):
        return _zstd_bare(buf, expected_size)
    n, frame = _length_prefixed(buf, 8, "zstd", _ZSTD_MAX_RATIO, expected_size)
    if n == 0:
        return np.empty(0, np.uint8)
    try:
        if _PA_ZSTD is not None:
            out = _PA_ZSTD.decompress(pa.py_buffer(frame), decompressed_size=n)
            return np.frombuffer(out, np.uint8)
        import zstandard
        raw = zstandard.ZstdDecompressor().decompress(frame.tobytes(), max_output_size=n)
    except (pa.ArrowException, OSError, _zstd_error()) as exc:  # pyarrow raises a plain OSError on bad frames
        raise CorruptFileError(f"zstd: corrupt frame ({exc})") from exc
    if len(raw) != n:
        raise CorruptFileError(f"zstd: frame holds {len(raw)} bytes, prefix says {n}")
    return np.frombuffer(raw, np.uint8)


def _length_prefixed(buf: np.ndarray, width: int, codec: str, max_ratio: int,
                     expected_size: int | None) -> tuple[int, np.ndarray]:
    """(decompressed size from a ``width``-byte LE prefix, validated; the payload after it)."""
    if buf.size < width:
        raise CorruptFileError(f"{codec}: {buf.size}-byte unit is shorter than its length prefix")
    n = _check_size(int.from_bytes(buf[:width].tobytes(), "little"), buf.size - width, max_ratio,
                    codec, expected_size)
    return n, buf[width:]


def _zstd_bare(buf: np.ndarray, expected_size: int | None) -> np.ndarray:
    import zstandard
    limit = buf.size * _ZSTD_MAX_RATIO + _SLACK
    if expected_size is not None:
        limit = min(limit, expected_size)
    try:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        raw = dobj.decompress(buf.tobytes())
    except zstandard.ZstdError as exc:
        raise CorruptFileError(f"zstd: corrupt frame ({exc})") from exc
    if len(raw) > limit or (expected_size is not None and len(raw) != expected_size):
        raise CorruptFileError(f"zstd: frame decompresses to {len(raw)} bytes, expected {expected_size}")
    return np.frombuffer(raw, np.uint8)


def decompress_lz4(data: BufferLike, expected_size: int | None = None) -> np.ndarray:
    """lz4 unit: u32 LE length + one raw LZ4 block; returns uint8."""
    buf = as_u8(data)
    n, block = _length_prefixed(buf, 4, "lz4", _LZ4_MAX_RATIO, expected_size)
    if n == 0:
        return np.empty(0, np.uint8)
    if _LZ4_BLOCK is None and _PA_LZ4 is None:
        raise UnsupportedFeatureError("lz4: needs the lz4 package or a pyarrow built with lz4_raw")
    try:
        if _LZ4_BLOCK is not None:  # reports the true decompressed size, unlike pyarrow's lz4_raw
            raw = _LZ4_BLOCK.decompress(block, uncompressed_size=n)
        elif _PA_LZ4 is not None:
            raw = _PA_LZ4.decompress(pa.py_buffer(block), decompressed_size=n)
    except Exception as exc:
        raise CorruptFileError(f"lz4: corrupt block ({exc})") from exc
    if len(raw) != n:
        raise CorruptFileError(f"lz4: block holds {len(raw)} bytes, prefix says {n}")
    return np.frombuffer(raw, np.uint8)


def decompress(data: BufferLike, scheme: int | str, expected_size: int | None = None) -> np.ndarray:
    """Decompress one unit framed as Lance writes it; ``scheme`` is "zstd"/"lz4" or the 2.1 enum."""
    name = scheme_name(scheme)
    if name == ZSTD:
        return decompress_zstd(data, expected_size)
    return decompress_lz4(data, expected_size)


def decompress_many(data: BufferLike, offsets: np.ndarray, scheme: int | str
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Decompress unit i = ``data[offsets[i]:offsets[i+1]]`` for every i (full-zip per-value
    compression). Returns (int64 output offsets, uint8 bytes)."""
    buf = as_u8(data)
    offs = np.asarray(offsets, dtype=np.int64)
    if offs.size == 0:
        return np.zeros(1, np.int64), np.empty(0, np.uint8)
    if offs[0] < 0 or offs[-1] > buf.size or (np.diff(offs) < 0).any():
        raise CorruptFileError("compressed values: offsets are not increasing within the buffer")
    name = scheme_name(scheme)
    parts = []
    lens = np.zeros(offs.size, np.int64)
    for i, (a, b) in enumerate(zip(offs[:-1].tolist(), offs[1:].tolist())):  # one codec call per value
        if a == b:
            continue  # null / empty value: no unit
        part = decompress(buf[a:b], name)
        parts.append(part)
        lens[i + 1] = part.size
    out_offs = np.cumsum(lens)
    data_out = np.concatenate(parts) if parts else np.empty(0, np.uint8)
    return out_offs, data_out


def compress(data: bytes, scheme: int | str) -> bytes:
    """Compress one unit in Lance framing (tests/benchmarks)."""
    name = scheme_name(scheme)
    raw = bytes(data)
    if name == ZSTD:
        import zstandard
        body: bytes = zstandard.ZstdCompressor().compress(raw)
        return len(raw).to_bytes(8, "little") + body
    import lz4.block
    body = lz4.block.compress(raw, store_size=False)
    return len(raw).to_bytes(4, "little") + body
