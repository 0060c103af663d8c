"""A loopback HTTP proxy in front of a local S3 endpoint: delays and counts every request.

Used by the request-count tests and by ``bench/object_store.py``. It listens on 127.0.0.1 only,
forwards each HTTP/1.1 request of a client connection to the upstream endpoint after ``latency``
seconds, and records per request method (GET / HEAD / PUT / LIST = GET with a ``list-type``
query), bytes returned to the client, and the peak number of requests in flight (a request is in
flight from the moment its headers arrive until the first bytes of its response come back).
"""
from __future__ import annotations

import asyncio
import threading
from collections import Counter
from dataclasses import dataclass, field

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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> Stats:
        """Return the stats so far and start counting afresh."""
        with self._lock:
            old, self.stats = self.stats, Stats()
        return old

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
