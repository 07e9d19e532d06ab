"""Passing a large request body on without holding it whole: read the start of it, then stream the rest.

The shadow proxy keeps a request body in memory only when it may shadow it (a few KB, up to its shadow cap);
a longer one goes to the champion chunk by chunk as it arrives, still cut at the proxy's body limit, and a
body the client did not finish is never passed on as if it were whole (the stream fails instead of ending).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ragreplay.asgi import BodyTooLarge, Receive


class BodyCut(Exception):
    """The client went away before the end of the request body."""


async def read_start(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The body as far as it arrived once it ended or passed ``limit`` bytes, and whether it ended there.

    A disconnect counts as the end, as in :func:`~ragreplay.asgi.read_body` (the server's guard,
    :class:`~ragreplay.asgi.guard.WholeBodies`, stops a request whose body was cut)."""
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(parts), True
        chunk = message.get("body", b"")
        parts.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), True
    return b"".join(parts), False


class BodyStream:
    """The rest of a request body after ``start`` (what :func:`read_start` read), as chunks for an HTTP
    client to send on (``async for``). Past ``limit`` bytes in all it raises :class:`BodyTooLarge`, and
    :class:`BodyCut` when the client disconnects before the end; either way (or whatever the server's
    ``receive`` raised) the exception is kept in :attr:`failure`, since the client that sends the chunks
    reports its own error instead."""

    def __init__(self, receive: Receive, start: bytes, limit: int) -> None:
        self.receive = receive
        self.start = start
        self.limit = limit
        self.size = 0
        self.failure: Exception | None = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        try:
            if self.start:
                yield self._counted(self.start)
            while True:
                message = await self.receive()
                if message["type"] == "http.disconnect":
                    raise BodyCut("the client left before the end of the request body")
                chunk = message.get("body", b"")
                if chunk:
                    yield self._counted(chunk)
                if not message.get("more_body", False):
                    return
        except Exception as exc:
            self.failure = exc
            raise

    def _counted(self, chunk: bytes) -> bytes:
        self.size += len(chunk)
        if self.size > self.limit:
            raise BodyTooLarge(self.limit)
        return chunk
