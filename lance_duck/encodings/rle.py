"""Run-length expansion.

Used by: 2.1/2.2 ``Rle`` (mini-block: value buffer = Flat values, one per run, plus a u8 run-length
buffer; block form in 2.2 for rep/def levels and constant-page levels:
``[u64 LE byte length of values][values][u8 run lengths]``). Runs longer than 255 are stored as
several runs. Decoding is one ``np.repeat`` (or a searchsorted range cut for partial decodes);
:func:`expand_chunks` expands the runs of many mini-block chunks or level buffers in one call.
"""
from __future__ import annotations

import numpy as np

from ..errors import CorruptFileError
from ._buf import BufferLike, as_u8, check_count, need, uint_dtype, words

__all__ = ["expand", "expand_range", "expand_chunks", "decode_block", "split_block"]


def expand(values: np.ndarray, run_lengths: np.ndarray, num_values: int | None = None) -> np.ndarray:
    """``repeat(values, run_lengths)`` cut to ``num_values`` (which must not exceed the runs' total)."""
    values = np.asarray(values)
    lengths = np.asarray(run_lengths)
    if values.shape[0] != lengths.shape[0]:
        raise CorruptFileError(f"RLE: {values.shape[0]} values but {lengths.shape[0]} run lengths")
    total = int(lengths.sum(dtype=np.int64))
    if num_values is None:
        num_values = total
    n = check_count(num_values, "RLE value count")
    if n > total:
        raise CorruptFileError(f"RLE: runs cover {total} values, {n} expected")
    if n < total:
        return expand_range(values, lengths, 0, n)
    return np.repeat(values, lengths)


def expand_range(values: np.ndarray, run_lengths: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Values ``[start, stop)`` of the expansion, touching only the runs that overlap the range."""
    values = np.asarray(values)
    lengths = np.asarray(run_lengths).astype(np.int64, copy=False)
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if ends.size else 0
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= total:
        raise CorruptFileError(f"RLE: range [{start}, {stop}) outside the {total} encoded values")
    if start == stop:
        none: np.ndarray = values[:0].copy()
        return none
    first = int(np.searchsorted(ends, start, side="right"))
    last = int(np.searchsorted(ends, stop - 1, side="right"))
    lens = lengths[first: last + 1].copy()
    begin_first = int(ends[first] - lengths[first])
    lens[0] -= start - begin_first
    lens[-1] -= int(ends[last]) - stop
    return np.repeat(values[first: last + 1], lens)


def expand_chunks(values: np.ndarray, run_lengths: np.ndarray, runs: np.ndarray, counts: np.ndarray,
                  what: str = "RLE") -> np.ndarray:
    """Many RLE chunks at once: chunk ``k`` owns the next ``runs[k]`` runs and keeps its first
    ``counts[k]`` values (mini-block chunks, level buffers). One ``np.repeat`` plus a mask."""
    lengths = np.asarray(run_lengths).astype(np.int64, copy=False)
    runs = np.asarray(runs, np.int64)
    counts = np.asarray(counts, np.int64)
    if values.shape[0] != lengths.shape[0] or int(runs.sum()) != lengths.shape[0]:
        raise CorruptFileError(f"{what}: {values.shape[0]} values, {lengths.shape[0]} run lengths, "
                               f"{int(runs.sum())} runs")
    cum = np.concatenate(([0], np.cumsum(lengths)))
    ends = np.cumsum(runs)
    sums = cum[ends] - cum[ends - runs]
    if (sums < counts).any():
        raise CorruptFileError(f"{what}: RLE runs cover fewer values than the chunk holds")
    out = np.repeat(values, lengths)
    if (sums == counts).all():
        return out
    starts = np.cumsum(sums) - sums                       # where each chunk's expansion begins in out
    chunk = np.repeat(np.arange(sums.size), sums)
    pos = np.arange(out.size, dtype=np.int64) - starts[chunk]
    kept: np.ndarray = out[pos < counts[chunk]]
    return kept


def split_block(data: BufferLike, value_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Split the 2.2 block form into (values, u8 run lengths)."""
    buf = as_u8(data)
    need(buf, 8, "RLE block header")
    vbytes = int(buf[:8].view("<u8")[0]) if buf.ctypes.data % 8 == 0 else int.from_bytes(buf[:8].tobytes(), "little")
    width = uint_dtype(value_bits).itemsize
    need(buf, 8 + vbytes, "RLE block values")
    if vbytes % width:
        raise CorruptFileError(f"RLE block: {vbytes} value bytes is not a multiple of {width}")
    nruns = vbytes // width
    lens = buf[8 + vbytes:]
    if lens.size < nruns:
        raise CorruptFileError(f"RLE block: {nruns} runs but {lens.size} run lengths")
    return words(buf, value_bits, nruns, offset=8, what="RLE block values"), lens[:nruns]


def decode_block(data: BufferLike, value_bits: int, num_values: int) -> np.ndarray:
    """2.2 block-form RLE (levels): ``[u64 value bytes][values][u8 run lengths]``."""
    vals, lens = split_block(data, value_bits)
    return expand(vals, lens, num_values)
