"""Pages fetched ahead of their reads: planned per file, coalesced across columns, issued concurrently.

A scan plans, per remote data file, the byte ranges of every page of the columns it will read
(:meth:`Prefetcher.plan`). Ranges closer than the coalesce gap are merged, whatever column they
belong to, and the merged spans are cut into requests of at most ``max_request_bytes``. Requests
are issued in the order the scan will need their bytes -- by how far into its page each one starts,
so that the first rows of every column come first, whatever the columns' places in the file -- while
the bytes fetched and not yet read stay under a window, which starts at ``FIRST_WINDOW`` and grows by
what the reads consume up to ``prefetch_bytes`` (a scan that stops early, like DuckDB's LIMIT,
fetches little). A read inside
planned spans (:meth:`Prefetcher.take`) waits for them -- issuing them at once if the window had
not reached them -- instead of sending its own request. A span is dropped once every planned byte
in it has been read, or when the scan ends (:meth:`Prefetcher.forget`). A failed request fails the
read that needed it (after the retries of ``retry.py``), so a scan never returns partial data.
"""
from __future__ import annotations

import bisect
import threading
from collections import deque
from dataclasses import dataclass
from concurrent.futures import Future
from typing import Any, Iterable, Protocol, Sequence

# The first bytes a scan fetches ahead (the window then grows as reads consume them).
FIRST_WINDOW = 8 * 1024 * 1024
# Spans this small stay after they were read, until the scan ends: page metadata (chunk sizes,
# repetition indexes, dictionaries) is read again by every task that touches the page.
KEEP_SPAN = 256 * 1024


class _Span:
    """One request: bytes [start, end) of ``path``; ``need`` planned bytes, ``served`` those read."""

    __slots__ = ("path", "start", "end", "need", "served", "read", "future", "done")

    def __init__(self, path: str, start: int, end: int, need: int):
        self.path, self.start, self.end, self.need = path, start, end, need
        self.served: list[tuple[int, int]] = []
        self.read = 0                # planned bytes read so far (counted off the window)
        self.future: Any = None      # concurrent.futures.Future once issued
        self.done = False

    def serve(self, s: int, e: int) -> int:
        """Record that [s, e) was read; the planned bytes newly read."""
        s, e = max(s, self.start), min(e, self.end)
        if s >= e or self.done:
            return 0
        merged: list[tuple[int, int]] = []
        for a, b in sorted(self.served + [(s, e)]):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.served = merged
        now = min(self.need, sum(b - a for a, b in merged))
        new, self.read = now - self.read, now
        return new


class Fetcher(Protocol):
    """What a :class:`Prefetcher` needs of its :class:`~lance_duck.io.fs.FileIO`."""

    is_local: bool
    coalesce_gap: int
    max_request_bytes: int

    def submit(self, path: str, start: int | None, end: int | None, exact: bool = False) -> Future[bytes]: ...


class Prefetcher:
    """The planned spans of one :class:`~lance_duck.io.fs.FileIO` (thread-safe)."""

    def __init__(self, io: Fetcher, max_bytes: int):
        self.io = io
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._spans: dict[str, list[_Span]] = {}     # path -> spans sorted by start
        self._starts: dict[str, list[int]] = {}
        self._queue: deque[_Span] = deque()          # planned, not issued
        self._outstanding = 0                        # bytes issued and not dropped
        self._window = min(FIRST_WINDOW, max_bytes)

    def plan(self, path: str, size: int, ranges: Iterable[tuple[int, int]]) -> None:
        """Fetch the (offset, length) ``ranges`` of ``path`` (``size`` bytes) ahead of their reads."""
        if self.max_bytes <= 0 or self.io.is_local:
            return
        wanted = [(o, n) for o, n in ranges if n > 0 and o + n <= size]
        if not wanted:
            return
        parts = sorted(split(wanted, self.io.coalesce_gap, self.io.max_request_bytes), key=lambda p: p[3])
        spans = [_Span(path, s, e, need) for s, e, need, _ in parts]
        with self._lock:
            have = self._spans.get(path, [])
            if have:    # more columns of a planned file: spans over bytes planned already are left out
                spans = [sp for sp in spans if _covering_any(have, sp.start, sp.end) is False]
            merged = sorted(have + spans, key=lambda sp: sp.start)
            self._spans[path] = merged
            self._starts[path] = [sp.start for sp in merged]
            self._queue.extend(spans)      # in the order their bytes will be needed
        self._pump()

    def take(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes | memoryview | None]:
        """Bytes of each (offset, length) from planned spans (waiting for them), None where not planned.

        The spans are all issued before the first is waited for."""
        with self._lock:
            spans = self._spans.get(path)
            if not spans:
                return [None] * len(ranges)
            starts = self._starts[path]
            covers = [_covering(spans, starts, off, off + ln) for off, ln in ranges]
            for cover in covers:
                for sp in cover or ():
                    if sp.future is None:
                        self._issue(sp)
        out: list[bytes | memoryview | None] = []
        try:
            for (off, ln), cover in zip(ranges, covers):
                out.append(None if cover is None else _piece(cover, off, ln))
        except BaseException:
            with self._lock:
                for sp in (sp for cover in covers for sp in cover or ()):
                    self._drop(sp)
            raise
        with self._lock:
            for (off, ln), cover in zip(ranges, covers):
                for sp in cover or ():
                    new = sp.serve(off, off + ln)
                    if new:
                        self._outstanding -= new
                        self._window = min(self.max_bytes, self._window + new)
                        if sp.read >= sp.need:
                            self._served(sp)
        self._pump()
        return out

    def forget(self, paths: Iterable[str]) -> None:
        """Drop the spans of ``paths`` (a scan ended); requests not issued yet never will be."""
        with self._lock:
            for path in paths:
                for sp in self._spans.get(path, ()):
                    self._drop(sp)

    def planned_bytes(self) -> int:
        """Bytes of spans planned and not dropped (tests, diagnostics)."""
        with self._lock:
            return sum(sp.end - sp.start for spans in self._spans.values() for sp in spans)

    # -- internals (called with the lock held) ----------------------------------------------
    def _issue(self, sp: _Span) -> None:
        try:
            self._queue.remove(sp)
        except ValueError:
            pass
        sp.future = self.io.submit(sp.path, sp.start, sp.end, exact=True)
        self._outstanding += sp.end - sp.start

    def _served(self, sp: _Span) -> None:
        """Every planned byte of ``sp`` was read: it goes (small ones stay)."""
        if sp.end - sp.start > KEEP_SPAN:
            self._drop(sp)
        else:
            sp.done = True
            self._outstanding -= sp.end - sp.start - sp.read

    def _drop(self, sp: _Span) -> None:
        spans = self._spans.get(sp.path)
        if spans is None or sp not in spans:
            return
        i = spans.index(sp)
        del spans[i]
        del self._starts[sp.path][i]
        if not spans:
            del self._spans[sp.path], self._starts[sp.path]
        if sp.future is None:
            self._queue.remove(sp)
        elif not sp.done:   # not cancelled: another scan of the same files may be waiting for it
            self._outstanding -= sp.end - sp.start - sp.read

    def _pump(self) -> None:
        with self._lock:
            while self._queue and (self._outstanding < self._window or not self._outstanding):
                self._issue(self._queue[0])


def _covering_any(spans: list[_Span], s: int, e: int) -> bool:
    """Whether any of ``spans`` overlaps [s, e)."""
    return any(sp.start < e and s < sp.end for sp in spans)


def _piece(cover: list[_Span], off: int, ln: int) -> bytes | memoryview:
    blobs = [sp.future.result() for sp in cover]
    if len(cover) == 1:
        return memoryview(blobs[0])[off - cover[0].start: off - cover[0].start + ln]
    return b"".join(memoryview(b)[max(off, sp.start) - sp.start: min(off + ln, sp.end) - sp.start]
                    for sp, b in zip(cover, blobs))


def _covering(spans: list[_Span], starts: list[int], s: int, e: int) -> list[_Span] | None:
    """The contiguous spans that together hold [s, e), or None."""
    i = bisect.bisect_right(starts, s) - 1
    if i < 0:
        return None
    out = []
    pos = s
    while i < len(spans) and spans[i].start <= pos:
        if spans[i].end > pos:
            out.append(spans[i])
            pos = spans[i].end
        if pos >= e:
            return out
        i += 1
    return None


@dataclass
class _Merged:
    """A span of neighbouring ranges being merged by :func:`split`."""

    start: int
    end: int
    planned: list[tuple[int, int, int, int]]   # (s, e, range start, range end), sorted, disjoint


def split(ranges: Sequence[tuple[int, int]], gap: int, max_bytes: int) -> list[tuple[int, int, int, float]]:
    """(start, end, planned bytes, need rank) of the requests for (offset, length) ``ranges``:
    neighbours closer than ``gap`` merged, and a merged span longer than ``max_bytes`` cut into
    equal parts. The rank of a request is how far into its range (0 = its first byte, towards 1 =
    its last) the earliest planned byte it holds lies: ranges are pages, read first row first."""
    merged: list[_Merged] = []
    for rs, re_ in sorted((o, o + n) for o, n in ranges):
        s, e = rs, re_
        if merged and s <= merged[-1].end + gap:
            last = merged[-1]
            if e > last.end:
                s = max(s, last.end)
                last.planned.append((s, e, rs, re_))
                last.end = e
        else:
            merged.append(_Merged(s, e, [(s, e, rs, re_)]))
    out: list[tuple[int, int, int, float]] = []
    for m in merged:
        s, e, planned = m.start, m.end, m.planned
        parts = -(-(e - s) // max_bytes)
        step = -(-(e - s) // parts)
        j = 0                      # planned pieces are sorted and disjoint: one pass over them
        for a in range(s, e, step):
            b = min(e, a + step)
            while j < len(planned) and planned[j][1] <= a:
                j += 1
            need, rank, k = 0, 1.0, j
            while k < len(planned) and planned[k][0] < b:
                ps, pe, rs, re_ = planned[k]
                need += min(b, pe) - max(a, ps)
                rank = min(rank, (max(a, ps) - rs) / (re_ - rs))
                k += 1
            out.append((a, b, need, rank))
    return out
