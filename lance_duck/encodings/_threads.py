"""A small thread pool for splitting one large kernel call into independent parts.

numpy ufuncs / copies and Arrow compute kernels release the GIL, so parts of a kernel's work
(e.g. runs of whole FSST strings) can run concurrently. Parts should be moderate in size: many
small Arrow allocations come from per-thread memory pages, while a few huge ones go to the OS and
serialise the threads on page faults. Pool tasks never submit more tasks, so calls from other
pools' worker threads cannot deadlock on it.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS = max(1, min(2, os.cpu_count() or 1))

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_worker = threading.local()  # .active is set on the pool's own threads


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="lance_duck_kernel",
                                       initializer=_mark_worker)
        return _pool


def _mark_worker() -> None:
    _worker.active = True


def mark_parallel_worker() -> None:
    """Thread initializer for other pools that already run decodes in parallel (the scan's
    read-ahead): kernels called on their threads run their parts inline, so the cores are not
    oversubscribed by nested parallelism."""
    _worker.active = True


def parallel_workers() -> int:
    """How many parts :func:`map_parts` would run at once from this thread (1 when inline)."""
    return 1 if getattr(_worker, "active", False) else WORKERS


def map_parts(fn: Callable[[T], R], parts: Iterable[T]) -> list[R]:
    """``[fn(p) for p in parts]`` in order, computed on the kernel pool (inline with one worker,
    one part, or when called from a pool thread -- nested parts never wait on the pool); the
    first exception raised by a part propagates."""
    parts = list(parts)
    if WORKERS <= 1 or len(parts) <= 1 or getattr(_worker, "active", False):
        return [fn(p) for p in parts]
    return list(_get_pool().map(fn, parts))
