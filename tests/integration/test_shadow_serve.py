"""The shadow proxy wired to the Shadow library, against real servers on 127.0.0.1 (uvicorn, ephemeral ports):
users always get the champion's response, challengers' failures land in the rows, and the counts add up."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loopback import serve
from ragreplay.cli.shadow_cmd import build_sampler, parse_challengers
from ragreplay.errors import ConfigError
from ragreplay.shadow.mirror import RequestFields, ShadowServeApp
from ragreplay.shadow.serve_app import build_app
from ragreplay.store import Store
from relay import TcpRelay

N = 30
TIMEOUT_S = 1.5  # generous: on a busy machine the broken challenger's instant 500 must not read as a timeout
FIELDS = RequestFields(contexts_path="contexts", tags_path="tags")


async def champion_route(request: Request) -> Response:
    try:
        body = await request.json()
    except ValueError:
        return Response("not JSON", status_code=400)
    question = body.get("question") or body.get("query")
    return JSONResponse({"answer": f"champion: {question}", "contexts": [{"id": "cao#12"}]})


async def broken_route(request: Request) -> Response:
    return Response("index offline", status_code=500)


async def hanging_route(request: Request) -> Response:
    await asyncio.sleep(2)
    return JSONResponse({"answer": "too late"})


def app_of(route: object) -> Starlette:
    return Starlette(routes=[Route("/ask", route, methods=["POST"])])  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def champion_url() -> Iterator[str]:
    yield from serve(app_of(champion_route))


@pytest.fixture(scope="module")
def challenger_urls() -> Iterator[dict[str, str]]:
    broken = serve(app_of(broken_route))
    hanging = serve(app_of(hanging_route))
    yield {"broken": next(broken), "hanging": next(hanging)}
    for gen in (broken, hanging):
        next(gen, None)


def proxy_app(champion: str, challengers: dict[str, str], store: Store, rate: float = 1.0) -> ShadowServeApp:
    sampler = build_sampler(rate, [], "UTC", "request")
    app = build_app(
        champion, challengers, store, sampler, FIELDS, timeout_s=5, challenger_timeout_s=TIMEOUT_S
    )
    app.close_timeout_s = TIMEOUT_S + 3
    return app


def send_requests(url: str, n: int, offset: int = 0) -> list[httpx.Response]:
    def one(i: int) -> httpx.Response:
        body: dict[str, object] = {"tags": {"department": "hr"}}
        # some users ask with "query", some send something the mirror cannot read
        if i % 10 == 9:
            return httpx.post(url + "/ask", content=b"not json", trust_env=False, timeout=10)
        body["query" if i % 3 == 0 else "question"] = f"q{offset + i}"
        return httpx.post(
            url + "/ask", json=body, headers={"X-User-Id": f"u{i % 4}"}, trust_env=False, timeout=10
        )

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(n)))


def test_users_get_the_champion_and_rows_add_up(
    champion_url: str, challenger_urls: dict[str, str], store: Store, store_url: str
) -> None:
    # the proxy closes its own store object; the fixture's store reads the rows afterwards
    app = proxy_app(champion_url, challenger_urls, Store.open(store_url))
    server = serve(app)
    url = next(server)
    responses = send_requests(url, N)
    stats = httpx.get(url + "/_shadow/stats", trust_env=False).json()
    next(server, None)  # shutdown: the shadow waits for challengers and flushes its log

    for i, resp in enumerate(responses):
        if i % 10 == 9:
            assert resp.status_code == 400 and resp.text == "not JSON"  # the champion's own answer
        else:
            assert resp.status_code == 200
            assert resp.json() == {"answer": f"champion: q{i}", "contexts": [{"id": "cao#12"}]}
    assert {"requests", "mirror", "shadow"} <= stats.keys()
    unreadable = N // 10
    assert stats["mirror"]["recorded"] + stats["mirror"]["unparsed"] + stats["mirror"]["champion_failed"] == N
    assert stats["mirror"]["champion_failed"] == unreadable

    final = app.mirror.shadow.stats()
    assert final.sampled == N - unreadable and final.dropped == 0
    expected = (final.sampled - final.dropped) * 2 - final.rows_lost - final.rows_dropped
    rows = list(store.shadow_rows.iter_shadow_rows())
    assert len(rows) == expected == final.rows_written == 2 * (N - unreadable)
    errors = Counter((row.challenger, (row.challenger_answer.error or "").split(" ")[0]) for row in rows)
    assert errors == {("broken", "HTTP"): N - unreadable, ("hanging", "timeout"): N - unreadable}
    assert all(r.challenger_answer.error.startswith("HTTP 500") for r in rows if r.challenger == "broken")
    row = next(r for r in rows if r.challenger == "broken")
    assert row.champion_answer.text.startswith("champion: q") and row.champion_answer.chunk_ids == ["cao#12"]
    assert row.tags == {"department": "hr"} and row.user_hash is not None and row.user_hash != "u0"
    assert app.closed


def test_a_challenger_answering_503_then_200_is_retried_and_the_row_has_the_200(
    champion_url: str, store: Store, store_url: str
) -> None:
    seen: Counter[str] = Counter()

    async def flaky_route(request: Request) -> Response:
        """503 the first time a question comes, then the answer."""
        question = str((await request.json())["question"])
        seen[question] += 1
        if seen[question] == 1:
            return Response("warming up", status_code=503)
        return JSONResponse({"answer": f"flaky: {question}"})

    flaky = serve(app_of(flaky_route))
    app = proxy_app(champion_url, {"flaky": next(flaky)}, Store.open(store_url))
    server = serve(app)
    url = next(server)
    questions = [f"q{i}" for i in range(3)]
    for question in questions:
        resp = httpx.post(url + "/ask", json={"question": question}, trust_env=False, timeout=10)
        assert resp.json()["answer"] == f"champion: {question}"
    next(server, None)  # shutdown: the shadow waits for challengers and flushes its log
    next(flaky, None)

    rows = sorted(store.shadow_rows.iter_shadow_rows(), key=lambda r: r.query)
    assert [(r.challenger, r.query, r.challenger_answer.text, r.challenger_answer.error) for r in rows] == [
        ("flaky", q, f"flaky: {q}", None) for q in questions
    ]
    assert seen == {q: 2 for q in questions}
    final = app.mirror.shadow.stats()
    assert (final.challenger_errors, final.challenger_timeouts) == (0, 0)


async def test_challenger_retries_stop_at_the_deadline() -> None:
    from ragreplay.core.shadow import live_case
    from ragreplay.shadow.mirror import MirrorHttpTarget

    async def busy_route(request: Request) -> Response:
        return Response(
            "busy", status_code=503, headers={"Retry-After": "3"} if "later" in request.url.path else {}
        )

    routes = [Route(path, busy_route, methods=["POST"]) for path in ("/later/", "/now/")]
    busy = serve(Starlette(routes=routes))
    base = next(busy)
    try:
        target = MirrorHttpTarget("c", base + "/later", deadline_s=0.5)  # outside a mirrored request: POST /
        start = time.perf_counter()
        answer = await target.answer("q", live_case("r1", "q", None, None))
        # a 3 s Retry-After ends past the 0.5 s deadline: no retry, the first failure is the answer
        assert answer.error == "HTTP 503: busy" and time.perf_counter() - start < 0.5
        await target.aclose()
        target = MirrorHttpTarget("c", base + "/now", deadline_s=5)
        answer = await target.answer("q", live_case("r1", "q", None, None))
        assert answer.error == "HTTP 503: busy (after 3 attempts)"  # CHALLENGER_RETRY: two retries
        await target.aclose()
    finally:
        next(busy, None)


@pytest.mark.postgres
def test_two_replicas_on_one_database_lose_and_duplicate_nothing(
    champion_url: str, challenger_urls: dict[str, str], store_url: str
) -> None:
    if store_url.startswith("sqlite"):
        pytest.skip("replicas share a PostgreSQL database")
    apps = [proxy_app(champion_url, challenger_urls, Store.open(store_url), rate=0.5) for _ in range(2)]
    servers = [serve(app) for app in apps]
    urls = [next(s) for s in servers]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda k: send_requests(urls[k], N, offset=k * N), range(2)))
    for server in servers:
        next(server, None)
    assert all(r.status_code in (200, 400) for rs in results for r in rs)
    assert all(
        r.json()["answer"].startswith("champion: ") for rs in results for r in rs if r.status_code == 200
    )

    shadowed = sum(a.mirror.shadow.stats().sampled - a.mirror.shadow.stats().dropped for a in apps)
    lost = sum(a.mirror.shadow.stats().rows_lost + a.mirror.shadow.stats().rows_dropped for a in apps)
    assert shadowed > 0 and lost == 0
    with Store.open(store_url) as reader:
        rows = list(reader.shadow_rows.iter_shadow_rows())
    assert len(rows) == len({r.id for r in rows}) == 2 * shadowed
    per_request = Counter(r.request_id for r in rows)
    assert len(per_request) == shadowed and set(per_request.values()) == {2}


def test_cli_flags_are_checked() -> None:
    assert parse_challengers(["a=http://127.0.0.1:1", "b=http://127.0.0.1:2/"]) == {
        "a": "http://127.0.0.1:1",
        "b": "http://127.0.0.1:2/",
    }
    for bad in (["nourl"], ["a=127.0.0.1:1"], ["a=http://x", "a=http://y"]):
        with pytest.raises(ConfigError):
            parse_challengers(bad)
    sampler = build_sampler(0.15, ["09:00-11:00=0.05"], "Europe/Amsterdam", "user")
    assert sampler.per == "user" and sampler.windows[0].rate == 0.05
    with pytest.raises(ConfigError, match="--window"):
        build_sampler(0.15, ["09:00-11:00"], "UTC", "request")
    with pytest.raises(ConfigError):
        build_sampler(0.15, [], "UTC", "everyone")


def test_stats_json_is_served(champion_url: str, challenger_urls: dict[str, str], tmp_path: object) -> None:
    app = proxy_app(champion_url, challenger_urls, Store.open(f"sqlite:///{tmp_path}/s.db"), rate=0.0)
    server = serve(app)
    url = next(server)
    resp = httpx.post(url + "/ask", json={"question": "hi"}, trust_env=False)
    stats = json.loads(httpx.get(url + "/_shadow/stats", trust_env=False).content)
    next(server, None)
    assert resp.json()["answer"] == "champion: hi"
    assert stats["shadow"]["seen"] == 1 and stats["shadow"]["sampled"] == 0 and stats["forwarded"] == 1


async def test_mirror_skips_what_it_cannot_read_and_never_raises() -> None:
    from datetime import UTC, datetime

    from ragreplay.shadow import Shadow
    from ragreplay.shadow.mirror import MirrorHttpTarget, ProxyMirror
    from ragreplay.shadow.proxy import ChampionReply, MirroredRequest

    target = MirrorHttpTarget("c", "http://127.0.0.1:9")
    shadow = Shadow(target, {"c": target}, challenger_timeout_s=0.2)
    mirror = ProxyMirror(shadow, RequestFields(user_header=None, user_path="user.id"))

    def exchange(body: bytes, reply: bytes, status: int = 200) -> None:
        request = MirroredRequest("POST", "/ask", "", (), body, datetime.now(UTC))
        mirror(request, ChampionReply(status, (), reply, 1.0))

    exchange(b'{"other": 1}', b'{"answer": "a"}')  # no question
    exchange(b'{"question": "q"}', b'{"text": "a"}')  # no answer at the answer path
    exchange(b"\xff", b"{}")  # not even text
    exchange(b'{"question": "q"}', b"oops", status=502)  # the champion failed
    exchange(b'{"question": "q", "user": {"id": 7}}', b'{"answer": "a"}')
    assert mirror.stats() == {
        "recorded": 1,
        "unparsed": 3,
        "champion_failed": 1,
        "other_paths": 0,
        "not_sampled": 0,
        "feedback_recorded": 0,
        "feedback_unreadable": 0,
        "deferred": 0,
        "too_busy": 0,
        "pending": 0,
    }
    await shadow.aclose(timeout_s=2)
    # the per-user sample needs the body: the one that is not JSON never reached the sampler; the other two
    # unreadable ones were sampled, then withdrawn, so only the shadowed request counts as sampled
    assert (shadow.stats().seen, shadow.stats().sampled) == (3, 1)
    assert shadow.challenger_errors == 1  # nothing listens on port 9
    await target.aclose()


async def test_the_sampler_decides_before_any_body_is_read() -> None:
    from datetime import UTC, datetime

    from ragreplay.shadow import Shadow
    from ragreplay.shadow.mirror import MirrorHttpTarget, ProxyMirror
    from ragreplay.shadow.proxy import ChampionReply, MirroredRequest

    target = MirrorHttpTarget("c", "http://127.0.0.1:9")
    shadow = Shadow(target, {"c": target}, sampler=build_sampler(0.0, [], "UTC", "request"))
    mirror = ProxyMirror(shadow, RequestFields())
    for body in (b"\xff", b'{"question": "q"}'):
        mirror(
            MirroredRequest("POST", "/ask", "", (), body, datetime.now(UTC)),
            ChampionReply(200, (), b"?", 1.0),
        )
    # left out by the sampler: counted as such, their (unreadable) bodies never parsed
    assert (mirror.not_sampled, mirror.unparsed, mirror.recorded) == (2, 0, 0)
    assert (shadow.stats().seen, shadow.stats().sampled) == (2, 0)
    await shadow.aclose()
    await target.aclose()


@pytest.mark.postgres
def test_database_gone_mid_load_champion_keeps_answering_and_losses_are_counted(
    champion_url: str, challenger_urls: dict[str, str], store_url: str
) -> None:
    if store_url.startswith("sqlite"):
        pytest.skip("needs a database server to cut off")
    relay = TcpRelay(5432)
    via_relay = store_url.replace("127.0.0.1:5432", f"127.0.0.1:{relay.port}")
    assert via_relay != store_url
    app = proxy_app(champion_url, {"broken": challenger_urls["broken"]}, Store.open(via_relay))
    server = serve(app)
    url = next(server)
    try:
        first = send_requests(url, N)
        deadline = time.monotonic() + 5
        while app.mirror.shadow.stats().rows_written == 0:
            assert time.monotonic() < deadline, "nothing was written before the cut"
            time.sleep(0.05)
        relay.cut()
        second = send_requests(url, N, offset=N)
        next(server, None)
    finally:
        relay.stop()
    for i, resp in enumerate(first + second):
        if i % N % 10 != 9:
            assert resp.status_code == 200 and resp.json()["answer"] == f"champion: q{i}"
    final = app.mirror.shadow.stats()
    assert final.rows_lost > 0 and final.rows_pending == 0
    assert final.rows_written + final.rows_lost + final.rows_dropped == final.rows_offered == final.sampled
    with Store.open(store_url) as reader:
        stored = reader.shadow_rows.count_shadow_rows()
    # A batch whose COMMIT reached the server just before the cut is in the database, but its answer never came
    # back, so the log had to count it lost: "lost" is an upper bound, "written" a lower one.
    assert final.rows_written <= stored <= final.rows_written + final.rows_lost
    assert stored < final.rows_offered


def test_challengers_get_the_users_own_request_not_a_rebuilt_one(champion_url: str, store_url: str) -> None:
    seen: list[tuple[str, bytes]] = []

    async def recording_route(request: Request) -> Response:
        seen.append((f"{request.url.path}?{request.url.query}", await request.body()))
        return JSONResponse({"answer": "challenger says hi"})

    challenger = serve(app_of(recording_route))
    app = proxy_app(champion_url, {"rec": next(challenger)}, Store.open(store_url))
    server = serve(app)
    url = next(server)
    body = b'{"question": "q1", "tags": {"department": "hr"}, "extra": [1, 2]}'
    resp = httpx.post(
        url + "/ask?lang=nl", content=body, headers={"content-type": "application/json"}, trust_env=False
    )
    next(server, None)
    next(challenger, None)
    assert resp.json()["answer"] == "champion: q1"
    assert seen == [("/ask?lang=nl", body)]  # same path, query and bytes: passed explicitly, not rebuilt


def test_a_huge_challenger_reply_is_an_error_row_never_stored_whole(
    champion_url: str, store: Store, store_url: str
) -> None:
    async def huge_route(request: Request) -> Response:
        return JSONResponse({"answer": "z" * (3 << 20)})  # 3 MB

    huge = serve(app_of(huge_route))
    sampler = build_sampler(1.0, [], "UTC", "request")
    app = build_app(
        champion_url,
        {"huge": next(huge)},
        Store.open(store_url),
        sampler,
        FIELDS,
        timeout_s=5,
        challenger_timeout_s=5,
        max_reply=1 << 20,
    )
    server = serve(app)
    url = next(server)
    resp = httpx.post(url + "/ask", json={"question": "q1"}, trust_env=False, timeout=10)
    assert resp.json()["answer"] == "champion: q1"
    next(server, None)
    next(huge, None)
    (row,) = store.shadow_rows.iter_shadow_rows()
    assert row.challenger_answer.text == "" and "reply too large" in (row.challenger_answer.error or "")
    assert app.mirror.shadow.stats().challenger_errors == 1


async def test_the_side_doors_answer_only_this_host_or_the_token(
    champion_url: str, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragreplay.shadow.proxy import SIDE_DOOR_TOKEN_ENV

    def client(app: ShadowServeApp, host: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app, client=(host, 4242))  # type: ignore[arg-type]
        return httpx.AsyncClient(transport=transport, base_url="http://proxy")

    forged = {"request_id": "r1", "feedback": "bad"}
    monkeypatch.delenv(SIDE_DOOR_TOKEN_ENV, raising=False)
    app = proxy_app(champion_url, {}, Store.open(store_url))
    async with client(app, "203.0.113.7") as outsider, client(app, "127.0.0.1") as local:
        for path in ("/_shadow/stats", "/_shadow/metrics"):
            assert (await outsider.get(path)).status_code == 403
            assert (await local.get(path)).status_code == 200
        refused = await outsider.post("/_shadow/feedback", json=forged)
        assert refused.status_code == 403 and SIDE_DOOR_TOKEN_ENV in refused.json()["error"]
    await app.aclose()

    monkeypatch.setenv(SIDE_DOOR_TOKEN_ENV, "s3cret")
    app = proxy_app(champion_url, {}, Store.open(store_url))
    async with client(app, "203.0.113.7") as outsider:
        assert (await outsider.post("/_shadow/feedback", json=forged)).status_code == 401
        wrong = {"Authorization": "Bearer guess"}
        assert (await outsider.get("/_shadow/stats", headers=wrong)).status_code == 401
        right = {"Authorization": "Bearer s3cret"}
        assert (await outsider.get("/_shadow/stats", headers=right)).status_code == 200
        assert (await outsider.post("/_shadow/feedback", json=forged, headers=right)).status_code == 202
    await app.aclose()
