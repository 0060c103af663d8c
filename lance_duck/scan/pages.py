"""Page boundaries of the columns a scan reads, so that tasks decode whole pages.

The 2.x readers decode a page fastest when a row selection covers all of it (a partial
page costs a per-row chunk lookup and a gather). Planning therefore ends tasks on page
boundaries and execution widens each column's read to whole pages, slicing the result.
Boundaries are only a speed hint: a file whose metadata does not expose them (legacy) or
whose pages do not count top-level rows simply reads the exact range.
"""
from __future__ import annotations

import numpy as np


def column_bounds(reader, field, num_rows: int) -> np.ndarray | None:
    """Sorted row offsets ``[0, ..., num_rows]`` where the pages of ``field``'s columns start."""
    container = getattr(reader, "container", None)
    ref = getattr(reader, "ref", None)
    if container is None or ref is None or not hasattr(container, "column"):
        return None
    out = None
    for f in field.walk():
        col = ref.column_of(f.id)
        if col is None:
            continue
        try:
            lengths = np.fromiter((int(p.length) for p in container.column(col).pages), np.int64)
        except Exception:  # metadata problems surface (with a clear error) when the data is read
            return None
        b = np.concatenate(([0], np.cumsum(lengths)))
        if int(b[-1]) != num_rows:
            return None     # pages counted in items (e.g. nested children), not rows
        out = b if out is None else np.union1d(out, b)
    return out


def widen(bounds: np.ndarray | None, rows: range, max_rows: int) -> range:
    """``rows`` widened to whole pages, unless that reads more than ``max_rows``."""
    if bounds is None or len(rows) == 0:
        return rows
    a = int(bounds[np.searchsorted(bounds, rows.start, side="right") - 1])
    i = int(np.searchsorted(bounds, rows.stop, side="left"))
    if i >= len(bounds):
        return rows
    b = int(bounds[i])
    return range(a, b) if b - a <= max_rows else rows


def next_boundary(all_bounds: list[np.ndarray], at: int, limit: int) -> int | None:
    """The farthest of the columns' first page boundaries at or after ``at`` (within ``limit``).

    Ending a task there leaves every column either whole pages or its tail page at most.
    """
    best = None
    for b in all_bounds:
        i = int(np.searchsorted(b, at, side="left"))
        if i >= len(b):
            continue
        e = int(b[i])
        if e <= limit and (best is None or e > best):
            best = e
    return best
