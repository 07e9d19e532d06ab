"""The HTTP target against a real HTTP server (starlette + uvicorn on 127.0.0.1, an ephemeral port)."""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

import builders
from builders import make_history
from loopback import serve
from ragreplay.core.types import RetrievedChunk, TokenUsage
from ragreplay.errors import ConfigError
from ragreplay.ports import Target
from ragreplay.targets.config import parse_target_config
from ragreplay.targets.loader import load_target, target_from_config

FIXTURES = Path(__file__).parent.parent / "fixtures" / "targets"


class Recorder:
    """What the server saw, for assertions."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.calls: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0


REC = Recorder()


async def ask(request: Request) -> Response:
    body = await request.json()
    REC.requests.append({"headers": dict(request.headers), "body": body})
    return JSONResponse(
        {
            "data": {
                "answer": f"answer to {body['question']}",
                "sources": [{"doc": "hr-7", "score": 0.9, "text": "Leave: 25 days"}, {"doc": 12}],
            },
            "usage": {"in": 50, "out": 7},
            "cost": 0.0012,
        }
    )


async def flaky(request: Request) -> Response:
    key = request.url.path + (await request.body()).decode()
    REC.calls[key] = REC.calls.get(key, 0) + 1
    if REC.calls[key] == 1:
        return PlainTextResponse("upstream exploded", status_code=500)
    return JSONResponse({"answer": f"ok after {REC.calls[key]} calls"})


async def limited(request: Request) -> Response:
    key = request.url.path + (await request.body()).decode()
    REC.calls[key] = REC.calls.get(key, 0) + 1
    if REC.calls[key] == 1:
        return PlainTextResponse("slow down", status_code=429, headers={"Retry-After": "0"})
    return JSONResponse({"answer": "rate limit passed"})


async def always_429(request: Request) -> Response:
    return PlainTextResponse("slow down", status_code=429, headers={"Retry-After": "0"})


async def always_500(request: Request) -> Response:
    return PlainTextResponse("database is down " + "x" * 1000, status_code=503)


async def bad_request(request: Request) -> Response:
    return PlainTextResponse("missing field 'query'", status_code=400)


async def slow(request: Request) -> Response:
    await asyncio.sleep(1.0)
    return JSONResponse({"answer": "too late"})


async def plain(request: Request) -> Response:
    return PlainTextResponse("just text")


async def chat(request: Request) -> Response:
    return JSONResponse({"choices": [{"message": {"content": "from choices"}}], "refs": ["a", "b"]})


async def search(request: Request) -> Response:
    return JSONResponse({"answer": f"{request.query_params['q']}|{request.query_params['user']}"})


async def concurrent(request: Request) -> Response:
    REC.in_flight += 1
    REC.max_in_flight = max(REC.max_in_flight, REC.in_flight)
    await asyncio.sleep(0.05)
    REC.in_flight -= 1
    return JSONResponse({"answer": "ok"})


APP = Starlette(
    routes=[
        Route("/ask", ask, methods=["POST"]),
        Route("/flaky", flaky, methods=["POST"]),
        Route("/limited", limited, methods=["POST"]),
        Route("/down", always_500, methods=["POST"]),
        Route("/saturated", always_429, methods=["POST"]),
        Route("/bad", bad_request, methods=["POST"]),
        Route("/slow", slow, methods=["POST"]),
        Route("/plain", plain, methods=["POST"]),
        Route("/chat", chat, methods=["POST"]),
        Route("/search", search, methods=["GET"]),
        Route("/concurrent", concurrent, methods=["POST"]),
    ]
)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    yield from serve(APP, join_timeout=5, lifespan="off", server_header=True, date_header=True)


# The case every request here carries: a follow-up of conversation conv_001, by user u7 of HR.
make_case = functools.partial(
    builders.make_case,
    id="case_1",
    conversation_id="conv_001",
    turn_index=3,
    query="And how many days?",
    history=make_history("What is the leave policy?", "It depends."),
    old_answer="25",
    tags={"department": "hr"},
    user_id="u7",
)


def http_target(**cfg: Any) -> Target:
    config = parse_target_config({"kind": "http", "backoff_s": 0.01, **cfg}, "test.yaml")
    return target_from_config(config, Path("."), "http-test")


async def test_templating_dotted_paths_contexts_tokens_and_env(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGREPLAY_TEST_URL", base_url)
    monkeypatch.setenv("RAGREPLAY_TEST_TOKEN", "s3cret")
    target = load_target(FIXTURES / "http.yaml")
    assert target.name == "http"
    REC.requests.clear()
    answer = await target.answer("How many days of leave do I get?", make_case())
    await target.aclose()

    assert answer.error is None
    assert answer.text == "answer to How many days of leave do I get?"
    assert answer.contexts == (
        RetrievedChunk(id="hr-7", score=0.9, text="Leave: 25 days"),
        RetrievedChunk(id="12"),
    )
    assert answer.tokens == TokenUsage(input=50, output=7)
    assert answer.cost_usd == pytest.approx(0.0012)
    assert answer.latency_ms is not None and answer.latency_ms > 0

    seen = REC.requests[-1]
    assert seen["headers"]["authorization"] == "Bearer s3cret"
    assert seen["body"]["question"] == "How many days of leave do I get?"
    assert seen["body"]["user"] == "u7"
    assert json.loads(seen["body"]["history"]) == [
        {"role": "human", "content": "What is the leave policy?"},
        {"role": "ai", "content": "It depends."},
    ]


def test_secret_does_not_change_version_and_missing_env_is_config_error(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGREPLAY_TEST_URL", base_url)
    monkeypatch.setenv("RAGREPLAY_TEST_TOKEN", "one")
    first = load_target(FIXTURES / "http.yaml").version
    monkeypatch.setenv("RAGREPLAY_TEST_TOKEN", "two")
    assert load_target(FIXTURES / "http.yaml").version == first
    monkeypatch.delenv("RAGREPLAY_TEST_TOKEN")
    with pytest.raises(ConfigError) as info:
        load_target(FIXTURES / "http.yaml")
    message = str(info.value)
    assert "target.headers.Authorization" in message
    assert "RAGREPLAY_TEST_TOKEN is not set" in message


async def test_structured_history_and_tags_placeholders(base_url: str) -> None:
    target = http_target(
        url=f"{base_url}/ask",
        body={
            "question": "{question}",
            "history": "{history}",
            "meta": {"tags": "{tags}", "conv": "{conversation_id}"},
        },
        answer_path="data.answer",
    )
    REC.requests.clear()
    answer = await target.answer("q1", make_case())
    await target.aclose()
    assert answer.text == "answer to q1"
    body = REC.requests[-1]["body"]
    assert body["history"][1] == {"role": "ai", "content": "It depends."}
    assert body["meta"] == {"tags": {"department": "hr"}, "conv": "conv_001"}


async def test_500_then_success_is_retried(base_url: str) -> None:
    target = http_target(url=f"{base_url}/flaky", retries=2)
    answer = await target.answer("retry me", make_case())
    await target.aclose()
    assert answer.error is None
    assert answer.text == "ok after 2 calls"
    assert answer.extra["attempts"] == 2


async def test_429_honours_retry_after(base_url: str) -> None:
    target = http_target(url=f"{base_url}/limited", retries=1, backoff_s=5)
    start = time.perf_counter()
    answer = await target.answer("limit me", make_case())
    await target.aclose()
    assert answer.text == "rate limit passed"
    assert time.perf_counter() - start < 2  # Retry-After: 0 wins over a 5 s backoff


async def test_a_429_is_waited_out_not_counted_as_a_retry(base_url: str) -> None:
    target = http_target(url=f"{base_url}/limited", retries=0)
    answer = await target.answer("limit me once", make_case())
    await target.aclose()
    assert answer.error is None and answer.text == "rate limit passed"
    assert answer.extra["attempts"] == 2


async def test_429s_beyond_the_retry_budget_give_up(base_url: str) -> None:
    target = http_target(url=f"{base_url}/saturated", retries=0, retry_budget_s=0.3)
    start = time.perf_counter()
    answer = await target.answer("q", make_case())
    await target.aclose()
    assert answer.error is not None and answer.error.startswith("HTTP 429: slow down")
    assert answer.extra["attempts"] > 1  # waited out, not given up at the first 429
    assert 0.3 <= time.perf_counter() - start < 10


async def test_persistent_5xx_gives_error_with_status_and_excerpt(base_url: str) -> None:
    target = http_target(url=f"{base_url}/down", retries=1)
    answer = await target.answer("q", make_case())
    await target.aclose()
    assert answer.text == ""
    assert answer.error is not None
    assert answer.error.startswith("HTTP 503: database is down")
    assert "(after 2 attempts)" in answer.error
    assert len(answer.error) < 400


async def test_4xx_is_not_retried(base_url: str) -> None:
    target = http_target(url=f"{base_url}/bad", retries=3)
    answer = await target.answer("q", make_case())
    await target.aclose()
    assert answer.error == "HTTP 400: missing field 'query'"
    assert answer.extra["attempts"] == 1


async def test_timeout_becomes_answer_error(base_url: str) -> None:
    target = http_target(url=f"{base_url}/slow", timeout_s=0.2, retries=0)
    answer = await target.answer("q", make_case())
    await target.aclose()
    assert answer.text == ""
    assert answer.error is not None and answer.error.startswith("timeout after 0.2s")
    assert answer.latency_ms is not None and 150 < answer.latency_ms < 900


async def test_connection_refused_becomes_answer_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = http_target(url=f"http://127.0.0.1:{port}/ask", retries=1)
    answer = await target.answer("q", make_case())
    await target.aclose()
    assert answer.error is not None and answer.error.startswith("connection error: ConnectError")


async def test_plain_text_and_list_paths_and_missing_path(base_url: str) -> None:
    plain = http_target(url=f"{base_url}/plain", answer_path=None)
    assert (await plain.answer("q", make_case())).text == "just text"
    await plain.aclose()

    chat = http_target(url=f"{base_url}/chat", answer_path="choices.0.message.content", contexts_path="refs")
    answer = await chat.answer("q", make_case())
    assert answer.text == "from choices"
    assert answer.contexts == (RetrievedChunk(id="a"), RetrievedChunk(id="b"))
    await chat.aclose()

    wrong = http_target(url=f"{base_url}/chat", answer_path="choices.1.message.content")
    answer = await wrong.answer("q", make_case())
    assert answer.error is not None
    assert answer.error.startswith("answer_path 'choices.1.message.content': no '1' in response")
    await wrong.aclose()

    not_json = http_target(url=f"{base_url}/plain")
    answer = await not_json.answer("q", make_case())
    assert answer.error == "response is not JSON: just text"
    await not_json.aclose()


async def test_get_with_query_params(base_url: str) -> None:
    target = http_target(
        url=f"{base_url}/search", method="get", body={"q": "{question}", "user": "{user_id}"}
    )
    answer = await target.answer("a b&c", make_case())
    await target.aclose()
    assert answer.text == "a b&c|u7"


async def test_max_concurrency_is_enforced(base_url: str) -> None:
    target = http_target(url=f"{base_url}/concurrent", max_concurrency=2)
    REC.max_in_flight = 0
    answers = await asyncio.gather(*(target.answer(f"q{i}", make_case()) for i in range(6)))
    await target.aclose()
    assert all(a.text == "ok" for a in answers)
    assert REC.max_in_flight == 2


def test_bad_url_is_config_error() -> None:
    with pytest.raises(ConfigError, match=r"target\.url.*not an http\(s\) URL"):
        http_target(url="ftp://example.com/x")
