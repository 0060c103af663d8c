"""Ordered, bounded read-ahead on a small shared thread pool.

``ordered_map(fn, items)`` yields ``fn(item)`` in input order while up to N later items are
computed in the background. N adapts to a byte budget: after the first result, N =
budget // (bytes of a result), clamped to [1, max_inflight], so a stream over a table much
larger than the budget holds about ``budget`` bytes of decoded batches at any time.
Closing the iterator cancels the work not yet started.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_INFLIGHT = 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            workers = max(2, min(4, os.cpu_count() or 2))
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lance_duck_scan")
        return _pool


@dataclass
class ReadaheadStats:
    """What the read-ahead held at its peak (for tests and the benchmark)."""

    max_inflight: int = 0
    max_result_bytes: int = 0
    results: int = 0

    @property
    def peak_bytes(self) -> int:
        """Upper bound of decoded bytes held at once (in flight + the one being consumed)."""
        return (self.max_inflight + 1) * self.max_result_bytes


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, size_of: Callable[[R], int],
                budget_bytes: int = DEFAULT_BUDGET_BYTES, max_inflight: int = DEFAULT_MAX_INFLIGHT,
                stats: ReadaheadStats | None = None) -> Iterator[R]:
    it = iter(items)
    stats = stats if stats is not None else ReadaheadStats()
    if max_inflight <= 0:
        for item in it:
            r = fn(item)
            _record(stats, size_of(r))
            yield r
        return
    pool = shared_pool()
    pending: deque[Future] = deque()
    limit = 1                      # one task until the size of a result is known
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < limit:
                try:
                    item = next(it)
                except StopIteration:
                    exhausted = True
                    break
                pending.append(pool.submit(fn, item))
                stats.max_inflight = max(stats.max_inflight, len(pending))
            if not pending:
                return
            r = pending.popleft().result()
            nbytes = size_of(r)
            _record(stats, nbytes)
            limit = max(1, min(max_inflight, budget_bytes // max(stats.max_result_bytes, 1) - 1))
            yield r
    finally:
        for f in pending:
            f.cancel()


def _record(stats: ReadaheadStats, nbytes: int) -> None:
    stats.results += 1
    stats.max_result_bytes = max(stats.max_result_bytes, nbytes)
