"""Ordered, bounded read-ahead on a small shared thread pool.

``ordered_map(fn, items)`` yields ``fn(item)`` in input order while later items are computed
in the background. What may be in flight is bounded by a byte budget: each item has a
weight (its row count), results teach the bytes per unit of weight, and an item is submitted
only while the estimated bytes of everything in flight and of the result the consumer holds
stay within the budget (always at least one). Whatever the limit, one item is computed ahead
while the consumer works on a result (with ``max_inflight=1``: one decoder, never idle while
the consumer is busy, never two at once) -- except the first result, handed over with nothing
in flight: an engine that stops after it (DuckDB's ``LIMIT``: it gives an Arrow dataset no limit)
then decodes nothing more (measured: ``select * from T limit 10`` over the 8-column bench table,
CPU 5.5-7.9 -> 3.9-4.4 ms), and a scan that goes on waits once for its second task, which is small
(tasks start at 512 rows, then 8K). That first item, awaited alone while nothing has been learnt, is computed
on the consumer's thread: the hop to a pool thread and back cost more than the item itself for a
small first task (the same LIMIT 10 through DuckDB: 3.9-5.6 -> 2.7-3.0 ms wall).
Closing the iterator cancels the work not yet started.

A result may be handed over in parts (``split``: a task's batch as the stream's slices). Between
parts, decoders that finished their item while the consumer was busy take the next ones, up to
``max_inflight`` *running* (finished results waiting for the consumer do not count; the byte budget
still bounds everything held): without it the scan's last task of a fragment-sized plan started
only once the consumer had taken every slice of the one before (seen on the 4M-row bench table's
``sum(i)`` through DuckDB: the last 1M-row task started 1.7 ms after a decoder had become idle).

How many tasks a scan keeps in flight depends on what it reads: a scan
whose every column is fixed-width (numbers, booleans, dates, times, timestamps, durations,
decimals) decodes TWO tasks at a time off the consumer's thread, in longer tasks
(``planning.FIXED_WIDTH_TASK_ROWS``); any other scan (strings, binaries, lists, structs,
fixed-size lists) up to four. Fixed-width decoding is short numpy calls over the decoder's scratch
with Python glue between them under the GIL (about 40 % of a decoder's CPU samples are outside
GIL-free kernel loops), so two decoders overlap only partly on a 2-vCPU machine: with 256K-row
tasks a second decoder cost 6-12 % more CPU for 23-36 % less wall time at load ~1.3, and gained
nothing at load 3-5; with 512K-row tasks (fewer calls per row) CPU is 3-8 % below one decoder on
256K-row tasks and wall time 5-12 % lower at load ~4.5. String decodes spend their time in long
GIL-free kernels (FSST, copies) that two or more decoders overlap (a wide DuckDB aggregate: 405 ms
with four in flight, 622 ms with one).
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Generator, Iterable, TypeVar, cast

import pyarrow as pa

from .. import _state
from ..encodings._threads import mark_parallel_worker

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_INFLIGHT = 4
#: tasks in flight for a scan whose every column is fixed-width (see the module docstring)
FIXED_WIDTH_MAX_INFLIGHT = 2


def shared_pool() -> ThreadPoolExecutor:
    """The read-ahead pool (:mod:`lance_duck._state`'s ``"scan"``: ``lance_duck.configure(scan_threads=...)``)."""
    return _state.pool("scan", mark_parallel_worker)


@dataclass
class ReadaheadStats:
    """What the read-ahead held at its peak (for tests and the benchmark)."""

    max_inflight: int = 0
    max_result_bytes: int = 0
    peak_bytes: int = 0            # most decoded bytes held at once (in flight + being consumed)
    results: int = 0


def fixed_width(t: pa.DataType | None) -> bool:
    """``t`` is a plain fixed-width type (None: a virtual ``_rowid`` / ``_rowaddr`` column, uint64)."""
    if t is None:
        return True
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                or pa.types.is_temporal(t) or pa.types.is_decimal(t))


def max_inflight_for(types: Iterable[pa.DataType | None]) -> tuple[int, bool]:
    """(tasks in flight, whether every column is fixed-width) for a scan reading columns of
    ``types``: :data:`FIXED_WIDTH_MAX_INFLIGHT` when every one is :func:`fixed_width` (none at
    all included), else :data:`DEFAULT_MAX_INFLIGHT`."""
    narrow = all(fixed_width(t) for t in types)
    return (FIXED_WIDTH_MAX_INFLIGHT if narrow else DEFAULT_MAX_INFLIGHT), narrow


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, size_of: Callable[[R], int],
                weight_of: Callable[[T], int] = lambda _: 1, budget_bytes: int = DEFAULT_BUDGET_BYTES,
                max_inflight: int = DEFAULT_MAX_INFLIGHT, stats: ReadaheadStats | None = None,
                split: Callable[[R], Iterable[S]] | None = None,
                known_per_weight: float | None = None) -> Generator[S, None, None]:
    """See the module. ``split``: the consumer is handed the parts of each result (default: the
    result itself), and between parts items are submitted again while fewer than ``max_inflight``
    are still running (finished ones waiting for the consumer no longer hold a decoder back).
    ``known_per_weight``: a result's bytes per unit of weight when known up front (fixed-width rows):
    items are planned past the first one before any result has come back."""
    it = iter(items)
    parts: Callable[[R], Iterable[S]] = split if split is not None else (lambda r: (cast("S", r),))
    stats = stats if stats is not None else ReadaheadStats()
    if max_inflight <= 0:
        for item in it:
            r = fn(item)
            nbytes = size_of(r)
            _record(stats, nbytes, nbytes)
            yield from parts(r)
        return
    pool = shared_pool()
    pending: deque[tuple[Future[R], int]] = deque()
    per_weight = known_per_weight or 0.0   # bytes per unit of weight, learnt from results (max seen)
    learnt = known_per_weight is not None  # a result has come back (results of no bytes teach 0.0), or known
    nxt: list[T] = []                 # one item looked ahead
    exhausted = False
    taken = 0                         # results handed on by this call (the stats may be shared)

    def running() -> int:
        return sum(1 for f, _ in pending if not f.done())

    def fill(limit: int, holding: int, busy_only: bool = False) -> None:
        """Submit items while fewer than ``limit`` are in flight (``busy_only``: still running) and
        the estimated bytes of those plus ``holding`` (a result the consumer has) stay within the
        budget (always one)."""
        nonlocal exhausted
        while not exhausted and (running() if busy_only else len(pending)) < limit and len(pending) < 2 * limit:
            if pending and not learnt:
                break              # nothing learnt yet: plan no further than the first item
            if not nxt:
                try:
                    nxt.append(next(it))
                except StopIteration:
                    exhausted = True
                    break
            w = weight_of(nxt[0])
            held = holding + sum(pw for _, pw in pending) * per_weight
            if (pending or holding) and held + w * per_weight > budget_bytes:
                break
            pending.append((pool.submit(fn, nxt.pop()), w))
            stats.max_inflight = max(stats.max_inflight, running() if busy_only else len(pending))

    try:
        while True:
            if not learnt and not pending:
                # the first item, with nothing learnt: awaited alone, so computed here (no thread hop)
                try:
                    item = next(it)          # (nothing looked ahead yet: fill has not run)
                except StopIteration:
                    return
                w = weight_of(item)
                stats.max_inflight = max(stats.max_inflight, 1)
                r = fn(item)
            else:
                fill(max_inflight, 0)
                if not pending:
                    return
                fut, w = pending.popleft()
                r = fut.result()
            nbytes = size_of(r)
            per_weight = max(per_weight, nbytes / max(w, 1))
            learnt = True
            first = not taken
            taken += 1
            if not pending and not first:   # the next item decodes while the consumer works on
                fill(1, nbytes)             # this one -- from the second result on (see above)
            inflight_est = sum(pw for _, pw in pending) * per_weight
            _record(stats, nbytes, int(nbytes + inflight_est))
            for k, part in enumerate(parts(r)):
                if k and not first:         # decoders that finished meanwhile take the next items
                    fill(max_inflight, nbytes, busy_only=True)
                yield part
    finally:
        for f, _ in pending:
            f.cancel()


def _record(stats: ReadaheadStats, nbytes: int, held: int) -> None:
    stats.results += 1
    stats.max_result_bytes = max(stats.max_result_bytes, nbytes)
    stats.peak_bytes = max(stats.peak_bytes, held)
