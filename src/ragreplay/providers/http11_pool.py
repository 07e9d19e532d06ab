"""A keep-alive pool of HTTP/1.1 connections for the OpenAI-compatible provider (the default client).

:class:`HttpPool` is made outside any event loop and opens, in each loop that uses it, a :class:`LoopPool` of at
most ``max_connections`` connections (one request on a connection at a time; idle ones are kept for the next
request to the same host). A request has ``timeout_s`` in all, waiting for a free connection, connecting (TLS
included for ``https``) and reading the whole reply. Errors: :class:`TimeoutError`;
:class:`~ragreplay.providers.http11.HttpConnectionError` for a refused, dropped or garbled connection (a pooled
connection the server closed meanwhile included: it is not sent again, the caller's retry policy decides);
:class:`~ragreplay.providers.http11.ReplyTooLargeError` for a reply over ``max_reply_bytes``.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from ragreplay.providers.http11 import MAX_REPLY_BYTES, Connection, HttpConnectionError, HttpReply
from ragreplay.providers.loop_guard import guard, retire

_DEFAULT_PORTS = {"http": 80, "https": 443}
_FORBIDDEN_IN_HEADERS = ("\r", "\n", "\0")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where connections go: scheme, host and port."""

    scheme: str
    host: str
    port: int


class PostTarget:
    """A URL and its fixed headers, turned once into the bytes that start every POST to it.

    Raises :class:`ValueError` for a URL that is not ``http(s)://host...`` or a header holding a line break.
    """

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        parts = urlsplit(url)
        default_port = _DEFAULT_PORTS.get(parts.scheme)
        if default_port is None or not parts.hostname:
            raise ValueError(f"{url!r} is not an http:// or https:// URL with a host")
        port = parts.port or default_port
        self.origin = Origin(parts.scheme, parts.hostname, port)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        if port != default_port:
            host = f"{host}:{port}"
        path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        if parts.query:
            path = f"{path}?{parts.query}"
        fields = {
            "Host": host,
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",
            "User-Agent": "ragreplay",
        }
        given = {name.lower() for name in headers}
        fields = {name: value for name, value in fields.items() if name.lower() not in given}
        fields.update(headers)
        for name, value in fields.items():
            if not name or any(c in name or c in value for c in _FORBIDDEN_IN_HEADERS) or ":" in name:
                raise ValueError(f"header {name!r} holds a line break, a NUL or a colon in its name")
        lines = [f"POST {path} HTTP/1.1", *(f"{name}: {value}" for name, value in fields.items())]
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("utf-8")

    def request(self, body: bytes) -> bytes:
        """The whole request carrying ``body``."""
        return b"%s%d\r\n\r\n%s" % (self._head, len(body), body)


class Slots:
    """At most ``size`` holders at once, waiters served first come, first served: a semaphore whose free path
    costs an integer compare (asyncio's ``Semaphore.locked`` walks its waiters on every acquire)."""

    def __init__(self, size: int) -> None:
        self.free = size
        self.waiters: deque[asyncio.Future[None]] = deque()

    async def wait(self, deadline: float) -> None:
        """Take a slot, waiting until ``deadline`` (loop time) at most; call when none is free."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            async with asyncio.timeout_at(deadline):
                await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # handed a slot as it gave up: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter still waiting, else to the free count."""
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


class LoopPool:
    """The connections of one event loop: at most ``max_connections``, idle ones kept per origin."""

    def __init__(
        self, timeout_s: float, max_connections: int, max_reply_bytes: int, tls: ssl.SSLContext | None = None
    ) -> None:
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.max_reply_bytes = max_reply_bytes
        self.closed = False
        self._loop = asyncio.get_running_loop()
        self._slots = Slots(max_connections)
        self._idle: dict[Origin, list[Connection]] = {}
        self._open: set[Connection] = set()
        self._ssl = tls

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop these connections belong to."""
        return self._loop

    @property
    def open_connections(self) -> int:
        """How many connections are open, idle or busy."""
        return len(self._open)

    async def post(self, target: PostTarget, body: bytes, timeout_s: float | None = None) -> HttpReply:
        """POST ``body`` to ``target`` on an idle connection or a new one, within ``timeout_s`` (by default the
        pool's)."""
        loop = self._loop
        deadline = loop.time() + (self.timeout_s if timeout_s is None else timeout_s)
        slots = self._slots
        if slots.free > 0 and not slots.waiters:
            slots.free -= 1
        else:
            await slots.wait(deadline)
        try:
            origin = target.origin
            conn = self._idle_connection(origin) or await self._connect(origin, deadline)
            try:
                reply = await conn.exchange(target.request(body), deadline)
            except BaseException:
                self._drop(conn)
                raise
            if conn.reusable and not self.closed:
                self._idle.setdefault(origin, []).append(conn)
            else:
                self._drop(conn)
            return reply
        finally:
            slots.release()

    def _idle_connection(self, origin: Origin) -> Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
            self._open.discard(conn)  # the server closed it while it waited
        return None

    async def _connect(self, origin: Origin, deadline: float) -> Connection:
        if len(self._open) >= self.max_connections:
            self._drop_an_idle_connection()
        tls = self._tls() if origin.scheme == "https" else None
        try:
            async with asyncio.timeout_at(deadline):
                _, conn = await self._loop.create_connection(
                    lambda: Connection(self.max_reply_bytes),
                    origin.host,
                    origin.port,
                    ssl=tls,
                    server_hostname=origin.host if tls is not None else None,
                )
        except OSError as exc:  # refused, unknown host, TLS failures (ssl.SSLError is an OSError)
            raise HttpConnectionError(
                f"cannot connect to {origin.host}:{origin.port} ({type(exc).__name__}: {exc})"
            ) from exc
        self._open.add(conn)
        return conn

    def _tls(self) -> ssl.SSLContext:
        if self._ssl is None:  # loading the system's CA certificates takes milliseconds: once per pool
            self._ssl = ssl.create_default_context()
        return self._ssl

    def _drop(self, conn: Connection) -> None:
        conn.close()
        self._open.discard(conn)

    def _drop_an_idle_connection(self) -> None:
        for idle in self._idle.values():
            if idle:
                self._drop(idle.pop(0))
                return

    async def close(self) -> None:
        """Close every connection (a request in flight fails as dropped)."""
        self.closed = True
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        if not self._loop.is_closed():
            await asyncio.sleep(0)  # let the transports finish closing their sockets


class HttpPool:
    """One pool per provider, made without an event loop; each loop that uses it gets its own connections.

    The same life cycle as the aiohttp client's ``LazySession``: :meth:`get` opens the running loop's
    :class:`LoopPool` (and retires one of an earlier loop), ``asyncio.run`` closes it as its loop shuts down if
    :meth:`aclose` was not called, and a pool closed by :meth:`aclose` opens again on the next request.
    ``tls`` is the TLS context for ``https`` (by default the system's CAs, loaded on the first such request).
    """

    def __init__(
        self,
        timeout_s: float = 60.0,
        max_connections: int = 8,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        *,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.max_reply_bytes = max_reply_bytes
        self.tls = tls
        self._pool: LoopPool | None = None
        self._guard: AsyncGenerator[None, None] | None = None

    @property
    def closed(self) -> bool:
        """True while no open pool is held (before first use and after :meth:`aclose`)."""
        return self._pool is None or self._pool.closed

    async def get(self) -> LoopPool:
        """The running loop's open pool, opened (or re-opened for a new loop) when needed."""
        pool = self._pool
        if pool is not None and not pool.closed and pool.loop is asyncio.get_running_loop():
            return pool
        stale = self._guard, pool.loop if pool is not None else None
        # Nothing is awaited before the new pool is stored, so concurrent first calls share it.
        self._pool = pool = LoopPool(self.timeout_s, self.max_connections, self.max_reply_bytes, self.tls)
        self._guard = await guard(pool)
        await retire(*stale)
        return pool

    async def post(self, target: PostTarget, body: bytes, timeout_s: float | None = None) -> HttpReply:
        """POST ``body`` to ``target`` on the running loop's pool (see :meth:`LoopPool.post`)."""
        pool = self._pool
        if pool is None or pool.closed or pool.loop is not asyncio.get_running_loop():
            pool = await self.get()
        return await pool.post(target, body, timeout_s)

    async def aclose(self) -> None:
        """Close the pool's connections; a later request opens new ones."""
        stale = self._guard, self._pool.loop if self._pool is not None else None
        self._pool = self._guard = None
        await retire(*stale)
