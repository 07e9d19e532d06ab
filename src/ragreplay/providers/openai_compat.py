"""A chat model behind any OpenAI-compatible ``/chat/completions`` endpoint.

Works with OpenAI, Azure OpenAI's v1-compatible endpoint (``api_key_header="api-key"``), vLLM, Ollama, the
llama.cpp server and LM Studio. Errors are classified so the retry layer knows what is worth retrying: 429,
408, 409, 5xx, timeouts and dropped connections are transient; everything else is not and says what to fix (so
is a 429 for an exhausted quota: waiting does not refill it). Every answer carries what the endpoint's
``x-ratelimit-*`` headers said, for the limits layer to learn the pace.
The replay loop is CPU-bound on the client, so requests go through a minimal HTTP/1.1 keep-alive client
(:mod:`ragreplay.providers.http11_pool`, httptools parsing the replies): against the mock server it costs a
fraction of aiohttp's CPU a call, which costs a third of httpx's. ``RAGREPLAY_HTTP_CLIENT=aiohttp`` (or passing
an aiohttp ``LazySession`` or ``ClientSession`` as ``client``) sends them with aiohttp instead.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json, to_json

from ragreplay.core.chat import ChatRequest, ChatResponse, ProviderError
from ragreplay.core.rate_limits import RateLimitInfo, read_rate_limit
from ragreplay.core.retry import retry_after_seconds
from ragreplay.core.types import TokenUsage
from ragreplay.errors import ConfigError
from ragreplay.providers.http11 import HttpConnectionError, HttpReply, ReplyTooLargeError
from ragreplay.providers.http11_pool import HttpPool, PostTarget
from ragreplay.providers.pricing import Price

if TYPE_CHECKING:
    import aiohttp

    from ragreplay.providers.aiohttp_session import LazySession as LazySession

HTTP_CLIENT_ENV = "RAGREPLAY_HTTP_CLIENT"
"""Environment variable choosing the HTTP client: ``http11`` (the default) or ``aiohttp``."""
HTTP_CLIENTS = ("http11", "aiohttp")

_TRANSIENT_STATUSES = frozenset({408, 409, 429})
_DETAIL_LIMIT = 300

REPLY_FORMATS = ("json_schema", "json_object", "none")
"""The ``response_format`` kinds, most structured first: a request gets the one it asks for, or a later one
where the endpoint refused it."""
_NO_FORMAT = len(REPLY_FORMATS) - 1
_NAMES_FORMAT = re.compile(r"response.?format|json.?schema|json.?object|structured.?output", re.I)

log = logging.getLogger(__name__)


def __getattr__(name: str) -> Any:
    # LazySession (the aiohttp client's pool) is importable from here as before, without importing aiohttp
    # for the default client.
    if name == "LazySession":
        from ragreplay.providers.aiohttp_session import LazySession

        return LazySession
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def http_client(
    timeout_s: float, max_connections: int, env: Mapping[str, str] | None = None
) -> HttpPool | LazySession:
    """A new connection pool of the client ``env`` (``os.environ`` by default) names in ``RAGREPLAY_HTTP_CLIENT``.

    Raises :class:`ConfigError` for a name that is not one of :data:`HTTP_CLIENTS`.
    """
    kind = (os.environ if env is None else env).get(HTTP_CLIENT_ENV, "").strip().lower() or "http11"
    if kind == "http11":
        return HttpPool(timeout_s, max_connections)
    if kind == "aiohttp":
        from ragreplay.providers.aiohttp_session import LazySession

        return LazySession(timeout_s, max_connections)
    raise ConfigError(
        f"environment variable {HTTP_CLIENT_ENV}={kind!r} names no HTTP client. "
        f"Fix: set it to one of {', '.join(HTTP_CLIENTS)}, or unset it"
    )


def _text(body: bytes, limit: int) -> str:
    return body[: limit * 4].decode("utf-8", errors="replace")[:limit]


def _error_detail(body: bytes) -> str:
    """The endpoint's own error message if it sent one, else the start of the body."""
    try:
        data = json.loads(body)
    except ValueError:
        return _text(body, _DETAIL_LIMIT).strip()
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:_DETAIL_LIMIT]
        if isinstance(err, str):
            return err[:_DETAIL_LIMIT]
    return json.dumps(data)[:_DETAIL_LIMIT]


def _refuses_format(status: int, body: bytes) -> bool:
    """Whether an error says the endpoint does not take the ``response_format`` sent (a 400 or 422 naming it)."""
    return status in (400, 422) and _NAMES_FORMAT.search(_error_detail(body)) is not None


def _wanted_format(request: ChatRequest) -> int:
    """The index in :data:`REPLY_FORMATS` of what ``request`` asks for."""
    return 0 if request.response_format is not None else 1 if request.json_mode else _NO_FORMAT


class _FormatRefusedError(Exception):
    """The endpoint answered that it does not take the ``response_format`` that was sent."""


def _quota_exhausted(body: bytes) -> bool:
    """Whether a 429 says the key's quota is spent (OpenAI's ``insufficient_quota``) rather than its rate."""
    try:
        err = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return False
    return isinstance(err, dict) and "insufficient_quota" in (err.get("code"), err.get("type"))


class OpenAICompatModel:
    """A :class:`~ragreplay.ports.ChatModel` that POSTs to ``{base_url}/chat/completions``.

    ``client`` lets several models of one provider share one connection pool: an :class:`HttpPool` or, to send
    with aiohttp, a :class:`LazySession` (both made outside any loop) or an open :class:`aiohttp.ClientSession`;
    one passed in is not closed by :meth:`aclose`. Without it the model makes its own pool of
    ``max_connections`` (:func:`http_client`). ``price`` (per million tokens) sets
    ``ChatResponse.cost_usd``. ``api_key_env`` only improves error messages.

    A request with a ``response_format`` is sent as ``json_schema`` (strict), one with only ``json_mode`` as
    ``json_object``. An endpoint that answers 400/422 naming the response format gets the request again once
    with the next kind in :data:`REPLY_FORMATS` (``json_object``, then none), and this model remembers it: its
    later requests start there. The judges read replies tolerantly, so a reply without a format still counts.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        model: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        client: HttpPool | LazySession | aiohttp.ClientSession | None = None,
        *,
        api_key_header: str = "Authorization",
        api_key_env: str | None = None,
        max_connections: int = 8,
        price: Price | None = None,
    ) -> None:
        self._name = name
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = timeout_s
        self.price = price
        self._api_key_env = api_key_env
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            bearer = api_key_header.lower() == "authorization"
            self._headers[api_key_header] = f"Bearer {api_key}" if bearer else api_key
        self._owned: HttpPool | LazySession | None = None  # made here, so closed by aclose
        if client is None:
            client = self._owned = http_client(timeout_s, max_connections)
        self._client = client
        self._target: PostTarget | None = None  # the request's fixed part, made on the first call
        self._aiohttp_timeout: aiohttp.ClientTimeout | None = None
        self._format_floor = 0  # index into REPLY_FORMATS: the most structured kind not refused yet

    @property
    def name(self) -> str:
        """``provider:model``."""
        return self._name

    @property
    def reply_format(self) -> str:
        """The most structured ``response_format`` kind this endpoint has not refused (:data:`REPLY_FORMATS`)."""
        return REPLY_FORMATS[self._format_floor]

    def request_body(self, request: ChatRequest, reply_format: int | None = None) -> dict[str, Any]:
        """The JSON body sent for ``request`` (hints and task are never sent), with the ``response_format``
        of index ``reply_format`` in :data:`REPLY_FORMATS` (by default what it asks for and may be sent)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        kind = self._format_for(request) if reply_format is None else reply_format
        schema = request.response_format
        if kind == 0 and schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.json_schema, "strict": True},
            }
        elif kind <= 1:
            body["response_format"] = {"type": "json_object"}
        return body

    def _format_for(self, request: ChatRequest) -> int:
        return max(_wanted_format(request), self._format_floor)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send one chat completion; raises :class:`ProviderError` classified as transient or not.

        A refused ``response_format`` is sent again with the next kind (see the class docstring).
        """
        kind = self._format_for(request)
        while True:
            try:
                return await self._send(request, kind)
            except _FormatRefusedError as refused:
                self._format_floor = max(self._format_floor, kind + 1)
                log.warning(
                    "%s: %s does not take response_format %s (%s); sending %s instead",
                    self.name,
                    self.url,
                    REPLY_FORMATS[kind],
                    refused,
                    REPLY_FORMATS[kind + 1],
                )
                kind += 1

    async def _send(self, request: ChatRequest, reply_format: int) -> ChatResponse:
        client = self._client
        data = to_json(
            self.request_body(request, reply_format)
        )  # pydantic-core's encoder: a third of json's CPU
        started = time.perf_counter()
        try:
            if isinstance(client, HttpPool):
                reply = await client.post(self._target or self._post_target(), data, self.timeout_s)
            else:
                reply = await self._aiohttp_post(client, data)
        except TimeoutError as exc:  # aiohttp's own timeout errors subclass it too
            raise ProviderError(
                f"{self.name}: no answer from {self.url} within {self.timeout_s:g} s ({type(exc).__name__})",
                transient=True,
            ) from exc
        except HttpConnectionError as exc:
            raise ProviderError(
                f"{self.name}: connection to {self.url} failed ({exc}). "
                "Fix: check that the server is running and base_url is right",
                transient=True,
            ) from exc
        except ReplyTooLargeError as exc:
            raise ProviderError(
                f"{self.name}: {self.url} sent {exc}, more than a chat completion can be. "
                "Fix: check that base_url points at an OpenAI-compatible /v1 endpoint",
                transient=False,
                status=exc.status,
            ) from exc
        status, headers, body = reply.status, reply.headers, reply.body
        latency_ms = (time.perf_counter() - started) * 1000.0
        if status >= 400 and reply_format < _NO_FORMAT and _refuses_format(status, body):
            raise _FormatRefusedError(_error_detail(body))
        if status >= 400:
            raise self._status_error(status, headers, body)
        return self._parse(status, body, latency_ms, read_rate_limit(headers))

    def _post_target(self) -> PostTarget:
        try:
            self._target = PostTarget(self.url, self._headers)
        except ValueError as exc:
            raise ProviderError(
                f"{self.name}: cannot send to {self.url}: {exc}. Fix: set base_url to http(s)://host[:port]/... "
                "and give header values on one line",
                transient=False,
            ) from exc
        return self._target

    async def _aiohttp_post(self, client: LazySession | aiohttp.ClientSession, data: bytes) -> HttpReply:
        from ragreplay.providers.aiohttp_session import aiohttp_post, client_timeout

        if self._aiohttp_timeout is None:
            self._aiohttp_timeout = client_timeout(self.timeout_s)
        return await aiohttp_post(client, self.url, data, self._headers, self._aiohttp_timeout)

    def _status_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
        detail = _error_detail(body)
        prefix = f"{self.name}: HTTP {status} from {self.url}: {detail}"
        if status == 429 and _quota_exhausted(body):
            fix = "add credit or raise the quota of the key in the provider's console"
            return ProviderError(f"{prefix}. Fix: {fix}", transient=False, status=status)
        if status in _TRANSIENT_STATUSES or status >= 500:
            return ProviderError(
                prefix,
                transient=True,
                status=status,
                retry_after=retry_after_seconds(headers, datetime.now(UTC)),
                rate_limit=read_rate_limit(headers),
            )
        key_env = self._api_key_env or "the provider's api_key_env"
        fixes = {
            400: f"check the model name '{self.model}' and the request parameters (max_tokens, json mode)",
            401: f"check the API key env var {key_env} (missing, expired or for another endpoint)",
            403: f"check that the API key in {key_env} may use model '{self.model}'",
            404: f"check base_url (OpenAI-compatible ones usually end in /v1) and the model '{self.model}'",
            422: f"check the model name '{self.model}' and request parameters",
        }
        fix = fixes.get(status, "check the provider settings")
        return ProviderError(f"{prefix}. Fix: {fix}", transient=False, status=status)

    def _parse(
        self, status: int, body: bytes, latency_ms: float, rate_limit: RateLimitInfo | None
    ) -> ChatResponse:
        try:
            data = from_json(body)
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(
                f"{self.name}: {self.url} returned a body that is not an OpenAI chat completion "
                f"({_text(body, 120)!r}). Fix: point base_url at an OpenAI-compatible /v1 endpoint",
                transient=False,
                status=status,
            ) from exc
        if not isinstance(content, str):
            raise ProviderError(
                f"{self.name}: the reply has no text content (refusal or tool call?)",
                transient=False,
                status=status,
            )
        usage_raw = data.get("usage") or {}
        # Validated construction: pydantic-core's validation costs less than model_construct's Python here.
        usage = TokenUsage(
            input=int(usage_raw.get("prompt_tokens") or 0),
            output=int(usage_raw.get("completion_tokens") or 0),
        )
        cost = self.price.cost(usage) if self.price is not None else 0.0
        return ChatResponse(
            text=content,
            model=str(data.get("model") or self.model),
            usage=usage,
            cost_usd=cost,
            latency_ms=latency_ms,
            rate_limit=rate_limit,
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool if this model made it."""
        if self._owned is not None:
            await self._owned.aclose()
