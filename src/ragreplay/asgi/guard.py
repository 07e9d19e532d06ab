"""An ASGI wrapper for apps that pass a request on (the shadow proxy): a request whose body did not arrive whole
is dropped, never handled with the part that came."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from ragreplay.asgi import Message, Receive, Scope, Send

App = Callable[[Scope, Receive, Send], Awaitable[None]]


class _BodyCut(Exception):
    """The client went away (or timed out) before the end of the request body."""


class WholeBodies:
    """Run ``app``; if the client disconnects before the end of the request body (it left, or its body did not
    arrive within the server's body timeout), ``app`` is stopped where it reads next, so a half-received
    request is never forwarded. Nothing is logged: a client that leaves is no server error."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ended = False

        async def whole() -> Message:
            nonlocal ended
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                ended = True
            elif message["type"] == "http.disconnect" and not ended:
                raise _BodyCut
            return message

        with contextlib.suppress(_BodyCut):
            await self.app(scope, whole, send)
