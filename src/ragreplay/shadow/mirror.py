"""Wiring the shadow proxy to the Shadow library: each proxied exchange becomes a ``Shadow.record`` call.

:class:`ProxyMirror` reads the question (and user id, tags, request id) from the user's JSON request and the
champion's answer from its JSON reply; only paths matching ``mirror_paths`` are shadowed. Challengers are HTTP
endpoints that receive the *same* request bytes (:class:`MirrorHttpTarget`): the raw request travels to them in
a context variable, which the challenger tasks inherit because ``Shadow.record`` creates them while the variable
is set.

Users' feedback reaches the shadow two ways: the app's own feedback endpoint, forwarded as usual and read on the
way (:class:`FeedbackTap`), or ``POST /_shadow/feedback`` answered by the proxy itself (:class:`ShadowServeApp`).
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp

from ragreplay.asgi import Receive, Scope, Send, read_json_object, run_lifespan, send_body, send_json
from ragreplay.core.retry import RetryPolicy, retry_after_seconds
from ragreplay.core.types import Answer, Case
from ragreplay.shadow.library import RawRequest, Shadow
from ragreplay.shadow.metrics import CONTENT_TYPE, prometheus_text
from ragreplay.shadow.payloads import (
    Exchange,
    RequestFields,
    body_user,
    lookup,
    parse_reply,
    read_exchange,
)
from ragreplay.shadow.proxy import STATS_PATH, ChampionReply, MirroredRequest, ShadowProxy, side_door_refusal

DEFAULT_MAX_REPLY = 4 << 20
"""A challenger reply over this many bytes is recorded as an error, never stored whole."""
_EXCERPT = 200


@dataclass(frozen=True)
class FeedbackTap:
    """Where the app's own feedback endpoint keeps the request id and the label (dotted paths in its JSON
    request body). Requests to ``path`` are forwarded unchanged; after a reply below 400 the label is recorded."""

    path: str
    id_path: str = "request_id"
    label_path: str = "feedback"
    comment_path: str | None = None


FEEDBACK_PATH = "/_shadow/feedback"
METRICS_PATH = "/_shadow/metrics"


CHALLENGER_RETRY = RetryPolicy(max_retries=2, base_s=0.05, cap_s=5.0)
"""How challenger calls are retried by default: twice, after a 429, a 5xx or a failed connection. They are off
the user's path, so retries cost the user nothing; few and soon (jittered waits of at most 0.05 s, then 0.1 s),
so they ride out a blip (a restart, a dropped keep-alive connection, a moment of overload) without piling load
on a challenger that is really down, and finish well within even a short challenger timeout. A Retry-After is
honoured up to 5 s, when it ends before the deadline."""


@dataclass(frozen=True)
class _Failure:
    """One attempt that failed: what the row's error says, and whether (and after how long) to retry."""

    message: str
    retryable: bool = False
    retry_after: float | None = None


class MirrorHttpTarget:
    """A challenger behind HTTP: POSTs the user's original request body (same path, same content type) to
    ``base_url`` and reads the answer by ``fields``. ``answer`` never raises: failures become ``Answer.error``
    (``HTTP 500: ...``, ``timeout ...``, ``connection error ...``, with ``(after N attempts)`` once retried).

    429, 5xx and connection errors are retried by ``retry`` (default :data:`CHALLENGER_RETRY`) within
    ``deadline_s`` (default ``timeout_s``) from the first attempt: a retry is made only when its wait ends
    before the deadline, and it is cut off at the deadline. Give the shadow's ``challenger_timeout_s`` as
    ``deadline_s`` so that retries never outlive it. ``timeout_s`` bounds the first attempt."""

    def __init__(
        self,
        name: str,
        base_url: str,
        fields: RequestFields = RequestFields(),
        timeout_s: float = 30.0,
        client: aiohttp.ClientSession | None = None,
        *,
        retry: RetryPolicy = CHALLENGER_RETRY,
        deadline_s: float | None = None,
        rng: random.Random | None = None,
        max_reply: int = DEFAULT_MAX_REPLY,
    ) -> None:
        self._name = name
        self._base = base_url.rstrip("/")
        self._fields = fields
        self._timeout = timeout_s
        self._client = client
        self._own_client = client is None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retry = retry
        self._deadline_s = timeout_s if deadline_s is None else deadline_s
        self._rng = rng or random.Random()
        self._max_reply = max_reply

    @property
    def name(self) -> str:
        """The challenger's label (the row's ``challenger``)."""
        return self._name

    @property
    def version(self) -> str:
        """The endpoint URL stands in for a configuration hash."""
        return self._base

    async def answer(self, question: str, case: Case) -> Answer:
        """Send ``{"question": question}`` (outside a mirrored request: the proxy calls :meth:`forward`)."""
        raw = RawRequest("POST", "/", json.dumps({"question": question}).encode(), "application/json")
        return await self.forward(raw, question, case)

    async def forward(self, raw: RawRequest, question: str, case: Case) -> Answer:
        """Send the user's own request ``raw`` (same path and body), retrying transient failures."""
        start = time.perf_counter()
        deadline = start + self._deadline_s
        timeout: float | None = None  # the first attempt: the session's timeout
        attempt = 0
        while True:
            result = await self._attempt(raw, timeout)
            if isinstance(result, Answer):
                return result.model_copy(update={"latency_ms": (time.perf_counter() - start) * 1000})
            if result.retryable and attempt < self._retry.max_retries:
                wait = self._retry.delay(attempt, result.retry_after, self._rng)
                if time.perf_counter() + wait < deadline:
                    await asyncio.sleep(wait)
                    left = deadline - time.perf_counter()
                    if left > 0:
                        attempt += 1
                        timeout = min(self._timeout, left)
                        continue
            message = result.message if attempt == 0 else f"{result.message} (after {attempt + 1} attempts)"
            return _failed(message, start)

    async def _attempt(self, raw: RawRequest, timeout: float | None) -> Answer | _Failure:
        """One request: the parsed answer (latency not set), or why it failed."""
        headers = {"content-type": raw.content_type} if raw.content_type else {}
        session = self._session()
        options: dict[str, Any] = {} if timeout is None else {"timeout": aiohttp.ClientTimeout(total=timeout)}
        try:
            async with session.request(
                raw.method, self._base + raw.path, data=raw.body, headers=headers, **options
            ) as resp:
                status = resp.status
                length = resp.content_length
                if length is not None and length <= self._max_reply:
                    body = await resp.read()  # a declared length within the cap: one read (most replies)
                else:
                    read = await self._read_capped(resp)
                    if read is None:
                        return _Failure(f"reply too large: over {self._max_reply} bytes, not stored")
                    body = read
                content_type = resp.headers.get("content-type")
                # read only for a failure that may be retried (parsing dates costs; most replies are 200)
                retry_after = retry_after_seconds(resp.headers, datetime.now(UTC)) if status >= 400 else None
        except TimeoutError:
            return _Failure(f"timeout after {self._timeout if timeout is None else timeout:g} s")
        except aiohttp.ClientError as exc:
            retryable = isinstance(exc, aiohttp.ClientConnectionError)
            return _Failure(f"connection error: {type(exc).__name__}: {exc}", retryable)
        if status >= 400:
            retryable = status == 429 or status >= 500
            return _Failure(f"HTTP {status}: {_excerpt(_text(body))}", retryable, retry_after)
        try:
            return parse_reply(body, content_type, self._fields).answer
        except ValueError as exc:
            return _Failure(f"bad response: {exc}: {_excerpt(_text(body))}")

    async def _read_capped(self, resp: aiohttp.ClientResponse) -> bytes | None:
        """The body of a reply of unknown (or too large) length, or ``None`` once it passes the cap (the rest
        is never read)."""
        parts: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > self._max_reply:
                return None
            parts.append(chunk)
        return b"".join(parts)

    def _session(self) -> aiohttp.ClientSession:
        """The session passed in, or one of our own made inside the running loop (sessions belong to a loop)."""
        if not self._own_client:
            assert self._client is not None
            return self._client
        loop = asyncio.get_running_loop()
        if self._client is None or self._client.closed or self._loop is not loop:
            timeout = aiohttp.ClientTimeout(total=self._timeout)
            # no cookie jar: a Set-Cookie from one user's mirrored reply must never ride on the next user's request
            self._client = aiohttp.ClientSession(
                timeout=timeout, trust_env=False, cookie_jar=aiohttp.DummyCookieJar()
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this target opened."""
        if self._client is not None and self._own_client:
            await self._client.close()
            self._client = None
            self._loop = None


def _failed(message: str, start: float) -> Answer:
    return Answer(text="", error=message, latency_ms=(time.perf_counter() - start) * 1000)


def _text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[:_EXCERPT] + "..."


class ProxyMirror:
    """The ``mirror`` callback for :func:`~ragreplay.shadow.proxy.create_proxy`: hands each sampled exchange to
    ``shadow.record``. The sampler decides first (``not_sampled``), so only sampled bodies are read. Never
    raises; sampled requests or replies it cannot read are counted in ``unparsed``, champion replies with a
    status >= 400 in ``champion_failed``, and both are skipped. Paths matching none of
    ``mirror_paths`` (shell-style patterns such as ``/ask`` or ``/api/*/chat``; empty: every path) are only
    counted in ``other_paths``; requests to the ``feedback`` tap's path are read as feedback instead.

    A large exchange (see :meth:`~ragreplay.shadow.offload.Offload.heavy`) is read in the shadow's offload
    worker, never on the event loop (``deferred``); while ``max_pending`` of them are being read, more are
    left out (``too_busy``, not counted as sampled). :meth:`aclose` waits for those being read."""

    def __init__(
        self,
        shadow: Shadow,
        request_fields: RequestFields = RequestFields(),
        mirror_paths: tuple[str, ...] = (),
        feedback: FeedbackTap | None = None,
    ) -> None:
        self.shadow = shadow
        self.fields = request_fields
        self.mirror_paths = mirror_paths
        self.feedback_tap = feedback
        self.recorded = 0
        self.unparsed = 0
        self.champion_failed = 0
        self.other_paths = 0
        self.not_sampled = 0
        self.feedback_recorded = 0
        self.feedback_unreadable = 0
        self.deferred = 0
        self.too_busy = 0
        self._pending: set[asyncio.Task[None]] = set()

    def __call__(self, request: MirroredRequest, reply: ChampionReply) -> None:
        """Parse and record; only schedules work (called on the event loop after the user's response)."""
        try:
            if self.feedback_tap is not None and request.path == self.feedback_tap.path:
                self._tap_feedback(self.feedback_tap, request, reply)
                return
            if self.mirror_paths and not any(fnmatch.fnmatchcase(request.path, p) for p in self.mirror_paths):
                self.other_paths += 1
                return
            if reply.status >= 400:
                self.champion_failed += 1
                return
            # Sample first: most requests are not shadowed, and reading their bodies would be wasted work.
            user = request.header(self.fields.user_header) if self.fields.user_header else None
            user_in_body = user is None and self.fields.user_path is not None  # it decides a per-user sample
            if self.shadow.offload.heavy(len(request.body) + len(reply.body)):
                self._read_later(request, reply, user, user_in_body)
                return
            data: Any = json.loads(request.body) if user_in_body else None
            if user_in_body:
                user = body_user(data, self.fields)
            if not self.shadow.admit(user):
                self.not_sampled += 1
                return
        except Exception:  # the mirror must never raise into the proxy
            self.unparsed += 1
            return
        try:
            exchange = read_exchange(
                request.body,
                reply.body,
                reply.header("content-type"),
                self.fields,
                reply_truncated=reply.truncated,
                data=data,
            )
        except Exception:
            exchange = None
        self._record(request, reply, user, exchange)

    def _read_later(
        self, request: MirroredRequest, reply: ChampionReply, user: str | None, user_in_body: bool
    ) -> None:
        """Read a large exchange in the offload worker, then record it; sampled first unless the user id is in
        the body."""
        if len(self._pending) >= self.shadow.offload.max_pending:
            self.too_busy += 1
            return
        if not user_in_body and not self.shadow.admit(user):
            self.not_sampled += 1
            return
        self.deferred += 1
        task = asyncio.create_task(self._read_and_record(request, reply, user, admitted=not user_in_body))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _read_and_record(
        self, request: MirroredRequest, reply: ChampionReply, user: str | None, admitted: bool
    ) -> None:
        try:
            if admitted and reply.truncated:
                exchange: Exchange | None = None  # nothing to read: the answer was cut
            else:
                read = functools.partial(read_exchange, reply_truncated=reply.truncated)
                exchange = await self.shadow.offload.run(
                    read, request.body, reply.body, reply.header("content-type"), self.fields
                )
        except asyncio.CancelledError:
            if admitted:
                self.shadow.drop()  # closed before it was read
            raise
        except Exception:  # not JSON, or the worker failed
            exchange = None
        if not admitted:
            if exchange is None:
                self.unparsed += 1
                return
            user = exchange.user
            if not self.shadow.admit(user):
                self.not_sampled += 1
                return
        self._record(request, reply, user, exchange)

    def _record(
        self, request: MirroredRequest, reply: ChampionReply, user: str | None, exchange: Exchange | None
    ) -> None:
        """Hand an admitted exchange to the shadow, or withdraw it when its question or answer was unreadable."""
        if exchange is None or exchange.query is None or exchange.answer is None:
            self.shadow.withdraw()
            self.unparsed += 1
            return
        answer = exchange.answer
        if answer.latency_ms is None:  # the proxy timed the champion: first byte sent to last byte read
            answer = answer.model_copy(update={"latency_ms": reply.latency_ms})
        request_id = request.header(self.fields.request_id_header) if self.fields.request_id_header else None
        path = request.path + (f"?{request.query}" if request.query else "")
        raw = RawRequest(request.method, path, request.body, request.header("content-type"))
        self.shadow.record(
            exchange.query,
            answer,
            user,
            exchange.tags,
            request_id or exchange.reply_request_id,
            admitted=True,
            raw=raw,
        )
        self.recorded += 1

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Wait up to ``timeout_s`` for the large exchanges being read (the rest are cancelled, counted in the
        shadow's ``dropped``)."""
        if not self._pending:
            return
        _, pending = await asyncio.wait(set(self._pending), timeout=timeout_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)

    def _tap_feedback(self, tap: FeedbackTap, request: MirroredRequest, reply: ChampionReply) -> None:
        """Record the label the app accepted (reply < 400); an unreadable one is counted, never raised."""
        if reply.status >= 400:
            return  # the app refused it: nothing was given
        try:
            data = json.loads(request.body)
            request_id = lookup(data, tap.id_path)
            label = lookup(data, tap.label_path)
            comment = lookup(data, tap.comment_path)
            if not isinstance(request_id, str | int) or isinstance(request_id, bool):
                raise ValueError(f"no request id at '{tap.id_path}'")
            self.shadow.feedback(
                str(request_id), label, comment=comment if isinstance(comment, str) else None, source="tap"
            )
            self.feedback_recorded += 1
        except (ValueError, TypeError):
            self.feedback_unreadable += 1

    def stats(self) -> dict[str, int]:
        """The mirror's counters."""
        return {
            "recorded": self.recorded,
            "unparsed": self.unparsed,
            "champion_failed": self.champion_failed,
            "other_paths": self.other_paths,
            "not_sampled": self.not_sampled,
            "feedback_recorded": self.feedback_recorded,
            "feedback_unreadable": self.feedback_unreadable,
            "deferred": self.deferred,
            "too_busy": self.too_busy,
            "pending": len(self._pending),
        }


class ShadowServeApp:
    """The proxy plus the shadow's lifecycle: ``/_shadow/stats`` adds the shadow's and the mirror's counters,
    ``/_shadow/metrics`` serves them in the Prometheus text format, ``POST /_shadow/feedback`` takes a user's
    label (``{"request_id": ..., "feedback": "bad", "comment": ...}``, 202 when queued, 400 with the reason
    otherwise), and on shutdown the shadow is closed (challengers awaited, logs flushed), then ``on_close``
    runs. None of these paths is forwarded to the champion."""

    def __init__(
        self,
        proxy: ShadowProxy,
        mirror: ProxyMirror,
        on_close: Callable[[], Awaitable[None]] | None = None,
        close_timeout_s: float = 10.0,
    ) -> None:
        self.proxy = proxy
        self.mirror = mirror
        self.on_close = on_close
        self.close_timeout_s = close_timeout_s
        self.closed = False

    def stats(self) -> dict[str, Any]:
        """Proxy, mirror, shadow and sampler counters together (the sampler's with the effective rate)."""
        return {
            **self.proxy.stats.as_dict(),
            "mirror": self.mirror.stats(),
            "shadow": self.mirror.shadow.stats().as_dict(),
            "sampler": _sampler_stats(self.mirror.shadow),
        }

    async def aclose(self) -> None:
        """Close the shadow (flushing its log), the proxy's connections and whatever ``on_close`` releases."""
        if self.closed:
            return
        self.closed = True
        await self.mirror.aclose(timeout_s=self.close_timeout_s)
        await self.mirror.shadow.aclose(timeout_s=self.close_timeout_s)
        await self.proxy.aclose()
        if self.on_close is not None:
            await self.on_close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] == "lifespan":
            await run_lifespan(receive, send, self.aclose)
            return
        if scope["type"] == "http" and scope["path"] in (STATS_PATH, METRICS_PATH, FEEDBACK_PATH):
            refused = side_door_refusal(scope, self.proxy.side_door_token)
            if refused is not None:
                await send_json(send, refused[0], {"error": refused[1]})
                return
        if scope["type"] == "http" and scope["path"] == STATS_PATH:
            await send_json(send, 200, self.stats())
            return
        if scope["type"] == "http" and scope["path"] == METRICS_PATH:
            await send_body(send, 200, prometheus_text(self.stats()).encode(), CONTENT_TYPE)
            return
        if scope["type"] == "http" and scope["path"] == FEEDBACK_PATH:
            await self._feedback(scope, receive, send)
            return
        await self.proxy(scope, receive, send)

    async def _feedback(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await send_json(send, 405, {"error": f"{FEEDBACK_PATH} takes POST"})
            return
        try:
            data = await read_json_object(receive)
            request_id, label, comment = data.get("request_id"), data.get("feedback"), data.get("comment")
            if not isinstance(request_id, str | int) or isinstance(request_id, bool) or request_id == "":
                raise ValueError("field 'request_id' is missing or not a string")
            if label is None:
                raise ValueError("field 'feedback' is missing (good or bad)")
            if comment is not None and not isinstance(comment, str):
                raise ValueError("field 'comment' must be a string")
            queued = self.mirror.shadow.feedback(str(request_id), label, comment=comment)
        except ValueError as exc:
            example = '{"request_id": "msg-41", "feedback": "bad", "comment": "wrong year"}'
            await send_json(send, 400, {"error": f"{exc}. Fix: send e.g. {example}"})
            return
        await send_json(send, 202, {"queued": queued})


def _sampler_stats(shadow: Shadow) -> dict[str, Any] | None:
    """The sampler's counters and effective rate, when the sampling policy keeps any."""
    stats = getattr(shadow.sampler, "stats", None)
    return stats() if callable(stats) else None
