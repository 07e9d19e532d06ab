"""The shadow's body cap (issue 12): a request body over ``shadow_max_body`` still reaches the champion, whole and
unchanged, streamed as it arrives, but is not shadowed (no row, no challenger call); one at the cap is shadowed
as before. Real servers on 127.0.0.1 (uvicorn), rows on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loopback import serve
from ragreplay.cli.app import main
from ragreplay.cli.shadow_cmd import build_sampler
from ragreplay.shadow.config import ShadowServeConfig
from ragreplay.shadow.mirror import RequestFields
from ragreplay.shadow.proxy import ChampionReply, MirroredRequest, create_proxy
from ragreplay.shadow.serve_app import build_app
from ragreplay.store import Store

CAP = 4096
received_by_champion: list[bytes] = []
"""Request bodies the champion received whole."""
received_by_challenger: list[bytes] = []


async def champion_route(request: Request) -> Response:
    body = await request.body()
    received_by_champion.append(body)
    question = str(json.loads(body)["question"])
    digest = hashlib.sha256(body).hexdigest()
    return JSONResponse({"answer": f"champion: {question[:20]}", "size": len(body), "sha256": digest})


async def challenger_route(request: Request) -> Response:
    received_by_challenger.append(await request.body())
    return JSONResponse({"answer": "challenger"})


def app_of(route: object) -> Starlette:
    return Starlette(routes=[Route("/ask", route, methods=["POST"])])  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def champion_url() -> Iterator[str]:
    yield from serve(app_of(champion_route))


@pytest.fixture(autouse=True)
def _clear() -> None:
    received_by_champion.clear()
    received_by_challenger.clear()


def question_of(size: int) -> bytes:
    """A JSON question body of exactly ``size`` bytes."""
    frame = len(json.dumps({"question": ""}))
    return json.dumps({"question": "x" * (size - frame)}).encode()


def check_unchanged(resp: httpx.Response, body: bytes) -> None:
    assert resp.status_code == 200
    assert resp.json()["size"] == len(body) and resp.json()["sha256"] == hashlib.sha256(body).hexdigest()


def test_a_body_over_the_cap_reaches_the_champion_whole_and_is_not_shadowed(
    champion_url: str, store: Store, store_url: str
) -> None:
    challenger = serve(app_of(challenger_route))
    sampler = build_sampler(1.0, [], "UTC", "request")
    app = build_app(
        champion_url,
        {"rec": next(challenger)},
        Store.open(store_url),
        sampler,
        RequestFields(),
        timeout_s=5,
        challenger_timeout_s=5,
        shadow_max_body=CAP,
    )
    server = serve(app)
    url = next(server)
    at_cap, over = question_of(CAP), question_of(CAP + 1)
    big = question_of(300_000)

    def chunked() -> Iterator[bytes]:  # no Content-Length: the cap is found while reading
        yield from (big[i : i + 10_000] for i in range(0, len(big), 10_000))

    try:
        sent = [at_cap, over, big, big]
        replies = [httpx.post(url + "/ask", content=body, trust_env=False, timeout=10) for body in sent[:3]]
        replies.append(httpx.post(url + "/ask", content=chunked(), trust_env=False, timeout=10))
        stats = httpx.get(url + "/_shadow/stats", trust_env=False).json()
        metrics = httpx.get(url + "/_shadow/metrics", trust_env=False).text
    finally:
        next(server, None)
        next(challenger, None)
    for resp, body in zip(replies, sent, strict=True):
        check_unchanged(resp, body)
    assert received_by_champion == sent
    assert received_by_challenger == [at_cap]  # only the body at the cap was mirrored
    (row,) = store.shadow_rows.iter_shadow_rows()
    assert len(row.query) == CAP - len(question_of(0))
    assert stats["not_shadowed_too_large"] == 3 and stats["mirror"]["recorded"] == 1
    assert stats["shadow"]["sampled"] == 1
    assert "ragreplay_shadow_not_shadowed_too_large_total 3" in metrics.splitlines()


def recording_proxy(champion_url: str, seen: list[MirroredRequest], **limits: int) -> Iterator[str]:
    def mirror(request: MirroredRequest, reply: ChampionReply) -> None:
        seen.append(request)

    yield from serve(create_proxy(champion_url, mirror, timeout_s=5, **limits))


def test_a_streamed_body_still_stops_at_the_body_limit(champion_url: str) -> None:
    seen: list[MirroredRequest] = []
    server = recording_proxy(champion_url, seen, max_body=50_000, shadow_max_body=CAP)
    url = next(server)
    body = question_of(80_000)

    def chunked() -> Iterator[bytes]:
        yield from (body[i : i + 5_000] for i in range(0, len(body), 5_000))

    try:
        declared = httpx.post(url + "/ask", content=body, trust_env=False, timeout=10)
        streamed = httpx.post(url + "/ask", content=chunked(), trust_env=False, timeout=10)
        after = httpx.post(url + "/ask", content=question_of(100), trust_env=False, timeout=10)
        stats = httpx.get(url + "/_shadow/stats", trust_env=False).json()
    finally:
        next(server, None)
    assert declared.status_code == 413 and streamed.status_code == 413
    assert "50000 bytes" in streamed.text
    check_unchanged(after, question_of(100))
    assert received_by_champion == [question_of(100)]  # the cut body never reached the champion whole
    assert stats["too_large"] == 2 and [r.body for r in seen] == [question_of(100)]


def test_a_client_that_leaves_mid_body_is_never_passed_on_whole(champion_url: str) -> None:
    seen: list[MirroredRequest] = []
    server = recording_proxy(champion_url, seen, shadow_max_body=CAP)
    url = next(server)
    port = int(url.rsplit(":", 1)[1])
    body = question_of(200_000)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            head = f"POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            sock.sendall(head + body[:100_000])  # half, then gone
        after = httpx.post(url + "/ask", content=question_of(100), trust_env=False, timeout=10)
    finally:
        next(server, None)
    check_unchanged(after, question_of(100))
    assert received_by_champion == [question_of(100)] and len(seen) == 1


def test_the_cap_is_a_setting_and_a_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ShadowServeConfig(champion="http://a:1").shadow_max_body_kb == 256
    config = tmp_path / "shadow.yaml"
    config.write_text("champion: http://a:1\nshadow_max_body_kb: 0\n", encoding="utf-8")
    assert main(["shadow", "serve", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "shadow_max_body_kb" in err and "Traceback" not in err
    assert main(["shadow", "serve", "--champion", "http://a:1", "--shadow-max-body-kb", "-1"]) == 2
    assert "shadow_max_body_kb" in capsys.readouterr().err


async def test_a_body_that_arrives_in_one_chunk_past_the_cap_is_forwarded_not_shadowed(
    champion_url: str,
) -> None:
    # no Content-Length, and the whole body in one message: read whole already, but still not shadowed
    seen: list[MirroredRequest] = []

    def mirror(request: MirroredRequest, reply: ChampionReply) -> None:
        seen.append(request)

    proxy = create_proxy(champion_url, mirror, timeout_s=5, shadow_max_body=CAP)

    async def ask(body: bytes) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/ask", "headers": [], "query_string": b""}
        await proxy(scope, receive, send)
        assert sent[0]["status"] == 200
        return dict(json.loads(b"".join(m.get("body", b"") for m in sent[1:])))

    over, at_cap = question_of(CAP + 1), question_of(CAP)
    try:
        replies = [await ask(over), await ask(at_cap)]
    finally:
        await proxy.aclose()
    assert [r["size"] for r in replies] == [len(over), len(at_cap)]
    assert [r.body for r in seen] == [at_cap] and proxy.stats.not_shadowed_too_large == 1
