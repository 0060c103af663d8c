"""Run a recursive function (sqlglot's parser and generator) on deeply nested input.

sqlglot parses and renders SQL recursively, about a dozen Python frames per nesting level, so
Python's default recursion limit stops it near 50 nested parentheses.  :func:`call_deep` runs
the function again on one persistent worker thread with a large stack (owned by
:mod:`lance_duck._state`) and a raised recursion limit; input
deeper than that gives :class:`~lance_duck.errors.InvalidArgumentError`, never ``RecursionError``.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable, TypeVar

from .. import _state
from ..errors import InvalidArgumentError

T = TypeVar("T")

#: Recursion limit while the worker thread (:func:`lance_duck._state.deep_worker`, 1 GiB stack) runs.
DEEP_RECURSION_LIMIT = 200_000

_lock = threading.Lock()
_active = 0
_saved_limit = 0


def _enter() -> None:
    global _active, _saved_limit
    with _lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, DEEP_RECURSION_LIMIT))
        _active += 1


def _leave() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            sys.setrecursionlimit(_saved_limit)


def call_deep(fn: Callable[[], T], what: str, deep: Callable[[], T] | None = None) -> T:
    """``fn()``, retried (as ``deep()`` when given) on a big stack if it recursed too deeply.

    ``what`` names the user's input in the error raised when even that is not enough.
    """
    try:
        return fn()
    except RecursionError:
        pass
    err, value = _run_on_big_stack(deep if deep is not None else fn)
    if isinstance(err, RecursionError):
        raise InvalidArgumentError(f"{what} is nested too deeply to parse") from None
    if err is not None:
        raise err
    return value  # type: ignore[return-value]


def on_big_stack(fn: Callable[[], T]) -> T:
    """``fn()`` run in a worker thread with a large stack and a raised recursion limit.

    For calls into pyarrow that recurse in C++ along an Expression's depth (pickling, printing,
    comparing one: a chain of ~20,000 terms built left-deep, as DuckDB's pushdown builds them,
    overflows an ordinary thread's stack and kills the process). Costs a hand-over to the one
    worker thread and back (tens of microseconds idle, more when the cores are busy; callers
    skip it for input known to be shallow), or a thread start while that worker is busy.
    """
    err, value = _run_on_big_stack(fn)
    if err is not None:
        raise err
    return value  # type: ignore[return-value]


def _run_on_big_stack(fn: Callable[[], T]) -> tuple[BaseException | None, T | None]:
    executor, ident, idle = _state.deep_worker()
    if threading.get_ident() == ident:          # a deep call inside a deep call: already there
        try:
            return None, fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            return e, None
    _enter()
    try:
        if not idle.acquire(blocking=False):    # busy with another thread's call (which may be
            return _on_new_thread(fn)           # waiting for this one): a thread of its own
        try:
            done = executor.submit(fn)
            err = done.exception()              # waits; the worker keeps what fn raised
        finally:
            idle.release()
        return (err, None) if err is not None else (None, done.result())
    finally:
        _leave()


def _on_new_thread(fn: Callable[[], T]) -> tuple[BaseException | None, T | None]:
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            box["error"] = e

    with _lock:
        old = threading.stack_size(_state.DEEP_STACK_BYTES)
        try:
            worker = threading.Thread(target=target, name="lance_duck-deep", daemon=True)
            worker.start()
        finally:
            threading.stack_size(old)
    worker.join()
    return box.get("error"), box.get("value")  # type: ignore[return-value]


__all__ = ["call_deep", "on_big_stack", "DEEP_RECURSION_LIMIT"]
