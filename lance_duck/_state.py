"""Process state: every thread pool and named cache of lance_duck, owned here and nowhere else.

Other modules ask for what they use by name -- :func:`pool`, :func:`cache`, :func:`memo`,
:func:`slot` -- and never create a module-level pool or cache themselves
(``tests/meta/test_meta_state.py`` checks it). That gives the process one place to size them
(:func:`configure`, public as ``lance_duck.configure``), to empty them (:func:`clear_caches`,
public as ``lance_duck.clear_caches``), and one ``fork()`` hook: a child process has none of its
parent's threads, and a lock one of them held at the fork would never be released, so the child
starts with no pools, every cache empty with new locks, and no slots (a cache only costs a re-read).

Every cache is a :class:`ByteLRU` (bounded in estimated bytes, or in entries). Per-table caches
(a table opened with the ``metadata_cache_bytes`` storage option) are ByteLRUs too: not named, but
emptied by :func:`clear_caches` and after a fork like the named ones.
"""
from __future__ import annotations

import functools
import gc
import os
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType
from typing import Any, Callable, Generic, Hashable, TypeVar, overload

from .errors import InvalidArgumentError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

MIB = 1024 * 1024

#: thread pools: name -> (setting, default size, what runs on it)
POOLS: dict[str, tuple[str, int, str]] = {
    "io": ("io_threads", 16, "requests of filesystems without an event loop"),
    "kernel": ("kernel_threads", max(1, min(2, os.cpu_count() or 1)), "parts of one large decode kernel"),
    "scan": ("scan_threads", max(2, min(4, os.cpu_count() or 2)), "the scan's read-ahead decodes"),
}

#: named caches: name -> (setting, default bound, what it holds); a setting ending in ``_bytes`` bounds
#: estimated bytes (an entry above a quarter of the bound is not kept), one ending in ``_entries``
#: the number of entries
CACHES: dict[str, tuple[str, int, str]] = {
    "footers": ("footer_cache_bytes", 64 * MIB, "tails (footers) of remote data files"),
    "small_files": ("small_file_cache_bytes", 64 * MIB, "whole remote manifests and deletion files"),
    "file_metadata": ("file_metadata_cache_bytes", 64 * MIB,
                      "parsed metadata of data files (column metadata, page tables)"),
    "index_files": ("index_cache_bytes", 256 * MIB, "opened index files and what was read from them"),
    "index_sections": ("index_section_cache_entries", 64, "parsed index sections of manifests"),
    "filter_bindings": ("filter_cache_entries", 64, "filters bound to a schema"),
    "fsst_tables": ("fsst_table_cache_entries", 64, "parsed FSST symbol tables (~10 KB each, ~0.6 MB with a pair table)"),
    "bitpack_plans": ("bitpack_plan_cache_entries", 4096, "FastLanes bit-unpacking plans and tables"),
    "empty_arrays": ("empty_array_cache_entries", 256, "empty arrays per type (filter type checks)"),
    "expression_trees": ("expression_cache_entries", 128, "pyarrow Expressions read as trees"),
    "expression_objects": ("expression_object_cache_entries", 64, "trees of the Expression objects seen last"),
    "spark_datasets": ("spark_dataset_cache_entries", 4, "datasets opened by Spark readers"),
    "spark_change_feeds": ("spark_change_feed_cache_entries", 4, "change feeds planned by Spark readers"),
    "long_filter_plans": ("long_filter_plan_cache_entries", 64, "how long filters are evaluated in pieces"),
    "decoded_deletions": ("deletion_cache_bytes", 32 * MIB, "decoded offsets of local deletion files"),
    "manifest_summaries": ("manifest_summary_cache_entries", 256,
                           "per version: its largest fragment id and index uuids (index lineage checks)"),
    "index_lineage_verdicts": ("index_lineage_cache_entries", 256,
                               "per index segment: whether its fragment bitmap names fragments newer than its files"),
    "stemmers": ("stemmer_cache_entries", 32, "Snowball stemmers per language (full-text queries)"),
    "fts_words": ("fts_word_cache_entries", 65536,
                  "full-text query words: their stems and token ids per INVERTED partition"),
    "snapshots": ("snapshot_cache_bytes", 64 * MIB,
                  "table versions opened by change feeds and delta() (manifest, fragments, row ids, diffs)"),
    "sql_tables": ("sql_table_cache_entries", 16, "table versions opened by lance_duck.sql (and plain counts)"),
    "sql_stores": ("sql_store_cache_entries", 16, "filesystems opened by lance_duck.sql"),
    "sql_statements": ("sql_statement_cache_entries", 256, "SQL texts rewritten by lance_duck.sql"),
    "sql_shapes": ("sql_shape_cache_entries", 256,
                   "literal shapes of SQL texts (texts that differ only in numbers) and their rewrites"),
    "sql_views": ("sql_view_cache_entries", 64, "filtered views made by lance_duck.sql"),
    "sql_bound": ("sql_bound_cache_entries", 1024,
                  "reading statements lance_duck.sql had DuckDB bind, per connection (run again without a relation)"),
}

#: other settings: name -> (default, least value, what it does)
SWITCHES: dict[str, tuple[int, int, str]] = {
    "compiled_kernels": (1, 0, "1: decode FSST, unpack FastLanes and walk HNSW graphs with compiled kernels when numba is installed "
                               "(the fast extra); 0: numpy only"),
}

_LEAST = {**{s: 1 for s, _, _ in POOLS.values()}, **{s: 0 for s, _, _ in CACHES.values()},
          **{s: least for s, (_, least, _) in SWITCHES.items()}}
_settings: dict[str, int] = {**{s: d for s, d, _ in POOLS.values()}, **{s: d for s, d, _ in CACHES.values()},
                             **{s: d for s, (d, _, _) in SWITCHES.items()}}


class ByteLRU(Generic[K, V]):
    """A thread-safe map keeping its most recently used values within ``limit``.

    Each value has a charge (estimated bytes; ``1`` for a cache bounded in entries, ``entries=True``);
    the least recently used go once the charges exceed ``limit``. In bytes, a value charged more than
    a quarter of the limit is not kept. ``charge`` grows an entry's charge after the fact (a value
    that fills in lazily). Fetches under way can be shared (single flight): :meth:`claim`,
    :meth:`settle`, :meth:`flight`."""

    def __init__(self, limit: int, *, entries: bool = False, name: str | None = None):
        self.limit = limit
        self.entries = entries
        self.name = name
        self._items: OrderedDict[K, list[Any]] = OrderedDict()   # key -> [value, charge]
        self._flights: dict[K, Future[Any]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        _ALL.add(self)

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: T) -> V | T: ...

    def get(self, key: K, default: Any = None) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return default
            self._items.move_to_end(key)
            return hit[0]

    def peek(self, key: K, default: Any = None) -> Any:
        """The value of ``key`` without taking the lock or counting it as a use (a memo table's hit,
        where a lock per call would cost more than the lookup; its entries then go oldest first)."""
        hit = self._items.get(key)
        return default if hit is None else hit[0]

    def put(self, key: K, value: V, nbytes: int = 1) -> V:
        """Keep ``value`` under ``key`` (charged ``nbytes``); returns ``value``."""
        if nbytes > (self.limit if self.entries else self.limit // 4):
            return value
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = [value, nbytes]
            self._bytes += nbytes
            self._evict()
        return value

    def charge(self, key: K, nbytes: int) -> None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                hit[1] += nbytes
                self._bytes += nbytes
                self._evict()

    def resize(self, limit: int) -> None:
        """Bound the map to ``limit`` from now on (evicting what no longer fits)."""
        with self._lock:
            self.limit = limit
            self._evict()
            if not self.entries:
                for key in [k for k, (_, n) in self._items.items() if n > limit // 4]:
                    self._bytes -= self._items.pop(key)[1]

    def _evict(self) -> None:
        while self._bytes > self.limit and self._items:
            _, (_, n) = self._items.popitem(last=False)
            self._bytes -= n

    # -- single flight ---------------------------------------------------------------------
    def claim(self, key: K, cached: Callable[[V], bool] | None = None) -> Future[Any] | None:
        """A Future the caller must :meth:`settle` when it is to fetch ``key``; None when a fetch
        of ``key`` is under way already, or its value is kept and ``cached(value)`` says it will do
        (checked together, under the lock)."""
        with self._lock:
            hit = self._items.get(key)
            if key in self._flights or (hit is not None and cached is not None and cached(hit[0])):
                return None
            flight: Future[Any] = Future()
            self._flights[key] = flight
            return flight

    def flight(self, key: K) -> Future[Any] | None:
        """The fetch of ``key`` under way, if any."""
        with self._lock:
            return self._flights.get(key)

    def settle(self, key: K, flight: Future[Any], result: Any = None, error: BaseException | None = None) -> None:
        """End the fetch ``flight`` of ``key`` with ``result`` (already :meth:`put` by the caller)
        or ``error``: whoever waits for it gets that outcome."""
        with self._lock:
            if self._flights.get(key) is flight:
                del self._flights[key]
        if error is not None:
            flight.set_exception(error)
        else:
            flight.set_result(result)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._items = OrderedDict()
        self._flights = {}
        self._bytes = 0


_ALL: weakref.WeakSet[ByteLRU[Any, Any]] = weakref.WeakSet()   # named and per-table caches
_caches: dict[str, ByteLRU[Any, Any]] = {}
_pools: dict[str, ThreadPoolExecutor] = {}
_slots: dict[str, Any] = {}
_lock = threading.Lock()


def cache(name: str) -> ByteLRU[Any, Any]:
    """The process-wide cache called ``name`` (one of :data:`CACHES`), bounded by its setting.

    The object stays the same for the life of the process (emptied, never replaced), so a module
    may keep it in a global."""
    with _lock:
        got = _caches.get(name)
        if got is None:
            setting = CACHES[name][0]
            got = _caches[name] = ByteLRU(_settings[setting], entries=setting.endswith("_entries"), name=name)
        return got


def memo(name: str) -> Callable[[F], F]:
    """Decorator: results of a pure function of hashable arguments kept in the cache ``name``
    (keyed by the function and its arguments; several functions may share one cache). Hits are
    peeks (:meth:`ByteLRU.peek`: no lock: these run per decoded chunk), so entries go oldest first."""
    def wrap(fn: F) -> F:
        lru = cache(name)
        missing = object()
        qual = fn.__qualname__
        peek = lru.peek

        @functools.wraps(fn)
        def memoized(*args: Any) -> Any:
            key = (qual, args)
            hit = peek(key, missing)
            if hit is missing:
                hit = lru.put(key, fn(*args))
            return hit
        return memoized  # type: ignore[return-value]   # same signature as fn
    return wrap


def pool(name: str, initializer: Callable[[], None] | None = None) -> ThreadPoolExecutor:
    """The process-wide thread pool called ``name`` (one of :data:`POOLS`; threads named
    ``lance_duck_<name>``), created on first use with its configured size and ``initializer``
    (the first caller's). Ask again each time: :func:`configure` and a fork replace it."""
    with _lock:
        got = _pools.get(name)
        if got is None:
            got = ThreadPoolExecutor(max_workers=_settings[POOLS[name][0]], thread_name_prefix=f"lance_duck_{name}",
                                     initializer=initializer)
            _pools[name] = got
        return got


#: stack of the :func:`deep_worker` thread (virtual memory, touched only as used)
DEEP_STACK_BYTES = 1 << 30


def deep_worker() -> tuple[ThreadPoolExecutor, int, threading.Lock]:
    """The one thread (``lance_duck_deep``) with a large stack that runs calls recursing along
    deeply nested input, its thread ident, and the lock its user holds (a caller finding it held
    does not queue); started on first use, a forked child starts its own."""
    got: tuple[ThreadPoolExecutor, int, threading.Lock] = slot("deep_worker", _start_deep_worker)
    return got


def _start_deep_worker() -> tuple[ThreadPoolExecutor, int, threading.Lock]:
    old = threading.stack_size(DEEP_STACK_BYTES)
    try:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lance_duck_deep")
        ident = executor.submit(threading.get_ident).result()   # its thread starts with that stack
    finally:
        threading.stack_size(old)
    return executor, ident, threading.Lock()


def workers(name: str) -> int:
    """The configured size of the pool ``name``."""
    return _settings[POOLS[name][0]]


def slot(name: str, make: Callable[[], T]) -> T:
    """A process-wide object other than a cache or a pool (e.g. the memory-map pages served),
    made by ``make()`` on first use; a forked child makes its own."""
    got = _slots.get(name)
    if got is None:
        with _lock:
            got = _slots.get(name)
            if got is None:
                got = _slots[name] = make()
    return got


class WarmLoader:
    """An optional module (compiled kernels) a process loads once, on a background thread, after
    ``threshold`` units of work done without it, so a short-lived process never pays its import;
    work goes on without it meanwhile. ``importer`` returns the ready module, or None when it cannot
    be had here (not installed, cannot build): then it is never tried again."""

    def __init__(self, importer: Callable[[], ModuleType | None], threshold: int, thread_name: str) -> None:
        self.importer = importer
        self.threshold = threshold
        self.thread_name = thread_name
        self.done = 0
        self.started = False
        self.module: ModuleType | bool | None = None     # False: cannot be had here
        self.lock = threading.Lock()        # the counter
        self.loading = threading.Lock()     # the import

    def note(self, units: int = 1) -> ModuleType | None:
        """Count ``units`` of work done; the module once it is loaded."""
        if self.module is None and not self.started:
            with self.lock:
                self.done += units
                start = not self.started and self.done >= self.threshold
                self.started |= start
            if start:
                threading.Thread(target=self.load, name=self.thread_name, daemon=True).start()
        return self.module if isinstance(self.module, ModuleType) else None

    def load(self) -> ModuleType | None:
        """Load the module now (if it is not yet); the module, or None."""
        self.started = True
        with self.loading:
            if self.module is None:
                module = self.importer()
                if module is not None:
                    # importing numba leaves ~80k new objects in the young generations: until a
                    # full collection counts them as long-lived, the collector runs full passes
                    # over the whole heap (~40 ms each) inside the next decodes; one collection
                    # here, on the loading thread, settles it
                    gc.collect()
                self.module = module or False
        return self.module if isinstance(self.module, ModuleType) else None


def settings() -> dict[str, int]:
    """Every setting of :func:`configure` with its current value."""
    return dict(_settings)


def configure(**settings: int) -> dict[str, int]:
    """Size lance_duck's process-wide thread pools and caches (every table of the process shares them).

    Args:
        **settings: any of ``io_threads`` (requests of filesystems without an event loop; 16),
            ``kernel_threads`` (parts of one large decode kernel; up to 2), ``scan_threads`` (the
            scan's read-ahead decodes; 2 to 4), and a bound for each cache: ``footer_cache_bytes``
            (footers of remote data files; 64 MiB), ``small_file_cache_bytes`` (remote manifests and
            deletion files; 64 MiB), ``file_metadata_cache_bytes`` (parsed metadata of data files;
            64 MiB), ``index_cache_bytes`` (index files; 256 MiB), ``snapshot_cache_bytes`` (table
            versions opened by change feeds and ``delta()``; 64 MiB), and ``<cache>_entries`` bounds of
            the smaller caches (``index_section_cache_entries``, ``filter_cache_entries``,
            ``fsst_table_cache_entries``, ``bitpack_plan_cache_entries``, ``empty_array_cache_entries``,
            ``expression_cache_entries``, ``expression_object_cache_entries``,
            ``spark_dataset_cache_entries``, ``sql_table_cache_entries``, ``sql_store_cache_entries``,
            ``sql_statement_cache_entries``, ``sql_view_cache_entries``, ``sql_bound_cache_entries``), and
            ``compiled_kernels``
            (``1``: decode FSST strings with compiled kernels when numba is installed, the ``fast``
            extra; ``0``: the numpy kernels only; 1). Threads at least 1, bounds
            at least 0 (``0``: keep nothing). A cache shrinks at once; a pool of a new size serves
            work started from now on (a scan under way finishes on the pool it began with).

    Returns:
        Every setting with its value after the change (``configure()`` only reads them).

    Raises:
        InvalidArgumentError: an unknown setting (named), or a value that is not an integer or is too small.

    Example:
        >>> import lance_duck
        >>> before = lance_duck.configure(index_cache_bytes=512 * 1024 * 1024, scan_threads=2)
        >>> lance_duck.configure()["scan_threads"]
        2
        >>> _ = lance_duck.configure(index_cache_bytes=before["index_cache_bytes"],
        ...                          scan_threads=before["scan_threads"])
    """
    unknown = sorted(set(settings) - set(_settings))
    if unknown:
        raise InvalidArgumentError(f"unknown lance_duck setting {', '.join(map(repr, unknown))} "
                                   f"(known: {', '.join(sorted(_settings))})")
    for key, value in settings.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < _LEAST[key]:
            raise InvalidArgumentError(f"setting {key} must be an integer of at least {_LEAST[key]}, got {value!r}")
    with _lock:
        _settings.update(settings)
        for n, (s, _, _) in POOLS.items():
            # dropped, not shut down: a scan holding it keeps submitting to it; its threads end
            # once nobody refers to it any more (concurrent.futures' own clean-up)
            if s in settings:
                _pools.pop(n, None)
        resized = [(c, _settings[CACHES[n][0]]) for n, c in _caches.items() if CACHES[n][0] in settings]
    for c, limit in resized:
        c.resize(limit)
    return dict(_settings)


def clear_caches() -> None:
    """Empty every cache lance_duck keeps in this process (footers, manifests, parsed file and index
    metadata, index files, bound filters, the tables ``lance_duck.sql`` keeps open, ...).

    Later reads fetch and parse again; results do not change. Useful to give memory back, or to
    measure a cold read. Thread pools and settings stay.

    Example:
        >>> import lance_duck
        >>> lance_duck.clear_caches()
    """
    for lru in list(_ALL):
        lru.clear()


def _after_fork_in_child() -> None:
    """After ``fork()`` only the forking thread lives on: start with no pools, slots or fetches
    under way, every cache empty, and new locks."""
    global _lock
    _lock = threading.Lock()
    _pools.clear()
    _slots.clear()
    for lru in list(_ALL):
        lru._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
