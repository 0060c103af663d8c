"""Minimal private kernels used until ``lance_duck.encodings`` provides them.

# TODO: move to lance_duck.encodings (general zstd/lz4 framings, bitpack.unpack_sequential,
# fastlanes.unpack, fsst.decompress) and delete this module.
"""
from __future__ import annotations

import numpy as np

from ...errors import CorruptFileError, UnsupportedFeatureError

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def decompress(scheme: str, raw) -> bytes:
    """A whole 2.0 Flat buffer compressed with ``scheme`` (zstd: both framings; lz4 block)."""
    raw = bytes(raw)
    scheme = scheme.lower()
    if scheme == "zstd":
        try:
            import zstandard
        except ImportError as exc:  # pragma: no cover
            raise UnsupportedFeatureError("zstd-compressed pages need the 'zstandard' package") from exc
        bare = raw[:4] == _ZSTD_MAGIC and len(raw) > 4 and not (raw[4] & 0x10)
        try:
            if bare:
                return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
            if len(raw) < 8:
                raise CorruptFileError("zstd buffer shorter than its 8-byte length prefix")
            size = int.from_bytes(raw[:8], "little")
            out = zstandard.ZstdDecompressor().decompress(raw[8:], max_output_size=size)
        except zstandard.ZstdError as exc:
            raise CorruptFileError(f"zstd page buffer is corrupt: {exc}") from exc
        if len(out) != size:
            raise CorruptFileError(f"zstd page buffer: expected {size} bytes, got {len(out)}")
        return out
    if scheme == "lz4":
        try:
            import lz4.block
        except ImportError as exc:  # pragma: no cover
            raise UnsupportedFeatureError("lz4-compressed pages need the 'lz4' package") from exc
        try:
            return lz4.block.decompress(raw)
        except Exception as exc:
            raise CorruptFileError(f"lz4 page buffer is corrupt: {exc}") from exc
    raise UnsupportedFeatureError(f"2.0 Flat buffer compression scheme {scheme!r} is not supported")


def _bits(raw, total_bits: int) -> np.ndarray:
    u8 = np.frombuffer(raw, dtype=np.uint8)
    need = (total_bits + 7) // 8
    if u8.size < need:
        raise CorruptFileError(f"bit-packed buffer too short ({u8.size} bytes, need {need})")
    return np.unpackbits(u8[:need], bitorder="little")


def _gather(bits: np.ndarray, starts: np.ndarray, width: int, out_bits: int) -> np.ndarray:
    """Values of ``width`` bits starting at each bit position (LSB-first)."""
    dt = np.dtype(f"<u{max(out_bits, 8) // 8}")
    if width == 0:
        return np.zeros(len(starts), dtype=dt)
    idx = starts[:, None] + np.arange(width, dtype=np.int64)[None, :]
    sel = bits[idx].astype(np.uint64)
    weights = np.left_shift(np.uint64(1), np.arange(width, dtype=np.uint64))
    return (sel * weights[None, :]).sum(axis=1, dtype=np.uint64).astype(dt)


def unpack_sequential(raw, n: int, width: int, out_bits: int, signed: bool) -> np.ndarray:
    """``n`` values packed back to back LSB-first at ``width`` bits, widened to ``out_bits``."""
    if not 0 <= width <= out_bits <= 64 or out_bits not in (8, 16, 32, 64):
        raise CorruptFileError(f"Bitpacked: bad widths {width}/{out_bits}")
    bits = _bits(raw, n * width)
    vals = _gather(bits, np.arange(n, dtype=np.int64) * width, width, out_bits)
    if signed:
        sdt = np.dtype(f"<i{out_bits // 8}")
        if 0 < width < out_bits:
            shift = out_bits - width
            vals = (vals.view(sdt) << sdt.type(shift)) >> sdt.type(shift)
        return vals.view(sdt)
    return vals


_FL_ORDER = np.array([0, 4, 2, 6, 1, 5, 3, 7], dtype=np.int64)


def fastlanes_unpack(raw, n: int, width: int, out_bits: int) -> np.ndarray:
    """FastLanes (1024-value chunks, transposed lanes) unpacking of ``n`` values."""
    t = out_bits
    if t not in (8, 16, 32, 64) or not 0 <= width <= t:
        raise CorruptFileError(f"BitpackedForNonNeg: bad widths {width}/{t}")
    dt = np.dtype(f"<u{t // 8}")
    chunks = (n + 1023) // 1024
    if width == 0 or chunks == 0:
        return np.zeros(n, dtype=dt)
    lanes = 1024 // t
    words_per_chunk = 1024 * width // t
    w = np.frombuffer(raw, dtype=np.uint8)
    need = chunks * words_per_chunk * (t // 8)
    if w.size < need:
        raise CorruptFileError(f"BitpackedForNonNeg buffer too short ({w.size} bytes, need {need})")
    words = w[:need].view(dt).reshape(chunks, width, lanes)           # [chunk, k, lane]
    # per (chunk, lane): bit stream of W words of T bits, each LSB-first
    per_lane = np.ascontiguousarray(words.transpose(0, 2, 1))          # [chunk, lane, k]
    bits = np.unpackbits(per_lane.view(np.uint8).reshape(chunks, lanes, width * (t // 8)),
                         axis=-1, bitorder="little")                   # [chunk, lane, W*T]
    r = np.arange(t, dtype=np.int64)
    pos = r[:, None] * width + np.arange(width, dtype=np.int64)[None, :]   # [T, W]
    sel = bits[:, :, pos].astype(np.uint64)                              # [chunk, lane, T, W]
    weights = np.left_shift(np.uint64(1), np.arange(width, dtype=np.uint64))
    vals = (sel * weights).sum(axis=-1, dtype=np.uint64)                 # [chunk, lane, T]
    elem = (_FL_ORDER[r // 8] * 16 + (r % 8) * 128)[None, :] + np.arange(lanes)[:, None]  # [lane, T]
    out = np.zeros((chunks, 1024), dtype=np.uint64)
    out[:, elem.reshape(-1)] = vals.reshape(chunks, -1)
    return out.reshape(-1)[:n].astype(dt)


def fsst_decompress(symbol_table, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode FSST-compressed values (``data`` bytes split by int64 ``offsets``).

    Returns (decoded bytes, int64 offsets of the decoded values).
    """
    st = np.frombuffer(bytes(symbol_table), dtype=np.uint8)
    if st.size < 8:
        raise CorruptFileError("FSST symbol table is too short")
    header = int.from_bytes(st[:8].tobytes(), "little")
    if header >> 32 != 0x46535354:
        raise CorruptFileError("FSST symbol table has a bad magic number")
    nsym = header & 0xFF
    switch = (header >> 24) & 1
    if not switch:
        return data, offsets
    if st.size < 8 + 9 * nsym:
        raise CorruptFileError("FSST symbol table is truncated")
    sym = np.zeros((256, 8), dtype=np.uint8)
    sym[:nsym] = st[8:8 + 8 * nsym].reshape(nsym, 8)
    slen = np.zeros(256, dtype=np.int64)
    slen[:nsym] = st[8 + 8 * nsym: 8 + 9 * nsym]
    slen = np.minimum(slen, 8)
    data = np.asarray(data, dtype=np.uint8)
    m = int(offsets[-1]) if len(offsets) else 0
    b = data[int(offsets[0]) if len(offsets) else 0:m]
    base = int(offsets[0]) if len(offsets) else 0
    rel = (offsets - base).astype(np.int64)
    nb = len(b)
    # literal positions: inside runs of 0xFF that start at a code position, the 2nd, 4th...
    # are literals; a run of odd length makes the byte after it a literal.
    is_ff = b == 255
    value_start = np.zeros(nb + 1, dtype=bool)
    value_start[rel[:-1][rel[:-1] < nb]] = True
    run_start = is_ff & (np.concatenate(([True], ~is_ff[:-1])) | value_start[:nb])
    idx = np.arange(nb, dtype=np.int64)
    last_start = np.maximum.accumulate(np.where(run_start, idx, -1))
    parity = (idx - last_start) & 1
    literal = np.zeros(nb, dtype=bool)
    literal[is_ff] = parity[is_ff] == 1
    prev_escape = np.zeros(nb, dtype=bool)
    prev_escape[1:] = is_ff[:-1] & ~literal[:-1] & ~value_start[1:nb]
    literal |= prev_escape & ~is_ff
    code = ~literal & ~is_ff
    out_len = np.where(literal, 1, np.where(code, slen[b], 0))
    if np.any(code & (b >= nsym)):
        raise CorruptFileError("FSST code refers to a symbol outside the table")
    starts = np.cumsum(out_len) - out_len
    total = int(out_len.sum())
    src = np.repeat(idx, out_len)
    within = np.arange(total, dtype=np.int64) - np.repeat(starts, out_len)
    out = np.where(literal[src], b[src], sym[b[src], np.minimum(within, 7)])
    csum = np.concatenate(([0], np.cumsum(out_len)))
    return out.astype(np.uint8), csum[rel]
