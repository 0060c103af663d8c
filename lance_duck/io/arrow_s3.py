"""``s3://`` through pyarrow's own S3 client (the AWS C++ SDK), for plain storage options.

Opening a table on S3 through s3fs imports aiobotocore, aiohttp and botocore (~0.25 s) and makes a
botocore client on the first request (~0.1 s); pyarrow, which lance_duck imports anyway, has an S3
client of its own that costs ~20 ms to start. :func:`arrow_s3_store` returns one for an ``s3://`` URL
whose storage options pyarrow can express exactly (pylance's keys: an access key and secret, or
``aws_skip_signature``; a region; optionally an ``http(s)://host[:port]`` endpoint, a session token,
virtual-hosted-style requests). Any other option (fsspec arguments, credentials from the environment
or a profile, no region) keeps the s3fs path: nothing that reads through s3fs is refused here.

:class:`ArrowS3` offers the part of fsspec's filesystem interface :class:`~lance_duck.io.fs.FileIO`
uses (listings with sizes, ``info``, ``cat_file`` of a byte range or a whole object). Retries stay
:mod:`lance_duck.io.retry`'s: pyarrow's client tries once, and its errors are translated to the
classes retry.py sorts (``FileNotFoundError``, ``PermissionError``, a transient ``ConnectionError``).

pyarrow opens an object for random access with a HEAD (its size) and has no suffix range: a
``cat_file`` of a range keeps the opened object (path and size) and reads ranges of it without
another HEAD; opened objects are remembered per store (a :class:`~lance_duck._state.ByteLRU` of
:data:`OPEN_FILES` entries, emptied by ``clear_caches``) -- ranges are read of immutable files only
(data and index files). Whole objects (manifests, refs) are opened afresh each time.
"""
from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future
from datetime import datetime
from typing import Any, Callable, TypeVar

import pyarrow.fs as pafs

from .. import _state
from .._state import ByteLRU
from .retry import TruncatedResponse

T = TypeVar("T")

#: objects opened for ranges each store remembers (path -> opened file, its size known)
OPEN_FILES = 4096

_TRUE = {"1", "true", "yes", "on"}

#: pylance storage keys this client takes: key -> the S3FileSystem argument (None: decides nothing)
_KEYS: dict[str, str | None] = {
    "aws_access_key_id": "access_key", "access_key_id": "access_key",
    "aws_secret_access_key": "secret_key", "secret_access_key": "secret_key",
    "aws_session_token": "session_token", "session_token": "session_token", "aws_token": "session_token",
    "aws_region": "region", "region": "region", "aws_default_region": "region",
    "aws_endpoint": "endpoint", "aws_endpoint_url": "endpoint", "endpoint": "endpoint",
    "aws_allow_http": None, "allow_http": None,
    "aws_skip_signature": "anonymous", "skip_signature": "anonymous",
    "aws_virtual_hosted_style_request": "force_virtual_addressing",
    "virtual_hosted_style_request": "force_virtual_addressing",
}

# Parts of pyarrow's S3 error messages ("AWS Error ACCESS_DENIED during HeadObject operation: ...").
_DENIED = ("ACCESS_DENIED", "AccessDenied", "HTTP status 403", "SIGNATURE_DOES_NOT_MATCH", "INVALID_ACCESS_KEY_ID")
_MISSING = ("NO_SUCH_KEY", "NoSuchKey", "NO_SUCH_BUCKET", "NoSuchBucket", "RESOURCE_NOT_FOUND", "HTTP status 404")
_TRANSIENT = ("SLOW_DOWN", "SlowDown", "THROTTLING", "SERVICE_UNAVAILABLE", "INTERNAL_FAILURE", "REQUEST_TIMEOUT",
              "NETWORK_CONNECTION", "REQUEST_TIME_TOO_SKEWED", "curlCode", "HTTP status 5", "HTTP status 429",
              "HTTP status 408", "Connection reset", "connection", "Timeout", "timed out", "Couldn't",
              "Unexpected end of file", "Transfer closed")


class TransientStoreError(ConnectionError):
    """A request pyarrow's S3 client reported as failed in a way trying again may fix."""


def _truthy(v: Any) -> bool:
    return v is True or str(v).strip().lower() in _TRUE


def arrow_s3_store(uri: str, options: dict[str, Any]) -> "ArrowS3 | None":
    """The process's :class:`ArrowS3` for ``uri`` and its (pylance-style) ``options``, or None when
    the URL is not ``s3://`` / ``s3a://`` or the options need s3fs."""
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme not in ("s3", "s3a"):
        return None
    args = _arguments(options)
    if args is None or not _available():
        return None
    token = hashlib.sha256(repr(sorted(args.items())).encode()).hexdigest()[:32]
    stores: dict[str, ArrowS3] = _state.slot("arrow_s3_stores", dict)
    got = stores.get(token)
    if got is None:
        got = stores.setdefault(token, ArrowS3(args, token))
    return got


def _available() -> bool:
    """Whether this pyarrow has its S3 client (builds without it raise ImportError when asked for it)."""
    try:
        return pafs.S3FileSystem is not None and pafs.AwsStandardS3RetryStrategy is not None
    except (ImportError, AttributeError):
        return False


def _arguments(options: dict[str, Any]) -> dict[str, Any] | None:
    """pyarrow ``S3FileSystem`` arguments saying exactly what ``options`` say, or None."""
    given: dict[str, Any] = {}
    for key, value in options.items():
        k = str(key).lower()
        if k not in _KEYS:
            return None
        arg = _KEYS[k]
        if arg is not None:
            if arg in given and given[arg] != value:
                return None
            given[arg] = value
    anonymous = _truthy(given.pop("anonymous", False))
    keyed = "access_key" in given and "secret_key" in given
    if anonymous == keyed or (anonymous and "session_token" in given) or not given.get("region"):
        return None             # credentials from the environment or a profile, or no region: s3fs
    args: dict[str, Any] = {"region": str(given.pop("region"))}
    if anonymous:
        args["anonymous"] = True
    for k in ("access_key", "secret_key", "session_token"):
        if k in given:
            args[k] = str(given.pop(k))
    if _truthy(given.pop("force_virtual_addressing", False)):
        args["force_virtual_addressing"] = True
    endpoint = given.pop("endpoint", None)
    if endpoint:
        scheme, sep, rest = str(endpoint).partition("://")
        if not sep or scheme.lower() not in ("http", "https") or not rest.rstrip("/") or "/" in rest.rstrip("/"):
            return None         # no scheme, or a path after the host: left to s3fs
        args["scheme"] = scheme.lower()
        args["endpoint_override"] = rest.rstrip("/")
    return args


def _translated(exc: Exception, path: str) -> Exception:
    """pyarrow's error for a request on ``path`` as retry.py sorts errors."""
    if isinstance(exc, (FileNotFoundError, PermissionError, ConnectionError, TimeoutError)):
        return exc
    if not isinstance(exc, OSError):
        return exc
    msg = str(exc)
    if any(m in msg for m in _DENIED):     # retry.py's errors name the object
        return PermissionError(msg)
    if any(m in msg for m in _MISSING):
        return FileNotFoundError(f"No such file: {path}")
    if any(m in msg for m in _TRANSIENT):
        return TransientStoreError(f"{path}: {msg}")
    return exc


def _info(fi: pafs.FileInfo) -> dict[str, Any]:
    """An fsspec-style description of a pyarrow ``FileInfo``."""
    directory = fi.type == pafs.FileType.Directory
    out: dict[str, Any] = {"name": fi.path, "size": None if directory else fi.size,
                           "type": "directory" if directory else "file"}
    if isinstance(fi.mtime, datetime):
        out["mtime"] = fi.mtime
    return out


class ArrowS3:
    """One S3 store (region, credentials, endpoint) read through pyarrow, with fsspec's method names.

    Not made directly: :func:`arrow_s3_store` keeps one per set of options.
    """

    protocol = ("s3", "s3a")
    async_impl = False

    def __init__(self, args: dict[str, Any], token: str):
        self._fs = pafs.S3FileSystem(**args, retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1))
        self._fs_token_ = "arrow:" + token
        self._open: ByteLRU[str, Any] = ByteLRU(OPEN_FILES, entries=True)
        self._opening: dict[str, Future[Any]] = {}     # path -> its opening under way
        self._opening_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ArrowS3({self._fs.region!r})"

    @staticmethod
    def _strip_protocol(path: str) -> str:
        for prefix in ("s3://", "s3a://"):
            if path[:len(prefix)].lower() == prefix:
                path = path[len(prefix):]
                break
        return path.rstrip("/")

    def _run(self, path: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - translated, then raised
            err = _translated(exc, path)
            if err is exc:
                raise
            raise err from exc

    # -- listings and descriptions -------------------------------------------------------------
    def ls(self, path: str, detail: bool = True) -> list[Any]:
        """Entries of directory ``path`` (dicts with name / size / type, or names); [] if there are none."""
        path = self._strip_protocol(path)
        infos = self._run(path, lambda: self._fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))
        return [_info(fi) if detail else fi.path for fi in infos]

    def find(self, path: str, detail: bool = True) -> Any:
        """Every file under ``path``, recursively: {name: description} (``detail``) or names."""
        path = self._strip_protocol(path)
        infos = self._run(path, lambda: self._fs.get_file_info(
            pafs.FileSelector(path, recursive=True, allow_not_found=True)))
        files = {fi.path: _info(fi) for fi in infos if fi.type == pafs.FileType.File}
        return files if detail else sorted(files)

    def info(self, path: str) -> dict[str, Any]:
        path = self._strip_protocol(path)
        fi = self._run(path, lambda: self._fs.get_file_info(path))
        if fi.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"No such file: {path}")
        return _info(fi)

    def isdir(self, path: str) -> bool:
        path = self._strip_protocol(path)
        return bool(self._run(path, lambda: self._fs.get_file_info(path)).type == pafs.FileType.Directory)

    def exists(self, path: str) -> bool:
        path = self._strip_protocol(path)
        return bool(self._run(path, lambda: self._fs.get_file_info(path)).type != pafs.FileType.NotFound)

    def invalidate_cache(self, path: str | None = None) -> None:
        """Nothing to do: listings are never cached here."""

    # -- bytes ---------------------------------------------------------------------------------
    def _opened(self, path: str, again: bool = False) -> Any:
        """``path`` opened for random access (one HEAD the first time, or ``again``), remembered.

        Tasks asking for one path while it is being opened wait for that opening and share its
        outcome, the file or the error: one HEAD per file, also when the HEAD fails.
        """
        if not again:
            f = self._open.get(path)
            if f is not None:
                return f
        with self._opening_lock:
            under_way = self._opening.get(path)
            if under_way is None:
                f = None if again else self._open.get(path)     # opened while this task waited
                if f is not None:
                    return f
                pending: Future[Any] = Future()
                self._opening[path] = pending
        if under_way is not None:
            return under_way.result()
        try:
            f = self._run(path, lambda: self._fs.open_input_file(path))
            self._open.put(path, f, 1)
            pending.set_result(f)
            return f
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        finally:
            with self._opening_lock:
                del self._opening[path]

    def size(self, path: str) -> int:
        """Size of object ``path`` in bytes (from its opening: later range reads need no HEAD)."""
        path = self._strip_protocol(path)
        return int(self._opened(path).size())

    def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes [start, end) of object ``path`` (the whole object when neither is given; ``end``
        past the object: up to its end)."""
        path = self._strip_protocol(path)
        if start is None and end is None:       # opened afresh: a whole object may be one that changes
            f = self._run(path, lambda: self._fs.open_input_file(path))
            try:
                return self._read(f, path, 0, int(f.size()))
            finally:
                f.close()
        f = self._opened(path)
        size = int(f.size())
        if end is not None and end > size:      # past the end of the object as opened: replaced since?
            f = self._opened(path, again=True)
            size = int(f.size())
        lo = start or 0
        hi = size if end is None else end
        lo, hi = (size + lo if lo < 0 else lo), (size + hi if hi < 0 else hi)
        lo, hi = max(0, min(lo, size)), max(0, min(hi, size))
        return self._read(f, path, lo, hi)

    def _read(self, f: Any, path: str, lo: int, hi: int) -> bytes:
        """Bytes [lo, hi) of opened object ``f`` (inside it); a shorter body is a truncated response."""
        if hi <= lo:
            return b""
        data = bytes(self._run(path, lambda: f.read_at(hi - lo, lo)))
        if len(data) != hi - lo:
            raise TruncatedResponse(f"{path}: {len(data)} of {hi - lo} bytes [{lo}, {hi})")
        return data
