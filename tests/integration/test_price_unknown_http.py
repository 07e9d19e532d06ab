"""Issue 16: an HTTP answer that reports no cost is one call of unknown price, never $0: the HTTP target
without ``cost_path`` (against a real loopback server) in the replay report, and the shadow's HTTP replies in
its rows; a target that makes no model call stays $0 (docs/providers.md, "Price unknown")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

import builders
from loopback import serve
from ragreplay.core.runs import RunRecord, RunStatus
from ragreplay.core.shadow import ShadowAnswer
from ragreplay.core.types import Case
from ragreplay.jobs.writer import StoreWriter
from ragreplay.judges.fit import FitJudge
from ragreplay.ports import Target
from ragreplay.providers.fake import FakeChatModel
from ragreplay.replay.engine import Replayer
from ragreplay.replay.replay_run import summarize_run
from ragreplay.report.json_report import render_json
from ragreplay.report.markdown import render_markdown
from ragreplay.report.terminal import render_text
from ragreplay.shadow.payloads import RequestFields, parse_reply
from ragreplay.store import Store
from ragreplay.targets.config import parse_target_config
from ragreplay.targets.fake import FakeTarget
from ragreplay.targets.loader import target_from_config


async def answer(request: Request) -> Response:
    body = await request.json()
    return JSONResponse({"answer": f"answer to {body['question']}", "cost": 0.002})


async def plain(request: Request) -> Response:
    return PlainTextResponse("just text")


APP = Starlette(routes=[Route("/ask", answer, methods=["POST"]), Route("/plain", plain, methods=["POST"])])


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    yield from serve(APP, join_timeout=5, lifespan="off")


def http_target(**cfg: Any) -> Target:
    config = parse_target_config({"kind": "http", "backoff_s": 0.01, "retries": 0, **cfg}, "test.yaml")
    return target_from_config(config, Path("."), "http-test")


async def _answers(target: Target) -> list[tuple[float, int]]:
    try:
        answers = [await target.answer("q", builders.make_case()) for _ in range(2)]
    finally:
        await target.aclose()
    assert all(a.error is None for a in answers)
    return [(a.cost_usd, a.unpriced_calls) for a in answers]


async def test_an_http_answer_without_a_cost_is_one_unpriced_call(base_url: str) -> None:
    no_cost_path = http_target(url=f"{base_url}/ask", answer_path="answer")
    assert await _answers(no_cost_path) == [(0.0, 1), (0.0, 1)]
    text_reply = http_target(url=f"{base_url}/plain", answer_path=None)
    assert await _answers(text_reply) == [(0.0, 1), (0.0, 1)]
    priced = http_target(url=f"{base_url}/ask", answer_path="answer", cost_path="cost")
    assert await _answers(priced) == [(0.002, 0), (0.002, 0)]


def _cases(store: Store) -> list[Case]:
    cases = [
        builders.make_case(id=f"case-{i}", conversation_id="c", turn_index=i, query=f"question {i}?")
        for i in range(2)
    ]
    return builders.save_cases(store, cases)


def _replay(store: Store, target: Target) -> None:
    cases = _cases(store)
    judge = FitJudge(FakeChatModel())
    record = RunRecord(
        id="run_1",
        created_at=datetime.now(UTC),
        status=RunStatus.RUNNING,
        target_name=target.name,
        target_version=target.version,
        judge_name=judge.name,
        judge_prompt_version="p",
        rewriter_name=None,
        rewrite_prompt_version=None,
        config_hash="run_1",
        dataset_hash="d",
        n_cases=len(cases),
    )
    store.runs.create_run(record, [c.id for c in cases])

    async def go() -> None:
        try:
            async with StoreWriter(store) as writer:
                await Replayer(store, writer, target, judge, None).run("run_1", cases)
        finally:
            await target.aclose()

    asyncio.run(go())


@pytest.mark.parametrize("kind", ["http without cost_path", "http with cost_path", "fake target"])
def test_the_replay_report_says_price_unknown_for_an_http_target_without_cost_path(
    store: Store, base_url: str, kind: str
) -> None:
    if kind == "fake target":
        target: Target = FakeTarget(echo_old_answer=True)
    else:
        cost = {"cost_path": "cost"} if kind == "http with cost_path" else {}
        target = http_target(url=f"{base_url}/ask", answer_path="answer", **cost)
    _replay(store, target)
    summary = summarize_run(store, "run_1")
    data = json.loads(render_json(summary))
    text = render_text(summary) + render_markdown(summary)
    if kind == "http without cost_path":
        assert (data["unpriced_calls"], data["cost_usd"]) == (2, 0.0)
        assert "price unknown for 2 calls" in text and "$0.0000" not in text
    elif kind == "http with cost_path":
        assert data["unpriced_calls"] == 0 and data["cost_usd"] == pytest.approx(0.004)
        assert "$0.0040" in text and "price unknown" not in text
    else:  # no model call at all: truly free
        assert (data["unpriced_calls"], data["cost_usd"]) == (0, 0.0)
        assert "$0.0000" in text and "price unknown" not in text


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"answer": "25 days"}', "application/json"),
        (b"25 days", "text/plain"),
        (b'data: {"delta": "25 "}\n\ndata: {"delta": "days"}\n\ndata: [DONE]\n\n', "text/event-stream"),
    ],
    ids=["json", "text", "stream"],
)
def test_a_shadow_reply_is_one_unpriced_call_in_its_row(body: bytes, content_type: str) -> None:
    parsed = parse_reply(body, content_type, RequestFields())
    assert parsed.answer.text == "25 days"
    side = ShadowAnswer.from_answer(parsed.answer)
    assert (side.cost_usd, side.unpriced_calls) == (0.0, 1)
