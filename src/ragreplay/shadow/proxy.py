"""The shadow reverse proxy: an ASGI app in front of the champion RAG app.

Every request is forwarded to the champion and its response is returned unchanged (status, headers, body),
streamed through chunk by chunk. A copy of the request and of the response body (capped) goes to `mirror` only
after the user's response has been sent completely, so a slow or failing mirror cannot change it.

A request body over `shadow_max_body` bytes is not held whole: it is streamed to the champion as it arrives
(still cut at `max_body`) and never mirrored (`not_shadowed_too_large`), since a real question with its history
is a few KB and shadowing megabytes would cost every other user (issue 12).

When the champion is down the user gets a 502 (504 on a timeout) with a short plain-text body: without the
proxy the user would not have reached the app either. `/_shadow/stats` answers the proxy's own counters as JSON
and is never forwarded.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from ragreplay.asgi import BodyTooLarge, Receive, Scope, Send, run_lifespan, send_body
from ragreplay.asgi.body_stream import BodyStream, read_start

log = logging.getLogger(__name__)


STATS_PATH = "/_shadow/stats"
DEFAULT_TEE_CAP = 1 << 20
DEFAULT_MAX_BODY = 16 << 20
"""Request bodies over this many bytes get a 413 (``max_body_mb`` in the shadow serve config)."""
DEFAULT_SHADOW_MAX_BODY = 256 << 10
"""Request bodies over this many bytes are streamed to the champion and not shadowed (``shadow_max_body_kb``)."""
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)


@dataclass(frozen=True)
class MirroredRequest:
    """The user's request as the proxy received it."""

    method: str
    path: str
    query: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    received_at: datetime

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass(frozen=True)
class ChampionReply:
    """What the champion answered; `body` is decoded (gzip/deflate) and capped, `truncated` says if cut."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    latency_ms: float
    truncated: bool = False

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


Mirror = Callable[[MirroredRequest, ChampionReply], None]


@dataclass
class ProxyStats:
    """Counters served at `/_shadow/stats`."""

    requests: int = 0
    forwarded: int = 0
    too_large: int = 0
    not_shadowed_too_large: int = 0
    champion_unreachable: int = 0
    champion_broke_midstream: int = 0
    mirrored: int = 0
    mirror_errors: int = 0
    mirror_ms_max: float = 0.0
    tee_truncated: int = 0
    by_status: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy."""
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()}


_HOP_BY_HOP_BYTES = frozenset(h.encode() for h in HOP_BY_HOP)
# never forwarded to the champion: aiohttp sets its own Host and Content-Length
_NOT_FORWARDED = _HOP_BY_HOP_BYTES | {b"host", b"content-length"}
_URL_CACHE_SIZE = 256


def _strip_hop_by_hop(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Drop hop-by-hop headers, including any the Connection header names."""
    kept = [(k, v) for k, v in raw if k.lower() not in _HOP_BY_HOP_BYTES]
    if len(kept) == len(raw) or not any(k.lower() == b"connection" for k, _ in raw):
        return kept
    named = {
        token.strip().lower()
        for key, value in raw
        if key.lower() == b"connection"
        for token in value.split(b",")
        if token.strip()
    }
    return [(k, v) for k, v in kept if k.lower() not in named]


def _decode_body(body: bytes, encoding: str | None, limit: int) -> tuple[bytes, bool]:
    """Undo gzip/deflate for the mirror's copy, to at most ``limit`` bytes (a small body can inflate a
    thousandfold), and whether it was cut there; a partial (capped) stream decodes as far as it goes."""
    enc = (encoding or "").strip().lower()
    if enc in ("gzip", "x-gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if enc != "deflate" else zlib.MAX_WBITS
        for bits in (wbits, -zlib.MAX_WBITS):
            inflate = zlib.decompressobj(bits)
            try:
                decoded = inflate.decompress(body, limit)
            except zlib.error:
                continue
            return decoded, bool(inflate.unconsumed_tail)
    return body, False


async def _relay(content: aiohttp.StreamReader, send: Send, tee_cap: int) -> tuple[bytes, bool]:
    """Pass the champion's body to the user chunk by chunk as it comes; a copy of its first ``tee_cap`` bytes
    for the mirror, and whether the body was longer."""
    teed: list[bytes] = []
    teed_len = 0
    truncated = False
    done = False
    async for chunk in content.iter_any():
        if not chunk:
            continue
        # the champion's whole body is in: end the response with this chunk, one write fewer
        done = content.at_eof()
        await send({"type": "http.response.body", "body": chunk, "more_body": not done})
        room = tee_cap - teed_len
        if room > 0:
            teed.append(chunk[:room] if len(chunk) > room else chunk)
            teed_len += min(room, len(chunk))
        truncated = truncated or len(chunk) > room
        if done:
            break
    if not done:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    return b"".join(teed), truncated and tee_cap > 0


def _text_pairs(raw: Iterable[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    return tuple([(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw])


class ShadowProxy:
    """ASGI app forwarding to `champion_url`; build it with `create_proxy`."""

    def __init__(
        self,
        champion_url: str,
        mirror: Mirror | None,
        timeout_s: float = 60.0,
        tee_cap: int = DEFAULT_TEE_CAP,
        max_body: int = DEFAULT_MAX_BODY,
        side_door_token: str | None = None,
        shadow_max_body: int = DEFAULT_SHADOW_MAX_BODY,
    ) -> None:
        self.champion_url = champion_url.rstrip("/")
        self.max_body = max_body
        self.shadow_max_body = shadow_max_body
        self.side_door_token = side_door_token
        self.mirror = mirror
        self.timeout_s = timeout_s
        self.tee_cap = tee_cap
        self.stats = ProxyStats()
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._urls: dict[tuple[bytes, bytes], URL] = {}

    def _http(self) -> aiohttp.ClientSession:
        """The pool to the champion, made inside the running loop (a ClientSession belongs to its loop)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            # Per-operation timeouts, no total cap: a long stream is not cut as long as bytes keep coming.
            timeout = aiohttp.ClientTimeout(total=None, connect=self.timeout_s, sock_read=self.timeout_s)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=1000, limit_per_host=1000),
                timeout=timeout,
                auto_decompress=False,  # the user gets the champion's bytes; only the mirror's copy is decoded
                trust_env=False,
                # A proxy must not keep one user's cookies and send them along with another user's request.
                cookie_jar=aiohttp.DummyCookieJar(),
                # Forward only the user's headers: no Accept-Encoding/User-Agent the user did not send.
                skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent"),
            )
            self._loop = loop
        return self._session

    async def aclose(self) -> None:
        """Close the connection pool to the champion."""
        session, self._session, self._loop = self._session, None, None
        if session is not None and not session.closed:
            await session.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] == "lifespan":
            await run_lifespan(receive, send, self.aclose)
        elif scope["type"] == "http":
            await self._http_request(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1011, "reason": "shadow proxy forwards HTTP only"})

    async def _http_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == STATS_PATH:
            await self._serve_stats(scope, send)
            return
        self.stats.requests += 1
        if not scope["path"].startswith("/"):  # OPTIONS * and other non-path targets: nothing to forward
            self._count(400)
            await send_body(send, 400, b"400 the request target must be a path such as /ask\n", b"text/plain")
            return
        received_at = datetime.now(UTC) if self.mirror is not None else None
        declared = _declared_length(scope)
        if declared > self.max_body:
            await self._too_large(send)
            return
        body = await self._request_body(receive, declared)
        if len(body.start if isinstance(body, BodyStream) else body) > self.max_body:
            await self._too_large(send)  # one chunk can carry more (an in-process ASGI client's does)
            return
        shadowable = isinstance(body, bytes) and len(body) <= self.shadow_max_body
        if not shadowable:
            self.stats.not_shadowed_too_large += 1
        mirrored = shadowable and self.mirror is not None
        query: bytes = scope.get("query_string", b"")
        url = self._upstream_url(scope.get("raw_path") or scope["path"].encode(), query)
        headers = _upstream_headers(scope)
        if isinstance(body, BodyStream) and declared:
            headers["content-length"] = str(declared)  # the user's framing, not chunked
        session = self._http()
        started = time.perf_counter()
        try:
            upstream = await session.request(
                scope["method"], url, headers=headers, data=body or None, allow_redirects=False
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            if isinstance(body, BodyStream) and body.failure is not None:
                await self._body_failed(body.failure, send)
                return
            self.stats.champion_unreachable += 1
            status = 504 if isinstance(exc, TimeoutError) else 502
            self._count(status)
            log.warning("champion %s unreachable: %s", self.champion_url, exc)
            await send_body(send, status, f"{status} champion unreachable\n".encode(), b"text/plain")
            return
        reply_headers = _strip_hop_by_hop(list(upstream.raw_headers))
        try:
            await send({"type": "http.response.start", "status": upstream.status, "headers": reply_headers})
            teed, truncated = await _relay(upstream.content, send, self.tee_cap if mirrored else 0)
        except (aiohttp.ClientError, TimeoutError):
            # Headers are out: the only honest signal left is to abort the connection mid-body.
            self.stats.champion_broke_midstream += 1
            raise
        finally:
            upstream.release()
        latency_ms = (time.perf_counter() - started) * 1000
        self.stats.forwarded += 1
        self._count(upstream.status)
        if truncated:
            self.stats.tee_truncated += 1
        if not mirrored:
            return
        assert received_at is not None and isinstance(body, bytes)
        request = MirroredRequest(
            method=scope["method"],
            path=scope["path"],
            query=query.decode("latin-1"),
            headers=_text_pairs(scope["headers"]),
            body=body,
            received_at=received_at,
        )
        body, cut = _decode_body(teed, upstream.headers.get("content-encoding"), self.tee_cap)
        reply = ChampionReply(
            status=upstream.status,
            headers=_text_pairs(reply_headers),
            body=body,
            latency_ms=latency_ms,
            truncated=truncated or cut,
        )
        self._call_mirror(request, reply)

    async def _serve_stats(self, scope: Scope, send: Send) -> None:
        """The proxy's counters as JSON, to a client the side door lets in."""
        refused = side_door_refusal(scope, self.side_door_token)
        if refused is not None:
            await send_body(send, refused[0], json.dumps({"error": refused[1]}).encode(), b"application/json")
            return
        await send_body(send, 200, json.dumps(self.stats.as_dict()).encode(), b"application/json")

    async def _request_body(self, receive: Receive, declared: int) -> bytes | BodyStream:
        """The whole body once it ended within ``shadow_max_body`` bytes and a chunk (it may be shadowed);
        else the body as a stream to the champion, never held whole. A declared length over the cap streams
        from the first byte."""
        if declared > self.shadow_max_body:
            return BodyStream(receive, b"", self.max_body)
        start, ended = await read_start(receive, self.shadow_max_body)
        return start if ended else BodyStream(receive, start, self.max_body)

    async def _body_failed(self, failure: Exception, send: Send) -> None:
        """The body streamed to the champion failed: a 413 past the limit; a client that left gets nothing."""
        if isinstance(failure, BodyTooLarge):
            await self._too_large(send)
            return
        log.debug("request body not passed on whole: %s", failure)

    async def _too_large(self, send: Send) -> None:
        self.stats.too_large += 1
        self._count(413)
        message = f"413 request body over the proxy's limit of {self.max_body} bytes\n"
        await send_body(send, 413, message.encode(), b"text/plain")

    def _upstream_url(self, raw_path: bytes, query: bytes) -> URL:
        """The champion's URL for this path and query, as the user sent them (not re-encoded); cached, since
        a RAG app is mostly asked on a few paths and parsing a URL costs more than the rest of the request
        line."""
        key = (raw_path, query)
        url = self._urls.get(key)
        if url is None:
            text = self.champion_url + raw_path.decode("latin-1")
            if query:
                text += "?" + query.decode("latin-1")
            url = URL(text, encoded=True)
            if len(self._urls) >= _URL_CACHE_SIZE:
                self._urls.clear()
            self._urls[key] = url
        return url

    def _call_mirror(self, request: MirroredRequest, reply: ChampionReply) -> None:
        """Call the mirror after the response is out; it runs on the event loop, so it must only schedule work."""
        assert self.mirror is not None
        started = time.perf_counter()
        try:
            self.mirror(request, reply)
            self.stats.mirrored += 1
        except Exception:
            self.stats.mirror_errors += 1
            log.exception("shadow mirror failed; the user's response was already sent")
        self.stats.mirror_ms_max = max(self.stats.mirror_ms_max, (time.perf_counter() - started) * 1000)

    def _count(self, status: int) -> None:
        key = str(status)
        self.stats.by_status[key] = self.stats.by_status.get(key, 0) + 1


def _upstream_headers(scope: Scope) -> CIMultiDict[str]:
    """The user's headers less hop-by-hop ones, Host and Content-Length, plus X-Forwarded-Proto/-For/-Host."""
    # lower-case per the ASGI spec, but not every server promises it
    raw = [(k.lower(), v) for k, v in scope["headers"]]
    host: bytes | None = None
    connection = False
    for key, value in raw:
        if key == b"host" and host is None:
            host = value
        elif key == b"connection":
            connection = True
    drop = _NOT_FORWARDED
    if connection:
        drop = drop | {
            token.strip().lower()
            for key, value in raw
            if key == b"connection"
            for token in value.split(b",")
            if token.strip()
        }
    headers: CIMultiDict[str] = CIMultiDict(
        [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw if k not in drop]
    )
    # one X-Forwarded-For, the client appended to what earlier proxies said; the first proto and host kept
    headers.setdefault("x-forwarded-proto", scope.get("scheme", "http"))
    client = scope.get("client")
    if client:
        earlier = headers.popall("x-forwarded-for", [])
        headers.add("x-forwarded-for", ", ".join([*earlier, str(client[0])]))
    if host is not None:
        headers.setdefault("x-forwarded-host", host.decode("latin-1"))
    return headers


SIDE_DOOR_TOKEN_ENV = "RAGREPLAY_SHADOW_TOKEN"
"""The bearer token that opens the proxy's own paths (``/_shadow/...``) to clients off loopback."""
_LOOPBACK = ("127.", "::1", "localhost")


def side_door_refusal(scope: Scope, token: str | None) -> tuple[int, str] | None:
    """Why this request may not use a ``/_shadow/...`` path (status and message), or ``None`` when it may.

    With a token set, only ``Authorization: Bearer <token>`` opens them (feedback can then come only from the
    app, which holds the token); without one, only loopback clients are answered (the proxy's own host)."""
    if token:
        sent = next((v for k, v in scope["headers"] if k.lower() == b"authorization"), b"")
        if hmac.compare_digest(sent, f"Bearer {token}".encode()):
            return None
        return (
            401,
            f"the shadow's own paths need 'Authorization: Bearer <token>' (the ${SIDE_DOOR_TOKEN_ENV} token)",
        )
    client = scope.get("client")
    host = str(client[0]) if client else ""
    if host.startswith(_LOOPBACK):
        return None
    return 403, (
        f"the shadow's own paths answer only this host. Fix: set ${SIDE_DOOR_TOKEN_ENV} for the proxy and send "
        "'Authorization: Bearer <token>'"
    )


def _declared_length(scope: Scope) -> int:
    """The request's Content-Length (0 when absent or unreadable: the body read enforces the limit then)."""
    for key, value in scope["headers"]:
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def create_proxy(
    champion_url: str,
    mirror: Mirror | None = None,
    timeout_s: float = 60.0,
    tee_cap: int = DEFAULT_TEE_CAP,
    max_body: int | None = None,
    side_door_token: str | None = None,
    shadow_max_body: int | None = None,
) -> ShadowProxy:
    """An ASGI app that forwards everything to `champion_url` and hands a copy of each exchange to `mirror`.

    `mirror(request, reply)` is called on the event loop after the response was fully sent; exceptions are
    logged and counted, never raised. Keep it quick (e.g. `Shadow.record`, which only schedules challengers).
    Exchanges whose request body is over `shadow_max_body` bytes are not handed to it.
    """
    limit = DEFAULT_MAX_BODY if max_body is None else max_body
    return ShadowProxy(
        champion_url,
        mirror,
        timeout_s=timeout_s,
        tee_cap=tee_cap,
        max_body=limit,
        side_door_token=side_door_token,
        shadow_max_body=DEFAULT_SHADOW_MAX_BODY if shadow_max_body is None else shadow_max_body,
    )
