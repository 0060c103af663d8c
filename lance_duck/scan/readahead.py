"""Ordered, bounded read-ahead on a small shared thread pool.

``ordered_map(fn, items)`` yields ``fn(item)`` in input order while later items are computed
in the background. What may be in flight is bounded by a byte budget: each item has a
weight (its row count), results teach the bytes per unit of weight, and an item is submitted
only while the estimated bytes of everything in flight stay within the budget (always at
least one). Closing the iterator cancels the work not yet started.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

from ..encodings._threads import mark_parallel_worker, shared_executor

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_INFLIGHT = 4

SCAN_WORKERS = max(2, min(4, os.cpu_count() or 2))


def shared_pool() -> ThreadPoolExecutor:
    """The read-ahead pool (owned by :mod:`lance_duck.encodings._threads`, reset after fork)."""
    return shared_executor("scan", SCAN_WORKERS, mark_parallel_worker)


@dataclass
class ReadaheadStats:
    """What the read-ahead held at its peak (for tests and the benchmark)."""

    max_inflight: int = 0
    max_result_bytes: int = 0
    peak_bytes: int = 0            # most decoded bytes held at once (in flight + being consumed)
    results: int = 0


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, size_of: Callable[[R], int],
                weight_of: Callable[[T], int] = lambda _: 1, budget_bytes: int = DEFAULT_BUDGET_BYTES,
                max_inflight: int = DEFAULT_MAX_INFLIGHT, stats: ReadaheadStats | None = None) -> Iterator[R]:
    it = iter(items)
    stats = stats if stats is not None else ReadaheadStats()
    if max_inflight <= 0:
        for item in it:
            r = fn(item)
            nbytes = size_of(r)
            _record(stats, nbytes, nbytes)
            yield r
        return
    pool = shared_pool()
    pending: deque[tuple[Future, int]] = deque()
    per_weight = 0.0               # bytes per unit of weight, learnt from results (max seen)
    nxt: list = []                 # one item looked ahead
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < max_inflight:
                if pending and per_weight == 0.0:
                    break          # nothing learnt yet: plan no further than the first item
                if not nxt:
                    try:
                        nxt.append(next(it))
                    except StopIteration:
                        exhausted = True
                        break
                w = weight_of(nxt[0])
                held = sum(pw for _, pw in pending) * per_weight
                if pending and (per_weight == 0.0 or held + w * per_weight > budget_bytes):
                    break
                pending.append((pool.submit(fn, nxt.pop()), w))
                stats.max_inflight = max(stats.max_inflight, len(pending))
            if not pending:
                return
            fut, w = pending.popleft()
            r = fut.result()
            nbytes = size_of(r)
            per_weight = max(per_weight, nbytes / max(w, 1))
            inflight_est = sum(pw for _, pw in pending) * per_weight
            _record(stats, nbytes, int(nbytes + inflight_est))
            yield r
    finally:
        for f, _ in pending:
            f.cancel()


def _record(stats: ReadaheadStats, nbytes: int, held: int) -> None:
    stats.results += 1
    stats.max_result_bytes = max(stats.max_result_bytes, nbytes)
    stats.peak_bytes = max(stats.peak_bytes, held)
