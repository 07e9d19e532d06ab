"""The Anthropic messages API adapter against a loopback server speaking that API: request shape, tool_use
JSON replies, usage and cost, error classes (429 with retry-after, 529 overloaded, 400) and the shared limits."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError, ResponseFormat
from ragreplay.core.retry import RetryPolicy
from ragreplay.providers.anthropic import (
    ANTHROPIC_VERSION,
    JSON_TOOL,
    AnthropicModel,
    read_anthropic_rate_limit,
)
from ragreplay.providers.http11_pool import HttpPool
from ragreplay.providers.limits import LimitedModel
from ragreplay.providers.pricing import Price

REQUEST = ChatRequest(
    messages=(
        ChatMessage(role="system", content="You judge answers."),
        ChatMessage(role="user", content="Is it a fit?"),
    ),
    hints={"never": "sent"},
)
VERDICT = ResponseFormat(
    name="verdict",
    json_schema={"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]},
)


def message(content: list[dict[str, Any]], usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": content,
        "stop_reason": "end_turn",
        "usage": usage or {"input_tokens": 1000, "output_tokens": 200},
    }


def error(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


class MessagesServer:
    """Answers ``POST /v1/messages`` with the queued replies (the last one repeats) and records requests."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        self.headers: list[dict[str, str]] = []
        self.bodies: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(dict(request.headers))
        self.bodies.append(await request.json())
        status, body, headers = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return web.json_response(body, status=status, headers=headers)


Start = Callable[..., Awaitable[tuple[MessagesServer, AnthropicModel]]]


@pytest.fixture
async def start() -> AsyncIterator[Start]:
    servers: list[TestServer] = []
    pools: list[HttpPool] = []

    async def go(
        *replies: tuple[int, dict[str, Any], dict[str, str]], **kwargs: Any
    ) -> tuple[MessagesServer, AnthropicModel]:
        fake = MessagesServer()
        fake.replies = list(replies)
        app = web.Application()
        app.router.add_post("/v1/messages", fake.handle)
        server = TestServer(app)
        await server.start_server()
        servers.append(server)
        pool = HttpPool(10.0, 4)
        pools.append(pool)
        kwargs.setdefault("max_tokens", 4096)
        base = str(server.make_url("")).rstrip("/")
        model = AnthropicModel("anthropic:claude-test-1", base, "claude-test-1", "sk-ant-1", pool, **kwargs)
        return fake, model

    yield go
    for pool in pools:
        await pool.aclose()
    for server in servers:
        await server.close()


async def test_request_shape_text_reply_usage_and_cost(start: Start) -> None:
    text = message([{"type": "text", "text": "Yes, "}, {"type": "text", "text": "it fits."}])
    fake, model = await start((200, text, {}), price=Price(3.0, 15.0), headers={"X-Team": "rag"})
    response = await model.complete(REQUEST.model_copy(update={"temperature": 1.7}))
    assert response.text == "Yes, it fits."
    assert (response.usage.input, response.usage.output) == (1000, 200)
    assert response.cost_usd == pytest.approx((1000 * 3 + 200 * 15) / 1e6)
    assert response.model == "claude-test-1" and response.latency_ms > 0
    headers = fake.headers[0]
    assert headers["x-api-key"] == "sk-ant-1" and headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "Authorization" not in headers and headers["X-Team"] == "rag"
    assert fake.bodies[0] == {
        "model": "claude-test-1",
        "max_tokens": 4096,  # required by the API: the provider's default when the request sets none
        "system": "You judge answers.",  # apart from the messages
        "messages": [{"role": "user", "content": "Is it a fit?"}],
        "temperature": 1.0,  # clamped to the API's range
    }


async def test_a_schema_is_sent_as_a_forced_tool_and_its_input_is_the_json_reply(start: Start) -> None:
    tool_use = message(
        [
            {"type": "text", "text": "Let me answer."},
            {"type": "tool_use", "id": "tu_1", "name": "verdict", "input": {"verdict": "FIT"}},
        ]
    )
    fake, model = await start((200, tool_use, {}))
    response = await model.complete(REQUEST.model_copy(update={"response_format": VERDICT, "max_tokens": 50}))
    assert json.loads(response.text) == {"verdict": "FIT"}
    body = fake.bodies[0]
    assert body["max_tokens"] == 50
    assert body["tools"] == [
        {
            "name": "verdict",
            "description": "Give the answer as this tool's input.",
            "input_schema": VERDICT.json_schema,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}


async def test_json_mode_without_a_schema_forces_an_any_object_tool(start: Start) -> None:
    tool_use = message([{"type": "tool_use", "id": "tu_1", "name": JSON_TOOL, "input": {"score": 4}}])
    fake, model = await start((200, tool_use, {}))
    response = await model.complete(REQUEST.model_copy(update={"json_mode": True}))
    assert json.loads(response.text) == {"score": 4}
    assert fake.bodies[0]["tools"][0]["input_schema"]["type"] == "object"
    assert fake.bodies[0]["tool_choice"] == {"type": "tool", "name": JSON_TOOL}


async def test_429_is_transient_with_its_retry_after(start: Start) -> None:
    _, model = await start(
        (429, error("rate_limit_error", "Number of requests exceeded"), {"retry-after": "7"})
    )
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient and info.value.status == 429 and info.value.retry_after == 7
    assert "Number of requests exceeded" in str(info.value)


async def test_529_overloaded_and_500_are_transient(start: Start) -> None:
    for status, kind in ((529, "overloaded_error"), (500, "api_error")):
        _, model = await start((status, error(kind, "Overloaded"), {}))
        with pytest.raises(ProviderError) as info:
            await model.complete(REQUEST)
        assert info.value.transient and info.value.status == status


async def test_400_is_permanent_and_says_what_to_fix(start: Start) -> None:
    _, model = await start((400, error("invalid_request_error", "max_tokens: must be at most 8192"), {}))
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert not info.value.transient and info.value.status == 400
    assert "max_tokens: must be at most 8192" in str(info.value) and "Fix:" in str(info.value)


async def test_a_reply_without_text_or_tool_use_is_an_error(start: Start) -> None:
    _, model = await start((200, {**message([]), "stop_reason": "refusal"}, {}))
    with pytest.raises(ProviderError, match="refusal") as info:
        await model.complete(REQUEST)
    assert not info.value.transient


async def test_the_limits_layer_waits_out_429_and_retries_529(start: Start) -> None:
    ok = message([{"type": "text", "text": "done"}])
    fake, model = await start(
        (429, error("rate_limit_error", "slow down"), {"retry-after": "1"}),
        (529, error("overloaded_error", "Overloaded"), {}),
        (200, ok, {}),
    )
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    limited = LimitedModel(model, 2, None, RetryPolicy(max_retries=3, base_s=0.5), sleep=sleep)
    response = await limited.complete(REQUEST)
    assert response.text == "done" and len(fake.bodies) == 3
    assert waits and 0.9 < max(waits) <= 1.0  # the 429's retry-after was waited out (on a real clock)


def test_anthropic_rate_limit_headers_are_read() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    reset = (now + timedelta(seconds=12)).isoformat().replace("+00:00", "Z")
    info = read_anthropic_rate_limit(
        {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "20",
            "anthropic-ratelimit-requests-reset": reset,
        },
        now,
    )
    assert info is not None and (info.limit, info.remaining, info.reset_s) == (50, 20, 12)
    assert read_anthropic_rate_limit({"content-type": "application/json"}, now) is None
