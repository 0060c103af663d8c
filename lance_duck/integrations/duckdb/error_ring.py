"""The errors Lance scans under DuckDB raised, newest last, numbered so that a call finds its own.

:mod:`.scan_errors` records them; :class:`~lance_duck.integrations.duckdb.LanceRelation` re-raises
the one DuckDB's message carries. Standard library only: a relation whose query reads no Lance scan
(a count answered from metadata) does not import the scan layer.
"""
from __future__ import annotations

import collections
import itertools
import threading

# Errors raised by Lance scans under DuckDB, newest last, numbered so a call finds its own.
_errors: collections.deque[tuple[int, BaseException]] = collections.deque(maxlen=64)
_error_seq = itertools.count(1)
_errors_lock = threading.Lock()


def fresh(err: BaseException) -> BaseException:
    """A copy of ``err`` without its traceback (same type and message), or ``err`` itself."""
    try:
        new = type(err)(*err.args)
    except Exception:  # noqa: BLE001 - an exception type with a custom constructor
        return err
    return new if str(new) == str(err) else err


def record(err: BaseException) -> None:
    """Remember ``err`` (a copy: its traceback would keep the scan's frames alive)."""
    with _errors_lock:
        _errors.append((next(_error_seq), fresh(err)))


def last_seq() -> int:
    with _errors_lock:
        return _errors[-1][0] if _errors else 0


def recorded_since(seq: int, message: str) -> BaseException | None:
    """The newest error recorded after ``seq`` whose text DuckDB's message carries."""
    with _errors_lock:
        candidates = [e for n, e in _errors if n > seq]
    for err in reversed(candidates):
        text = str(err)
        if (text and text in message) or (not text and type(err).__name__ in message):
            return err
    return None
