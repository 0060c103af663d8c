"""Retries of object-store requests: which failures are transient, a bounded backoff, the errors users see.

One policy for every request a table issues. The S3 client's own retry layers (botocore's and s3fs's)
are switched off by :func:`lance_duck.io.fs.open_io`, so that a throttled or dropped request is tried
``max_retries`` more times here (exponential backoff with jitter, at most ``timeout`` seconds of
waiting in all) and then fails with :class:`~lance_duck.errors.ObjectStoreError` naming the object.
A request either returns all of its bytes or fails: a short body is retried like a dropped connection.
Access denied and missing objects are never retried: they surface as ``PermissionError`` and
``FileNotFoundError`` naming the object.
"""
from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterator, TypeVar

from ..errors import CredentialsError, ObjectStoreError

T = TypeVar("T")

# Error codes and HTTP statuses a store sends when the request may succeed if tried again.
RETRY_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "TooManyRequests", "RequestTimeout",
                         "RequestLimitExceeded", "InternalError", "ServiceUnavailable", "ServerBusy",
                         "OperationTimedOut"})
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Transport failures (connection reset, closed mid-body, timeouts) by class name, so that
# botocore / aiohttp / requests need not be importable.
TRANSIENT_CLASSES = frozenset({
    "ClientPayloadError", "ClientConnectionError", "ServerDisconnectedError", "ClientOSError",
    "ServerTimeoutError", "HTTPClientError", "ConnectionClosedError", "ReadTimeoutError",
    "ResponseStreamingError", "EndpointConnectionError", "ConnectTimeoutError", "IncompleteRead",
    "IncompleteReadError", "ResponseParserError", "FSTimeoutError", "ChunkedEncodingError", "ProtocolError",
})


class TruncatedResponse(Exception):
    """A response body shorter than the bytes asked for."""


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` tries after the first, waiting ``base_delay * 2**n`` (jittered, capped at
    ``max_delay``) before try ``n + 1``, and never more than ``timeout`` seconds in all."""

    max_retries: int = 5
    base_delay: float = 0.05
    max_delay: float = 1.0
    timeout: float = 30.0

    def delays(self) -> Iterator[float]:
        for n in range(self.max_retries):
            yield min(self.max_delay, self.base_delay * 2 ** n) * (0.5 + random.random() / 2)


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < 8:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _async_timeouts() -> tuple[type[BaseException], ...]:
    """asyncio's TimeoutError (builtin TimeoutError from Python 3.11), once asyncio is loaded: none sooner."""
    aio = sys.modules.get("asyncio")
    return () if aio is None else (aio.TimeoutError,)


def is_transient(exc: BaseException) -> bool:
    """True for throttling, 5xx, dropped connections, timeouts and truncated bodies."""
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return False
    for e in _chain(exc):
        if isinstance(e, (TruncatedResponse, ConnectionError, TimeoutError, *_async_timeouts())):
            return True
        if TRANSIENT_CLASSES.intersection(c.__name__ for c in type(e).__mro__):
            return True
        resp = getattr(e, "response", None)
        if isinstance(resp, dict):
            code = (resp.get("Error") or {}).get("Code")
            status = (resp.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if code in RETRY_CODES or status in RETRY_STATUS:
                return True
        if getattr(e, "code", None) in RETRY_STATUS or getattr(e, "status", None) in RETRY_STATUS:
            return True
    return False


# A client that found no credentials to sign with (botocore's and google-auth's class names).
CREDENTIAL_CLASSES = frozenset({"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                                "NoAuthTokenError", "DefaultCredentialsError", "ClientAuthenticationError"})

CREDENTIAL_FIX = {
    "s3": "give them as storage_options (aws_access_key_id, aws_secret_access_key, aws_session_token, aws_region; "
          "aws_endpoint for an S3-compatible store; on the CLI --storage-option KEY=VALUE) or the usual "
          "environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE); for a public bucket "
          "storage_options={'anon': 'true'}",
    "gs": "give them as storage_options (google_service_account / token) or GOOGLE_APPLICATION_CREDENTIALS",
    "az": "give them as storage_options (account_name with account_key or sas_token) or the AZURE_STORAGE_* "
          "environment",
}


def _credentials_cause(exc: BaseException) -> BaseException | None:
    for e in _chain(exc):
        if CREDENTIAL_CLASSES.intersection(c.__name__ for c in type(e).__mro__):
            return e
    return None


def missing_credentials(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) says the client had no credentials to sign with."""
    return _credentials_cause(exc) is not None


def credentials_error(exc: BaseException, what: str) -> CredentialsError:
    """The error naming ``what`` (as a URL) and how to give credentials for its store (told by the client)."""
    cause = _credentials_cause(exc) or exc
    module = type(cause).__module__
    store = "gs" if module.startswith("google") else "az" if module.startswith("azure") else "s3"
    url = what if "://" in what else f"{store}://{what.lstrip('/')}"
    return CredentialsError(f"{url}: no credentials for the object store ({type(cause).__name__}: {cause}); "
                            f"{CREDENTIAL_FIX[store]}")


def store_error(exc: BaseException, what: str, tries: int) -> BaseException:
    """The error a user sees for a request on object ``what`` that failed with ``exc``."""
    if missing_credentials(exc):
        return credentials_error(exc, what)
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(f"No such file: {what}")
    if isinstance(exc, PermissionError):
        return PermissionError(f"Access denied to {what}: {exc}")
    if is_transient(exc):
        return ObjectStoreError(f"{what}: request failed after {tries} tries "
                                f"({type(exc).__name__}: {exc or 'no detail'})")
    return exc


def _wait_or_raise(exc: Exception, delays: Iterator[float], deadline: float, what: str, tries: int) -> float:
    """Seconds to wait before trying again; raises the user's error when ``exc`` is final."""
    wait = next(delays, None)
    if is_transient(exc) and wait is not None and time.monotonic() + wait <= deadline:
        return wait
    err = store_error(exc, what, tries)
    if err is exc:
        raise exc
    raise err from exc


def call(fn: Callable[[], T], what: str, policy: RetryPolicy) -> T:
    """``fn()``, retried while it fails transiently (blocking)."""
    deadline, delays = time.monotonic() + policy.timeout, policy.delays()
    tries = 0
    while True:
        tries += 1
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified by _wait_or_raise
            wait = _wait_or_raise(exc, delays, deadline, what, tries)
        time.sleep(wait)


async def call_async(fn: Callable[[], Awaitable[T]], what: str, policy: RetryPolicy) -> T:
    """``await fn()``, retried while it fails transiently (on the filesystem's event loop)."""
    deadline, delays = time.monotonic() + policy.timeout, policy.delays()
    tries = 0
    while True:
        tries += 1
        try:
            return await fn()
        except Exception as exc:  # noqa: BLE001 - classified by _wait_or_raise
            wait = _wait_or_raise(exc, delays, deadline, what, tries)
        import asyncio
        await asyncio.sleep(wait)
