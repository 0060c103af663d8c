"""A small thread pool for splitting one large kernel call into independent parts.

numpy ufuncs / copies and Arrow compute kernels release the GIL, so parts of a kernel's work
(e.g. runs of whole FSST strings) can run concurrently. Parts should be moderate in size: many
small Arrow allocations come from per-thread memory pages, while a few huge ones go to the OS and
serialise the threads on page faults. Pool tasks never submit more tasks, so calls from other
pools' worker threads cannot deadlock on it.

This module owns every long-lived thread pool of the library (the kernel pool here and the
scan's read-ahead pool, through :func:`shared_executor`): pools are created lazily and dropped
in a child process after ``fork()``, which copies a pool object but none of its threads (a
forked child would otherwise queue work that no thread ever runs).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS = max(1, min(2, os.cpu_count() or 1))

_pools: dict[str, ThreadPoolExecutor] = {}
_lock = threading.Lock()
_worker = threading.local()  # .active is set on the pool's own threads


def shared_executor(name: str, workers: int, initializer: Callable[[], None] | None = None) -> ThreadPoolExecutor:
    """The process-wide pool called ``name`` (threads named ``lance_duck_<name>``), created on
    first use; a forked child starts with no pools and creates its own."""
    with _lock:
        pool = _pools.get(name)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"lance_duck_{name}",
                                      initializer=initializer)
            _pools[name] = pool
        return pool


def _forget_pools_in_child() -> None:
    """After ``fork()``: the child has none of the parent's pool threads (and the lock may have
    been held by one of them), so start from nothing."""
    global _lock
    _lock = threading.Lock()
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_in_child)


def _get_pool() -> ThreadPoolExecutor:
    return shared_executor("kernel", WORKERS, _mark_worker)


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
