"""The few ASGI pieces ragreplay's own HTTP apps share (the shadow proxy, the target app): types, reading a
request body, sending a whole response."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyTooLarge(Exception):
    """A request body over the limit; reading stopped there."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body over {limit} bytes")
        self.limit = limit


async def read_body(receive: Receive, limit: int | None = None) -> bytes:
    """The whole request body (what arrived before a disconnect); :class:`BodyTooLarge` as soon as it passes
    ``limit`` bytes, so a huge body is never held whole."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise BodyTooLarge(limit)
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def read_json_object(receive: Receive) -> dict[str, Any]:
    """The request body as a JSON object; ``ValueError`` saying why when it is not one."""
    data = json.loads(await read_body(receive))
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


async def send_body(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    """A complete response with a content type and length."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def send_json(send: Send, status: int, payload: Any) -> None:
    """``payload`` as a JSON response."""
    await send_body(send, status, json.dumps(payload, ensure_ascii=False).encode(), b"application/json")


async def run_lifespan(
    receive: Receive, send: Send, on_shutdown: Callable[[], Awaitable[None]] | None = None
) -> None:
    """Answer the server's lifespan messages; ``on_shutdown`` runs before shutdown is confirmed."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if on_shutdown is not None:
                await on_shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return
