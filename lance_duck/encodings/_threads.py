"""A small thread pool for splitting one large kernel call into independent parts.

numpy ufuncs / copies and Arrow compute kernels release the GIL, so parts of a kernel's work
(e.g. runs of whole FSST strings) can run concurrently. Parts should be moderate in size: many
small Arrow allocations come from per-thread memory pages, while a few huge ones go to the OS and
serialise the threads on page faults.

A kernel split on one of the pool's own threads (a page decoded concurrently with other pages,
whose FSST strings are then cut into pieces) is shared with the idle workers, not run inline: the
calling thread takes parts itself, one at a time, and helper tasks queued on the pool take the
remaining ones when a worker frees up (unequal pages -- 65,536 rows and 9,464 -- no longer leave
one core idle). The caller waits only for parts another thread has already started, so nested
splits cannot deadlock. Threads of other pools marked by :func:`mark_parallel_worker` run their
parts inline.

The kernel pool is :mod:`lance_duck._state`'s pool ``"kernel"`` (sized by
``lance_duck.configure(kernel_threads=...)``, dropped in a forked child).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Generic, Iterable, TypeVar, cast

from .. import _state, trace

T = TypeVar("T")
R = TypeVar("R")

_worker = threading.local()  # .kernel on the kernel pool's threads, .active on other pools' (inline)


def workers() -> int:
    """Threads of the kernel pool (``lance_duck.configure(kernel_threads=...)``)."""
    return _state.workers("kernel")


def _get_pool() -> ThreadPoolExecutor:
    return _state.pool("kernel", _mark_worker)


def _mark_worker() -> None:
    _worker.kernel = True


def mark_parallel_worker() -> None:
    """Thread initializer for other pools that already run decodes in parallel (the scan's
    read-ahead): kernels called on their threads run their parts inline, so the cores are not
    oversubscribed by nested parallelism."""
    _worker.active = True


def parallel_workers(shared: bool = False) -> int:
    """How many parts :func:`map_parts` runs at once from this thread: 1 on a pool thread (the
    pools already run decodes side by side, so a split that costs a join copy does not pay),
    except with ``shared`` on the kernel pool's threads, whose parts idle workers may take (for
    kernels split into pieces anyway)."""
    if getattr(_worker, "active", False):
        return 1
    if getattr(_worker, "kernel", False) and not shared:
        return 1
    return workers()


def map_parts(fn: Callable[[T], R], parts: Iterable[T]) -> list[R]:
    """``[fn(p) for p in parts]`` in order, computed on the kernel pool (inline with one worker,
    one part, or on a thread marked by :func:`mark_parallel_worker`; shared with the idle workers
    when called from a kernel pool thread); the first exception raised by a part propagates."""
    parts = list(parts)
    n = workers()
    if n <= 1 or len(parts) <= 1 or getattr(_worker, "active", False):
        return [fn(p) for p in parts]
    if getattr(_worker, "kernel", False):
        trace.record("path:shared-parts", len(parts))
        return _Shared(fn, parts).run(_get_pool(), n - 1)
    return list(_get_pool().map(fn, parts))


class _Shared(Generic[T, R]):
    """Parts taken one at a time by the calling thread and by helper tasks on the pool."""

    def __init__(self, fn: Callable[[T], R], parts: list[T]) -> None:
        self.fn = fn
        self.parts = parts
        self.results: list[R | None] = [None] * len(parts)
        self.errors: list[BaseException | None] = [None] * len(parts)
        self.next = 0                  # the next part nobody has taken
        self.left = len(parts)         # parts not finished
        self.cond = threading.Condition()

    def run(self, pool: ThreadPoolExecutor, helpers: int) -> list[R]:
        for _ in range(min(helpers, len(self.parts) - 1)):
            pool.submit(self.work)     # a helper that starts late finds nothing left and returns
        self.work()
        with self.cond:
            while self.left:           # parts other threads are running (never unstarted ones)
                self.cond.wait()
        for e in self.errors:
            if e is not None:
                raise e
        return cast("list[R]", self.results)   # every part ran without an error

    def work(self) -> None:
        while True:
            with self.cond:
                i = self.next
                if i >= len(self.parts):
                    return
                self.next = i + 1
            try:
                self.results[i] = self.fn(self.parts[i])
            except BaseException as e:  # re-raised by the caller, in part order
                self.errors[i] = e
            with self.cond:
                self.left -= 1
                if not self.left:
                    self.cond.notify_all()
