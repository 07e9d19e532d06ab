"""One HTTP/1.1 keep-alive connection on an asyncio protocol, its replies parsed by httptools (C).

The OpenAI-compatible provider's calls are small POSTs answered with small JSON bodies, many a second, and the
replay loop is CPU-bound on the client: this does only what those calls need. A request is written in one
``transport.write``; the reply's status line, headers and body (``Content-Length``, chunked, or up to the end of
the connection) come through httptools' callbacks; a gzip or deflate body is inflated. Replies are bounded:
headers to :data:`MAX_HEADER_BYTES`, the body (as sent and as inflated) to the pool's cap. No proxies (the
aiohttp client before it did not read proxy settings either), no redirects, no cookies.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from dataclasses import dataclass
from typing import cast

import httptools

MAX_REPLY_BYTES = 32 * 1024 * 1024
"""The default cap on a reply's body: a chat completion is kilobytes; a bigger one is not what was asked."""
MAX_HEADER_BYTES = 256 * 1024
"""The cap on a reply's status line and headers together."""


class HttpConnectionError(Exception):
    """The connection could not be made, dropped, or the reply was not HTTP: worth trying again."""


class ReplyTooLargeError(Exception):
    """The reply is over the size cap: trying again would get the same, so it is not retried."""

    def __init__(self, status: int, cap: int) -> None:
        super().__init__(f"the reply (HTTP {status}) is over {cap:,} bytes")
        self.status = status
        self.cap = cap


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A whole reply: status, headers (names lower-cased; the last of repeated ones) and the inflated body."""

    status: int
    headers: dict[str, str]
    body: bytes


def _inflate(body: bytes, encoding: str, status: int, cap: int) -> bytes:
    """``body`` decoded from its ``Content-Encoding`` (gzip or deflate; anything else as sent), within ``cap``."""
    if encoding == "gzip":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send it
        inflater = zlib.decompressobj(zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS)
    else:
        return body
    try:
        plain = inflater.decompress(body, cap + 1)
    except zlib.error as exc:
        raise HttpConnectionError(f"the {encoding} body does not inflate ({exc})") from exc
    if len(plain) > cap:
        raise ReplyTooLargeError(status, cap)
    return plain


class Connection(asyncio.Protocol):
    """One connection: :meth:`exchange` writes a request and waits for its whole reply, one at a time.

    After a reply :attr:`reusable` says whether the connection may carry the next request (the server kept it
    alive and nothing is left half-read).
    """

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.transport: asyncio.Transport | None = None
        self.reusable = False
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[HttpReply] | None = None
        self._begin()

    def _begin(self) -> None:
        self._headers: dict[str, str] = {}
        self._header_bytes = 0
        self._chunks: list[bytes] = []
        self._body_bytes = 0
        self._status = 0
        self._length_known = False
        self._headers_done = False

    @property
    def closed(self) -> bool:
        """True once the connection is closed or closing (by either side)."""
        return self.transport is None or self.transport.is_closing()

    def close(self) -> None:
        """Close the connection (at once; nothing is in flight that a reply could still come for)."""
        self.reusable = False
        if self.transport is not None:
            # RuntimeError: its loop was closed by hand; the socket is closed when collected
            with contextlib.suppress(RuntimeError):
                self.transport.close()

    async def exchange(self, request: bytes, deadline: float) -> HttpReply:
        """Send ``request`` (a whole HTTP/1.1 request) and return its reply; :class:`TimeoutError` after
        ``deadline`` (loop time), :class:`HttpConnectionError` if the connection drops first."""
        transport = self.transport
        if transport is None or transport.is_closing():
            raise HttpConnectionError("the connection was closed before the request was sent")
        loop = asyncio.get_running_loop()
        self.reusable = False
        self._begin()
        waiter: asyncio.Future[HttpReply] = loop.create_future()
        self._waiter = waiter
        transport.write(request)
        timer = loop.call_at(deadline, self._time_out)
        try:
            return await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _time_out(self) -> None:
        self._fail(TimeoutError())
        self.close()

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.reusable = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport."""
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        """Parse what came; a reply nobody waits for closes the connection."""
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: this connection can no longer be trusted
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            self._fail(cause if isinstance(cause, Exception) else HttpConnectionError(str(exc)))
            self.close()
        except httptools.HttpParserError as exc:
            self._fail(HttpConnectionError(f"the reply is not HTTP/1.1 ({exc})"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        """End a body that runs to the end of the connection, else fail the request."""
        self.reusable = False
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and not self._length_known:  # a body that ends with the connection
            self._finish()
            return
        reason = f": {exc}" if exc is not None else ""
        what = "in the middle of the reply" if self._status else "before replying"
        self._fail(HttpConnectionError(f"the server closed the connection {what}{reason}"))

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        """httptools: one header (bounded in size)."""
        size = self._header_bytes = self._header_bytes + len(name) + len(value)
        if size > MAX_HEADER_BYTES:
            raise HttpConnectionError(f"the reply's headers are over {MAX_HEADER_BYTES:,} bytes")
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        """httptools: status and headers are in; refuse a declared body over the cap."""
        self._headers_done = True
        self._status = status = self._parser.get_status_code()
        headers = self._headers
        self._length_known = "content-length" in headers or "chunked" in headers.get("transfer-encoding", "")
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            raise ReplyTooLargeError(status, self.max_body)

    def on_body(self, body: bytes) -> None:
        """httptools: a piece of the body (bounded in size)."""
        self._body_bytes += len(body)
        if self._body_bytes > self.max_body:
            raise ReplyTooLargeError(self._status, self.max_body)
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        """httptools: the reply is whole."""
        keep_alive = self._parser.should_keep_alive()
        self.reusable = self._finish() and keep_alive and not self.closed

    def _finish(self) -> bool:
        """Hand the reply to the waiting request; False if there is none or the body does not decode."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            return False
        chunks = self._chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        encoding = self._headers.get("content-encoding", "")
        try:
            if encoding:
                body = _inflate(body, encoding.strip().lower(), self._status, self.max_body)
        except (HttpConnectionError, ReplyTooLargeError) as exc:
            self._fail(exc)
            return False
        waiter.set_result(HttpReply(self._status, self._headers, body))
        return True
