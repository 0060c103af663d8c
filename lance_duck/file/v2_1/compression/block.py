"""Whole buffers (page dictionaries, rep/def levels, constant-page levels) -> values."""
from __future__ import annotations

import numpy as np

from .... import trace
from ....encodings import fastlanes, rle
from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError
from .. import _kernels
from ..gather import gather_bytes, read_uint
from ..values import Fixed, FslValues, Values, VarBin, as_fixed, uint_view
from .common import UDT, encoding_kind, flat_bits, fsl_layers


def decode_block(enc: pb.CompressiveEncoding, buf: np.ndarray, n: int, what: str) -> Values:
    """Decode ``n`` values from one whole buffer."""
    kind = encoding_kind(enc)
    trace.record(f"block:{kind}")
    m = getattr(enc, kind)
    buf = np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
    if n < 0 or n > (1 << 40):
        raise CorruptFileError(f"{what}: implausible value count {n}")
    if kind == "flat":
        bits = int(m.bits_per_value)
        if bits == 1:
            if buf.size * 8 < n:
                raise CorruptFileError(f"{what}: bitmap too short")
            return Fixed(np.unpackbits(buf, count=n, bitorder="little").view(np.bool_), 1, n)
        if bits % 8 or buf.size < n * bits // 8:
            raise CorruptFileError(f"{what}: flat buffer of {buf.size} bytes for {n} x {bits} bits")
        return Fixed(buf[: n * bits // 8], bits, n)
    if kind == "variable":
        return _block_variable(buf, n, what)
    if kind == "inline_bitpacking":
        return _block_inline_bp(m, buf, n, what)
    if kind == "out_of_line_bitpacking":
        t = int(m.uncompressed_bits_per_value)
        w = flat_bits(m.values, what, tuple(range(0, 65)))
        return Fixed(fastlanes.unpack_out_of_line(buf, w, t, n), t, n)
    if kind == "rle":
        return _block_rle(m, buf, n, what)
    if kind == "general":
        trace.record(f"general:{int(m.compression.scheme)}")
        return decode_block(m.values, _kernels.decompress(int(m.compression.scheme), buf, what), n, what)
    if kind == "fixed_size_list":   # 2.3 dictionaries of vectors: items of every value, no validity
        layers, cur = fsl_layers(m)
        if any(v for _, v in layers) or any(d <= 0 for d, _ in layers):
            raise UnsupportedFeatureError(f"{what}: whole-buffer fixed-size lists {layers} with item validity")
        size = int(np.prod([d for d, _ in layers], dtype=np.int64))
        return FslValues(decode_block(cur.values, buf, n * size, what), layers, [None] * len(layers))
    if kind == "constant" and m.HasField("value"):
        v = np.frombuffer(m.value, np.uint8)
        return Fixed(np.tile(v, n), v.size * 8, n)
    raise UnsupportedFeatureError(f"{what}: encoding {kind!r} is not supported for whole buffers")


def _block_variable(buf: np.ndarray, n: int, what: str) -> VarBin:
    if buf.size < 8:
        raise CorruptFileError(f"{what}: variable block header missing")
    bpo = int(buf[:4].view("<u4")[0])
    if bpo == 32:
        hdr, start = 8, int(buf[4:8].view("<u4")[0])
    elif bpo == 64:
        if buf.size < 16:
            raise CorruptFileError(f"{what}: variable block header missing")
        hdr, start = 16, int(buf[8:16].view("<u8")[0])
    else:
        raise CorruptFileError(f"{what}: variable block with {bpo}-bit offsets")
    ob = bpo // 8
    if start > buf.size or hdr + (n + 1) * ob > start:
        raise CorruptFileError(f"{what}: variable block offsets out of range")
    o = read_uint(buf, hdr + np.arange(n + 1) * ob, ob, what)
    if (np.diff(o) < 0).any() or o[-1] + start > buf.size:
        raise CorruptFileError(f"{what}: variable block offsets are corrupt")
    return VarBin(o - o[0], buf[start + o[0]: start + o[-1]])


def _block_inline_bp(m: pb.InlineBitpacking, buf: np.ndarray, n: int, what: str) -> Fixed:
    t = int(m.uncompressed_bits_per_value)
    if t not in (8, 16, 32, 64):
        raise UnsupportedFeatureError(f"{what}: inline bitpacking of {t}-bit values")
    nb = -(-n // 1024)
    offs, widths = [], []
    pos = 0
    for _ in range(nb):  # blocks are self-delimiting; dictionaries have only a few
        if pos + t // 8 > buf.size:
            raise CorruptFileError(f"{what}: bitpacked block header outside the buffer")
        w = int(read_uint(buf, np.array([pos]), t // 8, what)[0])
        if w > t:
            raise CorruptFileError(f"{what}: bit width {w} > {t}")
        offs.append(pos + t // 8)
        widths.append(w)
        pos += t // 8 + w * 128
    counts = np.full(nb, 1024, np.int64)
    if nb:
        counts[-1] = n - 1024 * (nb - 1)
    vals = fastlanes.unpack_mixed(buf, t, np.array(offs, np.int64), np.array(widths, np.int64), counts)
    return Fixed(vals, t, n)


def _block_rle(m: pb.Rle, buf: np.ndarray, n: int, what: str) -> Fixed:
    lbits = flat_bits(m.run_lengths, what, (8, 16, 32, 64)) if m.HasField("run_lengths") else 8
    if encoding_kind(m.values) == "flat" and lbits == 8:
        bits = flat_bits(m.values, what, (8, 16, 32, 64))
        return Fixed(rle.decode_block(buf, bits, n), bits, n)
    # 2.3: [u64 byte length of the values][values, any whole-buffer coding][run lengths of lbits]
    if buf.size < 8:
        raise CorruptFileError(f"{what}: RLE block without its header")
    vlen = int(buf[:8].view("<u8")[0])
    runs = (buf.size - 8 - vlen) // (lbits // 8) if vlen <= buf.size - 8 else -1
    if runs < 0:
        raise CorruptFileError(f"{what}: RLE block values of {vlen} bytes overrun the buffer")
    vals = decode_block(m.values, buf[8: 8 + vlen], runs, what)
    lens = buf[8 + vlen: 8 + vlen + runs * lbits // 8].view(UDT[lbits]).astype(np.int64)
    if int(lens.sum()) != n:
        raise CorruptFileError(f"{what}: RLE run lengths cover {int(lens.sum())} values, expected {n}")
    fixed = as_fixed(vals, what)
    return Fixed(np.repeat(uint_view(fixed), lens), fixed.bits, n)


def levels_at(enc: pb.CompressiveEncoding, buf: np.ndarray, offs: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
              at: np.ndarray, what: str) -> np.ndarray:
    """``decode_block_batch(...)[at]``: bit-packed levels are read at those positions alone (a
    few rows' definition levels need not unpack their chunks' blocks)."""
    kind = encoding_kind(enc)
    if kind == "out_of_line_bitpacking":
        trace.record("levels:out_of_line_bitpacking:at")
        m = enc.out_of_line_bitpacking
        w = flat_bits(m.values, what, tuple(range(0, 65)))
        return fastlanes.out_of_line_at(buf, offs, sizes, counts, w, int(m.uncompressed_bits_per_value), at)
    levels: np.ndarray = decode_block_batch(enc, buf, offs, sizes, counts, what)
    if at.size and int(at.max()) >= levels.size:
        raise CorruptFileError(f"{what}: fewer levels than rows")
    picked: np.ndarray = levels[at]
    return picked


def decode_block_batch(enc: pb.CompressiveEncoding, buf: np.ndarray, offs: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
                       what: str) -> np.ndarray:
    """Decode one level buffer per chunk (u16 levels), all chunks at once; concatenated."""
    kind = encoding_kind(enc)
    trace.record(f"levels:{kind}")
    m = getattr(enc, kind)
    if kind == "out_of_line_bitpacking":
        t = int(m.uncompressed_bits_per_value)
        w = flat_bits(m.values, what, tuple(range(0, 65)))
        return fastlanes.unpack_out_of_line_batch(buf, offs, sizes, counts, w, t)
    if kind == "flat":
        bits = flat_bits(enc, what, (8, 16, 32, 64))
        if (sizes < counts * bits // 8).any():
            raise CorruptFileError(f"{what}: level buffer too short")
        return gather_bytes(buf, offs, counts * bits // 8, what).view(UDT[bits])
    if kind == "rle" and encoding_kind(m.values) == "flat":
        vb = flat_bits(m.values, what, (8, 16, 32, 64)) // 8
        # 2.3 may store 16 / 32-bit run lengths
        lb = flat_bits(m.run_lengths, what, (8, 16, 32, 64)) // 8 if m.HasField("run_lengths") else 1
        vlen = read_uint(buf, offs, 8, what)
        runs = vlen // vb
        if (vlen % vb).any() or (8 + vlen + runs * lb > sizes).any():
            raise CorruptFileError(f"{what}: RLE level buffer is corrupt")
        vals = gather_bytes(buf, offs + 8, vlen, what).view(UDT[vb * 8])
        lens = gather_bytes(buf, offs + 8 + vlen, runs * lb, what).view(UDT[lb * 8]).astype(np.int64)
        return rle.expand_chunks(vals, lens, runs, counts, what)
    parts = [uint_view(as_fixed(decode_block(enc, buf[o: o + s], c, what), what))
             for o, s, c in zip(offs.tolist(), sizes.tolist(), counts.tolist())]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)

