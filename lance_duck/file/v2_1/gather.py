"""Vectorised gathers of many byte ranges out of one buffer."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...encodings._buf import empty
from ...errors import CorruptFileError


#: increasing ranges at least this many are copied by an Arrow take (:func:`_take_increasing`, ~14 us
#: whatever their number); fewer by slices (~0.3 us each)
TAKE_RANGES = 48


def check_ranges(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray, what: str) -> None:
    if offs.size and (offs.min() < 0 or lens.min() < 0 or int((offs + lens).max()) > buf.size):
        raise CorruptFileError(f"{what}: a buffer lies outside its chunk data")


def gather_bytes(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray, what: str = "chunk") -> np.ndarray:
    """Concatenate ``buf[offs[i] : offs[i] + lens[i]]`` for every i (one copy)."""
    offs = np.asarray(offs, np.int64)
    lens = np.asarray(lens, np.int64)
    check_ranges(buf, offs, lens, what)
    k = offs.size
    if k == 0:
        return np.zeros(0, np.uint8)
    if k == 1:
        return buf[offs[0]: offs[0] + lens[0]]
    # uniform stride and length (typical full scan of fixed-width chunks): strided 2-D copy
    if k > 2 and (lens[:-1] == lens[0]).all():
        d = np.diff(offs[:-1])
        if d.size and (d == d[0]).all() and d[0] == lens[0] and offs[-1] == offs[-2] + d[0]:
            return buf[offs[0]: offs[0] + int(lens.sum())]   # one contiguous span: a view, no copy
        if d.size and (d == d[0]).all() and d[0] >= lens[0]:
            body = np.lib.stride_tricks.as_strided(
                buf[offs[0]:], shape=(k - 1, int(lens[0])), strides=(int(d[0]), 1), writeable=False)
            out = empty(int(lens.sum()), np.uint8)
            out[: (k - 1) * int(lens[0])].reshape(k - 1, int(lens[0]))[...] = body
            out[(k - 1) * int(lens[0]):] = buf[offs[-1]: offs[-1] + lens[-1]]
            return out
    total = int(lens.sum())
    if k >= TAKE_RANGES and (offs[1:] >= offs[:-1] + lens[:-1]).all():
        return _take_increasing(buf, offs, lens, total)
    if total <= 8 * k:  # tiny pieces: index arithmetic beats a list of slices
        idx = np.repeat(offs - (np.cumsum(lens) - lens), lens) + np.arange(total)
        return buf[idx]
    return np.concatenate([buf[o: o + n] for o, n in zip(offs.tolist(), lens.tolist())], out=empty(total, np.uint8))


def _take_increasing(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray, total: int) -> np.ndarray:
    """Increasing, non-overlapping ranges: the span they cover becomes a ``large_binary`` array
    whose even entries are the ranges and odd entries the gaps between them, and an Arrow take
    of the even entries copies the ranges in C++ (one memcpy per range; 5-10x faster than a
    mask over the span for full-zip values between their headers).

    Arrow sizes the take's output as (mean entry length) x (indices): with the gaps counted
    as entries that is half the ranges' bytes, and the output then grows by reallocations (a
    second copy, fresh pages faulted in). So the span ends with one empty entry, and k + 1
    indices of it follow the k ranges' own: the estimate, (span / 2k) x (2k + 1), covers the
    span, and empty entries add no bytes."""
    k = offs.size
    lo, hi = int(offs[0]), int(offs[-1] + lens[-1])
    bounds = np.empty(2 * k + 1, np.int64)
    np.subtract(offs, lo, out=bounds[0:2 * k:2])
    np.add(bounds[0:2 * k:2], lens, out=bounds[1:2 * k:2])
    bounds[2 * k] = bounds[2 * k - 1]
    span = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 2 * k, [None, pa.py_buffer(bounds),
                                                                       pa.py_buffer(np.ascontiguousarray(buf[lo:hi]))])
    idx = np.empty(2 * k + 1, np.int64)
    idx[:k] = np.arange(0, 2 * k, 2, dtype=np.int64)
    idx[k:] = 2 * k - 1
    res = pc.take(span, pa.array(idx), boundscheck=False)
    return np.frombuffer(res.buffers()[2], np.uint8, total) if total else np.zeros(0, np.uint8)


def segment_index(lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments of ``lens`` items: (segment of each item, position inside its segment)."""
    lens = np.asarray(lens, np.int64)
    seg = np.repeat(np.arange(lens.size), lens)
    pos = np.arange(int(lens.sum()), dtype=np.int64) - (np.cumsum(lens) - lens)[seg]
    return seg, pos


def read_uint(buf: np.ndarray, offs: np.ndarray, nbytes: int, what: str = "header") -> np.ndarray:
    """Little-endian unsigned integers of ``nbytes`` bytes at arbitrary byte offsets (int64)."""
    offs = np.asarray(offs, np.int64)
    if offs.size and (offs.min() < 0 or int(offs.max()) + nbytes > buf.size):
        raise CorruptFileError(f"{what}: field lies outside its buffer")
    if nbytes in (2, 4, 8):
        if not (offs & (nbytes - 1)).any():   # (numpy reads unaligned addresses itself)
            words = buf[: buf.size // nbytes * nbytes].view(_WORD[nbytes])[offs // nbytes]
        elif offs.size:                       # a word starting at every byte: one gather of words
            at_every_byte = np.ndarray((buf.size - nbytes + 1,), _WORD[nbytes], buffer=_contiguous(buf), strides=(1,))
            words = at_every_byte[offs]
        else:
            words = np.zeros(0, _WORD[nbytes])
        if nbytes == 8 and offs.size and words.max() > np.uint64(2**62):
            raise CorruptFileError(f"{what}: implausible value")
        as_int: np.ndarray = words.astype(np.int64)
        return as_int
    out = np.zeros(offs.size, np.uint64)
    for b in range(nbytes):
        out |= buf[offs + b].astype(np.uint64) << np.uint64(8 * b)
    return out.astype(np.int64)


def read_header_words(buf: np.ndarray, starts: np.ndarray, nwords: int, what: str = "header") -> np.ndarray:
    """The first ``nwords`` little-endian u16 words at every offset ``starts[i]``, as an int64
    (nwords, len(starts)) array (row j: word j of every header): the fixed-size headers of many
    chunks, bounds-checked once, read with one gather."""
    starts = np.asarray(starts, np.int64)
    if starts.size and (starts.min() < 0 or int(starts.max()) + 2 * nwords > buf.size):
        raise CorruptFileError(f"{what}: header lies outside its buffer")
    at = np.arange(nwords, dtype=np.int64)[:, None]
    if (starts & 1).any():
        lo = starts[None, :] + 2 * at
        return buf[lo].astype(np.int64) | (buf[lo + 1].astype(np.int64) << 8)
    words = buf[: buf.size // 2 * 2].view(_WORD[2])   # (numpy reads unaligned addresses itself)
    headers: np.ndarray = words[(starts >> 1)[None, :] + at]
    return headers.astype(np.int64)


_WORD: dict[int, np.dtype] = {2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def _contiguous(buf: np.ndarray) -> np.ndarray:
    return buf if buf.flags.c_contiguous else np.ascontiguousarray(buf)
