"""`shadow serve` with live feedback, a path filter and streamed answers, against real servers on 127.0.0.1:
request ids come from a header or the champion's reply, the app's own feedback endpoint is read on the way
through, ``/_shadow/feedback`` takes labels directly, only the mirrored paths are shadowed, and answers streamed
as server-sent events are logged whole."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from loopback import serve
from ragreplay.cli.app import main
from ragreplay.cli.shadow_cmd import build_sampler
from ragreplay.core.types import Feedback
from ragreplay.shadow.mirror import FeedbackTap, RequestFields
from ragreplay.shadow.serve_app import build_app
from ragreplay.store import Store


async def ask(request: Request) -> Response:
    question = (await request.json())["question"]
    return JSONResponse({"id": f"ans-{question}", "answer": f"champion: {question}"})


async def feedback(request: Request) -> Response:
    body = await request.json()
    if "rating" not in body:
        return JSONResponse({"detail": "rating missing"}, status_code=422)
    return Response(status_code=204)


async def health(request: Request) -> Response:
    return PlainTextResponse("ok")


async def challenger_ask(request: Request) -> Response:
    return JSONResponse({"answer": "challenger"})


@pytest.fixture(scope="module")
def champion_url() -> Iterator[str]:
    app = Starlette(
        routes=[
            Route("/ask", ask, methods=["POST"]),
            Route("/feedback", feedback, methods=["POST"]),
            Route("/health", health),
        ]
    )
    yield from serve(app)


@pytest.fixture(scope="module")
def challenger_url() -> Iterator[str]:
    yield from serve(Starlette(routes=[Route("/ask", challenger_ask, methods=["POST"])]))


def test_feedback_reaches_the_store_by_request_id_and_other_paths_are_not_shadowed(
    champion_url: str, challenger_url: str, store: Store, store_url: str
) -> None:
    app = build_app(
        champion_url,
        {"b": challenger_url},
        Store.open(store_url),
        build_sampler(1.0, [], "UTC", "request"),
        RequestFields(request_id_path="id"),
        timeout_s=5,
        challenger_timeout_s=2,
        mirror_paths=("/as?",),
        feedback=FeedbackTap("/feedback", id_path="message_id", label_path="rating", comment_path="comment"),
    )
    server = serve(app)
    url = next(server)
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        for i in range(6):  # even: the client sends its own id; odd: the id comes from the champion's reply
            headers = {"X-Request-Id": f"client-{i}"} if i % 2 == 0 else {}
            resp = client.post("/ask", json={"question": f"q{i}"}, headers=headers)
            assert resp.json() == {"id": f"ans-q{i}", "answer": f"champion: q{i}"}
        assert client.get("/health").text == "ok"  # forwarded, not shadowed

        tapped = [
            {"message_id": "client-0", "rating": "thumbs_down", "comment": "call me on +31 6 12345678"},
            {"message_id": "ans-q1", "rating": 1},
            {"message_id": "ans-q3"},  # the app refuses it (422): nothing was given
            {"message_id": "ans-q5", "rating": "meh"},  # the app takes it, but it is no label we can read
        ]
        statuses = [client.post("/feedback", json=body).status_code for body in tapped]
        assert statuses == [204, 204, 422, 204]  # the app's own answers, unchanged

        direct = client.post("/_shadow/feedback", json={"request_id": "client-2", "feedback": "bad"})
        assert direct.status_code == 202 and direct.json() == {"queued": True}
        wrong = client.post("/_shadow/feedback", json={"request_id": "client-4", "feedback": "so-so"})
        assert wrong.status_code == 400 and "Fix:" in wrong.json()["error"]
        assert client.post("/_shadow/feedback", content=b"[1]").status_code == 400
        assert client.post("/_shadow/feedback", json={"feedback": "bad"}).status_code == 400
        assert client.get("/_shadow/feedback").status_code == 405
        stats = client.get("/_shadow/stats").json()
        metrics = client.get("/_shadow/metrics")
    next(server, None)

    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {
        s.name: s.value for family in text_string_to_metric_families(metrics.text) for s in family.samples
    }
    assert samples["ragreplay_shadow_mirrored_total"] == stats["mirror"]["recorded"] == 6
    assert samples["ragreplay_shadow_other_paths_total"] == 1
    assert samples["ragreplay_shadow_effective_sampling_rate"] == 1.0

    mirror = stats["mirror"]
    sampled = stats["sampler"]
    assert (sampled["seen"], sampled["sampled"], sampled["effective_rate"]) == (6, 6, 1.0)
    assert (mirror["recorded"], mirror["other_paths"]) == (6, 1)
    assert (mirror["feedback_recorded"], mirror["feedback_unreadable"]) == (2, 1)
    rows = {row.request_id: row for row in store.shadow_rows.iter_shadow_rows()}
    assert set(rows) == {"client-0", "ans-q1", "client-2", "ans-q3", "client-4", "ans-q5"}
    labels = store.shadow_feedback.shadow_feedback_for(rows)
    assert {k: (v.feedback, v.source) for k, v in labels.items()} == {
        "client-0": (Feedback.BAD, "tap"),
        "ans-q1": (Feedback.GOOD, "tap"),
        "client-2": (Feedback.BAD, "api"),
    }
    assert labels["client-0"].comment is not None and "12345678" not in labels["client-0"].comment
    final = app.mirror.shadow.stats()
    assert (final.feedback_written, final.feedback_lost) == (3, 0)


def test_bad_paths_are_refused_with_a_fix(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["shadow", "serve", "--champion", "http://127.0.0.1:9", "--challenger", "b=http://127.0.0.1:9"]
    assert main([*base, "--mirror-path", "ask"]) == 2
    assert "--mirror-path 'ask' is not a path" in capsys.readouterr().err
    assert main([*base, "--feedback-path", "http://x/feedback"]) == 2
    assert "Fix:" in capsys.readouterr().err
    assert main([*base, "--redact", "no_such_module_xyz:scrub"]) == 2
    assert "cannot import module 'no_such_module_xyz'" in " ".join(capsys.readouterr().err.split())


def streaming(prefix: str, pieces: tuple[str, ...]) -> Starlette:
    async def ask(request: Request) -> Response:
        question = (await request.json())["question"]

        async def events() -> AsyncIterator[bytes]:
            yield f"data: {json.dumps({'id': f'{prefix}-{question}', 'sources': ['hr#1']})}\n\n".encode()
            for piece in pieces:
                await asyncio.sleep(0.005)
                yield f"data: {json.dumps({'delta': piece})}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/ask", ask, methods=["POST"])])


def test_streamed_answers_reach_the_user_in_pieces_and_the_log_whole(store: Store, store_url: str) -> None:
    champion = serve(streaming("champ", ("Werknemers ", "krijgen ", "25 dagen.")))
    challenger = serve(streaming("chal", ("25 ", "vakantiedagen.")))
    champion_url, challenger_url = next(champion), next(challenger)
    app = build_app(
        champion_url,
        {"b": challenger_url},
        Store.open(store_url),
        build_sampler(1.0, [], "UTC", "request"),
        RequestFields(contexts_path="sources", request_id_path="id"),
        timeout_s=5,
        challenger_timeout_s=2,
    )
    server = serve(app)
    url = next(server)
    with (
        httpx.Client(base_url=url, trust_env=False, timeout=10) as client,
        client.stream("POST", "/ask", json={"question": "q1"}) as resp,
    ):
        assert resp.headers["content-type"].startswith("text/event-stream")
        body = b"".join(resp.iter_raw())
    next(server, None)
    for gen in (champion, challenger):
        next(gen, None)
    assert body.count(b"data: ") == 5 and b"[DONE]" in body  # the champion's stream, unchanged
    (row,) = store.shadow_rows.iter_shadow_rows()
    assert row.request_id == "champ-q1"
    assert row.champion_answer.text == "Werknemers krijgen 25 dagen." and row.champion_answer.chunk_ids == [
        "hr#1"
    ]
    assert (
        row.champion_answer.latency_ms is not None and row.champion_answer.latency_ms >= 15
    )  # three pieces, 5 ms apart
    assert row.challenger_answer.text == "25 vakantiedagen." and row.challenger_answer.error is None


async def cookie_setting_ask(request: Request) -> Response:
    question = (await request.json())["question"]
    reply = JSONResponse({"answer": f"{question} cookie={request.headers.get('cookie', '<none>')}"})
    reply.set_cookie("session", f"user-of-{question}")
    return reply


def test_a_challengers_cookie_never_rides_on_the_next_users_request(
    champion_url: str, store: Store, store_url: str
) -> None:
    challenger = serve(Starlette(routes=[Route("/ask", cookie_setting_ask, methods=["POST"])]))
    by_name = next(challenger).replace("127.0.0.1", "localhost")  # a host name: cookie jars keep its cookies
    app = build_app(
        champion_url,
        {"b": by_name},
        Store.open(store_url),
        build_sampler(1.0, [], "UTC", "request"),
        RequestFields(),
        timeout_s=5,
        challenger_timeout_s=2,
    )
    server = serve(app)
    url = next(server)
    for question in ("alice", "bob"):
        assert httpx.post(url + "/ask", json={"question": question}, trust_env=False).status_code == 200
    next(server, None)
    next(challenger, None)
    answers = sorted(row.challenger_answer.text for row in store.shadow_rows.iter_shadow_rows())
    assert answers == ["alice cookie=<none>", "bob cookie=<none>"]
