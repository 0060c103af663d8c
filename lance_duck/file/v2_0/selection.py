"""Splitting a row selection over consecutive pages (2.0) or row groups (legacy).

A *unit* is a page or a row group covering rows ``[starts[i], starts[i + 1])``. The split
tells, for every unit that holds selected rows, which of its rows are wanted (unit-local).
"""
from __future__ import annotations

from typing import Iterator, Union

import numpy as np
import pyarrow as pa


LocalSelection = Union[None, range, np.ndarray]


def sel_len(sel: LocalSelection, num_rows: int) -> int:
    return num_rows if sel is None else len(sel)


def split(starts: np.ndarray, sel: LocalSelection) -> Iterator[tuple[int, LocalSelection]]:
    """(unit index, local selection) for every unit holding selected rows, in order.

    ``starts`` has one more entry than there are units (the last one is the row count).
    A local selection of None means the whole unit.
    """
    n_units = len(starts) - 1
    if sel is None:
        for i in range(n_units):
            if starts[i + 1] > starts[i]:
                yield i, None
        return
    if isinstance(sel, range):
        a, b = sel.start, sel.stop
        if a >= b:
            return
        first = int(np.searchsorted(starts, a, side="right")) - 1
        last = int(np.searchsorted(starts, b, side="left"))
        for i in range(max(first, 0), min(last, n_units)):
            s, e = int(starts[i]), int(starts[i + 1])
            lo, hi = max(a, s), min(b, e)
            if lo < hi:
                yield i, (None if (lo, hi) == (s, e) else range(lo - s, hi - s))
        return
    if len(sel) == 0:
        return
    unit = np.searchsorted(starts, sel, side="right") - 1
    bounds = np.flatnonzero(np.diff(unit)) + 1
    cuts = np.concatenate(([0], bounds, [len(sel)]))
    for j in range(len(cuts) - 1):
        u = int(unit[cuts[j]])
        yield u, sel[cuts[j]:cuts[j + 1]] - starts[u]


def take_local(arr: pa.Array, local: LocalSelection) -> pa.Array:
    """The rows ``local`` of a decoded unit."""
    if local is None:
        return arr
    if isinstance(local, range):
        return arr.slice(local.start, len(local))
    return arr.take(pa.array(local, type=pa.int64()))


def local_bounds(local: LocalSelection, n: int) -> tuple[int, int]:
    """The smallest row span [lo, hi) of a unit covering a local selection."""
    if local is None:
        return 0, n
    if isinstance(local, range):
        return local.start, local.stop
    return int(local[0]), int(local[-1]) + 1


def shift(local: LocalSelection, by: int) -> LocalSelection:
    """A local selection re-based by ``-by`` (rows relative to a span starting at ``by``)."""
    if local is None or by == 0:
        return local
    if isinstance(local, range):
        return range(local.start - by, local.stop - by)
    return local - by


def ranges_from_bounds(starts: np.ndarray, ends: np.ndarray) -> tuple[range | np.ndarray, np.ndarray]:
    """The selection covering the union of disjoint, increasing [starts[i], ends[i]) spans."""
    lengths = ends - starts
    if len(starts) and (starts[1:] == ends[:-1]).all():     # back to back (empty spans included)
        if ends[-1] > starts[0]:
            return range(int(starts[0]), int(ends[-1])), lengths
        return np.zeros(0, dtype=np.int64), lengths
    total = int(lengths.sum())
    if len(starts) == 0 or total == 0:
        return np.zeros(0, dtype=np.int64), lengths
    nz = lengths > 0
    s, ln = starts[nz], lengths[nz]
    if len(s) == 1 or np.all(s[1:] == s[:-1] + ln[:-1]):
        return range(int(s[0]), int(s[0] + total)), lengths
    # concatenated aranges, vectorised: each position = span start + index within the span
    before = np.cumsum(ln) - ln
    idx = np.repeat(s - before, ln) + np.arange(total, dtype=np.int64)
    return idx, lengths
