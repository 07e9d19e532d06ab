"""A chat model behind Anthropic's messages API (``POST {base_url}/v1/messages``), without the SDK.

The system prompt goes apart (``system``), ``max_tokens`` is always sent (Anthropic requires it), and a
request for JSON becomes one tool whose ``input_schema`` is the schema asked for (or any object, for plain JSON
mode) with ``tool_choice`` forcing it: the reply's ``tool_use`` input is the JSON answer, so it always parses.
Requests go through the provider's shared HTTP client (:class:`~ragreplay.providers.json_endpoint.JsonEndpoint`)
and errors are classified as for the OpenAI-compatible endpoints: 429 (with ``retry-after``), 529 "overloaded"
and other 5xx are transient, 400, 401, 403 and 404 are not and say what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json, to_json

from ragreplay.core.chat import ChatRequest, ChatResponse, ProviderError
from ragreplay.core.rate_limits import RateLimitInfo
from ragreplay.core.retry import header_number
from ragreplay.core.types import TokenUsage
from ragreplay.providers.http11_pool import HttpPool
from ragreplay.providers.json_endpoint import JsonEndpoint, body_text
from ragreplay.providers.pricing import Price

if TYPE_CHECKING:
    import aiohttp

    from ragreplay.providers.aiohttp_session import LazySession

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header: the messages API's version."""
JSON_TOOL = "json_reply"
"""The tool named when a request asks for JSON without a schema."""
_ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}


def read_anthropic_rate_limit(headers: Mapping[str, str], now: datetime) -> RateLimitInfo | None:
    """The request limit Anthropic's ``anthropic-ratelimit-requests-*`` headers report (the reset is an RFC 3339
    time), or ``None`` when they report none of it."""
    lowered = {
        k.lower(): v for k, v in headers.items() if k.lower().startswith("anthropic-ratelimit-requests-")
    }
    if not lowered:
        return None
    reset_s = None
    reset = lowered.get("anthropic-ratelimit-requests-reset")
    if reset:
        try:
            reset_s = max(0.0, (datetime.fromisoformat(reset.strip()) - now).total_seconds())
        except ValueError:
            reset_s = None
    info = RateLimitInfo(
        limit=header_number(lowered.get("anthropic-ratelimit-requests-limit")),
        remaining=header_number(lowered.get("anthropic-ratelimit-requests-remaining")),
        reset_s=reset_s,
    )
    return None if info == RateLimitInfo() else info


class AnthropicModel:
    """A :class:`~ragreplay.ports.ChatModel` speaking the Anthropic messages API.

    ``client`` is the provider's shared connection pool (closed by its owner, the factory). ``max_tokens`` is
    sent when a request sets none. ``price`` (per million tokens) sets ``ChatResponse.cost_usd`` (0 and
    ``unpriced_calls`` 1 when ``None``: the price is unknown, and the factory says so). ``api_key_env`` only
    improves error messages.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        model: str,
        api_key: str | None,
        client: HttpPool | LazySession | aiohttp.ClientSession,
        *,
        max_tokens: int,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        api_key_env: str | None = None,
        price: Price | None = None,
    ) -> None:
        self._name = name
        self.model = model
        self.max_tokens = max_tokens
        self.price = price
        self._api_key_env = api_key_env
        self.url = base_url.rstrip("/").removesuffix("/v1") + "/v1/messages"
        sent = {"Content-Type": "application/json", "anthropic-version": ANTHROPIC_VERSION, **(headers or {})}
        if api_key:
            sent["x-api-key"] = api_key
        self._client = client
        self._endpoint = JsonEndpoint(name, self.url, sent, timeout_s, client)

    @property
    def name(self) -> str:
        """``provider:model``."""
        return self._name

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (hints and task are never sent)."""
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": [
                {"role": m.role, "content": m.content} for m in request.messages if m.role != "system"
            ],
            "temperature": min(max(request.temperature, 0.0), 1.0),
        }
        if system:
            body["system"] = system
        tool = self._json_tool(request)
        if tool is not None:
            body["tools"] = [tool]
            body["tool_choice"] = {"type": "tool", "name": tool["name"]}
        return body

    @staticmethod
    def _json_tool(request: ChatRequest) -> dict[str, Any] | None:
        schema = request.response_format
        if schema is not None and schema.json_schema.get("type") == "object":
            return {
                "name": schema.name[:64],
                "description": "Give the answer as this tool's input.",
                "input_schema": schema.json_schema,
            }
        if schema is not None or request.json_mode:
            return {
                "name": JSON_TOOL,
                "description": "Give the JSON answer as this tool's input.",
                "input_schema": _ANY_OBJECT,
            }
        return None

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send one message request; raises :class:`ProviderError` classified as transient or not."""
        reply, latency_ms = await self._endpoint.post(to_json(self.request_body(request)))
        if reply.status >= 400:
            raise self._endpoint.status_error(reply.status, reply.headers, reply.body, self._fixes())
        rate_limit = read_anthropic_rate_limit(reply.headers, datetime.now(UTC))
        return self._parse(reply.status, reply.body, latency_ms, rate_limit)

    def _fixes(self) -> dict[int, str]:
        key_env = self._api_key_env or "the provider's api_key_env"
        return {
            400: f"check the model name '{self.model}' and the request parameters (max_tokens, messages)",
            401: f"check the API key env var {key_env} (missing, expired or for another endpoint)",
            403: f"check that the API key in {key_env} may use model '{self.model}'",
            404: f"check base_url (https://api.anthropic.com, without /v1/messages) and the model '{self.model}'",
            413: "send a shorter request: the prompt is over the API's size limit",
        }

    def _parse(
        self, status: int, body: bytes, latency_ms: float, rate_limit: RateLimitInfo | None
    ) -> ChatResponse:
        try:
            data = from_json(body)
            blocks = data["content"]
            usage_raw = data.get("usage") or {}
            tool_inputs = [b["input"] for b in blocks if b.get("type") == "tool_use"]
            texts = [b["text"] for b in blocks if b.get("type") == "text"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ProviderError(
                f"{self.name}: {self.url} returned a body that is not an Anthropic message "
                f"({body_text(body, 120)!r}). Fix: point base_url at https://api.anthropic.com or a compatible API",
                transient=False,
                status=status,
            ) from exc
        if tool_inputs:
            text = to_json(tool_inputs[0]).decode("utf-8")
        elif texts and all(isinstance(t, str) for t in texts):
            text = "".join(texts)
        else:
            raise ProviderError(
                f"{self.name}: the reply has no text (stop_reason {data.get('stop_reason')!r})",
                transient=False,
                status=status,
            )
        usage = TokenUsage(
            input=int(usage_raw.get("input_tokens") or 0)
            + int(usage_raw.get("cache_creation_input_tokens") or 0)
            + int(usage_raw.get("cache_read_input_tokens") or 0),
            output=int(usage_raw.get("output_tokens") or 0),
        )
        return ChatResponse(
            text=text,
            model=str(data.get("model") or self.model),
            usage=usage,
            cost_usd=self.price.cost(usage) if self.price is not None else 0.0,
            unpriced_calls=int(self.price is None),
            latency_ms=latency_ms,
            rate_limit=rate_limit,
        )

    async def aclose(self) -> None:
        """Nothing to close: the connection pool is the factory's."""
