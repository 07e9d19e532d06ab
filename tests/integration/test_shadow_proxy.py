"""The shadow proxy between a real client and a real champion server (uvicorn on 127.0.0.1, ephemeral ports)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from loopback import serve
from ragreplay.shadow.proxy import DEFAULT_TEE_CAP, ChampionReply, MirroredRequest, create_proxy

CHUNKS = [f"chunk-{i}\n".encode() for i in range(4)]
CHUNK_GAP_S = 0.25
STREAM_EVENTS: dict[str, float] = {}


async def json_route(request: Request) -> Response:
    return JSONResponse(
        {"answer": "25 days", "q": request.query_params.get("q")},
        headers={"X-Champion": "v1", "Cache-Control": "no-store"},
    )


async def text_route(request: Request) -> Response:
    body = await request.body()
    seen = {k: request.headers.get(k) for k in ("x-user-id", "x-forwarded-for", "x-secret-hop")}
    return PlainTextResponse(
        f"{request.method} {body.decode()} | {json.dumps(seen)}", status_code=201, headers={"X-Trace": "t-1"}
    )


async def stream_route(request: Request) -> Response:
    async def produce() -> AsyncIterator[bytes]:
        for i, chunk in enumerate(CHUNKS):
            if i == len(CHUNKS) - 1:
                STREAM_EVENTS["last_produced"] = time.monotonic()
            yield chunk
            await asyncio.sleep(CHUNK_GAP_S)

    return StreamingResponse(produce(), media_type="text/event-stream", headers={"X-Stream": "yes"})


async def status_route(request: Request) -> Response:
    code = int(request.path_params["code"])
    return Response(f"status {code}".encode(), status_code=code, headers={"X-Status": str(code)})


async def set_cookie_route(request: Request) -> Response:
    resp = PlainTextResponse("welcome")
    resp.set_cookie("session", request.query_params["user"])
    return resp


async def echo_cookie_route(request: Request) -> Response:
    return PlainTextResponse(request.headers.get("cookie", "<none>"))


async def slow_route(request: Request) -> Response:
    await asyncio.sleep(1)
    return PlainTextResponse("late")


CHAMPION = Starlette(
    routes=[
        Route("/json", json_route),
        Route("/text", text_route, methods=["POST", "PUT"]),
        Route("/stream", stream_route),
        Route("/status/{code}", status_route),
        Route("/slow", slow_route),
        Route("/set-cookie", set_cookie_route),
        Route("/echo-cookie", echo_cookie_route),
    ]
)

MIRRORED: list[tuple[MirroredRequest, ChampionReply]] = []


def mirror(request: MirroredRequest, reply: ChampionReply) -> None:
    """Records; misbehaves on demand (header x-test-mirror: raise | sleep)."""
    mode = request.header("x-test-mirror")
    if mode == "raise":
        raise RuntimeError("mirror blew up")
    if mode == "sleep":
        time.sleep(0.8)
    MIRRORED.append((request, reply))


@pytest.fixture(scope="module")
def champion_url() -> Iterator[str]:
    yield from serve(CHAMPION)


@pytest.fixture(scope="module")
def proxy_url(champion_url: str) -> Iterator[str]:
    yield from serve(create_proxy(champion_url, mirror, timeout_s=5))


@pytest.fixture(autouse=True)
def _clear() -> None:
    MIRRORED.clear()


def wait_for_mirror(n: int = 1, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while len(MIRRORED) < n:
        assert time.monotonic() < deadline, "mirror was not called"
        time.sleep(0.01)


def comparable(resp: httpx.Response) -> tuple[int, bytes, list[tuple[str, str]]]:
    return resp.status_code, resp.content, sorted((k.lower(), v) for k, v in resp.headers.multi_items())


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/json?q=leave%20days&x=1", None),
        ("POST", "/text", b"hello champion"),
        ("PUT", "/text", b"put body"),
        ("GET", "/status/404", None),
        ("GET", "/status/503", None),
        ("GET", "/status/302", None),
        ("GET", "/stream", None),
        ("GET", "/no-such-route", None),
    ],
)
def test_response_is_identical_to_the_champion(
    champion_url: str, proxy_url: str, method: str, path: str, body: bytes | None
) -> None:
    headers = {"X-User-Id": "u7", "Connection": "keep-alive, X-Secret-Hop", "X-Secret-Hop": "1"}
    with httpx.Client(trust_env=False, timeout=10) as client:
        direct = client.request(method, champion_url + path, content=body, headers=headers)
        via = client.request(method, proxy_url + path, content=body, headers=headers)
    if path == "/text":
        # the champion sees the forwarding headers, so its echo differs only there
        seen = json.loads(via.text.split(" | ", 1)[1])
        assert seen["x-forwarded-for"] == "127.0.0.1" and seen["x-user-id"] == "u7"
        assert seen["x-secret-hop"] is None  # named in Connection: hop-by-hop, not forwarded
        assert json.loads(direct.text.split(" | ", 1)[1])["x-secret-hop"] == "1"
        assert via.text.startswith(f"{method} {body.decode()}")  # type: ignore[union-attr]
        assert (via.status_code, via.headers["x-trace"]) == (direct.status_code, direct.headers["x-trace"])
        return
    assert comparable(via) == comparable(direct)
    assert via.status_code == direct.status_code


def test_custom_headers_and_status_pass_through(proxy_url: str) -> None:
    resp = httpx.get(proxy_url + "/json?q=x", trust_env=False)
    assert resp.status_code == 200
    assert resp.headers["x-champion"] == "v1" and resp.headers["cache-control"] == "no-store"
    assert resp.json() == {"answer": "25 days", "q": "x"}
    resp = httpx.get(proxy_url + "/status/418", trust_env=False)
    assert (resp.status_code, resp.text, resp.headers["x-status"]) == (418, "status 418", "418")


def test_stream_is_passed_on_chunk_by_chunk(proxy_url: str) -> None:
    STREAM_EVENTS.clear()
    arrivals: list[float] = []
    received = b""
    with (
        httpx.Client(trust_env=False, timeout=10) as client,
        client.stream("GET", proxy_url + "/stream") as resp,
    ):
        assert resp.headers["x-stream"] == "yes"
        for chunk in resp.iter_raw():
            arrivals.append(time.monotonic())
            received += chunk
    assert received == b"".join(CHUNKS)
    assert len(arrivals) >= 2
    # the first chunk reached the client before the champion even produced the last one
    assert arrivals[0] < STREAM_EVENTS["last_produced"]
    wait_for_mirror()
    assert MIRRORED[-1][1].body == b"".join(CHUNKS)


def test_mirror_gets_the_request_and_the_teed_reply(proxy_url: str) -> None:
    resp = httpx.post(
        proxy_url + "/text?lang=nl", content=b"Hoeveel verlofdagen?", headers={"X-User-Id": "u9"}
    )
    wait_for_mirror()
    request, reply = MIRRORED[-1]
    assert (request.method, request.path, request.query) == ("POST", "/text", "lang=nl")
    assert request.body == b"Hoeveel verlofdagen?"
    assert request.header("x-user-id") == "u9"
    assert request.received_at.tzinfo is not None
    assert reply.status == 201 and reply.body == resp.content
    assert reply.header("x-trace") == "t-1"
    assert reply.latency_ms > 0 and not reply.truncated


def test_gzip_body_passes_unchanged_and_the_mirror_gets_it_decoded(champion_url: str) -> None:
    import gzip

    async def gz(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        body = gzip.compress(b"compressed answer")
        headers = [(b"content-encoding", b"gzip"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": body})  # type: ignore[operator]

    for url in serve(gz):
        for proxy in serve(create_proxy(url, mirror)):
            resp = httpx.get(proxy + "/x", trust_env=False, headers={"Accept-Encoding": "gzip"})
            assert resp.text == "compressed answer" and resp.headers["content-encoding"] == "gzip"
            wait_for_mirror()
    assert MIRRORED[-1][1].body == b"compressed answer"


def test_a_compressed_reply_is_inflated_for_the_mirror_only_up_to_the_tee_cap() -> None:
    import gzip

    bomb = gzip.compress(b"\0" * (64 << 20))  # ~64 KB that inflate to 64 MB

    async def gz(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        headers = [(b"content-encoding", b"gzip"), (b"content-length", str(len(bomb)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": bomb})  # type: ignore[operator]

    for url in serve(gz):
        for proxy in serve(create_proxy(url, mirror)):
            resp = httpx.get(proxy + "/x", trust_env=False, headers={"Accept-Encoding": "gzip"})
            assert resp.content == b"\0" * (64 << 20)  # httpx inflates it: the user got the bytes whole
            wait_for_mirror()
    reply = MIRRORED[-1][1]
    assert len(reply.body) == DEFAULT_TEE_CAP and reply.truncated


@pytest.mark.parametrize("mode", ["raise", "sleep"])
def test_misbehaving_mirror_changes_and_delays_nothing(proxy_url: str, mode: str) -> None:
    with httpx.Client(trust_env=False, timeout=10) as client:
        client.get(proxy_url + "/json")  # warm the connection
        started = time.monotonic()
        resp = client.get(proxy_url + "/json?q=a", headers={"X-Test-Mirror": mode})
        elapsed = time.monotonic() - started
        assert resp.status_code == 200 and resp.json()["q"] == "a"
        assert elapsed < 0.4, f"response took {elapsed:.2f}s with a mirror that does {mode}"
        time.sleep(1.0 if mode == "sleep" else 0.1)
        stats = client.get(proxy_url + "/_shadow/stats").json()
    if mode == "raise":
        assert stats["mirror_errors"] >= 1
    else:
        assert stats["mirror_ms_max"] >= 700


def test_stats_endpoint_is_not_forwarded(proxy_url: str) -> None:
    httpx.get(proxy_url + "/status/500", trust_env=False)
    resp = httpx.get(proxy_url + "/_shadow/stats", trust_env=False)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    stats = resp.json()
    assert stats["forwarded"] >= 1 and stats["by_status"]["500"] >= 1
    assert "_shadow" not in json.dumps(stats["by_status"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_champion_down_gives_502_quickly() -> None:
    proxy = create_proxy(f"http://127.0.0.1:{free_port()}", mirror, timeout_s=5)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=proxy), base_url="http://proxy") as client:
        resp = await client.get("/json")
        stats = (await client.get("/_shadow/stats")).json()
    await proxy.aclose()
    assert resp.status_code == 502 and "champion unreachable" in resp.text
    assert stats["champion_unreachable"] == 1 and stats["forwarded"] == 0
    assert MIRRORED == []


async def test_champion_timeout_gives_504(champion_url: str) -> None:
    proxy = create_proxy(champion_url, mirror, timeout_s=0.3)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=proxy), base_url="http://proxy") as client:
        started = time.monotonic()
        resp = await client.get("/slow")
    await proxy.aclose()
    assert resp.status_code == 504 and time.monotonic() - started < 1.5


async def test_teed_body_is_capped_but_the_user_gets_all(champion_url: str) -> None:
    proxy = create_proxy(champion_url, mirror, tee_cap=5)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=proxy), base_url="http://proxy") as client:
        resp = await client.get("/stream")
        stats = (await client.get("/_shadow/stats")).json()
    await proxy.aclose()
    assert resp.content == b"".join(CHUNKS)
    reply = MIRRORED[-1][1]
    assert reply.truncated and reply.body == b"".join(CHUNKS)[:5]
    assert stats["tee_truncated"] == 1


def test_cli_shadow_serve_forwards_to_the_champion(champion_url: str) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "ragreplay.cli.app", "shadow", "serve", "--champion", champion_url]
    proc = subprocess.Popen([*cmd, "--port", str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                resp = httpx.get(f"http://127.0.0.1:{port}/json?q=cli", trust_env=False)
                break
            except httpx.ConnectError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "ragreplay shadow serve did not start"
                time.sleep(0.05)
        assert resp.status_code == 200 and resp.json()["q"] == "cli" and resp.headers["x-champion"] == "v1"
        assert "server" not in resp.headers  # the proxy adds no server header of its own
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_shadow_serve_rejects_a_bad_champion_url(capsys: pytest.CaptureFixture[str]) -> None:
    from ragreplay.cli.app import main

    assert main(["shadow", "serve", "--champion", "127.0.0.1:8000"]) == 2
    assert "--champion" in capsys.readouterr().err


def test_one_users_cookies_never_reach_the_champion_with_another_users_request(champion_url: str) -> None:
    # by host name: a client cookie jar ignores cookies from bare IP addresses, which would hide a leak
    for proxy_url in serve(create_proxy(champion_url.replace("127.0.0.1", "localhost"), mirror)):
        with (
            httpx.Client(trust_env=False, timeout=10) as alice,
            httpx.Client(trust_env=False, timeout=10) as bob,
        ):
            welcome = alice.get(proxy_url + "/set-cookie?user=alice")
            assert welcome.headers["set-cookie"].startswith("session=alice")
            assert bob.get(proxy_url + "/echo-cookie").text == "<none>"
            assert bob.get(proxy_url + "/echo-cookie", headers={"Cookie": "theme=dark"}).text == "theme=dark"
            # alice's own client keeps her cookie and sends it: that one does pass through
            assert alice.get(proxy_url + "/echo-cookie").text == "session=alice"


def raw_champion(reply: bytes) -> Iterator[str]:
    """A champion that reads one request, writes ``reply`` verbatim and closes the connection."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def run() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(reply)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten b",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\na\r\nonly ten b\r\n",
    ],
    ids=["content-length", "chunked"],
)
def test_champion_cut_mid_body_aborts_the_users_response(reply: bytes) -> None:
    for champion in raw_champion(reply):
        for proxy in serve(create_proxy(champion, mirror, timeout_s=5)):
            with httpx.Client(trust_env=False, timeout=10) as client:
                with pytest.raises(httpx.RemoteProtocolError):  # never a short body that looks complete
                    client.get(proxy + "/x")
                stats = client.get(proxy + "/_shadow/stats").json()
    assert stats["champion_broke_midstream"] == 1 and stats["forwarded"] == 0
    assert MIRRORED == []


def test_complete_close_delimited_and_head_replies_pass_through() -> None:
    for champion in raw_champion(b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil close"):
        for proxy in serve(create_proxy(champion, mirror, timeout_s=5)):
            resp = httpx.get(proxy + "/x", trust_env=False)
            assert (resp.status_code, resp.text) == (200, "until close")
            wait_for_mirror()
    assert MIRRORED[-1][1].body == b"until close"
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 42\r\nx-head: yes\r\n\r\n"
    for champion in raw_champion(head):
        for proxy in serve(create_proxy(champion, mirror, timeout_s=5)):
            resp = httpx.head(proxy + "/x", trust_env=False)
            assert resp.status_code == 200 and resp.headers["x-head"] == "yes" and resp.content == b""
            assert resp.headers["content-length"] == "42"


def test_forwarded_headers_drop_hop_by_hop_and_the_connection_named_ones() -> None:
    from ragreplay.shadow.proxy import _upstream_headers

    scope = {
        "scheme": "https",
        "client": ("10.1.2.3", 5555),
        "headers": [
            (b"host", b"rag.example"),
            (b"Connection", b"keep-alive, X-Secret"),
            (b"x-secret", b"1"),
            (b"keep-alive", b"timeout=5"),
            (b"content-length", b"3"),
            (b"te", b"trailers"),
            (b"x-user-id", b"u7"),
            (b"accept", b"a"),
            (b"accept", b"b"),
        ],
    }
    headers = _upstream_headers(scope)
    assert list(headers.items()) == [
        ("x-user-id", "u7"),
        ("accept", "a"),
        ("accept", "b"),
        ("x-forwarded-proto", "https"),
        ("x-forwarded-for", "10.1.2.3"),
        ("x-forwarded-host", "rag.example"),
    ]


def test_a_clients_forwarded_for_is_appended_to_once() -> None:
    from ragreplay.shadow.proxy import _upstream_headers

    scope = {
        "scheme": "http",
        "client": ("10.1.2.3", 5555),
        "headers": [
            (b"host", b"rag.example"),
            (b"x-forwarded-for", b"203.0.113.9"),
            (b"x-forwarded-proto", b"https"),
        ],
    }
    headers = _upstream_headers(scope)
    assert headers.getall("x-forwarded-for") == ["203.0.113.9, 10.1.2.3"]
    assert headers.getall("x-forwarded-proto") == ["https"]  # the outer proxy's word is kept, not doubled


def test_options_star_is_a_400_not_a_traceback(proxy_url: str) -> None:
    import socket
    from urllib.parse import urlsplit

    target = urlsplit(proxy_url)
    with socket.create_connection((target.hostname, target.port), timeout=5) as sock:
        sock.sendall(b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400") and b"must be a path" in reply


def test_a_body_over_the_limit_is_a_413_and_never_reaches_the_champion(champion_url: str) -> None:
    server = serve(create_proxy(champion_url, mirror, timeout_s=5, max_body=1024))
    url = next(server)
    try:
        big = httpx.post(url + "/text", content=b"x" * 5000, trust_env=False, timeout=10)
        assert big.status_code == 413 and "1024 bytes" in big.text

        # a chunked body with no Content-Length is cut while it is read
        def chunks() -> Iterator[bytes]:
            for _ in range(10):
                yield b"y" * 500

        streamed = httpx.post(url + "/text", content=chunks(), trust_env=False, timeout=10)
        assert streamed.status_code == 413
        small = httpx.post(url + "/text", content=b"hello", trust_env=False, timeout=10)
        assert small.status_code == 201 and small.text.startswith("POST hello")
        stats = httpx.get(url + "/_shadow/stats", trust_env=False).json()
        assert stats["too_large"] == 2 and stats["by_status"]["413"] == 2
    finally:
        next(server, None)
    assert len(MIRRORED) == 1  # only the small request reached the champion and the mirror


def test_response_header_names_reach_the_user_lower_cased_their_values_unchanged() -> None:
    # uvicorn (httptools and h11 alike) writes header names lower-case; names are case-insensitive (RFC 9110
    # section 5.1), values are not and pass as the champion sent them (docs/shadow.md, "Limits")
    reply = b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Champion-Trace: Trace-ABC\r\nETag: "Ab1"\r\n\r\nok'
    for champion in raw_champion(reply):
        for proxy in serve(create_proxy(champion, mirror, timeout_s=5)):
            port = int(proxy.rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                conn.sendall(b"GET /x HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                raw = b""
                while chunk := conn.recv(65536):
                    raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")[1:]
    assert b"x-champion-trace: Trace-ABC" in lines and b'etag: "Ab1"' in lines
    assert all(name == name.lower() for name, _, _ in (line.partition(b":") for line in lines))
    assert body == b"ok"
