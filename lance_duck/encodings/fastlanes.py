"""FastLanes bit unpacking (1024-value blocks in the transposed "FL_ORDER" lane layout).

Used by: 2.0 ``BitpackedForNonNeg``; 2.1/2.2 ``InlineBitpacking`` (mini-block values and small
block-form dictionaries: one width word per 1024-value block) and ``OutOfLineBitpacking``
(block-form rep/def levels: one width for the whole buffer, raw or packed tail).

Layout of one block of T-bit words with packed width W (LANES = 1024 / T): packed word k of lane l
is word ``k*LANES + l``; lane l is a little-endian bit stream; its row r (0 <= r < T) holds the W
bits at ``[r*W, r*W + W)`` and is the value with logical index
``ORDER[r // 8] * 16 + (r % 8) * 128 + l``, ``ORDER = [0, 4, 2, 6, 1, 5, 3, 7]``.

Vectorisation: a batch of k blocks is a (k, W, LANES) word array; each row r is a couple of
shift/or/mask passes over a (k, LANES) slice written straight into the output viewed as
(k, 8, T/8, LANES) at ``[:, r % 8, ORDER[r // 8] * T // 64, :]``. Blocks are processed in
cache-sized batches; there is no per-block Python loop.
"""
from __future__ import annotations

from functools import lru_cache
from math import gcd

import numpy as np

from ..errors import CorruptFileError
from ._buf import BufferLike, as_u8, check_count, uint_dtype, words as _words

__all__ = ["ORDER", "BLOCK", "unpack", "unpack_blocks", "unpack_mixed", "unpack_out_of_line",
           "unpack_out_of_line_batch", "pack", "words_per_block"]

ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
BLOCK = 1024
_BATCH_BYTES = 1 << 22  # output bytes per batch of blocks (bounds the scratch arrays)


def words_per_block(bit_width: int, uncompressed_bits: int) -> int:
    """Number of T-bit words one packed 1024-value block of width W occupies."""
    return BLOCK * int(bit_width) // int(uncompressed_bits)


def _check_width(bit_width: int, t: int) -> tuple[int, np.dtype]:
    dt = uint_dtype(t)
    w = int(bit_width)
    if not 0 <= w <= t:
        raise CorruptFileError(f"FastLanes: bit width {w} outside 0..{t}")
    return w, dt


@lru_cache(maxsize=None)
def _plan(w: int, t: int) -> tuple:
    """Per row r: (dst_a, dst_b, word k, shift s, straddles)."""
    rows = []
    for r in range(t):
        k, s = divmod(r * w, t)
        rows.append((r % 8, ORDER[r // 8] * t // 64, k, s, s + w > t))
    return tuple(rows)


@lru_cache(maxsize=None)
def _groups(w: int, t: int) -> tuple:
    """Rows of equal bit shift, as (first row c, shift s, first word k0, straddles): with period
    P = t / gcd(w, t), rows c, c+P, c+2P, ... all start at bit s of words k0, k0+w/g, ..."""
    period = t // gcd(w, t)
    out = []
    for c in range(period):
        k0, s = divmod(c * w, t)
        out.append((c, s, k0, s + w > t))
    return tuple(out)


def _unpack_into(packed: np.ndarray, w: int, t: int, out: np.ndarray) -> None:
    """Unpack ``packed`` (k, W, LANES) into ``out`` (k, 1024) (both of the T-bit dtype).

    Per batch of n blocks: the packed words are copied word-major, (W, n, LANES) -- a transpose
    of whole LANES-word runs done as one copy of ``void`` elements -- so each row of all n blocks
    is one contiguous run; rows of equal bit shift are unpacked together (one strided (G, n*LANES)
    view per shift class, G = gcd(W, T)) into a row-major (T, n, LANES) scratch, which t/8
    ``void`` copies then scatter to the FastLanes output order."""
    k = packed.shape[0]
    if k == 0:
        return
    lanes = BLOCK // t
    if w == 0:
        out[...] = 0
        return
    dt = out.dtype
    run = np.dtype((np.void, lanes * dt.itemsize))  # one lane-run of LANES words
    # row r = 8j + a of block i goes to out[i, a, ORDER[j] * t // 64, :]; that b is j with its
    # log2(t/8) bits reversed, so splitting j into bits and reversing them is a plain transpose
    nb = (t // 8).bit_length() - 1
    out_v = out.reshape((k, 8) + (2,) * nb + (lanes,)).view(run)[..., 0]  # (k, a, b bits...)
    if w == t:  # plain words: row r of block i is packed[i, r]
        src_v = packed.view(run)[..., 0].reshape((k,) + (2,) * nb + (8,))  # (k, j bits..., a)
        np.copyto(out_v, src_v.transpose((0, nb + 1) + tuple(range(nb, 0, -1))))
        return
    mask = dt.type((1 << w) - 1)
    g = gcd(w, t)
    period, kstep = t // g, w // g
    step = max(1, _BATCH_BYTES // (BLOCK * dt.itemsize))
    m = min(step, k)
    # one spare block per row: row strides that are not a power of two avoid cache-set aliasing
    q = np.empty((w, m + 1, lanes), dt)
    rows = np.empty((t, m + 1, lanes), dt)
    t1 = np.empty((g, m + 1, lanes), dt)
    t2 = np.empty_like(t1)
    packed_v = packed.view(run)[..., 0]                                   # (k, W)
    for lo in range(0, k, step):  # batches of blocks, not single blocks
        n = min(step, k - lo)
        qb, rb, a1, a2 = q[:, :n], rows[:, :n], t1[:, :n], t2[:, :n]
        np.copyto(q.view(run)[:, :n, 0], packed_v[lo: lo + n].T)
        for c, s, k0, straddle in _groups(w, t):
            hi = k0 + kstep * (g - 1) + 1
            src = qb[k0: hi: kstep]
            dst = rb[c::period]
            if straddle:
                np.right_shift(src, s, out=a1)
                np.left_shift(qb[k0 + 1: hi + 1: kstep], t - s, out=a2)
                np.bitwise_or(a1, a2, out=a1)
                np.bitwise_and(a1, mask, out=dst)
            elif s == 0:
                np.bitwise_and(src, mask, out=dst)
            elif s + w == t:
                np.right_shift(src, s, out=dst)
            else:
                np.right_shift(src, s, out=a1)
                np.bitwise_and(a1, mask, out=dst)
        rows_v = rows.view(run)[:, :n, 0].reshape((2,) * nb + (8, n))      # (j bits..., a, n)
        np.copyto(out_v[lo: lo + n], rows_v.transpose((nb + 1, nb) + tuple(range(nb - 1, -1, -1))))


def unpack_blocks(packed: np.ndarray, bit_width: int, uncompressed_bits: int) -> np.ndarray:
    """Unpack a (k, W*LANES) (or (k, W, LANES)) array of T-bit words into a (k, 1024) array."""
    t = int(uncompressed_bits)
    w, dt = _check_width(bit_width, t)
    packed = np.asarray(packed)
    k = packed.shape[0]
    out = np.empty((k, BLOCK), dt)
    if w:
        _unpack_into(packed.reshape(k, w, BLOCK // t).view(dt), w, t, out)
    else:
        out[...] = 0
    return out


def unpack(words: BufferLike, bit_width: int, uncompressed_bits: int, num_values: int,
           *, blocks: np.ndarray | None = None) -> np.ndarray:
    """Decode ``num_values`` values from consecutive equal-width FastLanes blocks.

    ``words`` holds ``ceil(num_values / 1024)`` blocks of ``1024*W/T`` T-bit words each (the last
    block zero-padded). With ``blocks`` (indices of blocks to decode, in any order), only those
    blocks are decoded and the result is their 1024-value blocks back to back (the last block of
    the buffer is cut at ``num_values``, but only when it is the last one selected).
    """
    t = int(uncompressed_bits)
    w, dt = _check_width(bit_width, t)
    n = check_count(num_values, "FastLanes value count")
    nblocks = -(-n // BLOCK)
    wpb = words_per_block(w, t)
    data = _words(words, t, nblocks * wpb, what=f"FastLanes T={t} W={w}")
    if blocks is None:
        out = np.empty(nblocks * BLOCK, dt)
        if w:
            _unpack_into(data.reshape(nblocks, w, BLOCK // t), w, t, out.reshape(nblocks, BLOCK))
        else:
            out[...] = 0
        return out[:n]
    sel = np.asarray(blocks, dtype=np.int64)
    if sel.size and (sel.min() < 0 or sel.max() >= nblocks):
        raise CorruptFileError(f"FastLanes: block index outside 0..{nblocks - 1}")
    out = np.empty((sel.size, BLOCK), dt)
    if w:
        _unpack_into(data.reshape(nblocks, w, BLOCK // t)[sel], w, t, out)
    else:
        out[...] = 0
    flat = out.reshape(-1)
    if sel.size and sel[-1] == nblocks - 1:
        flat = flat[: flat.size - (nblocks * BLOCK - n)]
    return flat


def _gather_blocks(buf: np.ndarray, byte_offsets: np.ndarray, nwords: int, dt: np.dtype) -> np.ndarray:
    """A (k, nwords) word matrix of the blocks starting at ``byte_offsets`` (bounds checked)."""
    size = dt.itemsize
    k = byte_offsets.size
    if k == 0 or nwords == 0:
        return np.zeros((k, nwords), dt)
    nbytes = nwords * size
    if byte_offsets.min() < 0 or byte_offsets.max() + nbytes > buf.size:
        raise CorruptFileError("FastLanes: a packed block extends past the end of its buffer")
    if buf.ctypes.data % size == 0 and not (byte_offsets % size).any():
        wv = buf[: buf.size // size * size].view(dt)
        starts = byte_offsets // size
        idx = starts[:, None] + np.arange(nwords, dtype=np.int64)
        return wv[idx]
    idx = byte_offsets[:, None] + np.arange(nbytes, dtype=np.int64)
    return np.ascontiguousarray(buf[idx]).view(dt)


def unpack_mixed(data: BufferLike, uncompressed_bits: int, byte_offsets: np.ndarray,
                 widths: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """Decode a batch of FastLanes blocks with per-block widths (2.1/2.2 ``InlineBitpacking``).

    Block i's packed words (``1024*widths[i]/T`` of them) start at ``byte_offsets[i]`` of ``data``
    (the width word itself is the caller's business). The result is the first ``counts[i]`` values
    of every block (default 1024 each), concatenated in block order. Blocks are grouped by width;
    each group is unpacked in one vectorised pass.
    """
    t = int(uncompressed_bits)
    dt = uint_dtype(t)
    buf = as_u8(data)
    offs = np.asarray(byte_offsets, dtype=np.int64).reshape(-1)
    ws = np.asarray(widths).astype(np.int64, copy=False).reshape(-1)
    k = offs.size
    if ws.size != k:
        raise CorruptFileError(f"FastLanes: {ws.size} widths for {k} blocks")
    if k and (ws.min() < 0 or ws.max() > t):
        raise CorruptFileError(f"FastLanes: bit width {int(ws.max()) if ws.max() > t else int(ws.min())} "
                               f"outside 0..{t}")
    if counts is None:
        cnt = np.full(k, BLOCK, np.int64)
    else:
        cnt = np.asarray(counts, dtype=np.int64).reshape(-1)
        if cnt.size != k or (k and (cnt.min() < 0 or cnt.max() > BLOCK)):
            raise CorruptFileError("FastLanes: per-block value counts must be 0..1024, one per block")
    out = np.empty((k, BLOCK), dt)
    lanes = BLOCK // t
    uniq = np.unique(ws) if k else ws
    for w in uniq.tolist():  # one pass per distinct width (at most T+1)
        idx = np.flatnonzero(ws == w) if uniq.size > 1 else np.arange(k)
        if w == 0:
            out[idx] = 0
            continue
        packed = _gather_blocks(buf, offs[idx], w * lanes, dt).reshape(idx.size, w, lanes)
        if uniq.size == 1:
            _unpack_into(packed, w, t, out)
        else:
            tmp = np.empty((idx.size, BLOCK), dt)
            _unpack_into(packed, w, t, tmp)
            out[idx] = tmp
    if k == 0:
        return np.empty(0, dt)
    if (cnt[:-1] == BLOCK).all():
        return out.reshape(-1)[: (k - 1) * BLOCK + int(cnt[-1])]
    keep = np.arange(BLOCK) < cnt[:, None]
    return out[keep]


def unpack_out_of_line(data: BufferLike, bit_width: int, uncompressed_bits: int,
                       num_values: int) -> np.ndarray:
    """2.1/2.2 ``OutOfLineBitpacking`` block decode: one width, whole blocks, then a tail that is
    either raw T-bit words (iff the buffer holds exactly ``full*wpb + tail`` words) or one more
    padded block."""
    return unpack_out_of_line_batch(data, [0], [as_u8(data).size], [num_values], bit_width,
                                    uncompressed_bits)


def unpack_out_of_line_batch(data: BufferLike, byte_offsets, byte_sizes, counts, bit_width: int,
                             uncompressed_bits: int) -> np.ndarray:
    """Decode many ``OutOfLineBitpacking`` buffers (e.g. the def levels of every mini-block chunk)
    at once; buffer i is ``data[byte_offsets[i] : byte_offsets[i] + byte_sizes[i]]`` holding
    ``counts[i]`` values. Returns all values concatenated in buffer order."""
    t = int(uncompressed_bits)
    w, dt = _check_width(bit_width, t)
    buf = as_u8(data)
    offs = np.asarray(byte_offsets, dtype=np.int64).reshape(-1)
    sizes = np.asarray(byte_sizes, dtype=np.int64).reshape(-1)
    cnt = np.asarray(counts, dtype=np.int64).reshape(-1)
    if not (offs.size == sizes.size == cnt.size):
        raise CorruptFileError("OutOfLineBitpacking: offsets, sizes and counts differ in length")
    if offs.size == 0:
        return np.empty(0, dt)
    if cnt.min() < 0 or offs.min() < 0 or sizes.min() < 0 or (offs + sizes).max() > buf.size:
        raise CorruptFileError("OutOfLineBitpacking: a level buffer lies outside its chunk")
    item = dt.itemsize
    wpb = words_per_block(w, t)
    nwords = sizes // item
    full, tail = np.divmod(cnt, BLOCK)
    raw = (tail > 0) & (nwords == full * wpb + tail)
    nblk = full + ((tail > 0) & ~raw)
    if (nwords < np.where(raw, full * wpb + tail, nblk * wpb)).any():
        raise CorruptFileError(f"OutOfLineBitpacking: buffer too short for its values (W={w}, T={t})")
    # one 1024-slot row per block plus one per raw tail, in buffer order; rows are cut to their
    # value counts at the end with a single mask
    rows_per = nblk + raw
    nrows = int(rows_per.sum())
    first = np.cumsum(rows_per) - rows_per
    rowbuf = np.repeat(np.arange(offs.size), rows_per)
    j = np.arange(nrows, dtype=np.int64) - first[rowbuf]
    row_len = np.minimum(cnt[rowbuf] - j * BLOCK, BLOCK)
    is_block = j < nblk[rowbuf]
    rows = np.empty((nrows, BLOCK), dt)
    block_rows = np.flatnonzero(is_block) if raw.any() else None
    nb = nrows if block_rows is None else block_rows.size
    if nb:
        bufidx = rowbuf if block_rows is None else rowbuf[block_rows]
        jb = j if block_rows is None else j[block_rows]
        block_off = offs[bufidx] + jb * (wpb * item)
        dst = rows if block_rows is None else np.empty((nb, BLOCK), dt)
        if w:
            packed = _gather_blocks(buf, block_off, wpb, dt).reshape(nb, w, BLOCK // t)
            _unpack_into(packed, w, t, dst)
        else:
            dst[...] = 0
        if block_rows is not None:
            rows[block_rows] = dst
    if raw.any():
        rb = np.flatnonzero(raw)
        rlen = tail[rb]
        raw_rows = first[rb] + nblk[rb]
        ridx = np.repeat(np.arange(rb.size), rlen)
        rpos = np.arange(int(rlen.sum()), dtype=np.int64) - (np.cumsum(rlen) - rlen)[ridx]
        src_byte = offs[rb][ridx] + (full[rb][ridx] * wpb + rpos) * item
        if buf.ctypes.data % item == 0 and not (src_byte % item).any():
            vals = buf[: buf.size // item * item].view(dt)[src_byte // item]
        else:
            vals = np.ascontiguousarray(buf[src_byte[:, None] + np.arange(item)]).view(dt).reshape(-1)
        rows.reshape(-1)[raw_rows[ridx] * BLOCK + rpos] = vals
    if (row_len[:-1] == BLOCK).all():
        return rows.reshape(-1)[: (nrows - 1) * BLOCK + int(row_len[-1])] if nrows else rows.reshape(-1)
    return rows[np.arange(BLOCK) < row_len[:, None]]


def pack(values: np.ndarray, bit_width: int, uncompressed_bits: int) -> np.ndarray:
    """FastLanes-pack ``values`` (zero-padded to whole blocks) with width W; returns T-bit words.

    The inverse of :func:`unpack` (vectorised; used by tests and benchmarks)."""
    t = int(uncompressed_bits)
    w, dt = _check_width(bit_width, t)
    v = np.asarray(values).astype(dt, copy=False)
    nblocks = -(-v.size // BLOCK)
    full = np.zeros(nblocks * BLOCK, dt)
    full[: v.size] = v
    lanes = BLOCK // t
    src = full.reshape(nblocks, 8, t // 8, lanes)
    out = np.zeros((nblocks, max(w, 1), lanes), dt)
    if w == 0:
        return np.zeros(0, dt)
    mask = dt.type((1 << w) - 1)
    for a, b, kw, s, straddle in _plan(w, t):
        x = src[:, a, b, :] & mask
        out[:, kw, :] |= x << dt.type(s)
        if straddle:
            out[:, kw + 1, :] |= x >> dt.type(t - s)
    return out.reshape(-1)
