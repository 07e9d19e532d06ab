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

import logging
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from pydantic_core import from_json, to_json

from ragreplay.core.chat import ChatRequest, ChatResponse, ProviderError, ResponseFormat
from ragreplay.core.memo import KeyMemo, ObjectMemo
from ragreplay.core.rate_limits import RateLimitInfo, read_rate_limit
from ragreplay.core.types import TokenUsage
from ragreplay.errors import ConfigError, import_extra
from ragreplay.providers.http11_pool import HttpPool
from ragreplay.providers.json_endpoint import JsonEndpoint, body_text, error_detail
from ragreplay.providers.pricing import Price

if TYPE_CHECKING:
    import aiohttp

    from ragreplay.providers.aiohttp_session import LazySession as LazySession

HTTP_CLIENT_ENV = "RAGREPLAY_HTTP_CLIENT"
"""Environment variable choosing the HTTP client: ``http11`` (the default) or ``aiohttp``."""
HTTP_CLIENTS = ("http11", "aiohttp")

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
        import_extra("aiohttp", f"{HTTP_CLIENT_ENV}=aiohttp")  # aiohttp is the [shadow] extra's
        from ragreplay.providers.aiohttp_session import LazySession

        return LazySession(timeout_s, max_connections)
    raise ConfigError(
        f"environment variable {HTTP_CLIENT_ENV}={kind!r} names no HTTP client. "
        f"Fix: set it to one of {', '.join(HTTP_CLIENTS)}, or unset it"
    )


def _refuses_format(status: int, body: bytes) -> bool:
    """Whether an error says the endpoint does not take the ``response_format`` sent (a 400 or 422 naming it)."""
    return status in (400, 422) and _NAMES_FORMAT.search(error_detail(body)) is not None


def _wanted_format(request: ChatRequest) -> int:
    """The index in :data:`REPLY_FORMATS` of what ``request`` asks for."""
    return 0 if request.response_format is not None else 1 if request.json_mode else _NO_FORMAT


def _encode_system_message(content: str) -> bytes:
    return to_json({"role": "system", "content": content})


def _encode_schema_format(schema: ResponseFormat) -> bytes:
    member = {
        "type": "json_schema",
        "json_schema": {"name": schema.name, "schema": schema.json_schema, "strict": True},
    }
    return b',"response_format":%s' % to_json(member)


_system_message_json = KeyMemo(_encode_system_message)
"""A system message as sent (pydantic-core's JSON), encoded once per text."""
_schema_format_json = ObjectMemo(_encode_schema_format)
"""The ``response_format`` member (with its leading comma) asking for a schema, encoded once per format."""


class _FormatRefusedError(Exception):
    """The endpoint answered that it does not take the ``response_format`` that was sent."""


class OpenAICompatModel:
    """A :class:`~ragreplay.ports.ChatModel` that POSTs to ``{base_url}/chat/completions``.

    ``client`` lets several models of one provider share one connection pool: an :class:`HttpPool` or, to send
    with aiohttp, a :class:`LazySession` (both made outside any loop) or an open :class:`aiohttp.ClientSession`;
    one passed in is not closed by :meth:`aclose`. Without it the model makes its own pool of
    ``max_connections`` (:func:`http_client`). ``price`` (per million tokens) sets
    ``ChatResponse.cost_usd`` (0 and ``unpriced_calls`` 1 when ``None``: the price is unknown, and the factory
    says so).
    ``api_key_env`` only improves error messages. ``query`` is added to the URL (Azure's ``api-version``).

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
        query: Mapping[str, str] | None = None,
    ) -> None:
        self._name = name
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        if query:
            self.url += "?" + urlencode(query)
        self.timeout_s = timeout_s
        self.price = price
        self._api_key_env = api_key_env
        sent = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            bearer = api_key_header.lower() == "authorization"
            sent[api_key_header] = f"Bearer {api_key}" if bearer else api_key
        self._owned: HttpPool | LazySession | None = None  # made here, so closed by aclose
        if client is None:
            client = self._owned = http_client(timeout_s, max_connections)
        self._client = client
        self._endpoint = JsonEndpoint(name, self.url, sent, timeout_s, client)
        self._format_floor = 0  # index into REPLY_FORMATS: the most structured kind not refused yet
        self._model_json = (model, b'{"model":%s,"messages":[' % to_json(model))  # for request_bytes

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

    def request_bytes(self, request: ChatRequest, reply_format: int) -> bytes:
        """``to_json(self.request_body(request, reply_format))``, the same bytes, joined from parts: a system
        message and a ``response_format`` are encoded once per value (a judge sends the same ones with every
        request) and JSON's encoding of an object is its members' encodings joined."""
        messages = [
            _system_message_json(m.content)
            if m.role == "system"
            else to_json({"role": m.role, "content": m.content})
            for m in request.messages
        ]
        model, start = self._model_json
        if model is not self.model:
            self._model_json = model, start = self.model, b'{"model":%s,"messages":[' % to_json(self.model)
        parts = [start, b",".join(messages), b'],"temperature":']
        parts.append(to_json(request.temperature))
        if request.max_tokens is not None:
            parts.append(b',"max_tokens":%s' % to_json(request.max_tokens))
        schema = request.response_format
        if reply_format == 0 and schema is not None:
            parts.append(_schema_format_json(schema))
        elif reply_format <= 1:
            parts.append(b',"response_format":{"type":"json_object"}')
        parts.append(b"}")
        return b"".join(parts)

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
        data = self.request_bytes(request, reply_format)
        reply, latency_ms = await self._endpoint.post(data)
        status, headers, body = reply.status, reply.headers, reply.body
        if status >= 400 and reply_format < _NO_FORMAT and _refuses_format(status, body):
            raise _FormatRefusedError(error_detail(body))
        if status >= 400:
            key_env = self._api_key_env or "the provider's api_key_env"
            fixes = {
                400: f"check the model name '{self.model}' and the request parameters (max_tokens, json mode)",
                401: f"check the API key env var {key_env} (missing, expired or for another endpoint)",
                403: f"check that the API key in {key_env} may use model '{self.model}'",
                404: f"check base_url (OpenAI-compatible ones usually end in /v1) and the model '{self.model}'",
                422: f"check the model name '{self.model}' and request parameters",
            }
            raise self._endpoint.status_error(status, headers, body, fixes)
        return self._parse(status, body, latency_ms, read_rate_limit(headers))

    def _parse(
        self, status: int, body: bytes, latency_ms: float, rate_limit: RateLimitInfo | None
    ) -> ChatResponse:
        try:
            data = from_json(body)
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(
                f"{self.name}: {self.url} returned a body that is not an OpenAI chat completion "
                f"({body_text(body, 120)!r}). Fix: point base_url at an OpenAI-compatible /v1 endpoint",
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
            unpriced_calls=int(self.price is None),
            latency_ms=latency_ms,
            rate_limit=rate_limit,
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool if this model made it."""
        if self._owned is not None:
            await self._owned.aclose()
