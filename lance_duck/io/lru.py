"""A thread-safe least-recently-used map bounded in (estimated) bytes, for process-wide caches."""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Any, Hashable


class ByteLRU:
    """Values with a byte charge each; the least recently used go once the charges exceed ``limit``.

    A value charged more than a quarter of the limit is not kept. ``charge`` grows an entry's
    charge after the fact (a value that fills in lazily)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._items: OrderedDict[Hashable, list] = OrderedDict()   # key -> [value, charge]
        self._bytes = 0
        self._lock = threading.Lock()
        _INSTANCES.add(self)

    def get(self, key: Hashable) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        if nbytes > self.limit // 4:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = [value, nbytes]
            self._bytes += nbytes
            self._evict()

    def charge(self, key: Hashable, nbytes: int) -> None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                hit[1] += nbytes
                self._bytes += nbytes
                self._evict()

    def resize(self, limit: int) -> None:
        """Bound the map to ``limit`` bytes from now on (evicting what no longer fits)."""
        with self._lock:
            self.limit = limit
            self._evict()
            for key in [k for k, (_, n) in self._items.items() if n > limit // 4]:
                self._bytes -= self._items.pop(key)[1]

    def _evict(self) -> None:
        while self._bytes > self.limit and self._items:
            _, (_, n) = self._items.popitem(last=False)
            self._bytes -= n

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


_INSTANCES: weakref.WeakSet[ByteLRU] = weakref.WeakSet()


def _empty_in_child() -> None:
    """After ``fork()`` only the forking thread lives on: a lock another thread held at that moment
    would never be released, and the map it guarded may be half updated. The child starts every
    cache empty, with a new lock (a cache only costs a re-read)."""
    for lru in list(_INSTANCES):
        lru._lock = threading.Lock()
        lru._items = OrderedDict()
        lru._bytes = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_empty_in_child)
