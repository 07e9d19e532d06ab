"""OpenAICompatModel, the limits and the factory against the mock OpenAI server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import socket
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import httpx
import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError
from ragreplay.providers.config import ModelSettings, ProviderConfig
from ragreplay.providers.http11_pool import HttpPool
from ragreplay.providers.limits import LimitedModel
from ragreplay.providers.openai_compat import HTTP_CLIENT_ENV, HTTP_CLIENTS, LazySession, OpenAICompatModel
from ragreplay.providers.pricing import Price
from ragreplay.providers.registry import ModelFactory


def _load_mock() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "mock_openai_server.py"
    spec = importlib.util.spec_from_file_location("mock_openai_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mock = _load_mock()

StartServer = Callable[..., str]


@pytest.fixture
def start_server() -> Iterator[StartServer]:
    """Starts mock servers with the given options and stops them after the test."""
    stops: list[Callable[[], None]] = []

    def start(**options: Any) -> str:
        options.setdefault("latency_ms", 1)
        base_url, stop = mock.run_in_thread(port=0, **options)
        stops.append(stop)
        return base_url

    yield start
    for stop in stops:
        stop()


def stats(base_url: str) -> dict[str, Any]:
    root = base_url.removesuffix("/v1")
    return httpx.get(root + "/stats").json()


def request(content: str = "Question: who runs HR?", json_mode: bool = False) -> ChatRequest:
    return ChatRequest(messages=(ChatMessage(role="user", content=content),), json_mode=json_mode)


class Sleeps:
    """A fake clock whose sleeps advance it instantly, so retries and pauses cost no real time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.seconds: list[float] = []

    def clock(self) -> float:
        return self.now

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


async def test_success_with_usage(start_server: StartServer) -> None:
    base_url = start_server()
    model = OpenAICompatModel("mock:gpt-4o-mini", base_url, "gpt-4o-mini", price=Price(1.0, 1.0))
    try:
        response = await model.complete(request("Tell me about the holiday policy"))
    finally:
        await model.aclose()
    assert response.text == "Mock answer about Tell me about the holiday policy."
    assert response.model == "gpt-4o-mini"
    assert (response.usage.input, response.usage.output) == (6, 9)
    assert response.cost_usd == pytest.approx(15 / 1e6)
    assert stats(base_url)["completions"] == 1


async def test_json_mode_is_sent_and_json_replies_parse(start_server: StartServer) -> None:
    base_url = start_server()
    model = OpenAICompatModel("mock:m", base_url, "m")
    try:
        judge = await model.complete(request("Answer with a verdict: FIT or NO_FIT", json_mode=True))
        rewrite = await model.complete(
            ChatRequest(
                messages=(
                    ChatMessage(role="system", content="Return standalone JSON."),
                    ChatMessage(role="user", content="History: ...\nQuestion: what does she do?"),
                ),
                json_mode=True,
            )
        )
    finally:
        await model.aclose()
    assert json.loads(judge.text) == {"verdict": "FIT", "reason": "mock"}
    assert json.loads(rewrite.text) == {"standalone": True, "query": "what does she do?"}
    seen = stats(base_url)
    assert seen["json_mode"] == 2
    assert seen["last_body"]["response_format"] == {"type": "json_object"}


async def test_429_with_retry_after_then_success_through_limits(start_server: StartServer) -> None:
    base_url = start_server(fail_first=2, fail_status=429, retry_after="3")
    sleeps = Sleeps()
    raw = OpenAICompatModel("mock:m", base_url, "m")
    limited = LimitedModel(raw, max_concurrency=4, sleep=sleeps, clock=sleeps.clock)
    try:
        response = await limited.complete(request())
    finally:
        await raw.aclose()
    assert response.text.startswith("Mock answer")
    assert limited.retries == 0 and limited.throttled == 2  # 429s are waited out, not counted as retries
    assert sleeps.seconds == [3.0, 3.0]  # each Retry-After once: the pause everyone shares
    assert stats(base_url)["requests"] == 3


async def test_the_mocks_rate_limit_headers_set_the_pace(start_server: StartServer) -> None:
    base_url = start_server(rate_limit=50, burst=5)
    raw = OpenAICompatModel("mock:m", base_url, "m")
    limited = LimitedModel(raw, max_concurrency=4)
    try:
        first = await limited.complete(request())
        await asyncio.gather(*(limited.complete(request()) for _ in range(20)))
    finally:
        await raw.aclose()
    assert first.rate_limit is not None and first.rate_limit.limit == 5
    assert limited.gate.limiter.learner.header_rate == pytest.approx(50, rel=0.2)
    assert stats(base_url)["completions"] == 21  # however many 429s on the way, every call answered


async def test_500s_are_transient_and_retried(start_server: StartServer) -> None:
    base_url = start_server(fail_first=2, fail_status=500)
    raw = OpenAICompatModel("mock:m", base_url, "m")
    try:
        with pytest.raises(ProviderError) as info:
            await raw.complete(request())
        assert info.value.transient and info.value.status == 500 and info.value.retry_after is None
        sleeps = Sleeps()
        limited = LimitedModel(raw, sleep=sleeps, clock=sleeps.clock)
        assert (await limited.complete(request())).text.startswith("Mock answer")
        assert limited.retries == 1
    finally:
        await raw.aclose()


async def test_wrong_key_is_a_401_naming_the_env_var(start_server: StartServer) -> None:
    base_url = start_server(api_key="right")
    wrong = OpenAICompatModel("mock:m", base_url, "m", api_key="wrong", api_key_env="MOCK_KEY")
    azure = OpenAICompatModel("mock:m", base_url, "m", api_key="right", api_key_header="api-key")
    try:
        sleeps = Sleeps()
        with pytest.raises(ProviderError) as info:
            await LimitedModel(wrong, sleep=sleeps, clock=sleeps.clock).complete(request())
        assert (await azure.complete(request())).text.startswith("Mock answer")
    finally:
        await wrong.aclose()
        await azure.aclose()
    assert info.value.transient is False and info.value.status == 401
    assert "MOCK_KEY" in str(info.value)
    assert stats(base_url)["requests"] == 2  # no retry of the 401


async def test_timeout_is_transient(start_server: StartServer) -> None:
    base_url = start_server(latency_ms=400)
    model = OpenAICompatModel("mock:m", base_url, "m", timeout_s=0.05)
    try:
        with pytest.raises(ProviderError) as info:
            await model.complete(request())
    finally:
        await model.aclose()
    assert info.value.transient is True
    assert "within 0.05 s" in str(info.value)


async def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAICompatModel("mock:m", f"http://127.0.0.1:{port}/v1", "m")
    try:
        with pytest.raises(ProviderError) as info:
            await model.complete(request())
    finally:
        await model.aclose()
    assert info.value.transient is True
    assert "base_url" in str(info.value)


async def test_session_pool_caps_connections_at_max_connections(start_server: StartServer) -> None:
    base_url = start_server(latency_ms=50)
    shared = LazySession(timeout_s=10, max_connections=12)
    model = OpenAICompatModel("mock:m", base_url, "m", client=shared)
    try:
        responses = await asyncio.gather(*(model.complete(request(f"q {i}")) for i in range(48)))
        session = await shared.get()
    finally:
        await shared.aclose()
    assert len(responses) == 48 and session.closed
    seen = stats(base_url)
    assert seen["completions"] == 48
    assert 8 < seen["max_in_flight"] <= 12  # the pool is used in parallel, and never beyond its cap


@pytest.mark.parametrize("client_kind", HTTP_CLIENTS)
async def test_judge_and_rewriter_of_one_provider_share_one_session(
    start_server: StartServer, client_kind: str
) -> None:
    base_url = start_server(latency_ms=30)
    settings = ModelSettings(providers={"local": ProviderConfig(base_url=base_url, max_concurrency=3)})
    factory = ModelFactory(settings, None, env={HTTP_CLIENT_ENV: client_kind})
    judge, rewriter = factory.build("local:judge"), factory.build("local:rewriter")
    assert isinstance(judge, LimitedModel) and isinstance(rewriter, LimitedModel)
    raw_judge, raw_rewriter = judge.inner, rewriter.inner
    assert isinstance(raw_judge, OpenAICompatModel) and isinstance(raw_rewriter, OpenAICompatModel)
    try:
        # Straight at the raw models, past the limiter: only the shared pool of 3 holds the cap.
        calls = [raw_judge.complete(request(f"verdict {i}")) for i in range(8)]
        calls += [raw_rewriter.complete(request(f"standalone {i}")) for i in range(8)]
        await asyncio.gather(*calls)
        assert raw_judge._client is raw_rewriter._client
        assert isinstance(raw_judge._client, HttpPool if client_kind == "http11" else LazySession)
        session = await raw_judge._client.get()
    finally:
        await factory.aclose()
    assert session.closed
    seen = stats(base_url)
    assert seen["completions"] == 16
    assert seen["max_in_flight"] == 3


@pytest.mark.parametrize("client_kind", HTTP_CLIENTS)
def test_a_model_built_outside_a_loop_works_in_successive_event_loops(
    start_server: StartServer, client_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HTTP_CLIENT_ENV, client_kind)
    base_url = start_server()
    model = OpenAICompatModel("mock:m", base_url, "m")
    lazy = model._client
    assert isinstance(lazy, HttpPool if client_kind == "http11" else LazySession)

    async def call() -> Any:  # the running loop's pool: an aiohttp session or a LoopPool
        response = await model.complete(request("hello there"))
        assert response.text.startswith("Mock answer")
        return await lazy.get()

    first = asyncio.run(call())  # no aclose: asyncio.run's shutdown still closes the session in its loop
    assert first.closed
    second = asyncio.run(call())
    assert second is not first and second.closed
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        asyncio.run(model.aclose())
        gc.collect()
    assert stats(base_url)["completions"] == 2


def test_a_factory_built_outside_a_loop_serves_one_run_per_event_loop(start_server: StartServer) -> None:
    base_url = start_server()
    settings = ModelSettings(providers={"local": ProviderConfig(base_url=base_url)})
    factory = ModelFactory(settings, None, env={})
    judge = factory.build("local:judge")

    async def one_run() -> None:  # what each CLI call does: build, run, close in its own loop
        try:
            assert (await judge.complete(request("verdict please"))).text.startswith("{")
            assert not factory._clients["local"].closed
        finally:
            await factory.aclose()
        assert factory._clients["local"].closed

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        asyncio.run(one_run())
        asyncio.run(one_run())
        gc.collect()
    assert stats(base_url)["completions"] == 2


def test_a_session_from_a_loop_closed_by_hand_is_replaced_and_closed(start_server: StartServer) -> None:
    base_url = start_server()
    lazy = LazySession()
    model = OpenAICompatModel("mock:m", base_url, "m", client=lazy)
    loop = asyncio.new_event_loop()
    try:
        stale = loop.run_until_complete(lazy.get())
    finally:
        loop.close()  # closed without shutting down its async generators, so the session is still open
    assert not stale.closed and not lazy.closed

    async def call_then_close() -> aiohttp.ClientSession:
        try:
            assert (await model.complete(request())).text.startswith("Mock answer")
            return await lazy.get()
        finally:
            await lazy.aclose()

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        fresh = asyncio.run(call_then_close())
        gc.collect()
    assert fresh is not stale and stale.closed and fresh.closed


async def test_factory_custom_provider_against_the_mock(start_server: StartServer) -> None:
    base_url = start_server(api_key="k")
    settings = ModelSettings(
        providers={"local": ProviderConfig(base_url=base_url, api_key_env="LOCAL_KEY", max_concurrency=3)},
        prices={"local:tiny": Price(1.0, 1.0)},
    )
    factory = ModelFactory(settings, None, env={"LOCAL_KEY": "k"})
    model = factory.build("local:tiny")
    try:
        responses = await asyncio.gather(*(model.complete(request(f"q {i}")) for i in range(9)))
    finally:
        await factory.aclose()
    assert all(r.cost_usd > 0 for r in responses)
    assert isinstance(model, LimitedModel) and model.gate.peak_in_flight == 3
    assert stats(base_url)["max_in_flight"] <= 3


def test_mock_stats_and_reset(start_server: StartServer) -> None:
    base_url = start_server()
    root = base_url.removesuffix("/v1")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(base_url + "/chat/completions", json=body).status_code == 200
    assert httpx.post(base_url + "/chat/completions", json={"nope": 1}).status_code == 400
    assert stats(base_url)["requests"] == 2
    httpx.post(root + "/reset")
    assert stats(base_url)["requests"] == 0
