"""The default HTTP client (providers/http11, http11_pool) against real loopback servers: raw asyncio servers that
send exactly the bytes a test needs, and the model on top classifying what went wrong."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ragreplay.core.chat import ChatMessage, ChatRequest, ProviderError
from ragreplay.errors import ConfigError
from ragreplay.providers.http11 import HttpConnectionError, ReplyTooLargeError
from ragreplay.providers.http11_pool import HttpPool, PostTarget
from ragreplay.providers.openai_compat import HTTP_CLIENT_ENV, OpenAICompatModel, http_client

REQUEST = ChatRequest(messages=(ChatMessage(role="user", content="hi"),))
COMPLETION = json.dumps({"model": "m-1", "choices": [{"message": {"content": "hello"}}]}).encode()

Reply = Callable[[int, bytes], bytes | None]
"""What a raw server sends for the n-th request (counted over all connections) with this body; None: hang."""


def http_reply(body: bytes, status: str = "200 OK", headers: str = "", close: bool = False) -> bytes:
    """A whole HTTP/1.1 reply with a Content-Length body."""
    extra = "Connection: close\r\n" if close else ""
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}{extra}"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


@dataclass
class RawServer:
    """A loopback server reading HTTP/1.1 requests and sending what ``reply`` says, connection by connection."""

    reply: Reply
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)
    close_after_each: bool = False

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = await reader.readexactly(length)
                self.heads.append(head)
                self.requests.append(body)
                answer = self.reply(len(self.requests), body)
                if answer is None:
                    await reader.read()  # hang until the client gives up
                    return
                writer.write(answer)
                await writer.drain()
                if self.close_after_each or b"Connection: close" in answer:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            await writer.wait_closed()


StartRaw = Callable[[Reply], Awaitable[tuple[RawServer, str]]]


@pytest.fixture
async def raw_server() -> AsyncIterator[StartRaw]:
    """Starts :class:`RawServer` instances; yields a coroutine function returning (server, base_url)."""
    started: list[asyncio.Server] = []

    async def start(reply: Reply) -> tuple[RawServer, str]:
        raw = RawServer(reply)
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        started.append(server)
        return raw, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"

    yield start
    for server in started:
        server.close()
        await server.wait_closed()


def always(answer: bytes | None) -> Reply:
    return lambda n, body: answer


async def test_connections_are_kept_alive_and_bounded_by_the_pool(raw_server: StartRaw) -> None:
    raw, url = await raw_server(always(http_reply(COMPLETION)))
    pool = HttpPool(timeout_s=5, max_connections=3)
    model = OpenAICompatModel("t:m", url, "m", client=pool)
    try:
        for _ in range(5):  # one after another: one connection carries them all
            assert (await model.complete(REQUEST)).text == "hello"
        assert raw.connections == 1
        replies = await asyncio.gather(*(model.complete(REQUEST) for _ in range(20)))
        assert all(r.text == "hello" for r in replies)
        assert raw.connections <= 3 and (await pool.get()).open_connections <= 3
    finally:
        await pool.aclose()
    assert len(raw.requests) == 25 and pool.closed
    head = raw.heads[0].decode()
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{url.split(':')[2].split('/')[0]}\r\n" in head
    assert "Content-Type: application/json\r\n" in head
    assert json.loads(raw.requests[0])["messages"] == [{"role": "user", "content": "hi"}]


async def test_a_chunked_body_and_a_gzipped_body_are_read_whole(raw_server: StartRaw) -> None:
    half = len(COMPLETION) // 2
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n%s\r\n" % (half, COMPLETION[:half])
        + b"%x\r\n%s\r\n0\r\n\r\n" % (len(COMPLETION) - half, COMPLETION[half:])
    )
    packed = gzip.compress(COMPLETION)
    zipped = http_reply(packed, headers="Content-Encoding: gzip\r\n")
    raw, url = await raw_server(lambda n, body: chunked if n % 2 else zipped)
    pool = HttpPool(timeout_s=5)
    model = OpenAICompatModel("t:m", url, "m", client=pool)
    try:
        assert [(await model.complete(REQUEST)).text for _ in range(4)] == ["hello"] * 4
    finally:
        await pool.aclose()
    assert raw.connections == 1  # both kinds of body leave the connection reusable
    assert b"Accept-Encoding: gzip, deflate\r\n" in raw.heads[0]


async def test_a_body_that_ends_with_the_connection_is_read_and_the_connection_not_reused(
    raw_server: StartRaw,
) -> None:
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + COMPLETION
    raw, url = await raw_server(always(until_close))
    pool = HttpPool(timeout_s=5)
    model = OpenAICompatModel("t:m", url, "m", client=pool)
    try:
        assert [(await model.complete(REQUEST)).text for _ in range(2)] == ["hello", "hello"]
    finally:
        await pool.aclose()
    assert raw.connections == 2


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n" + COMPLETION[:10], "in the middle of the reply"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "in the middle of the reply"),
        (b"", "before replying"),
        (b"SMTP ready\r\n\r\n", "not HTTP/1.1"),
    ],
)
async def test_a_server_that_drops_or_garbles_the_reply_is_a_transient_error(
    raw_server: StartRaw,
    reply: bytes,
    says: str,
) -> None:
    raw, url = await raw_server(lambda n, body: reply)
    raw.close_after_each = True
    model = OpenAICompatModel("t:m", url, "m", client=HttpPool(timeout_s=5))
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient is True and info.value.status is None
    assert says in str(info.value) and "Fix: check that the server is running" in str(info.value)


async def test_a_pooled_connection_the_server_closed_is_not_used_again(raw_server: StartRaw) -> None:
    raw, url = await raw_server(always(http_reply(COMPLETION)))
    raw.close_after_each = True  # closes after answering, without saying Connection: close
    pool = HttpPool(timeout_s=5)
    model = OpenAICompatModel("t:m", url, "m", client=pool)
    try:
        for _ in range(3):
            assert (await model.complete(REQUEST)).text == "hello"
            await asyncio.sleep(0.05)  # the server's close reaches the idle connection
    finally:
        await pool.aclose()
    assert raw.connections == 3


async def test_no_answer_within_the_timeout_is_transient_and_the_connection_dropped(
    raw_server: StartRaw,
) -> None:
    raw, url = await raw_server(lambda n, body: None if n == 1 else http_reply(COMPLETION))
    pool = HttpPool(timeout_s=0.2)
    model = OpenAICompatModel("t:m", url, "m", client=pool, timeout_s=0.2)
    try:
        with pytest.raises(ProviderError) as info:
            await model.complete(REQUEST)
        assert info.value.transient is True and "within 0.2 s" in str(info.value)
        assert (await model.complete(REQUEST)).text == "hello"  # on a new connection
    finally:
        await pool.aclose()
    assert raw.connections == 2


async def test_a_429_with_retry_after_ms_and_rate_limit_headers_is_transient(raw_server: StartRaw) -> None:
    headers = "retry-after-ms: 250\r\nRetry-After: 9\r\nX-RateLimit-Remaining-Requests: 0\r\n"
    error = json.dumps({"error": {"message": "slow down"}}).encode()
    _, url = await raw_server(always(http_reply(error, "429 Too Many Requests", headers)))
    model = OpenAICompatModel("t:m", url, "m", client=HttpPool(timeout_s=5))
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient is True and info.value.status == 429
    assert info.value.retry_after == 0.25 and "slow down" in str(info.value)
    assert info.value.rate_limit is not None and info.value.rate_limit.remaining == 0


async def test_a_400_is_permanent_and_says_what_to_fix(raw_server: StartRaw) -> None:
    error = json.dumps({"error": {"message": "bad temperature"}}).encode()
    _, url = await raw_server(always(http_reply(error, "400 Bad Request")))
    model = OpenAICompatModel("t:m", url, "m", client=HttpPool(timeout_s=5))
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient is False and info.value.status == 400
    assert "bad temperature" in str(info.value) and "Fix: check the model name 'm'" in str(info.value)


@pytest.mark.parametrize("how", ["declared", "chunked", "gzip bomb"])
async def test_a_reply_over_the_size_cap_is_a_clear_permanent_error(raw_server: StartRaw, how: str) -> None:
    big = b"x" * 5000
    replies = {
        "declared": http_reply(big),
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"3e8\r\n" + big[:1000] + b"\r\n" for _ in range(5))
        + b"0\r\n\r\n",
        "gzip bomb": http_reply(gzip.compress(b" " * 50_000), headers="Content-Encoding: gzip\r\n"),
    }
    _, url = await raw_server(always(replies[how]))
    pool = HttpPool(timeout_s=5, max_reply_bytes=4096)
    model = OpenAICompatModel("t:m", url, "m", client=pool)
    try:
        with pytest.raises(ProviderError) as info:
            await model.complete(REQUEST)
    finally:
        await pool.aclose()
    assert info.value.transient is False and info.value.status == 200
    assert "over 4,096 bytes" in str(info.value) and "Fix:" in str(info.value)
    assert isinstance(info.value.__cause__, ReplyTooLargeError)


async def test_connecting_to_a_closed_port_is_a_connection_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    pool = HttpPool(timeout_s=5)
    with pytest.raises(HttpConnectionError, match=f"cannot connect to 127.0.0.1:{port}"):
        await pool.post(PostTarget(f"http://127.0.0.1:{port}/v1/chat/completions", {}), b"{}")
    await pool.aclose()


def test_targets_refuse_what_cannot_be_sent() -> None:
    with pytest.raises(ValueError, match="not an http"):
        PostTarget("localhost:8000/v1", {})
    with pytest.raises(ValueError, match="line break"):
        PostTarget("http://h/v1", {"X-Key": "a\r\nInjected: yes"})
    target = PostTarget("https://api.example.com/v1/chat/completions?api-version=1", {"User-Agent": "mine"})
    head = target.request(b"{}")
    assert head.startswith(b"POST /v1/chat/completions?api-version=1 HTTP/1.1\r\nHost: api.example.com\r\n")
    assert head.count(b"User-Agent") == 1 and b"User-Agent: mine\r\n" in head
    assert head.endswith(b"Content-Length: 2\r\n\r\n{}")


async def test_a_base_url_without_a_scheme_is_a_permanent_error_naming_the_fix() -> None:
    model = OpenAICompatModel("t:m", "localhost:8000/v1", "m", client=HttpPool())
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    assert info.value.transient is False and "Fix: set base_url to http(s)://" in str(info.value)


def test_the_client_is_chosen_by_the_environment() -> None:
    assert isinstance(http_client(5, 2, {}), HttpPool)
    assert type(http_client(5, 2, {HTTP_CLIENT_ENV: "aiohttp"})).__name__ == "LazySession"
    with pytest.raises(ConfigError, match="Fix: set it to one of http11, aiohttp"):
        http_client(5, 2, {HTTP_CLIENT_ENV: "curl"})


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
async def test_https_through_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    make_cert = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
    subprocess.run(
        [
            *make_cert.split(),
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    raw = RawServer(always(http_reply(COMPLETION)))
    server = await asyncio.start_server(raw.handle, "localhost", 0, ssl=server_tls)
    port = server.sockets[0].getsockname()[1]
    trusting = ssl.create_default_context(cafile=str(cert))
    pool = HttpPool(timeout_s=5, tls=trusting)
    model = OpenAICompatModel("t:m", f"https://localhost:{port}/v1", "m", client=pool)
    other = HttpPool(timeout_s=5)
    untrusting = OpenAICompatModel("t:m", f"https://localhost:{port}/v1", "m", client=other)
    try:
        assert [(await model.complete(REQUEST)).text for _ in range(2)] == ["hello", "hello"]
        assert raw.connections == 1
        with pytest.raises(ProviderError) as info:  # the system's CAs do not know this certificate
            await untrusting.complete(REQUEST)
        assert info.value.transient is True and "SSLCertVerificationError" in str(info.value)
    finally:
        await pool.aclose()
        await other.aclose()
        server.close()
        await server.wait_closed()


async def test_a_request_waiting_for_a_busy_pool_times_out_and_the_pool_recovers(
    raw_server: StartRaw,
) -> None:
    raw, url = await raw_server(lambda n, body: None if n == 1 else http_reply(COMPLETION))
    pool = HttpPool(max_connections=1)
    patient = OpenAICompatModel("t:m", url, "m", client=pool, timeout_s=0.6)
    model = OpenAICompatModel("t:m", url, "m", client=pool, timeout_s=0.3)  # each request its model's timeout
    try:
        hanging = asyncio.create_task(patient.complete(REQUEST))
        await asyncio.sleep(0.1)  # the only connection is now busy with a request that gets no answer
        with pytest.raises(ProviderError, match=r"within 0\.3 s"):
            await model.complete(REQUEST)  # waits for the connection, within its own deadline
        assert len(raw.requests) == 1
        with pytest.raises(ProviderError, match=r"within 0\.6 s"):
            await hanging
        assert (await model.complete(REQUEST)).text == "hello"  # the slots were all given back
    finally:
        await pool.aclose()
    assert len(raw.requests) == 2


def test_the_client_works_on_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed (it is not on Windows)")

    async def calls() -> list[str]:
        raw = RawServer(always(http_reply(COMPLETION)))
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        pool = HttpPool(timeout_s=5)
        try:
            model = OpenAICompatModel("t:m", url, "m", client=pool)
            return [(await model.complete(REQUEST)).text for _ in range(3)]
        finally:
            await pool.aclose()
            server.close()
            await server.wait_closed()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(calls()) == ["hello"] * 3
