"""The OpenAI-compatible client against an in-process transport: request shape, parsing, error classes."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from ragreplay.providers.base import ChatMessage, ChatRequest, ProviderError
from ragreplay.providers.openai_compat import OpenAICompatModel, parse_retry_after
from ragreplay.providers.pricing import Price

REQUEST = ChatRequest(
    messages=(ChatMessage(role="system", content="be brief"), ChatMessage(role="user", content="hi")),
    task="generate",
    hints={"question": "secret hint"},
)


def completion(content: Any = "hello", usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-x-2025",
        "choices": [{"message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def model_with(handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any) -> OpenAICompatModel:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAICompatModel("test:gpt-x", "https://api.example/v1/", "gpt-x", client=client, **kwargs)


async def test_request_shape_headers_and_parsed_response() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=completion("hello", {"prompt_tokens": 12, "completion_tokens": 3}))

    model = model_with(handler, api_key="sk-1", headers={"X-Team": "rag"}, price=Price(1.0, 2.0))
    request = REQUEST.model_copy(update={"json_mode": True, "max_tokens": 50, "temperature": 0.2})
    response = await model.complete(request)
    sent = seen[0]
    assert str(sent.url) == "https://api.example/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-1"
    assert sent.headers["x-team"] == "rag"
    body = json.loads(sent.content)
    assert body == {
        "model": "gpt-x",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "max_tokens": 50,
        "response_format": {"type": "json_object"},
    }
    assert response.text == "hello"
    assert response.model == "gpt-x-2025"
    assert (response.usage.input, response.usage.output) == (12, 3)
    assert response.cost_usd == pytest.approx((12 * 1.0 + 3 * 2.0) / 1e6)
    assert response.latency_ms >= 0 and response.cached is False


async def test_plain_request_omits_optional_fields_and_azure_key_header() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=completion())

    model = model_with(handler, api_key="az-1", api_key_header="api-key")
    response = await model.complete(REQUEST)
    body = json.loads(seen[0].content)
    assert "max_tokens" not in body and "response_format" not in body
    assert "hint" not in seen[0].content.decode()
    assert seen[0].headers["api-key"] == "az-1"
    assert "authorization" not in seen[0].headers
    assert (response.usage.input, response.usage.output) == (0, 0)  # no usage in the body


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
async def test_retryable_statuses_are_transient(status: int) -> None:
    model = model_with(
        lambda r: httpx.Response(status, json={"error": {"message": "busy"}}, headers={"Retry-After": "3"})
    )
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient is True
    assert info.value.status == status
    assert info.value.retry_after == 3.0
    assert "busy" in str(info.value)


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, "model name"),
        (401, "MY_KEY"),
        (403, "MY_KEY"),
        (404, "base_url"),
        (422, "request parameters"),
    ],
)
async def test_client_errors_are_permanent_and_say_what_to_fix(status: int, hint: str) -> None:
    model = model_with(
        lambda r: httpx.Response(status, json={"error": {"message": "nope"}}), api_key_env="MY_KEY"
    )
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient is False
    assert info.value.status == status
    assert "Fix:" in str(info.value) and hint in str(info.value)
    assert "nope" in str(info.value)


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="<html>proxy login</html>"),
        httpx.Response(200, json={"choices": []}),
        httpx.Response(200, json={"object": "list"}),
        httpx.Response(200, json=completion(content=None)),
    ],
)
async def test_malformed_bodies_are_permanent_errors(response: httpx.Response) -> None:
    model = model_with(lambda r: response)
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient is False


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadTimeout("slow"),
        httpx.ConnectTimeout("slow"),
        httpx.ConnectError("refused"),
        httpx.RemoteProtocolError("reset"),
        httpx.ReadError("reset"),
    ],
)
async def test_timeouts_and_connection_drops_are_transient(exc: Exception) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    with pytest.raises(ProviderError) as info:
        await model_with(handler).complete(REQUEST)
    assert info.value.transient is True
    assert info.value.status is None


def test_parse_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "1"}) == 0.25
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30.0)
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": past}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


async def test_aclose_closes_only_an_owned_client() -> None:
    shared = httpx.AsyncClient()
    borrowed = OpenAICompatModel("a:m", "http://127.0.0.1:9/v1", "m", client=shared)
    await borrowed.aclose()
    assert not shared.is_closed
    owned = OpenAICompatModel("a:m", "http://127.0.0.1:9/v1", "m")
    await owned.aclose()
    assert owned._client.is_closed
    await shared.aclose()
