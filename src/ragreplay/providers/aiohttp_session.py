"""The OpenAI-compatible provider's other HTTP client: aiohttp, chosen with ``RAGREPLAY_HTTP_CLIENT=aiohttp``.

The default is :mod:`ragreplay.providers.http11_pool` (about a third of aiohttp's CPU a call). This one is kept
as a fallback and for callers that pass an open :class:`aiohttp.ClientSession`. aiohttp is imported only when
this module is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import aiohttp

from ragreplay.providers.http11 import MAX_REPLY_BYTES, HttpConnectionError, HttpReply, ReplyTooLargeError
from ragreplay.providers.loop_guard import guard, retire

_READ_PIECE = 256 * 1024


class LazySession:
    """One pooled :class:`aiohttp.ClientSession`, made on first use inside the running event loop.

    A ClientSession belongs to the loop it was made in, while models are built outside any loop and one process
    may run several loops (``asyncio.run`` per CLI call). So the session is created by :meth:`get` and made
    again when the running loop is not the one it was made in. Share one instance between the models of one
    provider to share their connection pool. Call :meth:`aclose` before the loop ends; if that is forgotten,
    ``asyncio.run`` still closes the session as its loop shuts down.
    """

    def __init__(self, timeout_s: float = 60.0, max_connections: int = 8) -> None:
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard: AsyncGenerator[None, None] | None = None

    @property
    def closed(self) -> bool:
        """True while no open session is held (before first use and after :meth:`aclose`)."""
        return self._session is None or self._session.closed

    async def get(self) -> aiohttp.ClientSession:
        """The open session of the running loop, created (or re-created for a new loop) when needed."""
        loop = asyncio.get_running_loop()
        session = self._session
        if session is not None and self._loop is loop and not session.closed:
            return session
        stale = self._guard, self._loop
        # Nothing is awaited before the new session is stored, so concurrent first calls share it.
        connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=self.max_connections)
        session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout_s)
        )
        self._session, self._loop = session, loop
        self._guard = await guard(session)
        await retire(*stale)
        return session

    async def aclose(self) -> None:
        """Close the session; a later :meth:`get` opens a new one."""
        stale = self._guard, self._loop
        self._session = self._loop = self._guard = None
        await retire(*stale)


def client_timeout(total_s: float) -> aiohttp.ClientTimeout:
    """aiohttp's timeout object for a request of ``total_s`` in all (made once per model, not per request)."""
    return aiohttp.ClientTimeout(total=total_s)


async def aiohttp_post(
    client: LazySession | aiohttp.ClientSession,
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout: aiohttp.ClientTimeout,
    max_reply_bytes: int = MAX_REPLY_BYTES,
) -> HttpReply:
    """POST with aiohttp; errors as the default client raises them (:class:`TimeoutError`,
    :class:`HttpConnectionError` naming aiohttp's error, :class:`ReplyTooLargeError`)."""
    session = client if isinstance(client, aiohttp.ClientSession) else await client.get()
    try:
        async with session.post(url, data=body, headers=headers, timeout=timeout) as response:
            status = response.status
            length = response.content_length
            if length is not None and length > max_reply_bytes:
                raise ReplyTooLargeError(status, max_reply_bytes)
            pieces: list[bytes] = []
            size = 0
            while piece := await response.content.read(_READ_PIECE):
                size += len(piece)
                if size > max_reply_bytes:
                    raise ReplyTooLargeError(status, max_reply_bytes)
                pieces.append(piece)
            lowered = {name.lower(): value for name, value in response.headers.items()}
            return HttpReply(status, lowered, b"".join(pieces))
    except aiohttp.ClientError as exc:
        if isinstance(exc, TimeoutError):  # aiohttp's own timeout errors subclass both
            raise
        raise HttpConnectionError(f"{type(exc).__name__}: {exc}") from exc
