"""A loopback HTTP proxy in front of a local S3 endpoint: delays and counts every request.

Used by the request-count tests and by ``bench/object_store.py``. It listens on 127.0.0.1 only,
forwards each HTTP/1.1 request of a client connection to the upstream endpoint after ``latency``
seconds, and records per request method (GET / HEAD / PUT / LIST = GET with a ``list-type``
query), bytes returned to the client, and the peak number of requests in flight (a request is in
flight from the moment its headers arrive until the first bytes of its response come back).

Faults can be injected (:meth:`LatencyProxy.fail`): the next ``times`` requests whose path contains
a string get an S3 error (403 AccessDenied, 404 NoSuchKey, 503 SlowDown) instead of the upstream's
answer, or the upstream's answer cut short: ``reset`` sends the headers and half the body, then
drops the connection; ``truncate`` sends half the body under a Content-Length saying so.
"""
from __future__ import annotations

import asyncio
import threading
from collections import Counter
from dataclasses import dataclass, field

ERRORS = {"403": (403, "Forbidden", "AccessDenied", "Access Denied"),
          "404": (404, "Not Found", "NoSuchKey", "The specified key does not exist."),
          "503": (503, "Slow Down", "SlowDown", "Please reduce your request rate.")}
FAULTS = (*ERRORS, "reset", "truncate")

MAX_HEADER = 64 * 1024


@dataclass
class Stats:
    requests: Counter = field(default_factory=Counter)
    paths: list = field(default_factory=list)      # (kind, path, range header or None)
    bytes_out: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0

    def total(self) -> int:
        return sum(self.requests.values())

    def summary(self) -> str:
        kinds = " + ".join(f"{n} {k}" for k, n in sorted(self.requests.items()))
        return kinds or "0"


class LatencyProxy:
    """``with LatencyProxy(upstream_host, upstream_port, latency=0.02) as p: p.url``."""

    def __init__(self, upstream_host: str, upstream_port: int, latency: float = 0.02, max_connections: int = 256):
        self.upstream = (upstream_host, upstream_port)
        self.latency = latency
        self.stats = Stats()
        self._lock = threading.Lock()
        self._sem_size = max_connections
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self._faults: list[list] = []     # [kind, remaining, path substring, method]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> Stats:
        """Return the stats so far and start counting afresh."""
        with self._lock:
            old, self.stats = self.stats, Stats()
        return old

    def fail(self, kind: str, times: int = 1, path: str = "", method: str = "GET") -> None:
        """The next ``times`` ``method`` requests whose path contains ``path`` fail with ``kind``."""
        assert kind in FAULTS, kind
        with self._lock:
            self._faults.append([kind, times, path, method])

    def pending_faults(self) -> int:
        """Injected faults not yet served."""
        with self._lock:
            return sum(f[1] for f in self._faults)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _fault_for(self, method: str, target: str) -> str | None:
        with self._lock:
            for f in self._faults:
                if f[1] > 0 and f[3] == method and f[2] in target:
                    f[1] -= 1
                    return f[0]
        return None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "LatencyProxy":
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._sem = asyncio.Semaphore(self._sem_size)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._client, "127.0.0.1", 0, limit=MAX_HEADER))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True, name="latency-proxy")
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return

        async def close() -> None:
            self._server.close()
            # the connections still open end here, not when the loop is gone (no task left pending)
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = None

    def __enter__(self) -> "LatencyProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- forwarding --------------------------------------------------------------------------
    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with self._sem:
            try:
                up_r, up_w = await asyncio.open_connection(*self.upstream, limit=MAX_HEADER)
            except OSError:
                writer.close()
                return
            waiting = [0]   # requests of this connection whose response has not started

            async def responses() -> None:
                try:
                    while True:
                        chunk = await up_r.read(256 * 1024)
                        if not chunk:
                            break
                        with self._lock:
                            self.stats.bytes_out += len(chunk)
                            if waiting[0]:
                                waiting[0] -= 1
                                self.stats.in_flight -= 1
                        writer.write(chunk)
                        await writer.drain()
                except (ConnectionError, asyncio.CancelledError):
                    pass
                finally:
                    writer.close()

            back = asyncio.ensure_future(responses())
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    lines = head.decode("latin-1").split("\r\n")
                    method, target = lines[0].split(" ")[:2]
                    headers = {k.strip().lower(): v.strip() for k, v in
                               (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                    n = int(headers.get("content-length", "0") or 0)
                    kind = "LIST" if method == "GET" and "list-type" in target else method
                    with self._lock:
                        self.stats.requests[kind] += 1
                        self.stats.paths.append((kind, target.split("?")[0], headers.get("range")))
                        self.stats.in_flight += 1
                        waiting[0] += 1
                        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
                    if self.latency:
                        await asyncio.sleep(self.latency)
                    fault = self._fault_for(method, target)
                    if fault is not None:
                        with self._lock:
                            self.stats.in_flight -= 1
                            waiting[0] -= 1
                        if not await self._inject(fault, head, writer):
                            raise ConnectionError("connection dropped by an injected fault")
                        continue
                    up_w.write(head)
                    while n:   # after the head: a client may wait for "100 Continue"
                        chunk = await reader.read(min(n, 256 * 1024))
                        if not chunk:
                            raise ConnectionError("client closed mid-body")
                        up_w.write(chunk)
                        n -= len(chunk)
                    await up_w.drain()
            except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
                pass
            finally:
                with self._lock:
                    self.stats.in_flight -= waiting[0]
                    waiting[0] = 0
                up_w.close()
                await back

    async def _inject(self, kind: str, head: bytes, writer: asyncio.StreamWriter) -> bool:
        """Answer one request with fault ``kind``; False if the client connection was dropped."""
        if kind in ERRORS:
            status, reason, code, message = ERRORS[kind]
            body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                    f"<Message>{message}</Message></Error>").encode()
            writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
            return True
        r, w = await asyncio.open_connection(*self.upstream, limit=MAX_HEADER)
        try:
            w.write(head)
            await w.drain()
            resp_head = await r.readuntil(b"\r\n\r\n")
            lines = resp_head.decode("latin-1").split("\r\n")
            n = 0
            for ln in lines[1:]:
                if ln.lower().startswith("content-length:"):
                    n = int(ln.split(":", 1)[1])
            body = await r.readexactly(n)
        finally:
            w.close()
        half = body[: len(body) // 2]
        if kind == "truncate":
            lines = [f"Content-Length: {len(half)}" if ln.lower().startswith("content-length:") else ln
                     for ln in lines]
            writer.write("\r\n".join(lines).encode("latin-1") + half)
            await writer.drain()
            return True
        writer.write(resp_head + half)      # reset: headers and half the body, then the connection drops
        await writer.drain()
        writer.transport.abort()
        return False
