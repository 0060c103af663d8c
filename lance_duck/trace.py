"""An opt-in trace of what the decoders did: which page layouts, compressions and code paths ran.

Off by default, and free when off: decoders call :func:`record`, which returns at once (one
module-level ``None`` check) unless a :func:`decode_trace` block is open. While one is open, the
events of every thread are collected (pages decode on a thread pool) under a lock.

Event names (a value is attached where it says more):

* ``layout:<name>`` -- a page layout (``layout:miniblock``, ``layout:fullzip:var:def``, ...);
* ``mb:<encoding>`` / ``block:<encoding>`` / ``levels:<encoding>`` / ``fz:<encoding>`` -- a
  compression in one of the three decoding roles (mini-block, whole buffer, full-zip per value),
  ``general:<scheme>`` (1 = lz4, 2 = zstd), ``dictionary``;
* ``path:<name>`` -- a code path: ``path:selected:<encoding>`` (only the selected values of a
  mini-block page decoded), ``path:page-group`` (pages ``(first, last)`` decoded together),
  ``path:bitpack:one-width``, ``path:fsst:grouped`` (groups), ``path:fsst:decompress`` (strings),
  ``path:fsst:escapes``, ``path:fsst:pieces`` (pieces), ``path:fsst:tiny`` (tokens: a few
  expanded in numpy), ``path:fsst:pairs`` (codes taken two at a time), ``path:shared-parts`` (parts: a kernel split on a kernel pool thread, shared with the
  pool's idle workers), ``path:rle:bitpacked`` (a 2.3 mini-block RLE side bit-packed per chunk),
  ``path:parallel-leaves`` (leaves: the leaf columns of a read of many rows decoded side by
  side on the kernel pool), ``path:sparse-expand`` (pages: 2.3 pages of a nullable fixed-width leaf whose valid rows'
  values were scattered into one output), ``path:dictionary-batch`` (``"concatenated"`` or ``"pages"``: how a batch of
  mini-block pages with dictionaries of their own took its values), ``path:lean-rows`` (rows: a few rows read through the shared lean page objects),
  ``path:lean-split`` ((lean fields, general fields): one read of a few rows split per field),
  ``path:btree-bisect`` (a BTREE page of integers searched by bisection),
  ``path:selected-offsets`` (rows: an index-selected task read at its offsets, no row mask),
  ``path:count-parts`` (parts: a counting task of a one-column filter read as that many parts --
  pages with dictionaries one by one -- and counted part by part),
  ``path:filter-per-column`` (the dictionary columns: a filter over several columns evaluated
  column by column, a dictionary column once per distinct value),
  ``path:filter-dictionary-prefilter`` (those columns: the filter evaluated only on the rows passing
  the conjuncts it implies on dictionary columns, those evaluated once per distinct value),
  ``path:selected:run`` (a contiguous run of bit-packed values read chunk by chunk with sliced
  position tables), ``path:selected:unpack-gather`` (a dense selection: chunks unpacked whole);
* ``vector:probe`` -- a vector index partition searched ((segment uuid, partition));
  ``vector:read-partition`` -- its rows read from auxiliary.idx ((path, partition, rows); once, then cached);
* ``file:open`` -- a data file opened (its path);
* ``io:advise`` -- advice given to a local file's memory map: (``"willneed"``, path, bytes) for a
  span of read ranges read ahead the first time it is read (``io/fs.py``);
* ``index:unused`` -- an index segment left unused for a query because its files are missing,
  damaged or contradict the manifest (the reason, naming the file): its fragments are scanned;
* ``scan:readahead`` -- a scan's (tasks decoded at once, ramp growth of its task sizes), chosen
  from the columns it reads (``scan/readahead.py``); ``scan:task-rows`` -- the rows of its full-size
  tasks (longer for a scan of fixed-width columns only, ``scan/planning.py``);
* ``changes:commit`` ((version, operation)) -- a commit the change feed diffed;
  ``changes:fragment`` ((version, 0 = before / 1 = after, fragment id)) -- a fragment whose
  metadata it compared; ``changes:read`` ((commit, version read, fragment id, rows)) -- changed
  rows whose values it decoded (``changefeed/feed.py``).

Example::

    from lance_duck.trace import decode_trace
    with decode_trace() as trace:
        lance_duck.dataset("t.lance").to_table()
    assert "layout:miniblock" in trace.names()
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["DecodeTrace", "decode_trace", "record"]


class DecodeTrace:
    """The events recorded while a :func:`decode_trace` block was open, in arrival order."""

    def __init__(self, outer: DecodeTrace | None = None) -> None:
        self._lock = threading.Lock()
        self._outer = outer
        self.events: list[tuple[str, object]] = []

    def add(self, name: str, value: object) -> None:
        """Append one event (to this trace and the traces open around it)."""
        with self._lock:
            self.events.append((name, value))
        if self._outer is not None:
            self._outer.add(name, value)

    def names(self) -> set[str]:
        """Every event name recorded."""
        with self._lock:
            return {name for name, _ in self.events}

    def values(self, name: str) -> list[object]:
        """The values recorded with event ``name``, in arrival order."""
        with self._lock:
            return [value for n, value in self.events if n == name]


_active: DecodeTrace | None = None
_open_lock = threading.Lock()


def record(name: str, value: object = None) -> None:
    """Record event ``name`` (with ``value``) in the open trace; nothing when no trace is open."""
    trace = _active
    if trace is None:
        return
    trace.add(name, value)


@contextmanager
def decode_trace() -> Iterator[DecodeTrace]:
    """Record the decoders' events of every thread until the block ends.

    Blocks nest: the events of an inner block reach the outer one too.
    """
    global _active
    with _open_lock:
        outer = _active
        trace = _active = DecodeTrace(outer)
    try:
        yield trace
    finally:
        with _open_lock:
            _active = outer
