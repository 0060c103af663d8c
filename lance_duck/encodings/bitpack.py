"""Sequential LSB-first bit streams (value i at bits ``[i*W, (i+1)*W)``).

Used by: 2.0 ``Bitpacked`` (optionally ``signed``: sign-extend bit W-1 to T bits) and 2.1/2.2
``Flat`` with a ``bits_per_value`` that is not a whole number of bytes (``Flat(1)`` booleans are
plain bitmaps, see :mod:`.bitmap`). Block-form rep/def levels in 2.1/2.2 are FastLanes, not
sequential: see :func:`.fastlanes.unpack_out_of_line`.
"""
from __future__ import annotations

import numpy as np

from ..errors import CorruptFileError
from ._buf import BufferLike, as_u8, check_count, need, uint_dtype, words

__all__ = ["unpack_sequential", "pack_sequential"]


def _windows(buf: np.ndarray, count: int) -> np.ndarray:
    """All unaligned little-endian u64 windows ``buf[i:i+8]`` for i < count (a strided view)."""
    windows: np.ndarray = np.ndarray(shape=(count,), dtype="<u8", buffer=buf, strides=(1,))
    return windows


def unpack_sequential(data: BufferLike, bit_width: int, num_values: int, out_bits: int,
                      signed: bool = False) -> np.ndarray:
    """Decode ``num_values`` W-bit values from an LSB-first bit stream into ``out_bits``-wide ints.

    Returns unsigned ints (``uint{out_bits}``), or signed ints when ``signed`` (values sign-extended
    from bit W-1).
    """
    w = int(bit_width)
    t = int(out_bits)
    dt = uint_dtype(t)
    if not 0 <= w <= t:
        raise CorruptFileError(f"Bitpacked: bit width {w} outside 0..{t}")
    n = check_count(num_values, "Bitpacked value count")
    buf = as_u8(data)
    need(buf, (n * w + 7) // 8, f"Bitpacked W={w}")
    if w == 0:
        out = np.zeros(n, dt)
    elif w % 8 == 0 and w in (8, 16, 32, 64):
        out = words(buf, w, n).astype(dt)
    elif w == 1:
        out = np.unpackbits(buf[: (n + 7) // 8], count=n, bitorder="little").astype(dt)
    else:
        nbytes = (n * w + 7) // 8
        padded = np.zeros(nbytes + 16, np.uint8)
        padded[:nbytes] = buf[:nbytes]
        pos = np.arange(n, dtype=np.uint64) * np.uint64(w)
        byte = (pos >> np.uint64(3)).astype(np.intp)
        shift = pos & np.uint64(7)
        win = _windows(padded, nbytes + 9)
        v = win[byte] >> shift
        if w > 56:  # the value may reach into a 9th byte
            hi = padded[byte + 8].astype(np.uint64)
            extra = np.where(shift > 0, hi << ((np.uint64(64) - shift) & np.uint64(63)), np.uint64(0))
            v |= extra
        if w < 64:
            v &= np.uint64((1 << w) - 1)
        out = v.astype(dt)
    if signed:
        sdt = np.dtype(f"<i{t // 8}")
        if 0 < w < t:
            sign = dt.type(1 << (w - 1))
            out = ((out ^ sign) - sign).view(sdt)  # two's-complement sign extension
        else:
            out = out.view(sdt)
    return out


def pack_sequential(values: np.ndarray, bit_width: int) -> bytes:
    """Pack the low W bits of ``values`` into an LSB-first stream (vectorised; tests/benchmarks)."""
    w = int(bit_width)
    v = np.asarray(values).astype(np.uint64)
    if w == 0 or v.size == 0:
        return b"\x00" * ((v.size * w + 7) // 8)
    bits = ((v[:, None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    return np.packbits(bits.reshape(-1), bitorder="little").tobytes()
