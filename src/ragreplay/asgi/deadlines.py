"""uvicorn's HTTP protocol with the deadlines it lacks: a request's headers, then its body, must arrive in time.

uvicorn closes a kept-alive connection that stays idle (``timeout_keep_alive``), but waits forever for a
client that connects and sends nothing, or sends its headers or body a byte at a time (slowloris): enough of
those use up the server's file descriptors and real users are refused. This protocol gives each request
``header_timeout_s`` for its line and headers (from its first byte, or from connecting) and then
``body_timeout_s`` for its body; past either the client gets a 408 (or, if it sent nothing, just the close).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from typing import Any, Literal

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ragreplay.asgi.limits import DEFAULT_LIMITS, ServerLimits

LIMITS_ENV = "RAGREPLAY_SERVER_LIMITS"
"""Where worker processes (which import the protocol by name) read their :class:`ServerLimits` as JSON."""

log = logging.getLogger(__name__)

Awaiting = Literal["headers", "body"]


def _timeout_response(what: str, seconds: float) -> bytes:
    body = f"408 the request {what} did not arrive within {seconds:g} s\n".encode()
    head = (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n"
    )
    return head + body


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with header and body read deadlines; ``limits`` also sets the idle
    keep-alive timeout. Make one per set of limits with :func:`protocol_for`."""

    limits: ServerLimits = DEFAULT_LIMITS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = self.limits.idle_timeout_s  # type: ignore[assignment]  # a float is fine
        self._deadline: asyncio.TimerHandle | None = None
        self._awaiting: Awaiting | None = None
        self._heard = False  # a byte of the awaited request arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock on the first request's headers."""
        super().connection_made(transport)
        self._arm("headers")

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed the parser; stop the headers' clock once they are in and start the body's."""
        if self._awaiting is None and (self.cycle is None or self.cycle.response_complete):
            self._arm("headers")  # the next request on a kept-alive connection
        self._heard = True
        before = self.cycle
        super().data_received(data)
        cycle = self.cycle
        if self._awaiting == "headers" and cycle is not before and cycle is not None:
            self._disarm()
            if cycle.more_body:
                self._arm("body")
        elif self._awaiting == "body" and (cycle is None or not cycle.more_body):
            self._disarm()

    def handle_websocket_upgrade(self) -> None:
        """Hand over to the WebSocket protocol without a deadline of ours left behind."""
        self._disarm()
        super().handle_websocket_upgrade()

    def _arm(self, awaiting: Awaiting) -> None:
        self._disarm()
        seconds = self.limits.header_timeout_s if awaiting == "headers" else self.limits.body_timeout_s
        self._awaiting = awaiting
        self._heard = awaiting == "body"
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._awaiting = None

    def _expired(self) -> None:
        awaiting, self._awaiting, self._deadline = self._awaiting, None, None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if awaiting == "body" and cycle is not None and not cycle.response_started:
            # The app is waiting for the rest of the body: it hears a disconnect, and cannot answer behind
            # the 408 (a proxy must then drop the request, see asgi.guard.WholeBodies).
            cycle.disconnected = True
            cycle.message_event.set()
            self.transport.write(_timeout_response("body", self.limits.body_timeout_s))
        elif awaiting == "headers" and self._heard:
            self.transport.write(_timeout_response("headers", self.limits.header_timeout_s))
        log.debug("closing %s: request %s not in time", self.client, awaiting)
        self.transport.close()


def protocol_for(limits: ServerLimits) -> type[DeadlineProtocol]:
    """A :class:`DeadlineProtocol` class with ``limits`` (uvicorn's ``http=``)."""
    return type("DeadlineProtocol", (DeadlineProtocol,), {"limits": limits})


@functools.cache
def _limits_from_env() -> ServerLimits:
    raw = os.environ.get(LIMITS_ENV)
    return ServerLimits.model_validate_json(raw) if raw else DEFAULT_LIMITS


class WorkerProtocol(DeadlineProtocol):
    """The protocol of worker processes, which uvicorn imports by name: its limits come from
    ``$RAGREPLAY_SERVER_LIMITS`` (set by the parent, inherited by the workers)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.limits = _limits_from_env()
        super().__init__(*args, **kwargs)
