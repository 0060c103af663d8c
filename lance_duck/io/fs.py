"""Filesystem access for one table: local paths and any fsspec URL.

``open_io(uri, storage_options)`` returns a :class:`FileIO` bound to one fsspec filesystem
and the table's root path; a local path without fsspec arguments is read with the standard
library (fsspec and asyncio are imported when a URL or an fsspec call needs them). Data files are
read through :class:`InputFile`, which plans byte ranges, coalesces neighbours and fetches them
together (``cat_ranges``), or serves them from a memory map for local files.

Pages of a memory map stay mapped, and count in the process's RSS, once read. So that a
streaming scan's RSS does not grow with the table, the pages served from memory maps are
released oldest first (``madvise(MADV_DONTNEED)``) once more than ``MAPPED_RESIDENT_BYTES``
have been served since: the file stays mapped and in the page cache, and arrays that still view
released pages read them again on access (a minor fault), so no array is ever invalidated.

The byte ranges a reader asks for of a map are advised ``MADV_WILLNEED`` the first time, span by span
(:func:`advise_served`): the kernel reads exactly those pages, in large requests, before the decoders
touch them, so no fault on a cold page triggers the kernel's read-around window (a cold point lookup
reads the pages it asks for, not megabytes around them) and a scan's pages are read ahead whole.
(``MADV_RANDOM`` would stop the read-around too, but also the fault-around of pages already cached,
and a warm scan would fault page by page.)
"""
from __future__ import annotations

import functools
import mmap
import os
import posixpath
import re
import threading
import weakref
from collections import OrderedDict, deque
from concurrent.futures import Future, wait
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Iterator, Sequence, TypeVar, cast

import numpy as np

from .. import _state, trace
from .._state import ByteLRU
from ..errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from . import retry
from .prefetch import Prefetcher
from .retry import RetryPolicy, TruncatedResponse
from .storage_options import fsspec_options

if TYPE_CHECKING:
    import fsspec

# Ranges closer than this are fetched as one request.
COALESCE_GAP = 64 * 1024
# Bytes served from memory-mapped files that stay mapped (resident) before the oldest are released.
MAPPED_RESIDENT_BYTES = 64 * 1024 * 1024
# Memory-map spans served closer than this are noted (and released) as one span.
RESIDENT_GAP = 64 * 1024
# Spans of one memory map remembered as read ahead (MADV_WILLNEED) already; more start the set again.
ADVISED_SPANS = 4096
# Most requests a table keeps in flight at once (async filesystems).
MAX_IN_FLIGHT = 64
# Coalesced spans longer than this are fetched as several requests (in parallel).
MAX_REQUEST_BYTES = 4 * 1024 * 1024
# Bytes a scan fetches ahead of its reads (see prefetch.py).
PREFETCH_BYTES = 64 * 1024 * 1024
# Remote reads up to this size are kept by their InputFile and serve later reads inside them
# (page metadata and small buffers read again by another column or batch), up to HELD_BYTES per file
# besides the tail.
SMALL_READ = 4 * 1024
HELD_BYTES = 1024 * 1024
# Reads served from prefetched spans up to this size are copied and held too (page metadata that
# every task touching the page reads again, after its span was dropped).
HELD_PREFETCHED = 64 * 1024
# Tails of remote data files (the process's "footers" cache, lance_duck.configure's footer_cache_bytes)
# and whole immutable remote files (manifests, deletion files: "small_files") are kept keyed by
# (filesystem, path, size): data files are immutable, so a second query on the same version reads no
# footer and no metadata again.
# A URL's scheme (RFC 3986), two letters at least (``C:`` is a Windows drive)
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
# Listings of a remote directory tried before listing its names and describing each entry
# (a store whose detailed listing fails when an entry vanishes meanwhile).
LIST_ATTEMPTS = 3
# Longest a read waits for a prefetch of the same tail before fetching it itself (seconds).
PREFETCH_WAIT = 60.0

T = TypeVar("T")
#: a store in process-wide caches: (URL scheme, fsspec's token for the filesystem instance, or its id)
StoreKey = tuple[str, Hashable]
#: a remote file in the tail caches: (store, path)
TailKey = tuple[StoreKey, str]
#: a span served from a memory map: (weak reference to the map, start, length)
_Span = tuple["weakref.ref[mmap.mmap]", int, int]


def _scan_local(path: str, sizes: bool = True) -> list[tuple[str, int | None]]:
    """(name, size or None for a directory) of a local directory's entries; [] when it does not exist.
    ``sizes=False``: files only, size None, without a ``stat`` of each."""
    try:
        it = os.scandir(path)
    except FileNotFoundError:
        return []
    out: list[tuple[str, int | None]] = []
    with it:
        for e in it:
            try:
                if sizes:
                    out.append((e.name, None if e.is_dir() else e.stat().st_size))
                elif not e.is_dir():
                    out.append((e.name, None))
            except FileNotFoundError:   # removed since the directory was read: not an entry any more
                continue
    return out


def open_io(uri: str | os.PathLike[str], storage_options: dict[str, Any] | None = None) -> tuple["FileIO", str]:
    """Resolve ``uri`` to (FileIO, root path inside that filesystem).

    ``storage_options`` may use pylance's keys (``aws_endpoint``, ...) or fsspec's arguments.
    """
    if not isinstance(uri, (str, os.PathLike)) or isinstance(os.fspath(uri), bytes):
        raise InvalidArgumentError(f"a table URI must be a str or os.PathLike path, not {uri!r}")
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidArgumentError(f"storage_options must be a dict of str -> str, not {storage_options!r}")
    uri = os.fspath(uri)
    if "://" not in uri:
        uri = os.path.abspath(os.path.expanduser(uri))
    options = dict(storage_options or {})
    tuning = {TUNING_OPTIONS[k][0]: _tuning_value(k, options.pop(k)) for k in list(options) if k in TUNING_OPTIONS}
    policy = RetryPolicy(max_retries=int(tuning.pop("max_retries", RetryPolicy.max_retries)),
                         timeout=tuning.pop("timeout", RetryPolicy.timeout))
    sizes = {k: int(v) for k, v in tuning.items()}       # the other options are integers
    kwargs = fsspec_options(uri, options)
    if "://" not in uri and not kwargs and os.sep == "/":
        # local disk: fsspec's LocalFileSystem would name it so (abspath is normalised already)
        return FileIO(None, retry_policy=policy, **sizes), uri.rstrip("/") or "/"
    if uri.split("://", 1)[0].lower() in ("s3", "s3a"):
        from .arrow_s3 import arrow_s3_store
        store = arrow_s3_store(uri, options)
        if store is not None:       # plain options: pyarrow's own S3 client (no s3fs stack to import)
            return FileIO(store, retry_policy=policy, **sizes), store._strip_protocol(uri) or "/"
    from fsspec.core import url_to_fs
    if uri.split("://", 1)[0].lower() in ("s3", "s3a"):
        _s3_client_options(kwargs, sizes.get("max_in_flight", MAX_IN_FLIGHT))
    try:
        fs, path = url_to_fs(uri, **kwargs)
    except ImportError as exc:
        raise missing_filesystem(uri, exc) from None
    if kwargs.get("config_kwargs", {}).get("retries") == NO_CLIENT_RETRIES:
        fs.retries = 1      # s3fs's own loop: one try (this instance has our config, it is ours)
    return FileIO(fs, retry_policy=policy, **sizes), path.rstrip("/") or "/"


# URL scheme -> the lance-duck extra that installs its fsspec filesystem
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure",
          "adl": "azure"}


def missing_filesystem(uri: str, exc: ImportError) -> UnsupportedFeatureError:
    """The error for a URL whose fsspec filesystem is not installed: the extra to install."""
    scheme = uri.split("://", 1)[0].lower()
    extra = EXTRAS.get(scheme)
    fix = f"pip install 'lance-duck[{extra}]'" if extra else f"install the fsspec filesystem for {scheme}://"
    return UnsupportedFeatureError(f"{uri}: reading {scheme}:// needs a package that is not installed ({exc}): {fix}")


# storage_options keys read by lance_duck itself (not passed to fsspec): (FileIO argument, type, least value)
TUNING_OPTIONS = {
    "coalesce_gap_bytes": ("coalesce_gap", int, 0),
    "max_requests_in_flight": ("max_in_flight", int, 1),
    "max_request_bytes": ("max_request_bytes", int, 1),
    "prefetch_bytes": ("prefetch_bytes", int, 0),
    "client_max_retries": ("max_retries", int, 0),       # pylance's (object_store's) names
    "client_retry_timeout": ("timeout", float, 0),
    "metadata_cache_bytes": ("metadata_cache_bytes", int, 0),
}


def _tuning_value(key: str, value: Any) -> int | float:
    _, kind, least = TUNING_OPTIONS[key]
    try:
        v: int | float = kind(value)
    except (TypeError, ValueError):
        v = least - 1
    if v < least:
        raise InvalidArgumentError(f"storage option {key} must be a {'positive ' if least else ''}"
                                   f"{'integer' if kind is int else 'number'} (at least {least}), got {value!r}")
    return v


NO_CLIENT_RETRIES = {"total_max_attempts": 1}


def _s3_client_options(kwargs: dict[str, Any], max_in_flight: int) -> None:
    """Retries are lance_duck's (retry.py): s3fs and botocore try once. The connection pool holds
    as many connections as requests may be in flight. A user's own settings win."""
    config = dict(kwargs.get("config_kwargs") or {})
    # a copy: botocore adds keys to the dict it is given, and fsspec keys its instances by these
    # arguments (a shared dict changed by the first client would key every later open differently)
    config.setdefault("retries", dict(NO_CLIENT_RETRIES))
    config.setdefault("max_pool_connections", max_in_flight)
    kwargs["config_kwargs"] = config


#: what fsspec's LocalFileSystem calls itself (its ``protocol``)
LOCAL_PROTOCOLS = ("file", "local")
#: the store key of local disk read without an fsspec filesystem
LOCAL_KEY: StoreKey = ("file", "local disk")


class FileIO:
    """All I/O of a table goes through one of these (no global state).

    ``fs``: the fsspec filesystem; None for local disk, read with the standard library (``self.fs``
    is then fsspec's LocalFileSystem, made when first asked for).
    """

    def __init__(self, fs: fsspec.AbstractFileSystem | None, coalesce_gap: int = COALESCE_GAP,
                 max_in_flight: int = MAX_IN_FLIGHT, max_request_bytes: int = MAX_REQUEST_BYTES,
                 prefetch_bytes: int = PREFETCH_BYTES, retry_policy: RetryPolicy | None = None,
                 metadata_cache_bytes: int | None = None):
        self._fs = fs
        # the process's caches of footers and whole small files, or (storage option
        # metadata_cache_bytes) this table's own, of that many bytes each
        self.tails = _TailCache(_state.cache("footers") if metadata_cache_bytes is None else ByteLRU(metadata_cache_bytes))
        self.whole = _TailCache(_state.cache("small_files") if metadata_cache_bytes is None
                                else ByteLRU(metadata_cache_bytes))
        self.is_local = fs is None or "file" in _protocols(fs)
        self.is_async = fs is not None and _is_async(fs)
        self.coalesce_gap = coalesce_gap
        self.max_in_flight = max_in_flight
        self.max_request_bytes = max_request_bytes
        self.retry = retry_policy or RetryPolicy()
        self._gate: Any = None                  # asyncio.Semaphore on the filesystem's loop
        # identifies the store in process-wide caches (fsspec instances are cached by their arguments)
        self.key: StoreKey = LOCAL_KEY if fs is None else (_protocols(fs)[0], getattr(fs, "_fs_token_", None) or id(fs))
        # what makes two FileIOs interchangeable (same store, same tuning, the process's caches):
        # objects made over one may serve the other (table/snapshot.py's kept snapshots); None
        # for a FileIO with its own caches
        self.share_key: tuple[Any, ...] | None = None if metadata_cache_bytes is not None else (
            self.key, coalesce_gap, max_in_flight, max_request_bytes, prefetch_bytes, self.retry.max_retries,
            self.retry.base_delay, self.retry.max_delay, self.retry.timeout)
        self.prefetcher = Prefetcher(self, prefetch_bytes)

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The fsspec filesystem (for local disk opened without one: fsspec's LocalFileSystem, made now)."""
        if self._fs is None:
            import fsspec
            self._fs = fsspec.filesystem("file")
        return self._fs

    # -- requests (remote filesystems) -----------------------------------------------------
    def submit(self, path: str, start: int | None, end: int | None, exact: bool = False) -> Future[bytes]:
        """Start fetching bytes [start, end) of ``path`` (None, None: the whole object); a Future of bytes.

        At most ``max_in_flight`` requests run at once; each is retried per ``self.retry``. ``exact``:
        the object is known to hold these bytes, so a shorter body is a truncated response (retried).
        """
        if self.is_async:
            import asyncio
            return asyncio.run_coroutine_threadsafe(self._get(path, start, end, exact), self.fs.loop)
        return _state.pool("io").submit(retry.call, lambda: self._get_sync(path, start, end, exact), path, self.retry)

    def get(self, items: Sequence[tuple[str, int | None, int | None]], exact: bool = False) -> list[bytes]:
        """Bytes of each (path, start, end), all requests issued together; the first failure is raised."""
        futures = [self.submit(p, s, e, exact) for p, s, e in items]
        try:
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()

    async def _get(self, path: str, start: int | None, end: int | None, exact: bool) -> bytes:
        import asyncio
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.max_in_flight)

        async def once() -> bytes:
            async with self._gate:
                if hasattr(self.fs, "_call_s3"):
                    return (await s3_get(self.fs, path, f"bytes={start or 0}-{'' if end is None else end - 1}"))[1]
                # start=0 for a whole object: s3fs would HEAD for the size first
                data = await self.fs._cat_file(path, start=start or 0, end=end)
            return _checked(data, path, start, end, exact)
        return await retry.call_async(once, path, self.retry)

    def _get_sync(self, path: str, start: int | None, end: int | None, exact: bool) -> bytes:
        data = self.fs.cat_file(path) if start is None else self.fs.cat_file(path, start=start, end=end)
        return _checked(data, path, start, end, exact)

    def call(self, fn: Callable[[], T], what: str) -> T:
        """``fn()`` (a metadata request: list, size, exists), retried per ``self.retry``."""
        return retry.call(fn, what, self.retry)

    # -- paths ---------------------------------------------------------------------------
    @staticmethod
    def join(*parts: str) -> str:
        return posixpath.join(*parts)

    @property
    def protocol(self) -> str:
        """The store's URL scheme (``file`` for local disk)."""
        return LOCAL_PROTOCOLS[0] if self._fs is None else _protocols(self._fs)[0]

    def resolve_external(self, path_or_uri: str) -> str:
        """A path written by a writer (base paths): strip a scheme our filesystem owns (a URL of
        another store is returned as it is)."""
        scheme = _URL_SCHEME.match(path_or_uri)
        if scheme and scheme.group(1).lower() in (LOCAL_PROTOCOLS if self._fs is None else _protocols(self._fs)):
            return str(self.fs._strip_protocol(path_or_uri))
        return path_or_uri

    # -- listing and small files -----------------------------------------------------------
    def list_names(self, path: str) -> list[tuple[str, int | None]]:
        """(name, size) of the entries of a directory (size None: a subdirectory); [] if it does not exist.

        An entry removed between the listing and its size (a writer's temporary file, a version
        cleaned up) is left out: it never empties the listing. Listings are never served from
        fsspec's directory cache (s3fs etc. keep one per filesystem instance, and instances are
        shared), so a new version is always seen.
        """
        if self.is_local:   # one scandir: fsspec's ls stats every entry through Python
            return _scan_local(path)
        for _ in range(LIST_ATTEMPTS):
            try:
                entries = self.call(lambda: self._ls(path, True), path)
                break
            except FileNotFoundError:
                # the directory is gone, or an entry vanished while the store described it
                if not self.call(lambda: self.fs.isdir(path), path):
                    return []
        else:
            entries = self._ls_each(path)
        out = []
        for e in entries:
            name = posixpath.basename(e["name"].rstrip("/"))
            out.append((name, e.get("size") if e.get("type") != "directory" else None))
        return out

    def list_file_names(self, path: str) -> list[str]:
        """Names of the files (not subdirectories) of a directory; [] if it does not exist. A local
        directory is read without a ``stat`` of each entry (what :meth:`list_names` needs for sizes)."""
        if self.is_local:
            return [name for name, _ in _scan_local(path, sizes=False)]
        return [name for name, size in self.list_names(path) if size is not None]

    def _ls(self, path: str, detail: bool) -> list[Any]:
        """fsspec's listing (names, or dicts of details), never from its directory cache."""
        try:
            self.fs.invalidate_cache(path)
        except Exception:  # noqa: BLE001 - a filesystem without a cache
            pass
        return list(self.fs.ls(path, detail=detail))

    def _ls_each(self, path: str) -> list[dict[str, Any]]:
        """The entries of an existing directory whose detailed listing keeps failing on entries
        that vanish: its names, then each one's details (the vanished ones left out)."""
        out = []
        for name in self.call(lambda: self._ls(path, False), path):
            name = name if isinstance(name, str) else name["name"]
            try:
                out.append(self.call(lambda: self.fs.info(name), name))
            except FileNotFoundError:
                continue
        return out

    def exists(self, path: str) -> bool:
        if self.is_local:
            return os.path.exists(path)
        return bool(self.call(lambda: self.fs.exists(path), path))

    def read_bytes(self, path: str) -> bytes:
        """The whole file; FileNotFoundError names the path."""
        if self.is_local:
            return self._read_range(path, None, None)
        return self.submit(path, None, None).result()

    def read_immutable(self, path: str, size: int | None = None) -> bytes:
        """A whole file that never changes once written (a manifest, a deletion file): remote ones are
        cached per process, keyed by store, path and -- when known, from a listing -- size."""
        if self.is_local:
            return self.read_bytes(path)
        return self.whole.fetch((self.key, path), size, lambda: _sized(self.read_bytes(path)))[1]

    def read_many(self, paths: Sequence[str], ahead: int = 32) -> Iterator[bytes]:
        """Whole files, in order; up to ``ahead`` fetched concurrently (object stores)."""
        return self.read_ranges_many([(p, None, None) for p in paths], min(ahead, self.max_in_flight))

    def read_ranges_many(self, items: Sequence[tuple[str, int | None, int | None]],
                         ahead: int = 32) -> Iterator[bytes]:
        """Bytes [start, end) of each (path, start, end) (None, None = whole file), in order.

        Local files are read in the calling thread (page-cache copies gain nothing from threads);
        other filesystems get ``ahead`` requests in flight, so a long list costs a few round trips.
        """
        if self.is_local or len(items) <= 1:
            for item in items:
                yield self._read_range(*item)
            return
        pending: deque[Future[bytes]] = deque()
        it = iter(items)
        try:
            for item in it:
                pending.append(self.submit(*item))
                if len(pending) >= ahead:
                    break
            while pending:
                out = pending.popleft().result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(self.submit(*nxt))
                yield out
        finally:
            for f in pending:
                f.cancel()

    def _read_range(self, path: str, start: int | None, end: int | None) -> bytes:
        if not self.is_local:
            return self.submit(path, start, end).result()
        try:
            with open(path, "rb") as f:
                if start is None or end is None:
                    f.seek(start or 0)
                    return f.read()
                return os.pread(f.fileno(), end - start, start)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"No such file: {path}") from exc

    def prefetch_tails(self, files: Sequence[tuple[str, int | None]], length: int) -> None:
        """Start fetching the last ``length`` bytes of remote ``files`` ((path, size)) concurrently.

        Returns at once; a later :meth:`InputFile.read_tail` of one of these files waits for its
        fetch instead of issuing another request. Local files, files of unknown size and tails
        already cached or being fetched are skipped. A read waiting for a prefetch that failed raises
        its error (the request was retried already).
        """
        if self.is_local:
            return
        for path, size in files:
            key = (self.key, path)
            flight = self.tails.claim(key, size) if size else None
            if flight is None or size is None:
                continue
            fut = self.submit(path, max(0, size - length), size, exact=True)
            fut.add_done_callback(functools.partial(_settle_tail, self.tails, key, size, flight))

    def open_input(self, path: str, size: int | None = None) -> "InputFile":
        return InputFile(self, path, size)


class InputFile:
    """Random access to one file by byte ranges."""

    def __init__(self, io: FileIO, path: str, size: int | None = None):
        self.io = io
        self.path = path
        self._size = size if size else None
        self._mmap: mmap.mmap | None = None
        self._advised: set[tuple[int, int]] = set()   # spans of the map read ahead already
        self._lock = threading.Lock()
        self._held: list[tuple[int, bytes | memoryview]] = []   # remote reads kept: (offset, bytes)
        self._held_bytes = 0
        self.requests = 0  # number of fetches issued (tests count these)

    @property
    def size(self) -> int:
        if self._size is None:
            if self.io.is_local:
                self._size = len(self._local_map())
            else:
                self._size = int(self.io.call(lambda: self.io.fs.size(self.path), self.path))
        return self._size

    def _local_map(self) -> memoryview | bytes:
        with self._lock:
            if self._mmap is None:
                try:
                    with open(self.path, "rb") as f:
                        if os.fstat(f.fileno()).st_size == 0:
                            return b""
                        self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                except FileNotFoundError as exc:
                    raise FileNotFoundError(f"No such file: {self.path}") from exc
            return memoryview(self._mmap)

    def read(self, offset: int, length: int) -> memoryview | bytes:
        return self.read_ranges([(offset, length)])[0]

    def read_tail(self, length: int) -> memoryview | bytes:
        """The last ``length`` bytes (fewer if the file is smaller).

        Remote files: one request, served from the process's tail cache when this file (same path
        and size) was opened before; when the size is not known, a suffix range (``bytes=-N``)
        learns it from the response instead of a HEAD request first.
        """
        if self.io.is_local:
            length = min(length, self.size)
            return self.read(self.size - length, length)
        key = (self.io.key, self.path)
        if self._size is None and hasattr(self.io.fs, "_call_s3"):
            size, tail = self.io.tails.fetch(key, None, lambda: self._s3_suffix(length))
        else:
            size = self.size
            size, tail = self.io.tails.fetch(key, size, lambda: (size, self._fetch([(size - min(length, size), size)])[0]))
        self._size = size
        n = min(length, size)
        if len(tail) < n:       # a shorter tail was cached: read this one
            tail = self._fetch([(size - n, size)])[0]
            self.io.tails.put(key, size, tail)
        view = memoryview(tail)[len(tail) - n:]
        self._hold(size - n, view)
        return view

    def _s3_suffix(self, length: int) -> tuple[int, bytes]:
        """(file size, last ``length`` bytes) in one GET with a suffix range (s3fs)."""
        from fsspec.asyn import sync
        fs = self.io.fs
        self.requests += 1
        got: tuple[int, bytes] = sync(fs.loop, retry.call_async, lambda: s3_get(fs, self.path, f"bytes=-{length}"),
                                      self.path, self.io.retry)
        return got

    def prefetch(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Start fetching the (offset, length) ``ranges`` that later reads will ask for (remote files;
        see prefetch.py). Ranges held already (the tail) are left out."""
        if self.io.is_local:
            return
        self.io.prefetcher.plan(self.path, self.size, [(o, n) for o, n in ranges if self._from_held(o, n) is None])

    def _hold(self, offset: int, data: bytes | memoryview) -> None:
        with self._lock:
            self._held.append((offset, data))

    def _from_held(self, off: int, ln: int) -> memoryview | None:
        for base, data in self._held:
            if base <= off and off + ln <= base + len(data):
                return memoryview(data)[off - base: off - base + ln]
        return None

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview | bytes]:
        """Bytes of each (offset, length); neighbouring ranges are fetched together."""
        if not ranges:
            return []
        if self.io.is_local:
            view = self._local_map()
            self.requests += 1
            bad = _outside(ranges, len(view))
            if bad is not None:
                off, ln = bad
                raise CorruptFileError(
                    f"{self.path}: byte range [{off}, {off + ln}) is outside the file ({len(view)} bytes)")
            advise_served(self._mmap, self.path, ranges, self._advised)
            _state.slot("mapped_pages", _ResidentPages).served(self._mmap, ranges)
            return [view[off:off + ln] for off, ln in ranges]
        out: list[memoryview | bytes | None] = [self._from_held(off, ln) if self._held else None
                                                 for off, ln in ranges]
        if any(got is None for got in out):
            asked = [r for r, got in zip(ranges, out) if got is None]
            planned = self.io.prefetcher.take(self.path, asked)
            for (off, ln), got in zip(asked, planned):
                if got is not None and ln <= HELD_PREFETCHED and self._held_bytes + ln <= HELD_BYTES:
                    self._held_bytes += ln
                    self._hold(off, bytes(got))
            it = iter(planned)
            out = [got if got is not None else next(it) for got in out]
        missing = [r for r, got in zip(ranges, out) if got is None]
        if not missing:
            return cast("list[memoryview | bytes]", out)   # every range served
        merged = coalesce(missing, self.io.coalesce_gap)
        blobs = self._fetch(merged)
        for k, (off, ln) in enumerate(ranges):
            if out[k] is not None:
                continue
            i = _find(merged, off)
            base = merged[i][0]
            chunk = memoryview(blobs[i])[off - base: off - base + ln]
            if len(chunk) != ln:
                raise CorruptFileError(f"{self.path}: byte range [{off}, {off + ln}) is outside the file")
            out[k] = chunk
        for (s, e), blob in zip(merged, blobs):
            if e - s <= SMALL_READ and self._held_bytes + e - s <= HELD_BYTES:
                self._held_bytes += e - s
                self._hold(s, blob)
        return cast("list[memoryview | bytes]", out)   # the missing ones filled in above

    def _fetch(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """Bytes of each [start, end) span, all requests issued together."""
        self.requests += len(spans)
        size = self._size
        if size is not None:
            for s, e in spans:
                if e > size:
                    raise CorruptFileError(f"{self.path}: byte range [{s}, {e}) is outside the file ({size} bytes)")
        return self.io.get([(self.path, s, e) for s, e in spans], exact=size is not None)

    def close(self) -> None:
        with self._lock:
            self._held = []
            if self._mmap is not None:
                try:
                    self._mmap.close()
                except BufferError:
                    pass  # arrays still view it; let GC close it
                self._mmap = None


def advise_served(mm: mmap.mmap | None, path: str, ranges: Sequence[tuple[int, int]],
                  advised: set[tuple[int, int]]) -> None:
    """Read ahead the pages of ``ranges`` (offset, length) of ``mm``: one ``MADV_WILLNEED`` per span
    of neighbouring ranges, except spans in ``advised`` (read ahead before: a repeated query makes no
    call; the set is emptied past ``ADVISED_SPANS``). Traced as ``io:advise`` ``("willneed", path, bytes)``."""
    if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_WILLNEED"):
        return
    page = mmap.PAGESIZE
    for s, e in coalesce([(o, n) for o, n in ranges if n > 0], 0):
        s -= s % page
        if (s, e) not in advised:
            if len(advised) >= ADVISED_SPANS:
                advised.clear()
            advised.add((s, e))
            try:
                mm.madvise(mmap.MADV_WILLNEED, s, min(e, len(mm)) - s)
            except (ValueError, OSError):   # closed meanwhile
                return
            trace.record("io:advise", ("willneed", path, min(e, len(mm)) - s))


class _ResidentPages:
    """Page spans served from memory maps, least recently served first; released beyond
    ``MAPPED_RESIDENT_BYTES``. A span served again (a repeated query over the same pages) moves
    to the end instead of counting twice: pages about to be read are not released and faulted
    in again, and a repeated scan of a table within the budget makes no ``madvise`` call."""

    def __init__(self) -> None:
        # (mmap id, start, length) -> (weakref to the mmap, start, length)
        self._spans: OrderedDict[tuple[int, int, int], _Span] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def served(self, mm: mmap.mmap | None, ranges: Sequence[tuple[int, int]]) -> None:
        if mm is None or not hasattr(mm, "madvise"):
            return
        new = _page_spans(ranges, mmap.PAGESIZE)
        with self._lock:
            released = self._note(mm, new)
        for ref, s, n in released:
            m = ref()
            if m is not None:
                try:
                    m.madvise(mmap.MADV_DONTNEED, s, n)
                except (ValueError, OSError):   # closed meanwhile
                    pass

    def _note(self, mm: mmap.mmap, new: list[tuple[int, int]]) -> list[_Span]:
        """Record the spans ``new`` of ``mm`` as the most recent; the spans to release."""
        spans = self._spans
        ref = None
        for s, n in new:
            key = (id(mm), s, n)
            span = spans.get(key)
            if span is not None and span[0]() is mm:
                spans.move_to_end(key)
                continue
            if span is not None:                 # an id reused by a new map
                self._total -= span[2]
            ref = ref or weakref.ref(mm)
            spans[key] = (ref, s, n)
            self._total += n
        released: list[_Span] = []
        # only spans of earlier reads go: the caller has not looked at these pages yet
        while self._total > MAPPED_RESIDENT_BYTES and len(spans) > len(new):
            _, span = spans.popitem(last=False)
            self._total -= span[2]
            released.append(span)
        return released



class _TailCache:
    """Tails (or whole bytes) of immutable remote files: (file size, bytes) in a
    :class:`~lance_duck._state.ByteLRU` keyed by (store, path), checked against the size when it is
    known; and the fetches of them under way (single flight): a reader of a file whose tail is being
    fetched waits for that request -- and shares its failure -- instead of sending its own."""

    def __init__(self, lru: ByteLRU[TailKey, tuple[int, bytes]]):
        self._lru = lru

    def claim(self, key: TailKey, size: int | None) -> Future[Any] | None:
        """A Future the caller must :meth:`settle` when it is to fetch ``key`` (neither cached with
        this size nor being fetched); None otherwise."""
        return self._lru.claim(key, lambda hit: size in (None, hit[0]))

    def settle(self, key: TailKey, flight: Future[Any], got: tuple[int, bytes] | None,
               error: BaseException | None = None) -> None:
        """End the fetch ``flight`` of ``key`` with (size, bytes), or with ``error``."""
        if got is not None:
            self.put(key, *got)
        self._lru.settle(key, flight, got, error)

    def get(self, key: TailKey, size: int | None) -> tuple[int, bytes] | None:
        """(size, bytes) of ``key`` if cached with this size (any when None), after the fetch under
        way, if any, ended (its error raised)."""
        flight = self._lru.flight(key)
        if flight is not None and wait([flight], PREFETCH_WAIT).done:
            flight.result()
        hit = self._lru.get(key)
        return hit if hit is not None and size in (None, hit[0]) else None

    def fetch(self, key: TailKey, size: int | None, fetch: Callable[[], tuple[int, bytes]]) -> tuple[int, bytes]:
        """(size, bytes) of ``key``: cached, or the result of a fetch under way, or ``fetch()``
        run by this caller while others asking for ``key`` wait for it."""
        hit = self.get(key, size)
        if hit is not None:
            return hit
        flight = self.claim(key, size)
        if flight is None:      # another fetch began meanwhile (or one outlasted PREFETCH_WAIT)
            hit = self.get(key, size)
            if hit is None:
                hit = fetch()
                self.put(key, *hit)
            return hit
        try:
            got = fetch()
        except BaseException as exc:
            self.settle(key, flight, None, exc)
            raise
        self.settle(key, flight, got)
        return got

    def put(self, key: TailKey, size: int, tail: bytes | memoryview) -> None:
        tail = bytes(tail)
        self._lru.put(key, (size, tail), len(tail))

    def resize(self, limit: int) -> None:
        """Keep at most ``limit`` bytes from now on (what no longer fits goes at once)."""
        self._lru.resize(limit)

    @property
    def nbytes(self) -> int:
        return self._lru.nbytes

    def clear(self) -> None:
        self._lru.clear()


def _settle_tail(cache: _TailCache, key: TailKey, size: int, flight: Future[Any], fetched: Future[bytes]) -> None:
    """End the tail ``cache``'s ``flight`` of ``key`` with the outcome of the request ``fetched``."""
    error = None if fetched.cancelled() else fetched.exception()
    cache.settle(key, flight, None if fetched.cancelled() or error else (size, fetched.result()), error)


def _sized(data: bytes) -> tuple[int, bytes]:
    return len(data), data


async def s3_get(fs: Any, path: str, byte_range: str) -> tuple[int, bytes]:
    """(object size, body) of one ranged GET through s3fs's client; a body shorter than the
    response's Content-Range says is a :class:`TruncatedResponse`."""
    bucket, key, version = fs.split_path(path)
    kw = {"VersionId": version} if version else {}
    resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, Range=byte_range, **kw)
    try:
        body = await resp["Body"].read()
    finally:
        resp["Body"].close()
    first, _, rest = resp.get("ContentRange", "").removeprefix("bytes ").partition("-")
    last, _, total = rest.partition("/")
    if first.isdigit() and last.isdigit():
        if len(body) != int(last) - int(first) + 1:
            raise TruncatedResponse(f"{path}: {len(body)} of {int(last) - int(first) + 1} bytes ({byte_range})")
        return (int(total) if total.isdigit() else int(last) + 1), body
    return len(body), body     # the whole object (an unsatisfiable range on an empty object is refused)


def _checked(data: bytes, path: str, start: int | None, end: int | None, exact: bool) -> bytes:
    if exact and start is not None and end is not None and len(data) != end - start:
        raise TruncatedResponse(f"{path}: {len(data)} of {end - start} bytes [{start}, {end})")
    return data


def coalesce(ranges: Iterable[tuple[int, int]], gap: int = COALESCE_GAP) -> list[tuple[int, int]]:
    """Merge (offset, length) ranges into sorted [start, end) spans, joining gaps <= ``gap``."""
    spans = sorted((o, o + n) for o, n in ranges)
    merged: list[list[int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


def _outside(ranges: Sequence[tuple[int, int]], size: int) -> tuple[int, int] | None:
    """The first (offset, length) of ``ranges`` not inside ``[0, size)``, or None."""
    if len(ranges) <= 8:
        return next(((o, n) for o, n in ranges if o < 0 or n < 0 or o + n > size), None)
    a = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    bad = np.flatnonzero((a[:, 0] < 0) | (a[:, 1] < 0) | (a[:, 0] + a[:, 1] > size))
    return (int(a[bad[0], 0]), int(a[bad[0], 1])) if bad.size else None


def _page_spans(ranges: Sequence[tuple[int, int]], page: int) -> list[tuple[int, int]]:
    """(start, length) spans of memory-map pages that serve ``ranges``: starts aligned down to
    ``page``, spans joined across gaps of at most ``RESIDENT_GAP`` (a scattered read of thousands
    of chunks is a few spans, each noted and released at once)."""
    if len(ranges) <= 8:
        out: list[list[int]] = []
        for s, e in coalesce(ranges, 0):
            s -= s % page
            if out and s <= out[-1][1] + RESIDENT_GAP:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return [(s, e - s) for s, e in out]
    a = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    a = a[np.argsort(a[:, 0], kind="stable")]
    lo = a[:, 0] - a[:, 0] % page
    hi = np.maximum.accumulate(a[:, 0] + a[:, 1])
    brk = np.flatnonzero(lo[1:] > hi[:-1] + RESIDENT_GAP) + 1
    starts = lo[np.concatenate(([0], brk))]
    ends = hi[np.concatenate((brk - 1, [len(lo) - 1]))]
    return list(zip(starts.tolist(), (ends - starts).tolist()))


def _find(merged: list[tuple[int, int]], off: int) -> int:
    lo, hi = 0, len(merged) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if merged[mid][0] <= off:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _is_async(fs: fsspec.AbstractFileSystem) -> bool:
    if getattr(fs, "async_impl", None) is False:   # told by the class (fsspec's and arrow_s3's)
        return False
    from fsspec.asyn import AsyncFileSystem
    return isinstance(fs, AsyncFileSystem)


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)
