"""The OpenAI-compatible client against small loopback servers: request shape, parsing, error classes, sessions."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError
from ragreplay.core.rate_limits import RateLimitInfo
from ragreplay.core.retry import retry_after_seconds
from ragreplay.providers.http11_pool import HttpPool
from ragreplay.providers.openai_compat import HTTP_CLIENT_ENV, HTTP_CLIENTS, LazySession, OpenAICompatModel
from ragreplay.providers.pricing import Price

REQUEST = ChatRequest(
    messages=(ChatMessage(role="system", content="be brief"), ChatMessage(role="user", content="hi")),
    task="generate",
    hints={"question": "secret hint"},
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def completion(content: Any = "hello", usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-x-2025",
        "choices": [{"message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def replying(status: int = 200, **kwargs: Any) -> Handler:
    """A handler that always sends the same response (``web.Response`` keyword arguments)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, **kwargs)

    return handler


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    return replying(status, text=json.dumps(body), content_type="application/json", headers=headers)


@dataclass
class Seen:
    """What the server received."""

    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)


@dataclass
class Served:
    base_url: str
    seen: Seen
    models: list[OpenAICompatModel]

    def model(self, **kwargs: Any) -> OpenAICompatModel:
        model = OpenAICompatModel("test:gpt-x", self.base_url + "/", "gpt-x", **kwargs)
        self.models.append(model)
        return model


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[Served]]]:
    """Starts a loopback server answering ``/v1/chat/completions`` with the given handler."""
    servers: list[TestServer] = []
    served: list[Served] = []

    async def start(handler: Handler) -> Served:
        seen = Seen()

        async def recording(request: web.Request) -> web.StreamResponse:
            seen.headers.append(dict(request.headers))
            seen.bodies.append(await request.read())
            return await handler(request)

        app = web.Application()
        app.router.add_post("/v1/chat/completions", recording)
        server = TestServer(app)
        await server.start_server()
        servers.append(server)
        result = Served(str(server.make_url("/v1")), seen, [])
        served.append(result)
        return result

    yield start
    for item in served:
        for model in item.models:
            await model.aclose()
    for server in servers:
        await server.close()


async def test_request_shape_headers_and_parsed_response(serve: Any) -> None:
    served = await serve(json_reply(completion("hello", {"prompt_tokens": 12, "completion_tokens": 3})))
    model = served.model(api_key="sk-1", headers={"X-Team": "rag"}, price=Price(1.0, 2.0))
    assert model.url == served.base_url + "/chat/completions"
    request = REQUEST.model_copy(update={"json_mode": True, "max_tokens": 50, "temperature": 0.2})
    response = await model.complete(request)
    headers = served.seen.headers[0]
    assert headers["Authorization"] == "Bearer sk-1"
    assert headers["X-Team"] == "rag"
    assert headers["Content-Type"] == "application/json"
    assert json.loads(served.seen.bodies[0]) == {
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
    assert response.latency_ms > 0 and response.cached is False


async def test_latency_covers_the_servers_delay(serve: Any) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.05)
        return await json_reply(completion())(request)

    response = await (await serve(slow)).model().complete(REQUEST)
    assert response.latency_ms >= 50


async def test_plain_request_omits_optional_fields_and_azure_key_header(serve: Any) -> None:
    served = await serve(json_reply(completion()))
    response = await served.model(api_key="az-1", api_key_header="api-key").complete(REQUEST)
    body = json.loads(served.seen.bodies[0])
    assert "max_tokens" not in body and "response_format" not in body
    assert b"hint" not in served.seen.bodies[0]
    assert served.seen.headers[0]["api-key"] == "az-1"
    assert "Authorization" not in served.seen.headers[0]
    assert (response.usage.input, response.usage.output) == (0, 0)  # no usage in the body


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
async def test_retryable_statuses_are_transient(serve: Any, status: int) -> None:
    served = await serve(json_reply({"error": {"message": "busy"}}, status, headers={"Retry-After": "3"}))
    with pytest.raises(ProviderError) as info:
        await served.model().complete(REQUEST)
    assert info.value.transient is True
    assert info.value.status == status
    assert info.value.retry_after == 3.0
    assert "busy" in str(info.value)


async def test_retry_after_ms_and_http_date_are_read_from_the_response(serve: Any) -> None:
    ms = await serve(json_reply({"error": "slow down"}, 429, headers={"retry-after-ms": "1500"}))
    with pytest.raises(ProviderError) as info:
        await ms.model().complete(REQUEST)
    assert info.value.retry_after == 1.5 and "slow down" in str(info.value)
    date = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    dated = await serve(replying(503, text="overloaded", headers={"Retry-After": date}))
    with pytest.raises(ProviderError) as info:
        await dated.model().complete(REQUEST)
    assert info.value.retry_after is not None and 50 < info.value.retry_after <= 60
    assert "HTTP 503" in str(info.value) and "overloaded" in str(info.value)


OPENAI_LIMIT_HEADERS = {
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-remaining-requests": "9990",
    "x-ratelimit-reset-requests": "60ms",
    "x-ratelimit-limit-tokens": "1000000",
}


async def test_rate_limit_headers_come_with_answers_and_429s(serve: Any) -> None:
    ok = await serve(json_reply(completion(), headers=OPENAI_LIMIT_HEADERS))
    response = await ok.model().complete(REQUEST)
    assert response.rate_limit == RateLimitInfo(limit=10000, remaining=9990, reset_s=0.06)
    assert "rate_limit" not in response.model_dump()  # never cached
    limited = await serve(json_reply({"error": {"message": "slow down"}}, 429, headers=OPENAI_LIMIT_HEADERS))
    with pytest.raises(ProviderError) as info:
        await limited.model().complete(REQUEST)
    assert info.value.transient and info.value.rate_limit == response.rate_limit
    plain = await serve(json_reply(completion()))
    assert (await plain.model().complete(REQUEST)).rate_limit is None


async def test_a_429_for_an_exhausted_quota_is_permanent(serve: Any) -> None:
    quota = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    served = await serve(json_reply(quota, 429))
    with pytest.raises(ProviderError) as info:
        await served.model().complete(REQUEST)
    assert info.value.transient is False and info.value.status == 429
    assert "quota" in str(info.value) and "Fix:" in str(info.value)


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
async def test_client_errors_are_permanent_and_say_what_to_fix(serve: Any, status: int, hint: str) -> None:
    served = await serve(json_reply({"error": {"message": "nope"}}, status))
    with pytest.raises(ProviderError) as info:
        await served.model(api_key_env="MY_KEY").complete(REQUEST)
    assert info.value.transient is False
    assert info.value.status == status
    assert "Fix:" in str(info.value) and hint in str(info.value)
    assert "nope" in str(info.value)


@pytest.mark.parametrize(
    "handler",
    [
        replying(text="<html>proxy login</html>", content_type="text/html"),
        json_reply({"choices": []}),
        json_reply({"object": "list"}),
        json_reply(completion(content=None)),
    ],
)
async def test_malformed_bodies_are_permanent_errors(serve: Any, handler: Handler) -> None:
    with pytest.raises(ProviderError) as info:
        await (await serve(handler)).model().complete(REQUEST)
    assert info.value.transient is False and info.value.status == 200


async def test_a_non_json_body_is_quoted_in_the_error(serve: Any) -> None:
    served = await serve(replying(text="<html>proxy login</html>", content_type="text/html"))
    with pytest.raises(ProviderError, match=r"proxy login.*Fix: point base_url"):
        await served.model().complete(REQUEST)


RAW_REPLIES = {
    "hang": None,
    "close": b"",
    "garbage": b"NOT HTTP AT ALL\r\n\r\n",
    "short_body": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Type: application/json\r\n\r\n{",
}


@pytest.mark.parametrize("behaviour", list(RAW_REPLIES))
async def test_timeouts_and_connection_drops_are_transient(behaviour: str) -> None:
    handlers: list[asyncio.Task[Any]] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await reader.readuntil(b"\r\n\r\n")
            reply = RAW_REPLIES[behaviour]
            if reply is None:
                await reader.read()  # until the client gives up
            else:
                writer.write(reply)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            await writer.wait_closed()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    model = OpenAICompatModel("test:m", f"http://127.0.0.1:{port}/v1", "m", timeout_s=0.2)
    try:
        with pytest.raises(ProviderError) as info:
            await model.complete(REQUEST)
    finally:
        await model.aclose()
        await asyncio.wait_for(asyncio.gather(*handlers, return_exceptions=True), 5)
        server.close()
        await server.wait_closed()
    assert info.value.transient is True
    assert info.value.status is None
    if behaviour == "hang":
        assert "within 0.2 s" in str(info.value)
    else:
        assert "Fix: check that the server is running" in str(info.value)


async def test_connection_refused_is_transient_and_names_base_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAICompatModel("test:m", f"http://127.0.0.1:{port}/v1", "m")
    try:
        with pytest.raises(ProviderError) as info:
            await model.complete(REQUEST)
    finally:
        await model.aclose()
    assert info.value.transient is True and "base_url" in str(info.value)


def test_parse_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "7"}, now) == 7.0
    assert retry_after_seconds({"retry-after": "1.5"}, now) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "1"}, now) == 0.25
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"Retry-After": date}, now) == pytest.approx(30.0)
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"Retry-After": past}, now) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None


@pytest.mark.parametrize("client_kind", HTTP_CLIENTS)
def test_building_a_model_needs_no_event_loop(client_kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HTTP_CLIENT_ENV, client_kind)
    model = OpenAICompatModel("a:m", "http://127.0.0.1:9/v1", "m")
    pool_class = HttpPool if client_kind == "http11" else LazySession
    assert isinstance(model._client, pool_class) and model._client.closed


async def test_lazy_session_is_made_once_with_the_configured_pool() -> None:
    lazy = LazySession(timeout_s=7, max_connections=5)
    assert lazy.closed
    sessions = await asyncio.gather(*(lazy.get() for _ in range(10)))
    try:
        assert all(s is sessions[0] for s in sessions)
        session = sessions[0]
        assert not lazy.closed and not session.closed
        assert session.timeout.total == 7
        assert isinstance(session.connector, aiohttp.TCPConnector)
        assert session.connector.limit == 5 and session.connector.limit_per_host == 5
    finally:
        await lazy.aclose()
    assert lazy.closed and session.closed
    reopened = await lazy.get()  # usable again after aclose
    assert reopened is not session and not reopened.closed
    await lazy.aclose()


@pytest.mark.parametrize("client_kind", HTTP_CLIENTS)
async def test_aclose_closes_only_an_owned_session(
    serve: Any, client_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HTTP_CLIENT_ENV, client_kind)
    pool_class = HttpPool if client_kind == "http11" else LazySession
    served = await serve(json_reply(completion()))
    shared = pool_class()
    first = served.model(client=shared)
    second = served.model(client=shared)
    await first.complete(REQUEST)
    await second.complete(REQUEST)
    await first.aclose()
    assert not shared.closed
    owned = served.model()
    await owned.complete(REQUEST)
    inner = owned._client
    assert isinstance(inner, pool_class) and not inner.closed
    await owned.aclose()
    assert inner.closed
    await shared.aclose()


async def test_an_open_client_session_can_be_passed_in(serve: Any) -> None:
    served = await serve(json_reply(completion("via session")))
    async with aiohttp.ClientSession() as session:
        model = served.model(client=session)
        assert (await model.complete(REQUEST)).text == "via session"
        await model.aclose()
        assert not session.closed
