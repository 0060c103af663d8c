"""Posting lists and positions of an INVERTED index partition (pylance 14.0.2, format_version 2).

A token's ``_posting`` holds one binary per block of up to 128 documents:

* a full block: f32 block max score, u32 first doc id, u8 bit width, the doc id deltas packed
  with the ``bitpacking`` crate's BitPacker4x (128 values in four interleaved lanes; the first
  delta is 0), u8 bit width and the term frequencies packed the same way;
* the last, shorter block (``posting_tail_codec`` ``varint_delta_v1``): f32 block max score, then
  LEB128 varints of the doc ids (the first absolute, then deltas) and of the frequencies
  (``fixed32_v1``: u32 LE values instead).

Doc ids are row positions in the partition's docs file. With positions, ``_compressed_position``
holds one stream per posting block (``_position_block_offset`` = where each starts): every
document's positions in the block, as deltas restarting at each document (the first absolute),
in groups of 128 packed like the frequencies (u8 width + payload), the rest as varints.
"""
from __future__ import annotations


import numpy as np
import numpy.typing as npt

from ...errors import CorruptFileError

BLOCK = 128
_LANES = 4

_Bytes = bytes | memoryview
"""A posting block or position stream's bytes."""


def unpack4x(buf: _Bytes, at: int, nbits: int, what: str) -> tuple[npt.NDArray[np.uint32], int]:
    """128 uint32 values BitPacker4x-packed at ``buf[at:]`` with ``nbits`` bits; (values, end)."""
    if nbits > 32:
        raise CorruptFileError(f"{what}: bit width {nbits} of a packed block exceeds 32")
    n = nbits * 16
    if at + n > len(buf):
        raise CorruptFileError(f"{what}: packed block truncated at byte {at}")
    if nbits == 0:
        return np.zeros(BLOCK, dtype=np.uint32), at
    words = np.frombuffer(buf, dtype="<u4", count=nbits * _LANES, offset=at).reshape(nbits, _LANES)
    words = np.vstack([words, np.zeros((1, _LANES), dtype="<u4")]).astype(np.uint64)
    start = np.arange(BLOCK // _LANES, dtype=np.int64) * nbits          # per lane: 32 values
    k, o = start // 32, (start % 32).astype(np.uint64)
    pair = words[k] | (words[k + 1] << np.uint64(32))                  # (32, 4)
    vals = (pair >> o[:, None]) & np.uint64((1 << nbits) - 1)
    return vals.reshape(-1).astype(np.uint32), at + n                   # value 4j + lane


def unpack4x_many(words: npt.NDArray[np.uint32], nbits: int) -> npt.NDArray[np.uint32]:
    """(B, 128) uint32 values of B BitPacker4x blocks of ``nbits`` bits; ``words``: (B, nbits, 4) u32."""
    b = words.shape[0]
    if nbits == 0:
        return np.zeros((b, BLOCK), dtype=np.uint32)
    w = np.concatenate([words, np.zeros((b, 1, _LANES), dtype=words.dtype)], axis=1).astype(np.uint64)
    start = np.arange(BLOCK // _LANES, dtype=np.int64) * nbits
    k, o = start // 32, (start % 32).astype(np.uint64)
    pair = w[:, k, :] | (w[:, k + 1, :] << np.uint64(32))              # (B, 32, 4)
    vals: npt.NDArray[np.uint64] = (pair >> o[None, :, None]) & np.uint64((1 << nbits) - 1)
    return vals.reshape(b, BLOCK).astype(np.uint32)


def _full_blocks(blocks: list[bytes], what: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """Doc ids and frequencies (each (B, 128)) of full posting blocks, decoded per bit width."""
    nb = len(blocks)
    firsts = np.empty(nb, dtype=np.uint64)
    dbits = np.empty(nb, dtype=np.int64)
    fbits = np.empty(nb, dtype=np.int64)
    for i, buf in enumerate(blocks):
        if len(buf) < 10:
            raise CorruptFileError(f"{what}: posting block {i} truncated")
        firsts[i] = int.from_bytes(buf[4:8], "little")
        dbits[i] = buf[8]
        at = 9 + 16 * buf[8]
        if at >= len(buf) or buf[8] > 32:
            raise CorruptFileError(f"{what}: posting block {i} truncated")
        fbits[i] = buf[at]
        if fbits[i] > 32 or at + 1 + 16 * fbits[i] != len(buf):
            raise CorruptFileError(f"{what}: posting block {i} has {len(buf)} bytes, its widths say "
                                   f"{at + 1 + 16 * int(fbits[i])}")
    docs = np.empty((nb, BLOCK), dtype=np.uint32)
    freqs = np.empty((nb, BLOCK), dtype=np.uint32)
    for width in np.unique(dbits):
        sel = np.flatnonzero(dbits == width)
        w = int(width)
        raw = b"".join(bytes(blocks[i][9:9 + 16 * w]) for i in sel)
        deltas = unpack4x_many(np.frombuffer(raw, dtype="<u4").reshape(len(sel), w, _LANES), w)
        docs[sel] = (np.cumsum(deltas, axis=1, dtype=np.uint64) + firsts[sel, None]).astype(np.uint32)
    for width in np.unique(fbits):
        sel = np.flatnonzero(fbits == width)
        w = int(width)
        raw = b"".join(bytes(blocks[i][len(blocks[i]) - 16 * w:]) for i in sel)
        freqs[sel] = unpack4x_many(np.frombuffer(raw, dtype="<u4").reshape(len(sel), w, _LANES), w)
    return docs, freqs


def _varints(buf: _Bytes, at: int, count: int, what: str) -> tuple[npt.NDArray[np.uint32], int]:
    """``count`` LEB128 u32 varints from ``buf[at:]`` (vectorised over the bytes); (values, end)."""
    if count == 0:
        return np.zeros(0, dtype=np.uint32), at
    b = np.frombuffer(buf, dtype=np.uint8, offset=at)
    ends = np.flatnonzero(b < 0x80)
    if len(ends) < count:
        raise CorruptFileError(f"{what}: varints truncated")
    last = int(ends[count - 1]) + 1
    b = b[:last].astype(np.uint64)
    ends = ends[:count]
    starts = np.concatenate(([0], ends[:-1] + 1))
    if np.any(ends - starts >= 5):
        raise CorruptFileError(f"{what}: a varint is longer than 5 bytes")
    shift = (np.arange(last) - np.repeat(starts, ends - starts + 1)).astype(np.uint64) * np.uint64(7)
    vals = np.add.reduceat((b & np.uint64(0x7F)) << shift, starts)
    if np.any(vals > 0xFFFFFFFF):
        raise CorruptFileError(f"{what}: a varint exceeds 32 bits")
    return vals.astype(np.uint32), at + last


def decode_posting(blocks: list[bytes], length: int, codec: str,
                   what: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """(doc ids uint32, frequencies uint32) of one token's posting blocks (``length`` documents)."""
    full, tail = divmod(length, BLOCK)
    if len(blocks) != full + (1 if tail else 0):
        raise CorruptFileError(f"{what}: {len(blocks)} posting blocks for {length} documents")
    docs: list[npt.NDArray[np.uint32]] = []
    freqs: list[npt.NDArray[np.uint32]] = []
    if full:
        d2, f2 = _full_blocks(blocks[:full], what)
        docs.append(d2.reshape(-1))
        freqs.append(f2.reshape(-1))
    if tail:
        buf = blocks[full]
        if codec == "fixed32_v1":
            if len(buf) < 4 + 8 * tail:
                raise CorruptFileError(f"{what}: posting tail truncated")
            v = np.frombuffer(buf, dtype="<u4", count=2 * tail, offset=4)
            docs.append(v[:tail].astype(np.uint32))
            freqs.append(v[tail:].astype(np.uint32))
        else:
            d, at = _varints(buf, 4, tail, what)
            f, at = _varints(buf, at, tail, what)
            if at != len(buf):
                raise CorruptFileError(f"{what}: {len(buf) - at} trailing bytes after the posting tail")
            docs.append(np.cumsum(d, dtype=np.uint64).astype(np.uint32))
            freqs.append(f)
    if not docs:
        return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.uint32)
    return np.concatenate(docs), np.concatenate(freqs)


def decode_positions(stream: bytes, offsets: list[int], freqs: npt.NDArray[np.uint32],
                     what: str) -> npt.NDArray[np.uint32]:
    """Every document's positions of one token, concatenated in posting order (document ``j``'s
    are the next ``freqs[j]``), uint32."""
    buf = memoryview(stream).cast("B")
    offs = [int(o) for o in offsets] + [len(buf)]
    if len(offs) - 1 != -(-len(freqs) // BLOCK):
        raise CorruptFileError(f"{what}: {len(offs) - 1} position blocks for {len(freqs)} documents")
    out: list[npt.NDArray[np.uint32]] = []
    for b in range(len(offs) - 1):
        f = freqs[b * BLOCK:(b + 1) * BLOCK].astype(np.int64)
        total = int(f.sum())
        lo, hi = offs[b], offs[b + 1]
        if not 0 <= lo <= hi <= len(buf):
            raise CorruptFileError(f"{what}: position block {b} offsets out of range")
        groups, rest = divmod(total, BLOCK)
        parts, at = [], lo
        for _ in range(groups):
            if at >= hi:
                raise CorruptFileError(f"{what}: position block {b} truncated")
            v, at = unpack4x(buf, at + 1, buf[at], what)
            parts.append(v)
        v, at = _varints(buf[:hi], at, rest, what)
        parts.append(v)
        if at != hi:
            raise CorruptFileError(f"{what}: {hi - at} trailing bytes in position block {b}")
        deltas = np.concatenate(parts).astype(np.uint64)
        starts = np.concatenate(([0], np.cumsum(f)[:-1])).astype(np.int64)
        # running sums restarting at each document's first position
        csum = np.cumsum(deltas)
        base = np.repeat(csum[starts] - deltas[starts], f)
        out.append((csum - base).astype(np.uint32))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint32)
