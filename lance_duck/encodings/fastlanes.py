"""FastLanes bit unpacking (1024-value blocks in the transposed "FL_ORDER" lane layout).

Used by: 2.0 ``BitpackedForNonNeg``; 2.1/2.2 ``InlineBitpacking`` (mini-block values and small
block-form dictionaries: one width word per 1024-value block) and ``OutOfLineBitpacking``
(block-form rep/def levels: one width for the whole buffer, raw or packed tail).

Layout of one block of T-bit words with packed width W (LANES = 1024 / T): packed word k of lane l
is word ``k*LANES + l``; lane l is a little-endian bit stream; its row r (0 <= r < T) holds the W
bits at ``[r*W, r*W + W)`` and is the value with logical index
``ORDER[r // 8] * 16 + (r % 8) * 128 + l``, ``ORDER = [0, 4, 2, 6, 1, 5, 3, 7]``.

Vectorisation (see :func:`_unpack_runs`): blocks go in batches of ~2 MiB of output; per batch
the packed words are copied word-major as whole LANES-word runs (``void`` elements, read in
place from the chunk buffer when the blocks come from mini-block chunks: evenly spaced stretches
are strided views), the rows are unpacked in a few pieces (arithmetic progressions of rows
starting in evenly spaced words, see :func:`_pieces`) with shift/or/mask passes over long
contiguous stretches into a row-major scratch, and one ``void`` copy scatters
the rows to the FastLanes output order. Scratch memory is per thread and reused (on this kind of
VM faulting fresh pages in costs as much as a pass of the kernel). No per-block Python loop.
"""
from __future__ import annotations

import threading
from math import prod
from typing import Callable

import numpy as np
import numpy.typing as npt

from .. import _state, trace
from ..errors import CorruptFileError
from . import _compiled
from ._buf import BufferLike, as_u8, check_count, empty, uint_dtype, words as _words

__all__ = ["ORDER", "BLOCK", "unpack", "unpack_blocks", "unpack_blocks_at", "unpack_mixed", "extract", "extract_blocks", "extract_run",
           "unpack_out_of_line", "unpack_out_of_line_batch", "pack", "words_per_block"]

ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
BLOCK = 1024
_BATCH_BYTES = 1 << 21  # output bytes per batch of blocks (bounds the scratch arrays)


def words_per_block(bit_width: int, uncompressed_bits: int) -> int:
    """Number of T-bit words one packed 1024-value block of width W occupies."""
    return BLOCK * int(bit_width) // int(uncompressed_bits)


def _check_width(bit_width: int, t: int) -> tuple[int, np.dtype]:
    dt = uint_dtype(t)
    w = int(bit_width)
    if not 0 <= w <= t:
        raise CorruptFileError(f"FastLanes: bit width {w} outside 0..{t}")
    return w, dt


@_state.memo("bitpack_plans")
def _plan(w: int, t: int) -> tuple[tuple[int, int, int, int, bool], ...]:
    """Per row r: (dst_a, dst_b, word k, shift s, straddles) (used by :func:`pack`)."""
    rows = []
    for r in range(t):
        k, s = divmod(r * w, t)
        rows.append((r % 8, ORDER[r // 8] * t // 64, k, s, s + w > t))
    return tuple(rows)


#: a piece's kind: which of the value's terms it needs (see :func:`_pieces`)
_AND, _SHIFT, _SHIFT_AND, _STRADDLE = range(4)
_OPS = {_AND: 1, _SHIFT: 1, _SHIFT_AND: 2, _STRADDLE: 4}

#: one piece of an unpacking plan (see :func:`_pieces`)
_Piece = tuple[int, int, int, int, int, int, np.ndarray, np.ndarray, slice, slice, slice]
#: copies the runs of blocks ``lo .. lo+n`` word-major into ``out`` (W, n)
_Gather = Callable[[int, int, np.ndarray], None]


def _chains(w: int, t: int, dr: int) -> list[list[int]]:
    """Rows 0..T-1 cut into pieces: the rows of each residue mod ``dr`` in order, split where
    the word they start in stops advancing by a constant step."""
    pieces = []
    for r0 in range(min(dr, t)):
        chain = list(range(r0, t, dr))
        i = 0
        while i < len(chain):
            j = i + 1
            if j < len(chain):
                dk = (chain[j] * w) // t - (chain[i] * w) // t
                while j + 1 < len(chain) and (chain[j + 1] * w) // t - (chain[j] * w) // t == dk:
                    j += 1
                j += 1
            pieces.append(chain[i:j])
            i = j
    return pieces


def _kind(w: int, t: int, rows: list[int]) -> int:
    shifts = [(r * w) % t for r in rows]
    if any(s + w > t for s in shifts):
        return _STRADDLE
    if not any(shifts):
        return _AND
    return _SHIFT if all(s + w == t for s in shifts) else _SHIFT_AND


@_state.memo("bitpack_plans")
def _pieces(w: int, t: int) -> tuple[_Piece, ...]:
    """The unpacking plan of width W (0 < W < T): rows of a block split into few pieces, each
    an arithmetic progression of rows ``r0, r0+dr, ...`` (``cnt`` of them) whose first bits lie
    in words ``k0, k0+dk, ...`` (at per-row shifts): one strided view of rows and one of words,
    so a piece is 1-4 numpy calls whatever its size. The row stride ``dr`` is the one giving
    the fewest calls (e.g. 2 pieces for W = T-1, where one piece per bit shift class would
    take T). Entries: (r0, dr, cnt, k0, dk, kind, shifts, T - shifts, slice of the rows, of
    their words, of the next words), the shifts as (cnt, 1, 1) arrays of the T-bit dtype."""
    best = min(range(1, t), key=lambda dr: (sum(_OPS[_kind(w, t, rows)] for rows in _chains(w, t, dr)), dr))
    dt = uint_dtype(t)
    out: list[_Piece] = []
    for rows in _chains(w, t, best):
        r0, cnt = rows[0], len(rows)
        dr = rows[1] - rows[0] if cnt > 1 else 1
        k0 = (r0 * w) // t
        dk = (rows[1] * w) // t - k0 if cnt > 1 else 1
        s = np.array([(r * w) % t for r in rows], dt).reshape(cnt, 1, 1)
        # the rows, their words, the next words (dk 0: one word, broadcast)
        views = (slice(r0, r0 + dr * (cnt - 1) + 1, dr),
                 slice(k0, k0 + dk * (cnt - 1) + 1, dk) if dk else slice(k0, k0 + 1),
                 slice(k0 + 1, k0 + dk * (cnt - 1) + 2, dk) if dk else slice(k0 + 1, k0 + 2))
        out.append((r0, dr, cnt, k0, dk, _kind(w, t, rows), s, (t - s.astype(np.int64)).astype(dt)) + views)
    return tuple(out)


def _unpack_into(packed: np.ndarray, w: int, t: int, out: np.ndarray) -> None:
    """Unpack ``packed`` (k, W, LANES) into ``out`` (k, 1024) (both of the T-bit dtype)."""
    if w:
        run = np.dtype((np.void, BLOCK // t * out.dtype.itemsize))
        _unpack_runs(packed.view(run)[..., 0], w, t, out)
    else:
        out[...] = 0


def _unpack_at(buf: np.ndarray, byte_offsets: np.ndarray, w: int, t: int, out: np.ndarray) -> None:
    """Unpack the blocks whose packed words start at ``byte_offsets`` of the byte buffer ``buf``
    (any alignment; bounds checked) into ``out`` (k, 1024), reading them in place."""
    k = byte_offsets.size
    if w == 0 or k == 0:
        out[...] = 0
        return
    run_bytes = BLOCK // t * out.dtype.itemsize
    if byte_offsets.min() < 0 or byte_offsets.max() + w * run_bytes > buf.size:
        raise CorruptFileError("FastLanes: a packed block extends past the end of its buffer")
    if t >= 16 and out.flags.c_contiguous and buf.flags.c_contiguous:
        kernels = _compiled.fastlanes_kernels(k * BLOCK)
        if kernels is not None:   # one compiled pass, the GIL released (``encodings._compiled``)
            # (the argument types warm_up() loaded: no compile in a decode)
            starts = np.ascontiguousarray(byte_offsets, dtype=np.int64)
            kernels.fastlanes(kernels.readonly(buf), kernels.readonly(starts), int(w), out)
            trace.record("path:fastlanes:compiled", k)
            return
    _unpack_runs(_RunIndex(buf, byte_offsets, w, run_bytes), w, t, out)


class _RunIndex:
    """The (k, W) lane-runs of blocks starting at byte ``starts[i]`` of ``buf``.

    Blocks are usually evenly spaced over long stretches (equal-size chunks of a page): each
    stretch is one strided (blocks, W) view and a batch is copied from it word-major with plain
    transposing copies. Irregular starts fall back to one fancy-index gather of whole runs."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, w: int, run_bytes: int):
        if not buf.flags.c_contiguous:
            buf = np.ascontiguousarray(buf)
        self.shape = (starts.size, w)
        run = np.dtype((np.void, run_bytes))
        d = np.diff(starts)
        if d.size == 0 or not (d != d[0]).any():      # evenly spaced (a page's equal chunks)
            bounds = [0, starts.size]
        else:
            brk = np.flatnonzero(d[1:] != d[:-1]) + 2
            # stretch boundaries: a new stretch starts where the spacing changes (a lone block
            # between two changes forms its own stretch)
            bounds = np.unique(np.concatenate([[0], brk, [starts.size]])).tolist()
        self.segments = None
        if len(bounds) - 1 <= max(4, starts.size // 64):
            self.segments = []
            for a, b in zip(bounds[:-1], bounds[1:]):
                stride = int(starts[a + 1] - starts[a]) if b - a > 1 else run_bytes
                view = np.ndarray((b - a, w), run, buf, int(starts[a]), (stride, run_bytes))
                self.segments.append((a, b, view))
        else:
            self.windows = np.lib.stride_tricks.as_strided(
                buf, shape=(buf.size - run_bytes + 1, run_bytes), strides=(1, 1), writeable=False
            ).view(run)[:, 0]
            self.starts = starts
            self.steps = np.arange(w, dtype=np.int64) * run_bytes

    def gather_t(self, lo: int, n: int, out: np.ndarray) -> None:
        """out (W, n) <- the runs of blocks lo..lo+n, word-major."""
        if self.segments is None:
            out[...] = self.windows[self.steps[:, None] + self.starts[None, lo: lo + n]]
            return
        hi = lo + n
        for a, b, view in self.segments:  # the few evenly spaced stretches overlapping the batch
            if b > lo and a < hi:
                x, y = max(a, lo), min(b, hi)
                np.copyto(out[:, x - lo: y - lo], view[x - a: y - a].T)


_MAX_SPARE = 8


class _Spare:
    """Scratch buffers not in use, shared by every thread of the process (a per-thread cache would be
    rebuilt on every call from a foreign thread such as DuckDB's, whose Python thread state is
    dropped after each call: faulting fresh pages in costs as much as a pass of the kernel)."""

    def __init__(self) -> None:
        self.buffers: list[np.ndarray] = []
        self.lock = threading.Lock()


def _spare() -> _Spare:
    return _state.slot("bitpack_scratch", _Spare)


def _take_scratch(nbytes: int) -> np.ndarray:
    """Scratch bytes (at least ``nbytes``), from the spare ones when one is large enough."""
    spare = _spare()
    with spare.lock:
        buf = spare.buffers.pop() if spare.buffers else None
    if buf is None or buf.size < nbytes:
        buf = np.empty(nbytes, np.uint8)
    return buf


def _give_scratch(buf: np.ndarray) -> None:
    spare = _spare()
    with spare.lock:
        if len(spare.buffers) < _MAX_SPARE:
            spare.buffers.append(buf)


def _carve(flat: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    n = prod(shape)
    return flat[:n].reshape(shape), flat[n:]


@_state.memo("bitpack_plans")
def _widest(w: int, t: int) -> int:
    """Rows of the largest piece of width W's plan (the straddle scratch's height)."""
    return max(p[2] for p in _pieces(w, t))


def _unpack_runs(src: np.ndarray | _RunIndex, w: int, t: int, out: np.ndarray) -> None:
    """Unpack k blocks given as (k, W) lane-runs (``void`` elements of LANES words: an array
    view, or a :class:`_RunIndex` into a byte buffer) into ``out`` (k, 1024); 0 < W <= T.

    Per batch of n blocks: the runs are copied word-major, (W, n) runs = (W, n, LANES) words
    -- a transpose of whole runs, or with a :class:`_RunIndex` the gather from the chunk buffer
    itself -- so each row of all n blocks is one contiguous stretch; the rows are unpacked by
    :func:`_pieces` (a few strided (rows, n*LANES) views, shifts per row broadcast) into a
    row-major (T, n, LANES) scratch, which one ``void`` copy scatters to the FastLanes order."""
    k = src.shape[0]
    if k == 0:
        return
    lanes = BLOCK // t
    dt = out.dtype
    run = np.dtype((np.void, lanes * dt.itemsize))
    gather_t: _Gather
    if isinstance(src, _RunIndex):
        gather_t = src.gather_t
    else:
        runs = src

        def gather_t(lo: int, n: int, o: np.ndarray) -> None:
            np.copyto(o, runs[lo: lo + n].T)
    # row r = 8j + a of block i goes to out[i, a, ORDER[j] * t // 64, :]; that b is j with its
    # log2(t/8) bits reversed, so splitting j into bits and reversing them is a plain transpose
    nb = (t // 8).bit_length() - 1
    out_v = out.reshape((k, 8) + (2,) * nb + (lanes,)).view(run)[..., 0]  # (k, a, b bits...)
    to_out = (nb + 1, nb) + tuple(range(nb - 1, -1, -1))                   # rows (j bits, a, n)
    step = max(1, _BATCH_BYTES // (BLOCK * dt.itemsize))
    m = min(step, k)
    # one spare block per row: row strides that are not a power of two avoid cache-set aliasing
    nbytes = (w + 1 + (0 if w == t else t + _widest(w, t))) * (m + 1) * lanes * dt.itemsize
    buf = _take_scratch(nbytes)
    try:
        _unpack_batches(gather_t, k, w, t, out_v, to_out, step, m, buf[:nbytes].view(dt), src)
    finally:
        _give_scratch(buf)


def _unpack_batches(gather_t: _Gather, k: int, w: int, t: int, out_v: np.ndarray, to_out: tuple[int, ...],
                    step: int, m: int, scratch: np.ndarray, src: np.ndarray | _RunIndex) -> None:
    """The batches of :func:`_unpack_runs` (``scratch``: its bytes, of the T-bit dtype)."""
    dt = scratch.dtype
    lanes = BLOCK // t
    run = np.dtype((np.void, lanes * dt.itemsize))
    nb = (t // 8).bit_length() - 1
    q, scratch = _carve(scratch, (w + 1, m + 1, lanes))
    q_v = q.view(run)[..., 0]
    if w == t and not isinstance(src, _RunIndex):  # plain words in an array: one copy
        src_v = src.reshape((k,) + (2,) * nb + (8,))                      # (k, j bits..., a)
        np.copyto(out_v, src_v.transpose((0, nb + 1) + tuple(range(nb, 0, -1))))
        return
    if w == t:  # plain words: row r is word r
        for lo in range(0, k, step):
            n = min(step, k - lo)
            gather_t(lo, n, q_v[:w, :n])
            np.copyto(out_v[lo: lo + n], q_v[:w, :n].reshape((2,) * nb + (8, n)).transpose(to_out))
        return
    mask = _mask(t, w)
    plan = _pieces(w, t)
    rows, scratch = _carve(scratch, (t, m + 1, lanes))
    tmp, scratch = _carve(scratch, (_widest(w, t), m + 1, lanes))
    q[w] = 0  # a zero word after the last: the next-word term of the last rows reads it
    for lo in range(0, k, step):  # batches of blocks, not single blocks
        n = min(step, k - lo)
        qb, rb = q[:, :n], rows[:, :n]
        gather_t(lo, n, q_v[:w, :n])
        for _, _, cnt, _, _, kind, sh, back, rows_at, words_at, next_at in plan:
            dst, src = rb[rows_at], qb[words_at]
            if kind == _AND:
                np.bitwise_and(src, mask, out=dst)
                continue
            np.right_shift(src, sh, out=dst)
            if kind == _STRADDLE:
                a2 = tmp[:cnt, :n]
                np.left_shift(qb[next_at], back, out=a2)
                np.bitwise_or(dst, a2, out=dst)
            if kind != _SHIFT:
                np.bitwise_and(dst, mask, out=dst)
        rows_v = rows.view(run)[:, :n, 0].reshape((2,) * nb + (8, n))
        np.copyto(out_v[lo: lo + n], rows_v.transpose(to_out))


def unpack_blocks(packed: np.ndarray, bit_width: int, uncompressed_bits: int) -> np.ndarray:
    """Unpack a (k, W*LANES) (or (k, W, LANES)) array of T-bit words into a (k, 1024) array."""
    t = int(uncompressed_bits)
    w, dt = _check_width(bit_width, t)
    packed = np.asarray(packed)
    k = packed.shape[0]
    out = empty((k, BLOCK), dt)
    if w:
        _unpack_into(packed.reshape(k, w, BLOCK // t).view(dt), w, t, out)
    else:
        out[...] = 0
    return out


def unpack_blocks_at(data: BufferLike, byte_offsets: np.ndarray, bit_width: int,
                     uncompressed_bits: int) -> np.ndarray:
    """Unpack the equal-width blocks whose packed words start at ``byte_offsets`` of ``data``
    (e.g. the blocks of many ``InlineBitpacking`` chunks) into a (k, 1024) array; the blocks
    are read in place (any alignment), with no gathered copy."""
    t = int(uncompressed_bits)
    w, dt = _check_width(bit_width, t)
    offs = np.asarray(byte_offsets, dtype=np.int64).reshape(-1)
    out = empty((offs.size, BLOCK), dt)
    _unpack_at(as_u8(data), offs, w, t, out)
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
        out = empty(nblocks * BLOCK, dt)
        if w:
            _unpack_into(data.reshape(nblocks, w, BLOCK // t), w, t, out.reshape(nblocks, BLOCK))
        else:
            out[...] = 0
        return out[:n]
    sel = np.asarray(blocks, dtype=np.int64)
    if sel.size and (sel.min() < 0 or sel.max() >= nblocks):
        raise CorruptFileError(f"FastLanes: block index outside 0..{nblocks - 1}")
    out = empty((sel.size, BLOCK), dt)
    if w:
        _unpack_into(data.reshape(nblocks, w, BLOCK // t)[sel], w, t, out)
    else:
        out[...] = 0
    flat = out.reshape(-1)
    if sel.size and sel[-1] == nblocks - 1:
        flat = flat[: flat.size - (nblocks * BLOCK - n)]
    return flat


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
    if k == 0:
        return np.empty(0, dt)
    if (cnt[:-1] == BLOCK).all():  # whole blocks but the last: unpack in place, cut the end
        out = empty((k, BLOCK), dt)
        _unpack_whole(buf, offs, ws, t, out)
        return out.reshape(-1)[: (k - 1) * BLOCK + int(cnt[-1])]
    total = int(cnt.sum())
    dst = np.cumsum(cnt) - cnt
    cuts = np.flatnonzero(cnt[:-1] != BLOCK) + 1     # a short block ends a run (a page's last chunk)
    if cuts.size <= MAX_SHORT_RUNS:
        # runs of whole blocks but their last, each unpacked in place at its place in the result;
        # a run's last block spills past its values into the next run's place, written after it
        # (the result has one block of slack for the last run's spill)
        res = empty(total + BLOCK, dt)
        bounds = [0, *cuts.tolist(), k]
        for a, b in zip(bounds[:-1], bounds[1:]):
            at = int(dst[a])
            _unpack_whole(buf, offs[a:b], ws[a:b], t, res[at: at + (b - a) * BLOCK].reshape(b - a, BLOCK))
        return res[:total]
    # many short blocks: every width group's rows are placed straight into the result
    res = empty(total, dt)
    uniq = np.unique(ws)
    for w in uniq.tolist():
        idx = np.flatnonzero(ws == w) if uniq.size > 1 else np.arange(k)
        _unpack_placed(buf, offs[idx], w, t, res, dst[idx], cnt[idx])
    return res


#: A mixed-width batch with at most this many short blocks before its last (pages' last chunks)
#: is unpacked run by run in place (:func:`unpack_mixed`); more go through :func:`_place_rows`.
MAX_SHORT_RUNS = 16


def _unpack_whole(buf: np.ndarray, offs: np.ndarray, ws: np.ndarray, t: int, out: np.ndarray) -> None:
    """Blocks at byte ``offs`` of ``buf`` with widths ``ws``, unpacked whole into ``out`` (k, 1024)."""
    dt = out.dtype
    uniq = np.unique(ws)
    rest = None
    if uniq.size > 1:
        # widths with a few blocks (e.g. the first chunks of an increasing column): one
        # per-value read of all their values costs less than a kernel pass per width
        few = np.bincount(ws, minlength=t + 1)[ws] <= FEW_BLOCKS[t]
        if few.any():
            sel = np.flatnonzero(few)
            out[sel] = extract(buf, np.repeat(offs[sel], BLOCK), np.repeat(ws[sel], BLOCK),
                               np.tile(np.arange(BLOCK), sel.size), t).reshape(sel.size, BLOCK)
            rest = np.flatnonzero(~few)
            uniq = np.unique(ws[rest])
    for w in uniq.tolist():  # one pass per distinct width (at most T+1)
        if uniq.size == 1 and rest is None:
            _unpack_at(buf, offs, w, t, out)
        else:
            idx = np.flatnonzero(ws == w) if rest is None else rest[ws[rest] == w]
            a, b = int(idx[0]), int(idx[-1]) + 1
            if b - a == idx.size:   # a run of blocks (widths of a sorted column): in place
                _unpack_at(buf, offs[a:b], w, t, out[a:b])
                continue
            tmp = np.empty((idx.size, BLOCK), dt)
            _unpack_at(buf, offs[idx], w, t, tmp)
            out[idx] = tmp


#: Per T: a width shared by at most this many blocks of a mixed-width batch is read per value
#: (:func:`extract`): a kernel pass costs 1-4 numpy calls per piece of :func:`_pieces` (up to
#: ~36 calls) whatever the block count, a per-value read ~20 calls over 1024 values per block
#: (T=64: 4, measured on an increasing int64 id's pages after the row plan made passes cheaper).
FEW_BLOCKS = {8: 2, 16: 3, 32: 4, 64: 4}


def _unpack_placed(buf: np.ndarray, offs: np.ndarray, w: int, t: int, res: np.ndarray, dst: np.ndarray,
                   lens: np.ndarray) -> None:
    """``res[dst[i] : dst[i] + lens[i]]`` = the first ``lens[i]`` values of the block of width ``w``
    at byte ``offs[i]`` of ``buf`` (targets disjoint). The compiled kernels write each block's
    values at their place (a short block through a 1024-value scratch); else the blocks are
    unpacked whole and placed by :func:`_place_rows`."""
    k = offs.size
    if k == 0:
        return
    if w and t >= 16 and res.ndim == 1 and res.flags.c_contiguous and res.flags.writeable and buf.flags.c_contiguous:
        kernels = _compiled.fastlanes_kernels(k * BLOCK)
        if kernels is not None:
            run_bytes = BLOCK // t * res.dtype.itemsize
            if offs.min() < 0 or offs.max() + w * run_bytes > buf.size:
                raise CorruptFileError("FastLanes: a packed block extends past the end of its buffer")
            d = np.ascontiguousarray(dst, dtype=np.int64)
            n = np.ascontiguousarray(lens, dtype=np.int64)
            if n.min() < 0 or n.max() > BLOCK or d.min() < 0 or (d + n).max() > res.size:
                raise CorruptFileError("FastLanes: a block's values fall outside their output")
            kernels.fastlanes_place(kernels.readonly(buf), kernels.readonly(np.ascontiguousarray(offs, dtype=np.int64)),
                                    int(w), kernels.readonly(d), kernels.readonly(n), res, np.empty(BLOCK, res.dtype))
            trace.record("path:fastlanes:compiled", k)
            return
    tmp = np.empty((k, BLOCK), res.dtype)
    _unpack_at(buf, offs, w, t, tmp)
    _place_rows(res, tmp, dst, lens)


def _place_rows(res: np.ndarray, rows: np.ndarray, dst: np.ndarray, lens: np.ndarray) -> None:
    """``res[dst[i] : dst[i] + lens[i]] = rows[i, :lens[i]]`` for every row (disjoint targets).

    Rows whose targets follow each other (the blocks of a level buffer) form runs, a run ending
    at a short row or where the targets jump: each run is one contiguous copy (rows are
    C-contiguous). With more runs than half the rows, whole rows are row copies into a
    sliding-window view of ``res`` and short rows go by index."""
    whole = lens == BLOCK
    k = rows.shape[0]
    ends = np.flatnonzero(~whole[:-1] | (dst[1:] != dst[:-1] + lens[:-1]))
    if ends.size * 2 < k:
        flat = rows.reshape(-1)
        lo = 0
        for e in ends.tolist() + [k - 1]:
            a = int(dst[lo])
            n = (e - lo) * BLOCK + int(lens[e])
            res[a: a + n] = flat[lo * BLOCK: lo * BLOCK + n]
            lo = e + 1
        return
    if whole.any():
        win = np.lib.stride_tricks.as_strided(res, shape=(res.size - BLOCK + 1, BLOCK),
                                              strides=(res.itemsize, res.itemsize))
        if whole.all():
            win[dst] = rows
        else:
            sel = np.flatnonzero(whole)
            win[dst[sel]] = rows[sel]
    if not whole.all():
        part = np.flatnonzero(~whole)
        plen = lens[part]
        seg, pos = _segments(plen)
        res[dst[part][seg] + pos] = rows[part][np.arange(BLOCK) < plen[:, None]]


def unpack_out_of_line(data: BufferLike, bit_width: int, uncompressed_bits: int,
                       num_values: int) -> np.ndarray:
    """2.1/2.2 ``OutOfLineBitpacking`` block decode: one width, whole blocks, then a tail that is
    either raw T-bit words (iff the buffer holds exactly ``full*wpb + tail`` words) or one more
    padded block."""
    return unpack_out_of_line_batch(data, [0], [as_u8(data).size], [num_values], bit_width,
                                    uncompressed_bits)


def unpack_out_of_line_batch(data: BufferLike, byte_offsets: npt.ArrayLike, byte_sizes: npt.ArrayLike,
                             counts: npt.ArrayLike, bit_width: int,
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
    item = dt.itemsize
    wpb = words_per_block(w, t)
    full, tail, raw, nblk = _buffer_blocks(buf, offs, sizes, cnt, w, t)
    total = int(cnt.sum())
    res = empty(total, dt)
    cstart = np.cumsum(cnt) - cnt  # where buffer i's values go in the result
    nb = int(nblk.sum())
    if nb and offs.size > 1 and not (cnt[:-1] % BLOCK).any():
        # (typical: chunks of whole blocks) every block but the last buffer's lands on a whole
        # block of the result in order: unpack those straight into it
        head = int(full[:-1].sum())
        if head:
            rowbuf = np.repeat(np.arange(offs.size - 1), full[:-1])
            j = np.arange(head, dtype=np.int64) - (np.cumsum(full[:-1]) - full[:-1])[rowbuf]
            _unpack_at(buf, offs[rowbuf] + j * (wpb * item), w, t, res[: head * BLOCK].reshape(head, BLOCK))
            res[head * BLOCK:] = unpack_out_of_line_batch(buf, offs[-1:], sizes[-1:], cnt[-1:], w, t)
            return res
    if nb:
        # block j of buffer i holds values j*1024 .. of that buffer (a packed tail block fewer)
        rowbuf = np.repeat(np.arange(offs.size), nblk)
        j = np.arange(nb, dtype=np.int64) - (np.cumsum(nblk) - nblk)[rowbuf]
        _unpack_placed(buf, offs[rowbuf] + j * (wpb * item), w, t, res, cstart[rowbuf] + j * BLOCK,
                       np.minimum(cnt[rowbuf] - j * BLOCK, BLOCK))
    if raw.any():
        # raw tails: the buffer's last words are the values themselves
        rb = np.flatnonzero(raw)
        seg, pos = _segments(tail[rb])
        src_byte = (offs[rb] + full[rb] * (wpb * item))[seg] + pos * item
        if buf.ctypes.data % item == 0 and not (src_byte % item).any():
            vals = buf[: buf.size // item * item].view(dt)[src_byte // item]
        else:
            vals = np.ascontiguousarray(buf[src_byte[:, None] + np.arange(item)]).view(dt).reshape(-1)
        res[(cstart[rb] + full[rb] * BLOCK)[seg] + pos] = vals
    return res


def _buffer_blocks(buf: np.ndarray, offs: np.ndarray, sizes: np.ndarray, cnt: np.ndarray, w: int,
                   t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per ``OutOfLineBitpacking`` buffer, checked to lie in ``buf`` and to hold its values: (whole
    blocks, tail values, whether the tail is raw T-bit words, packed blocks to unpack)."""
    if cnt.min() < 0 or offs.min() < 0 or sizes.min() < 0 or (offs + sizes).max() > buf.size:
        raise CorruptFileError("OutOfLineBitpacking: a level buffer lies outside its chunk")
    wpb = words_per_block(w, t)
    nwords = sizes // uint_dtype(t).itemsize
    full, tail = np.divmod(cnt, BLOCK)
    raw = (tail > 0) & (nwords == full * wpb + tail)
    nblk = full + ((tail > 0) & ~raw)
    if (nwords < np.where(raw, full * wpb + tail, nblk * wpb)).any():
        raise CorruptFileError(f"OutOfLineBitpacking: buffer too short for its values (W={w}, T={t})")
    return full, tail, raw, nblk


def out_of_line_at(data: BufferLike, byte_offsets: npt.ArrayLike, byte_sizes: npt.ArrayLike, counts: npt.ArrayLike,
                   bit_width: int, uncompressed_bits: int, positions: npt.ArrayLike) -> np.ndarray:
    """``unpack_out_of_line_batch(...)[positions]`` without unpacking whole blocks: each value is
    read where it lies (:func:`extract` for a packed block's value, the word itself for a raw
    tail), after the same checks of the buffers. For a few values of long level buffers (the
    definition levels of the rows a point read or a short LIMIT asks for)."""
    t = int(uncompressed_bits)
    w, dt = _check_width(bit_width, t)
    buf = as_u8(data)
    offs = np.asarray(byte_offsets, dtype=np.int64).reshape(-1)
    sizes = np.asarray(byte_sizes, dtype=np.int64).reshape(-1)
    cnt = np.asarray(counts, dtype=np.int64).reshape(-1)
    pos = np.asarray(positions, dtype=np.int64).reshape(-1)
    if not (offs.size == sizes.size == cnt.size):
        raise CorruptFileError("OutOfLineBitpacking: offsets, sizes and counts differ in length")
    if offs.size == 0 or pos.size == 0:
        if pos.size:
            raise CorruptFileError("OutOfLineBitpacking: fewer levels than rows")
        return np.empty(0, dt)
    item = dt.itemsize
    wpb = words_per_block(w, t)
    if offs.size == 1:       # one buffer (a few rows of one chunk): its checks with Python ints
        o, size, n = int(offs[0]), int(sizes[0]), int(cnt[0])
        if n < 0 or o < 0 or size < 0 or o + size > buf.size:
            raise CorruptFileError("OutOfLineBitpacking: a level buffer lies outside its chunk")
        nw, (f, tl) = size // item, divmod(n, BLOCK)
        is_raw = tl > 0 and nw == f * wpb + tl
        if nw < (f * wpb + tl if is_raw else (f + (tl > 0)) * wpb):
            raise CorruptFileError(f"OutOfLineBitpacking: buffer too short for its values (W={w}, T={t})")
        lo, hi = int(pos.min()), int(pos.max())
        if lo < 0 or hi >= n:
            raise CorruptFileError("OutOfLineBitpacking: fewer levels than rows")
        j0 = lo // BLOCK
        if j0 == hi // BLOCK and not (is_raw and j0 == f):    # every position in one packed block
            at, r = o + j0 * wpb * item, pos - j0 * BLOCK
            if pos.size > FEW_VALUES and hi - lo < 2 * pos.size:
                run: np.ndarray = extract_run(buf, at, w, lo - j0 * BLOCK, hi - j0 * BLOCK + 1, t)[pos - lo]
                return run
            return extract(buf, np.full(pos.size, at, np.int64), np.full(pos.size, w, np.int64), r, t)
    full, tail, raw, _ = _buffer_blocks(buf, offs, sizes, cnt, w, t)
    cstart = np.cumsum(cnt) - cnt
    if int(pos.min()) < 0 or int(pos.max()) >= int(cstart[-1] + cnt[-1]):
        raise CorruptFileError("OutOfLineBitpacking: fewer levels than rows")
    c = np.searchsorted(cstart, pos, side="right") - 1 if offs.size > 1 else np.zeros(pos.size, np.int64)
    j, r = np.divmod(pos - cstart[c], BLOCK)
    in_raw = raw[c] & (j == full[c])
    if not in_raw.any():
        first = offs[c[0]] + j[0] * (wpb * item)
        r0, r1 = int(r.min()), int(r.max()) + 1
        if pos.size > FEW_VALUES and r1 - r0 <= 2 * pos.size and bool((c == c[0]).all() and (j == j[0]).all()):
            picked: np.ndarray = extract_run(buf, int(first), w, r0, r1, t)[r - r0]   # (one block, a run with few gaps)
            return picked
        return extract(buf, offs[c] + j * (wpb * item), np.full(pos.size, w, np.int64), r, t)
    out = np.empty(pos.size, dt)
    packed = ~in_raw
    if packed.any():
        out[packed] = extract(buf, (offs[c] + j * (wpb * item))[packed], np.full(int(packed.sum()), w, np.int64),
                              r[packed], t)
    at = (offs[c] + (full[c] * wpb + r) * item)[in_raw]
    out[in_raw] = _read_words(buf, at, t).astype(dt)
    return out


def _segments(lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments of ``lens`` items: (segment of each item, position inside its segment)."""
    seg = np.repeat(np.arange(lens.size), lens)
    pos = np.arange(seg.size, dtype=np.int64) - (np.cumsum(lens) - lens)[seg]
    return seg, pos


def extract(data: BufferLike, block_offsets: np.ndarray, widths: np.ndarray, positions: np.ndarray,
            uncompressed_bits: int) -> np.ndarray:
    """Single values out of packed blocks, without unpacking the blocks: value ``positions[i]``
    (0..1023) of the block whose packed words start at byte ``block_offsets[i]`` of ``data``,
    packed with width ``widths[i]``. Cost is per value (a few word reads), for sparse selections."""
    t = int(uncompressed_bits)
    dt = uint_dtype(t)
    buf = as_u8(data)
    pos = np.asarray(positions, np.int64)
    w = np.asarray(widths, np.int64)
    if pos.size == 0:
        return np.zeros(0, dt)
    if pos.size <= FEW_VALUES:
        return np.array(_extract_few(buf, np.asarray(block_offsets, np.int64).tolist(), w.tolist(),
                                     pos.tolist(), t), dt)
    if int(w.min()) < 0 or int(w.max()) > t or int(pos.min()) < 0 or int(pos.max()) >= BLOCK:
        raise CorruptFileError(f"FastLanes: bit width outside 0..{t} or position outside a block")
    nb, lanes = t // 8, BLOCK // t
    word, shift, back = _extract_tables(t)
    cell = w * BLOCK + pos                    # (width, position) -> packed word and bit shift
    base = np.asarray(block_offsets, np.int64)
    sh = shift[cell]
    typed = _typed_words(buf, base, nb)
    if typed is not None:                     # word-aligned blocks: word indices, typed gathers
        lo = base // nb + word[cell]
        limit = typed.size
    else:
        lo = base + word[cell].astype(np.int64) * nb
        limit = buf.size - nb + 1
    step = lanes if typed is not None else lanes * nb
    if lo.size and int(lo.max()) + step >= limit:   # near the end: check each value exactly
        live = w > 0                          # width 0: the value is 0, nothing is stored
        straddle = (sh.astype(np.int64) + w > t) & live
        if (live & (lo >= limit)).any() or (straddle & (lo + step >= limit)).any():
            raise CorruptFileError("FastLanes: a packed value lies past the end of its buffer")
        if not live.any():
            return np.zeros(pos.size, dt)
        lo = np.where(live, lo, 0)
    # the lane's next word is read for every value: its bits land above the value's width unless
    # the value straddles the two words, and the mask drops them
    hi = np.minimum(lo + step, max(limit - 1, 0))
    if typed is not None:
        a, b = typed.take(lo), typed.take(hi)
        if nb < 8:
            a, b = a.astype(np.uint64), b.astype(np.uint64)
    else:
        a, b = _read_words(buf, lo, t), _read_words(buf, hi, t)
    out: np.ndarray = (a >> sh) | (b << back[cell])
    out &= _MASKS[w]
    return out.astype(dt, copy=False)


def extract_blocks(data: BufferLike, block_offsets: np.ndarray, widths: np.ndarray, blocks: np.ndarray,
                   positions: np.ndarray, uncompressed_bits: int) -> np.ndarray:
    """:func:`extract` with the blocks given once: value ``positions[i]`` (0..1023) of block
    ``blocks[i]``, whose packed words start at byte ``block_offsets[blocks[i]]`` of ``data`` with
    width ``widths[blocks[i]]``. Blocks are checked once each (not per value) and the values
    computed in the T-bit dtype; the per-position tables of one width are slices (no per-value
    width lookup) when every block has that width. Cost per value: four gathers, four bit ops."""
    t = int(uncompressed_bits)
    dt = uint_dtype(t)
    buf = as_u8(data)
    base = np.asarray(block_offsets, np.int64)
    w = np.asarray(widths, np.int64)
    blk = np.asarray(blocks, np.int64)
    pos = np.asarray(positions, np.int64)
    nb, lanes = t // 8, BLOCK // t
    if pos.size == 0:
        return np.zeros(0, dt)
    if blk.size != pos.size or int(blk.min()) < 0 or int(blk.max()) >= base.size:
        raise CorruptFileError("FastLanes: a selected value's block does not exist")
    if int(pos.min()) < 0 or int(pos.max()) >= BLOCK:
        raise CorruptFileError(f"FastLanes: bit width outside 0..{t} or position outside a block")
    if int(w.min()) < 0 or int(w.max()) > t or int(base.min()) < 0 or int((base + w * (BLOCK // 8)).max()) > buf.size:
        raise CorruptFileError(f"FastLanes: bit width outside 0..{t} or a packed block past the end of its buffer")
    typed = _typed_words(buf, base, nb)
    if typed is None or typed.size <= lanes:
        return extract(buf, base[blk], w[blk], pos, t)
    word, shift, back = _native_tables(t)
    w0 = int(w[0])
    if bool((w == w0).all()):
        if w0 == 0:
            return np.zeros(pos.size, dt)
        cut = slice(w0 * BLOCK, (w0 + 1) * BLOCK)
        word, shift, back, cell = word[cut], shift[cut], back[cut], pos
        mask = _mask(t, w0)
    else:
        cell = (w * BLOCK).take(blk, mode="clip")
        cell += pos
        mask = _MASKS[w].astype(dt).take(blk, mode="clip")
    # (indices checked above: "clip" only skips numpy's bounds-check pass)
    lo = word.take(cell, mode="clip")
    lo += (base // nb).take(blk, mode="clip")
    a, b = _word_pairs(typed, lo, lanes)
    a >>= shift.take(cell, mode="clip")
    b <<= back.take(cell, mode="clip")
    a |= b
    np.bitwise_and(a, mask, out=a)
    return a


def _word_pairs(typed: np.ndarray, lo: np.ndarray, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """The words ``lo`` (inside their checked blocks) and each lane's next word (``lo + lanes``:
    its bits land above the value's width unless the value straddles the two words), the latter
    clipped at the buffer's end (where only bits the width mask drops are read)."""
    return typed.take(lo, mode="clip"), typed[lanes:].take(lo, mode="clip")


@_state.memo("bitpack_plans")
def _mask(t: int, w: int) -> np.ndarray:
    """``(1 << w) - 1`` as a 0-d array of the T-bit dtype (cheaper in a ufunc than a scalar)."""
    return np.array((1 << w) - 1, uint_dtype(t))


def extract_run(data: BufferLike, block_offset: int, width: int, start: int, stop: int,
                uncompressed_bits: int, out: np.ndarray | None = None) -> np.ndarray:
    """Values ``start .. stop - 1`` (a contiguous run) of one packed block whose words start at
    byte ``block_offset`` of ``data``, packed with ``width``: the per-position tables are sliced
    (no per-value table gathers), two word gathers and four bit ops in the T-bit dtype, written
    to ``out`` when given (``stop - start`` values)."""
    t = int(uncompressed_bits)
    dt = uint_dtype(t)
    buf = as_u8(data)
    nb, lanes = t // 8, BLOCK // t
    n = stop - start
    if not 0 <= start <= stop <= BLOCK or not 0 <= width <= t:
        raise CorruptFileError(f"FastLanes: bit width outside 0..{t} or position outside a block")
    if block_offset < 0 or block_offset + width * (BLOCK // 8) > buf.size:
        raise CorruptFileError("FastLanes: a packed block extends past the end of its buffer")
    if out is None:
        out = np.empty(n, dt)
    if width == 0 or n == 0:
        out[...] = 0
        return out
    typed = buf[: buf.size // nb * nb].view(dt)
    if block_offset % nb or not typed.flags.aligned or typed.size <= lanes:   # the per-value reads
        out[...] = extract(buf, np.full(n, block_offset), np.full(n, width), np.arange(start, stop), t)
        return out
    word, shift, back = _native_tables(t)
    cut = slice(width * BLOCK + start, width * BLOCK + stop)
    a, b = _word_pairs(typed, word[cut] + block_offset // nb, lanes)
    np.right_shift(a, shift[cut], out=a)
    np.left_shift(b, back[cut], out=b)
    np.bitwise_or(a, b, out=a)
    np.bitwise_and(a, _mask(t, width), out=out)
    return out


@_state.memo("bitpack_plans")
def _native_tables(t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_extract_tables` with both shifts in the T-bit dtype."""
    word, shift, back = _extract_tables(t)
    dt = uint_dtype(t)
    return word, shift.astype(dt), back.astype(dt)


def _typed_words(buf: np.ndarray, base: np.ndarray, nb: int) -> np.ndarray | None:
    """``buf`` as little-endian ``nb``-byte words when it and every block start are word-aligned."""
    typed = buf[: buf.size // nb * nb].view(f"<u{nb}")
    if not typed.flags.aligned or (base % nb).any():     # (``flags``: no ctypes object made)
        return None
    return typed


#: (1 << w) - 1 for every width 0..64, as uint64
_MASKS = np.array([(1 << w) - 1 for w in range(65)], np.uint64)


@_state.memo("bitpack_plans")
def _extract_tables(t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per T, at ``W * 1024 + p`` for every width W and logical position p: the packed T-bit word
    (from the block's start) holding the value's first bit, that bit's shift, and T minus it
    (how far the lane's next word is shifted up), both shifts as uint64."""
    lanes = BLOCK // t
    pos = np.arange(BLOCK, dtype=np.int64)
    row = 8 * _ROW_OF[t][(pos // lanes) % (t // 8)] + pos // 128   # logical index -> packed row
    bit = np.arange(t + 1, dtype=np.int64)[:, None] * row[None, :]
    k, s = (bit // t).reshape(-1), (bit % t).reshape(-1)
    return (k * lanes + np.tile(pos % lanes, t + 1)), s.astype(np.uint64), (t - s).astype(np.uint64)

#: :func:`extract` of at most this many values (a point lookup's) computes each with Python
#: ints: a vectorised pass costs ~30 numpy calls whatever the count.
FEW_VALUES = 4


def _extract_few(buf: np.ndarray, offsets: list[int], widths: list[int], positions: list[int],
                 t: int) -> list[int]:
    """:func:`extract` for a few values (same checks, same results)."""
    nb, lanes = t // 8, BLOCK // t
    out = []
    for base, w, p in zip(offsets, widths, positions):
        if w < 0 or w > t or p < 0 or p >= BLOCK:
            raise CorruptFileError(f"FastLanes: bit width outside 0..{t} or position outside a block")
        if w == 0:                            # width 0: the value is 0, nothing is stored
            out.append(0)
            continue
        row = 8 * int(_ROW_OF[t][(p // lanes) % nb]) + p // 128
        k, shift = divmod(row * w, t)
        at = base + (k * lanes + p % lanes) * nb
        straddle = shift + w > t
        if at + (lanes + 1) * nb * straddle + nb * (not straddle) > buf.size:
            raise CorruptFileError("FastLanes: a packed value lies past the end of its buffer")
        v = int.from_bytes(buf[at: at + nb].tobytes(), "little") >> shift
        if straddle:
            v |= int.from_bytes(buf[at + lanes * nb: at + (lanes + 1) * nb].tobytes(), "little") << (t - shift)
        out.append(v & ((1 << w) - 1))
    return out


def _read_words(buf: np.ndarray, at: np.ndarray, t: int) -> np.ndarray:
    """Little-endian T-bit words at byte offsets ``at`` (any alignment), as uint64."""
    nb = t // 8
    typed = _typed_words(buf, at, nb) if at.size else None
    if typed is not None:
        # word-aligned (FastLanes blocks of 8-byte-padded chunks): one typed gather
        words: np.ndarray = typed[at // nb]
        return words.astype(np.uint64)
    out = np.zeros(at.size, np.uint64)
    for b in range(nb):  # one pass per byte of the word (at most 8), not per value
        out |= buf[at + b].astype(np.uint64) << np.uint64(8 * b)
    return out


# packed row group j (rows 8j..8j+7) of T-bit words holds logical values whose index has
# (index // LANES) % (T/8) == ORDER[j] * T // 64: the inverse of that map, per T
_ROW_OF = {t: np.array([[ORDER[j] * t // 64 for j in range(t // 8)].index(b) for b in range(t // 8)], np.int64)
           for t in (8, 16, 32, 64)}


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
