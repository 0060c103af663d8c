"""Pages that several read tasks share: fetched once, kept (bounded) until the last task reads them.

A scan cuts a file into read tasks of consecutive rows; a 2.0 page (a large string page, say) can
span several tasks. The first task to need such a page fetches it; the tasks after it take the
same buffers; once the tasks have read as many rows as the page holds, it is dropped (whatever
order the tasks ran in), and the least recently used go when the pages kept exceed a bound. Threads reading the same
page at once wait for the one fetching it instead of sending their own request.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, Sequence, TypeVar, Union

Buffers = list[Union[memoryview, bytes]]    # the buffers of one page, as InputFile.read_ranges returns them
K = TypeVar("K", bound=Hashable)

# Bytes of shared pages one reader keeps at most (the least recently used go first); a scan keeps
# up to READER_CACHE_SIZE readers open, and a full scan drops every page as soon as it is read.
SHARED_PAGE_BYTES = 32 * 1024 * 1024


class SharedPages(Generic[K]):
    """Page buffers keyed by (column, page), shared by the read tasks of one file (thread-safe)."""

    def __init__(self, limit: int = SHARED_PAGE_BYTES):
        self.limit = limit
        self._pages: OrderedDict[K, tuple[Buffers, int]] = OrderedDict()
        self._rows_read: dict[K, int] = {}
        self._bytes = 0
        self._inflight: dict[K, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, wanted: Sequence[tuple[K, int, int]],
            load: Callable[[list[K]], dict[K, Buffers]]) -> dict[K, Buffers]:
        """Buffers of every (key, rows read, rows in the page) page: kept ones, else ``load(keys)``."""
        out: dict[K, Buffers] = {}
        mine: list[K] = []
        waits: list[tuple[K, threading.Event]] = []
        with self._lock:
            for key, _, _ in wanted:
                hit = self._pages.get(key)
                if hit is not None:
                    self._pages.move_to_end(key)
                    out[key] = hit[0]
                elif key in self._inflight:
                    waits.append((key, self._inflight[key]))
                else:
                    self._inflight[key] = threading.Event()
                    mine.append(key)
        try:
            if mine:
                got = load(mine)
                with self._lock:
                    for key in mine:
                        self._keep(key, got[key])
                out.update(got)
        finally:
            with self._lock:
                for key in mine:
                    self._inflight.pop(key).set()
        late: list[K] = []
        for key, event in waits:
            event.wait()
            with self._lock:
                hit = self._pages.get(key)
            if hit is None:      # the fetch failed or the page was dropped already: fetch it here
                late.append(key)
            else:
                out[key] = hit[0]
        if late:
            out.update(load(late))
        with self._lock:
            for key, rows, total in wanted:
                seen = self._rows_read.get(key, 0) + rows
                if seen >= total:
                    self._drop(key)
                else:
                    self._rows_read[key] = seen
        return out

    @property
    def nbytes(self) -> int:
        return self._bytes

    def _keep(self, key: K, bufs: Buffers) -> None:
        n = sum(len(b) for b in bufs)
        if n > self.limit // 2:
            return
        self._drop(key)
        self._pages[key] = (bufs, n)
        self._bytes += n
        while self._bytes > self.limit and self._pages:
            old, (_, m) = self._pages.popitem(last=False)
            self._rows_read.pop(old, None)
            self._bytes -= m

    def _drop(self, key: K) -> None:
        self._rows_read.pop(key, None)
        old = self._pages.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
