"""A chat model behind any OpenAI-compatible ``/chat/completions`` endpoint.

Works with OpenAI, Azure OpenAI's v1-compatible endpoint (``api_key_header="api-key"``), vLLM, Ollama, the
llama.cpp server and LM Studio. Errors are classified so the retry layer knows what is worth retrying: 429,
408, 409, 5xx, timeouts and dropped connections are transient; everything else is not and says what to fix.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ragreplay.core.types import TokenUsage
from ragreplay.providers.base import ChatRequest, ChatResponse, ProviderError
from ragreplay.providers.pricing import Price

_TRANSIENT_STATUSES = frozenset({408, 409, 429})
_DETAIL_LIMIT = 300


# httpcore's pool scans every connection (a syscall each) whenever a request starts or ends: measured on
# loopback, one pool of 64 connections served ~60 req/s at 100 ms latency, eight pools of 8 served ~500.
_CONNECTIONS_PER_SHARD = 8


class _CountedStream(httpx.AsyncByteStream):
    """A response body that tells its shard when it is closed."""

    def __init__(self, inner: httpx.AsyncByteStream, release: Any) -> None:
        self._inner = inner
        self._release = release

    async def __aiter__(self) -> Any:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._release()


class ShardedTransport(httpx.AsyncBaseTransport):
    """Spreads requests over several small connection pools, each request to the least busy one."""

    def __init__(self, max_connections: int, per_shard: int = _CONNECTIONS_PER_SHARD) -> None:
        n_shards = max(1, -(-max_connections // per_shard))
        size = -(-max_connections // n_shards)
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self._shards = [httpx.AsyncHTTPTransport(limits=limits) for _ in range(n_shards)]
        self._busy = [0] * n_shards

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the shard with the fewest open requests."""
        index = min(range(len(self._shards)), key=self._busy.__getitem__)
        self._busy[index] += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._busy[index] -= 1

        try:
            response = await self._shards[index].handle_async_request(request)
        except BaseException:
            release()
            raise
        if isinstance(response.stream, httpx.AsyncByteStream):
            response.stream = _CountedStream(response.stream, release)
        else:
            release()
        return response

    async def aclose(self) -> None:
        """Close every shard's pool."""
        for shard in self._shards:
            await shard.aclose()


def make_client(timeout_s: float = 60.0, max_connections: int = 8) -> httpx.AsyncClient:
    """A pooled HTTP client for ``max_connections`` concurrent requests."""
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), transport=ShardedTransport(max_connections))


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date); else ``None``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _error_detail(response: httpx.Response) -> str:
    """The endpoint's own error message if it sent one, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:_DETAIL_LIMIT].strip()
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:_DETAIL_LIMIT]
        if isinstance(err, str):
            return err[:_DETAIL_LIMIT]
    return json.dumps(body)[:_DETAIL_LIMIT]


class OpenAICompatModel:
    """A :class:`~ragreplay.ports.ChatModel` that POSTs to ``{base_url}/chat/completions``.

    ``client`` lets several models of one provider share one connection pool; a client passed in is not closed
    by :meth:`aclose`. ``price`` (per million tokens) sets ``ChatResponse.cost_usd``. ``api_key_env`` only
    improves error messages.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        model: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        client: httpx.AsyncClient | None = None,
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
        self._owns_client = client is None
        self._client = client or make_client(timeout_s, max_connections)

    @property
    def name(self) -> str:
        """``provider:model``."""
        return self._name

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (hints and task are never sent)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send one chat completion; raises :class:`ProviderError` classified as transient or not."""
        started = time.perf_counter()
        try:
            response = await self._client.post(
                self.url, json=self.request_body(request), headers=self._headers, timeout=self.timeout_s
            )
        except httpx.TimeoutException as exc:
            raise ProviderError(
                f"{self.name}: no answer from {self.url} within {self.timeout_s:g} s ({type(exc).__name__})",
                transient=True,
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderError(
                f"{self.name}: connection to {self.url} failed ({type(exc).__name__}: {exc}). "
                "Fix: check that the server is running and base_url is right",
                transient=True,
            ) from exc
        latency_ms = (time.perf_counter() - started) * 1000.0
        if response.status_code >= 400:
            raise self._status_error(response)
        return self._parse(response, latency_ms)

    def _status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        detail = _error_detail(response)
        prefix = f"{self.name}: HTTP {status} from {self.url}: {detail}"
        if status in _TRANSIENT_STATUSES or status >= 500:
            return ProviderError(
                prefix, transient=True, status=status, retry_after=parse_retry_after(response.headers)
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

    def _parse(self, response: httpx.Response, latency_ms: float) -> ChatResponse:
        try:
            data = response.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(
                f"{self.name}: {self.url} returned a body that is not an OpenAI chat completion "
                f"({response.text[:120]!r}). Fix: point base_url at an OpenAI-compatible /v1 endpoint",
                transient=False,
                status=response.status_code,
            ) from exc
        if not isinstance(content, str):
            raise ProviderError(
                f"{self.name}: the reply has no text content (refusal or tool call?)",
                transient=False,
                status=response.status_code,
            )
        usage_raw = data.get("usage") or {}
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
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this model created it."""
        if self._owns_client:
            await self._client.aclose()
